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
