"""The Thrift1 and Thrift2 calls the data path relies on, run the same way against any backend.

Each probe takes a connected client (independent thriftpy2 clients over minihbase's IDL files, as the toolkit's
own clients are not the judge here) and a table created by the conformance fixtures, and returns plain data:
lists and tuples of bytes, ints, bools and exception texts, so the two backends' answers compare with `==`.
The only value masked is a server-assigned timestamp ("now"), checked to lie within the call and replaced by
`NOW`.
"""
from __future__ import annotations

import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOW = "NOW"  # a timestamp the server assigned: checked to be within the call, then masked


def thrift_modules():
    import thriftpy2

    hbase1 = thriftpy2.load(str(REPO / "bedkit" / "Hbase.thrift"), module_name="conformance_Hbase_thrift")
    hbase2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="conformance_hbase2_thrift")
    return hbase1, hbase2


def client(kind: str, address: dict):
    """A Thrift1 (`kind` "thrift") or Thrift2 ("thrift2") client of `address` ({host, port})."""
    from thriftpy2.rpc import make_client

    hbase1, hbase2 = thrift_modules()
    service = hbase1.Hbase if kind == "thrift" else hbase2.THBaseService
    return make_client(service, address["host"], address["port"], timeout=60000)


def error(exc: BaseException) -> tuple[str, str]:
    """(the Thrift exception's type, its message) for comparison."""
    return type(exc).__name__, getattr(exc, "message", None) or str(exc)


def call(fn, *args) -> object:
    """fn(*args), or ("raised", type, message) when the server answered with an exception."""
    from thriftpy2.thrift import TApplicationException, TException

    try:
        return fn(*args)
    except (TException, TApplicationException) as exc:
        return ("raised", *error(exc))


# ------------------------------------------------------------------------------------------------ Thrift2

def cells2(result, window: tuple[int, int] | None = None) -> tuple:
    """A TResult as (row, ((family, qualifier, value, timestamp, type), ...), partial, stale)."""
    out = []
    for cv in result.columnValues:
        ts = cv.timestamp
        if window is not None and window[0] <= ts <= window[1]:
            ts = NOW
        out.append((cv.family, cv.qualifier, cv.value, ts, cv.type))
    return result.row, tuple(out), bool(result.partial), bool(result.stale)


def _scan_all(c, table: bytes, tscan, num_rows: int) -> list[list[tuple]]:
    """Every getScannerRows chunk of a scan (each a list of results), the scanner closed at the end."""
    sid = c.openScanner(table, tscan)
    chunks = []
    try:
        while True:
            rows = c.getScannerRows(sid, num_rows)
            chunks.append([cells2(r) for r in rows])
            if not rows:
                return chunks
    finally:
        c.closeScanner(sid)


def thrift2_timestamps_and_versions(c, table: bytes) -> dict:
    """Per-cell timestamps in one putMultiple (the copy's write path), the TPut's timestamp, the server's now;
    VERSIONS kept (cf 3, x 1), TGet maxVersions / timeRange [min, max) / exact timestamp / columns."""
    _, h = thrift_modules()
    cv = h.TColumnValue
    puts = [
        h.TPut(row=b"a1", timestamp=250, columnValues=[
            cv(family=b"cf", qualifier=b"q", value=b"v1", timestamp=100),
            cv(family=b"cf", qualifier=b"q", value=b"v2", timestamp=200),
            cv(family=b"cf", qualifier=b"q", value=b"v3", timestamp=300),
            cv(family=b"cf", qualifier=b"q", value=b"v4", timestamp=400),
            cv(family=b"x", qualifier=b"q", value=b"x1", timestamp=150),
            cv(family=b"x", qualifier=b"q", value=b"x2", timestamp=160),
            cv(family=b"cf", qualifier=b"r", value=b"r1")]),
        h.TPut(row=b"z1", columnValues=[cv(family=b"cf", qualifier=b"", value=b"empty-qualifier", timestamp=7),
                                        cv(family=b"cf", qualifier=b"now", value=b"server-time")]),
    ]
    before = int(time.time() * 1000)
    c.putMultiple(table, puts)
    window = (before - 1, int(time.time() * 1000) + 1)
    get = h.TGet
    return {
        "get_default": cells2(c.get(table, get(row=b"a1")), window),
        "get_versions_10": cells2(c.get(table, get(row=b"a1", maxVersions=10)), window),
        "get_time_range": cells2(c.get(table, get(row=b"a1", maxVersions=10,
                                                  timeRange=h.TTimeRange(minStamp=150, maxStamp=300))), window),
        "get_exact_timestamp": cells2(c.get(table, get(row=b"a1", timestamp=200, maxVersions=10)), window),
        "get_one_column": cells2(c.get(table, get(row=b"a1", maxVersions=2,
                                                  columns=[h.TColumn(family=b"cf", qualifier=b"q")])), window),
        "get_family": cells2(c.get(table, get(row=b"a1", maxVersions=5, columns=[h.TColumn(family=b"x")])), window),
        "get_missing_row": cells2(c.get(table, get(row=b"nothing-here")), window),
        "get_server_time": cells2(c.get(table, get(row=b"z1")), window),
        "scan_versions": [[(r[0], tuple(cell for cell in r[1] if cell[3] != NOW), r[2], r[3])
                           for r in chunk] for chunk in _scan_all(
            c, table, h.TScan(startRow=b"a", stopRow=b"a2", maxVersions=2, caching=1), 5)],
        "scan_both_regions": [[r[0] for r in chunk] for chunk in _scan_all(
            c, table, h.TScan(columns=[h.TColumn(family=b"cf", qualifier=b"q"),
                                       h.TColumn(family=b"cf", qualifier=b"")]), 10)],
        "scan_limit": [[r[0] for r in chunk] for chunk in _scan_all(c, table, h.TScan(limit=1), 10)],
    }


def thrift2_batch_size(c, table: bytes) -> dict:
    """TScan.batchSize on a row wider than the batch: consecutive TResults of one row, `partial` on all but the
    row's last slice; getScannerRows' numRows counts slices."""
    _, h = thrift_modules()
    cv = h.TColumnValue
    cells = [cv(family=b"cf", qualifier=b"c%d" % i, value=b"v%d-%d" % (i, ts), timestamp=ts)
             for i in range(5) for ts in (10, 20)]
    c.putMultiple(table, [h.TPut(row=b"b-wide", columnValues=cells),
                          h.TPut(row=b"b-narrow", columnValues=[cv(family=b"cf", qualifier=b"n", value=b"1",
                                                                   timestamp=5)]),
                          h.TPut(row=b"b-six", columnValues=[cv(family=b"cf", qualifier=b"s%d" % i, value=b"s",
                                                                timestamp=5) for i in range(6)])])
    scan = h.TScan(startRow=b"b-", stopRow=b"b.", batchSize=3, maxVersions=2, caching=100)
    return {
        "batch_3_versions_2_numRows_2": _scan_all(c, table, scan, 2),
        "batch_3_versions_1_numRows_100": _scan_all(
            c, table, h.TScan(startRow=b"b-", stopRow=b"b.", batchSize=3), 100),
        "getScannerResults_batch_4": [cells2(r) for r in c.getScannerResults(
            table, h.TScan(startRow=b"b-wide", stopRow=b"b-wide\x00", batchSize=4, maxVersions=2), 2)],
    }


def thrift2_deletes(c, table: bytes) -> dict:
    """Every TDeleteType as the data path writes them, a row delete, and puts arriving after a marker."""
    _, h = thrift_modules()
    cv = h.TColumnValue

    def versions(row: bytes):
        return cells2(c.get(table, h.TGet(row=row, maxVersions=10)))

    rows = [b"d-column", b"d-column-latest", b"d-columns", b"d-family", b"d-family-version", b"d-row"]
    c.putMultiple(table, [h.TPut(row=row, columnValues=[
        cv(family=fam, qualifier=q, value=b"%s@%d" % (q, ts), timestamp=ts)
        for fam in (b"cf", b"x") for q in (b"a", b"b") for ts in (10, 20, 30)]) for row in rows])
    col = h.TColumn
    deletes = [
        h.TDelete(row=b"d-column", deleteType=h.TDeleteType.DELETE_COLUMN,
                  columns=[col(family=b"cf", qualifier=b"a", timestamp=20)]),
        h.TDelete(row=b"d-column-latest", deleteType=h.TDeleteType.DELETE_COLUMN,
                  columns=[col(family=b"cf", qualifier=b"a")]),
        h.TDelete(row=b"d-columns", deleteType=h.TDeleteType.DELETE_COLUMNS,
                  columns=[col(family=b"cf", qualifier=b"a", timestamp=20)]),
        h.TDelete(row=b"d-family", deleteType=h.TDeleteType.DELETE_FAMILY,
                  columns=[col(family=b"cf", timestamp=20)]),
        h.TDelete(row=b"d-family-version", deleteType=h.TDeleteType.DELETE_FAMILY_VERSION,
                  columns=[col(family=b"cf", timestamp=20)]),
        h.TDelete(row=b"d-row", timestamp=20),
    ]
    answer = c.deleteMultiple(table, deletes)
    after = {row: versions(row) for row in rows}
    # puts at timestamps the markers cover arrive after them (replication's and a resumed copy's case)
    c.putMultiple(table, [
        h.TPut(row=b"d-column", columnValues=[cv(family=b"cf", qualifier=b"a", value=b"again@20", timestamp=20)]),
        h.TPut(row=b"d-columns", columnValues=[cv(family=b"cf", qualifier=b"a", value=b"again@15", timestamp=15),
                                               cv(family=b"cf", qualifier=b"a", value=b"again@25", timestamp=25)]),
        h.TPut(row=b"d-family", columnValues=[cv(family=b"cf", qualifier=b"z", value=b"again@5", timestamp=5)]),
        h.TPut(row=b"d-row", columnValues=[cv(family=b"x", qualifier=b"a", value=b"again@19", timestamp=19)]),
    ])
    single = call(c.deleteSingle, table, h.TDelete(row=b"d-column", deleteType=h.TDeleteType.DELETE_COLUMNS,
                                                     columns=[col(family=b"cf", qualifier=b"b")]))
    return {"deleteMultiple_answer": list(answer), "after_deletes": after,
            "after_late_puts": {row: versions(row) for row in rows}, "deleteSingle_answer": single,
            "after_deleteSingle": versions(b"d-column")}


def thrift2_errors(c, table: bytes, missing: bytes) -> dict:
    """What the data path sees for a missing table, an unknown family, unknown scanner ids."""
    _, h = thrift_modules()
    cv = h.TColumnValue
    return {
        "get_missing_table": call(c.get, missing, h.TGet(row=b"r")),
        "put_missing_table": call(c.put, missing, h.TPut(row=b"r", columnValues=[
            cv(family=b"cf", qualifier=b"q", value=b"v")])),
        "openScanner_missing_table": call(c.openScanner, missing, h.TScan()),
        "regions_missing_table": call(c.getAllRegionLocations, missing),
        "tableExists_missing": call(c.tableExists, h.TTableName(ns=b"default", qualifier=missing)),
        "getScannerRows_unknown_id": call(c.getScannerRows, 987654, 1),
        "closeScanner_unknown_id": call(c.closeScanner, 987654),
        "closed_scanner": _closed_scanner(c, table),
    }


def _closed_scanner(c, table: bytes):
    _, h = thrift_modules()
    sid = c.openScanner(table, h.TScan(limit=1))
    c.closeScanner(sid)
    return call(c.getScannerRows, sid, 1), call(c.closeScanner, sid)


def thrift2_regions(c, table: bytes, servers: dict[tuple[str, int], str]) -> list[tuple]:
    """getAllRegionLocations: (start, end, offline, split, replicaId, regionId, server) with the server named by
    `servers` ({(host, port): placeholder}); the start code checked against it too."""
    out = []
    for loc in c.getAllRegionLocations(table):
        sn, info = loc.serverName, loc.regionInfo
        out.append((info.tableName, info.startKey, info.endKey, info.offline, info.split, info.replicaId,
                    info.regionId, servers.get((sn.hostName, sn.port, sn.startCode), "?")))
    return sorted(out)


# ------------------------------------------------------------------------------------------------ Thrift1

def cells1(rows) -> list[tuple]:
    return [(r.row, tuple(sorted((k, v.value, v.timestamp) for k, v in (r.columns or {}).items())),
             tuple((col.columnName, col.cell.value, col.cell.timestamp) for col in (r.sortedColumns or [])))
            for r in rows]


def thrift1_timestamps_and_versions(c, table: bytes) -> dict:
    """mutateRowTs/mutateRowsTs (one timestamp per call), getVer(Ts), the newest version per column in scans,
    TScan's timestamp [0, ts) and batchSize, deletes through mutateRowTs and deleteAllTs."""
    h, _ = thrift_modules()
    m = h.Mutation
    for ts, value in ((10, b"ten"), (20, b"twenty"), (30, b"thirty")):
        c.mutateRowTs(table, b"t1-row", [m(column=b"cf:q", value=value), m(column=b"x:q", value=value)], ts, {})
    c.mutateRowsTs(table, [h.BatchMutation(row=b"t1-wide", mutations=[
        m(column=b"cf:c%d" % i, value=b"w%d" % i) for i in range(5)])], 40, {})
    out = {
        "getVer": c.getVer(table, b"t1-row", b"cf:q", 10, {}),
        "getVer_x": c.getVer(table, b"t1-row", b"x:q", 10, {}),
        "getVerTs": c.getVerTs(table, b"t1-row", b"cf:q", 30, 10, {}),
        "getRowTs": cells1(c.getRowTs(table, b"t1-row", 20, {})),
        "getRow": cells1(c.getRow(table, b"t1-row", {})),
    }

    def scan(tscan, n=100):
        sid = c.scannerOpenWithScan(table, tscan, {})
        chunks = []
        try:
            while True:
                rows = c.scannerGetList(sid, n)
                chunks.append(cells1(rows))
                if not rows:
                    return chunks
        finally:
            c.scannerClose(sid)

    out["scan_ts_25"] = scan(h.TScan(startRow=b"t1-", stopRow=b"t1.", timestamp=25))
    out["scan_batch_2"] = scan(h.TScan(startRow=b"t1-", stopRow=b"t1.", batchSize=2), 1)
    out["scan_sorted"] = scan(h.TScan(startRow=b"t1-row", stopRow=b"t1-row\x00", sortColumns=True,
                                      columns=[b"cf", b"x:q"]))
    # a delete in the same call as a put: deletes first; isDelete on a column = every version <= ts
    c.mutateRowTs(table, b"t1-row", [m(column=b"cf:q", isDelete=True), m(column=b"cf:new", value=b"n")], 20, {})
    out["after_mutate_delete"] = c.getVer(table, b"t1-row", b"cf:q", 10, {})
    out["after_mutate_put"] = cells1(c.getRow(table, b"t1-row", {}))
    c.deleteAllTs(table, b"t1-row", b"x:q", 20, {})
    out["after_deleteAllTs"] = c.getVer(table, b"t1-row", b"x:q", 10, {})
    out["versions_as_tuples"] = {k: [(cell.value, cell.timestamp) for cell in v] for k, v in out.items()
                                 if k.startswith(("getVer", "after_mutate_delete", "after_deleteAllTs"))}
    for key in list(out["versions_as_tuples"]):
        del out[key]
    return out


def thrift1_errors(c, table: bytes, missing: bytes) -> dict:
    h, _ = thrift_modules()
    return {
        "getRow_missing_table": call(c.getRow, missing, b"r", {}),
        "regions_missing_table": call(c.getTableRegions, missing),
        "scannerGetList_unknown_id": call(c.scannerGetList, 987654, 1),
        "scannerClose_unknown_id": call(c.scannerClose, 987654),
        "mutate_unknown_family": call(c.mutateRow, table, b"r", [h.Mutation(column=b"nofam:q", value=b"v")], {}),
    }


def thrift1_regions(c, table: bytes, hosts: dict[str, str]) -> list[tuple]:
    """getTableRegions: (start, end, version, serverName (named by `hosts`), port known) sorted."""
    return sorted((r.startKey, r.endKey, r.version, hosts.get(r.serverName.decode(), r.serverName.decode()),
                   r.name.split(b",")[0]) for r in c.getTableRegions(table))
