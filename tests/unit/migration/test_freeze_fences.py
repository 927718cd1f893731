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


def test_parse_user_permission():
    assert freeze.parse_user_permission(USER_PERMISSION_TABLE) == [
        Grant("app", "default", "t1", "", "", "RW"), Grant("@writers", "default", "t1", "f", "q", "W"),
        Grant("reader", "default", "t1", "", "", "R")]
    (g,) = freeze.parse_user_permission(USER_PERMISSION_GLOBAL)
    assert g.scope == "global" and g.actions == "RWXCA"
    (n,) = freeze.parse_user_permission(USER_PERMISSION_NS)
    assert (n.scope, n.namespace) == ("namespace", "default")
    assert freeze.parse_user_permission("hbase:001:0> user_permission 't1'\n0 row(s)\nTook 0.1 seconds") == []


def test_acl_fence_takes_write_away_and_gives_exactly_it_back():
    grants = freeze.parse_user_permission(USER_PERMISSION_TABLE)
    plan = freeze.acl_fence_plan(["t1"], grants)
    acl = "org.apache.hadoop.hbase.security.access"
    table = 'org.apache.hadoop.hbase.TableName.valueOf("t1")'
    assert plan.refusals == () and [g.principal for g in plan.fenced] == ["app", "@writers"]
    assert plan.fence[0] == (f'hm_admin.grant({acl}.UserPermission.new("app", {acl}.Permission.newBuilder({table})'
                             f'.withActions([{acl}.Permission::Action::READ].to_java({acl}.Permission::Action)).build'
                             '), false)')
    assert plan.fence[1] == (
        f'hm_admin.revoke({acl}.UserPermission.new("@writers", {acl}.Permission.newBuilder({table})'
        '.withFamily(org.apache.hadoop.hbase.util.Bytes.toBytesBinary("f"))'
        '.withQualifier(org.apache.hadoop.hbase.util.Bytes.toBytesBinary("q"))'
        f'.withActions([{acl}.Permission::Action::WRITE].to_java({acl}.Permission::Action)).build))')
    assert plan.unfence[0].endswith(f"[{acl}.Permission::Action::READ, {acl}.Permission::Action::WRITE]"
                                    f".to_java({acl}.Permission::Action)).build), false)")
    assert "Permission::Action::WRITE]" in plan.unfence[1] and plan.unfence[1].startswith("hm_admin.grant(")


def test_acl_fence_refuses_what_a_table_level_change_cannot_fence_unless_exempt():
    grants = [*freeze.parse_user_permission(USER_PERMISSION_GLOBAL), *freeze.parse_user_permission(USER_PERMISSION_NS),
              Grant("app", "default", "t1", actions="RW"), Grant("other", "ns2", "", actions="W")]
    plan = freeze.acl_fence_plan(["t1"], grants)
    assert [r.split(" holds")[0] for r in plan.refusals] == ["hbase", "etl"]
    assert "namespace default" in plan.refusals[1]
    assert freeze.acl_fence_plan(["t1"], grants, exempt=["hbase", "etl"]).refusals == ()


def test_acl_read_statements_and_namespaced_tables():
    assert freeze.acl_read_statements(["t1", "ns:t2"]) == ['user_permission', 'user_permission "@default"',
                                                           'user_permission "@ns"', 'user_permission "t1"',
                                                           'user_permission "ns:t2"']
    plan = freeze.acl_fence_plan(["ns:t2"], [Grant("app", "ns", "t2", actions="RWX")])
    assert 'TableName.valueOf("ns:t2")' in plan.fence[0] and "Action::EXEC]" in plan.fence[0]


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
    assert freeze.replace_grant_statement(Grant("a", "default", "t", actions="R"), "R").endswith(", false)")
    with pytest.raises(ValueError, match="revoke instead"):
        freeze.replace_grant_statement(Grant("a", "default", "t", actions="W"), "")
