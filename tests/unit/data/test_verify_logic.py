"""verify.py's and rowdiff.py's pure logic: the streaming merge-join (narrow and wide rows), re-classification,
repair plans, options and results."""
from __future__ import annotations

import bisect
import random

import pytest

from hbase_migration.data.rowdiff import cell_differences, column_pairs, compare_sides
from hbase_migration.data.scope import CopyConfigError
from hbase_migration.data.verify import (
    CONTENT_DIFFERENT,
    MATCHING,
    ONLY_IN_SOURCE,
    ONLY_IN_TARGET,
    PartitionVerdict,
    Tally,
    VerifyOptions,
    diff_rows,
    exit_code,
    find_differences,
    normalize_cells,
    plan_repair,
    renames_reorder,
    row_status,
    summarize_verify,
    version_differences,
)


def rows_of(keys, ts=1, value=b"v"):
    return [(k, ((b"f:q", ts, value),)) for k in keys]


def sliced(rows, batch):
    """Rows as a scan with TScan.batchSize gives them: a wider row in consecutive pieces of `batch` cells."""
    return [(row, list(cells[i:i + batch])) for row, cells in rows for i in range(0, len(cells), batch)]


def wide_row(n, ts=1, value=b"v"):
    return [(b"f:%06d" % i, ts, value) for i in range(n)]


# ---------------------------------------------------------------- the merge-join

def test_diff_rows_is_verifyreplications_merge_join():
    src = [(b"a", ((b"f:q", 1, b"v"),)), (b"b", ((b"f:q", 1, b"v"),)), (b"c", ((b"f:q", 1, b"v"),)),
           (b"e", ((b"f:q", 1, b"v"),))]
    tgt = [(b"a", ((b"f:q", 1, b"v"),)), (b"b", ((b"f:q", 2, b"v"),)), (b"d", ((b"f:q", 1, b"v"),)),
           (b"e", ((b"f:q", 1, b"w"),)), (b"f", ((b"f:q", 1, b"v"),))]
    assert list(diff_rows(src, tgt)) == [
        (b"a", MATCHING, ()),
        (b"b", CONTENT_DIFFERENT, ((b"f:q", 2, "only_on_target"), (b"f:q", 1, "missing_on_target"))),
        # a row on one side only: all its versions are named
        (b"c", ONLY_IN_SOURCE, ((b"f:q", 1, "missing_on_target"),)),
        (b"d", ONLY_IN_TARGET, ((b"f:q", 1, "only_on_target"),)),
        (b"e", CONTENT_DIFFERENT, ((b"f:q", 1, "value_differs"),)),
        (b"f", ONLY_IN_TARGET, ((b"f:q", 1, "only_on_target"),)),
    ]
    assert list(diff_rows([], [])) == []


def test_wide_rows_in_pieces_are_compared_piece_by_piece_and_named_by_version():
    wide = wide_row(1000)
    changed = list(wide)
    changed[517] = (changed[517][0], 1, b"X")  # one version in the middle of a wide row
    src = [(b"a", wide), (b"b", [(b"f:q", 1, b"v")]), (b"c", wide), (b"d", wide)]
    tgt = [(b"a", wide), (b"b", [(b"f:q", 1, b"v")]), (b"c", changed), (b"d", wide[:-1]), (b"e", wide)]
    stats = {}
    out = list(compare_sides(sliced(src, 100), sliced(tgt, 100), stats=stats))
    assert out == [
        (b"a", MATCHING, (), True),
        (b"b", MATCHING, (), False),
        (b"c", CONTENT_DIFFERENT, ((b"f:000517", 1, "value_differs"),), True),
        (b"d", CONTENT_DIFFERENT, ((b"f:000999", 1, "missing_on_target"),), True),
        (b"e", ONLY_IN_TARGET, tuple((c, 1, "only_on_target") for c, _, _ in wide[:10]), True),
    ]
    assert stats == {"source_cells": 3001, "target_cells": 4000, "matching": 2}
    # the same rows sliced at other places on each side (a renamed family read on its own): still equal
    assert list(compare_sides(sliced(src, 100), sliced(src, 7), matching=False, stats=stats)) == []
    # unsliced on one side, sliced on the other: the same verdicts
    assert [(r, st, v) for r, st, v, _ in compare_sides(src, sliced(tgt, 33))] == [
        (r, st, v) for r, st, v, _ in out]


def test_cell_differences_reads_both_rows_to_the_end_keeping_only_the_first_versions():
    source = iter(wide_row(5000))
    target = iter(wide_row(5000, ts=2))
    equal, versions = cell_differences(source, target, limit=3)
    assert not equal and len(versions) == 3
    assert versions[0] == (b"f:000000", 2, "only_on_target") and versions[1] == (b"f:000000", 1, "missing_on_target")
    assert next(source, None) is None and next(target, None) is None
    assert cell_differences(iter(wide_row(3)), iter(wide_row(3))) == (True, ())
    # HBase's order: family `a` before `a0`, newest first; the merge follows it
    a = [(b"a:q", 9, b"v"), (b"a0:q", 5, b"v")]
    assert cell_differences(a, [(b"a:q", 9, b"v"), (b"a0:q", 5, b"w")]) == (False, ((b"a0:q", 5, "value_differs"),))


def test_renames_that_reorder_families_are_read_per_family():
    assert renames_reorder(((b"a", b"z"), (b"b", b"y")))
    assert not renames_reorder(((b"a", b"b"), (b"c", b"d")))
    assert not renames_reorder(((b"a", b"a"),))
    assert not renames_reorder(())


def test_version_differences_name_each_version():
    source = [(b"a:x", 30, b"new"), (b"a:x", 20, b"mid"), (b"a:x", 10, b"old"), (b"b:y", 5, b"y")]
    target = [(b"a:x", 30, b"new"), (b"a:x", 10, b"OLD"), (b"a:x", 7, b"extra"), (b"b:y", 5, b"y")]
    assert version_differences(source, target) == (
        (b"a:x", 20, "missing_on_target"), (b"a:x", 10, "value_differs"), (b"a:x", 7, "only_on_target"))
    assert version_differences(source, source) == ()
    assert len(version_differences(source, [], limit=2)) == 2


def test_row_status_and_normalize():
    cells = ((b"f:q", 1, b"v"),)
    assert row_status(cells, cells) == MATCHING
    assert row_status(cells, None) == ONLY_IN_SOURCE
    assert row_status((), cells) == ONLY_IN_TARGET
    assert row_status(cells, ((b"f:q", 2, b"v"),)) == CONTENT_DIFFERENT
    assert row_status(None, ()) is None
    assert normalize_cells([(b"b:q", 1, b""), (b"a:q", 1, b""), (b"a:q", 5, b"")]) == (
        (b"a:q", 5, b""), (b"a:q", 1, b""), (b"b:q", 1, b""))


def test_tally_counts_keeps_capped_rows_and_reclassifies():
    t = Tally(max_kept=2)
    t.add_matching(10)
    for row, status in [(b"a", ONLY_IN_SOURCE), (b"b", ONLY_IN_TARGET), (b"c", CONTENT_DIFFERENT)]:
        t.add(row, status)
    assert t.counts == {MATCHING: 10, CONTENT_DIFFERENT: 1, ONLY_IN_SOURCE: 1, ONLY_IN_TARGET: 1}
    assert t.differing == {b"a": ONLY_IN_SOURCE, b"b": ONLY_IN_TARGET} and t.truncated
    assert (t.source_rows, t.target_rows) == (12, 12)
    t.reclassify(b"a", MATCHING)  # arrived on the target meanwhile
    t.reclassify(b"b", None)  # deleted on the target meanwhile
    assert t.counts == {MATCHING: 11, CONTENT_DIFFERENT: 1, ONLY_IN_SOURCE: 0, ONLY_IN_TARGET: 0}
    assert t.differing == {} and (t.source_rows, t.target_rows) == (12, 12)


# ---------------------------------------------------------------- the whole algorithm, in memory

class MemorySide:
    """A sorted in-memory side with the `batches()` interface verify's algorithm reads through; with `batch`, rows
    wider than that come in pieces, as a scan with TScan.batchSize gives them."""

    def __init__(self, rows, batch=None):
        self.data = sorted(rows)
        self.keys = [r for r, _ in self.data]
        self.batch = batch
        self.scans = 0
        self.most_cells_at_once = 0

    def batches(self, lo, hi, keys_only=False):
        self.scans += 1
        i = bisect.bisect_left(self.keys, lo)
        j = len(self.keys) if not hi else bisect.bisect_left(self.keys, hi)
        rows = [(row, tuple((c, ts, b"") for c, ts, _ in cells)) if keys_only else (row, cells)
                for row, cells in self.data[i:j]]
        if self.batch:
            rows = sliced(rows, self.batch)
        for k in range(0, len(rows), 100):  # in scan-sized batches, as a Thrift side yields them
            chunk = rows[k:k + 100]
            self.most_cells_at_once = max(self.most_cells_at_once, sum(len(c) for _, c in chunk))
            yield chunk


def brute_force(src, tgt):
    s, t = dict(src), dict(tgt)
    out = {}
    for k in set(s) | set(t):
        out[k] = row_status(s.get(k), t.get(k))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_find_differences_reports_exactly_the_injected_differences(seed):
    rnd = random.Random(seed)
    src = [(b"r%06d" % i, ((b"a:x", 100 + i, b"v%d" % i), (b"b:y", 50, b"w"))) for i in range(5000)]
    tgt = dict(src)
    changes = rnd.sample(range(5000), 12)
    for n, i in enumerate(changes):
        key = b"r%06d" % i
        kind = n % 4
        if kind == 0:
            del tgt[key]  # missing on the target
        elif kind == 1:
            tgt[key] = ((b"a:x", 100 + i, b"CHANGED"), (b"b:y", 50, b"w"))
        elif kind == 2:
            tgt[key] = ((b"a:x", 7, b"v%d" % i), (b"b:y", 50, b"w"))  # other timestamp
        else:
            tgt[key + b"-extra"] = ((b"a:x", 1, b"x"),)  # only on the target
    tgt_rows = sorted(tgt.items())
    expected = {k: v for k, v in brute_force(src, tgt_rows).items() if v != MATCHING}
    options = VerifyOptions("t")
    tally, verdict = Tally(), PartitionVerdict("p", 0, b"", b"")
    s, t = MemorySide(src), MemorySide(tgt_rows)
    find_differences(s, t, b"", b"", options, tally, verdict)
    assert tally.differing == expected
    assert tally.counts[ONLY_IN_SOURCE] == 3 and tally.counts[ONLY_IN_TARGET] == 3
    assert tally.counts[CONTENT_DIFFERENT] == 6
    assert tally.counts[MATCHING] == 5000 - 9
    assert (tally.source_rows, tally.target_rows) == (5000, 5000 - 3 + 3)
    # one pass: each side read once, nothing re-read to find the rows (there were 3 * 12 + 2 scans at most with
    # range hashes and bisection)
    assert (s.scans, t.scans) == (1, 1)
    assert (verdict.source_cells, verdict.target_cells) == (10000, 10000 - 6 + 3)


def test_find_differences_holds_pieces_not_rows_of_wide_rows():
    rnd = random.Random(7)
    src = [(b"r%03d" % i, wide_row(rnd.choice((1, 3, 2500)), ts=i)) for i in range(60)]
    tgt = dict(src)
    tgt[b"r010"] = [c if c[0] != b"f:000042" else (c[0], c[1], b"X") for c in tgt[b"r010"]]
    tgt[b"r020"] = tgt[b"r020"][:-1]
    del tgt[b"r030"]
    expected = {k: v for k, v in brute_force(src, sorted(tgt.items())).items() if v != MATCHING}
    s, t = MemorySide(src, batch=100), MemorySide(sorted(tgt.items()), batch=100)
    tally, verdict = Tally(), PartitionVerdict("p", 0, b"", b"")
    find_differences(s, t, b"", b"", VerifyOptions("t"), tally, verdict)
    assert tally.differing == expected
    assert tally.counts[MATCHING] == 60 - len(expected)
    assert verdict.source_cells == sum(len(c) for _, c in src)
    assert {r for r in expected if len(dict(src)[r]) > 100} <= tally.wide  # fetched again by scanning
    assert max(s.most_cells_at_once, t.most_cells_at_once) <= 100 * 100  # a scan batch of pieces, never a row


def test_find_differences_on_a_clean_copy_reads_each_side_once():
    src = rows_of([b"r%05d" % i for i in range(2000)])
    s, t = MemorySide(src), MemorySide(list(src))
    tally = Tally()
    find_differences(s, t, b"", b"", VerifyOptions("t"), tally, PartitionVerdict("p", 0, b"", b""))
    assert tally.counts == {MATCHING: 2000, CONTENT_DIFFERENT: 0, ONLY_IN_SOURCE: 0, ONLY_IN_TARGET: 0}
    assert (s.scans, t.scans) == (1, 1)


def test_find_differences_when_everything_differs_reads_each_side_once():
    keys = [b"r%05d" % i for i in range(3000)]
    s, t = MemorySide(rows_of(keys, ts=1)), MemorySide(rows_of(keys, ts=2))  # copy rewrote timestamps
    tally = Tally(max_kept=10)
    verdict = PartitionVerdict("p", 0, b"", b"")
    find_differences(s, t, b"", b"", VerifyOptions("t"), tally, verdict)
    assert tally.counts[CONTENT_DIFFERENT] == 3000 and tally.truncated
    assert tally.versions[b"r00000"] == ((b"f:q", 2, "only_on_target"), (b"f:q", 1, "missing_on_target"))
    assert (s.scans, t.scans) == (1, 1)


def test_rows_on_one_side_only_are_listed():
    s = MemorySide(rows_of([b"a", b"b", b"c"]))
    t = MemorySide([])
    tally = Tally()
    find_differences(s, t, b"", b"", VerifyOptions("t"), tally, PartitionVerdict("p", 0, b"", b""))
    assert tally.differing == {b"a": ONLY_IN_SOURCE, b"b": ONLY_IN_SOURCE, b"c": ONLY_IN_SOURCE}


# ---------------------------------------------------------------- repair plans

def test_repair_puts_missing_and_changed_cells_and_deletes_target_only_cells():
    src = [(b"f:a", 5, b"new"), (b"f:b", 3, b"x")]
    tgt = [(b"f:a", 5, b"old"), (b"f:c", 9, b"extra")]
    plan = plan_repair(src, tgt)
    assert plan.puts == [(b"f:a", 5, b"new"), (b"f:b", 3, b"x")]
    assert plan.deletes == [(b"f:c", 9)]
    assert plan.conflicts == []


def test_repair_refuses_a_delete_that_would_mask_a_source_version():
    # different timestamp: the target's newer version cannot go without hiding the source's older one
    plan = plan_repair([(b"f:a", 5, b"v")], [(b"f:a", 8, b"v")])
    assert plan.puts == [(b"f:a", 5, b"v")]
    assert plan.deletes == []
    assert plan.conflicts == [(b"f:a", 8, "a delete at 8 would also hide the source's version at 5 "
                                         "(Thrift1 deletes all versions <= ts)")]
    # an older target-only version is safe to delete: the source's newer put stays visible
    plan = plan_repair([(b"f:a", 8, b"v")], [(b"f:a", 5, b"v")])
    assert (plan.puts, plan.deletes, plan.conflicts) == ([(b"f:a", 8, b"v")], [(b"f:a", 5)], [])


def test_repair_is_planned_column_by_column_as_a_wide_row_streams():
    src = wide_row(300) + [(b"g:q", 5, b"s")]
    tgt = [c for c in wide_row(300) if c[0] != b"f:000100"] + [(b"f:000200", 7, b"extra"), (b"g:q", 5, b"t")]
    pairs = list(column_pairs(iter(src), iter(sorted(tgt, key=lambda c: (c[0], -c[1])))))
    assert len(pairs) == 301 and pairs[100] == ([(b"f:000100", 1, b"v")], [])
    assert pairs[200] == ([(b"f:000200", 1, b"v")], [(b"f:000200", 7, b"extra"), (b"f:000200", 1, b"v")])
    plan = plan_repair(src, tgt, exact_deletes=True)
    assert plan.puts == [(b"f:000100", 1, b"v"), (b"g:q", 5, b"s")]
    assert plan.deletes == [(b"f:000200", 7)] and plan.conflicts == []
    # Thrift1: the target's newer version cannot go without hiding the source's older one of that column
    plan = plan_repair(src, tgt)
    assert plan.deletes == [] and [c[:2] for c in plan.conflicts] == [(b"f:000200", 7)]


def test_repair_refuses_deletes_in_a_windowed_comparison():
    plan = plan_repair([], [(b"f:c", 9, b"x")], windowed=True)
    assert plan.deletes == [] and plan.conflicts[0][:2] == (b"f:c", 9)
    assert "versions older than the window" in plan.conflicts[0][2]


# ---------------------------------------------------------------- options and results

@pytest.mark.parametrize("kwargs, message", [
    (dict(level="cells"), "level must be one of rows, content, got 'cells'"),
    (dict(max_diff_rows=0), "max_diff_rows must be a positive integer"),
    (dict(scan_batch_cells=0), "scan_batch_cells must be a positive integer"),
    (dict(scan_call_cells="many"), "scan_call_cells must be a positive integer"),
    (dict(recompare_sleep_s=-1), "recompare_sleep_s must be seconds >= 0, got -1"),
    (dict(repair="yes"), "repair must be true or false, got 'yes'"),
    (dict(repair=True, level="rows"), "repair needs level 'content'"),
])
def test_verify_options_validation(kwargs, message):
    with pytest.raises(CopyConfigError, match=message):
        VerifyOptions("t", **kwargs)


def test_summary_totals_counters_and_capped_samples():
    opts = VerifyOptions("t", target_table="u", end_time_ms=1000, sample_limit=2)
    v1 = PartitionVerdict("p0", 0, b"", b"m", counts={MATCHING: 10, CONTENT_DIFFERENT: 1, ONLY_IN_SOURCE: 2,
                                                      ONLY_IN_TARGET: 0},
                          source_rows=13, target_rows=11,
                          differing=[(b"a", CONTENT_DIFFERENT), (b"b", ONLY_IN_SOURCE), (b"c", ONLY_IN_SOURCE)])
    v2 = PartitionVerdict("p1", 1, b"m", b"", counts={MATCHING: 5, CONTENT_DIFFERENT: 0, ONLY_IN_SOURCE: 1,
                                                      ONLY_IN_TARGET: 1},
                          source_rows=6, target_rows=6, differing=[(b"x\x00", ONLY_IN_SOURCE), (b"y", ONLY_IN_TARGET)])
    r = summarize_verify([v2, v1], opts, elapsed_s=2.0)
    assert {k: r[k] for k in ("source_rows", "target_rows", "matching", "content_different", "only_in_source",
                              "only_in_target", "partitions", "failed_partitions", "identical", "rows_per_s",
                              "end_time_ms", "target_table")} == {
        "source_rows": 19, "target_rows": 17, "matching": 15, "content_different": 1, "only_in_source": 3,
        "only_in_target": 1, "partitions": 2, "failed_partitions": 0, "identical": False, "rows_per_s": 9.5,
        "end_time_ms": 1000, "target_table": "u",
    }
    assert r["differing_rows_sample"] == {CONTENT_DIFFERENT: ["a"], ONLY_IN_SOURCE: ["b", "c"],
                                          ONLY_IN_TARGET: ["y"]}
    assert r["verifyreplication_counters"] == {"GOODROWS": 15, "BADROWS": 5, "CONTENT_DIFFERENT_ROWS": 1,
                                               "ONLY_IN_SOURCE_TABLE_ROWS": 3, "ONLY_IN_PEER_TABLE_ROWS": 1}
    assert exit_code(r) == 1
    clean = PartitionVerdict("p", 0, b"", b"", counts={MATCHING: 3}, source_rows=3, target_rows=3)
    assert exit_code(summarize_verify([clean], opts, 1.0)) == 0
    failed = PartitionVerdict("p", 0, b"", b"", status="failed", error="ConnectionError: x")
    r = summarize_verify([clean, failed], opts, 1.0)
    assert exit_code(r) == 1 and r["failures"][0]["error"] == "ConnectionError: x"


def test_rows_level_summary_compares_counts_only():
    opts = VerifyOptions("t", level="rows")
    same = PartitionVerdict("p0", 0, b"", b"m", source_rows=5, target_rows=5)
    other = PartitionVerdict("p1", 1, b"m", b"", source_rows=5, target_rows=4)
    r = summarize_verify([same, other], opts, 1.0)
    assert (r["matching"], r["row_count_mismatch_partitions"], r["identical"]) == (None, 1, False)
    assert summarize_verify([same], opts, 1.0)["identical"] is True


def test_a_repair_round_goes_on_only_while_its_deletes_uncover_a_version_the_target_did_not_show():
    from hbase_migration.data.verify import _uncovered

    before = [(b"f:a", 3000, b"v3")]
    # v3 deleted, v2 shows (and hides v1, past VERSIONS => 1): uncovered
    assert _uncovered(before, [(b"f:a", 1000, b"v1")], [(b"f:a", 2000, b"v2")])
    # equal now, or still the version the round read (a delete that did not take): no other round
    assert not _uncovered(before, [(b"f:a", 1000, b"v1")], [(b"f:a", 1000, b"v1")])
    assert not _uncovered(before, [(b"f:a", 1000, b"v1")], [(b"f:a", 3000, b"v3")])
    # the target lacks a version (a put not read back): not a round's business, the examination's
    assert not _uncovered(before, [(b"f:a", 1000, b"v1"), (b"f:b", 1000, b"x")], [(b"f:a", 1000, b"v1")])
