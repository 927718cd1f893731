"""The preflight verdicts as a table: facts in, named results out (no cluster needed)."""
from dataclasses import replace

import pytest

from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.clusters.hbase_conf import ServerConf
from hbase_migration.clusters.hdfs import HeadroomDecision
from hbase_migration.migration.checks import Unlearned, transient
from hbase_migration.migration.preflight import ClusterFacts, Facts, evaluate
from hbase_migration.migration.schema import FamilySchema, TableSchema
from hbase_migration.replication.model import DEFAULT_OWNER, Peer, PeerConfig

TARGET_KEY = "127.0.0.1:2181:/hbase-dc2"
BULK_ON = ServerConf("rs1,16020,1", {"hbase.replication.bulkload.enabled": "true",
                                     "hbase.replication.cluster.id": "dc1"})


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
        headroom=HeadroomDecision(True, (), None, 7200.0), source_confs=(BULK_ON,),
        target_confs=(ServerConf("rs9,16020,1", {}),),
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
        "peer_id", "peer_options", "pinning_peers", "oldwals_headroom", "copy_projection", "bulk_load_replication",
        "drop_on_deleted_table", "keep_deleted_cells", "delete_marker_retention"]


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


# ------------------------------------------------------------------------------------------------ tables


def family(name, **attrs):
    return FamilySchema(name, {"REPLICATION_SCOPE": "1", **attrs})


def two_sides(source_fams, target_fams, source_attrs=None, target_attrs=None, **changes):
    """Facts for table t1 with these families on each side (None: absent on the target)."""
    src = TableSchema("t1", True, tuple(source_fams), dict(source_attrs or {}))
    dst = None if target_fams is None else TableSchema("t1", True, tuple(target_fams), dict(target_attrs or {}))
    return facts(source=ClusterFacts("s", "k", "id-1", {"t1": src}),
                 target=ClusterFacts("t", TARGET_KEY, "id-2", {"t1": dst}), **changes)


def test_existing_target_table_differing_in_what_a_reader_sees_is_refused_naming_both_values():
    report = evaluate(two_sides(
        [family("d", VERSIONS="3", TTL="86400 SECONDS (1 DAY)", KEEP_DELETED_CELLS="TRUE", MIN_VERSIONS="1")],
        [family("d", VERSIONS="1", TTL="86400", KEEP_DELETED_CELLS="FALSE", MIN_VERSIONS="1")]), False)
    check = result(report, "target_tables")
    assert not report.ok and not check.ok
    # TTL is the same value printed in two HBase versions' units: not a mismatch.
    assert check.reason == "t1:d VERSIONS: source 3, target 1; t1:d KEEP_DELETED_CELLS: source TRUE, target FALSE"
    assert check.fix == 'alter "t1", {NAME => "d", VERSIONS => 3, KEEP_DELETED_CELLS => "TRUE"}'


def test_existing_target_table_differing_in_storage_is_a_warning():
    report = evaluate(two_sides(
        [family("d", VERSIONS="3", COMPRESSION="SNAPPY", DATA_BLOCK_ENCODING="FAST_DIFF", BLOCKSIZE="32768 B (32KB)")],
        [family("d", VERSIONS="3", COMPRESSION="ZSTD", DATA_BLOCK_ENCODING="NONE", BLOCKSIZE="65536")],
        {"DURABILITY": "ASYNC_WAL"}, {}), False)
    assert report.ok, report.text()
    check = result(report, "target_table_attributes")
    assert check.severity == "warning" and not check.ok
    assert "t1:d BLOCKSIZE: source 32768, target 65536" in check.reason
    assert "t1:d COMPRESSION: source SNAPPY, target ZSTD" in check.reason
    assert "t1:d DATA_BLOCK_ENCODING: source FAST_DIFF, target NONE" in check.reason
    assert "t1 DURABILITY: source ASYNC_WAL, target (unset)" in check.reason
    # With the run's codec map, the target's ZSTD is what was asked for.
    mapped = evaluate(two_sides([family("d", COMPRESSION="SNAPPY")], [family("d", COMPRESSION="ZSTD")],
                                codec_map={"SNAPPY": "ZSTD"}), False)
    assert result(mapped, "target_table_attributes").ok


def test_target_table_holding_rows_is_refused_unless_allowed_or_this_migrations_own():
    holding = dict(target_first_rows={"t1": b"row-0001"})
    report = evaluate(facts(**holding), False)
    check = result(report, "target_data")
    assert not report.ok and not check.ok
    assert check.reason == ("target tables already hold rows, which would mix with the copy's cells and fail "
                            "verification: t1 (first row b'row-0001')")
    assert check.fix.startswith('truncate "t1"; or set allow_target_data')
    assert evaluate(facts(allow_target_data=True, **holding), False).ok
    mine = Peer("mig1", wanted().with_owner(DEFAULT_OWNER), False)
    resumed = evaluate(facts(peers=(mine,), **holding), False)
    assert resumed.ok and "a resumed or repeated run" in result(resumed, "target_data").reason
    assert evaluate(facts(target_first_rows={"t1": None}), False).ok
    unreadable = evaluate(facts(target_rows_error="TIOError: boom"), False)
    assert "cannot tell whether the target tables hold rows: TIOError: boom" in result(unreadable, "target_data").reason


def test_coprocessor_not_installed_on_the_target_is_refused_by_name():
    spec = "hdfs:///cp/audit.jar|org.example.Audit|1001|"
    absent = dict(source_attrs={"coprocessor$1": spec}, target_fams=None)
    report = evaluate(two_sides([family("d")], **absent), False)
    check = result(report, "coprocessors")
    assert not report.ok and not check.ok
    assert check.reason.startswith("t1: coprocessor org.example.Audit (coprocessor$1 => "
                                   "'hdfs:///cp/audit.jar|org.example.Audit|1001|') is not among the classes "
                                   "installed on the target (target_coprocessors)")
    assert "alter \"t1\", METHOD => 'table_att_unset', NAME => 'coprocessor$1'" in check.reason
    installed = evaluate(two_sides([family("d")], target_coprocessors=("org.example.Audit",), **absent), False)
    assert installed.ok and "org.example.Audit" in result(installed, "coprocessors").reason
    policy = evaluate(two_sides([family("d")], None, {"SPLIT_POLICY": "org.example.MyPolicy"}), False)
    assert "SPLIT_POLICY org.example.MyPolicy is not one of HBase's own policies" in \
        result(policy, "coprocessors").reason


def test_codec_the_target_refuses_fails_with_the_codec_the_families_and_the_fix():
    refusal = ("ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Compression algorithm 'lzo' previously failed "
               "test. Set hbase.table.sanity.checks to false ...")
    report = evaluate(two_sides([family("d", COMPRESSION="LZO"), family("e", COMPRESSION_COMPACT="LZO")], None,
                                create_checks={"t1": refusal}), False)
    check = result(report, "target_create_check")
    assert not report.ok
    assert check.reason == f"t1 (LZO (d.COMPRESSION, e.COMPRESSION_COMPACT)): the target refuses its create: {refusal}"
    assert "codec_map SNAPPY=ZSTD" in check.fix
    passed = evaluate(two_sides([family("d", COMPRESSION="LZO")], None, codec_map={"LZO": "GZ"},
                                create_checks={"t1": None}), False)
    assert passed.ok and "t1: GZ (d.COMPRESSION)" in result(passed, "target_create_check").reason


def test_serial_peer_with_the_zookeeper_backend_is_refused():
    serial = PeerConfig(cluster_key=ClusterKey.parse(TARGET_KEY), table_cfs={"t1": []}, serial=True)
    report = evaluate(facts(wanted_peer=serial, peer_backend="zookeeper"), False)
    check = result(report, "peer_options")
    assert not report.ok and "serial replication needs HBase 2.1+" in check.reason
    assert check.fix.startswith("set the source connection's extra peer_admin=shell")
    assert evaluate(facts(wanted_peer=serial), False).ok  # the shell backend


def test_our_peer_with_another_serial_or_bandwidth_is_another_config():
    mine = Peer("mig1", wanted().with_owner(DEFAULT_OWNER), False)
    faster = PeerConfig(cluster_key=ClusterKey.parse(TARGET_KEY), table_cfs={"t1": []}, bandwidth=1024)
    report = evaluate(facts(peers=(mine,), wanted_peer=faster), False)
    assert "replicates something else (bandwidth: 0 != 1024)" in result(report, "peer_id").reason


OFF = ServerConf("rs1,16020,1", {"hbase.replication.bulkload.enabled": "false"})
NO_ID = ServerConf("rs2,16020,1", {"hbase.replication.bulkload.enabled": "true"})
UNREAD = ServerConf("rs3,16020,1", error="GET http://rs3:16030/conf failed: ConnectTimeout")


@pytest.mark.parametrize("confs, conf_error, bulk_loads, ok, fragment", [
    ((BULK_ON,), None, "replicated", True, "hbase.replication.cluster.id=dc1 on all 1 server(s)"),
    ((BULK_ON,), None, "none", True, "bulk-loaded HFiles replicate"),  # the /conf's finding comes first
    ((OFF, NO_ID), None, "replicated", False, "rs1,16020,1: hbase.replication.bulkload.enabled=false; rs2,16020,1: "
     "hbase.replication.bulkload.enabled=true but hbase.replication.cluster.id is unset"),
    ((OFF,), None, "none", True, "bulk_loads none: the operator attests nothing is bulk loaded"),
    ((BULK_ON, UNREAD), None, "replicated", False, "unknown whether bulk-loaded HFiles replicate (rs3,16020,1: GET"),
    ((BULK_ON, UNREAD), None, "none", True, "bulk_loads none"),
    (None, "ConfUnreadable: refused", "replicated", False, "the source's /conf not read: ConfUnreadable: refused"),
    (None, "ConfUnreadable: refused", "none", True, "(bulk loads would not replicate: the source's /conf not read"),
])
def test_bulk_loads_must_replicate_unless_the_operator_attests_none(confs, conf_error, bulk_loads, ok, fragment):
    """Issue 39: a bulk load after T0 is not in the WALs: an ERROR (the run stops at preflight) unless the source's
    /conf shows it replicates, or the run spec says bulk_loads none; an unreadable /conf is no proof."""
    report = evaluate(facts(source_confs=confs, source_conf_error=conf_error, bulk_loads=bulk_loads), False)
    check = result(report, "bulk_load_replication")
    assert (check.ok, report.ok) == (ok, ok) and fragment in check.reason, check
    if not ok:
        assert check.severity == "error" and [r.name for r in report.failures] == ["bulk_load_replication"]
        assert "hbase.replication.cluster.id on the source's region servers" in check.fix
        assert "bulk_loads none (form, plan [peer] bulk_loads, CLI --bulk-loads none)" in check.fix


def test_an_unreadable_source_conf_is_retried_when_the_endpoint_did_not_answer():
    for error, retried in ((Unlearned("ZooKeeperUnreachable: no answer", transient=True), True),
                           (Unlearned("HTTP 403 from /conf"), False)):
        check = result(evaluate(facts(source_confs=None, source_conf_error=error), False), "bulk_load_replication")
        assert not check.ok and check.transient is retried and transient(error) is retried


def test_drop_on_deleted_table_is_a_warning_naming_the_sending_servers():
    """Issue 39: read where HBase reads it, the sending cluster's region servers (the source's for the forward
    peer, the target's for the reverse one)."""
    drop = {"hbase.replication.drop.on.deleted.table": "true"}
    report = evaluate(facts(target_confs=(ServerConf("rs8,16020,1", drop), ServerConf("rs9,16020,1", {}))), False)
    check = result(report, "drop_on_deleted_table")
    assert report.ok and not check.ok and check.severity == "warning"
    assert check.reason.startswith("hbase.replication.drop.on.deleted.table=true on target: rs8,16020,1: these "
                                   "region servers drop, instead of retrying")
    assert "hbase.replication.drop.on.deleted.table=false (HBase's default)" in check.fix
    both = result(evaluate(facts(source_confs=(ServerConf("rs1,16020,1", {**BULK_ON.properties, **drop}),),
                                 target_confs=(ServerConf("rs8,16020,1", drop),)), False), "drop_on_deleted_table")
    assert "true on source: rs1,16020,1; target: rs8,16020,1:" in both.reason
    unread = result(evaluate(facts(target_confs=None, target_conf_error="ConfUnreadable: HTTP 403"), False),
                    "drop_on_deleted_table")
    assert not unread.ok and unread.severity == "warning" and unread.reason == (
        "hbase.replication.drop.on.deleted.table not known: target's /conf not read (ConfUnreadable: HTTP 403)")
    assert result(evaluate(facts(), False), "drop_on_deleted_table").reason.startswith(
        "hbase.replication.drop.on.deleted.table false on every region server of both clusters")


def test_keep_deleted_cells_families_are_a_warning():
    report = evaluate(two_sides([family("d", KEEP_DELETED_CELLS="TRUE"), family("e")],
                                [family("d", KEEP_DELETED_CELLS="TRUE"), family("e")]), False)
    check = result(report, "keep_deleted_cells")
    assert report.ok and check.severity == "warning"
    assert "a Thrift scan cannot return delete markers" in check.reason and check.reason.endswith(
        "t1:d (KEEP_DELETED_CELLS => TRUE)")


def sizing_report(growth, capacity_remaining=10 << 30, sample_complete=True, errors=()):
    """A sizing of t1: one region of 1 MiB copied in 10 s; the table 100 MiB, its biggest region 2 MiB."""
    from hbase_migration.clusters.hdfs import HdfsCapacity
    from hbase_migration.migration.sizing import SampleCopy, TableSizing, project, verdict
    from hbase_migration.migration.sizing_probe import SizingReport

    sample = SampleCopy("a" * 32, 1 << 20, 1_000, 2_000, 1 << 21, 10.0, sample_complete)
    tables = (TableSizing("t1", 100, 100, 100 << 20, 0, 100, 0, 0, 2 << 20, sample),)
    p = project(tables, copy_tasks=10, growth_bytes_per_s=growth,
                capacity=HdfsCapacity(100 << 30, 90 << 30, capacity_remaining))
    return SizingReport(tables, p, verdict(p), None, None, tuple(errors), 3.0)


def test_the_projection_check_refuses_what_does_not_fit_and_names_the_figures_and_fixes():
    fits = evaluate(facts(sizing=sizing_report(growth=1_000.0)), same_key=False)
    check = result(fits, "copy_projection")
    assert fits.ok and check.ok and check.reason.startswith("projected copy 1m40s (100s, 10 partitions at once)")
    # oldwals_headroom keeps to the marks as they are now when the copy is projected
    assert result(fits, "oldwals_headroom").reason == ("no quota at or above its mark now; over the copy: see "
                                                       "copy_projection")

    # 100 MiB/s for 100 s pins ~9.8 GiB, x2 > the 10 GiB free: refused, with the fixes
    refused = evaluate(facts(sizing=sizing_report(growth=100 << 20)), same_key=False)
    check = result(refused, "copy_projection")
    assert not refused.ok and (check.ok, check.severity) == (False, "error")
    assert check.reason == ("projected copy 1m40s (100s, 10 partitions at once), oldWALs growth 100.0 MiB/s pins "
                            "9.8 GiB (x2 = 19.5 GiB); does not fit: HDFS free space (the namenode's "
                            "CapacityRemaining): needs 19.5 GiB, room 10.0 GiB")
    assert check.fix.startswith("free HDFS space: at least 19.5 GiB more than the 10.0 GiB remaining") and \
        "fewer tables per run (the longest: t1 16m40s of work)" in check.fix
    assert [r.name for r in refused.failures] == ["copy_projection"]


def test_the_projection_check_warns_when_it_cannot_judge():
    stopped = evaluate(facts(sizing=sizing_report(growth=1.0, sample_complete=False)), same_key=False)
    check = result(stopped, "copy_projection")
    assert stopped.ok and (check.ok, check.severity) == (False, "warning")
    assert check.reason.startswith("not projected: t1: the sample copy stopped at the timeout")
    partial = evaluate(facts(sizing=sizing_report(growth=1.0, errors=("rs2,16020,1: /jmx sub=Regions unreadable",))),
                       same_key=False)
    assert result(partial, "copy_projection").severity == "warning"
    assert result(partial, "copy_projection").reason.endswith("; not read: rs2,16020,1: /jmx sub=Regions unreadable")
    failed = evaluate(facts(sizing_error="ShellCommandError: no shell"), same_key=False)
    assert failed.ok and result(failed, "copy_projection").reason == "the run could not be sized: ShellCommandError: " \
                                                                   "no shell"
    assert result(evaluate(facts(), same_key=False), "copy_projection").reason == (
        "not sized (sizing off): oldwals_headroom trusts expected_copy_s")


# A fact, or a failure to learn one (issue 24): a check not made because an endpoint did not answer is retried;
# a refusal is final. The facts' errors are `Unlearned` (made by `Unlearned.of` from the exception met).

NO_ANSWER = Unlearned("ConnectionLoss: ", transient=True)
ANSWERED = Unlearned("ZnodeMissing: /hbase-dc1/hbaseid does not exist (a wrong znode parent?)", transient=False)


@pytest.mark.parametrize("case, changes, check", [
    ("source zookeeper session lost", dict(source=ClusterFacts("s", "k", error=NO_ANSWER)), "source_reachable"),
    ("target gateway silent", dict(target=ClusterFacts("t", TARGET_KEY, error=NO_ANSWER)), "target_reachable"),
    ("peers not listed", dict(peers_error=NO_ANSWER), "peer_id"),
    ("target rows not read", dict(target_rows_error=NO_ANSWER), "target_data"),
    ("webhdfs silent", dict(headroom=None, headroom_error=NO_ANSWER), "oldwals_headroom"),
])
def test_a_check_an_endpoint_kept_from_being_made_is_retried(case, changes, check):
    report = evaluate(facts(**changes), same_key=False)
    assert not report.ok and report.retryable, case
    assert result(report, check).transient
    assert all(r.transient for r in report.failures)
    assert "(no answer: not checked now)" in report.text()
    assert report.to_dict()["retryable"] is True


@pytest.mark.parametrize("case, changes", [
    ("a wrong znode parent", dict(source=ClusterFacts("s", "k", error=ANSWERED))),
    ("an error given as text (what older callers pass): a fact", dict(peers_error="PeerAdminError: unreadable")),
    ("one endpoint silent, one definite refusal", dict(
        target=ClusterFacts("t", TARGET_KEY, error=NO_ANSWER),
        source=ClusterFacts("s", "k", "id-1", {"t1": schema("t1", ("3",))}))),
])
def test_a_definite_refusal_fails_at_once(case, changes):
    report = evaluate(facts(**changes), same_key=False)
    assert not report.ok and not report.retryable, case


def test_a_passing_report_is_not_retryable():
    assert not evaluate(facts(), same_key=False).retryable


def test_unlearned_of_an_exception_keeps_its_text_and_class():
    from kazoo.exceptions import SessionExpiredError

    from hbase_migration.clusters.zk import ZnodeMissing

    expired = Unlearned.of(SessionExpiredError())
    assert (str(expired), expired.transient) == ("SessionExpiredError: ", True)
    missing = Unlearned.of(ZnodeMissing("/x/hbaseid does not exist"))
    assert (str(missing), missing.transient) == ("ZnodeMissing: /x/hbaseid does not exist", False)


def test_hbases_region_replica_peer_is_neither_pinning_nor_lagging():
    """HBase 2.x adds `region_replica_replication` for tables with REGION_REPLICATION > 1: even disabled and with
    a backlog it is not a foreign peer pinning WALs for this migration (it is HBase's, and left alone)."""
    from hbase_migration.replication.model import REGION_REPLICA_ENDPOINT, REGION_REPLICA_PEER, is_internal

    internal = Peer(REGION_REPLICA_PEER, PeerConfig(cluster_key=ClusterKey.parse("127.0.0.1:2181:/hbase-dc1"),
                                                    endpoint_class=REGION_REPLICA_ENDPOINT), False)
    assert is_internal(internal) and is_internal(REGION_REPLICA_PEER) and not is_internal("mig1")
    report = evaluate(facts(peers=(internal,), queued_wals={REGION_REPLICA_PEER: 9},
                            recovered_queues={REGION_REPLICA_PEER: 1}), same_key=False)
    check = result(report, "pinning_peers")
    assert check.ok and "HBase's own region_replica_replication left alone" in check.reason, check


def test_delete_markers_purged_too_soon_on_the_source_are_a_warning_naming_where_it_is_set():
    """Real HBase: a DeleteColumn major-compacted away on the source, then a put with an older timestamp, shows on
    the source only. The effective purge delay comes from the family, else the table, else the servers."""
    day_ms = "86400000"
    servers = (ServerConf("rs1", {"hbase.hstore.time.to.purge.deletes": day_ms}),
               ServerConf("rs2", {"hbase.hstore.time.to.purge.deletes": "0"}))
    warned = result(evaluate(facts(source_confs=servers), False), "delete_marker_retention")
    assert (warned.ok, warned.severity) == (False, "warning")
    assert "t1:f0 (0s, the region servers' hbase-site)" in warned.reason and "=86400000" in warned.fix
    long = (ServerConf("rs1", {"hbase.hstore.time.to.purge.deletes": day_ms}),)
    assert result(evaluate(facts(source_confs=long), False), "delete_marker_retention").ok
    family = FamilySchema("f0", {"REPLICATION_SCOPE": "1"}, configuration={"hbase.hstore.time.to.purge.deletes": "0"})
    table = TableSchema("t1", True, (family,))
    own = result(evaluate(facts(source=ClusterFacts("s", "k", "id-1", {"t1": table}), source_confs=long), False),
                 "delete_marker_retention")
    assert not own.ok and "t1:f0 CONFIGURATION" in own.reason
    keeping = FamilySchema("f0", {"REPLICATION_SCOPE": "1", "KEEP_DELETED_CELLS": "TRUE"})
    kept = facts(source=ClusterFacts("s", "k", "id-1", {"t1": TableSchema("t1", True, (keeping,))}))
    assert result(evaluate(kept, False), "delete_marker_retention").ok


def test_the_runs_own_batch_peers_are_its_backlog_not_a_foreign_pinning_peer():
    """A run of several batches, retried: its batches' peers `<peer_id>_b<k>` (ours, on its tables) are DISABLED
    and queued, and are not refused; a DISABLED peer of that name on another table, or not ours, still is."""
    two = facts(tables=("t1", "t2"), source=ClusterFacts("s", "127.0.0.1:2181:/hbase-dc1", "id-1",
                                                          {"t1": schema("t1"), "t2": schema("t2")}),
                target=ClusterFacts("t", TARGET_KEY, "id-2", {"t1": schema("t1"), "t2": schema("t2")}),
                wanted_peer=wanted(("t1", "t2")))
    mine = [Peer(f"mig1_b{k}", wanted((t,)).with_owner(DEFAULT_OWNER), False) for k, t in ((1, "t1"), (2, "t2"))]
    report = evaluate(replace(two, peers=tuple(mine), queued_wals={"mig1_b1": 9, "mig1_b2": 4}), False)
    check = result(report, "pinning_peers")
    assert check.ok and "this run's own batch peers mig1_b1, mig1_b2 are its backlog" in check.reason, check
    for foreign in (Peer("mig1_b3", wanted(("elsewhere",)).with_owner(DEFAULT_OWNER), False),  # not its tables
                    Peer("mig1_b3", wanted(("t1",)), False),  # not the toolkit's
                    Peer("mig2_b1", wanted(("t1",)).with_owner(DEFAULT_OWNER), False)):  # another run's base id
        check = result(evaluate(replace(two, peers=(*mine, foreign)), False), "pinning_peers")
        assert not check.ok and check.reason.startswith(f"disabled peer(s) {foreign.id} already pin WALs"), check
