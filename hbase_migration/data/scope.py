"""What part of a table a copy or a verification covers, and what the target must hold for the source's cells.

`TableScope` follows HBase's CopyTable options (`--starttime/--endtime` as `[start, end)` in ms, `--versions`,
`--families=src:dst` renames, `--startrow/--stoprow` with `Bytes.toBytesBinary` escapes). Every field is validated
on construction and named in the error. Pure: no I/O.
"""
from __future__ import annotations

import calendar
import hashlib
import json
import math
import re
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

LATEST_TIMESTAMP = (1 << 63) - 1  # HConstants.LATEST_TIMESTAMP (Long.MAX_VALUE)

Cell = tuple  # (column b"family:qualifier", timestamp ms, value)
Row = tuple  # (row key, list[Cell]); a scan may give a wide row as consecutive pieces with the same key


def cell_order(cell: Cell) -> tuple:
    """A cell's place in its row, in HBase's order (`CellComparator`): family, qualifier, newest version first.
    (Not the order of the `family:qualifier` bytes: family `a` sorts before `a0` although b"a0:" < b"a:".)"""
    family, _, qualifier = cell[0].partition(b":")
    return family, qualifier, -cell[1]


class CopyConfigError(ValueError):
    """Copy or verify options (or the tables they name) are invalid; the message names the field."""


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


def timestamp_ms(value: Any) -> int:
    """Milliseconds since the epoch from an integer or an ISO 8601 date-time (`2024-01-31T12:00:00Z`; a date
    alone is midnight UTC; a date-time without offset is refused: its instant would depend on the zone)."""
    if isinstance(value, str) and not re.fullmatch(r"\s*\d+\s*", value):
        text = value.strip()
        try:
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
                instant = datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
            else:
                instant = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"must be epoch milliseconds or an ISO 8601 date-time, got {text!r}") from None
        if instant.utcoffset() is None:
            raise ValueError(f"{text!r} has no UTC offset (write ...Z or ...+02:00)")
        ms = calendar.timegm(instant.utctimetuple()) * 1000 + instant.microsecond // 1000
    else:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"must be epoch milliseconds or an ISO 8601 date-time, got {value!r}")
        try:
            ms = int(value)
        except (TypeError, ValueError):
            raise ValueError(f"must be epoch milliseconds or an ISO 8601 date-time, got {value!r}") from None
    if not 0 <= ms <= LATEST_TIMESTAMP:
        raise ValueError(f"must be within 0..{LATEST_TIMESTAMP} ms, got {ms}")
    return ms


def _millis(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return timestamp_ms(value)
    except ValueError as e:
        raise CopyConfigError(f"{what} {e}") from None


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


def versions_option(value: Any) -> int | None:
    """None or "all": every version a family keeps; else a positive number of versions."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "all"):
        return None
    return positive_option(value, "versions")


def versions_text(versions: int | None) -> str | int:
    """How summaries and logs show a versions setting."""
    return "all" if versions is None else versions


@dataclass(frozen=True)
class TableScope:
    """What part of a table a copy or a verification covers.

    `start_time_ms`/`end_time_ms` are milliseconds, `[start, end)` as CopyTable's
    `--starttime/--endtime`; `families` are (source, target) pairs (renames);
    `versions` is how many versions per column: None (the default) for every version each family keeps
    (its VERSIONS), N for the newest N (CopyTable's `--versions`; its default is 1, which loses history).
    `rows_per_partition`, when set, splits regions that sampling shows to be
    larger, so tasks are even.
    """

    table: str
    target_table: str | None = None
    start_row: bytes = b""
    stop_row: bytes = b""
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    families: tuple[tuple[bytes, bytes], ...] = ()
    versions: int | None = None
    rows_per_partition: int | None = None
    # How its reads run: rows per scanner call (bigger amortises the round trip, smaller bounds a task's
    # memory); the most cells of one row in one scan result (Thrift's TScan.batchSize, HBase's Scan.setBatch:
    # a wider row comes in slices, so a row of millions of cells never sits whole in the gateway or the task);
    # the cells one scanner call should carry (a call asks for fewer results once the rows turn out wide, so
    # memory stays at about this many cells per call whatever the rows' width); attempts of one call on a
    # transient error (safe: every write is idempotent), the longest wait between attempts and the per-call
    # timeout.
    scan_batch_rows: int = 500
    scan_batch_cells: int = 100
    scan_call_cells: int = 10_000
    retries: int = 8
    retry_wait_max_s: float = 20.0
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise CopyConfigError(f"table must be a non-empty table name, got {self.table!r}")
        if self.target_table is None or self.target_table == "":
            object.__setattr__(self, "target_table", self.table)
        elif not isinstance(self.target_table, str) or not self.target_table.strip():
            raise CopyConfigError(f"target_table must be a table name, got {self.target_table!r}")
        from hbase_migration.replication.model import InvalidPeerConfig, normalize_table

        for what in ("table", "target_table"):  # before any request: a gateway answers a bad name with a crash
            try:
                normalize_table(getattr(self, what))
            except InvalidPeerConfig as e:
                raise CopyConfigError(f"{what}: {e}") from None
        start = _row_key(self.start_row, "start_row")
        stop = _row_key(self.stop_row, "stop_row")
        if stop and start >= stop:
            raise CopyConfigError(f"start_row {start!r} must sort before stop_row {stop!r}")
        object.__setattr__(self, "start_row", start)
        object.__setattr__(self, "stop_row", stop)
        st = _millis(self.start_time_ms, "start_time_ms")
        et = _millis(self.end_time_ms, "end_time_ms")
        if st is not None and et is not None and st >= et:
            raise CopyConfigError(f"start_time_ms {st} must be < end_time_ms {et} (the range is [start, end))")
        object.__setattr__(self, "start_time_ms", st)
        object.__setattr__(self, "end_time_ms", et)
        object.__setattr__(self, "families", parse_families(self.families))
        object.__setattr__(self, "versions", versions_option(self.versions))
        rpp = positive_option(self.rows_per_partition, "rows_per_partition", allow_none=True)
        object.__setattr__(self, "rows_per_partition", rpp)
        for name in ("scan_batch_rows", "scan_batch_cells", "scan_call_cells", "retries"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name))
        for name in ("retry_wait_max_s", "timeout_s"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name, integer=False))

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

    def content_key(self) -> dict[str, Any]:
        """The settings that change *what* is copied/compared (not how fast)."""
        return {
            "table": self.table,
            "target_table": self.target_table,
            "start_time_ms": self.start_time_ms,
            "end_time_ms": self.end_time_ms,
            "families": [[s.decode("utf-8", "backslashreplace"), d.decode("utf-8", "backslashreplace")]
                         for s, d in self.families],
            "versions": self.versions,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        """Build from a JSON-like dict (row keys as text); unknown keys are an error."""
        return options_from_dict(cls, data)

    def fingerprint(self) -> str:
        text = json.dumps(self.content_key(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def options_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise CopyConfigError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return cls(**dict(data))


# --------------------------------------------------------------------------------------------------
# Row keys as HBase prints and parses them


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


# --------------------------------------------------------------------------------------------------
# Cells: window and renames (what the target must hold for the source's cells)


def rename_column(column: bytes, renames: Mapping[bytes, bytes]) -> bytes:
    """b"src:q" -> b"dst:q" when `src` is renamed."""
    if not renames:
        return column
    family, sep, qualifier = column.partition(b":")
    dst = renames.get(family)
    return dst + sep + qualifier if dst is not None else column


def window_cells(cells: Iterable[Cell], start_time: int | None, end_time: int | None = None) -> list[Cell]:
    """Cells with `start_time <= ts < end_time` (a Thrift1 scan has no lower time bound)."""
    return [
        c for c in cells
        if (start_time is None or c[1] >= start_time) and (end_time is None or c[1] < end_time)
    ]
