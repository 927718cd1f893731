"""The shell lookalike's data commands, as HBase 2.x's shell runs them (`hbase/table.rb`, `shell/commands/`):

    put 't1', 'r1', 'cf:q', 'value' [, ts]
    get 't1', 'r1' [, 'cf:q' [, 'cf2'] | ['cf:q', ...] | {COLUMN(S) => ..., TIMESTAMP => ts, TIMERANGE => [a, b],
                                                        VERSIONS => n, FILTER => "...", MAXLENGTH => n}]
    scan 't1' [, {COLUMN(S), STARTROW, STOPROW, ROWPREFIXFILTER, LIMIT, TIMESTAMP, TIMERANGE, VERSIONS, FILTER,
                  REVERSED, MAXLENGTH, CACHE, CACHE_BLOCKS, RAW}]
    deleteall 't1', 'r1' [, 'cf[:q]' [, ts]]    deleteall 't1', {ROWPREFIXFILTER => 'p'} [, 'cf[:q]' [, ts]]

Output is what a shell whose stdout is not a terminal prints (the formatter's width is 0): `get` a header
`COLUMN  CELL`, one line per cell ` cf:q timestamp=<LocalDateTime>, value=<Bytes.toStringBinary>` and `1 row(s)`
(`0 row(s)` for a missing row); `scan` a header `ROW  COLUMN+CELL`, ` row column=cf:q, timestamp=..., value=...`
per cell and `N row(s)`; with `RAW => true` delete markers too, as ` row column=cf:, timestamp=..., type=DeleteFamily`
(`Table#to_string` for a cell `CellUtil.isDelete`; see `Region.raw_row` for what minihbase keeps of them);
`put` and `deleteall` print nothing but the time taken. Timestamps are
`java.time.LocalDateTime` in the local zone (`2024-05-06T07:08:09.123`), as the 2.4+ shell prints them.
Rows travel to the cluster through its control endpoint (`minihbase.data_api`), as the caller (SPNEGO) on a
secured cluster.
"""
from __future__ import annotations

import datetime
from typing import Any

from minihbase.replication.codec import split_table, table_text
from minihbase.shell_lang import RStr

# Options each command takes (HBase constants); others are refused rather than silently ignored.
GET_OPTIONS = {"COLUMN", "COLUMNS", "TIMESTAMP", "TIMERANGE", "VERSIONS", "FILTER", "MAXLENGTH"}
SCAN_OPTIONS = {"COLUMN", "COLUMNS", "STARTROW", "STOPROW", "ROWPREFIXFILTER", "LIMIT", "TIMESTAMP", "TIMERANGE",
                "VERSIONS", "FILTER", "REVERSED", "MAXLENGTH", "CACHE", "CACHE_BLOCKS", "RAW"}


# ---------------------------------------------------------------------------------------------- formatting
def to_string_binary(data: bytes) -> str:
    """`Bytes.toStringBinary`: printable ASCII as is (backslash excepted), every other byte as `\\xNN`."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x5C else f"\\x{b:02X}" for b in data)


def local_date_time(ms: int) -> str:
    """`LocalDateTime.ofInstant(Instant.ofEpochMilli(ms), ZoneId.systemDefault()).toString()`: seconds and
    milliseconds only when not zero (`HH:mm`, `HH:mm:ss`, `HH:mm:ss.SSS`)."""
    moment = datetime.datetime.fromtimestamp(ms // 1000).replace(microsecond=(ms % 1000) * 1000)
    text = moment.strftime("%Y-%m-%dT%H:%M")
    millis = ms % 1000
    if moment.second or millis:
        text += f":{moment.second:02d}"
    if millis:
        text += f".{millis:03d}"
    return text


def cell_text(ts: int, value: bytes, maxlength: int | None = None, type_name: str = "Put") -> str:
    """`Table#to_string`: a put's value, a delete marker's key type (`CellUtil.isDelete`: `type=DeleteFamily`)."""
    if type_name == "Put":
        text = f"timestamp={local_date_time(ts)}, value={to_string_binary(value)}"
    else:
        text = f"timestamp={local_date_time(ts)}, type={type_name}"
    return text[:maxlength] if maxlength is not None and maxlength >= 0 else text


def two_columns(first: str, second: str, inset: bool = True) -> str:
    """Formatter#row for two columns at width 0: ` first second`; the header (no inset) `first  second`."""
    return f" {first} {second}" if inset else f"{first}  {second}"


# ---------------------------------------------------------------------------------------------- arguments
def ArgumentError(message: str) -> Exception:  # noqa: N802 (stands for the shell's class)
    """The shell's ArgumentError (imported when raised: minihbase.shell imports this module)."""
    from minihbase.shell import ArgumentError as error

    return error(message)


def _bytes(value: Any, what: str) -> bytes:
    """`x.to_s.to_java_bytes`: strings as their bytes (escapes kept), numbers as their text."""
    if isinstance(value, RStr):
        return value.raw
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value).encode()
    raise ArgumentError(f"{what} must be a String, got {value!r}")


def _column(spec: Any) -> list:
    """`CellUtil.parseColumn`: `cf` = the family (qualifier null), `cf:` = the empty qualifier."""
    family, sep, qualifier = _bytes(spec, "column").partition(b":")
    return [family.hex(), qualifier.hex() if sep else None]


def _columns(value: Any) -> list[list]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ArgumentError("COLUMNS must be specified as a String or an Array")
    return [_column(c) for c in value]


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{what} must be an integer, got {value!r}")
    return value


def _time_range(value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ArgumentError(f"TIMERANGE must be [min, max], got {value!r}")
    return [_int(value[0], "TIMERANGE"), _int(value[1], "TIMERANGE")]


def _ruby(value: Any) -> str:
    """Ruby's `inspect`, for HBase's argument errors."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_ruby(k)}=>{_ruby(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_ruby(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + str(value) + '"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def _options(opts: dict, allowed: set[str], command: str) -> dict:
    unknown = [str(k) for k in opts if str(k) not in allowed]
    if unknown:
        raise ArgumentError(f"minihbase's {command} does not support {', '.join(unknown)} (it takes "
                            f"{', '.join(sorted(allowed))})")
    return {str(k): v for k, v in opts.items()}


def _table(table: Any) -> str:
    if not isinstance(table, str):
        raise ArgumentError("Table name must be of type String")
    return table_text(*split_table(str(table)))


def _call(sh, op: str, table: Any, body: dict) -> dict:
    """A data request; TableNotFoundException becomes the shell's `Unknown table t!` (translate_hbase_exceptions)."""
    from minihbase.shell import ShellError

    try:
        return sh.control(f"/control/data/{op}", {"table": _table(table), **body})
    except ShellError as e:
        if str(e).startswith("org.apache.hadoop.hbase.TableNotFoundException"):
            raise ShellError(f"Unknown table {table}!") from None
        raise


# ---------------------------------------------------------------------------------------------- commands
def cmd_put(sh, table, row, column, value, timestamp: Any = None, args: Any = None) -> None:
    if isinstance(timestamp, dict):  # attributes given without a timestamp
        timestamp, args = None, timestamp
    if args:
        raise ArgumentError(f"minihbase's put does not support {', '.join(map(str, args))} (ATTRIBUTES, "
                            "VISIBILITY and TTL are not modelled)")
    family, qualifier = _column(column)
    body = {"row_hex": _bytes(row, "row").hex(), "family_hex": family, "qualifier_hex": qualifier or "",
            "value_hex": _bytes(value, "value").hex()}
    if timestamp is not None:
        body["timestamp"] = _int(timestamp, "timestamp")
    _call(sh, "put", table, body)


def cmd_get(sh, table, row, *args: Any) -> None:
    opts: dict = {}
    if args and isinstance(args[0], dict):
        opts = _options(args[0], GET_OPTIONS, "get")
    elif args:
        flat = [c for a in args for c in (a if isinstance(a, list) else [a])]
        opts = {"COLUMNS": flat}
    body: dict = {"row_hex": _bytes(row, "row").hex()}
    maxlength = opts.pop("MAXLENGTH", None)
    if "FILTER" in opts:
        body["filter"] = str(opts.pop("FILTER"))
    if opts:
        columns = opts.get("COLUMN", opts.get("COLUMNS"))
        if columns is None and "TIMESTAMP" not in opts and "TIMERANGE" not in opts:
            raise ArgumentError(f"Failed parse of {_ruby(opts)}, Hash")
        if columns is not None:
            body["columns"] = _columns(columns)
        body["versions"] = _int(opts.get("VERSIONS", 1), "VERSIONS")
        if "TIMESTAMP" in opts:
            body["timestamp"] = _int(opts["TIMESTAMP"], "TIMESTAMP")
        if "TIMERANGE" in opts:
            body["time_range"] = _time_range(opts["TIMERANGE"])
    cells = _call(sh, "get", table, body)["cells"]
    sh.print(two_columns("COLUMN", "CELL", inset=False))
    for family, qualifier, ts, value in cells:
        column = f"{to_string_binary(bytes.fromhex(family))}:{to_string_binary(bytes.fromhex(qualifier))}"
        sh.print(two_columns(column, cell_text(ts, bytes.fromhex(value), maxlength)))
    sh.print(f"{1 if cells else 0} row(s)")


def cmd_scan(sh, table, args: Any = None) -> None:
    if args is not None and not isinstance(args, dict):
        raise ArgumentError("Args should be a Hash")
    opts = _options(args or {}, SCAN_OPTIONS, "scan")
    body: dict = {}
    if "COLUMNS" in opts or "COLUMN" in opts:
        body["columns"] = _columns(opts.get("COLUMNS", opts.get("COLUMN")))
    for key, field in (("STARTROW", "start_hex"), ("STOPROW", "stop_hex"), ("ROWPREFIXFILTER", "prefix_hex")):
        if key in opts:
            body[field] = _bytes(opts[key], key).hex()
    if "LIMIT" in opts:
        body["limit"] = _int(opts["LIMIT"], "LIMIT")
    if "TIMESTAMP" in opts:
        body["timestamp"] = _int(opts["TIMESTAMP"], "TIMESTAMP")
    if "TIMERANGE" in opts:
        body["time_range"] = _time_range(opts["TIMERANGE"])
    if "VERSIONS" in opts:
        body["versions"] = _int(opts["VERSIONS"], "VERSIONS")
    if "FILTER" in opts:
        body["filter"] = str(opts["FILTER"])
    if opts.get("REVERSED"):
        body["reversed"] = True
    if opts.get("RAW"):
        body["raw"] = True
    maxlength = opts.get("MAXLENGTH")
    rows = _call(sh, "scan", table, body)["rows"]
    sh.print(two_columns("ROW", "COLUMN+CELL", inset=False))
    for row, cells in rows:
        key = to_string_binary(bytes.fromhex(row))
        for family, qualifier, ts, value, *kind in cells:
            column = f"{to_string_binary(bytes.fromhex(family))}:{to_string_binary(bytes.fromhex(qualifier))}"
            text = cell_text(ts, bytes.fromhex(value), maxlength, *kind)
            sh.print(two_columns(key, f"column={column}, {text}"))
    sh.print(f"{len(rows)} row(s)")


def cmd_deleteall(sh, table, row, column: Any = None, timestamp: Any = None, args: Any = None) -> None:
    if isinstance(timestamp, dict) or args:
        raise ArgumentError("minihbase's deleteall does not support VISIBILITY")
    body: dict = {}
    if column not in (None, ""):
        body["column"] = _column(column)
    if timestamp is not None:
        body["timestamp"] = _int(timestamp, "timestamp")
    if isinstance(row, dict):  # {ROWPREFIXFILTER => 'p'}: every row with the prefix (_deleterows_internal)
        opts = _options(row, {"ROWPREFIXFILTER"}, "deleteall")
        if "ROWPREFIXFILTER" not in opts:
            raise ArgumentError("deleteall takes a row or {ROWPREFIXFILTER => 'prefix'}")
        found = _call(sh, "scan", table, {"prefix_hex": _bytes(opts["ROWPREFIXFILTER"], "ROWPREFIXFILTER").hex(),
                                          "filter": "FirstKeyOnlyFilter()"})["rows"]
        for key, _ in found:
            _call(sh, "deleteall", table, {"row_hex": key, **body})
        return
    _call(sh, "deleteall", table, {"row_hex": _bytes(row, "row").hex(), **body})


DATA_COMMANDS = {"put": cmd_put, "get": cmd_get, "scan": cmd_scan, "deleteall": cmd_deleteall}
