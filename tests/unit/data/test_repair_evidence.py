"""Issue 31, pure: a repair's diagnosis is read, not guessed (the raw scans that show a row's delete markers, what
hides a put, exactly), and a side whose scan lists a row twice stops the comparison instead of reading as
differences."""
from __future__ import annotations

import pytest

from hbase_migration.data import markers
from hbase_migration.data.rowdiff import MATCHING, ScanOrderError, compare_sides

LONG_MAX = 9223372036854775807


def test_statements_ask_per_timestamp_at_or_after_then_exactly():
    rows = {b"r\x01": [(b"d:a", 20), (b"d:b", 20), (b"h:a", 10)], b"a": [(b"d:a", 5)]}
    assert markers.marker_statements("ns:t", rows) == [
        f'scan "ns:t", {{STARTROW => "a", STOPROW => "a\\x00", RAW => true, VERSIONS => 2147483647, '
        f'TIMERANGE => [5, {LONG_MAX}]}}',
        'scan "ns:t", {STARTROW => "a", STOPROW => "a\\x00", RAW => true, VERSIONS => 2147483647, '
        'TIMERANGE => [5, 6]}',
        f'scan "ns:t", {{STARTROW => "r\\x01", STOPROW => "r\\x01\\x00", RAW => true, VERSIONS => 2147483647, '
        f'TIMERANGE => [10, {LONG_MAX}]}}',
        'scan "ns:t", {STARTROW => "r\\x01", STOPROW => "r\\x01\\x00", RAW => true, VERSIONS => 2147483647, '
        'TIMERANGE => [10, 11]}',
        f'scan "ns:t", {{STARTROW => "r\\x01", STOPROW => "r\\x01\\x00", RAW => true, VERSIONS => 2147483647, '
        f'TIMERANGE => [20, {LONG_MAX}]}}',
        'scan "ns:t", {STARTROW => "r\\x01", STOPROW => "r\\x01\\x00", RAW => true, VERSIONS => 2147483647, '
        'TIMERANGE => [20, 21]}',
    ]


# What HBase 2.4+'s shell prints (hbase/table.rb Table#to_string: CellUtil.isDelete -> `type=`), stdout not a tty.
SHELL_OUTPUT = """\
ROW  COLUMN+CELL
 r\\x01 column=d:, timestamp=2026-11-26T10:00:00.123, type=DeleteFamily
 r\\x01 column=d:a, timestamp=2026-11-26T10:00:01, value=type=DeleteColumn
 r\\x01 column=h:a, timestamp=2026-11-26T10:00, type=DeleteColumn
1 row(s)
Took 0.0110 seconds
ROW  COLUMN+CELL
 r\\x01 column=h:b, timestamp=2026-11-26T10:00, type=Delete
1 row(s)
Took 0.0040 seconds
ROW  COLUMN+CELL
0 row(s)
Took 0.0020 seconds
ROW  COLUMN+CELL
 r\\x01 column=h:, timestamp=2026-11-26T09:00, type=DeleteFamilyVersion
1 row(s)
"""


def test_the_shells_raw_scans_are_read_marker_by_marker_puts_left_out():
    sections = markers.parse_raw_scans(SHELL_OUTPUT, 4)
    assert sections == [
        [(b"r\\x01", "d:", "DeleteFamily"), (b"r\\x01", "h:a", "DeleteColumn")],
        [(b"r\\x01", "h:b", "Delete")],
        [],
        [(b"r\\x01", "h:", "DeleteFamilyVersion")],
    ]
    with pytest.raises(ValueError, match="expected the output of 5 raw scan"):
        markers.parse_raw_scans(SHELL_OUTPUT, 5)


def test_what_hides_a_put_is_hbases_rule_exactly():
    row = b"r\x01"
    after, at, nothing = markers.parse_raw_scans(SHELL_OUTPUT, 4)[:3]
    # DeleteFamily d at or after T hides every column of d; DeleteColumn h:a hides h:a only.
    assert markers.markers_hiding(b"d:a", after, nothing, row) == ["DeleteFamily d:"]
    assert markers.markers_hiding(b"d:zz", after, nothing, row) == ["DeleteFamily d:"]
    assert markers.markers_hiding(b"h:a", after, nothing, row) == ["DeleteColumn h:a"]
    # A Delete (one version) hides only when it is at exactly T: found by the [T, T+1) scan, not the [T, MAX) one.
    assert markers.markers_hiding(b"h:b", after, at, row) == ["Delete h:b"]
    assert markers.markers_hiding(b"h:b", at, nothing, row) == []
    # Nothing for h:c; another row's markers never count.
    assert markers.markers_hiding(b"h:c", after, at, row) == []
    assert markers.markers_hiding(b"d:a", after, at, b"other") == []


def test_classify_maps_every_cell_of_every_row_to_its_hiding_markers():
    """Scans in `marker_statements` order: ts 20 [20, MAX) and [20, 21), then ts 30 [30, MAX) and [30, 31)."""
    rows = {b"r\x01": [(b"d:a", 20), (b"h:b", 20), (b"h:c", 30), (b"d:b", 30)]}
    found = markers.classify(rows, SHELL_OUTPUT)
    assert found == {b"r\x01": {(b"d:a", 20): ["DeleteFamily d:"], (b"h:b", 20): ["Delete h:b"],
                                (b"h:c", 30): ["DeleteFamilyVersion h:"], (b"d:b", 30): []}}
    # Two requests read by one shell run: the scans in order, the first request's ts 20 then the second's ts 30.
    first, second = {b"r\x01": [(b"d:a", 20), (b"h:b", 20)]}, {b"r\x01": [(b"h:c", 30), (b"d:b", 30)]}
    assert markers.classify_many([first, second], SHELL_OUTPUT) == [
        {b"r\x01": {(b"d:a", 20): ["DeleteFamily d:"], (b"h:b", 20): ["Delete h:b"]}},
        {b"r\x01": {(b"h:c", 30): ["DeleteFamilyVersion h:"], (b"d:b", 30): []}}]
    with pytest.raises(ValueError, match="expected the output of 6 raw scan"):
        markers.classify_many([first, second, {b"x": [(b"d:a", 1)]}], SHELL_OUTPUT)


def _cells(*cols):
    return [(c, ts, b"v") for c, ts in cols]


def test_a_wide_row_in_pieces_is_one_row():
    src = [(b"r", _cells((b"d:a", 3), (b"d:a", 2))), (b"r", _cells((b"d:b", 3))), (b"s", _cells((b"d:a", 1)))]
    tgt = [(b"r", _cells((b"d:a", 3))), (b"r", _cells((b"d:a", 2), (b"d:b", 3))), (b"s", _cells((b"d:a", 1)))]
    assert [(row, status) for row, status, _v, _w in compare_sides(src, tgt)] == [(b"r", MATCHING),
                                                                                   (b"s", MATCHING)]


def test_a_row_listed_twice_stops_the_comparison_naming_the_side_and_the_row():
    """Issue 31's source: the rewritten row came twice; its second copy read as versions missing on the target."""
    row = _cells((b"d:a", 30), (b"d:b", 30), (b"h:a", 30), (b"h:b", 30))
    src = [(b"1d", _cells((b"d:a", 1))), (b"1e-00013438", row), (b"1e-00013438", row), (b"1f", _cells((b"d:a", 1)))]
    tgt = [(b"1d", _cells((b"d:a", 1))), (b"1e-00013438", row), (b"1f", _cells((b"d:a", 1)))]
    with pytest.raises(ScanOrderError, match="the source's scan returned row 1e-00013438 again"):
        list(compare_sides(src, tgt))
    with pytest.raises(ScanOrderError, match="the target's scan returned row 1e-00013438 again"):
        list(compare_sides(tgt, src))


def test_rows_out_of_key_order_stop_the_comparison():
    src = [(b"b", _cells((b"d:a", 1))), (b"a", _cells((b"d:a", 1)))]
    with pytest.raises(ScanOrderError, match="returned row a after b"):
        list(compare_sides(src, src[:1]))


def test_raw_cells_keep_puts_by_their_value_and_markers_by_their_type():
    out = ("ROW  COLUMN+CELL\n"
           " r column=d:a, timestamp=2026-11-26T10:00:02, value=type=Delete\n"
           " r column=d:a, timestamp=2026-11-26T10:00:01, type=Delete\n"
           " r column=d:a, timestamp=2026-11-26T10:00:00, value=x\n"
           "1 row(s)\n")
    assert markers.parse_raw_cells(out, 1) == [[(b"r", "d:a", "Put"), (b"r", "d:a", "Delete"), (b"r", "d:a", "Put")]]


def test_a_newer_history_is_one_columns_raw_scan_after_the_version():
    assert markers.newer_history_statement("t", b"r", b"d:a", 100) == (
        f'scan "t", {{STARTROW => "r", STOPROW => "r\\x00", RAW => true, VERSIONS => 2147483647, '
        f'COLUMNS => ["d"], TIMERANGE => [101, {LONG_MAX}]}}')


@pytest.mark.parametrize("newer, max_versions, shown_again", [
    # three newer puts then one of them deleted: a family keeping 3 had hidden it, the delete shows it again
    (["Put", "Put", "Put", "Delete"], 3, True),
    # a flush dropped the deleted put; its Delete marker still says it was there
    (["Put", "Put", "Delete"], 3, True),
    (["Put", "Delete"], 2, True),
    # never pushed out: fewer newer versions than the family keeps
    (["Put", "Delete"], 3, False),
    # pushed out but nothing deleted: it cannot show again (a lost edit would look like this; not explained)
    (["Put", "Put", "Put"], 3, False),
    # a column delete hides every version; it shows nothing again
    (["Put", "Put", "Put", "DeleteColumn"], 3, False),
    ([], 1, False),
])
def test_a_version_shown_again_by_retention_is_told_from_the_cells_newer_than_it(newer, max_versions, shown_again):
    cells = [(b"r", "d:a", kind) for kind in newer] + [(b"r", "d:b", "Delete"), (b"r", "d:b", "Put")]  # another column
    assert markers.shown_again_by_retention(cells, b"d:a", max_versions) is shown_again
