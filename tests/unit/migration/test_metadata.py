"""The grants' comparison across clusters (pure): principals mapped across realms, each scope compared, what
`--apply` grants."""
import pytest

from hbase_migration.migration.freeze import Grant, parse_user_permission
from hbase_migration.migration.metadata import (
    Difference,
    grant_differences,
    mapped,
    parse_principal_map,
    relevant,
    short_name,
)

SOURCE = parse_user_permission("""User Namespace,Table,Family,Qualifier:Permission
 app/host1@DC1.TEST default,t1,,: [Permission: actions=READ,WRITE]
 app/host1@DC1.TEST default,t1,d,: [Permission: actions=READ]
 @analysts ns1,,,: [Permission: actions=READ]
 ops@DC1.TEST ,,,: [Permission: actions=READ,WRITE,EXEC,CREATE,ADMIN]
 svc1@DC1.TEST ns1,ns1:t2,,: [Permission: actions=READ,WRITE]
 other default,t9,,: [Permission: actions=READ,WRITE]
6 row(s)
Took 0.0210 seconds
""")


def test_principals_map_by_short_name_unless_mapped():
    assert [short_name(p) for p in ("app/host1@DC1.TEST", "bob@DC2.TEST", "bob", "@analysts")] == [
        "app", "bob", "bob", "@analysts"]
    assert mapped("svc1@DC1.TEST", {"svc1@DC1.TEST": "svc2"}) == "svc2" and mapped("svc1@DC1.TEST", {}) == "svc1"
    assert parse_principal_map(" svc1@DC1.TEST=svc2 ,a=b,") == {"svc1@DC1.TEST": "svc2", "a": "b"}
    for bad, fragment in (("svc1", "is not SOURCE=TARGET"), ("a=b,a=c", "a is mapped twice"), ("a= ", "SOURCE=TARGET")):
        with pytest.raises(ValueError, match=fragment):
            parse_principal_map(bad)


def test_only_the_grants_that_bear_on_the_tables_count():
    assert [g.describe() for g in relevant(SOURCE, ["t1", "ns1:t2"])] == [
        "app/host1@DC1.TEST RW on t1", "app/host1@DC1.TEST R on t1 family d", "@analysts R on namespace ns1",
        "ops@DC1.TEST RWXCA globally", "svc1@DC1.TEST RW on ns1:t2"]


def test_each_scope_is_compared_and_only_the_sources_actions_are_applied():
    target = [Grant("app@DC2.TEST", "default", "t1", actions="R"),  # lacks W
              Grant("ops", "", "", actions="RWXCA"),  # the same, by short name
              Grant("intruder", "default", "t1", actions="RW")]  # target-only: listed, never revoked
    differences, fixes = grant_differences(SOURCE, target, ["t1", "ns1:t2"], {"svc1@DC1.TEST": "svc2"})
    assert differences == [
        Difference("grant", "@analysts on namespace ns1", "R", None),
        Difference("grant", "app on t1", "RW", "R"),
        Difference("grant", "app on t1 family d", "R", None),
        Difference("grant", "intruder on t1", None, "RW"),
        Difference("grant", "svc2 on ns1:t2", "RW", None)]
    # the target's own spelling of a principal it knows (app@DC2.TEST), the mapped or short name otherwise
    assert [g.describe() for g in fixes] == ["@analysts R on namespace ns1", "app@DC2.TEST RW on t1",
                                             "app R on t1 family d", "svc2 RW on ns1:t2"]
    assert grant_differences(SOURCE, [*fixes, target[1], target[2]], ["t1", "ns1:t2"],
                             {"svc1@DC1.TEST": "svc2"})[0] == [Difference("grant", "intruder on t1", None, "RW")]


def test_two_source_principals_mapped_to_one_get_the_union_of_their_actions():
    source = [Grant("a@DC1", "default", "t1", actions="R"), Grant("b@DC1", "default", "t1", actions="W")]
    differences, fixes = grant_differences(source, [], ["t1"], {"a@DC1": "app", "b@DC1": "app"})
    assert differences == [Difference("grant", "app on t1", "RW", None)] and fixes[0].actions == "RW"


# Quotas: `list_quotas` as the HBase 2.6.4 shell prints it (no terminal: one row per setting, owner and setting
# separated by one space). LIST_QUOTAS_264 is its output captured verbatim on the session's secured bed (HBase
# 2.6.4, hbase-shell 2.4.17, hbase.quota.enabled) after the set_quota of each kind listed below, echo lines included
# (long rows continued with a backslash).
from hbase_migration.migration.metadata import (  # noqa: E402
    RSGROUP_ENDPOINT,
    Comparison,
    Metadata,
    Quota,
    UnreadableQuotas,
    apply_statements,
    approval_text,
    compare_metadata,
    features_of,
    fixable,
    parse_apply,
    parse_list_quotas,
    parse_list_rsgroups,
    parse_metadata,
    quota_differences,
    read_statements,
    rsgroup_differences,
    set_quota_statement,
    split_sections,
    step_outcome,
    unwritable_on_target,
)

LIST_QUOTAS_264 = """hbase:001:0> list_quotas
OWNER  QUOTAS
 NAMESPACE => capns TYPE => THROTTLE, THROTTLE_TYPE => REQUEST_SIZE, LIMIT => 976.56K/sec, SCOPE => MACHINE
 NAMESPACE => capns TYPE => SPACE, NAMESPACE => capns, LIMIT => 2.00T, VIOLATION_POLICY => NO_WRITES
 REGIONSERVER => all TYPE => THROTTLE, THROTTLE_TYPE => REQUEST_NUMBER, LIMIT => 30000req/sec, SCOPE => MACHINE
 TABLE => capt1 TYPE => THROTTLE, THROTTLE_TYPE => READ_NUMBER, LIMIT => 50req/min, SCOPE => CLUSTER
 TABLE => capt1 TYPE => SPACE, TABLE => capt1, LIMIT => 1.00G, VIOLATION_POLICY => NO_INSERTS
 USER => app TYPE => THROTTLE, THROTTLE_TYPE => REQUEST_NUMBER, LIMIT => 100req/sec, SCOPE => MACHINE
 USER => app GLOBAL_BYPASS => true
 USER => app, TABLE => capt1 TYPE => THROTTLE, THROTTLE_TYPE => WRITE_SIZE, LIMIT => 10.00M/sec, SCOPE => MACHINE
 USER => svc1, NAMESPACE => capns TYPE => THROTTLE, THROTTLE_TYPE => WRITE_CAPACITY_UNIT, LIMIT => 10CU/hour,\
 SCOPE => MACHINE
9 row(s)
Took 4.6869 seconds
hbase:002:0>\x20
"""


def test_list_quotas_rows_are_read_exactly():
    quotas = parse_list_quotas(LIST_QUOTAS_264)
    assert [(q.subject(), q.value) for q in quotas] == [
        ("namespace capns: throttle request size", "976.56K/sec MACHINE"),
        ("namespace capns: space", "2.00T NO_WRITES"),
        ("region servers all: throttle request number", "30000req/sec MACHINE"),
        ("table capt1: throttle read number", "50req/min CLUSTER"),
        ("table capt1: space", "1.00G NO_INSERTS"),
        ("user app: throttle request number", "100req/sec MACHINE"),
        ("user app: global bypass", "true"),
        ("user app on table capt1: throttle write size", "10.00M/sec MACHINE"),
        ("user svc1 on namespace capns: throttle write capacity unit", "10CU/hour MACHINE")]
    assert quotas[7] == Quota("app", "capt1", "", "", "THROTTLE WRITE_SIZE", "10.00M/sec MACHINE")
    assert parse_list_quotas("OWNER  QUOTAS\n0 row(s)\nTook 0.01 seconds") == []
    # HBase's branch-2 source printed a space limit in bytes once: read as well
    assert parse_list_quotas(" TABLE => t1 TYPE => SPACE, TABLE => t1, LIMIT => 1073741824, VIOLATION_POLICY => "
                             "NO_INSERTS")[0].value == "1073741824 NO_INSERTS"


@pytest.mark.parametrize("line", [
    " USER => app TYPE => THROTTLE, THROTTLE_TYPE => WRITE_SIZE, LIMIT => 10.00M/fortnight, SCOPE => MACHINE",
    " USER => app TYPE => THROTTLE, THROTTLE_TYPE => EVERYTHING, LIMIT => 10req/sec, SCOPE => MACHINE",
    " TABLE => t1 TYPE => SPACE, TABLE => t1, LIMIT => 1.00G, VIOLATION_POLICY => MAYBE",
    " TABLE => t1 TYPE => SPACE, TABLE => t1, REMOVE => true",
    " OWNER => app TYPE => THROTTLE, THROTTLE_TYPE => WRITE_SIZE, LIMIT => 10.00M/sec, SCOPE => MACHINE",
    " USER => app TYPE => RPC_MAGIC",
    "some stray output"])
def test_a_list_quotas_line_not_understood_refuses_naming_it(line):
    with pytest.raises(UnreadableQuotas, match="1 line\\(s\\) of list_quotas not understood") as e:
        parse_list_quotas(LIST_QUOTAS_264 + line + "\n")
    assert line.strip()[:40] in str(e.value)


def test_quotas_compared_for_the_tables_and_namespaces_users_mapped_and_fixed_by_set_quota():
    source = parse_list_quotas(LIST_QUOTAS_264)
    target = [Quota("app", "", "", "", "THROTTLE REQUEST_NUMBER", "100req/sec MACHINE"),  # the same
              Quota("", "capt1", "", "", "THROTTLE READ_NUMBER", "60req/min CLUSTER"),  # another value
              Quota("ops", "", "", "", "GLOBAL_BYPASS", "true")]  # target-only: listed, never removed
    differences, fixes = quota_differences(source, target, ["capt1", "capns:t2"], {"svc1": "svc2"})
    assert [(d.kind, d.subject, d.source, d.target) for d in differences] == [
        ("quota", "namespace capns: space", "2.00T NO_WRITES", None),
        ("quota", "namespace capns: throttle request size", "976.56K/sec MACHINE", None),
        ("quota", "table capt1: space", "1.00G NO_INSERTS", None),
        ("quota", "table capt1: throttle read number", "50req/min CLUSTER", "60req/min CLUSTER"),
        ("quota", "user app: global bypass", "true", None),
        ("quota", "user app on table capt1: throttle write size", "10.00M/sec MACHINE", None),
        ("quota", "user ops: global bypass", None, "true"),
        ("quota", "user svc2 on namespace capns: throttle write capacity unit", "10CU/hour MACHINE", None)]
    assert [set_quota_statement(q) for q in fixes] == [
        'set_quota TYPE => SPACE, NAMESPACE => "capns", LIMIT => "2T", POLICY => NO_WRITES',
        None,  # 976.56K is rounded by list_quotas: left to the operator
        'set_quota TYPE => SPACE, TABLE => "capt1", LIMIT => "1G", POLICY => NO_INSERTS',
        'set_quota TYPE => THROTTLE, TABLE => "capt1", THROTTLE_TYPE => READ, LIMIT => "50req/min", SCOPE => CLUSTER',
        'set_quota USER => "app", GLOBAL_BYPASS => true',
        'set_quota TYPE => THROTTLE, USER => "app", TABLE => "capt1", THROTTLE_TYPE => WRITE, LIMIT => "10M/sec", '
        'SCOPE => MACHINE',
        'set_quota TYPE => THROTTLE, USER => "svc2", NAMESPACE => "capns", THROTTLE_TYPE => WRITE, '
        'LIMIT => "10CU/hour", SCOPE => MACHINE']
    assert set_quota_statement(Quota("", "t", "", "", "SPACE", "1.50G NO_INSERTS")) is None  # rounded
    # the region servers' quota bears on no table
    assert not [d for d in differences if "region servers" in d.subject]


# RS groups: `list_rsgroups` of the HBase 2.x shell. The bed's HBase 2.6.4 has no RS groups (the hbase-rsgroup
# module, its coprocessor and balancer, is not on its class path), so this is the bed's own shell (hbase-shell
# 2.4.17's list_rsgroups.rb and formatter.rb, run by its JRuby 9.3.13 with stdout not a terminal) rendering three
# RSGroupInfo objects of hbase-common with no cluster: output captured verbatim, `Took` added as the command wrapper
# prints it.
LIST_RSGROUPS = """NAME  SERVER / TABLE
 default server host1:16020
  server host2:16020
  table hbase:meta
  table t1
 batch server host3:16020
  table ns1:t2
 empty\x20
3 row(s)
Took 0.0120 seconds
"""


def test_rsgroups_read_and_a_group_absent_on_the_target_is_listed_not_created():
    groups = parse_list_rsgroups(LIST_RSGROUPS)
    assert groups == {"default": ["hbase:meta", "t1"], "batch": ["ns1:t2"], "empty": []}
    with pytest.raises(ValueError, match="list_rsgroups not understood"):
        parse_list_rsgroups(LIST_RSGROUPS + " batch something else\n")
    # the target has `batch`: the table is moved there; it lacks `gold`: listed with the fix, no move
    differences, moves = rsgroup_differences({**groups, "gold": ["t3"]}, {"default": [], "batch": []},
                                             ["t1", "ns1:t2", "t3"])
    assert moves == [("batch", "ns1:t2")]
    assert [(d.subject.split(" ")[0], d.source, d.target) for d in differences] == [
        ("ns1:t2", "batch", "default"), ("t3", "gold", "default")]
    assert "add_rsgroup 'gold'" in differences[1].fix and not differences[1].applies and differences[0].applies
    # a source without RS groups: nothing to compare; a target without them: each non-default group listed
    assert rsgroup_differences(None, groups, ["t1"]) == ([], [])
    assert [d.source for d in rsgroup_differences(groups, None, ["t1", "ns1:t2"])[0]] == ["batch"]


def test_one_session_reads_all_three_and_each_section_goes_to_its_parser():
    statements = read_statements(["t1"])
    assert statements == ['puts "hbase_migration_section grants"', "user_permission", 'user_permission "@default"',
                          'user_permission "t1"', 'puts "hbase_migration_section quotas"', "list_quotas",
                          'puts "hbase_migration_section rsgroups"', "list_rsgroups"]
    assert read_statements(["t1"], {"quotas"}) == ['puts "hbase_migration_section quotas"', "list_quotas"]
    stdout = ("hbase_migration_section grants\nUser Namespace,Table,Family,Qualifier:Permission\n"
              " app default,t1,,: [Permission: actions=READ,WRITE]\n1 row(s)\n"
              "hbase_migration_section quotas\n" + LIST_QUOTAS_264 + "hbase_migration_section rsgroups\n"
              + LIST_RSGROUPS)
    assert set(split_sections(stdout)) == {"grants", "quotas", "rsgroups"}
    found = parse_metadata(stdout, ["t1"])
    assert [g.describe() for g in found.grants] == ["app RW on t1"] and len(found.quotas) == 9
    assert found.rsgroups["batch"] == ["ns1:t2"]
    assert parse_metadata(stdout, ["t1"], {"grants"}) == Metadata(found.grants, None, None)
    with pytest.raises(ValueError, match="no rsgroups section"):
        parse_metadata(stdout.split("hbase_migration_section rsgroups")[0], ["t1"])


def test_apply_is_one_session_of_grants_quotas_and_moves_each_marked():
    source = Metadata((Grant("app", "default", "capt1", actions="RW"),),
                      tuple(parse_list_quotas(LIST_QUOTAS_264)), {"batch": ["capt1"]})
    target = Metadata((), (), {"batch": []})
    found = compare_metadata(source, target, ["capt1"])
    assert isinstance(found, Comparison) and found.changes == 1 + 5 + 1
    statements, by_hand = apply_statements(found)
    assert by_hand == []  # ns1's rounded throttle bears on no table of these
    assert statements[-1].startswith('begin; move_tables_rsgroup "batch", ["capt1"]; puts ')
    assert sum(s.startswith("begin; set_quota ") for s in statements) == 5
    assert "hm_acl_batch.call" in " ".join(statements)
    out = ("hbase_migration_acl changed=1 failed=0 ms=12\nhbase_migration_quota_set table t1: space\n"
           "hbase_migration_quota_failed rsgroup t1: ConstraintException: x\n")
    assert parse_apply(out, True) == (2, ["rsgroup t1: ConstraintException: x"])
    # a table absent on the target: its table-level fixes wait, its absence is the difference
    absent = compare_metadata(source, Metadata((), (), None), ["capt1"], absent_on_target=["capt1"])
    assert absent.differences[0] == Difference("table", "capt1", "exists", None)
    assert absent.fixes == () and all(q.table != "capt1" for q in absent.quota_fixes)
    assert absent.rsgroup_moves == ()


def test_each_feature_is_read_from_conf_and_a_cluster_without_it_is_not_asked():
    acl = {"hbase.security.authorization": "true",
           "hbase.coprocessor.region.classes": "org.apache.hadoop.hbase.security.access.AccessController"}
    assert features_of({"rs1": acl, "master m": {"hbase.quota.enabled": "true"}}) == {"grants", "quotas"}
    assert features_of({"master m": {"hbase.coprocessor.master.classes": "a.B, " + RSGROUP_ENDPOINT}}) == {
        "rsgroups"}
    assert features_of({"rs1": {"hbase.balancer.rsgroup.enabled": "true"}}) == {"rsgroups"}  # HBase 3.x
    assert features_of({"rs1": {"hbase.security.authorization": "false", **{k: v for k, v in acl.items() if
                                                                             k != "hbase.security.authorization"}},
                        "master m": {"hbase.quota.enabled": "false"}}) == frozenset()
    # the source has grants and quotas, the target neither feature: one difference each, with its fix, not applied
    source = Metadata((Grant("app", "default", "t1", actions="RW"),),
                      (Quota("", "t1", "", "", "SPACE", "1073741824 NO_INSERTS"),), None)
    found = compare_metadata(source, Metadata(None, None, None), ["t1"])
    assert [(d.kind, d.source, d.applies) for d in found.differences] == [
        ("grant", "1 grant(s)", False), ("quota", "1 quota(s)", False)]
    assert "hbase.quota.enabled=true" in found.differences[1].fix and found.changes == 0
    assert "AccessController" in found.differences[0].subject
    # a source without them: nothing to compare
    assert compare_metadata(Metadata(None, None, None), Metadata((), (), None), ["t1"]).differences == ()


def test_the_step_fails_on_a_refused_change_or_an_applicable_difference_left_not_on_what_it_cannot_make():
    source = Metadata((Grant("app", "default", "t1", actions="RW"),),
                      (Quota("", "ns1", "ns1", "", "THROTTLE REQUEST_SIZE", "976.56K/sec MACHINE"),), None)
    before = compare_metadata(source, Metadata((), (), None), ["t1", "ns1:t2"])
    assert [d.applies for d in before.differences] == [True, False]
    assert [d.kind for d in fixable(before)] == ["grant"]
    fixed = compare_metadata(source, Metadata(source.grants, (), None), ["t1", "ns1:t2"])
    assert step_outcome("apply", before, fixed, [])[0] == "success"  # the rounded quota is said, not failed on
    assert "left: quota" in " ".join(step_outcome("apply", before, fixed, [])[1])
    assert step_outcome("apply", before, before, [])[0] == "failed"  # the grant is still missing
    assert step_outcome("apply", before, fixed, ["t1: AccessDeniedException"])[0] == "failed"
    status, said = step_outcome("check", before, None, [])
    assert status == "success" and said[0] == "2 difference(s) before" and said[1].startswith("grant   app on t1")


def test_the_cutover_refuses_when_a_fenced_writer_cannot_write_on_the_target():
    fenced = [Grant("app/host1@DC1.TEST", "default", "t1", actions="RW"),
              Grant("svc1@DC1.TEST", "ns1", "", actions="RW"),  # fenced at namespace level
              Grant("etl@DC1.TEST", "default", "t1", "d", actions="W"),  # a family's writer
              Grant("reader", "default", "t1", actions="R")]  # not fenced: no WRITE
    target = [Grant("app", "default", "t1", actions="RW"), Grant("svc2", "", "", actions="RW"),
              Grant("etl", "default", "t1", "e", actions="W")]  # another family: not enough
    reasons = unwritable_on_target(fenced, target, {"svc1@DC1.TEST": "svc2"})
    assert len(reasons) == 1 and reasons[0].startswith("etl@DC1.TEST writes t1 on the source (the fence stops it) "
                                                       "but etl holds no WRITE for it on the target")
    assert unwritable_on_target(fenced, [*target, Grant("etl", "default", "", actions="W")], {"svc1@DC1.TEST": "svc2"}
                                ) == []  # namespace-level WRITE covers the family
    # unmapped, svc1 is svc1 on the target, which holds nothing
    assert [r.split(" ")[0] for r in unwritable_on_target(fenced, target)] == ["svc1@DC1.TEST", "etl@DC1.TEST"]
    assert "namespace ns1 on the source" in unwritable_on_target(fenced, target)[0]
    assert unwritable_on_target(fenced, None) == []  # no AccessController on the target: nothing is checked there
    assert unwritable_on_target(fenced, []) and len(unwritable_on_target(fenced, [])) == 3


def test_the_approval_shows_none_or_the_differences():
    assert approval_text([]) == "none (grants, quotas, RS groups alike on both sides)"
    assert approval_text(None) == "not compared"
    shown = approval_text([Difference("grant", "app on t1", "RW", "R").to_dict(),
                           Difference("quota", "table t1: space", "1073741824 NO_INSERTS", None).to_dict()])
    assert shown == ("2 difference(s): grant app on t1: source RW, target R; quota table t1: space: source "
                     "1073741824 NO_INSERTS, target -")
    assert approval_text([Difference("grant", f"u{i} on t1", "R", None).to_dict() for i in range(25)],
                         limit=2).endswith("; and 23 more")
