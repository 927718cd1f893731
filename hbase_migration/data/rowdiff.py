"""Two sides' rows compared as they stream: VerifyReplication's merge-join by row key, every version of every cell.

As HBase's `VerifyReplication` (`Result.compareResults`: each cell's row, family, qualifier, timestamp, type and
value): rows are joined by key into matching, content different, only in the source, only in the target. The
cells are compared themselves, not hashes of them: both sides pass through the same task anyway, and comparing
cells costs less than hashing them, can never collide, and names the differing versions at once. (HBase's
HashTable/SyncTable hash because the two sides are read on different clusters; a verify task reads both.)

Rows arrive as pieces: `(row, cells)`, cells in HBase's order (`scope.cell_order`); a row wider than a scan's
batch comes as consecutive pieces with the same key. Equal rows cut into pieces at the same places (the same
cells, the same batch), so a row matches when its pieces are equal one by one: a list comparison, no Python
per cell. Only where pieces differ is the rest of the row merged cell by cell, still streaming, so memory holds
a piece per side, never a row. Every cell a Thrift scan returns is a Put (a scan does not return delete
markers), so the type of each cell is the same on both sides by construction.

A side whose scan gives a row's cells again (a piece of the row whose first cell does not come after the previous
piece's last, in HBase's order) or rows out of key order has not been read right: the comparison stops there with
`ScanOrderError`, naming the side and the row, instead of reporting the repeated cells as differences (issue 31:
a source that listed rows twice read as versions `missing_on_target`, and a repair "explained" them).

Pure: no I/O.
"""
from __future__ import annotations

from itertools import groupby
from typing import Iterable, Iterator, Sequence

from hbase_migration.data.scope import Cell, Row, cell_order, to_string_binary

MATCHING = "matching"
CONTENT_DIFFERENT = "content_different"
ONLY_IN_SOURCE = "only_in_source"
ONLY_IN_TARGET = "only_in_target"
DIFFERENT = (CONTENT_DIFFERENT, ONLY_IN_SOURCE, ONLY_IN_TARGET)

MISSING_ON_TARGET, ONLY_ON_TARGET, VALUE_DIFFERS = "missing_on_target", "only_on_target", "value_differs"
VERSIONS_PER_ROW = 10  # differing versions named per row (all of them are compared)


class ScanOrderError(RuntimeError):
    """A side's scan did not come in HBase's order: a row again after its cells had passed (listed twice), or a
    row key lower than the previous one. Nothing read after it can be compared, or repaired."""


class _Side:
    """One side's pieces, the current one at hand. `cells` counts every cell read; `wide` says whether the row
    just passed came in more than one piece."""

    __slots__ = ("_next", "name", "row", "piece", "cells", "wide")

    def __init__(self, pieces: Iterable[Row], name: str = "source"):
        self._next = iter(pieces).__next__
        self.name = name
        self.cells = 0
        self.wide = False
        self.row: bytes | None = None
        self.piece: Sequence[Cell] = ()
        self.advance()

    def advance(self) -> None:
        try:
            row, piece = self._next()
        except StopIteration:
            self.row, self.piece = None, ()
            return
        if row == self.row:
            # The next piece of a wide row continues where the last one stopped; anything else is the row again.
            if piece and self.piece and cell_order(piece[0]) <= cell_order(self.piece[-1]):
                raise ScanOrderError(
                    f"the {self.name}'s scan returned row {to_string_binary(row)} again after its cells had passed "
                    f"(the row listed twice, or its cells out of HBase's order): that cluster served a wrong scan, "
                    f"so the row cannot be compared or repaired; read it with a Get and a raw scan in its shell")
            self.wide = True
        elif self.row is not None and row is not None and row < self.row:
            raise ScanOrderError(
                f"the {self.name}'s scan returned row {to_string_binary(row)} after {to_string_binary(self.row)} "
                f"(rows out of key order): that cluster served a wrong scan")
        self.row, self.piece = row, piece
        self.cells += len(piece)

    def start_row(self) -> None:
        self.wide = False

    def row_cells(self, row: bytes) -> Iterator[Cell]:
        """The cells of `row` from the current piece on (its pieces consumed as they are read)."""
        while self.row == row:
            yield from self.piece
            self.advance()


def cell_differences(source: Iterable[Cell], target: Iterable[Cell],
                     limit: int = VERSIONS_PER_ROW) -> tuple[bool, tuple[tuple[bytes, int, str], ...]]:
    """Merge two rows' cells (each in HBase's order) cell by cell: (equal, the first `limit` differing versions as
    (column, timestamp, kind)). Reads both to the end, keeping nothing but those versions.

    kind: `missing_on_target` (a source version the target lacks), `only_on_target`, `value_differs` (same
    column and timestamp, another value)."""
    out: list[tuple[bytes, int, str]] = []
    equal = True
    s_it, t_it = iter(source), iter(target)
    a, b = next(s_it, None), next(t_it, None)
    ka = cell_order(a) if a is not None else None
    kb = cell_order(b) if b is not None else None
    while a is not None or b is not None:
        if b is None or (a is not None and ka < kb):
            cell, kind = a, MISSING_ON_TARGET
            a = next(s_it, None)
            ka = cell_order(a) if a is not None else None
        elif a is None or kb < ka:
            cell, kind = b, ONLY_ON_TARGET
            b = next(t_it, None)
            kb = cell_order(b) if b is not None else None
        else:
            cell, kind = a, (None if a[2] == b[2] else VALUE_DIFFERS)
            a, b = next(s_it, None), next(t_it, None)
            ka = cell_order(a) if a is not None else None
            kb = cell_order(b) if b is not None else None
            if kind is None:
                continue
        equal = False
        if len(out) < limit:
            out.append((cell[0], cell[1], kind))
    return equal, tuple(out)


def version_differences(source_cells: Sequence[Cell], target_cells: Sequence[Cell],
                        limit: int = VERSIONS_PER_ROW) -> tuple[tuple[bytes, int, str], ...]:
    """The versions that differ between two sides of one row: (column, timestamp, kind), at most `limit`, in
    HBase's order."""
    return cell_differences(sorted(source_cells, key=cell_order), sorted(target_cells, key=cell_order), limit)[1]


def compare_sides(source: Iterable[Row], target: Iterable[Row], *, matching: bool = True,
                  stats: dict[str, int] | None = None,
                  limit: int = VERSIONS_PER_ROW) -> Iterator[tuple[bytes, str, tuple, bool]]:
    """(row, status, differing versions, wide) for every row on either side, in key order; `matching=False`
    leaves the matching rows out. `wide`: the row came in more than one piece on a side (fetch it again by
    scanning, not by key). When the streams end, `stats` holds the cells read per side (`source_cells`,
    `target_cells`) and the matching rows (`matching`)."""
    s, t = _Side(source, "source"), _Side(target, "target")
    same = 0
    while s.row is not None or t.row is not None:
        s.start_row()
        t.start_row()
        if t.row is None or (s.row is not None and s.row < t.row):
            row = s.row
            _, versions = cell_differences(s.row_cells(row), (), limit)
            yield row, ONLY_IN_SOURCE, versions, s.wide
            continue
        if s.row is None or t.row < s.row:
            row = t.row
            _, versions = cell_differences((), t.row_cells(row), limit)
            yield row, ONLY_IN_TARGET, versions, t.wide
            continue
        row = s.row
        while s.piece == t.piece:  # equal rows slice alike: compare piece by piece
            s.advance()
            t.advance()
            if s.row != row or t.row != row:
                break
        if s.row == row or t.row == row:
            # The rest differs here (or the two sides were sliced at other places): cell by cell, to the row's end.
            equal, versions = cell_differences(s.row_cells(row), t.row_cells(row), limit)
            if not equal:
                yield row, CONTENT_DIFFERENT, versions, s.wide or t.wide
                continue
        same += 1
        if matching:
            yield row, MATCHING, (), s.wide or t.wide
    if stats is not None:
        stats["source_cells"] = stats.get("source_cells", 0) + s.cells
        stats["target_cells"] = stats.get("target_cells", 0) + t.cells
        stats["matching"] = stats.get("matching", 0) + same


def diff_rows(source: Iterable[Row], target: Iterable[Row]) -> Iterator[tuple[bytes, str, tuple]]:
    """VerifyReplication's merge-join: (row, status, differing versions) for every row on either side, in key
    order. Rows are compared cell by cell, every version and timestamp (`Result.compareResults`); the versions
    that differ are named for every differing row (all of a row's versions when it is on one side only)."""
    for row, status, versions, _wide in compare_sides(source, target):
        yield row, status, versions


def row_status(source_cells: Sequence[Cell] | None, target_cells: Sequence[Cell] | None) -> str | None:
    """The status of one row from both sides' cells (None: absent or empty); None if on neither."""
    if not source_cells and not target_cells:
        return None
    if not target_cells:
        return ONLY_IN_SOURCE
    if not source_cells:
        return ONLY_IN_TARGET
    return MATCHING if tuple(source_cells) == tuple(target_cells) else CONTENT_DIFFERENT


def column_runs(cells: Iterable[Cell]) -> Iterator[tuple[bytes, list[Cell]]]:
    """(column, its versions) of a row's cells in HBase's order, one column at a time."""
    for column, versions in groupby(cells, key=lambda c: c[0]):
        yield column, list(versions)


def column_pairs(source: Iterable[Cell], target: Iterable[Cell]) -> Iterator[tuple[list[Cell], list[Cell]]]:
    """Both sides' versions of each column of one row, column by column in HBase's order ([] where a side lacks
    the column): a row's repair needs a column's versions together (Thrift1's deletes reach every older
    version), never the whole row."""
    s_it, t_it = column_runs(source), column_runs(target)
    a, b = next(s_it, None), next(t_it, None)
    while a is not None or b is not None:
        ka = cell_order(a[1][0])[:2] if a is not None else None
        kb = cell_order(b[1][0])[:2] if b is not None else None
        if b is None or (a is not None and ka < kb):
            yield a[1], []
            a = next(s_it, None)
        elif a is None or kb < ka:
            yield [], b[1]
            b = next(t_it, None)
        else:
            yield a[1], b[1]
            a, b = next(s_it, None), next(t_it, None)
