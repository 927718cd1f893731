"""How each table's initial copy is made, and the snapshot path's preflight (pure: decisions and facts in, check
results out), as tables."""
from __future__ import annotations

import pytest

from hbase_migration.clusters.hdfs import QuotaConstraint
from hbase_migration.migration.checks import ERROR, WARNING, Unlearned
from hbase_migration.migration.initial_copy import DEFAULT_THRESHOLD, Decision, blockers, decide, lists
from hbase_migration.migration.snapshot_checks import (
    AccessFact,
    ConfFact,
    SnapshotFacts,
    SpaceFact,
    decisions_check,
    evaluate,
    space_need,
)

GIB = 1 << 30


@pytest.mark.parametrize("mode, size, blocked, recorded, method, reason", [
    ("scan", 10 * GIB, [], None, "scan", "initial_copy scan"),
    ("snapshot", 1, [], None, "snapshot", "initial_copy snapshot"),
    ("snapshot", 1, ["no webhdfs"], None, "snapshot", "initial_copy snapshot"),  # kept, refused by preflight
    ("auto", GIB, [], None, "snapshot", "auto: 1.0 GiB of store files (sizing) >= snapshot_threshold_bytes 1.0 GiB"),
    ("auto", GIB - 1, [], None, "scan", "auto: 1024.0 MiB of store files (sizing) < snapshot_threshold_bytes 1.0 GiB"),
    ("auto", 50 * GIB, ["the target connection has no webhdfs_url"], None, "scan",
     "auto: the snapshot path cannot take it (the target connection has no webhdfs_url)"),
    ("auto", None, [], None, "scan", "auto: its store files' size is unknown (not sized): the scan copy"),
    ("auto", 1, [], "snapshot", "snapshot", "decided earlier in this run (snapshot)"),  # a retry keeps it
    ("scan", 1, [], "snapshot", "snapshot", "decided earlier in this run (snapshot)"),
])
def test_decide(mode, size, blocked, recorded, method, reason):
    d = decide(mode, "t", store_file_bytes=size, blockers=blocked, recorded=recorded)
    assert (d.method, d.reason) == (method, reason)
    assert d.blockers == (tuple(blocked) if method == "snapshot" else ())


def test_decide_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="initial_copy must be one of scan, snapshot, auto"):
        decide("fast", "t", store_file_bytes=1)
    with pytest.raises(ValueError, match="recorded method"):
        decide("auto", "t", store_file_bytes=1, recorded="fast")
    assert DEFAULT_THRESHOLD == GIB


def test_blockers():
    assert blockers("t", source_webhdfs=True, target_webhdfs=True) == []
    assert blockers("t", source_webhdfs=False, target_webhdfs=True, codecs_mapped=["SNAPPY"],
                    class_refusals=["t: coprocessor x.Y is not installed"], target_table_exists=True) == [
        "the source connection has no webhdfs_url",
        "codec_map maps SNAPPY, which it uses, and a clone keeps the snapshot's schema as it is",
        "t: coprocessor x.Y is not installed", "t already exists on the target (clone_snapshot creates it)"]
    # this run's own export published or cloned it: its table
    assert blockers("t", source_webhdfs=True, target_webhdfs=True, target_table_exists=True, resumed=True) == []


def test_encrypted_families_block_the_snapshot_path_unless_the_master_key_is_attested():
    encrypted = {"e": "AES", "f": "AES"}
    [refusal] = blockers("ns:t", source_webhdfs=True, target_webhdfs=True, encrypted=encrypted)
    assert refusal.startswith("ns:t has encrypted families 'e' (ENCRYPTION => 'AES'), 'f' (ENCRYPTION => 'AES'): ")
    assert "wrapped with the source cluster's master key (hbase.crypto.master.key.name)" in refusal
    assert "initial_copy scan" in refusal and "same_master_key true" in refusal and "--same-master-key" in refusal
    assert blockers("t", source_webhdfs=True, target_webhdfs=True, encrypted={"e": "AES"})[0].startswith(
        "t has encrypted family 'e' (ENCRYPTION => 'AES')")
    assert blockers("t", source_webhdfs=True, target_webhdfs=True, encrypted=encrypted, same_master_key=True) == []
    assert blockers("t", source_webhdfs=True, target_webhdfs=True, encrypted={}) == []
    # auto sends such a table to the scan, saying why; snapshot keeps the refusal for preflight
    auto = decide("auto", "t", store_file_bytes=10 * GIB, blockers=[refusal])
    assert auto.method == "scan" and "encrypted" in auto.reason
    assert decide("snapshot", "t", store_file_bytes=None, blockers=[refusal]).blockers == (refusal,)


def test_the_clis_encryption_check():
    from hbase_migration.migration.snapshot_checks import encryption_check

    refused = encryption_check("t", {"e": "AES"}, same_master_key=False)
    assert (refused.name, refused.ok, refused.severity) == ("initial_copy", False, ERROR)
    assert refused.reason.startswith("t has encrypted family 'e' (ENCRYPTION => 'AES')") and "--same-master-key" in \
        refused.fix
    assert encryption_check("t", {"e": "AES"}, same_master_key=True).ok
    assert encryption_check("t", {}, same_master_key=False).reason == "t by snapshot: no encrypted family"


def test_lists_keep_the_runs_table_order():
    decisions = {"b": Decision("b", "snapshot", "x"), "a": Decision("a", "scan", "y"), "c": Decision("c", "snapshot",
                                                                                                     "z")}
    assert lists(decisions, ["c", "a", "b"]) == {
        "scan": [{"table": "a"}], "snapshot": [{"table": "c"}, {"table": "b"}], "scan_tables": ["a"],
        "snapshot_tables": ["c", "b"]}


def test_the_decisions_check():
    ok = decisions_check({"t": Decision("t", "snapshot", "initial_copy snapshot")}, "snapshot")
    assert ok.ok and ok.reason == "initial_copy snapshot: t: snapshot (initial_copy snapshot)"
    refused = decisions_check({"t": Decision("t", "snapshot", "initial_copy snapshot", ("no webhdfs",))}, "snapshot")
    assert not refused.ok and refused.severity == ERROR
    assert refused.reason == "the snapshot path cannot take t: no webhdfs"


def _facts(**changes):
    conf = {"hbase.snapshot.enabled": "true", "hbase.master.hfilecleaner.ttl": "300000"}
    values = dict(tables=("t",), source=ConfFact("dc1", conf, "the master m:16010"),
                  target=ConfFact("dc2", conf, "region server rs1"), target_tables={"t": False},
                  space=SpaceFact({"t": 10 * GIB}, {"t": 100}, replication=3, block_size=128 << 20, tasks=4,
                                  capacity_remaining=100 * GIB),
                  access=AccessFact("hbase", "hbase", "hadoop", checked=("/hbase/archive/data/default",)),
                  target_key="zk:2181:/hbase")
    values.update(changes)
    return SnapshotFacts(**values)


def _results(facts):
    return {r.name: r for r in evaluate(facts)}


def test_everything_in_order():
    results = _results(_facts())
    assert [r.name for r in evaluate(_facts())] == ["snapshots_enabled", "snapshot_target_tables", "snapshot_space",
                                                     "snapshot_write_access", "snapshot_settings"]
    assert all(r.ok for r in results.values()), results
    assert results["snapshot_space"].reason == ("t 10.0 GiB (x3: 31.5 GiB, 100 files) fit: 100.0 GiB free; no quota")
    assert evaluate(_facts(tables=())) == []


def test_space_need_counts_replicas_and_a_block_per_task():
    assert space_need(SpaceFact({"t": 100}, {"t": 7}, replication=3, block_size=10, tasks=2)) == (360, 7)


def test_snapshots_disabled_on_the_target():
    facts = _facts(target=ConfFact("dc2", {"hbase.snapshot.enabled": "false"}, "region server rs1"))
    r = _results(facts)["snapshots_enabled"]
    assert not r.ok and r.reason == "hbase.snapshot.enabled is false on the target dc2 (region server rs1)"
    assert r.fix.startswith("set hbase.snapshot.enabled=true in the target cluster's hbase-site.xml")


def test_a_conf_that_did_not_answer_is_transient_and_one_that_refused_is_not():
    unreachable = _results(_facts(source=ConfFact("dc1", error=Unlearned("ConnectionError: refused", True))))
    assert not unreachable["snapshots_enabled"].ok and unreachable["snapshots_enabled"].transient
    refused = _results(_facts(source=ConfFact("dc1", error=Unlearned("HTTP 403", False))))
    assert not refused["snapshots_enabled"].transient


def test_a_target_table_that_exists_is_refused_unless_this_run_cloned_it():
    r = _results(_facts(target_tables={"t": True}))["snapshot_target_tables"]
    assert not r.ok and "already on the target zk:2181:/hbase: t" in r.reason
    assert r.fix.startswith("disable 't'; drop 't'")
    resumed = _results(_facts(target_tables={"t": True}, resumed=frozenset({"t"})))["snapshot_target_tables"]
    assert resumed.ok and "exported by this run already: t" in resumed.reason


def test_no_room_on_the_target():
    quotas = (QuotaConstraint("/hbase/archive", "space", 20 * GIB, 5 * GIB),
              QuotaConstraint("/hbase", "namespace", 1000, 950))
    r = _results(_facts(space=SpaceFact({"t": 10 * GIB}, {"t": 100}, 1, 1 << 20, 2, 8 * GIB, quotas)))[
        "snapshot_space"]
    assert not r.ok and r.severity == ERROR
    assert r.reason == (
        "not enough room on the target for t 10.0 GiB: the target's HDFS has 8.0 GiB free, the snapshots need "
        "10.0 GiB (10.0 GiB x replication 1, and a block per task in flight); the namespace quota on /hbase leaves "
        "50 names, the snapshots need 100 names")
    assert "hdfs dfsadmin -setQuota 1050 /hbase (on the target)" in r.fix
    # the space quota's 15 GiB of room hold the 10 GiB and two blocks: not named
    assert "/hbase/archive" not in r.reason


def test_a_space_quota_too_small():
    quotas = (QuotaConstraint("/hbase/archive/data/default", "space", 4 * GIB, 3 * GIB),)
    r = _results(_facts(space=SpaceFact({"t": 2 * GIB}, {"t": 10}, 3, 128 << 20, 1, None, quotas)))["snapshot_space"]
    assert not r.ok
    assert "the space quota on /hbase/archive/data/default leaves 1.0 GiB, the snapshots need 6.4 GiB" in r.reason
    assert f"hdfs dfsadmin -setSpaceQuota {3 * GIB + 6 * GIB + 3 * (128 << 20)} /hbase/archive/data/default" in r.fix


def test_space_unreadable_is_transient():
    r = _results(_facts(space=SpaceFact(error=Unlearned("WebHdfsUnreachable: x", True))))["snapshot_space"]
    assert not r.ok and r.transient


def test_write_access_refused_and_ownership():
    refused = _results(_facts(access=AccessFact("migrator", "hbase", "hadoop", {
        "/hbase/archive/data/default": "Permission denied: user=migrator, access=WRITE"}, ("/x",))))
    r = refused["snapshot_write_access"]
    assert not r.ok and "migrator cannot write where the export writes on the target" in r.reason
    assert "run the export as the target's HBase user hbase" in r.fix
    chown = _results(_facts(access=AccessFact("migrator", "hbase", "hadoop", {}, ("/x",),
                                              "Permission denied. user=migrator is not the owner", True)))
    r = chown["snapshot_write_access"]
    assert not r.ok and "cannot give it the files (SETOWNER refused" in r.reason and "superuser" in r.fix
    given = _results(_facts(access=AccessFact("migrator", "hbase", "hadoop", {}, ("/x",), None, True)))
    assert given["snapshot_write_access"].ok
    assert given["snapshot_write_access"].reason == "migrator may write /x; files are given to hbase:hadoop"


def test_a_snapshot_ttl_on_the_source_is_a_warning():
    conf = {"hbase.snapshot.enabled": "true", "hbase.master.snapshot.ttl": "3600"}
    r = _results(_facts(source=ConfFact("dc1", conf, "the master m")))["snapshot_settings"]
    assert not r.ok and r.severity == WARNING and "TTL of 3600s" in r.reason
    plain = _results(_facts())["snapshot_settings"]
    assert plain.ok and plain.reason == (
        "source dc1: hbase.master.hfilecleaner.ttl=300000, hbase.snapshot.master.timeout.millis=300000, "
        "hbase.snapshot.region.timeout=300000, hbase.master.snapshot.ttl=0; target dc2: "
        "hbase.master.hfilecleaner.ttl=300000")
