"""The cut-over's fences as shell statements (pure): READONLY all at once, and WRITE taken away by ACL."""
from __future__ import annotations

import pytest

from hbase_migration.migration import freeze
from hbase_migration.migration.freeze import Grant

# What HBase 2.4's shell prints for `user_permission 't1'` (security.rb: user, then
# "namespace,table,family,qualifier: [Permission: actions=...]").
USER_PERMISSION_TABLE = """User                                   Namespace,Table,Family,Qualifier:Permission
 app                                   default,t1,,: [Permission: actions=READ,WRITE]
 @writers                              default,t1,f,q: [Permission: actions=WRITE]
 reader                                default,t1,,: [Permission: actions=READ]
3 row(s)
Took 0.0412 seconds"""
USER_PERMISSION_GLOBAL = """User                                   Namespace,Table,Family,Qualifier:Permission
 hbase                                 ,,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]
1 row(s)"""
USER_PERMISSION_NS = """User                                   Namespace,Table,Family,Qualifier:Permission
 etl                                   default,,,: [Permission: actions=READ,WRITE]
1 row(s)"""


# What the 2.4.17 shell printed on real HBase 2.6.4 (realhbase, AccessController on): a namespaced table's field
# is its full name, a global entry's scope is `,,,`, each statement echoed after its prompt.
REAL_2_6 = """hbase:008:0> user_permission
User  Namespace,Table,Family,Qualifier:Permission
 root ,,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]
1 row(s)
Took 2.6670 seconds
hbase:010:0> user_permission "@expns"
User  Namespace,Table,Family,Qualifier:Permission
 @etl expns,,,: [Permission: actions=READ,WRITE]
1 row(s)
Took 1.1106 seconds
hbase:011:0> user_permission "exp_a"
User  Namespace,Table,Family,Qualifier:Permission
 app default,exp_a,,: [Permission: actions=READ,WRITE]
 bob default,exp_a,f,q: [Permission: actions=WRITE]
 root expns,expns:t1,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]
3 row(s)
Took 1.0123 seconds"""


def test_parse_user_permission():
    assert freeze.parse_user_permission(USER_PERMISSION_TABLE) == [
        Grant("app", "default", "t1", "", "", "RW"), Grant("@writers", "default", "t1", "f", "q", "W"),
        Grant("reader", "default", "t1", "", "", "R")]
    (g,) = freeze.parse_user_permission(USER_PERMISSION_GLOBAL)
    assert g.scope == "global" and g.actions == "RWXCA"
    (n,) = freeze.parse_user_permission(USER_PERMISSION_NS)
    assert (n.scope, n.namespace) == ("namespace", "default")
    assert freeze.parse_user_permission("hbase:001:0> user_permission 't1'\n0 row(s)\nTook 0.1 seconds") == []
    assert freeze.parse_user_permission(REAL_2_6) == [
        Grant("root", "", "", "", "", "RWXCA"), Grant("@etl", "expns", "", "", "", "RW"),
        Grant("app", "default", "exp_a", "", "", "RW"), Grant("bob", "default", "exp_a", "f", "q", "W"),
        Grant("root", "expns", "t1", "", "", "RWXCA")]
    assert Grant("root", "expns", "t1", actions="R").table_name == "expns:t1"


@pytest.mark.parametrize("line", [
    " a b default,t1,,: [Permission: actions=READ,WRITE]",  # a principal with a space
    " app default,t1,,: [Permission: actions=READ,WRITE,SUPERPOWER]",  # an action this parser does not know
    " app default,t1: [Permission: actions=READ]",  # three fields
    " app other,ns:t1,,: [Permission: actions=READ]",  # a table of another namespace than its line's
    " app default,t1,,: [CellPermission: actions=READ]",
    "WARNING: something the shell printed",
])
def test_a_line_not_understood_refuses_naming_it(line):
    with pytest.raises(freeze.UnreadablePermissions) as e:
        freeze.parse_user_permission(USER_PERMISSION_TABLE + "\n" + line)
    assert repr(line.strip()) in str(e.value) and "1 line(s)" in str(e.value)


def test_acl_fence_takes_write_away_and_gives_exactly_it_back_in_one_batch():
    grants = freeze.parse_user_permission(USER_PERMISSION_TABLE)
    plan = freeze.acl_fence_plan(["t1"], grants)
    assert plan.refusals == () and [g.principal for g in plan.fenced] == ["app", "@writers"]
    assert plan.fence == ('hm_acl_batch.call([["app", "table", "t1", "", "", "R"]], '
                          '[["@writers", "table", "t1", "f", "q", "W"]], 120)',)
    assert plan.unfence == ('hm_acl_batch.call([["app", "table", "t1", "", "", "RW"], '
                            '["@writers", "table", "t1", "f", "q", "W"]], [], 120)',)
    assert plan.refence == plan.fence  # no canary: putting the fence back is the fence
    with pytest.raises(ValueError, match="revoke instead"):
        freeze.acl_batch_statement([(Grant("a", "default", "t", actions="W"), "")])


def test_acl_fence_refuses_superusers_global_write_and_a_namespace_it_cannot_fence_alone():
    grants = [*freeze.parse_user_permission(USER_PERMISSION_GLOBAL), *freeze.parse_user_permission(USER_PERMISSION_NS),
              Grant("app", "default", "t1", actions="RW"), Grant("other", "ns2", "", actions="W")]
    plan = freeze.acl_fence_plan(["t1"], grants, superusers={"@ops": ["rs1,1,1", "rs2,1,1"]},
                                 namespace_tables={"default": ["t1", "t2"]})
    assert [r.split(" ")[0] for r in plan.refusals] == ["@ops", "hbase", "etl"]
    assert "@ops is in hbase.superuser (/conf of rs1,1,1, rs2,1,1)" in plan.refusals[0]
    assert "would also stop t2, not cut over" in plan.refusals[2]
    # the namespace's tables not read: refused too (fail closed)
    assert "could not be read" in freeze.acl_fence_plan(["t1"], grants).refusals[1]
    assert freeze.acl_fence_plan(["t1"], grants, exempt=["hbase", "etl", "@ops"], superusers={"@ops": ["m"]},
                                 namespace_tables={"default": ["t1"]}).refusals == ()


def test_namespace_write_is_fenced_at_namespace_level_when_all_its_tables_are_cut_over():
    grants = [Grant("etl", "ns", "", actions="RWX"), Grant("app", "ns", "t2", actions="RW")]
    plan = freeze.acl_fence_plan(["ns:t1", "ns:t2"], grants, namespace_tables={"ns": ["ns:t1", "ns:t2"]})
    assert plan.refusals == () and plan.namespaces == ("ns",)
    assert plan.fence == ('hm_acl_batch.call([["etl", "namespace", "ns", "", "", "RX"], '
                          '["app", "table", "ns:t2", "", "", "R"]], [], 120)',)
    assert plan.unfence == ('hm_acl_batch.call([["etl", "namespace", "ns", "", "", "RWX"], '
                            '["app", "table", "ns:t2", "", "", "RW"]], [], 120)',)


def test_the_canary_is_granted_like_the_clients_fenced_with_them_and_not_given_write_back():
    canary = freeze.canary_grants("hm_c", ["t1", "ns:t2"], ["ns"])
    assert canary == [Grant("hm_c", "default", "t1", actions="RW"), Grant("hm_c", "ns", "t2", actions="RW"),
                      Grant("hm_c", "ns", "", actions="RW")]
    plan = freeze.acl_fence_plan(["t1", "ns:t2"], [Grant("app", "default", "t1", actions="RW"), *canary],
                                 namespace_tables={"ns": ["ns:t2"]}, canary="hm_c")
    assert [g.principal for g in plan.fenced] == ["app", "hm_c", "hm_c", "hm_c"]
    assert plan.unfence == ('hm_acl_batch.call([["app", "table", "t1", "", "", "RW"]], [], 120)',)
    # putting the fence back (a later window that gave WRITE back, then aborted) leaves the canary alone: its
    # grants were revoked after this window
    assert plan.refence == ('hm_acl_batch.call([["app", "table", "t1", "", "", "R"]], [], 120)',)
    assert freeze.acl_batch_statement((), canary[:1]) == \
        'hm_acl_batch.call([], [["hm_c", "table", "t1", "", "", "RW"]], 120)'


def test_canary_probe_and_its_report():
    assert freeze.canary_probe_statement(["t1", "t1", "ns:t2"], "REFUSED", 12.5, "x") == \
        'hm_probe.call(["t1", "ns:t2"], "REFUSED", 12.5, "x")'
    with pytest.raises(ValueError):
        freeze.canary_probe_statement(["t1"], "MAYBE", 1, "x")
    out = ("hbase:030:0> hm_probe.call(...)\n"
           "hbase_migration_canary t1 rs1,16020,1 158 REFUSED\n"
           "hbase_migration_canary ns:t2 rs2,16020,1 -1 ERROR org.apache.hadoop.hbase.NotServingRegionException: x y\n"
           "hbase_migration_canary_done polls=3 ms=402\n")
    report = freeze.parse_canary(out)
    assert report.polls == 3 and report.ms == 402 and report.servers() == ["rs1,16020,1", "rs2,16020,1"]
    assert report.short_of("REFUSED") == ["ns:t2 on rs2,16020,1: ERROR org.apache.hadoop.hbase."
                                          "NotServingRegionException: x y"]
    with pytest.raises(ValueError, match="did not finish"):
        freeze.parse_canary("hbase_migration_canary t1 rs1 1 REFUSED\n")
    with pytest.raises(ValueError, match="no region"):
        freeze.parse_canary("hbase_migration_canary_done polls=1 ms=3\n")
    statements = freeze.canary_statements("hm_c")
    assert 'createRemoteUser("hm_c")' in statements[1]
    keytab = freeze.canary_statements("hm_c@R", "/k/c.keytab")[1]
    assert 'loginUserFromKeytabAndReturnUGI("hm_c@R", "/k/c.keytab")' in keytab


def test_acl_batch_summary():
    assert freeze.parse_acl_batch("hbase_migration_acl changed=3 failed=0 ms=451") == (3, [])
    assert freeze.parse_acl_batch("hbase_migration_acl_failed [\"a\"]: boom\nhbase_migration_acl changed=1 failed=1 "
                                  "ms=9") == (1, ['["a"]: boom'])
    with pytest.raises(ValueError, match="no summary"):
        freeze.parse_acl_batch("NameError")


def test_namespace_tables_statement_and_parse():
    assert freeze.namespace_tables_statement(["ns"]).startswith('["ns"].each { |n| hm_admin.listTableNamesByNamespace')
    assert freeze.parse_namespace_tables("x\nhbase_migration_nstable ns ns:t1\nhbase_migration_nstable ns ns:t2\n",
                                         ["ns", "empty"]) == {"ns": ["ns:t1", "ns:t2"], "empty": []}


def test_acl_read_statements_and_namespaced_tables():
    assert freeze.acl_read_statements(["t1", "ns:t2"]) == ['user_permission', 'user_permission "@default"',
                                                           'user_permission "@ns"', 'user_permission "t1"',
                                                           'user_permission "ns:t2"']
    plan = freeze.acl_fence_plan(["ns:t2"], [Grant("app", "ns", "t2", actions="RWX")])
    assert plan.fence == ('hm_acl_batch.call([["app", "table", "ns:t2", "", "", "RX"]], [], 120)',)


def test_readonly_parallel_statement_and_its_marks():
    statement = freeze.readonly_parallel_statement(["t1", "ns:t2"], True, timeout_s=60)
    assert statement.startswith('hm_f = ["t1", "ns:t2"].map { |t| d = hm_admin.getDescriptor(')
    assert ".setReadOnly(true).build) }; hm_f.each { |f| f.get(60, java.util.concurrent.TimeUnit::SECONDS) };" \
        in statement
    assert freeze.parse_readonly_marks("x\nhbase_migration_readonly t1=true\nhbase_migration_readonly ns:t2=false\n"
                                       ) == {"t1": True, "ns:t2": False}
    with pytest.raises(ValueError, match="no tables"):
        freeze.readonly_parallel_statement([], True)
    with pytest.raises(TypeError):
        freeze.readonly_parallel_statement(["t"], "true")
    assert freeze.flush_statements(["t1"]) == ['flush "t1"']
