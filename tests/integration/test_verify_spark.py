"""jobs/verify_table.py through Spark local[2] against two minihbase clusters.

Both sides are loaded with the same cells by the test itself (stock happybase, same timestamps), so a clean
"copy" exists without the copy job; differences are then injected on the target with stock happybase and the
job must report exactly those.
"""
from __future__ import annotations

import json
import uuid

import pytest

from tests.hbase_data import DATA_PATHS, SPLITS, connect, connection_json, spread_key, write_cells

pytestmark = pytest.mark.integration

BASE = 1_600_000_000_000
N = 20_000
FAMILIES = {"a": {"max_versions": 3}, "b": {"max_versions": 1}}


def _data() -> dict:
    by_ts: dict = {}
    for i in range(N):
        ts = BASE + 10_000 + i if i % 5 == 0 else BASE + i // 400
        cols = {b"a:x": b"x%d" % i}
        if i % 2:
            cols[b"b:y"] = b"y" * (i % 30)
        by_ts.setdefault(ts, {})[spread_key(i)] = cols
        if i % 9 == 0:
            by_ts.setdefault(ts - 1000, {})[spread_key(i)] = {b"a:x": b"older%d" % i}
    return by_ts


@pytest.fixture
def same_table(minihbase_pair):
    """A table with identical cells (values and timestamps) on both clusters."""
    dc1, dc2 = minihbase_pair
    name = "vs_" + uuid.uuid4().hex[:8]
    data = _data()
    for cluster in (dc1, dc2):
        cluster.create_table(name, FAMILIES, SPLITS)
        with connect(cluster) as c:
            write_cells(c, name, data)
    return dc1, dc2, name


def _verify(dc1, dc2, table, tmp_path, *extra, data_path="thrift2") -> tuple[int, dict]:
    from hbase_migration.jobs import verify_table

    out = tmp_path / f"verify-{uuid.uuid4().hex[:6]}.json"
    rc = verify_table.main(["--source", connection_json(dc1, data_path), "--target", connection_json(dc2, data_path),
                            "--table", table, "--end-time-ms", str(BASE + 10 ** 7), "--summary-file", str(out),
                            *extra])
    return rc, json.loads(out.read_text()) if out.exists() else {}


def _counts(result: dict) -> tuple:
    return tuple(result[k] for k in ("source_rows", "target_rows", "matching", "content_different",
                                     "only_in_source", "only_in_target"))


# Injected on the target: one of each kind VerifyReplication distinguishes.
# (MISSING sits in the last region, EXTRA in the first: row counts differ in two partitions.)
MISSING, CHANGED, EXTRA, OTHER_TS = spread_key(10), spread_key(11), b"10-extra-row", spread_key(15)


def _inject(dc2, name) -> None:
    with connect(dc2) as c2:
        t = c2.table(name)
        t.delete(MISSING)  # a missing row
        t.put(CHANGED, {b"a:x": b"CHANGED"}, timestamp=BASE + 11 // 400)  # same cell, other value
        t.put(EXTRA, {b"a:x": b"extra"}, timestamp=BASE)  # a row only on the target
        t.put(OTHER_TS, {b"a:x": b"x15"}, timestamp=BASE + 10_015 + 7)  # same value, newer timestamp


def test_a_clean_copy_reports_zero_differences(spark, same_table, tmp_path):
    dc1, dc2, name = same_table
    rc, result = _verify(dc1, dc2, name, tmp_path)
    assert rc == 0 and result["identical"] is True
    assert _counts(result) == (N, N, N, 0, 0, 0)
    assert result["partitions"] == 8 and result["failed_partitions"] == 0
    assert result["verifyreplication_counters"] == {
        "GOODROWS": N, "BADROWS": 0, "CONTENT_DIFFERENT_ROWS": 0, "ONLY_IN_SOURCE_TABLE_ROWS": 0,
        "ONLY_IN_PEER_TABLE_ROWS": 0}
    rc, counts = _verify(dc1, dc2, name, tmp_path, "--level", "rows")
    assert rc == 0 and (counts["source_rows"], counts["target_rows"], counts["identical"]) == (N, N, True)


def test_injected_differences_are_reported_exactly(spark, same_table, tmp_path):
    dc1, dc2, name = same_table
    _inject(dc2, name)
    rc, result = _verify(dc1, dc2, name, tmp_path)
    assert rc == 1 and result["identical"] is False
    assert _counts(result) == (N, N, N - 3, 2, 1, 1)
    assert result["differing_rows_sample"] == {
        "content_different": sorted([CHANGED.decode(), OTHER_TS.decode()]),
        "only_in_source": [MISSING.decode()],
        "only_in_target": [EXTRA.decode()],
    }
    # Row counts alone see only that two partitions are off by one (the missing and the extra row).
    rc, counts = _verify(dc1, dc2, name, tmp_path, "--level", "rows")
    assert rc == 1 and (counts["source_rows"], counts["target_rows"]) == (N, N)
    assert counts["row_count_mismatch_partitions"] == 2


@pytest.mark.parametrize("data_path", DATA_PATHS)
def test_repair_fixes_what_the_data_path_can_and_reports_the_rest(spark, same_table, tmp_path, data_path):
    dc1, dc2, name = same_table
    _inject(dc2, name)
    rc, result = _verify(dc1, dc2, name, tmp_path, "--repair", data_path=data_path)
    assert rc == 1  # the verdict is about what was found; the repair report says what was done
    # Every differing version is named, those of a row on one side only too (in key order of the partitions).
    assert result["differing_versions_sample"] == [
        {"row": EXTRA.decode(), "column": "a:x", "timestamp": BASE, "kind": "only_on_target"},
        {"row": OTHER_TS.decode(), "column": "a:x", "timestamp": BASE + 10_022, "kind": "only_on_target"},
        {"row": CHANGED.decode(), "column": "a:x", "timestamp": BASE, "kind": "value_differs"},
        {"row": MISSING.decode(), "column": "a:x", "timestamp": BASE + 10_010, "kind": "missing_on_target"}]
    repair = result["repair"]
    # puts: the missing row's cell and the changed value; deletes: the extra row's cell, and on Thrift2 the
    # target-only version of OTHER_TS (an exact-version delete). Thrift1 can only delete every version <= ts,
    # which would also hide the source's version of OTHER_TS: a conflict, reported.
    if data_path == "thrift2":
        assert (repair["cells_put"], repair["cells_deleted"], repair["conflicts"]) == (2, 2, 0)
    else:
        assert (repair["cells_put"], repair["cells_deleted"], repair["conflicts"]) == (2, 1, 1)
        assert repair["conflict_sample"] == [{
            "row": OTHER_TS.decode(), "column": "a:x", "timestamp": BASE + 10_022,
            "reason": f"a delete at {BASE + 10_022} would also hide the source's version at {BASE + 10_015} "
                      "(Thrift1 deletes all versions <= ts)"}]
    # The deleted row's delete marker (server time, newer than the source cell) hides the repaired put.
    assert repair["masked_by_delete"] == 1 and "major compaction" in repair["hint"]
    assert repair["still_different"] == (1 if data_path == "thrift2" else 2)
    rc, after = _verify(dc1, dc2, name, tmp_path, data_path=data_path)
    assert rc == 1 and after["differing_rows_sample"]["only_in_source"] == [MISSING.decode()]
    if data_path == "thrift2":
        assert _counts(after) == (N, N - 1, N - 1, 0, 1, 0)
    else:
        assert _counts(after) == (N, N - 1, N - 2, 1, 1, 0)

    with connect(dc1) as c1, connect(dc2) as c2:
        source = {k: c1.table(name).cells(k, b"a:x", versions=5, include_timestamp=True) for k in (CHANGED, OTHER_TS)}
        target = {k: c2.table(name).cells(k, b"a:x", versions=5, include_timestamp=True) for k in (CHANGED, OTHER_TS)}
        assert target[CHANGED] == source[CHANGED]
        assert (target[OTHER_TS] == source[OTHER_TS]) is (data_path == "thrift2")
        assert c2.table(name).row(EXTRA) == {}
        # the missing row stays hidden behind its delete marker (newer than the source cell) until a major compaction
        assert c2.table(name).row(MISSING) == {}


def test_cells_newer_than_the_cutoff_are_not_compared(spark, same_table, tmp_path):
    dc1, dc2, name = same_table
    with connect(dc2) as c2:
        c2.table(name).put(spread_key(3), {b"a:x": b"in-flight"}, timestamp=BASE + 10 ** 7 + 5)
        c2.table(name).put(b"ff-new-row", {b"a:x": b"in-flight"}, timestamp=BASE + 10 ** 7)
    rc, result = _verify(dc1, dc2, name, tmp_path)  # cutoff BASE + 10**7, exclusive
    assert rc == 0 and _counts(result) == (N, N, N, 0, 0, 0)
    rc, result = _verify(dc1, dc2, name, tmp_path, "--end-time-ms", str(BASE + 10 ** 7 + 6))
    assert rc == 1 and _counts(result) == (N, N + 1, N - 1, 1, 0, 1)
