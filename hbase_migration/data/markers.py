"""Whether delete markers on the target hide cells a repair wrote: read, not guessed (issue 31).

A repair writes the source's cells with their own timestamps. When one is not read back, a delete marker may hide
it (HBase's `ScanDeleteTracker`): a DeleteFamily of its family or a DeleteColumn of its column at a timestamp at
or after the cell's, or a Delete of its column or a DeleteFamilyVersion of its family at exactly the cell's
timestamp (a delete and a put with the same timestamp: the delete wins, whichever came first). Or nothing hides it
and the target serves it wrongly. Only the markers can tell, and neither Thrift API returns them; HBase's shell
does, with a raw scan (`Scan.setRaw(true)`), printing each marker as

     <row> column=<family>:<qualifier>, timestamp=<LocalDateTime>, type=DeleteFamily

The printed timestamp is a date-time in the shell JVM's zone, so it is not parsed: the scans' time ranges ask the
question instead. For a cell at T, one raw scan of its row over [T, Long.MAX_VALUE) finds the markers at or after
T, and one over [T, T+1) those at exactly T. One shell run for every row asked about (a real shell spends 10-30 s
starting its JVM).

The statements and the parsing are pure; `hiding_markers` runs them through the cluster's shell channel.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Mapping, Sequence

from hbase_migration.clusters.shell import ruby_string
from hbase_migration.data.scope import to_string_binary

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

LONG_MAX = (1 << 63) - 1  # HConstants.LATEST_TIMESTAMP: TIMERANGE's open end
ALL_VERSIONS = (1 << 31) - 1
HEADER = "ROW  COLUMN+CELL"  # a scan's header when the shell's stdout is not a terminal
_ROWS = re.compile(r"^\d+ row\(s\)")
AT_OR_AFTER = ("DeleteFamily", "DeleteColumn")  # mask every version with ts <= the marker's
EXACTLY_AT = ("Delete", "DeleteFamilyVersion")  # mask the one version with the marker's ts


def raw_scan_statement(table: str, row: bytes, min_ts: int, max_ts: int) -> str:
    """A raw scan of one row, every version, the cells and markers with `min_ts <= ts < max_ts`."""
    stop = ruby_string(row + b"\x00")  # the row alone: [row, row + 0x00)
    return (f"scan {ruby_string(table)}, {{STARTROW => {ruby_string(row)}, STOPROW => {stop}, RAW => true, "
            f"VERSIONS => {ALL_VERSIONS}, TIMERANGE => [{min_ts}, {max_ts}]}}")


def marker_statements(table: str, rows: Mapping[bytes, Sequence[tuple[bytes, int]]]) -> list[str]:
    """For each row (in key order) and each distinct timestamp of its cells (ascending): the raw scan over
    [ts, Long.MAX_VALUE), then the one over [ts, ts+1)."""
    out = []
    for row in sorted(rows):
        for ts in sorted({ts for _column, ts in rows[row]}):
            out.append(raw_scan_statement(table, row, ts, LONG_MAX))
            out.append(raw_scan_statement(table, row, ts, ts + 1))
    return out


def parse_raw_scans(stdout: str, count: int) -> list[list[tuple[bytes, str, str]]]:
    """The delete markers each of `count` consecutive scans printed, as (row text, column text, type) in the
    shell's `Bytes.toStringBinary` form; puts are left out. Each scan is its header up to its `N row(s)` line."""
    return [[c for c in section if c[2] != "Put"] for section in parse_raw_cells(stdout, count)]


def parse_raw_cells(stdout: str, count: int) -> list[list[tuple[bytes, str, str]]]:
    """Every cell (puts and markers) each of `count` consecutive raw scans printed, as (row text, column text,
    type)."""
    sections: list[list[tuple[bytes, str, str]]] = []
    current: list | None = None
    for line in stdout.splitlines():
        if line.startswith(HEADER):
            current = []
            sections.append(current)
            continue
        if current is None:
            continue
        if _ROWS.match(line):
            current = None
            continue
        head, sep, rest = line.partition(" column=")
        if not sep or not head.startswith(" "):
            continue
        column, sep, tail = rest.partition(", timestamp=")
        _when, sep2, kind = tail.partition(", ")
        if sep and sep2 and kind.startswith("type="):
            current.append((head[1:].encode("latin-1"), column, kind[len("type="):]))
        elif sep and sep2 and kind.startswith("value="):  # the shell prints a put's value, a marker's type
            current.append((head[1:].encode("latin-1"), column, "Put"))
    if len(sections) != count:
        raise ValueError(f"expected the output of {count} raw scan(s) from the shell, found {len(sections)}")
    return sections


def markers_hiding(column: bytes, at_or_after: Sequence[tuple[bytes, str, str]],
                   exactly_at: Sequence[tuple[bytes, str, str]], row: bytes) -> list[str]:
    """Which of a row's markers hide a put of `column` at T, from the markers of the row's raw scan over
    [T, MAX) (`at_or_after`) and over [T, T+1) (`exactly_at`); each as `Type column` (e.g. `DeleteFamily d:`)."""
    family, _, qualifier = column.partition(b":")
    family_text = to_string_binary(family) + ":"
    column_text = family_text + to_string_binary(qualifier)
    row_text = to_string_binary(row).encode("latin-1")
    found = []
    for printed_row, printed, kind in at_or_after:
        if printed_row == row_text and ((kind == "DeleteFamily" and printed == family_text)
                                        or (kind == "DeleteColumn" and printed == column_text)):
            found.append(f"{kind} {printed}")
    for printed_row, printed, kind in exactly_at:
        if printed_row == row_text and ((kind == "Delete" and printed == column_text)
                                        or (kind == "DeleteFamilyVersion" and printed == family_text)):
            found.append(f"{kind} {printed}")
    return found


def classify(rows: Mapping[bytes, Sequence[tuple[bytes, int]]], stdout: str
             ) -> dict[bytes, dict[tuple[bytes, int], list[str]]]:
    """row -> (column, ts) -> the markers hiding that cell ([] = none), from the output of `marker_statements`."""
    return classify_many([rows], stdout)[0]


def classify_many(requests: Sequence[Mapping[bytes, Sequence[tuple[bytes, int]]]], stdout: str
                  ) -> list[dict[bytes, dict[tuple[bytes, int], list[str]]]]:
    """`classify` of several tables' rows from one shell run of their `marker_statements`, in that order (one
    shell start for all)."""
    orders = [[(row, ts) for row in sorted(rows) for ts in sorted({ts for _c, ts in rows[row]})] for rows in requests]
    sections = iter(parse_raw_scans(stdout, 2 * sum(len(order) for order in orders)))
    out = []
    for rows, order in zip(requests, orders):
        by_key = {key: (next(sections), next(sections)) for key in order}
        out.append({row: {(column, ts): markers_hiding(column, *by_key[(row, ts)], row) for column, ts in cells}
                    for row, cells in rows.items()})
    return out


def hiding_markers(cluster: "Cluster", table: str, rows: Mapping[bytes, Sequence[tuple[bytes, int]]]
                   ) -> dict[bytes, dict[tuple[bytes, int], list[str]]]:
    """Read the markers of `rows` ({row: [(column, ts), ...]}) on `cluster` with one shell run of raw scans and
    say which hide each cell. Raises the shell's error (`ShellCommandError`) or ValueError on output it cannot
    read: the caller then says the markers were not read, never that they hide anything."""
    from hbase_migration.clusters import channels

    statements = marker_statements(table, rows)
    if not statements:
        return {}
    return classify(rows, channels.shell(cluster, statements).stdout)


# HBase's version retention (the HBase book, "Major compactions change query results"): a family keeping N
# versions hides a column's older versions, but a flush or compaction drops them only from the files it writes. A
# Delete of one version (a `Delete` marker at its timestamp) then lets an older version that is still held show
# again, on one cluster and not on the other, whose flushes ran at other moments (or whose copy never read the
# hidden version: a scan returns only the N newest). Neither side is wrong, and no edit was lost.


def newer_history_statement(table: str, row: bytes, column: bytes, ts: int) -> str:
    """A raw scan of one row's family of `column`: every put and marker newer than `ts`. (A raw scan takes no
    qualifier: HBase refuses it with "Cannot specify any column for a raw scan"; the column is picked out after.)"""
    stop = ruby_string(row + b"\x00")
    family = column.partition(b":")[0]
    return (f"scan {ruby_string(table)}, {{STARTROW => {ruby_string(row)}, STOPROW => {stop}, RAW => true, "
            f"VERSIONS => {ALL_VERSIONS}, COLUMNS => [{ruby_string(family)}], TIMERANGE => [{ts + 1}, {LONG_MAX}]}}")


def shown_again_by_retention(newer: Sequence[tuple[bytes, str, str]], column: bytes, max_versions: int) -> bool:
    """Whether a version of `column`, visible on the cluster whose raw scan of its family found `newer` (the cells
    newer than it), had been pushed out of the `max_versions` the family keeps by newer puts and shown again by a
    Delete of a newer version: at least `max_versions` newer versions of the column were written (each newer put,
    and each newer version a `Delete` marker names, was one) and one of them was deleted."""
    family, _, qualifier = column.partition(b":")
    text = to_string_binary(family) + ":" + to_string_binary(qualifier)
    kinds = [kind for _r, printed, kind in newer if printed == text]
    deletes, puts = kinds.count("Delete"), kinds.count("Put")
    return deletes > 0 and puts + deletes >= max_versions
