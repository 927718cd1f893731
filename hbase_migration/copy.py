"""CopyTable over Thrift1: partition planning and timestamp-preserving copies.

The reference is HBase's CopyTable (reference §5.1): one task per source
region, one version per column by default, a `[start, end)` time range,
`--families=src:dst` renames, and every cell written with its *source*
timestamp. Preserving timestamps is what makes the copy safe to combine with
replication: an edit made after T0 and replayed from the backlog carries a newer
timestamp than the copied cell, so it wins on the target whatever the order of
arrival. For the same reason a re-run (resume, retry) is idempotent: it writes
the same cells with the same timestamps.

Thrift1 facts this module is built around (reference §4):
- A scan returns only the newest version of each column, and its `timestamp`
  is an exclusive upper bound (`[0, ts)`): the end of the window is passed to
  the server, the start is applied here (cells older than it are dropped).
- `mutateRowsTs` writes every cell of a call with one timestamp, so cells are
  grouped by timestamp (`group_by_timestamp`) and each group is one call. Rows
  written at distinct times make one call per row; writer threads with
  pipelined calls hide that round trip.
- Older versions come only from `getVer`/`getVerTs`, one call per column:
  `versions > 1` costs one pipelined call per column of a multi-version family.
- Deletes are not copied (they are not visible to a scan anyway): the
  replication backlog carries every delete made after T0.

Pure parts (planning, windowing, renames, grouping) are unit-tested exactly;
the I/O parts import happybase inside functions so that importing this module
opens nothing and pulls in no Thrift code (the Airflow layer imports it).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import queue
import threading
import time
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from hbase_migration.progress import ProgressMeter, Throttle, human_bytes
from hbase_migration.thrift import ThriftSession, hbase_thrift, is_transient, retrying

if TYPE_CHECKING:
    from hbase_migration.cluster import Cluster

log = logging.getLogger(__name__)

LATEST_TIMESTAMP = (1 << 63) - 1  # HConstants.LATEST_TIMESTAMP (Long.MAX_VALUE)
FIRST_KEY_ONLY = "FirstKeyOnlyFilter() AND KeyOnlyFilter()"  # RowCounter's filter pair (reference §5.2)

Cell = tuple  # (column b"family:qualifier", timestamp ms, value)
Row = tuple  # (row key, list[Cell])


class CopyConfigError(ValueError):
    """Copy or verify options (or the tables they name) are invalid; the message names the field."""


class PartitionFailed(RuntimeError):
    """A partition could not be copied or verified after its retries."""


# --------------------------------------------------------------------------------------------------
# Options


_BAD_FAMILY_CHARS = (":", "/", "\\")


def _family(name: Any, what: str) -> bytes:
    if isinstance(name, str):
        name = name.encode("utf-8")
    if not isinstance(name, (bytes, bytearray)) or not name:
        raise CopyConfigError(f"{what}: a column family name must be a non-empty string, got {name!r}")
    name = bytes(name)
    text = name.decode("utf-8", "replace")
    if name.startswith(b".") or any(c in text for c in _BAD_FAMILY_CHARS) or not text.isprintable():
        raise CopyConfigError(
            f"{what}: {text!r} is not a valid column family name "
            "(printable, no ':' '/' '\\', not starting with '.')"
        )
    return name


def parse_families(spec: Any) -> tuple[tuple[bytes, bytes], ...]:
    """CopyTable's `--families` (`cf1,src:dst`) as ((src, dst), ...) in the given order.

    Accepts a comma-separated string, a list of `cf`/`src:dst` items, or a list of
    (src, dst) pairs; None or empty means every family, no rename.
    """
    if spec is None or spec == "" or spec == ():
        return ()
    if isinstance(spec, (str, bytes)):
        text = spec.decode("utf-8") if isinstance(spec, bytes) else spec
        items: list[Any] = [s.strip() for s in text.split(",")]
    else:
        items = list(spec)
    pairs: list[tuple[bytes, bytes]] = []
    for item in items:
        if isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise CopyConfigError(f"families: {item!r} must be a (source, target) pair")
            src, dst = item
        else:
            text = item.decode("utf-8") if isinstance(item, bytes) else str(item)
            if not text:
                raise CopyConfigError(f"families: empty family name in {spec!r}")
            src, _, dst = text.partition(":")
            if _ and not dst:
                raise CopyConfigError(f"families: {text!r} has an empty target family after ':'")
            dst = dst or src
        pairs.append((_family(src, "families"), _family(dst, "families")))
    sources = [s for s, _ in pairs]
    targets = [d for _, d in pairs]
    for label, names in (("source", sources), ("target", targets)):
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise CopyConfigError(
                f"families: {label} family {dupes[0].decode()!r} is listed twice in {spec!r}"
            )
    return tuple(pairs)


def _row_key(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise CopyConfigError(f"{what} must be bytes or a string, got {type(value).__name__}")


def _millis(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise CopyConfigError(f"{what} must be milliseconds since the epoch, got {value!r}")
    try:
        ms = int(value)
    except (TypeError, ValueError):
        raise CopyConfigError(f"{what} must be milliseconds since the epoch, got {value!r}") from None
    if not 0 <= ms <= LATEST_TIMESTAMP:
        raise CopyConfigError(f"{what} must be within 0..{LATEST_TIMESTAMP}, got {ms}")
    return ms


def positive_option(value: Any, what: str, *, allow_none: bool = False, integer: bool = True) -> Any:
    """A positive int (or float), also from its text form as a CLI or JSON gives it."""
    if value is None and allow_none:
        return None
    kind = "integer" if integer else "number"
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CopyConfigError(f"{what} must be a positive {kind}, got {value!r}") from None
    if isinstance(value, bool) or not number > 0 or math.isinf(number) or (integer and number != int(number)):
        raise CopyConfigError(f"{what} must be a positive {kind}, got {value!r}")
    return int(number) if integer else number


@dataclass(frozen=True)
class TableScope:
    """What part of a table a copy or a verification covers.

    `start_time`/`end_time` are milliseconds, `[start, end)` as CopyTable's
    `--starttime/--endtime`; `families` are (source, target) pairs (renames);
    `versions` is how many versions per column (1 = CopyTable's default).
    `rows_per_partition`, when set, splits regions that sampling shows to be
    larger, so tasks are even.
    """

    table: str
    target_table: str | None = None
    start_row: bytes = b""
    stop_row: bytes = b""
    start_time: int | None = None
    end_time: int | None = None
    families: tuple[tuple[bytes, bytes], ...] = ()
    versions: int = 1
    rows_per_partition: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise CopyConfigError(f"table must be a non-empty table name, got {self.table!r}")
        if self.target_table is None or self.target_table == "":
            object.__setattr__(self, "target_table", self.table)
        elif not isinstance(self.target_table, str) or not self.target_table.strip():
            raise CopyConfigError(f"target_table must be a table name, got {self.target_table!r}")
        start = _row_key(self.start_row, "start_row")
        stop = _row_key(self.stop_row, "stop_row")
        if stop and start >= stop:
            raise CopyConfigError(f"start_row {start!r} must sort before stop_row {stop!r}")
        object.__setattr__(self, "start_row", start)
        object.__setattr__(self, "stop_row", stop)
        st = _millis(self.start_time, "start_time")
        et = _millis(self.end_time, "end_time")
        if st is not None and et is not None and st >= et:
            raise CopyConfigError(f"start_time {st} must be < end_time {et} (the range is [start, end))")
        object.__setattr__(self, "start_time", st)
        object.__setattr__(self, "end_time", et)
        object.__setattr__(self, "families", parse_families(self.families))
        object.__setattr__(self, "versions", positive_option(self.versions, "versions"))
        rpp = positive_option(self.rows_per_partition, "rows_per_partition", allow_none=True)
        object.__setattr__(self, "rows_per_partition", rpp)

    # Derived views ---------------------------------------------------------------------------

    @property
    def renames(self) -> dict[bytes, bytes]:
        """source family -> target family, only for families that change name."""
        return {s: d for s, d in self.families if s != d}

    @property
    def source_columns(self) -> list[bytes] | None:
        """TScan columns on the source (whole families), None for all families."""
        return [s for s, _ in self.families] or None

    @property
    def target_columns(self) -> list[bytes] | None:
        return [d for _, d in self.families] or None

    @property
    def scan_timestamp(self) -> int | None:
        """The Thrift1 scan `timestamp` (exclusive upper bound), None when unbounded."""
        return self.end_time

    def content_key(self) -> dict[str, Any]:
        """The settings that change *what* is copied/compared (not how fast)."""
        return {
            "table": self.table,
            "target_table": self.target_table,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "families": [[s.decode("utf-8", "backslashreplace"), d.decode("utf-8", "backslashreplace")]
                         for s, d in self.families],
            "versions": self.versions,
        }

    def fingerprint(self) -> str:
        text = json.dumps(self.content_key(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class CopyOptions(TableScope):
    """A copy's scope plus how it runs. Every tuning knob has a reason:

    - scan_batch_rows: rows per `scannerGetList` (TScan.caching); bigger batches
      amortise the round trip, smaller ones bound a task's memory.
    - write_batch_cells / write_batch_bytes: how many scanned cells are grouped by
      timestamp at once; one `mutateRowsTs` call never carries more.
    - writers: target connections written in parallel (the Thrift server gives one
      thread per connection, so this hides both network and server time).
    - pipeline: calls sent back to back per connection before reading the answers;
      hides network RTT only, and only against servers that set TCP_NODELAY on
      accepted sockets (Java Thrift does; a server that does not pays Nagle's
      ~40 ms per delayed answer), hence 1 by default.
    - rows_per_s / bytes_per_s: per-task cap on what is read from the source.
    - retries: attempts of one call on a transient error (safe: writes are idempotent).
    """

    scan_batch_rows: int = 500
    write_batch_cells: int = 5000
    write_batch_bytes: int = 4 << 20
    writers: int = 16
    pipeline: int = 1
    rows_per_s: float | None = None
    bytes_per_s: float | None = None
    retries: int = 8
    retry_wait_max_s: float = 20.0
    timeout_s: float = 60.0
    log_every_s: float = 30.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("scan_batch_rows", "write_batch_cells", "write_batch_bytes", "writers", "pipeline",
                     "retries"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name))
        for name in ("rows_per_s", "bytes_per_s"):
            value = positive_option(getattr(self, name), name, allow_none=True, integer=False)
            object.__setattr__(self, name, value)
        for name in ("retry_wait_max_s", "timeout_s", "log_every_s"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name, integer=False))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CopyOptions":
        """Build from a JSON-like dict (row keys as text); unknown keys are an error."""
        return options_from_dict(cls, data)


def options_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise CopyConfigError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return cls(**dict(data))


# --------------------------------------------------------------------------------------------------
# Regions and the partition plan


@dataclass(frozen=True)
class Region:
    """One region of the source table as Thrift's getTableRegions gives it (b"" = open end)."""

    start_key: bytes
    end_key: bytes
    name: bytes = b""


def regions_from_thrift(items: Iterable[Any]) -> list[Region]:
    """TRegionInfo objects or happybase `Table.regions()` dicts, sorted by start key."""
    out = []
    for it in items:
        if isinstance(it, Mapping):
            start, end, name = it.get("start_key", b""), it.get("end_key", b""), it.get("name", b"")
        else:
            start, end, name = it.startKey, it.endKey, it.name
        out.append(Region(bytes(start or b""), bytes(end or b""), bytes(name or b"")))
    return sorted(out, key=lambda r: r.start_key)


@dataclass(frozen=True)
class RegionSample:
    """What a key-only scan of one region found: its row count and evenly spaced row keys."""

    rows: int
    keys: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Partition:
    """One task's key range `[start_row, stop_row)` (b"" stop = to the end of the table)."""

    table: str
    index: int
    start_row: bytes
    stop_row: bytes
    region: str
    partition_id: str
    est_rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_row"] = self.start_row.hex()
        d["stop_row"] = self.stop_row.hex()
        return d

    def describe(self) -> str:
        stop = to_string_binary(self.stop_row) or "<end>"
        return f"#{self.index} [{to_string_binary(self.start_row)}, {stop})"


def to_string_binary(key: bytes, limit: int = 200) -> str:
    """Row keys as HBase's `Bytes.toStringBinary` prints them (printable ASCII, else \\xNN)."""
    out = []
    for b in key[:limit]:
        if 32 <= b < 127 and b != 0x5C:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02X}")
    return "".join(out) + ("..." if len(key) > limit else "")


def to_bytes_binary(text: str) -> bytes:
    """HBase's `Bytes.toBytesBinary`: `\\xNN` escapes become bytes (CopyTable's --startrow/--stoprow)."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1:i + 2] == "x" and _is_hex(text[i + 2:i + 4]):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
            continue
        out += ch.encode("utf-8")
        i += 1
    return bytes(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def partition_id(table: str, start_row: bytes, stop_row: bytes, fingerprint: str) -> str:
    """Stable id of a key range under given options: a re-run recognises a finished partition."""
    h = hashlib.sha1()
    for part in (table.encode("utf-8"), start_row, stop_row, fingerprint.encode("ascii")):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.hexdigest()[:20]


def _clip(lo: bytes, hi: bytes, start: bytes, stop: bytes) -> tuple[bytes, bytes] | None:
    """Intersect [lo, hi) with [start, stop); b"" as an upper bound means +infinity."""
    a = max(lo, start)
    if not hi:
        b = stop
    elif not stop:
        b = hi
    else:
        b = min(hi, stop)
    if b and a >= b:
        return None
    return a, b


def split_points(keys: Sequence[bytes], pieces: int, lo: bytes, hi: bytes) -> list[bytes]:
    """`pieces - 1` keys spread evenly over the sampled `keys`, strictly inside (lo, hi)."""
    inside = [k for k in keys if k > lo and (not hi or k < hi)]
    if pieces <= 1 or not inside:
        return []
    chosen: list[bytes] = []
    for i in range(1, pieces):
        k = inside[min(len(inside) - 1, (i * len(inside)) // pieces)]
        if not chosen or k > chosen[-1]:
            chosen.append(k)
    return chosen


def plan_partitions(
    regions: Sequence[Region], options: TableScope, samples: Mapping[bytes, RegionSample] | None = None
) -> list[Partition]:
    """One partition per region, clipped to the row range; big regions split at sampled keys.

    `samples` maps a region name to its `RegionSample`; a region whose sampled row
    count exceeds `options.rows_per_partition` is cut into ceil(rows / that)
    partitions at evenly spaced sampled keys. Partition ids depend only on the
    table, the key range and the content options, so a resumed run with the same
    options recognises what it finished.
    """
    if not regions:
        raise CopyConfigError(f"table {options.table!r} has no regions on the source (does it exist?)")
    ordered = sorted(regions, key=lambda r: r.start_key)
    for prev, cur in zip(ordered, ordered[1:]):
        if not prev.end_key or prev.end_key > cur.start_key:
            raise CopyConfigError(
                f"regions of {options.table!r} overlap: {prev.name!r} ends at {prev.end_key!r} "
                f"after {cur.name!r} starts at {cur.start_key!r}"
            )
    fp = options.fingerprint()
    out: list[Partition] = []
    for region in ordered:
        clipped = _clip(region.start_key, region.end_key, options.start_row, options.stop_row)
        if clipped is None:
            continue
        lo, hi = clipped
        sample = (samples or {}).get(region.name)
        bounds = [lo]
        est = None
        if sample is not None:
            est = sample.rows
            if options.rows_per_partition and sample.rows > options.rows_per_partition:
                pieces = math.ceil(sample.rows / options.rows_per_partition)
                bounds += split_points(sample.keys, pieces, lo, hi)
        bounds.append(hi)
        name = region.name.decode("utf-8", "backslashreplace")
        n = len(bounds) - 1
        for a, b in zip(bounds, bounds[1:]):
            out.append(Partition(
                table=options.table, index=len(out), start_row=a, stop_row=b, region=name,
                partition_id=partition_id(options.table, a, b, fp),
                est_rows=None if est is None else max(1, est // n) if est else 0,
            ))
    return out


# --------------------------------------------------------------------------------------------------
# Cells: window, renames, grouping by timestamp


def cell_bytes(row: bytes, column: bytes, value: bytes) -> int:
    """Bytes a cell moves: key parts, value and the 8-byte timestamp."""
    return len(row) + len(column) + len(value) + 8


def rename_column(column: bytes, renames: Mapping[bytes, bytes]) -> bytes:
    """b"src:q" -> b"dst:q" when `src` is renamed."""
    if not renames:
        return column
    family, sep, qualifier = column.partition(b":")
    dst = renames.get(family)
    return dst + sep + qualifier if dst is not None else column


def window_cells(cells: Iterable[Cell], start_time: int | None, end_time: int | None = None) -> list[Cell]:
    """Cells with `start_time <= ts < end_time` (the scan already bounded the end; getVer may not)."""
    return [
        c for c in cells
        if (start_time is None or c[1] >= start_time) and (end_time is None or c[1] < end_time)
    ]


def transform_cells(cells: Iterable[Cell], options: TableScope) -> list[Cell]:
    """Window then rename: what the target must hold for these source cells."""
    kept = window_cells(cells, options.start_time, options.end_time)
    renames = options.renames
    if renames:
        kept = [(rename_column(c[0], renames), c[1], c[2]) for c in kept]
    return kept


TsGroup = tuple  # (timestamp, [(row, [(column, value), ...]), ...])


def group_by_timestamp(
    rows: Iterable[Row], max_cells: int | None = None
) -> list[TsGroup]:
    """Cells of many rows grouped into one `mutateRowsTs` call per timestamp.

    Returns [(ts, [(row, [(column, value), ...]), ...]), ...] sorted by ts, rows
    in input order, each group carrying at most `max_cells` cells (split on row
    boundaries; one row's cells at one timestamp are never split).
    """
    by_ts: dict[int, dict[bytes, list[tuple[bytes, bytes]]]] = {}
    for row, cells in rows:
        for column, ts, value in cells:
            by_ts.setdefault(ts, {}).setdefault(row, []).append((column, value))
    out: list[TsGroup] = []
    for ts in sorted(by_ts):
        batch: list[tuple[bytes, list[tuple[bytes, bytes]]]] = []
        n = 0
        for row, muts in by_ts[ts].items():
            if max_cells and batch and n + len(muts) > max_cells:
                out.append((ts, batch))
                batch, n = [], 0
            batch.append((row, muts))
            n += len(muts)
        if batch:
            out.append((ts, batch))
    return out


def merge_versions(scanned: Sequence[Cell], versions: Mapping[bytes, Sequence[Cell]]) -> list[Cell]:
    """The scanned newest cells with each multi-version column replaced by its getVer list."""
    out: list[Cell] = []
    for cell in scanned:
        older = versions.get(cell[0])
        if older:
            out.extend(older)
        else:
            out.append(cell)
    return out


@dataclass
class PartitionResult:
    """What one task did; small, JSON-ready, sent back to the driver."""

    partition_id: str
    index: int
    table: str
    start_row: bytes
    stop_row: bytes
    status: str = "copied"  # copied | failed
    rows: int = 0
    cells: int = 0
    bytes: int = 0
    scanned_rows: int = 0
    write_calls: int = 0
    retries: int = 0
    throttled_s: float = 0.0
    elapsed_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_row"] = self.start_row.hex()
        d["stop_row"] = self.stop_row.hex()
        return d


def summarize(results: Iterable[PartitionResult], skipped: int, elapsed_s: float) -> dict[str, Any]:
    """The final JSON summary of a copy (totals, rate, failures)."""
    results = list(results)
    done = [r for r in results if r.status == "copied"]
    failed = [r for r in results if r.status != "copied"]
    rows = sum(r.rows for r in done)
    nbytes = sum(r.bytes for r in done)
    return {
        "partitions": len(results) + skipped,
        "copied_partitions": len(done),
        "skipped_partitions": skipped,
        "failed_partitions": len(failed),
        "rows": rows,
        "cells": sum(r.cells for r in done),
        "bytes": nbytes,
        "scanned_rows": sum(r.scanned_rows for r in done),
        "write_calls": sum(r.write_calls for r in done),
        "retries": sum(r.retries for r in results),
        "throttled_s": round(sum(r.throttled_s for r in results), 3),
        "elapsed_s": round(elapsed_s, 3),
        "rows_per_s": round(rows / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "bytes_per_s": round(nbytes / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "failures": [
            {"partition_id": r.partition_id, "index": r.index, "start_row": to_string_binary(r.start_row),
             "stop_row": to_string_binary(r.stop_row), "error": r.error}
            for r in failed
        ],
    }


# --------------------------------------------------------------------------------------------------
# Thrift I/O: scans and the timestamp-preserving writer (sessions and retries in hbase_migration.thrift)


def scan_rows(
    session: ThriftSession,
    table: str,
    start_row: bytes,
    stop_row: bytes,
    *,
    timestamp: int | None = None,
    columns: Sequence[bytes] | None = None,
    batch_rows: int = 500,
    filter_string: str | None = None,
    retries: int = 8,
    wait_cap: float = 20.0,
    stats: dict[str, int] | None = None,
) -> Iterator[list[Row]]:
    """Scan `[start_row, stop_row)` and yield lists of (row, [(column, ts, value)]).

    A transient error (lost connection, expired scanner lease) re-opens the
    connection and the scanner just after the last row yielded, so no row is
    lost or repeated. Columns come sorted (`sortColumns`), one (newest) version
    each, with `ts < timestamp` when a timestamp is given.
    """
    T = hbase_thrift()
    table_b = table.encode("utf-8")
    state: dict[str, Any] = {"scanner": None, "next_start": start_row}

    def next_batch() -> list:
        # After a failure the scanner is gone with its connection: open a new one after the last row yielded.
        if state["scanner"] is None:
            scan = T.TScan(startRow=state["next_start"], stopRow=stop_row or None, timestamp=timestamp,
                           columns=list(columns) if columns else None, caching=batch_rows,
                           filterString=filter_string.encode("utf-8") if filter_string else None,
                           sortColumns=True)
            state["scanner"] = session.client.scannerOpenWithScan(table_b, scan, {})
        return session.client.scannerGetList(state["scanner"], batch_rows)

    def lost_scanner(_error: BaseException) -> None:
        state["scanner"] = None
        if stats is not None:
            stats["retries"] = stats.get("retries", 0) + 1

    try:
        while True:
            try:
                items = retrying(session, next_batch, retries, wait_cap, f"scan of {table}", lost_scanner)
            except Exception as e:
                if not is_transient(e):
                    raise
                raise PartitionFailed(f"scan of {table!r} from {to_string_binary(state['next_start'])} failed "
                                      f"{retries} times: {type(e).__name__}: {e}") from e
            if not items:
                return
            batch = [(it.row, [(c.columnName, c.cell.timestamp, c.cell.value) for c in (it.sortedColumns or ())])
                     for it in items]
            state["next_start"] = batch[-1][0] + b"\x00"
            yield batch
    finally:
        if state["scanner"] is not None:
            try:
                session.client.scannerClose(state["scanner"])
            except Exception:  # a scanner on a dead connection is released by the server's lease
                pass


def read_versions(
    session: ThriftSession, table: str, rows: Sequence[Row], multi_version_families: set[bytes],
    versions: int, end_time: int | None,
) -> dict[bytes, dict[bytes, list[Cell]]]:
    """Up to `versions` versions of every scanned column of a multi-version family.

    One pipelined getVer (getVerTs with a window end: `[0, ts)`) per column.
    """
    wanted = [
        (row, cell[0]) for row, cells in rows for cell in cells
        if cell[0].partition(b":")[0] in multi_version_families
    ]
    if not wanted:
        return {}
    table_b = table.encode("utf-8")
    api = "getVer" if end_time is None else "getVerTs"
    bound = {} if end_time is None else {"timestamp": end_time}
    calls = [dict(tableName=table_b, row=r, column=c, numVersions=versions, attributes={}, **bound)
             for r, c in wanted]
    out: dict[bytes, dict[bytes, list[Cell]]] = {}
    for i in range(0, len(calls), 256):
        chunk = calls[i:i + 256]
        answers = retrying(session, lambda chunk=chunk: session.pipelined(api, chunk), what=api)
        for (row, column), cells in zip(wanted[i:i + 256], answers):
            out.setdefault(row, {})[column] = [(column, c.timestamp, c.value) for c in (cells or ())]
    return out


class CellWriter:
    """Writes TsGroups with `mutateRowsTs` from `writers` threads, `pipeline` calls in flight each.

    Each thread owns one connection. A window of calls is sent back to back and
    then acknowledged; on a transient error the whole window is re-sent on a
    fresh connection (re-writing a cell with its timestamp changes nothing).
    Memory is bounded by the queue (`writers * pipeline * 2` groups). `close()`
    returns once every call is acknowledged, and raises the first failure.
    """

    _STOP = object()

    def __init__(self, cluster: "Cluster", table: str, writers: int = 16, pipeline: int = 1, retries: int = 8,
                 wait_cap: float = 20.0, timeout_s: float = 60.0):
        self.cluster = cluster
        self.table = table.encode("utf-8")
        self.pipeline = pipeline
        self.retries = retries
        self.wait_cap = wait_cap
        self.timeout_s = timeout_s
        self.calls = 0
        self.retried = 0
        self._queue: queue.Queue = queue.Queue(maxsize=max(2, writers * pipeline * 2))
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._T = hbase_thrift()
        # Open every connection up front so an unreachable target fails here, loudly.
        sessions = [ThriftSession(cluster, timeout_s) for _ in range(writers)]
        self._threads = [threading.Thread(target=self._run, args=(s,), daemon=True, name=f"hbase-writer-{i}")
                         for i, s in enumerate(sessions)]
        for t in self._threads:
            t.start()

    def put(self, group: TsGroup) -> None:
        ts, rows = group
        T = self._T
        batches = [
            T.BatchMutation(row=row, mutations=[T.Mutation(isDelete=False, column=c, value=v, writeToWAL=True)
                                                for c, v in muts])
            for row, muts in rows
        ]
        item = dict(tableName=self.table, rowBatches=batches, timestamp=ts, attributes={})
        while True:
            if self._error is not None:
                self._raise()
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def _run(self, session: ThriftSession) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is self._STOP:
                    return
                window = [first]
                stop = False
                while len(window) < self.pipeline:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is self._STOP:
                        stop = True
                        break
                    window.append(nxt)
                self._send(session, window)
                if stop:
                    return
        except BaseException as e:  # recorded and re-raised by put()/close() on the caller's thread
            with self._lock:
                if self._error is None:
                    self._error = e
            # keep draining so a producer blocked on a full queue sees the error
            while True:
                try:
                    if self._queue.get(timeout=0.5) is self._STOP:
                        return
                except queue.Empty:
                    if self._error is not None and self._queue.empty():
                        return
        finally:
            session.close()

    def _send(self, session: ThriftSession, window: list[dict[str, Any]]) -> None:
        def count_retry(_e: BaseException) -> None:
            with self._lock:
                self.retried += 1

        retrying(session, lambda: session.pipelined("mutateRowsTs", window), self.retries, self.wait_cap,
                 f"mutateRowsTs x{len(window)}", count_retry)
        with self._lock:
            self.calls += len(window)

    def close(self) -> None:
        # One STOP per thread, whichever thread takes it (a thread that exits early took someone's STOP).
        for _ in self._threads:
            while any(t.is_alive() for t in self._threads):
                try:
                    self._queue.put(self._STOP, timeout=0.5)
                    break
                except queue.Full:
                    continue
        for t in self._threads:
            t.join()
        if self._error is not None:
            self._raise()

    def _raise(self) -> None:
        raise PartitionFailed(f"writing to {self.cluster.name!r} failed: {self._error}") from self._error


def prefetch(iterable: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """Iterate `iterable` in a background thread, `depth` items ahead.

    The next scan batch is fetched while the current one is being written.
    Errors are raised in the consumer; closing the consumer stops the producer.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in iterable:
                while not stop.is_set():
                    try:
                        q.put(("item", item), timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            q.put(("end", done))
        except BaseException as e:
            q.put(("error", e))
        finally:
            close = getattr(iterable, "close", None)
            if callable(close) and stop.is_set():
                try:
                    close()
                except Exception:
                    pass

    thread = threading.Thread(target=produce, daemon=True, name="hbase-scan-prefetch")
    thread.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.2)
            except queue.Empty:
                pass
        thread.join()


def table_families(session: ThriftSession, table: str) -> dict[bytes, int]:
    """family -> maxVersions of a table; {} when the table does not exist."""
    T = hbase_thrift()
    try:
        descriptors = session.call("getColumnDescriptors", table.encode("utf-8"))
    except T.IOError:
        return {}
    return {bytes(name).rstrip(b":"): int(d.maxVersions) for name, d in descriptors.items()}


def fetch_regions(session: ThriftSession, table: str) -> list[Region]:
    """The table's regions from Thrift (getTableRegions); an unknown table is an error."""
    regions = regions_from_thrift(session.call("getTableRegions", table.encode("utf-8")))
    if not regions:
        raise CopyConfigError(
            f"table {table!r} not found on cluster {session.cluster.name!r} "
            "(getTableRegions returned no region)"
        )
    return regions


def check_tables(source: ThriftSession, target: ThriftSession, options: TableScope) -> dict[bytes, int]:
    """Refuse a copy/verify whose tables or families are missing; returns source family -> maxVersions.

    Runs before anything is written: bad input changes nothing.
    """
    src = table_families(source, options.table)
    if not src:
        raise CopyConfigError(
            f"table: {options.table!r} does not exist on the source {source.cluster.name!r}"
        )
    dst = table_families(target, options.target_table)
    if not dst:
        raise CopyConfigError(
            f"target_table: {options.target_table!r} does not exist on the target {target.cluster.name!r} "
            "(create it with the same families and split keys first)"
        )
    pairs = options.families or tuple((f, f) for f in sorted(src))
    for s, d in pairs:
        if s not in src:
            raise CopyConfigError(
                f"families: {s.decode()!r} is not a family of {options.table!r} on the source "
                f"(it has {', '.join(sorted(f.decode() for f in src))})"
            )
        if d not in dst:
            raise CopyConfigError(
                f"families: {d.decode()!r} is not a family of {options.target_table!r} on the target "
                f"(it has {', '.join(sorted(f.decode() for f in dst))})"
            )
    return src


def sample_region(
    cluster: "Cluster", options: TableScope, region: Region, max_keys: int = 1024
) -> RegionSample:
    """Row count and evenly spaced keys of one region (a key-only scan, RowCounter's filters).

    Keeps every `stride`-th key and doubles the stride whenever `max_keys` is
    reached, so memory is bounded whatever the region's size.
    """
    clipped = _clip(region.start_key, region.end_key, options.start_row, options.stop_row)
    if clipped is None:
        return RegionSample(0, ())
    lo, hi = clipped
    keys: list[bytes] = []
    stride = 1
    rows = 0
    with ThriftSession(cluster) as session:
        for batch in scan_rows(session, options.table, lo, hi, timestamp=options.scan_timestamp,
                               columns=options.source_columns, batch_rows=2000, filter_string=FIRST_KEY_ONLY):
            for row, _cells in batch:
                if rows % stride == 0:
                    keys.append(row)
                    if len(keys) >= max_keys:
                        keys = keys[::2]
                        stride *= 2
                rows += 1
    return RegionSample(rows, tuple(keys))


def copy_partition(
    source: "Cluster",
    target: "Cluster",
    partition: Partition,
    options: CopyOptions,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    multi_version_families: set[bytes] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> PartitionResult:
    """Copy one partition: stream the source scan, write every cell with its own timestamp.

    Memory stays flat: at most a few scan batches and the writers' queue are held,
    never the partition. `on_progress` gets a dict (rows, cells, bytes, rates) every
    `log_every_s` and at the end. `multi_version_families` (source families whose
    maxVersions > 1) limits getVer calls when `versions > 1`; None asks the source.
    Raises on failure after retries (the caller decides whether that fails the job).
    """
    result = PartitionResult(partition.partition_id, partition.index, partition.table,
                             partition.start_row, partition.stop_row)
    meter = ProgressMeter(total_partitions=1, total_rows=partition.est_rows, clock=clock)
    throttle = Throttle(options.rows_per_s, options.bytes_per_s)
    stats: dict[str, int] = {}
    started = clock()
    last_log = started
    reader = ThriftSession(source, options.timeout_s)
    # The scan runs in the prefetch thread on `reader`; getVer calls run here, on their own connection.
    history: ThriftSession | None = None
    writer: CellWriter | None = None
    try:
        if options.versions > 1 and multi_version_families is None:
            multi_version_families = {f for f, v in table_families(reader, options.table).items() if v > 1}
        if options.versions > 1 and multi_version_families:
            history = ThriftSession(source, options.timeout_s)
        writer = CellWriter(target, options.target_table, writers=options.writers,
                            pipeline=options.pipeline, retries=options.retries,
                            wait_cap=options.retry_wait_max_s, timeout_s=options.timeout_s)
        pending: list[Row] = []
        pending_cells = pending_bytes = 0

        def flush() -> None:
            nonlocal pending, pending_cells, pending_bytes
            for group in group_by_timestamp(pending, max_cells=options.write_batch_cells):
                writer.put(group)
            pending, pending_cells, pending_bytes = [], 0, 0

        scan = scan_rows(reader, options.table, partition.start_row, partition.stop_row,
                         timestamp=options.scan_timestamp, columns=options.source_columns,
                         batch_rows=options.scan_batch_rows, retries=options.retries,
                         wait_cap=options.retry_wait_max_s, stats=stats)
        for batch in prefetch(scan, depth=2):
            result.scanned_rows += len(batch)
            if history is not None:
                older = read_versions(history, options.table, batch, multi_version_families, options.versions,
                                      options.end_time)
                batch = [(row, merge_versions(cells, older.get(row, {}))) for row, cells in batch]
            batch_rows = batch_bytes = 0
            for row, cells in batch:
                kept = transform_cells(cells, options)
                if not kept:
                    continue
                size = sum(cell_bytes(row, c, v) for c, _, v in kept)
                pending.append((row, kept))
                pending_cells += len(kept)
                pending_bytes += size
                batch_rows += 1
                batch_bytes += size
                result.rows += 1
                result.cells += len(kept)
                result.bytes += size
                if pending_cells >= options.write_batch_cells or pending_bytes >= options.write_batch_bytes:
                    flush()
            meter.add(rows=batch_rows, nbytes=batch_bytes)
            if throttle.enabled:
                result.throttled_s += throttle.acquire(len(batch), batch_bytes)
            now = clock()
            if now - last_log >= options.log_every_s:
                last_log = now
                _report(partition, result, meter, on_progress, final=False)
        flush()
        writer.close()  # returns once every call is acknowledged: only then is the partition done
        result.write_calls = writer.calls
        stats["retries"] = stats.get("retries", 0) + writer.retried
        writer = None
    finally:
        if writer is not None:
            try:
                writer.close()
            except Exception:  # the original error is the one to report
                pass
        reader.close()
        if history is not None:
            history.close()
    result.elapsed_s = round(clock() - started, 3)
    result.retries = stats.get("retries", 0) + reader.reconnects + (history.reconnects if history else 0)
    meter.cells = result.cells
    _report(partition, result, meter, on_progress, final=True)
    return result


def _report(partition: Partition, result: PartitionResult, meter: ProgressMeter,
            on_progress: Callable[[dict[str, Any]], None] | None, final: bool) -> None:
    snap = meter.snapshot()
    snap.update(partition_id=partition.partition_id, index=partition.index, final=final,
                rows=result.rows, cells=result.cells, bytes=result.bytes)
    log.info("partition %s %s: %d rows, %d cells, %s (%.0f rows/s)%s", partition.describe(),
             "done" if final else "progress", result.rows, result.cells, human_bytes(result.bytes),
             snap["rows_per_s"], "" if final or snap["eta_s"] is None else f", ETA {snap['eta_s']:.0f}s")
    if on_progress is not None:
        on_progress(snap)


def copy_partition_safely(
    source: "Cluster", target: "Cluster", partition: Partition, options: CopyOptions,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    multi_version_families: set[bytes] | None = None,
) -> PartitionResult:
    """`copy_partition` that turns a failure into a `failed` result, so the other
    partitions carry on and the failure is listed (and retried by the next run)."""
    started = time.monotonic()
    try:
        return copy_partition(source, target, partition, options, on_progress, multi_version_families)
    except Exception as e:
        log.error("partition %s failed: %s: %s", partition.describe(), type(e).__name__, e)
        return PartitionResult(partition.partition_id, partition.index, partition.table,
                               partition.start_row, partition.stop_row, status="failed",
                               elapsed_s=round(time.monotonic() - started, 3),
                               error=f"{type(e).__name__}: {e}")


def default_copy_id(source: "Cluster", target: "Cluster", options: TableScope) -> str:
    """A copy's id when none is given: the clusters and tables (not the window: each window is its own
    set of partition ids already)."""
    text = f"{source.cluster_key}|{options.table}|{target.cluster_key}|{options.target_table}"
    return "copy-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
