"""Target tables exactly like the source's, and preflight's table checks, against two minihbase clusters.

The source (dc1) loads LZO (native LZO installed) and has an observer class installed; the target (dc2) is a
stock HBase without LZO. What the toolkit creates is compared with what the source's `describe` shows, line by
line, independently of the toolkit's parser.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.migration.checks import ERROR
from hbase_migration.migration.preflight import run_preflight
from hbase_migration.migration.tables import TableRefused, create_missing_tables
from hbase_migration.replication import peer_admin
from hbase_migration.replication.model import DEFAULT_OWNER, PeerConfig
from minihbase.testing import MiniCluster

pytestmark = pytest.mark.integration

OBSERVER = "com.example.hbase.AuditObserver"
REPO = Path(__file__).resolve().parents[2]
TOOK = re.compile(r"^Took \d+\.\d{4} seconds$")


@pytest.fixture(scope="module")
def pair(zookeeper, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("target-tables")
    suffix = uuid.uuid4().hex[:6]
    dc1 = MiniCluster.start(zookeeper.hosts, workdir, name="dc1", znode_parent=f"/hbase-tt1-{suffix}",
                            region_servers=1, coprocessor_classes=[OBSERVER],
                            compression_codecs=["GZ", "SNAPPY", "LZ4", "ZSTD", "LZO"])
    try:
        dc2 = MiniCluster.start(zookeeper.hosts, workdir, name="dc2", znode_parent=f"/hbase-tt2-{suffix}",
                                region_servers=1, coprocessor_classes=[OBSERVER])
    except BaseException:
        dc1.stop()
        raise
    yield dc1, dc2
    dc2.stop()
    dc1.stop()


def cluster(mini: MiniCluster) -> Cluster:
    connection = mini.endpoints["connection"]
    return Cluster.from_connection(mini.name, connection["host"], connection["port"], connection["extra"])


def shell(mini: MiniCluster, *statements: str, rc: int = 0) -> list[str]:
    proc = subprocess.run(mini.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if not TOOK.match(line)]


def described(mini: MiniCluster, table: str) -> list[str]:
    """The table line and the family lines of `describe`, as printed."""
    out = shell(mini, f"describe '{table}'")
    return [line for line in out[1:] if line.startswith(table) or line.startswith("{NAME")]


def test_a_table_with_every_attribute_is_created_exactly_like_the_sources(pair):
    dc1, dc2 = pair
    shell(dc1, "create_namespace 'sales', {'hbase.namespace.quota.maxtables' => '20'}",
          "create 'sales:orders', {NAME => 'd', VERSIONS => 5, MIN_VERSIONS => 1, TTL => 8640000, "
          "KEEP_DELETED_CELLS => 'TTL', COMPRESSION => 'SNAPPY', COMPRESSION_COMPACT => 'LZ4', "
          "DATA_BLOCK_ENCODING => 'FAST_DIFF', BLOOMFILTER => 'ROWCOL', BLOCKSIZE => 32768, IN_MEMORY => true, "
          "REPLICATION_SCOPE => 1, METADATA => {'NEW_VERSION_BEHAVIOR' => 'true'}, "
          "CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '30'}}, "
          "{NAME => 'm', IS_MOB => true, MOB_THRESHOLD => 204800, BLOCKCACHE => false, REPLICATION_SCOPE => 1}, "
          "{MAX_FILESIZE => 21474836480, DURABILITY => 'ASYNC_WAL', MEMSTORE_FLUSHSIZE => 268435456, "
          "NORMALIZATION_ENABLED => true, SPLIT_POLICY => 'org.apache.hadoop.hbase.regionserver.SteppingSplitPolicy', "
          "METADATA => {'team' => 'orders'}, SPLITS => ['g', 'p']}",
          f"alter 'sales:orders', 'coprocessor' => '|{OBSERVER}|1001|mode=audit'")
    source, target = cluster(dc1), cluster(dc2)
    done = create_missing_tables(source, target, ["sales:orders"], target_coprocessors=[OBSERVER])
    assert [d["outcome"] for d in done] == ["created"]
    assert done[0]["namespace_statement"] == \
        'create_namespace "sales", {"hbase.namespace.quota.maxtables" => "20"}'
    # Every line of describe is the same on both clusters: table attributes, coprocessor, every family value.
    assert described(dc2, "sales:orders") == described(dc1, "sales:orders")
    assert shell(dc2, "describe_namespace 'sales'")[1] == \
        "{NAME => 'sales', hbase.namespace.quota.maxtables => '20'}"
    regions = dc2.status()["tables"]["sales:orders"]["regions"]
    assert [r["name"].split(",")[1] for r in regions] == ["", "g", "p"]
    # Re-running changes nothing.
    assert [d["outcome"] for d in create_missing_tables(source, target, ["sales:orders"],
                                                        target_coprocessors=[OBSERVER])] == ["exists"]


def test_a_shell_that_cannot_submit_creates_at_once_creates_the_tables_one_by_one(pair):
    """The stand-in's shell runs no JRuby: create_at_once's prelude fails there, and the tables are created with
    the shell's own `create`, one after the other (on real HBase they are submitted at once:
    test_target_tables_realhbase.py)."""
    dc1, dc2 = pair
    shell(dc1, "create 'one_a', 'cf'", "create 'one_b', {NAME => 'cf', VERSIONS => 4}")
    done = create_missing_tables(cluster(dc1), cluster(dc2), ["one_a", "one_b"])
    assert [(d["outcome"], d["submitted"]) for d in done] == [("created", "one_by_one")] * 2
    assert described(dc2, "one_b") == described(dc1, "one_b")


def test_a_coprocessor_not_installed_on_the_target_is_refused_by_name_and_nothing_is_created(pair):
    dc1, dc2 = pair
    shell(dc1, f"create 'audited', 'cf', {{METADATA => {{'coprocessor$1' => '|{OBSERVER}|1|'}}}}",
          "create 'plain', 'cf'")
    with pytest.raises(TableRefused, match=rf"refused, nothing was created: audited: coprocessor {OBSERVER} "
                                           r"\(coprocessor\$1 => '.*'\) is not among the classes installed on the "
                                           r"target \(target_coprocessors\): install it"):
        create_missing_tables(cluster(dc1), cluster(dc2), ["plain", "audited"])
    assert not {"plain", "audited"} & set(shell(dc2, "list"))


def test_codec_map_replaces_a_codec_the_target_cannot_load(pair):
    dc1, dc2 = pair
    shell(dc1, "create 'lzo_t', {NAME => 'cf', COMPRESSION => 'LZO', COMPRESSION_COMPACT => 'LZO'}")
    with pytest.raises(TableRefused, match=r"(?s)creating lzo_t on dc2 failed \(no table was created by this call\): "
                                           r".*Compression algorithm 'lzo' previously failed test"):
        create_missing_tables(cluster(dc1), cluster(dc2), ["lzo_t"])
    create_missing_tables(cluster(dc1), cluster(dc2), ["lzo_t"], codec_map={"LZO": "GZ"})
    (line,) = [x for x in described(dc2, "lzo_t") if x.startswith("{NAME")]
    assert "COMPRESSION => 'GZ'" in line and "METADATA => {'COMPRESSION_COMPACT' => 'GZ'}" in line


def test_preflight_table_checks_against_real_clusters(pair):
    dc1, dc2 = pair
    source, target = cluster(dc1), cluster(dc2)
    shell(dc1, "create 'pf_new', {NAME => 'cf', COMPRESSION => 'LZO', REPLICATION_SCOPE => 1}",
          "create 'pf_diff', {NAME => 'cf', VERSIONS => 3, TTL => 86400, KEEP_DELETED_CELLS => true, "
          "COMPRESSION => 'SNAPPY', REPLICATION_SCOPE => 1}",
          "create 'pf_full', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(dc2, "create 'pf_diff', {NAME => 'cf', VERSIONS => 1, TTL => 86400, KEEP_DELETED_CELLS => true, "
               "COMPRESSION => 'GZ', REPLICATION_SCOPE => 1}",
          "create 'pf_full', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    dc2.connection().table("pf_full").put(b"already-here", {b"cf:q": b"v"})

    def preflight(**kw):
        report = run_preflight(source, target, ["pf_new", "pf_diff", "pf_full"], "pf1", sample_gap_s=0, **kw)
        return report, {r.name: r for r in report.results}

    report, checks = preflight()
    assert not report.ok
    assert checks["target_tables"].reason == "pf_diff:cf VERSIONS: source 3, target 1"
    assert checks["target_tables"].fix == 'alter "pf_diff", {NAME => "cf", VERSIONS => 3}'
    assert "pf_diff:cf COMPRESSION: source SNAPPY, target GZ" in checks["target_table_attributes"].reason
    assert "pf_full (first row b'already-here')" in checks["target_data"].reason
    assert "pf_new (LZO (cf.COMPRESSION)): the target refuses its create: ERROR: org.apache.hadoop.hbase." \
           "DoNotRetryIOException: Compression algorithm 'lzo' previously failed test." \
           in checks["target_create_check"].reason
    bulk = checks["bulk_load_replication"]  # minihbase's /conf: hbase-default.xml's false: refused (issue 39)
    assert not bulk.ok and bulk.severity == ERROR and "hbase.replication.bulkload.enabled=false" in bulk.reason
    assert "bulk_loads none" in bulk.fix
    assert checks["keep_deleted_cells"].reason.endswith("pf_diff:cf (KEEP_DELETED_CELLS => TRUE)")
    assert not [t for t in shell(dc2, "list") if t.startswith("hbase_migration_check_")]  # scratch dropped
    assert "pf_new" not in shell(dc2, "list")  # preflight created nothing that stays

    shell(dc2, "alter 'pf_diff', {NAME => 'cf', VERSIONS => 3}")
    report, checks = preflight(codec_map={"LZO": "GZ"}, allow_target_data=True, bulk_loads="none")
    assert report.ok, report.text()
    assert checks["bulk_load_replication"].reason.startswith("bulk_loads none: the operator attests")
    assert "pf_new: GZ (cf.COMPRESSION)" in checks["target_create_check"].reason

    # A resumed run of this migration: its own peer exists, so the rows on the target are its own.
    with peer_admin(source) as admin:
        admin.add_peer("pf1", PeerConfig(cluster_key=target.cluster_key,
                                         table_cfs={"pf_new": [], "pf_diff": [], "pf_full": []}))
        try:
            report, checks = preflight(codec_map={"LZO": "GZ"})
            assert checks["target_data"].ok and "a resumed or repeated run" in checks["target_data"].reason
            report, checks = preflight(codec_map={"LZO": "GZ"}, serial=True)  # another config than the peer's
            assert "replicates something else (serial: False != True)" in checks["peer_id"].reason
            assert not checks["target_data"].ok
        finally:
            admin.remove_peer("pf1")
    assert DEFAULT_OWNER  # the peer above carried the toolkit's own mark (peer_admin's default owner)


def test_preflight_refuses_serial_with_the_zookeeper_backend(pair):
    dc1, dc2 = pair
    shell(dc1, "create 'zk_t', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    conn = dc1.endpoints["connection"]
    source = Cluster.from_connection("dc1", conn["host"], conn["port"], {**conn["extra"], "peer_admin": "zookeeper"})
    report = run_preflight(source, cluster(dc2), ["zk_t"], "zk1", sample_gap_s=0, serial=True)
    check = next(r for r in report.results if r.name == "peer_options")
    assert not report.ok and not check.ok and "the source's peer-admin backend is zookeeper" in check.reason


def cli(pair, *args: str) -> tuple[int, str]:
    """The operator's CLI with the two clusters as connections `src` and `dst`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update({"PYTHONPATH": str(REPO), "AIRFLOW_CONN_SRC": pair[0].connection_json,
                "AIRFLOW_CONN_DST": pair[1].connection_json})
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", *args], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_cli_takes_the_table_and_peer_options(pair):
    dc1, dc2 = pair
    shell(dc1, f"create 'cli_t', {{NAME => 'cf', COMPRESSION => 'LZO', REPLICATION_SCOPE => 1}}, "
               f"{{METADATA => {{'coprocessor$1' => '|{OBSERVER}|1|'}}}}")
    both = ("--source", "src", "--target", "dst", "--tables", "cli_t")
    rc, out = cli(pair, "create-tables", *both, "--codec-map", "LZO=ZIP")
    assert rc == 2 and "error: codec_map: 'ZIP' is not an HBase compression codec" in out, out
    rc, out = cli(pair, "create-tables", *both, "--codec-map", "LZO=GZ")
    assert rc == 1 and f"cli_t: coprocessor {OBSERVER} (coprocessor$1 => '|{OBSERVER}|1|') is not among" in out, out
    assert "cli_t" not in shell(dc2, "list")
    rc, out = cli(pair, "create-tables", *both, "--codec-map", "LZO=GZ", "--target-coprocessors", OBSERVER, "--json")
    assert rc == 0 and json.loads(out)[0]["outcome"] == "created", out
    rc, out = cli(pair, "peer", "add", *both, "--peer-id", "cli1", "--serial", "--bandwidth", "2048", "--dry-run")
    assert rc == 0, out
    assert "SERIAL => true" in out and 'would run: set_peer_bandwidth "cli1", 2048' in out
    rc, out = cli(pair, "preflight", *both, "--peer-id", "cli1", "--bandwidth", "-5")
    assert rc == 2 and "error: bandwidth: must be an integer >= 0" in out, out
