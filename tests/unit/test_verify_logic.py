"""verify.py's pure logic: hashing, batch comparison, row diff, bisection, re-classification, repair plans."""
from __future__ import annotations

import bisect
import hashlib
import random

import pytest

from hbase_migration.scope import CopyConfigError
from hbase_migration.verify import (
    CONTENT_DIFFERENT,
    MATCHING,
    ONLY_IN_SOURCE,
    ONLY_IN_TARGET,
    HashBatch,
    PartitionVerdict,
    RangeVerdict,
    Tally,
    VerifyOptions,
    compare_batches,
    diff_rows,
    exit_code,
    find_differences,
    hash_batches,
    is_cut,
    normalize_cells,
    plan_repair,
    row_status,
    summarize_verify,
    update_digest,
    version_differences,
)


def rows_of(keys, ts=1, value=b"v"):
    return [(k, ((b"f:q", ts, value),)) for k in keys]


# ---------------------------------------------------------------- hashing

def test_digest_covers_every_part_with_lengths():
    def md5(row, cells):
        d = hashlib.md5()
        n = update_digest(d, row, cells)
        return d.hexdigest(), n

    base, n = md5(b"r", [(b"f:q", 5, b"v")])
    assert n == 4 + 1 + 4 + 1 + 4 + 1 + 8 + 1 + 4 + 1
    assert base == hashlib.md5(b"\0\0\0\x01r\0\0\0\x01f\0\0\0\x01q" + (5).to_bytes(8, "big") + b"\x04"  # Put
                               + b"\0\0\0\x01v").hexdigest()
    # every version counts: an older version more or less changes the digest
    assert md5(b"r", [(b"f:q", 5, b"v"), (b"f:q", 3, b"old")])[0] != base
    for other in ([(b"f:q", 6, b"v")], [(b"f:q", 5, b"w")], [(b"g:q", 5, b"v")], [(b"f:r", 5, b"v")]):
        assert md5(b"r", other)[0] != base
    assert md5(b"s", [(b"f:q", 5, b"v")])[0] != base
    # without length prefixes these two would feed the same bytes
    assert md5(b"r", [(b"f:qa", 5, b"")])[0] != md5(b"r", [(b"f:q", 5, b"a")])[0]


def test_cuts_depend_on_the_key_only_and_nest_across_levels():
    keys = [b"row%05d" % i for i in range(20000)]
    coarse = {k for k in keys if is_cut(k, 256)}
    fine = {k for k in keys if is_cut(k, 16)}
    assert coarse <= fine
    assert 40 < len(coarse) < 120  # ~ 20000 / 256 = 78
    assert 1000 < len(fine) < 1500  # ~ 1250
    assert all(is_cut(k, 1) for k in keys[:10])


def test_hash_batches_start_at_the_range_start_and_cut_at_cut_keys():
    keys = [b"row%05d" % i for i in range(3000)]
    batches = list(hash_batches(rows_of(keys), b"", 256))
    cuts = [k for k in keys if is_cut(k, 256)]
    assert [b.start for b in batches] == [b""] + cuts
    assert sum(b.rows for b in batches) == 3000
    assert sum(b.cells for b in batches) == 3000
    empty = list(hash_batches([], b"a", 256))
    assert empty == [HashBatch(b"a", 0, 0, hashlib.md5().digest())]


# ---------------------------------------------------------------- comparison

def batches(keys, **kw):
    return hash_batches(rows_of(keys, **kw), b"", 16)


KEYS = [b"k%04d" % i for i in range(400)]


def test_identical_sides_give_only_equal_ranges_covering_everything():
    verdicts = list(compare_batches(batches(KEYS), batches(KEYS), b""))
    assert all(v.equal for v in verdicts)
    assert sum(v.source_rows for v in verdicts) == 400
    assert verdicts[0].lo == b"" and verdicts[-1].hi == b""
    assert all(a.hi == b.lo for a, b in zip(verdicts, verdicts[1:]))


def test_a_changed_value_marks_exactly_its_batch():
    changed = b"k0123"
    tgt = [(k, ((b"f:q", 1, b"X" if k == changed else b"v"),)) for k in KEYS]
    verdicts = list(compare_batches(batches(KEYS), hash_batches(tgt, b"", 16), b""))
    bad = [v for v in verdicts if not v.equal]
    assert len(bad) == 1
    assert bad[0].lo <= changed and (not bad[0].hi or changed < bad[0].hi)


def test_a_missing_cut_key_merges_ranges_until_the_next_common_cut():
    cut = next(k for k in KEYS[50:] if is_cut(k, 16))
    verdicts = list(compare_batches(batches(KEYS), batches([k for k in KEYS if k != cut]), b""))
    bad = [v for v in verdicts if not v.equal]
    assert len(bad) == 1
    assert bad[0].lo < cut and (not bad[0].hi or cut < bad[0].hi)
    assert bad[0].source_rows == bad[0].target_rows + 1


def test_one_side_empty_gives_one_range_over_everything():
    verdicts = list(compare_batches(batches(KEYS), batches([]), b"zz"))
    assert verdicts == [RangeVerdict(b"", b"zz", False, 400, 0, 400, 0)]


def test_compare_refuses_streams_that_start_apart():
    with pytest.raises(ValueError, match="start at different keys"):
        list(compare_batches(hash_batches([], b"a", 4), hash_batches([], b"b", 4), b""))


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
    """A sorted in-memory side with the `batches()` interface verify's algorithm reads through."""

    def __init__(self, rows):
        self.data = sorted(rows)
        self.keys = [r for r, _ in self.data]
        self.scans = 0

    def batches(self, lo, hi, keys_only=False):
        self.scans += 1
        i = bisect.bisect_left(self.keys, lo)
        j = len(self.keys) if not hi else bisect.bisect_left(self.keys, hi)
        rows = [(row, tuple((c, ts, b"") for c, ts, _ in cells)) if keys_only else (row, cells)
                for row, cells in self.data[i:j]]
        for k in range(0, len(rows), 100):  # in scan-sized batches, as a Thrift side yields them
            yield rows[k:k + 100]


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
    options = VerifyOptions("t", batch_rows=256, leaf_rows=8)
    tally, verdict = Tally(), PartitionVerdict("p", 0, b"", b"")
    s, t = MemorySide(src), MemorySide(tgt_rows)
    find_differences(s, t, b"", b"", options, tally, verdict)
    assert tally.differing == expected
    assert tally.counts[ONLY_IN_SOURCE] == 3 and tally.counts[ONLY_IN_TARGET] == 3
    assert tally.counts[CONTENT_DIFFERENT] == 6
    assert tally.counts[MATCHING] == 5000 - 9
    assert (tally.source_rows, tally.target_rows) == (5000, 5000 - 3 + 3)
    assert verdict.bisections >= 1  # differing 256-row batches were narrowed before the row diff
    # bisection re-read only the differing ranges: far fewer rows than a second full pass
    assert s.scans < 3 * 12 + 2


def test_find_differences_on_a_clean_copy_reads_each_side_once():
    src = rows_of([b"r%05d" % i for i in range(2000)])
    s, t = MemorySide(src), MemorySide(list(src))
    tally = Tally()
    find_differences(s, t, b"", b"", VerifyOptions("t"), tally, PartitionVerdict("p", 0, b"", b""))
    assert tally.counts == {MATCHING: 2000, CONTENT_DIFFERENT: 0, ONLY_IN_SOURCE: 0, ONLY_IN_TARGET: 0}
    assert (s.scans, t.scans) == (1, 1)


def test_find_differences_when_everything_differs_diffs_rows_without_endless_bisection():
    keys = [b"r%05d" % i for i in range(3000)]
    s, t = MemorySide(rows_of(keys, ts=1)), MemorySide(rows_of(keys, ts=2))  # copy rewrote timestamps
    tally = Tally(max_kept=10)
    verdict = PartitionVerdict("p", 0, b"", b"")
    find_differences(s, t, b"", b"", VerifyOptions("t", leaf_rows=4), tally, verdict)
    assert tally.counts[CONTENT_DIFFERENT] == 3000 and tally.truncated
    assert s.scans <= 2 + 2 * 40  # first pass, then at most one bisection + one diff per batch


def test_one_sided_ranges_are_listed_from_keys_only():
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


def test_repair_refuses_deletes_in_a_windowed_comparison():
    plan = plan_repair([], [(b"f:c", 9, b"x")], windowed=True)
    assert plan.deletes == [] and plan.conflicts[0][:2] == (b"f:c", 9)
    assert "versions older than the window" in plan.conflicts[0][2]


# ---------------------------------------------------------------- options and results

@pytest.mark.parametrize("kwargs, message", [
    (dict(level="cells"), "level must be one of rows, content, got 'cells'"),
    (dict(batch_rows=100), "batch_rows must be a power of two, got 100"),
    (dict(leaf_rows=0), "leaf_rows must be a positive integer"),
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
