"""The backfill DAG copies exactly its time window (cells with start <= ts < end), keeping timestamps, and
verifies it; a reversed window is refused before anything is written."""
import uuid

import pytest

from tests.dags.airflow_run import airflow_env, dags_test

pytestmark = [pytest.mark.integration, pytest.mark.dags]

BASE = 1_600_000_000_000


@pytest.fixture(scope="module")
def window_table(minihbase_pair):
    dc1, dc2 = minihbase_pair
    table = "bf_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 3}}, split_keys=[b"r1000", b"r2000"])
    conn = dc1.connection()
    t = conn.table(table)
    # 3000 rows, row i written at BASE + i; rows 1500..1999 get a second, newer version at BASE + 10000 + i.
    for start in range(0, 3000, 500):
        with t.batch(timestamp=BASE + start) as b:
            for i in range(start, start + 500):
                b.put(b"r%04d" % i, {b"d:v": b"old-%d" % i})
    for i in range(1500, 2000):
        t.put(b"r%04d" % i, {b"d:v": b"new-%d" % i}, timestamp=BASE + 10_000 + i)
    conn.close()
    return table


def cells(cluster, table):
    conn = cluster.connection()
    try:
        out = {}
        for row, _ in conn.table(table).scan():
            for value, ts in conn.table(table).cells(row, b"d:v", versions=10, include_timestamp=True):
                out[(row, ts)] = value
        return out
    finally:
        conn.close()


def test_backfill_copies_exactly_its_window(minihbase_pair, window_table, tmp_path):
    dc1, dc2 = minihbase_pair
    start, end = BASE + 1000, BASE + 2000  # one timestamp batch: rows r1000..r1499 (ts BASE+1000..)
    env = airflow_env(dc1, dc2, tmp_path / "ledger.db")
    rc = dags_test("hbase_backfill", {"tables": [window_table], "start_time_ms": start, "end_time_ms": end},
                   env, tmp_path / "dag.log")
    assert rc == 0, (tmp_path / "dag.log").read_text()[-5000:]
    source = cells(dc1, window_table)
    expected = {k: v for k, v in source.items() if start <= k[1] < end}
    assert len(expected) == 1000  # two batches of 500 timestamps fall in the window
    assert cells(dc2, window_table) == expected


@pytest.mark.full
def test_reversed_window_is_refused_and_writes_nothing(minihbase_pair, tmp_path):
    """make test-full: a whole `airflow dags test` (one to two minutes) for a refusal that
    tests/unit/migration/test_runspec.py asserts word for word in make test."""
    dc1, dc2 = minihbase_pair
    table = "bf_rev_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {}})
    conn = dc1.connection()
    conn.table(table).put(b"r", {b"d:v": b"x"}, timestamp=BASE + 5)
    conn.close()
    env = airflow_env(dc1, dc2, tmp_path / "ledger.db")
    rc = dags_test("hbase_backfill", {"tables": [table], "start_time_ms": BASE + 10, "end_time_ms": BASE},
                   env, tmp_path / "dag.log")
    log = (tmp_path / "dag.log").read_text()
    assert rc != 0
    assert "end_time_ms: must be greater than start_time_ms" in log and "would be reversed or empty" in log
    assert cells(dc2, table) == {}


@pytest.mark.full  # a second backfill end to end (make test runs the windowed one): make test-full
def test_a_run_without_bounds_copies_its_data_interval(minihbase_pair, tmp_path):
    """The window comes from the run's data interval, as under `airflow backfill create`: the day before the
    logical date 2020-09-14 given to `airflow dags test`, start inclusive and end exclusive."""
    dc1, dc2 = minihbase_pair
    table = "bf_day_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {}})
    day_start, day_end = 1_599_955_200_000, 1_600_041_600_000  # 2020-09-13T00:00Z, 2020-09-14T00:00Z
    stamps = {"before": day_start - 1, "first": day_start, "inside": BASE, "last": day_end - 1, "after": day_end}
    conn = dc1.connection()
    for name, ts in stamps.items():  # one row per instant (the copy takes the newest version, as CopyTable)
        conn.table(table).put(name.encode(), {b"d:v": name.encode()}, timestamp=ts)
    conn.close()
    env = airflow_env(dc1, dc2, tmp_path / "ledger.db")
    rc = dags_test("hbase_backfill", {"tables": [table]}, env, tmp_path / "dag.log", logical_date="2020-09-14")
    assert rc == 0, (tmp_path / "dag.log").read_text()[-5000:]
    assert cells(dc2, table) == {(n.encode(), stamps[n]): n.encode() for n in ("first", "inside", "last")}
