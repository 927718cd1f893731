"""verify.py against two minihbase clusters, without Spark: one partition at a time.

Data is written to both sides by the test with stock happybase (same cells, same timestamps); differences are
injected on the target the same way.
"""
from __future__ import annotations

import threading
import time
import uuid
from contextlib import closing

import pytest

from hbase_migration.data.partitions import Partition
from hbase_migration.data.verify import (
    CONTENT_DIFFERENT,
    MATCHING,
    ONLY_IN_SOURCE,
    ONLY_IN_TARGET,
    VerifyOptions,
    verify_partition,
)
from tests.hbase_data import DATA_PATHS, cluster_of
from tests.polling import wait_for

pytestmark = pytest.mark.integration

WHOLE = Partition("t", 0, b"", b"", "whole table", "p0")


@pytest.fixture(scope="module", params=DATA_PATHS)
def clusters(request, minihbase_pair):
    """Both clusters, reached through each data path in turn (Thrift2, and the Thrift1 fallback)."""
    dc1, dc2 = minihbase_pair
    return dc1, dc2, cluster_of(dc1, "source", request.param), cluster_of(dc2, "target", request.param)


def _conn(cluster):
    return closing(cluster.connection(timeout=60000))


def _both(dc1, dc2, families, rows, target_families=None, target_name=None):
    """A table on each side, loaded with the same `rows` ({row: [(column, ts, value)]}); with
    `target_families`, family b is called z on the target."""
    name = "vp_" + uuid.uuid4().hex[:8]
    dc1.create_table(name, families)
    dc2.create_table(target_name or name, target_families or families)
    for cluster, table, rename in ((dc1, name, {}), (dc2, target_name or name, None)):
        with _conn(cluster) as c:
            t = c.table(table)
            for row, cells in rows.items():
                for column, ts, value in cells:
                    if rename is None and target_families:
                        family, _, qualifier = column.partition(b":")
                        column = (b"z" if family == b"b" else family) + b":" + qualifier
                    t.put(row, {column: value}, timestamp=ts)
    return name


def _counts(verdict) -> tuple:
    return tuple(verdict.counts[k] for k in (MATCHING, CONTENT_DIFFERENT, ONLY_IN_SOURCE, ONLY_IN_TARGET))


def test_one_pass_finds_exactly_the_differing_rows_of_a_big_region(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%05d" % i: [(b"a:x", 1000 + i, b"v%d" % i)] for i in range(6000)}
    name = _both(dc1, dc2, {"a": {}}, rows)
    changed = [b"r00017", b"r02500", b"r02501", b"r05999"]
    with _conn(dc2) as c2:
        for row in changed:
            c2.table(name).put(row, {b"a:x": b"X"}, timestamp=1000 + int(row[1:]))
        c2.table(name).delete(b"r04000")
    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name))
    assert _counts(verdict) == (5995, 4, 1, 0)
    assert dict(verdict.differing) == {**{r: CONTENT_DIFFERENT for r in changed}, b"r04000": ONLY_IN_SOURCE}
    assert (b"r02500", b"a:x", 3500, "value_differs") in verdict.versions
    assert (verdict.source_rows, verdict.target_rows) == (6000, 5999)


def test_recompare_clears_a_difference_that_was_an_edit_in_flight(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%03d" % i: [(b"a:x", 500, b"v")] for i in range(300)}
    name = _both(dc1, dc2, {"a": {}}, rows)
    with _conn(dc1) as c1:
        c1.table(name).put(b"r007", {b"a:x": b"new"}, timestamp=600)  # not yet replicated...
        c1.table(name).put(b"r300", {b"a:x": b"new"}, timestamp=600)
    caught_up = []

    def replication_catches_up(seconds: float) -> None:  # ...until the pause before the re-compare
        with _conn(dc2) as c2:
            c2.table(name).put(b"r007", {b"a:x": b"new"}, timestamp=600)
        caught_up.append(seconds)

    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name, recompare_sleep_s=2.5),
                               sleep=replication_catches_up)
    # r007 cleared in the first re-compare, so a second, after twice the pause; in it nothing moved: r300 stays.
    assert caught_up == [2.5, 5.0]
    assert (verdict.recompared, verdict.recompare_changed) == (2, 1)
    assert _counts(verdict) == (300, 0, 1, 0) and verdict.differing == [(b"r300", ONLY_IN_SOURCE)]


def test_every_version_is_compared_unless_fewer_are_asked(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%02d" % i: [(b"a:x", 100, b"old"), (b"a:x", 200, b"new")] for i in range(50)}
    name = _both(dc1, dc2, {"a": {"max_versions": 3}}, rows)
    with _conn(dc2) as c2:
        c2.table(name).put(b"r10", {b"a:x": b"OLD-CHANGED"}, timestamp=100)  # the newest is unchanged
    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name))
    assert _counts(verdict) == (49, 1, 0, 0) and verdict.differing == [(b"r10", CONTENT_DIFFERENT)]
    assert verdict.versions == [(b"r10", b"a:x", 100, "value_differs")]
    assert (verdict.source_cells, verdict.target_cells) == (100, 100)
    # CopyTable's one version sees nothing wrong: the newest versions are equal
    assert _counts(verify_partition(src, dst, WHOLE, VerifyOptions(name, versions=1))) == (50, 0, 0, 0)


def test_a_window_compares_only_the_cells_inside_it(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%02d" % i: [(b"a:x", 100 + i, b"v")] for i in range(40)}  # r00..r39 at ts 100..139
    name = _both(dc1, dc2, {"a": {}}, rows)
    with _conn(dc2) as c2:
        t = c2.table(name)
        t.put(b"r05", {b"a:x": b"X"}, timestamp=105)  # before the window: ignored
        t.put(b"r25", {b"a:x": b"X"}, timestamp=125)  # inside: reported
        t.put(b"r35", {b"a:x": b"X"}, timestamp=135)  # after (>= end): ignored
        t.put(b"zz", {b"a:x": b"X"}, timestamp=120)  # a target-only row inside: reported
    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name, start_time_ms=110, end_time_ms=130))
    assert _counts(verdict) == (19, 1, 0, 1)
    assert dict(verdict.differing) == {b"r25": CONTENT_DIFFERENT, b"zz": ONLY_IN_TARGET}
    counts = verify_partition(src, dst, WHOLE, VerifyOptions(name, start_time_ms=110, end_time_ms=130, level="rows"))
    assert (counts.source_rows, counts.target_rows) == (20, 21)


def test_renamed_families_are_compared_under_their_target_names(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%02d" % i: [(b"a:x", 10, b"a"), (b"b:y", 20, b"b")] for i in range(30)}
    target_name = "vp_renamed_" + uuid.uuid4().hex[:6]
    name = _both(dc1, dc2, {"a": {}, "b": {}}, rows, target_families={"a": {}, "z": {}}, target_name=target_name)
    options = VerifyOptions(name, target_table=target_name, families="a,b:z")
    assert _counts(verify_partition(src, dst, WHOLE, options)) == (30, 0, 0, 0)
    with _conn(dc2) as c2:
        c2.table(target_name).put(b"r03", {b"z:y": b"changed"}, timestamp=20)
    verdict = verify_partition(src, dst, WHOLE, options)
    assert _counts(verdict) == (29, 1, 0, 0) and verdict.differing == [(b"r03", CONTENT_DIFFERENT)]


def _wide_row(columns: int, ts: int = 5_000, prefix: bytes = b"a") -> list:
    return [(prefix + b":%05d" % i, ts, b"w%d" % i) for i in range(columns)]


def test_a_wide_row_is_compared_in_slices_recompared_and_repaired(clusters):
    dc1, dc2, src, dst = clusters
    rows = {b"r%02d" % i: [(b"a:x", 100 + i, b"v")] for i in range(30)}
    rows[b"r15-wide"] = _wide_row(600)  # 600 cells in slices of 16, at most 160 cells per scanner call
    name = _both(dc1, dc2, {"a": {}}, rows)
    options = VerifyOptions(name, scan_batch_cells=16, scan_call_cells=160)
    clean = verify_partition(src, dst, WHOLE, options)
    assert _counts(clean) == (31, 0, 0, 0) and (clean.source_cells, clean.target_cells) == (630, 630)
    with _conn(dc1) as c1, _conn(dc2) as c2:
        c1.table(name).put(b"r15-wide", {b"a:00300x": b"new"}, timestamp=5_000)  # a version missing on the target
        t = c2.table(name)
        t.put(b"r15-wide", {b"a:00200": b"CHANGED"}, timestamp=5_000)  # a value in the middle of the row
        t.put(b"r15-wide", {b"a:00599x": b"extra"}, timestamp=1)  # a version only on the target
    recompared = []
    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name, scan_batch_cells=16, scan_call_cells=160,
                                                              recompare_sleep_s=0.5), sleep=recompared.append)
    assert recompared == [0.5] and (verdict.recompared, verdict.recompare_changed) == (1, 0)  # nothing moved
    assert _counts(verdict) == (30, 1, 0, 0) and verdict.differing == [(b"r15-wide", CONTENT_DIFFERENT)]
    assert verdict.wide_rows == 1  # scanned again in slices, never fetched whole
    assert verdict.versions == [(b"r15-wide", b"a:00200", 5_000, "value_differs"),
                                (b"r15-wide", b"a:00300x", 5_000, "missing_on_target"),
                                (b"r15-wide", b"a:00599x", 1, "only_on_target")]
    repaired = verify_partition(src, dst, WHOLE, VerifyOptions(name, scan_batch_cells=16, scan_call_cells=160,
                                                               repair=True))
    assert repaired.repair["rows_repaired"] == 1 and repaired.repair["still_different"] == 0, repaired.repair
    assert (repaired.repair["cells_put"], repaired.repair["cells_deleted"], repaired.repair["conflicts"]) == (2, 1, 0)
    again = verify_partition(src, dst, WHOLE, options)
    assert _counts(again) == (31, 0, 0, 0) and again.source_cells == 631


def test_cells_with_future_timestamps_are_compared_without_an_end_time(clusters, tmp_path):
    import json

    from hbase_migration.data.executors import LocalExecutor
    from hbase_migration.data.runner import job_main
    from tests.hbase_data import connection_json

    dc1, dc2, src, _dst = clusters
    future = int(time.time() * 1000) + 86_400_000  # tomorrow: a client clock ahead, or a chosen timestamp
    rows = {b"r%02d" % i: [(b"a:x", 100, b"now"), (b"a:x", future + i, b"later")] for i in range(20)}
    name = _both(dc1, dc2, {"a": {"max_versions": 3}}, rows)
    with _conn(dc2) as c2:
        c2.table(name).put(b"r07", {b"a:x": b"DIFFERENT"}, timestamp=future + 7)
    summary = tmp_path / "verify.json"
    kind = src.describe()["data_path"]
    code = job_main("verify", ["--source", connection_json(dc1, kind), "--target", connection_json(dc2, kind),
                               "--table", name, "--summary-file", str(summary)], lambda _name, _ns: LocalExecutor(2))
    result = json.loads(summary.read_text())
    assert code == 1 and result["end_time_ms"] is None and not result["identical"]
    assert (result["matching"], result["content_different"], result["source_cells"]) == (19, 1, 40)
    assert result["differing_versions_sample"] == [
        {"row": "r07", "column": "a:x", "timestamp": future + 7, "kind": "value_differs"}]


def test_writes_continuing_on_the_source_never_hide_a_difference(clusters):
    """A verify that reads while the source takes writes (new rows, new versions, a wide row growing) reports every
    difference that was there before it started, and nothing but those and rows the writer touched."""
    dc1, dc2, src, dst = clusters
    rows = {b"r%04d" % i: [(b"a:x", 1000 + i, b"v%d" % i)] for i in range(0, 3000, 2)}
    rows[b"r1500-wide"] = _wide_row(500)
    name = _both(dc1, dc2, {"a": {}}, rows)
    known = {b"r0100": CONTENT_DIFFERENT, b"r1500-wide": CONTENT_DIFFERENT, b"r2998": ONLY_IN_SOURCE}
    with _conn(dc2) as c2:
        t = c2.table(name)
        t.put(b"r0100", {b"a:x": b"X"}, timestamp=1100)
        t.put(b"r1500-wide", {b"a:00250": b"X"}, timestamp=5_000)
        t.delete(b"r2998")
    written: set = set()
    stop = threading.Event()

    def writer():  # on the source only, as fast as it goes, until the verify ends
        with _conn(dc1) as c1:
            t, i = c1.table(name), 0
            while not stop.is_set() and i < 5000:
                key = b"r%04d" % ((i * 7919) % 3000)  # odd keys: new rows; even keys: newer versions
                t.put(key, {b"a:x": b"w%d" % i}, timestamp=10_000 + i)
                t.put(b"r1500-wide", {b"a:%05d" % (500 + i): b"new"}, timestamp=10_000 + i)
                written.update((key, b"r1500-wide"))
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_for(lambda: len(written) >= 20, 30, "the writer to start")
        verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name, scan_batch_cells=50, sample_limit=10_000,
                                                                  recompare_sleep_s=0.1))
    finally:
        stop.set()
        thread.join()
    found = dict(verdict.differing)
    assert {row: found.get(row) for row in known} == known  # never called equal while they differ
    assert set(found) <= set(known) | written  # and nothing differs that the writer did not touch
    assert verdict.counts[MATCHING] + len(found) >= 1500


def test_renames_that_reorder_families_are_merged_family_by_family(clusters):
    """a -> z and b -> y: the target orders a row's cells y before z, the source a before b, so the source is read
    one family per scan and merged in the target's order (a wide row too, in slices)."""
    dc1, dc2, src, dst = clusters
    name, target_name = "vp_" + uuid.uuid4().hex[:8], "vp_reordered_" + uuid.uuid4().hex[:6]
    dc1.create_table(name, {"a": {}, "b": {}})
    dc2.create_table(target_name, {"y": {}, "z": {}})
    rows = {b"r%02d" % i: {b"a:x": b"a%d" % i, b"b:y": b"b%d" % i} for i in range(20)}
    rows[b"r10-wide"] = {**{b"a:%04d" % i: b"a" for i in range(150)}, **{b"b:%04d" % i: b"b" for i in range(150)}}
    with _conn(dc1) as c1, _conn(dc2) as c2:
        for row, columns in rows.items():
            c1.table(name).put(row, columns, timestamp=7)
            c2.table(target_name).put(row, {(b"z" if c[:1] == b"a" else b"y") + c[1:]: v for c, v in columns.items()},
                                      timestamp=7)
    options = VerifyOptions(name, target_table=target_name, families="a:z,b:y", scan_batch_cells=40)
    clean = verify_partition(src, dst, WHOLE, options)
    assert _counts(clean) == (21, 0, 0, 0) and clean.source_cells == clean.target_cells == 340
    with _conn(dc2) as c2:
        c2.table(target_name).put(b"r10-wide", {b"y:0149": b"changed"}, timestamp=7)
    verdict = verify_partition(src, dst, WHOLE, options)
    assert _counts(verdict) == (20, 1, 0, 0) and verdict.versions == [(b"r10-wide", b"y:0149", 7, "value_differs")]
