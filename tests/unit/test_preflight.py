"""The preflight verdicts as a table: facts in, named results out (no cluster needed)."""
from dataclasses import replace

import pytest

from hbase_migration.cluster import ClusterKey
from hbase_migration.hdfs import HeadroomDecision
from hbase_migration.preflight import ClusterFacts, Facts, evaluate
from hbase_migration.replication.model import DEFAULT_OWNER, Peer, PeerConfig
from hbase_migration.schema import FamilySchema, TableSchema

TARGET_KEY = "127.0.0.1:2181:/hbase-dc2"


def schema(name, scopes=("1",), enabled=True):
    fams = tuple(FamilySchema(f"f{i}", {"REPLICATION_SCOPE": s}) for i, s in enumerate(scopes))
    return TableSchema(name, enabled, fams)


def wanted(tables=("t1",)):
    return PeerConfig(cluster_key=ClusterKey.parse(TARGET_KEY), table_cfs={t: [] for t in tables})


def facts(**changes):
    base = Facts(
        source=ClusterFacts("hbase_source", "127.0.0.1:2181:/hbase-dc1", "id-1", {"t1": schema("t1")}),
        target=ClusterFacts("hbase_target", TARGET_KEY, "id-2", {"t1": schema("t1")}),
        tables=("t1",), peer_id="mig1", wanted_peer=wanted(),
        headroom=HeadroomDecision(True, (), None, 7200.0),
    )
    return replace(base, **changes)


def result(report, name):
    return next(r for r in report.results if r.name == name)


def test_healthy_pair_passes_every_check():
    report = evaluate(facts(), same_key=False)
    assert report.ok, report.text()
    assert [r.name for r in report.results] == [
        "source_reachable", "target_reachable", "distinct_clusters", "source_tables", "target_tables",
        "target_table_attributes", "target_data", "coprocessors", "target_create_check", "replication_scope",
        "peer_id", "peer_options", "pinning_peers", "oldwals_headroom", "bulk_load_replication",
        "keep_deleted_cells"]


@pytest.mark.parametrize("case, changes, same_key, check, fragment", [
    ("unreachable source", dict(source=ClusterFacts("s", "k", error="ZooKeeperUnreachable: no answer")), False,
     "source_reachable", "no answer"),
    ("same key", {}, True, "distinct_clusters", "same cluster"),
    ("same cluster id", dict(target=ClusterFacts("t", TARGET_KEY, "id-1", {"t1": schema("t1")})), False,
     "distinct_clusters", "same cluster id id-1"),
    ("missing source table", dict(source=ClusterFacts("s", "k", "id-1", {"t1": None})), False,
     "source_tables", "not found on the source: t1"),
    ("target lacks family", dict(target=ClusterFacts("t", TARGET_KEY, "id-2",
                                                     {"t1": TableSchema("t1", True, ())})), False,
     "target_tables", "lacks families f0"),
    ("target absent, creation refused", dict(target=ClusterFacts("t", TARGET_KEY, "id-2", {"t1": None}),
                                             create_missing=False), False,
     "target_tables", "absent on the target: t1"),
    ("scope 0", dict(source=ClusterFacts("s", "k", "id-1", {"t1": schema("t1", ("1", "0"))})), False,
     "replication_scope", "REPLICATION_SCOPE is 0 on t1:f1"),
    ("scope 3", dict(source=ClusterFacts("s", "k", "id-1", {"t1": schema("t1", ("3",))})), False,
     "replication_scope", "refusing t1:f0=3"),
    ("peer id with dash", dict(peer_id="mig-1"), False, "peer_id", "-"),
    ("foreign peer", dict(peers=(Peer("mig1", wanted(), False),)), False, "peer_id", "not created by this"),
    ("our peer, other tables", dict(peers=(Peer("mig1", wanted(("t9",)).with_owner(DEFAULT_OWNER), False),)),
     False, "peer_id", "replicates something else"),
    ("other disabled peer", dict(peers=(Peer("old", wanted(("x",)), False),)), False, "pinning_peers",
     "disabled peer(s) old already pin WALs"),
    ("quota short", dict(headroom=HeadroomDecision(False, ("exhausted in 100s",), 100.0, 7200.0)), False,
     "oldwals_headroom", "exhausted in 100s"),
    ("webhdfs down", dict(headroom=None, headroom_error="cannot read oldWALs usage: refused"), False,
     "oldwals_headroom", "cannot read oldWALs usage"),
])
def test_each_failure_is_named_with_its_reason(case, changes, same_key, check, fragment):
    report = evaluate(facts(**changes), same_key=same_key)
    assert not report.ok, case
    failing = result(report, check)
    assert not failing.ok and fragment in failing.reason, (case, failing)


def test_scope_fix_is_offered_as_shell_statement():
    report = evaluate(facts(source=ClusterFacts("s", "k", "id-1", {"t1": schema("t1", ("0",))})), False)
    assert result(report, "replication_scope").fix == "alter \"t1\", {NAME => \"f0\", REPLICATION_SCOPE => \"1\"}"


def test_our_peer_with_same_config_is_accepted_as_rerun():
    mine = Peer("mig1", wanted().with_owner(DEFAULT_OWNER), False)
    report = evaluate(facts(peers=(mine,)), same_key=False)
    assert report.ok
    assert "already exists with this config (DISABLED)" in result(report, "peer_id").reason


def test_absent_target_table_is_ok_when_it_will_be_created():
    report = evaluate(facts(target=ClusterFacts("t", TARGET_KEY, "id-2", {"t1": None})), same_key=False)
    assert report.ok
    assert "will be created" in result(report, "target_tables").reason


def test_lagging_other_peer_is_a_warning_not_a_failure():
    report = evaluate(facts(peers=(Peer("other", wanted(("x",)), True),), queued_wals={"other": 5}), False)
    check = result(report, "pinning_peers")
    assert report.ok and not check.ok and check.severity == "warning"
    assert "other=5" in check.reason


def test_no_webhdfs_is_a_warning():
    report = evaluate(facts(headroom=None), same_key=False)
    assert report.ok and result(report, "oldwals_headroom").severity == "warning"
