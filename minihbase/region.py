"""One region's data: multi-version cells with HBase's put/delete semantics, reads, store files.

Semantics kept from HBase (they decide whether the toolkit's copies are correct):
- a put of the same (row, column, timestamp) replaces the value;
- delete markers stay (as in HBase until a major compaction drops them): a DeleteColumn/DeleteFamily at T masks
  every put with ts <= T, including puts that arrive later; a Delete masks one exact version;
- reads return the newest versions up to the family's VERSIONS, and hide TTL-expired cells.

Because markers are permanent, a masked put can never be seen again and is dropped when it is masked; versions
beyond VERSIONS are dropped at write time (HBase drops them at flush). Both keep memory bounded.

Rows live in a dict; their keys in a sorted list (new keys beyond the end are appended, others wait in a small
pending set merged on the next ordered read), so scans bisect instead of sorting. The invariant: the sorted list
plus the pending set hold every key of `rows` exactly once, and nothing else. A key enters them when its row enters
`rows` (`_add_key`), so a key whose row holds only delete markers must not be in them: a later put re-creates the
row and adds the key again, and a scan would return that row twice (issue 31).
"""
from __future__ import annotations

import bisect
import marshal
import threading
import time
import uuid
from typing import Iterable

from minihbase.cells import (
    DELETE,
    DELETE_COLUMN,
    DELETE_FAMILY,
    DELETE_FAMILY_VERSION,
    PUT,
    Cell,
)
from minihbase.errors import RegionReadOnly
from minihbase.filters import INCLUDE, NEXT_COL, NEXT_ROW, Filter
from minihbase.schema import FOREVER, RegionInfo, TableDescriptor

# Store files are private to minihbase (nothing else reads them): `MINIHF02` + marshal of
# (max sequence id, [(row, family, qualifier, ts, type, value), ...]), written and read at C speed.
STORE_MAGIC = b"MINIHF02"


class ColumnSelector:
    """Which columns a read wants: whole families and/or exact `family:qualifier` columns; None = all."""

    __slots__ = ("families", "columns", "all")

    def __init__(self, families: Iterable[bytes] = (), columns: Iterable[bytes] = ()):
        self.families = frozenset(families)
        self.columns = frozenset(columns)
        self.all = not self.families and not self.columns

    def wants(self, colkey: bytes, family: bytes) -> bool:
        return self.all or family in self.families or colkey in self.columns

    def referenced_families(self) -> set[bytes]:
        return set(self.families) | {c.partition(b":")[0] for c in self.columns}


ALL_COLUMNS = ColumnSelector()


class _Markers:
    __slots__ = ("family", "column", "version", "family_version")

    def __init__(self):
        self.family: dict[bytes, int] = {}
        self.column: dict[bytes, int] = {}
        self.version: set[tuple[bytes, int]] = set()
        self.family_version: set[tuple[bytes, int]] = set()

    def masks(self, family: bytes, colkey: bytes, ts: int) -> bool:
        return (self.family.get(family, -1) >= ts or self.column.get(colkey, -1) >= ts
                or (colkey, ts) in self.version or (family, ts) in self.family_version)


def _order(colkey: bytes) -> tuple[bytes, bytes]:
    family, _, qualifier = colkey.partition(b":")
    return family, qualifier


def store_file_bytes(cells: Iterable[tuple], max_seq: int) -> bytes:
    return STORE_MAGIC + marshal.dumps((max_seq, [tuple(c) for c in cells]))


def parse_store_file(data: bytes) -> tuple[int, list[tuple]]:
    if not data.startswith(STORE_MAGIC):
        raise ValueError("not a minihbase store file (bad magic)")
    max_seq, cells = marshal.loads(data[len(STORE_MAGIC):])
    return max_seq, cells


class Region:
    def __init__(self, info: RegionInfo, table: TableDescriptor):
        self.info = info
        self.table = table
        self.rows: dict[bytes, dict[bytes, list[tuple[int, bytes]]]] = {}
        self._keys: list[bytes] = []
        self._pending: set[bytes] = set()
        self.markers: dict[bytes, _Markers] = {}
        self.memstore: list[Cell] = []
        self.memstore_size = 0
        self.data_size = 0
        self.max_seq = 0
        self.flushed_seq = 0
        self.lock = threading.RLock()
        self.server = None  # the RegionServer hosting it, None while offline
        self.read_requests = 0
        self.write_requests = 0

    # ------------------------------------------------------------------------------------------ identity
    @property
    def encoded_name(self) -> str:
        return self.info.encoded_name

    def __repr__(self) -> str:
        return f"<Region {self.info.region_name.decode('latin-1')}>"

    @property
    def row_count(self) -> int:
        return sum(1 for cols in self.rows.values() if cols)

    def check_read_only(self) -> None:
        """`HRegion.checkReadOnly()`: every mutation (put, delete, increment, append, checkAndMutate, batch) of a
        region of a READONLY table is refused before anything is logged; reads go on."""
        if self.table.readonly:
            raise RegionReadOnly()

    # ------------------------------------------------------------------------------------------ writes
    def apply(self, cells: Iterable[Cell], seq: int, log: bool = True) -> None:
        """Apply already-logged cells (timestamps resolved). `log=False` when loading store files."""
        apply_cell = self._apply_cell
        if log:
            memstore = self.memstore
            size = 0
            for cell in cells:
                apply_cell(cell)
                memstore.append(cell)
                size += len(cell[0]) + len(cell[1]) + len(cell[2]) + len(cell[5]) + 24
            self.memstore_size += size
        else:
            for cell in cells:
                apply_cell(cell)
        if seq > self.max_seq:
            self.max_seq = seq

    def _apply_cell(self, cell: Cell) -> None:
        row, family, qualifier, ts, typ, value = cell
        if typ == PUT:
            colkey = family + b":" + qualifier
            markers = self.markers.get(row)
            if markers is not None and markers.masks(family, colkey, ts):
                return
            cols = self.rows.get(row)
            if cols is None:
                cols = self.rows[row] = {}
                self._add_key(row)
            versions = cols.get(colkey)
            if versions is None:
                cols[colkey] = [(ts, value)]
            else:
                self._insert_version(versions, ts, value, self.table.families[family].max_versions)
            self.data_size += len(row) + len(colkey) + len(value) + 16
            return
        markers = self.markers.get(row)
        if markers is None:
            markers = self.markers[row] = _Markers()
        cols = self.rows.get(row)
        if typ == DELETE_FAMILY or typ == DELETE_FAMILY_VERSION:
            if typ == DELETE_FAMILY:
                if markers.family.get(family, -1) < ts:
                    markers.family[family] = ts
            else:
                markers.family_version.add((family, ts))
            if cols:
                prefix = family + b":"
                for colkey in [c for c in cols if c.startswith(prefix)]:
                    keep = [v for v in cols[colkey] if (v[0] > ts if typ == DELETE_FAMILY else v[0] != ts)]
                    if keep:
                        cols[colkey] = keep
                    else:
                        del cols[colkey]
            return
        colkey = family + b":" + qualifier
        if typ == DELETE_COLUMN:
            if markers.column.get(colkey, -1) < ts:
                markers.column[colkey] = ts
            if cols and colkey in cols:
                keep = [v for v in cols[colkey] if v[0] > ts]
                if keep:
                    cols[colkey] = keep
                else:
                    del cols[colkey]
        elif typ == DELETE:
            markers.version.add((colkey, ts))
            if cols and colkey in cols:
                keep = [v for v in cols[colkey] if v[0] != ts]
                if keep:
                    cols[colkey] = keep
                else:
                    del cols[colkey]

    @staticmethod
    def _insert_version(versions: list, ts: int, value: bytes, max_versions: int) -> None:
        if ts > versions[0][0]:
            versions.insert(0, (ts, value))
        else:
            for i, (vts, _) in enumerate(versions):
                if vts == ts:
                    versions[i] = (ts, value)
                    return
                if vts < ts:
                    versions.insert(i, (ts, value))
                    break
            else:
                versions.append((ts, value))
        if len(versions) > max_versions:
            del versions[max_versions:]

    def _add_key(self, row: bytes) -> None:
        keys = self._keys
        if not keys or row > keys[-1]:
            if not self._pending:
                keys.append(row)
                return
        self._pending.add(row)

    def sorted_keys(self) -> list[bytes]:
        if self._pending:
            merged = self._keys + sorted(self._pending)
            merged.sort()  # two sorted runs: timsort merges them in linear time
            self._keys = merged
            self._pending = set()
        return self._keys

    # ------------------------------------------------------------------------------------------ reads
    def newest(self, row: bytes, colkey: bytes, now_ms: int) -> tuple[int, bytes] | None:
        cols = self.rows.get(row)
        if not cols or colkey not in cols:
            return None
        ttl = self.table.families[colkey.partition(b":")[0]].ttl_s
        ts, value = cols[colkey][0]
        if ttl < FOREVER and ts < now_ms - ttl * 1000:
            return None
        return ts, value

    def read_row(self, row: bytes, selector: ColumnSelector, time_max: int | None, versions: int,
                 now_ms: int, flt: Filter | None = None, time_min: int | None = None
                 ) -> list[tuple[bytes, int, bytes]]:
        """The row's cells as (family:qualifier, ts, value), ordered by family, qualifier, newest first: up to
        `versions` per column inside the time range [`time_min`, `time_max`) (None: unbounded; Thrift1's `*Ts`
        reads are `[0, ts)`), TTL-expired versions hidden."""
        cols = self.rows.get(row)
        if not cols:
            return []
        out = []
        keys = sorted(cols, key=_order) if len(cols) > 1 else list(cols)
        fams = self.table.families
        for colkey in keys:
            family = colkey.partition(b":")[0]
            if not selector.all and not selector.wants(colkey, family):
                continue
            ttl = fams[family].ttl_s
            min_ts = now_ms - ttl * 1000 if ttl < FOREVER else -1
            if time_min is not None and time_min > min_ts:
                min_ts = time_min  # versions are newest first: the first one below the range ends the column
            taken = 0
            next_row = False
            for ts, value in cols[colkey]:
                if time_max is not None and ts >= time_max:
                    continue
                if ts < min_ts:
                    break
                if flt is not None:
                    cell = Cell(row, family, colkey[len(family) + 1:], ts, PUT, value)
                    code = flt.filter_cell(cell)
                    if code != INCLUDE:
                        if code == NEXT_COL:
                            break
                        if code == NEXT_ROW:
                            next_row = True
                            break
                        continue
                    cell = flt.transform_cell(cell)
                    value = cell.value
                out.append((colkey, ts, value))
                taken += 1
                if taken >= versions:
                    break
            if next_row:
                break
        return out

    def raw_keys(self, start: bytes, stop: bytes) -> list[bytes]:
        """A raw scan's keys in [start, stop) (b"" = no stop): rows with cells and rows that hold only delete
        markers (those are not in the ordered index)."""
        keys = set(self.rows) | set(self.markers)
        return sorted(k for k in keys if k >= start and (not stop or k < stop))

    def raw_row(self, row: bytes, selector: ColumnSelector, time_min: int | None, time_max: int | None,
                versions: int, now_ms: int) -> list[tuple[bytes, int, int, bytes]]:
        """A raw read of one row (HBase's `Scan.setRaw(true)`): its delete markers and its puts in [time_min,
        time_max), as (family:qualifier, ts, type, value) in HBase's cell order (family, qualifier, newest first,
        then DeleteFamily, DeleteColumn, DeleteFamilyVersion, Delete before a Put of the same timestamp); up to
        `versions` puts per column. What minihbase keeps, not every marker HBase would show: of the DeleteFamily
        and DeleteColumn markers of a family or column only the newest (the one that masks), and no put that a
        marker masks (dropped when masked); a major compaction drops the markers, as HBase's does."""
        lo = -1 if time_min is None else time_min
        out: list[tuple[tuple, tuple[bytes, int, int, bytes]]] = []

        def add(family: bytes, qualifier: bytes, ts: int, typ: int, value: bytes = b"") -> None:
            colkey = family + b":" + qualifier
            if ts < lo or (time_max is not None and ts >= time_max):
                return
            if not selector.all and not selector.wants(colkey, family):
                return
            out.append(((family, qualifier, -ts, -typ), (colkey, ts, typ, value)))

        m = self.markers.get(row)
        if m is not None:
            for family, ts in m.family.items():
                add(family, b"", ts, DELETE_FAMILY)
            for family, ts in m.family_version:
                add(family, b"", ts, DELETE_FAMILY_VERSION)
            for colkey, ts in m.column.items():
                family, _, qualifier = colkey.partition(b":")
                add(family, qualifier, ts, DELETE_COLUMN)
            for colkey, ts in m.version:
                family, _, qualifier = colkey.partition(b":")
                add(family, qualifier, ts, DELETE)
        for colkey, ts, value in self.read_row(row, selector, time_max, versions, now_ms, None, time_min):
            family, _, qualifier = colkey.partition(b":")
            add(family, qualifier, ts, PUT, value)
        out.sort(key=lambda item: item[0])
        return [cell for _key, cell in out]

    def scan_chunk(self, position: bytes | None, inclusive: bool, stop: bytes, reversed_: bool, limit: int,
                   selector: ColumnSelector, time_max: int | None, now_ms: int, flt: Filter | None,
                   max_examined: int = 20000, versions: int = 1, time_min: int | None = None):
        """Up to `limit` rows of this region from `position` (None: from the region's edge in scan order;
        `inclusive` says whether `position` itself may be returned) until `stop` (exclusive; b"" = no stop);
        each row's cells as `read_row` gives them (`versions` per column in [`time_min`, `time_max`)).

        Returns (rows, last_key_examined, exhausted, done): `exhausted` when this region has no more keys in
        range, `done` when the filter ends the scan in this region. Examines at most `max_examined` keys so a
        sparse filter cannot hold the region lock for long."""
        keys = self.sorted_keys()
        out = []
        last = None
        examined = 0
        if not reversed_:
            if position is None:
                i = 0
            else:
                i = bisect.bisect_left(keys, position) if inclusive else bisect.bisect_right(keys, position)
            n = len(keys)
            while i < n:
                key = keys[i]
                if stop and key >= stop:
                    return out, last, True, False
                i += 1
                last = key
                examined += 1
                row = self._scan_row(key, selector, time_max, now_ms, flt, versions, time_min)
                if row is False:
                    return out, last, True, True
                if row:
                    out.append((key, row))
                    if len(out) >= limit:
                        return out, last, i >= n, False
                if examined >= max_examined:
                    return out, last, False, False
            return out, last, True, False
        if position is None:
            i = len(keys) - 1
        else:
            i = (bisect.bisect_right(keys, position) if inclusive else bisect.bisect_left(keys, position)) - 1
        while i >= 0:
            key = keys[i]
            if stop and key <= stop:
                return out, last, True, False
            i -= 1
            last = key
            examined += 1
            row = self._scan_row(key, selector, time_max, now_ms, flt, versions, time_min)
            if row is False:
                return out, last, True, True
            if row:
                out.append((key, row))
                if len(out) >= limit:
                    return out, last, i < 0, False
            if examined >= max_examined:
                return out, last, False, False
        return out, last, True, False

    def _scan_row(self, key, selector, time_max, now_ms, flt, versions=1, time_min=None):
        """The row's cells, [] to skip it, False when the filter ends the scan."""
        if flt is None:
            return self.read_row(key, selector, time_max, versions, now_ms, None, time_min)
        if flt.filter_all_remaining():
            return False
        flt.reset()
        if flt.filter_row_key(key):
            return False if flt.filter_all_remaining() else []
        cells = self.read_row(key, selector, time_max, versions, now_ms, flt, time_min)
        if flt.filter_row() or not cells:
            return False if flt.filter_all_remaining() else []
        flt.row_done()
        return cells

    # ------------------------------------------------------------------------------------------ persistence
    def take_flush_snapshot(self) -> tuple[list[Cell], int]:
        """Hand over the memstore for a flush; call under `lock`."""
        cells, self.memstore = self.memstore, []
        self.memstore_size = 0
        return cells, self.max_seq

    def restore_flush_snapshot(self, cells: list[Cell]) -> None:
        """A flush failed: its cells go back in front of anything logged since."""
        self.memstore = cells + self.memstore
        self.memstore_size = sum(len(c[0]) + len(c[1]) + len(c[2]) + len(c[5]) + 24 for c in self.memstore)

    def snapshot_by_family(self) -> dict[bytes, list[tuple]]:
        """Every live version and every delete marker as cell tuples per family, in no particular order (what
        major-compacted store files hold, minus the markers HBase would drop)."""
        out: dict[bytes, list[tuple]] = {f: [] for f in self.table.families}
        for row, m in self.markers.items():
            for fam, ts in m.family.items():
                out[fam].append((row, fam, b"", ts, DELETE_FAMILY, b""))
            for colkey, ts in m.column.items():
                fam, _, qual = colkey.partition(b":")
                out[fam].append((row, fam, qual, ts, DELETE_COLUMN, b""))
            for colkey, ts in m.version:
                fam, _, qual = colkey.partition(b":")
                out[fam].append((row, fam, qual, ts, DELETE, b""))
            for fam, ts in m.family_version:
                out[fam].append((row, fam, b"", ts, DELETE_FAMILY_VERSION, b""))
        for row, cols in self.rows.items():
            for colkey, versions in cols.items():
                fam, _, qual = colkey.partition(b":")
                append = out[fam].append
                for ts, value in versions:
                    append((row, fam, qual, ts, PUT, value))
        return out

    def drop_delete_markers(self, family: bytes) -> int:
        """What a major compaction does to a family: its delete markers go (the cells they masked are already
        gone), so a put older than a former marker is visible again, as in HBase. Returns the count dropped."""
        dropped = 0
        prefix = family + b":"
        for row in list(self.markers):
            m = self.markers[row]
            dropped += m.family.pop(family, None) is not None
            for colkey in [c for c in m.column if c.startswith(prefix)]:
                del m.column[colkey]
                dropped += 1
            versions = {v for v in m.version if v[0].startswith(prefix)}
            family_versions = {v for v in m.family_version if v[0] == family}
            m.version -= versions
            m.family_version -= family_versions
            dropped += len(versions) + len(family_versions)
            if not (m.family or m.column or m.version or m.family_version):
                del self.markers[row]
        return dropped

    def compact_in_memory(self) -> None:
        """Drop rows that hold nothing (all deleted) and recount the data size. Their keys leave the ordered index
        with them (their markers stay in `markers`, which reads consult by key): a put that brings such a row back
        adds its key again."""
        empty = [k for k, cols in self.rows.items() if not cols]
        for k in empty:
            del self.rows[k]
        self._keys = sorted(self.rows)
        self._pending = set()
        self.data_size = sum(len(r) + sum(len(c) + sum(len(v) + 16 for _, v in vs) for c, vs in cols.items())
                             for r, cols in self.rows.items())

    def split_point(self) -> bytes | None:
        keys = self.sorted_keys()
        if len(keys) < 2:
            return None
        mid = keys[len(keys) // 2]
        return mid if mid != self.info.start_key else None

    def split_into(self, left: "Region", right: "Region", mid: bytes) -> None:
        """Move this region's rows and markers into two daughters (call with this region's lock held). The markers
        go by key, not through the ordered index: a row that holds only markers (deleted before any of its cells
        reached this region) is not in the index, and its markers must still mask older puts in its daughter."""
        keys = self.sorted_keys()
        cut = bisect.bisect_left(keys, mid)
        rows, markers = self.rows, self.markers
        left.markers, right.markers = {}, {}
        for k, m in markers.items():
            (left if k < mid else right).markers[k] = m
        for daughter, part in ((left, keys[:cut]), (right, keys[cut:])):
            daughter.rows = {k: rows[k] for k in part}
            daughter._keys = list(part)
            daughter._pending = set()
            daughter.max_seq = daughter.flushed_seq = self.max_seq
            daughter.data_size = self.data_size * len(part) // max(len(keys), 1)


def new_store_file_name() -> str:
    return uuid.uuid4().hex


def now_ms() -> int:
    return int(time.time() * 1000)
