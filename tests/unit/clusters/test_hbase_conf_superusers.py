"""hbase.superuser and the AccessController as the servers' /conf say them (pure)."""
from __future__ import annotations

from hbase_migration.clusters.hbase_conf import parse_superusers, runs_access_controller, superusers_of

AC = "org.apache.hadoop.hbase.security.access.AccessController"


def test_superusers_with_the_servers_naming_them():
    assert parse_superusers(" hbase, @admins,,hbase ") == ("hbase", "@admins")
    assert parse_superusers(None) == ()
    assert superusers_of({"rs2": {"hbase.superuser": "hbase,@ops"}, "rs1": {"hbase.superuser": "hbase"},
                          "master": {}}) == {"hbase": ["rs1", "rs2"], "@ops": ["rs2"]}


def test_runs_access_controller_needs_authorization_and_the_region_coprocessor():
    on = {"hbase.security.authorization": "true", "hbase.coprocessor.region.classes": f"x.Y,{AC}"}
    assert runs_access_controller(on)
    assert not runs_access_controller({**on, "hbase.security.authorization": "false"})
    assert not runs_access_controller({"hbase.security.authorization": "true"})


def test_a_masked_or_absent_superuser_list_is_unknown_unless_attested():
    from hbase_migration.clusters.hbase_conf import resolve_superusers, superuser_unreadable

    assert superuser_unreadable("<masked>") == "masked (<masked>)" and superuser_unreadable("******")
    assert superuser_unreadable(None) == "absent" and superuser_unreadable("hbase,@ops") is None
    confs = {"rs1": {"hbase.superuser": "<masked>"}, "rs2": {"hbase.superuser": "hbase,@ops"}}
    found, why = resolve_superusers(confs, None)
    assert why.startswith("hbase.superuser is unreadable on 1 server(s) (rs1: masked (<masked>)), so who passes")
    assert found == {"hbase": ["rs2"], "@ops": ["rs2"]}
    found, why = resolve_superusers(confs, ["hbase", "@admins"])
    assert why is None and found == {"hbase": ["rs2", "run spec"], "@ops": ["rs2"], "@admins": ["run spec"]}
    assert resolve_superusers({"rs1": {}}, [])[0] == {} and resolve_superusers({"rs1": {}}, [])[1] is None
    assert resolve_superusers({"rs1": {}}, None)[1].startswith("hbase.superuser is unreadable on 1 server(s) (rs1: "
                                                                "absent)")


def test_an_acl_fence_needs_the_access_controller_on_every_region_server():
    from hbase_migration.migration.freeze import acl_conf_refusal, superuser_refusals

    on = {"hbase.security.authorization": "true", "hbase.coprocessor.region.classes": AC, "hbase.superuser": "hbase"}
    assert acl_conf_refusal({"rs1": on, "master m:1": on}, None) == ({"hbase": ["master m:1", "rs1"]}, None)
    found, why = acl_conf_refusal({"rs1": on, "rs2": {**on, "hbase.security.authorization": "false"}}, None)
    assert found == {} and why.startswith("an ACL freeze needs HBase's AccessController on every region server, and "
                                          "/conf of rs2 shows none")
    assert superuser_refusals({"@ops": ["rs1", "run spec"]}, ["hbase"]) == [
        "@ops is in hbase.superuser (/conf of rs1, the run spec's superusers): a superuser passes every permission "
        "check, so an ACL fence cannot stop it; put @ops in freeze_exempt if it writes to none of these tables (a "
        "group: none of its members), or freeze with READONLY"]


def test_the_default_fence_is_acl_only_where_the_access_controller_runs_and_superusers_are_known():
    from hbase_migration.migration.freeze import default_freeze

    on = {"hbase.security.authorization": "true", "hbase.coprocessor.region.classes": AC,
          "hbase.superuser": "<masked>"}
    method, why = default_freeze({"rs1": on}, ["hbase"])
    assert method == "acl" and why.startswith("every region server of the source runs HBase's AccessController "
                                              "(/conf) and hbase.superuser is known (hbase): ACL")
    method, why = default_freeze({"rs1": on}, None)
    assert method == "readonly" and why.startswith("the source runs the AccessController but hbase.superuser is "
                                                   "unreadable on 1 server(s) (rs1: masked (<masked>))")
    assert default_freeze({"rs1": {}}, ["hbase"])[0] == "readonly"
    assert default_freeze(None, None, "rs1: timed out") == (
        "readonly", "the source's /conf could not be read (rs1: timed out): READONLY, which needs no ACL")
