"""Resume by key ranges (hbase_migration/data/resume.py): the range arithmetic and the plan a resume copies, after
splits, merges and partial progress, exactly."""
import pytest

from hbase_migration.data.datapath.base import Region
from hbase_migration.data.partitions import partition_id, plan_partitions
from hbase_migration.data.resume import FinishedRange, merge_ranges, relevant, resume_plan, subtract
from hbase_migration.data.scope import TableScope

SCOPE = TableScope(table="t")
FP = SCOPE.fingerprint()


def regions(*bounds):
    """Regions between consecutive bounds (b"" at both ends = the whole table)."""
    return [Region(a, b, b"t,%s,1" % a) for a, b in zip(bounds, bounds[1:])]


def done(start, stop, fingerprint=FP):
    return FinishedRange(partition_id("t", start, stop, FP), start, stop, fingerprint)


@pytest.mark.parametrize("ranges, merged", [
    ([], []),
    ([(b"a", b"c"), (b"c", b"e")], [(b"a", b"e")]),  # touching ranges are one
    ([(b"c", b"e"), (b"a", b"d")], [(b"a", b"e")]),  # overlapping, out of order
    ([(b"a", b"b"), (b"c", b"d")], [(b"a", b"b"), (b"c", b"d")]),  # a gap stays a gap
    ([(b"m", b""), (b"x", b"z")], [(b"m", b"")]),  # an open end covers everything after it
    ([(b"", b"b"), (b"a", b"")], [(b"", b"")]),
    ([(b"b", b"b"), (b"c", b"a")], []),  # empty ranges are dropped
])
def test_merge_ranges(ranges, merged):
    assert merge_ranges(ranges) == merged


@pytest.mark.parametrize("lo, hi, finished, pieces", [
    (b"a", b"z", [], [(b"a", b"z")]),
    (b"a", b"z", [(b"a", b"z")], []),
    (b"a", b"z", [(b"", b"")], []),
    (b"c", b"f", [(b"a", b"d")], [(b"d", b"f")]),  # finished before and into it
    (b"c", b"f", [(b"e", b"k")], [(b"c", b"e")]),  # finished from inside it to beyond
    (b"c", b"k", [(b"d", b"e"), (b"g", b"h")], [(b"c", b"d"), (b"e", b"g"), (b"h", b"k")]),
    (b"c", b"", [(b"d", b"e")], [(b"c", b"d"), (b"e", b"")]),  # open end kept open
    (b"c", b"", [(b"d", b"")], [(b"c", b"d")]),
    (b"", b"m", [(b"x", b"z")], [(b"", b"m")]),  # finished after it: untouched
    (b"m", b"", [(b"a", b"c")], [(b"m", b"")]),  # finished before it: untouched
])
def test_subtract(lo, hi, finished, pieces):
    assert subtract(lo, hi, merge_ranges(finished)) == pieces


def test_a_resume_on_unchanged_regions_skips_exactly_the_finished_partitions():
    plan = plan_partitions(regions(b"", b"g", b"p", b""), SCOPE)
    resumed = resume_plan(plan, [done(b"", b"g"), done(b"p", b"")], "t", FP)
    assert [(p.start_row, p.stop_row, p.partition_id, p.index) for p in resumed.todo] == [
        (b"g", b"p", plan[1].partition_id, 0)]
    assert (resumed.skipped, resumed.trimmed, resumed.finished) == (2, 0, 2)


def test_after_a_split_the_finished_halves_are_skipped_and_nothing_is_read_twice():
    # first attempt: regions [,g) [g,p) [p,); [g,p) finished; then [g,p) split at k and [p,) at t
    first = plan_partitions(regions(b"", b"g", b"p", b""), SCOPE)
    finished = [done(first[1].start_row, first[1].stop_row)]
    plan = plan_partitions(regions(b"", b"g", b"k", b"p", b"t", b""), SCOPE)
    resumed = resume_plan(plan, finished, "t", FP)
    assert [(p.start_row, p.stop_row) for p in resumed.todo] == [(b"", b"g"), (b"p", b"t"), (b"t", b"")]
    assert (resumed.skipped, resumed.trimmed, resumed.finished) == (2, 0, 1)


def test_after_a_merge_only_the_unfinished_piece_of_the_merged_region_is_copied():
    # [a,g) finished; [a,g) and [g,p) merged into [a,p): only [g,p) is left, under its own id
    plan = plan_partitions(regions(b"", b"a", b"p", b""), SCOPE)
    resumed = resume_plan(plan, [done(b"a", b"g")], "t", FP)
    assert [(p.start_row, p.stop_row, p.partition_id, p.est_rows) for p in resumed.todo] == [
        (b"", b"a", plan[0].partition_id, None),
        (b"g", b"p", partition_id("t", b"g", b"p", FP), None),
        (b"p", b"", plan[2].partition_id, None)]
    assert [p.index for p in resumed.todo] == [0, 1, 2]
    assert (resumed.skipped, resumed.trimmed, resumed.finished) == (0, 1, 1)


def test_ranges_of_another_scope_do_not_count():
    other = TableScope(table="t", start_time_ms=0, end_time_ms=1000).fingerprint()
    plan = plan_partitions(regions(b"", b""), SCOPE)
    resumed = resume_plan(plan, [FinishedRange("x", b"", b"", other)], "t", FP)
    assert [(p.start_row, p.stop_row) for p in resumed.todo] == [(b"", b"")]
    assert resumed.finished == 0


def test_records_without_a_fingerprint_count_when_their_id_proves_the_scope():
    """Ledger rows of schema < 5 and older savepoints keep no fingerprint: their id decides, as before."""
    legacy = FinishedRange(partition_id("t", b"a", b"b", FP), b"a", b"b", None)
    foreign = FinishedRange(partition_id("t", b"b", b"c", "0" * 16), b"b", b"c", None)
    assert relevant([legacy, foreign], "t", FP) == [legacy]
