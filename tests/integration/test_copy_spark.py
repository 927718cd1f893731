"""jobs/copy_table.py through Spark local[2] against two minihbase clusters.

The jobs run in-process on the module's SparkSession (`main(argv)` borrows it), except the one killed midway,
which runs as `python jobs/copy_table.py --master local[2]` in its own process group. Every verdict comes
from reading both clusters with stock happybase (scans with timestamps, `cells()` for older versions).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.hbase_data import SPLITS, connect, spread_key, write_cells
from tests.polling import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BASE = 1_600_000_000_000


@pytest.fixture(scope="module")
def pair(minihbase_pair):
    return minihbase_pair


def _name(prefix: str = "cs") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _newest(conn, table: str) -> dict:
    return dict(conn.table(table).scan(include_timestamp=True, batch_size=2000))


def _history(conn, table: str, keys, column: bytes) -> dict:
    t = conn.table(table)
    return {k: t.cells(k, column, versions=10, include_timestamp=True) for k in keys}


def _run(job, argv, tmp_path) -> tuple[int, dict]:
    summary = tmp_path / f"summary-{uuid.uuid4().hex[:6]}.json"
    rc = job.main([*argv, "--summary-file", str(summary)])
    return rc, json.loads(summary.read_text()) if summary.exists() else {}


def _args(dc1, dc2, table, *extra) -> list[str]:
    return ["--source", dc1.connection_json, "--target", dc2.connection_json, "--table", table, *extra]


def test_multi_region_table_copies_cell_for_cell(spark, pair, tmp_path):
    """50k rows, 3 families, up to 3 versions, a quarter of the rows with timestamps of their own."""
    from hbase_migration.jobs import copy_table

    dc1, dc2 = pair
    name = _name()
    families = {"a": {"max_versions": 3}, "b": {"max_versions": 1}, "c": {"max_versions": 2}}
    dc1.create_table(name, families, SPLITS)
    dc2.create_table(name, families, SPLITS)
    n = 50_000
    by_ts: dict = {}
    for i in range(n):
        ts = BASE + 10_000 + i if i % 4 == 0 else BASE + i // 500  # distinct, or shared by a bulk load
        cols = {b"a:x": b"a%d" % i}
        if i % 2 == 0:
            cols[b"b:y"] = b"b" * (i % 50)
        if i % 5 == 0:
            cols[b"c:z"] = b"c%d" % i
        by_ts.setdefault(ts, {})[spread_key(i)] = cols
        if i % 10 == 0:  # older versions
            by_ts.setdefault(ts - 100_000, {})[spread_key(i)] = {b"a:x": b"old1-%d" % i, b"c:z": b"oldc-%d" % i}
            by_ts.setdefault(ts - 200_000, {}).setdefault(spread_key(i), {})[b"a:x"] = b"old2-%d" % i
    with connect(dc1) as c1:
        write_cells(c1, name, by_ts)
    rc, summary = _run(copy_table, _args(dc1, dc2, name, "--versions", "3"), tmp_path)
    assert rc == 0, summary
    expected_cells = n + 2 * (n // 10) + n // 2 + n // 5 + n // 10
    assert (summary["rows"], summary["cells"], summary["copied_partitions"], summary["failed_partitions"]) == (
        n, expected_cells, 8, 0)
    with connect(dc1) as c1, connect(dc2) as c2:
        source, target = _newest(c1, name), _newest(c2, name)
        assert len(source) == n
        assert source[spread_key(4)][b"a:x"] == (b"a4", BASE + 10_004)  # the data is what the test wrote
        assert target == source  # every newest cell: value and timestamp
        multi = [spread_key(i) for i in range(0, n, 10)]
        for column in (b"a:x", b"c:z"):
            src_hist, tgt_hist = _history(c1, name, multi, column), _history(c2, name, multi, column)
            assert tgt_hist == src_hist
        assert tgt_hist[spread_key(20)] == [(b"c20", BASE + 10_020), (b"oldc-20", BASE + 10_020 - 100_000)]
        assert _history(c2, name, [spread_key(30)], b"a:x")[spread_key(30)] == [
            (b"a30", BASE), (b"old1-30", BASE - 100_000), (b"old2-30", BASE - 200_000)]


def test_time_window_copies_exactly_the_window(spark, pair, tmp_path):
    from hbase_migration.jobs import copy_table

    dc1, dc2 = pair
    name = _name()
    families = {"a": {"max_versions": 3}, "b": {"max_versions": 1}, "c": {"max_versions": 1}}
    dc1.create_table(name, families, SPLITS)
    dc2.create_table(name, families, SPLITS)
    by_ts: dict = {}
    for i in range(2000):
        if i % 7 == 0:
            by_ts.setdefault(50, {})[spread_key(i)] = {b"c:z": b"only-old"}  # nothing in the window
            continue
        for ts in (100, 200, 300):
            by_ts.setdefault(ts, {})[spread_key(i)] = {b"a:x": b"v%d-%d" % (ts, i)}
        if i % 2 == 0:
            by_ts.setdefault(150, {})[spread_key(i)] = {b"b:y": b"y%d" % i}
    with connect(dc1) as c1:
        write_cells(c1, name, by_ts)
    rc, summary = _run(copy_table, _args(dc1, dc2, name, "--start-time-ms", "150", "--end-time-ms", "250"), tmp_path)
    assert rc == 0, summary
    expected = {}
    for i in range(2000):
        if i % 7 == 0:
            continue
        row = {b"a:x": (b"v200-%d" % i, 200)}
        if i % 2 == 0:
            row[b"b:y"] = (b"y%d" % i, 150)
        expected[spread_key(i)] = row
    with connect(dc2) as c2:
        assert _newest(c2, name) == expected
        # one version only: nothing older than the window came along
        assert _history(c2, name, [spread_key(1)], b"a:x") == {spread_key(1): [(b"v200-1", 200)]}
    assert summary["rows"] == len(expected) == summary["scanned_rows"]  # rows with a cell in the window


def test_families_are_renamed_into_the_target_table(spark, pair, tmp_path):
    from hbase_migration.jobs import copy_table

    dc1, dc2 = pair
    name, target = _name(), _name("renamed")
    dc1.create_table(name, {"a": {}, "b": {}}, SPLITS)
    dc2.create_table(target, {"a": {}, "z": {}}, SPLITS)
    by_ts: dict = {}
    for i in range(1000):
        by_ts.setdefault(BASE + i % 3, {})[spread_key(i)] = {b"a:x": b"x%d" % i, b"b:q": b"q%d" % i, b"b:": b"empty-q"}
    with connect(dc1) as c1:
        write_cells(c1, name, by_ts)
        source = _newest(c1, name)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    rc, summary = _run(copy_table, _args(dc1, dc2, name, "--target-table", target, "--families", "a", "b:z",
                                         "--ledger-url", ledger_url, "--copy-id", "run-42"), tmp_path)
    assert rc == 0 and summary["families"] == [["a", "a"], ["b", "z"]]
    from hbase_migration.ledger.store import Ledger  # finished partitions went to the run ledger

    assert Ledger.open(ledger_url).done_partitions("run-42", name) == {
        r["partition_id"] for r in summary["partition_results"]}
    renamed = {row: {(b"z" + c[1:] if c.startswith(b"b:") else c): v for c, v in cols.items()}
               for row, cols in source.items()}
    with connect(dc2) as c2:
        assert _newest(c2, target) == renamed
        assert c2.table(target).row(spread_key(5), include_timestamp=True)[b"z:"] == (b"empty-q", BASE + 2)


def test_a_job_killed_midway_resumes_without_recopying_finished_partitions(spark, pair, tmp_path):
    from hbase_migration.jobs import copy_table

    dc1, dc2 = pair
    name = _name()
    dc1.create_table(name, {"a": {}}, SPLITS)
    dc2.create_table(name, {"a": {}}, SPLITS)
    n = 4000
    with connect(dc1) as c1:
        write_cells(c1, name, {BASE + r: {spread_key(i): {b"a:x": b"%d" % i} for i in range(r, n, 10)}
                               for r in range(10)})
    savepoint = tmp_path / "copy.savepoint.json"
    args = _args(dc1, dc2, name, "--savepoint", str(savepoint))
    # ~500 rows per partition at 120 rows/s: each task runs ~3 s, so the job is killed with work left
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    log = open(tmp_path / "killed-run.log", "w")
    proc = subprocess.Popen([sys.executable, str(REPO / "jobs" / "copy_table.py"), "--master", "local[2]",
                             *args, "--rows-per-s", "120", "--scan-batch-rows", "50"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def done_ids() -> dict:
        if not savepoint.exists():
            return {}
        copies = json.loads(savepoint.read_text())["copies"]
        return next(iter(next(iter(copies.values())).values()), {}) if copies else {}

    try:
        def two_done() -> bool:
            assert proc.poll() is None, (tmp_path / "killed-run.log").read_text()[-3000:]
            return len(done_ids()) >= 2

        wait_for(two_done, 180, "two finished partitions", interval=0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and the Python workers, no clean-up
        proc.wait(30)
        log.close()
    finished = done_ids()
    assert 2 <= len(finished) < 8, finished
    rows_before = sum(p["rows"] for p in finished.values())

    rc, summary = _run(copy_table, args, tmp_path)
    assert rc == 0, summary
    assert summary["skipped_partitions"] == len(finished)
    assert summary["copied_partitions"] == 8 - len(finished)
    assert summary["rows"] == n - rows_before  # what the killed run finished was not copied again
    assert {r["partition_id"] for r in summary["partition_results"]}.isdisjoint(finished)
    assert len(done_ids()) == 8
    with connect(dc1) as c1, connect(dc2) as c2:
        assert _newest(c2, name) == _newest(c1, name)

    rc, again = _run(copy_table, args, tmp_path)  # a third run has nothing left to do
    assert (rc, again["skipped_partitions"], again["copied_partitions"], again["rows"]) == (0, 8, 0, 0)


def _shell(cluster, *statements: str) -> str:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_updates_after_t0_replayed_by_replication_after_the_copy_end_up_newest(spark, pair, tmp_path):
    """The migration's order of events with minihbase's real replication: a DISABLED peer at T0, edits,
    the copy, more edits, enable_peer. Because the copy kept the source timestamps, every edit made after
    T0 (overwrites and deletes, before, during or after the copy) is the newest state on the target once the
    backlog has shipped."""
    from hbase_migration.jobs import copy_table

    dc1, dc2 = pair
    name = _name("repl")
    families = {"a": {"max_versions": 3, "replication_scope": 1}, "b": {"max_versions": 1, "replication_scope": 1}}
    dc1.create_table(name, families, SPLITS)
    dc2.create_table(name, families, SPLITS)
    t_initial = int(time.time() * 1000) - 3_600_000
    with connect(dc1) as c1:
        write_cells(c1, name, {t_initial + r: {spread_key(i): {b"a:x": b"initial", b"b:y": b"%d" % i}
                                          for i in range(r, 3000, 7)} for r in range(7)})
    peer = "%d" % (int(uuid.uuid4().hex[:6], 16) % 90000 + 10000)
    _shell(dc1, f"add_peer '{peer}', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'{name}' => []}}, "
                "STATE => 'DISABLED'")  # T0: from here every edit is queued in the WALs
    try:
        with connect(dc1) as c1:
            t = c1.table(name)
            for i in range(0, 100):
                t.put(spread_key(i), {b"a:x": b"after-T0"})  # server timestamps, newer than the copy's cells
            for i in range(100, 110):
                t.delete(spread_key(i))
            for i in range(110, 120):
                t.delete(spread_key(i), columns=[b"b:y"])
        rc, summary = _run(copy_table, _args(dc1, dc2, name), tmp_path)
        assert rc == 0 and summary["rows"] == 3000 - 10
        with connect(dc1) as c1:  # edits the copy did not see
            t = c1.table(name)
            for i in range(200, 260):
                t.put(spread_key(i), {b"a:x": b"after-copy"})
            for i in range(300, 305):
                t.delete(spread_key(i))
        with connect(dc2) as c2:
            assert c2.table(name).row(spread_key(200))[b"a:x"] == b"initial"  # stale until the backlog ships
        _shell(dc1, f"enable_peer '{peer}'")
        with connect(dc1) as c1, connect(dc2) as c2:
            expected = _newest(c1, name)
            wait_for(lambda: _newest(c2, name) == expected, 120, "the backlog to ship")
            row200 = c2.table(name).cells(spread_key(200), b"a:x", versions=3, include_timestamp=True)
            assert [v for v, _ in row200] == [b"after-copy", b"initial"]  # the replayed edit on top of the copy
            assert row200[0][1] == expected[spread_key(200)][b"a:x"][1]  # with the source's own timestamp
            assert c2.table(name).row(spread_key(100)) == {} and c2.table(name).row(spread_key(300)) == {}
            assert b"b:y" not in c2.table(name).row(spread_key(110))
            assert len(expected) == 3000 - 15
    finally:
        _shell(dc1, f"remove_peer '{peer}'")
    # Had the copy stamped its own (later) time on the cells it wrote, an edit made after T0 but before that
    # stamp would stay hidden behind it when replayed: the target would keep stale data, silently.
    stamped = _name("stamped")
    dc2.create_table(stamped, {"a": {"max_versions": 3}})
    with connect(dc2) as c2:
        t_edit = int(time.time() * 1000) - 1000
        c2.table(stamped).put(b"row", {b"a:x": b"initial"})  # the copy's write, stamped now
        c2.table(stamped).put(b"row", {b"a:x": b"after-T0"}, timestamp=t_edit)  # the replayed edit
        assert c2.table(stamped).row(b"row") == {b"a:x": b"initial"}
