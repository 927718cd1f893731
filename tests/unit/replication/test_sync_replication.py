"""Synchronous replication: support from the region servers' versions, statements, transition plans (pure)."""
from __future__ import annotations

import pytest

from hbase_migration.replication import sync_replication as sr


@pytest.mark.parametrize("text, parsed", [("2.6.4-hadoop3", (2, 6, 4)), ("3.0.0-beta-1", (3, 0, 0)),
                                          ("3.0.0-alpha-1-SNAPSHOT", (3, 0, 0)), ("2.1", (2, 1, 0)),
                                          ("", None), (None, None), ("unknown", None)])
def test_parse_version(text, parsed):
    assert sr.parse_version(text) == parsed


def test_hbase_2_6_is_refused_with_the_evidence():
    support = sr.support({"source": {"rs1,1,1": "2.6.4-hadoop3"}, "target": {"rs2,1,1": "3.0.0-beta-1"}})
    assert not support.supported
    assert support.reasons == (f"source: region server(s) rs1,1,1 (2.6.4-hadoop3) run HBase < 3.0. {sr.EVIDENCE_2X}",)
    assert "remoteWALDir" in sr.EVIDENCE_2X and "3.0.0-alpha-1" in sr.EVIDENCE_2X


def test_unknown_versions_and_old_shells_are_refused():
    support = sr.support({"source": {"a,1,1": None}, "target": {}}, {"source": True, "target": False})
    assert support.reasons == (
        "source: region server(s) a,1,1 publish no version in ZooKeeper: cannot tell whether they have synchronous "
        "replication (HBase 3.0+)",
        "target: no live region server to read a version from",
        "target: its HBase shell has no transit_peer_sync_replication_state (a shell older than 3.0): give the "
        "connection a 3.x shell_command")


def test_hbase_3_with_a_3_shell_is_supported():
    assert sr.support({"source": {"a,1,1": "3.0.0"}, "target": {"b,1,1": "3.1.0"}},
                      {"source": True, "target": None}).supported


def test_shell_probe_round_trip():
    assert sr.shell_probe_statement() == ('puts "sync_replication_shell=" + '
                                          'respond_to?(:transit_peer_sync_replication_state, true).to_s')
    assert sr.parse_shell_probe("hbase:001:0> puts ...\nsync_replication_shell=false\n") is False
    assert sr.parse_shell_probe("sync_replication_shell=true") is True
    assert sr.parse_shell_probe("nothing") is None


def test_statements():
    assert sr.remote_wal_dir("hdfs://nn-b:8020", "/hbase") == "hdfs://nn-b:8020/hbase/remoteWALs"
    assert sr.add_sync_peer_statement("m1", "zk-b:2181:/hbase", "hdfs://nn-a:8020/hbase/remoteWALs",
                                      ["t1", "ns:t2"]) == (
        'add_peer "m1", CLUSTER_KEY => "zk-b:2181:/hbase", REMOTE_WAL_DIR => "hdfs://nn-a:8020/hbase/remoteWALs", '
        'TABLE_CFS => {"t1" => [], "ns:t2" => []}')
    assert sr.transit_statement("m1", "STANDBY") == 'transit_peer_sync_replication_state "m1", "STANDBY"'
    with pytest.raises(ValueError, match="state must be one of"):
        sr.transit_statement("m1", "NONE")
    with pytest.raises(ValueError, match="file system URI"):
        sr.remote_wal_dir("nn-b:8020")
    with pytest.raises(ValueError, match="needs its tables"):
        sr.add_sync_peer_statement("m1", "zk:2181:/hbase", "hdfs://nn:8020/x", [])


def test_plans_follow_hbases_allowed_transitions():
    planned = sr.plan("planned", "m1")
    assert [(s["side"], s["state"]) for s in planned] == [("source", "STANDBY"), ("target", "DOWNGRADE_ACTIVE"),
                                                         ("target", "ACTIVE")]
    assert planned[0]["statement"] == 'transit_peer_sync_replication_state "m1", "STANDBY"'
    assert [(s["side"], s["state"]) for s in sr.plan("failover", "m1")] == [
        ("target", "DOWNGRADE_ACTIVE"), ("source", "STANDBY"), ("target", "ACTIVE")]
    with pytest.raises(ValueError, match="'planned' or 'failover'"):
        sr.plan("other", "m1")


def test_check_steps_names_a_transition_hbase_refuses():
    with pytest.raises(ValueError, match=r"step 1: the target cannot go from STANDBY to ACTIVE \(HBase allows "
                                         r"STANDBY -> DOWNGRADE_ACTIVE\)"):
        sr.check_steps({"source": "ACTIVE", "target": "STANDBY"}, [sr.Step("target", "ACTIVE", "")])
    assert sr.check_steps({"source": "ACTIVE", "target": "STANDBY"}, sr.planned_switch()) == {
        "source": "STANDBY", "target": "ACTIVE"}
