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
