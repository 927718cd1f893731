"""The bounded check's pure parts: its lower bound and the classification of every differing version."""
from __future__ import annotations

import pytest

from hbase_migration.data.rowdiff import MISSING_ON_TARGET, ONLY_ON_TARGET, VALUE_DIFFERS
from hbase_migration.migration.bounded_check import BoundedCheckError, classify, settle, since_ms

R = 1_700_000_100_000  # the reverse peer exists from here (skew margin included by the caller)


def test_since_is_the_earliest_verification_start_minus_the_margin():
    assert since_ms({"t1": 1_000_000, "t2": 900_000}, ["t1", "t2"], 5_000) == 895_000
    assert since_ms({"t1": 1_000}, ["t1"], 5_000) == 0
    with pytest.raises(BoundedCheckError, match="no verification start recorded for t2"):
        since_ms({"t1": 1, "t2": None}, ["t1", "t2"], 0)
    with pytest.raises(BoundedCheckError, match="skew_margin_ms"):
        since_ms({"t1": 1}, ["t1"], -1)


def test_no_difference_is_ok():
    verdict = classify([], R)
    assert verdict.ok and verdict.rows == 0 and set(verdict.counts.values()) == {0}


def test_a_source_version_missing_on_the_target_is_lost():
    verdict = classify([("t1", b"r1", ((b"f:a", R - 10, MISSING_ON_TARGET),))], R)
    assert not verdict.ok and verdict.counts["lost"] == 1
    assert verdict.samples == (f"t1 row r1 f:a @{R - 10}: lost",)
    assert verdict.reasons[0].startswith("1 source version(s) written since the last verification are not on the "
                                         "target")


def test_a_rollbacks_reasons_name_its_sides_and_peers():
    """The rollback runs the check with the roles swapped: its 'source' side is the migration's target."""
    from hbase_migration.migration.cutover_plan import ROLLBACK_ROLES

    differences = [("t1", b"r1", ((b"f:a", R - 10, MISSING_ON_TARGET),)),
                   ("t1", b"r2", ((b"f:a", R - 1, ONLY_ON_TARGET),))]
    assert classify(differences, R, live=True, roles=ROLLBACK_ROLES).reasons == (
        "1 target version(s) written since the last verification were still not on the source when the live pass "
        "gave up re-reading them (writes not fenced): the reverse peer is behind or stuck although its lag metrics "
        "looked drained",
        "1 version(s) exist only on the source and were written before the forward peer existed: a client wrote to "
        "the source too early, and nothing ships those back")


def test_an_early_target_write_kept_by_the_reverse_peer_is_allowed():
    verdict = classify([("t1", b"r9", ((b"f:a", R + 5, ONLY_ON_TARGET),))], R)
    assert verdict.ok and verdict.counts["early_write"] == 1 and verdict.early_rows == (("t1", "r9"),)


def test_a_target_write_from_before_the_reverse_peer_is_not_kept():
    verdict = classify([("t1", b"r9", ((b"f:a", R - 1, ONLY_ON_TARGET),))], R)
    assert not verdict.ok and verdict.counts["not_kept"] == 1
    assert "written before the reverse peer existed" in verdict.reasons[0]
    assert not classify([("t1", b"r9", ((b"f:a", R + 5, ONLY_ON_TARGET),))], None).ok  # no reverse peer at all


def test_a_source_version_replaced_by_a_kept_newer_target_write_is_superseded():
    versions = ((b"f:a", R + 50, ONLY_ON_TARGET), (b"f:a", R - 10, MISSING_ON_TARGET))
    verdict = classify([("t1", b"r1", versions)], R)
    assert verdict.ok and verdict.counts == {"lost": 0, "conflict": 0, "not_kept": 0, "early_write": 1,
                                             "superseded": 1}
    # another column's early write does not excuse a lost version
    other = ((b"f:b", R + 50, ONLY_ON_TARGET), (b"f:a", R - 10, MISSING_ON_TARGET))
    assert classify([("t1", b"r1", other)], R).counts["lost"] == 1
    # nor does an older one
    older = ((b"f:a", R - 20, MISSING_ON_TARGET), (b"f:a", R + 1, ONLY_ON_TARGET))
    assert classify([("t1", b"r1", older)], R - 30).counts["superseded"] == 1
    assert classify([("t1", b"r1", ((b"f:a", R + 10, MISSING_ON_TARGET), (b"f:a", R + 1, ONLY_ON_TARGET)))],
                    R).counts["lost"] == 1


def test_same_cell_other_value_is_a_conflict():
    verdict = classify([("t1", b"\x00r", ((b"f:a", R, VALUE_DIFFERS),))], R)
    assert not verdict.ok and verdict.counts["conflict"] == 1 and verdict.samples == (f"t1 row \\x00r f:a @{R}: "
                                                                                      "conflict",)


def test_samples_are_bounded_and_counts_exact():
    diffs = [("t1", b"r%d" % i, ((b"f:a", 1, MISSING_ON_TARGET),)) for i in range(25)]
    verdict = classify(diffs, R, sample_limit=3)
    assert verdict.counts["lost"] == 25 and verdict.rows == 25 and len(verdict.samples) == 3


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind"):
        classify([("t1", b"r", ((b"f:a", 1, "other"),))], R)


def test_a_live_lost_version_says_replication_is_behind_not_that_a_write_is_gone():
    verdict = classify([("t1", b"r1", ((b"f:a", R - 10, MISSING_ON_TARGET),))], R, live=True)
    assert not verdict.ok and verdict.counts["lost"] == 1
    assert "the forward peer is behind or stuck" in verdict.reasons[0]
    assert "did not arrive" not in verdict.reasons[0]


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


def _missing(row):
    return ("t1", row, ((b"f:a", R - 10, MISSING_ON_TARGET),))


def test_settle_rereads_until_versions_held_up_in_replication_arrive():
    """A batch held up for 20 s (the CI run whose live pass gave up after one 1 s re-read): each re-read sees
    fewer rows missing, and the pass ends clean once they have all arrived."""
    clock = _Clock()
    arrivals = iter([[_missing(b"r1"), _missing(b"r2")], [_missing(b"r2")], []])
    reads = []

    def reread(current):
        reads.append([r for _, r, _ in current])
        return next(arrivals)

    left, rounds = settle([_missing(b"r1"), _missing(b"r2")], reread, R, pause_s=10, budget_s=300,
                          sleep=clock.sleep, clock=lambda: clock.now)
    assert left == [] and rounds == 3
    assert reads == [[b"r1", b"r2"], [b"r1", b"r2"], [b"r2"]]  # only what still differs is read again
    assert clock.slept == [10, 10, 10]


def test_settle_gives_up_after_its_budget_and_returns_what_still_differs():
    clock = _Clock()
    left, rounds = settle([_missing(b"r1")], lambda cur: list(cur), R, pause_s=2, budget_s=7,
                          sleep=clock.sleep, clock=lambda: clock.now)
    assert left == [_missing(b"r1")]
    assert rounds == 5  # one re-read, then re-reads for 7 s more at 2 s each (the last one past the budget)
    assert clock.now == 10


def test_settle_stops_at_the_first_reread_when_only_allowed_differences_remain():
    early = ("t1", b"r9", ((b"f:a", R + 5, ONLY_ON_TARGET),))  # a kept early target write: allowed
    clock = _Clock()
    left, rounds = settle([early, _missing(b"r1")], lambda cur: [early], R, pause_s=1, budget_s=60,
                          sleep=clock.sleep, clock=lambda: clock.now)
    assert left == [early] and rounds == 1


def test_settle_reads_nothing_when_nothing_differs():
    left, rounds = settle([], lambda cur: pytest.fail("re-read with nothing to re-read"), R, pause_s=1, budget_s=1,
                          sleep=lambda s: pytest.fail("slept"))
    assert left == [] and rounds == 0


# --------------------------------------------------------------------------------------------------
# The work in parallel per region: the split and the merge


def test_one_range_per_region_every_table_covered_whole_in_table_then_key_order():
    from hbase_migration.migration.bounded_check import CheckRange, plan_ranges

    starts = {"t1": [b"", b"g", b"p"], "t2": [b""]}
    assert plan_ranges(["t2", "t1"], starts) == [
        CheckRange("t2", b"", b""),
        CheckRange("t1", b"", b"g"), CheckRange("t1", b"g", b"p"), CheckRange("t1", b"p", b"")]


def test_the_ranges_start_at_the_tables_first_key_whatever_the_start_keys_read():
    """Start keys read before the freeze may be stale (a region split or merged since) or come unsorted: the
    ranges still cover each table from b"" to its end, with no gap and no overlap."""
    from hbase_migration.migration.bounded_check import CheckRange, plan_ranges

    assert plan_ranges(["t"], {"t": [b"m", b"c", b"m"]}) == [
        CheckRange("t", b"", b"c"), CheckRange("t", b"c", b"m"), CheckRange("t", b"m", b"")]


def test_above_the_cap_each_table_keeps_a_share_in_proportion_and_at_least_one_range():
    from hbase_migration.migration.bounded_check import plan_ranges

    big = [b""] + [b"%03d" % i for i in range(1, 100)]  # 100 regions
    starts = {"big": big, "one": [b""], "ten": [b""] + [b"%03d" % i for i in range(10, 100, 10)]}
    ranges = plan_ranges(["big", "one", "ten"], starts, max_ranges=37)  # 111 regions in all
    per = {t: [r for r in ranges if r.table == t] for t in starts}
    assert [len(per[t]) for t in ("big", "one", "ten")] == [33, 1, 3]
    for table, pieces in per.items():  # contiguous, whole: from b"" to the end, each cut at a region start
        assert pieces[0].start == b"" and pieces[-1].stop == b""
        assert all(a.stop == b.start for a, b in zip(pieces, pieces[1:]))
        assert all(p.start in starts[table] for p in pieces)
    assert [p.start for p in per["ten"]] == [b"", b"030", b"060"]


def test_three_hundred_one_region_tables_are_three_hundred_ranges():
    from hbase_migration.migration.bounded_check import plan_ranges

    tables = [f"t{i:03d}" for i in range(300)]
    ranges = plan_ranges(tables, {t: [b""] for t in tables})
    assert [(r.table, r.start, r.stop) for r in ranges] == [(t, b"", b"") for t in tables]


def test_a_table_with_no_region_read_is_refused_by_name():
    from hbase_migration.migration.bounded_check import plan_ranges

    with pytest.raises(BoundedCheckError, match="no region of t2, t3 on the source"):
        plan_ranges(["t1", "t2", "t3"], {"t1": [b""], "t2": []})
    with pytest.raises(BoundedCheckError, match="max_ranges must be an integer >= 1"):
        plan_ranges(["t1"], {"t1": [b""]}, max_ranges=0)


def test_the_merge_keeps_plan_order_whatever_order_the_ranges_finished_in():
    from hbase_migration.migration.bounded_check import CheckRange, merge_ranges

    plan = [CheckRange("t1", b"", b"m"), CheckRange("t1", b"m", b""), CheckRange("t2", b"", b"")]
    a = ("t1", b"b", ((b"f:a", R, MISSING_ON_TARGET),))
    b = ("t1", b"x", ((b"f:a", R, ONLY_ON_TARGET),))
    c = ("t2", b"a", ((b"f:a", R, VALUE_DIFFERS),))
    results = {2: ([c], {"source_cells": 5, "target_cells": 4}), 0: ([a], {"source_cells": 1, "target_cells": 0}),
               1: ([b], {"source_cells": 0, "target_cells": 1})}
    differences, stats = merge_ranges(plan, results)
    assert differences == [a, b, c]
    assert stats == {"source_cells": 6, "target_cells": 5, "ranges": 3}


def test_one_difference_in_one_region_of_many_still_refuses():
    from hbase_migration.migration.bounded_check import merge_ranges, plan_ranges

    tables = [f"t{i}" for i in range(30)]
    plan = plan_ranges(tables, {t: [b"", b"k"] for t in tables})
    results = {i: ([], {"source_cells": 3, "target_cells": 3}) for i in range(len(plan))}
    results[41] = ([(plan[41].table, b"z", ((b"f:a", R - 1, MISSING_ON_TARGET),))], {"source_cells": 3,
                                                                                     "target_cells": 2})
    differences, stats = merge_ranges(plan, results)
    verdict = classify(differences, R)
    assert not verdict.ok and verdict.counts["lost"] == 1 and verdict.rows == 1
    assert verdict.samples == (f"t20 row z f:a @{R - 1}: lost",)
    assert stats == {"source_cells": 180, "target_cells": 179, "ranges": 60}


def test_a_range_with_no_result_is_an_error_not_no_difference():
    from hbase_migration.migration.bounded_check import CheckRange, merge_ranges

    plan = [CheckRange("t1", b"", b"m"), CheckRange("t1", b"m", b"")]
    with pytest.raises(RuntimeError, match=r"1 of 2 key range\(s\) of the bounded check were not compared \(first: "
                                           r"t1 \[m, \)\)"):
        merge_ranges(plan, {0: ([], {})})


class _FakePath:
    """A data path over a dict (pool logic only: which ranges are read, on how many connections)."""

    opened: list = []

    def __init__(self, name, data, splits, fail_on=None):
        self.name, self.data, self.splits, self.fail_on = name, data, splits, fail_on
        _FakePath.opened.append(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def regions(self, table):
        from hbase_migration.data.datapath.base import Region

        keys = [b""] + self.splits[table]
        return [Region(k, e) for k, e in zip(keys, keys[1:] + [b""])]

    def scan(self, table, lo, hi, *, start_ms, versions, batch_rows, batch_cells):
        if (table, lo) == self.fail_on:
            raise OSError(f"scanner of {table} at {lo!r} lost")
        rows = [(k, [c for c in cells if c[1] >= start_ms]) for k, cells in sorted(self.data[table].items())
                if k >= lo and (not hi or k < hi)]
        yield [r for r in rows if r[1]]


def _fake_clusters(monkeypatch, fail_on=None):
    import hbase_migration.data.datapath as datapath

    tables = ["t1", "t2", "t3"]
    splits = {t: [b"c", b"f", b"m", b"s"] for t in tables}  # 5 regions each
    rows = {t: {bytes([k]) + b"r": [(b"f:a", R + k, b"v")] for k in range(ord("a"), ord("z"))} for t in tables}
    target = {t: {k: list(v) for k, v in rows[t].items()} for t in tables}
    del target["t2"][b"nr"]  # one lost version, in t2's region [m, s)
    _FakePath.opened = []
    monkeypatch.setattr(datapath, "open_data_path", lambda cluster, timeout_s=None: _FakePath(
        cluster, rows if cluster == "src" else target, splits, fail_on))
    return tables


def test_the_pool_compares_every_region_once_on_one_connection_per_side_per_thread(monkeypatch):
    from hbase_migration.migration.bounded_check import compare_window

    tables = _fake_clusters(monkeypatch)
    differences, stats = compare_window("src", "tgt", tables, R, parallel=4)
    assert [(t, row) for t, row, _ in differences] == [("t2", b"nr")]
    assert stats == {"source_cells": 75, "target_cells": 74, "ranges": 15, "parallel": 4}
    assert _FakePath.opened.count("tgt") == 4 and _FakePath.opened.count("src") == 4 + 3  # + the regions' read
    verdict = classify(differences, None)
    assert not verdict.ok and verdict.counts["lost"] == 1


def test_a_range_that_fails_fails_the_check(monkeypatch):
    from hbase_migration.migration.bounded_check import compare_window

    tables = _fake_clusters(monkeypatch, fail_on=("t3", b"f"))
    with pytest.raises(OSError, match="scanner of t3 at b'f' lost"):
        compare_window("src", "tgt", tables, R, parallel=4)


def test_the_ranges_are_capped_at_four_per_thread_and_never_above_max_ranges():
    from hbase_migration.migration.bounded_check import MAX_RANGES, max_ranges_for, plan_ranges

    assert [max_ranges_for(p) for p in (1, 16, 256, 1000)] == [4, 64, MAX_RANGES, MAX_RANGES]
    starts = {t: [b""] + [bytes([65 + i]) for i in range(49)] for t in ("a", "b", "c")}  # 3 x 50 regions
    ranges = plan_ranges(["a", "b", "c"], starts, max_ranges_for(16))
    assert len(ranges) <= 64 and {r.table for r in ranges} == {"a", "b", "c"}
    for t in ("a", "b", "c"):
        mine = [r for r in ranges if r.table == t]
        assert mine[0].start == b"" and mine[-1].stop == b""
        assert all(x.stop == y.start for x, y in zip(mine, mine[1:]))  # contiguous: the table whole
