"""The dry run's sizing against minihbase: the region servers' `sub=Regions` and the namenode's `FSNamesystem`
beans as HBase names them, the sizes and row estimate of a real table, the sample copy's scratch table dropped
(after a timeout and after a failed write too), and preflight refusing a run whose projection overflows the
oldWALs quota or HDFS's free space, naming the figures and the fixes, with nothing changed."""
import json
import os
import re
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import requests

from hbase_migration.migration.preflight import run_preflight
from hbase_migration.migration.sizing_probe import SizingRequest, size_migration
from hbase_migration.migration.tables import describe_tables
from tests.hbase_data import SPLITS, cluster_of, spread_key
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ROWS = 2400
DEFAULT_SPACE_QUOTA = 4294967296  # dc1's on /hbase (minihbase/clusters.toml)
KEY = re.compile(r"^Namespace_(?P<ns>\w+?)_table_(?P<table>\w+)_region_(?P<region>[0-9a-f]{32})_metric_(?P<m>\w+)$")


@pytest.fixture(scope="module")
def table(minihbase_pair):
    dc1, _ = minihbase_pair
    name = "sized_" + uuid.uuid4().hex[:6]
    dc1.create_table(name, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=SPLITS)
    conn = dc1.connection(timeout=60000)
    with conn.table(name).batch(batch_size=1000) as b:
        for i in range(ROWS):
            b.put(spread_key(i), {b"d:v": b"%d" % i, b"d:w": b"y" * 40})
    conn.close()
    dc1.flush(name)
    return name


def scratch_tables(cluster):
    return [t["name"] for t in cluster._control("/control/tables")["tables"]
            if t["name"].startswith("hbase_migration_size_")]


def preflight(dc1, dc2, table, **request):
    return run_preflight(cluster_of(dc1, "source"), cluster_of(dc2, "target"), [table], "sz1", sample_gap_s=0.5,
                         bulk_loads="none", sizing=SizingRequest(**{"growth_window_s": 1.0, **request}))


def test_region_and_namenode_beans_are_named_as_hbase_names_them(minihbase_pair, table):
    dc1, _ = minihbase_pair
    regions, store_bytes = {}, 0
    for rs in dc1.region_servers:
        body = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx",
                            params={"qry": "Hadoop:service=HBase,name=RegionServer,sub=Regions"}, timeout=10).json()
        [bean] = body["beans"]
        assert bean["modelerType"] == "RegionServer,sub=Regions"
        mine = {}
        for key, value in bean.items():
            m = KEY.match(key)
            if m and m["table"] == table:
                assert m["ns"] == "default"
                mine.setdefault(m["region"], {})[m["m"]] = value
        assert bean["numRegions"] >= len(mine)
        for region, figures in mine.items():
            assert {"storeCount", "storeFileCount", "storeFileSize", "memStoreSize", "readRequestCount",
                    "writeRequestCount"} <= set(figures)
            regions[region] = figures
    assert len(regions) == len(SPLITS) + 1
    for region, figures in regions.items():  # storeFileSize is the region's files on HDFS, one copy
        files = list((dc1.local_rootdir / "data" / "default" / table / region / "d").iterdir())
        assert figures["storeFileSize"] == sum(f.stat().st_size for f in files) and figures["storeFileCount"] == 1
        store_bytes += figures["storeFileSize"]
    assert store_bytes > 0

    nn = requests.get(f"{dc1.webhdfs_url}/jmx", params={"qry": "Hadoop:service=NameNode,name=FSNamesystem"},
                      timeout=10).json()["beans"][0]
    root = requests.get(f"{dc1.webhdfs_url}/webhdfs/v1/", params={"op": "GETCONTENTSUMMARY"},
                        timeout=10).json()["ContentSummary"]
    assert nn["CapacityTotal"] == 1 << 40 and nn["CapacityUsed"] >= root["spaceConsumed"] > 0
    assert nn["CapacityRemaining"] == nn["CapacityTotal"] - nn["CapacityUsed"]


def test_preflight_sizes_the_table_and_drops_its_scratch_table(minihbase_pair, table):
    dc1, dc2 = minihbase_pair
    report = preflight(dc1, dc2, table, copy_tasks=2)
    check = next(r for r in report.results if r.name == "copy_projection")
    assert check.ok and check.severity == "error", check.reason
    [t] = report.sizing.tables
    assert (t.table, t.regions, t.regions_reported, t.store_files) == (table, len(SPLITS) + 1, len(SPLITS) + 1,
                                                                        len(SPLITS) + 1)
    assert t.memstore_bytes == 0 and t.store_file_bytes > 0
    s = t.sample
    assert s.complete and not s.approximate and s.cells == 2 * s.rows > 0
    # the smallest region holding data was sampled, and its rows estimate the table's
    assert s.region_bytes == min(m for m in [s.region_bytes] if m) and s.region_bytes <= t.biggest_region_bytes
    assert t.est_rows == round(t.data_bytes * s.rows / s.region_bytes)
    assert abs(t.est_rows - ROWS) < ROWS * 0.2, t.est_rows
    p = report.sizing.projection
    assert p.copy_s > 0 and p.copy_tasks == 2 and p.growth_bytes_per_s is not None
    assert [limit.name for limit in p.limits] == [  # dc1's quotas on /hbase (clusters.toml), then free space
        "space quota on /hbase", "namespace quota on /hbase", "HDFS free space (the namenode's CapacityRemaining)"]
    assert not any(limit.exceeded for limit in p.limits)
    assert scratch_tables(dc2) == []
    assert "sizing: table, regions" in report.text() and f"  {table}: 8 regions" in report.text()


def _oldwals_bytes(cluster):
    return requests.get(f"{cluster.webhdfs_url}/webhdfs/v1/hbase/oldWALs", params={"op": "GETCONTENTSUMMARY"},
                        timeout=10).json()["ContentSummary"]["spaceConsumed"]


def _grow_oldwals(cluster, table, stop, errors):
    """Writes, flushes and WAL rolls: archived WALs make oldWALs grow while the sizing reads it."""
    conn = cluster.connection(timeout=60000)
    i = 0
    try:
        while not stop.is_set():
            with conn.table(table).batch(batch_size=200) as b:
                for _ in range(200):
                    b.put(b"grow-%08d" % i, {b"d:v": b"z" * 500})
                    i += 1
            cluster.roll_wals()
            cluster.flush(table)
            stop.wait(0.1)
    except Exception as e:
        errors.append(e)
    finally:
        conn.close()


def test_a_projection_past_the_quota_or_free_space_is_refused_naming_the_figures_and_the_fixes(minihbase_pair,
                                                                                                 table):
    """oldWALs grows a few MB/s here; a copy throttled to 0.1 rows/s would take 24,000 s, so the peer would pin
    far more than dc1's 4 GiB quota holds, then (quota cleared) more than HDFS's free space (set to 1 GiB)."""
    dc1, dc2 = minihbase_pair
    grow = "grow_" + uuid.uuid4().hex[:6]
    dc1.create_table(grow, {"d": {"max_versions": 1}})
    stop, errors = threading.Event(), []
    writer = threading.Thread(target=_grow_oldwals, args=(dc1, grow, stop, errors), daemon=True)
    before = _oldwals_bytes(dc1)
    writer.start()
    try:
        wait_for(lambda: _oldwals_bytes(dc1) > before, timeout=60, what="oldWALs growing")
        refused = preflight(dc1, dc2, table, growth_window_s=3.0, copy_tasks=1, rows_per_s=0.1)
        used = requests.get(f"{dc1.webhdfs_url}/jmx", params={"qry": "Hadoop:service=NameNode,name=FSNamesystem"},
                            timeout=10).json()["beans"][0]["CapacityUsed"]
        dc1.set_quota("/hbase", space_bytes=-1)
        dc1.set_hdfs_capacity(used + (1 << 30))
        no_room = preflight(dc1, dc2, table, growth_window_s=3.0, copy_tasks=1, rows_per_s=0.1)
    finally:
        stop.set()
        writer.join(60)
        dc1.set_quota("/hbase", space_bytes=DEFAULT_SPACE_QUOTA)
        dc1.set_hdfs_capacity(1 << 40)
    assert not errors
    check = next(r for r in refused.results if r.name == "copy_projection")
    assert not refused.ok and not check.ok and check.severity == "error", check.reason
    # copy_s is the projection's arithmetic from the stated rows_per_s=0.1, not a measured time of this machine
    assert refused.sizing.projection.growth_bytes_per_s > 0 and refused.sizing.projection.copy_s >= 24_000
    assert "does not fit: space quota on /hbase: needs " in check.reason
    for fix in ("more quota: at least", "hdfs dfsadmin -setSpaceQuota", "a faster copy", "quota_policy enable_peer",
                f"fewer tables per run (the longest: {table} "):
        assert fix in check.fix
    check = next(r for r in no_room.results if r.name == "copy_projection")
    assert not no_room.ok and "HDFS free space (the namenode's CapacityRemaining): needs " in check.reason
    # the space quota cleared: free space is the limit (and the namespace quota, which stays)
    assert [limit.name for limit in no_room.sizing.projection.limits if limit.unit == "bytes"] == [
        "HDFS free space (the namenode's CapacityRemaining)"]
    assert "free HDFS space: at least" in check.fix
    # nothing changed: no peer, no scratch table
    assert scratch_tables(dc2) == []
    assert "sz1" not in json.dumps(dc1._control("/control/replication-status"))


def test_the_scratch_table_is_dropped_after_a_timeout_and_after_a_failed_sample(minihbase_pair, table):
    dc1, dc2 = minihbase_pair
    one_region = "slow_" + uuid.uuid4().hex[:6]  # 5,000 rows in one region: ten scan batches of 500
    dc1.create_table(one_region, {"d": {"max_versions": 1}})
    conn = dc1.connection(timeout=60000)
    with conn.table(one_region).batch(batch_size=1000) as b:
        for i in range(5000):
            b.put(b"r%06d" % i, {b"d:v": b"v"})
    conn.close()
    dc1.set_latency(100)  # every call slow: the sample outlives its 0.5 s
    try:
        stopped = preflight(dc1, dc2, one_region, sample_timeout_s=0.5)
    finally:
        dc1.set_latency(0)
    [t] = stopped.sizing.tables
    assert t.sample is not None and not t.sample.complete and t.est_rows is None
    check = next(r for r in stopped.results if r.name == "copy_projection")
    assert check.severity == "warning" and "the sample copy stopped at the timeout" in check.reason
    assert scratch_tables(dc2) == []

    source, target = cluster_of(dc1, "source"), cluster_of(dc2, "target")
    schemas = describe_tables(source, [table])
    dc2.stop_gateway("thrift2", 0)  # the scratch table is created (shell), the sample cannot write into it
    try:
        failed = size_migration(source, target, [table], schemas, "sz1", SizingRequest(growth_window_s=0.0))
    finally:
        dc2.start_gateway("thrift2", 0)
    [t] = failed.tables
    assert t.sample is None and t.error.startswith("sample copy failed:")
    assert scratch_tables(dc2) == []


def test_the_cli_prints_the_sizing(minihbase_pair, table):
    dc1, dc2 = minihbase_pair
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_CONN_SRC": dc1.connection_json,
           "AIRFLOW_CONN_DST": dc2.connection_json,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    base = [sys.executable, "-m", "hbase_migration", "preflight", "--source", "src", "--target", "dst", "--tables",
            table, "--peer-id", "sz2", "--sample-gap-s", "0.5", "--copy-tasks", "3",
            "--bulk-loads", "none"]
    proc = subprocess.run(base, env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"  {table}: 8 regions" in proc.stdout and "copy: " in proc.stdout and "with 3 partitions at once" \
        in proc.stdout
    assert "[ok  ] copy_projection: projected copy" in proc.stdout
    proc = subprocess.run(base + ["--json"], env=env, capture_output=True, text=True, cwd=REPO, timeout=300)
    doc = json.loads(proc.stdout)
    assert doc["sizing"]["tables"][0]["regions"] == 8 and doc["sizing"]["projection"]["copy_tasks"] == 3
    bad = subprocess.run(base + ["--copy-tasks", "0"], env=env, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2 and "--copy-tasks must be a finite number > 0, got 0" in bad.stderr


def test_every_tables_scratch_table_is_made_in_one_shell_call_and_dropped_in_one(minihbase_pair, table, caplog):
    """Two tables sampled: one shell call creates both scratch tables, one drops both (a shell is a JVM start,
    5 to 20 s on a real cluster). With a scratch table left by an earlier sizing, the creation falls back to one
    table at a time (the leftover dropped first); nothing is left either way."""
    import logging

    from hbase_migration.migration.sizing_probe import scratch_name

    dc1, dc2 = minihbase_pair
    other = "sized2_" + uuid.uuid4().hex[:6]
    dc1.create_table(other, {"d": {"max_versions": 1, "replication_scope": 1}})
    conn = dc1.connection(timeout=60000)
    with conn.table(other).batch(batch_size=500) as b:
        for i in range(300):
            b.put(b"r%04d" % i, {b"d:v": b"%d" % i})
    conn.close()
    source, target = cluster_of(dc1, "source"), cluster_of(dc2, "target")
    schemas = describe_tables(source, [table, other])

    def shell_calls():  # on the target (describe_tables above shelled the source, and logging may keep INFO)
        return [r.getMessage() for r in caplog.records
                if "statement(s) through" in r.getMessage() and "--cluster dc2" in r.getMessage()]

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hbase_migration.clusters.shell"):
        report = size_migration(source, target, [table, other], schemas, "sz1", SizingRequest(growth_window_s=0.0))
    assert [t.sample.complete for t in report.tables] == [True, True], report.tables
    calls = shell_calls()
    assert len(calls) == 2, calls
    assert calls[0].startswith("running 2 statement(s)") and "create" in calls[0]
    assert calls[1].startswith("running 4 statement(s)") and "drop" in calls[1]
    assert scratch_tables(dc2) == []

    dc2.create_table(scratch_name("sz1", other), {"d": {"max_versions": 1}})  # left by an interrupted sizing
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hbase_migration.clusters.shell"):
        report = size_migration(source, target, [table, other], schemas, "sz1", SizingRequest(growth_window_s=0.0))
    assert [t.sample.complete for t in report.tables] == [True, True], report.tables
    assert len(shell_calls()) > 2  # the fallback: one table at a time
    assert scratch_tables(dc2) == []


def test_creating_the_target_tables_keeps_one_shell_per_cluster_open(minihbase_pair, table, caplog):
    """What `create_target_tables` (and preflight) run inside `channels.one_shell_per_cluster`: the source's
    describe and namespace, the target's list_namespace, create and describe again, each cluster's statements
    in one shell kept open (minihbase's shell reads statement by statement, as HBase's does); the table made
    is the one the calls one by one make, and no shell is left running."""
    import logging

    from hbase_migration.clusters import channels
    from hbase_migration.migration.tables import create_missing_tables

    dc1, dc2 = minihbase_pair
    source, target = cluster_of(dc1, "source"), cluster_of(dc2, "target")
    namespace = "pooled" + uuid.uuid4().hex[:6]
    name = f"{namespace}:t"
    dc1.create_namespace(namespace)
    dc1.create_table(name, {"d": {"max_versions": 3, "replication_scope": 1}}, split_keys=SPLITS)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hbase_migration.clusters"):
        with channels.one_shell_per_cluster():
            done = create_missing_tables(source, target, [name])
    opened = [r.getMessage() for r in caplog.records if "shell session" in r.getMessage()]
    ran = [r.getMessage() for r in caplog.records if "in the open shell of" in r.getMessage()]
    assert [d["outcome"] for d in done] == ["created"] and done[0]["namespace_statement"], done
    assert len(opened) == 2 and sum("--cluster dc1" in m for m in opened) == 1, opened  # one per cluster
    assert len(ran) >= 4 and not [r for r in caplog.records if "statement(s) through" in r.getMessage()], ran
    assert describe_tables(target, [name])[name].families == describe_tables(source, [name])[name].families
    assert not [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
                .splitlines() if "minihbase shell" in line and str(dc2.workdir) in line]
