"""Row reads and writes on the master's control endpoint, for the shell lookalike's `put`, `get`, `scan` and
`deleteall` (HBase's Table.put / get / getScanner / delete, done by the shell's own client):

    POST /control/data/put        {"table", "row_hex", "family_hex", "qualifier_hex", "value_hex", "timestamp"}
    POST /control/data/get        {"table", "row_hex", "columns", "timestamp", "time_range", "versions", "filter"}
    POST /control/data/scan       {"table", "start_hex", "stop_hex", "prefix_hex", "columns", "timestamp",
                                   "time_range", "versions", "filter", "limit", "reversed", "raw"}
    POST /control/data/deleteall  {"table", "row_hex", "column", "timestamp"}

Bytes travel hex-encoded; `columns` is `[[family_hex, qualifier_hex or null], ...]` (null: the whole family);
`timestamp` null means the server's now (LATEST_TIMESTAMP). Answers: get `{"cells": [[family_hex, qualifier_hex,
ts, value_hex], ...]}`, scan `{"rows": [[row_hex, cells], ...]}`. A raw scan (`"raw": true`, the shell's `RAW =>
true`; no filter, not reversed) gives every row with a cell or a delete marker in range, each cell with its key
type's name last: `[family_hex, qualifier_hex, ts, value_hex, "DeleteFamily"]` (`Region.raw_row`).

On a secured cluster the caller is the SPNEGO-authenticated principal and AccessController's checks apply (with
no grants made, only superusers pass): a write answers `Insufficient permissions (user=..., scope=..., family=...,
params=[...],action=WRITE)`, a read `Insufficient permissions for user '...' (table=..., action=READ)`. The table
is looked up first: an unknown table is TableNotFoundException whoever asks, as the client's region lookup fails
before any coprocessor runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minihbase.cells import DELETE_COLUMN, DELETE_FAMILY, LATEST_TIMESTAMP, PUT, TYPE_NAMES, Cell
from minihbase.errors import HBaseError, JavaIllegalArgument
from minihbase.filters import parse_filter
from minihbase.httpserver import BadRequest, Request, Response
from minihbase.region import ColumnSelector

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

SCAN_ROWS_LIMIT = 100000  # a shell scan of more rows than this is cut (an operator checks by hand)


def _hex(body: dict, key: str, default: bytes | None = None) -> bytes:
    value = body.get(key)
    if value is None:
        if default is None:
            raise BadRequest(f"{key} is required (hex-encoded bytes)")
        return default
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{key} must be hex-encoded bytes, got {value!r}") from None


def _int(body: dict, key: str, default: int | None = None) -> int | None:
    value = body.get(key, default)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadRequest(f"{key} must be an integer, got {value!r}")
    return value


def _selector(body: dict) -> ColumnSelector:
    families, columns = set(), set()
    for item in body.get("columns") or []:
        if not isinstance(item, list) or len(item) != 2:
            raise BadRequest(f"columns must be [[family_hex, qualifier_hex or null], ...], got {item!r}")
        family = bytes.fromhex(item[0])
        if item[1] is None:
            families.add(family)
        else:
            columns.add(family + b":" + bytes.fromhex(item[1]))
    return ColumnSelector(families, columns)


def _times(body: dict) -> tuple[int | None, int | None]:
    """(time_min, time_max): TIMESTAMP t is [t, t+1), TIMERANGE [a, b) as given."""
    ts = _int(body, "timestamp")
    if ts is not None:
        return ts, ts + 1
    time_range = body.get("time_range")
    if time_range is None:
        return None, None
    if not isinstance(time_range, list) or len(time_range) != 2 or not all(isinstance(t, int) for t in time_range):
        raise BadRequest(f"time_range must be [min, max], got {time_range!r}")
    return time_range[0], time_range[1]


def _cells(cells) -> list[list[Any]]:
    out = []
    for colkey, ts, value in cells:
        family, _, qualifier = colkey.partition(b":")
        out.append([family.hex(), qualifier.hex(), ts, value.hex()])
    return out


def _raw_cells(cells) -> list[list[Any]]:
    """A raw scan's cells: as `_cells`, plus the key type's name (`Put`, `DeleteFamily`, ...)."""
    out = []
    for colkey, ts, typ, value in cells:
        family, _, qualifier = colkey.partition(b":")
        out.append([family.hex(), qualifier.hex(), ts, value.hex(), TYPE_NAMES[typ]])
    return out


class DataApi:
    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster

    def install(self) -> None:
        for name in ("put", "get", "scan", "deleteall"):
            self.cluster.control.route("POST", f"/control/data/{name}", self._handler(getattr(self, name)))

    def _handler(self, fn):
        def handle(request: Request) -> Response:
            body = request.json()
            if not isinstance(body, dict):
                raise BadRequest("request body must be a JSON object")
            table = body.get("table")
            if not isinstance(table, str) or not table:
                raise BadRequest("table is required (a non-empty string)")
            try:
                self.cluster.master.table(table.encode("latin-1"))
                return Response(200, fn(request, table, body))
            except Denied as e:
                return Response(403, {"error": str(e)})
            except (HBaseError, JavaIllegalArgument) as e:
                return Response(409, {"error": e.java_text() if hasattr(e, "java_text") else str(e)})
        return handle

    # ------------------------------------------------------------------------------------------ authorization
    def _require(self, request: Request, text) -> None:
        security = self.cluster.security
        if security is not None and not security.authorizer.is_superuser(request.short_user):
            raise Denied(text())

    def _require_write(self, request: Request, table: str, family: str) -> None:
        from minihbase.security.authz import table_denied

        self._require(request, lambda: table_denied(request.user, table, "WRITE", family=family))

    def _require_read(self, request: Request, table: str) -> None:
        from minihbase.security.authz import read_denied

        self._require(request, lambda: read_denied(request.short_user, table))

    # ------------------------------------------------------------------------------------------ operations
    def put(self, request: Request, table: str, body: dict) -> dict:
        row, family = _hex(body, "row_hex"), _hex(body, "family_hex")
        qualifier, value = _hex(body, "qualifier_hex", b""), _hex(body, "value_hex", b"")
        ts = _int(body, "timestamp")
        self._require_write(request, table, f"{family.decode('latin-1')}:{qualifier.decode('latin-1')}")
        cell = Cell(row, family, qualifier, LATEST_TIMESTAMP if ts is None else ts, PUT, value)
        self.cluster.client.mutate(table.encode("latin-1"), [[cell]])
        return {}

    def deleteall(self, request: Request, table: str, body: dict) -> dict:
        name = table.encode("latin-1")
        row = _hex(body, "row_hex")
        ts = _int(body, "timestamp")
        ts = LATEST_TIMESTAMP if ts is None else ts
        column = body.get("column")
        families = sorted(self.cluster.master.table(name).desc.families)
        if column is None:  # Delete(row, ts): every family <= ts (HRegion.prepareDelete)
            self._require_write(request, table, families[0].decode("latin-1") if families else "")
            cells = [Cell(row, f, b"", ts, DELETE_FAMILY) for f in families]
        else:
            family = bytes.fromhex(column[0])
            if column[1] is None:  # 'cf': addFamily
                self._require_write(request, table, family.decode("latin-1"))
                cells = [Cell(row, family, b"", ts, DELETE_FAMILY)]
            else:  # 'cf:q': addColumns, every version <= ts
                qualifier = bytes.fromhex(column[1])
                self._require_write(request, table, f"{family.decode('latin-1')}:{qualifier.decode('latin-1')}")
                cells = [Cell(row, family, qualifier, ts, DELETE_COLUMN)]
        if cells:  # LATEST_TIMESTAMP markers take the region server's now
            self.cluster.client.mutate(name, [cells])
        return {}

    def get(self, request: Request, table: str, body: dict) -> dict:
        self._require_read(request, table)
        row = _hex(body, "row_hex")
        time_min, time_max = _times(body)
        versions = _int(body, "versions", 1)
        cells = self.cluster.client.get(table.encode("latin-1"), row, _selector(body), time_max, versions, time_min)
        filter_text = body.get("filter")
        if filter_text:  # a Get with a filter: the filter applied to the row, as a one-row scan does
            scanner = self.cluster.client.open_scanner(table.encode("latin-1"), row, row + b"\x00",
                                                       selector=_selector(body), time_max=time_max,
                                                       filter_string=filter_text.encode(), versions=versions,
                                                       time_min=time_min)
            found = scanner.next(1)
            cells = found[0][1] if found else []
        return {"cells": _cells(cells)}

    def scan(self, request: Request, table: str, body: dict) -> dict:
        self._require_read(request, table)
        start, stop = _hex(body, "start_hex", b""), _hex(body, "stop_hex", b"")
        prefix = body.get("prefix_hex")
        if prefix is not None:  # Scan.setRowPrefixFilter: [prefix, prefix + 1)
            start = bytes.fromhex(prefix)
            stop = _prefix_stop(start)
        time_min, time_max = _times(body)
        filter_text = body.get("filter")
        if filter_text:
            parse_filter(filter_text.encode())
        limit = _int(body, "limit")
        if body.get("raw"):
            if filter_text or body.get("reversed"):
                raise BadRequest("minihbase's raw scan does not support FILTER or REVERSED")
            raw = self.cluster.client.raw_scan(table.encode("latin-1"), start, stop, _selector(body), time_min,
                                               time_max, _int(body, "versions", 1),
                                               limit if limit and limit > 0 else SCAN_ROWS_LIMIT)
            return {"rows": [[row.hex(), _raw_cells(cells)] for row, cells in raw]}
        scanner = self.cluster.client.open_scanner(
            table.encode("latin-1"), start, stop, reversed_=bool(body.get("reversed")), selector=_selector(body),
            time_max=time_max, filter_string=filter_text.encode() if filter_text else None,
            versions=_int(body, "versions", 1), time_min=time_min,
            limit=limit if limit and limit > 0 else SCAN_ROWS_LIMIT)
        rows = []
        while True:
            chunk = scanner.next(1000)
            if not chunk:
                return {"rows": [[row.hex(), _cells(cells)] for row, cells in rows]}
            rows.extend(chunk)


def _prefix_stop(prefix: bytes) -> bytes:
    """The first key after every key starting with `prefix` (b"" when there is none)."""
    trimmed = prefix.rstrip(b"\xff")
    return trimmed[:-1] + bytes([trimmed[-1] + 1]) if trimmed else b""


class Denied(Exception):
    """AccessController refused; `str()` is its message."""


def install(cluster: "MiniHBaseCluster") -> DataApi:
    api = DataApi(cluster)
    api.install()
    return api
