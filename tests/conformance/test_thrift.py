"""Conformance of the Thrift1 and Thrift2 gateways as the data path uses them (tests/conformance/thrift_probes.py):
per-cell timestamps and versions, TTimeRange, batchSize and `partial`, every delete type and puts arriving after
markers, errors and unknown or closed scanners, region listings, and a scanner left idle past the gateway's
socket timeout.

Tables are made and dropped through Thrift2 itself (`createTable`, `disableTable`, `deleteTable`): no shell call,
so this module costs seconds on either backend, plus in make test-full what is left of the idle scanner's minute (on
realhbase it has idled since the suite started: nothing; on minihbase, whose pair lives one module, most of it).
"""
from __future__ import annotations

import time
import uuid

import pytest

from tests.conformance import thrift_probes as tp
from tests.conformance.conftest import IDLE, Backend, observe, open_idle_scanner, server_host

pytestmark = [pytest.mark.integration, pytest.mark.realhbase]

SUFFIX = uuid.uuid4().hex[:6]  # the session's real bed is shared: names no other test uses
TABLES = {  # role -> (families {name: VERSIONS}, split keys)
    "versions": ({"cf": 3, "x": 1}, [b"m"]),
    "batch": ({"cf": 3}, []),
    "deletes": ({"cf": 10, "x": 10}, []),
    "thrift1": ({"cf": 3, "x": 3}, [b"t1-s"]),
}
MISSING = b"conf_no_such_table"
# The gateways close a connection idle this long (hbase.thrift.server.socket.read.timeout, 60 s by default)
IDLE_S = 65


def name(role: str) -> bytes:
    return f"conf_{role}_{SUFFIX}".encode()


@pytest.fixture(scope="module")
def thrift(backend: Backend):
    """(Thrift1 client, Thrift2 client) of dc1, with the module's tables; the tables dropped afterwards."""
    _, h = tp.thrift_modules()
    ep = backend.endpoints()["dc1"]
    t2 = tp.client("thrift2", ep["thrift2"])
    t1 = tp.client("thrift", ep["thrift"])
    made = []
    try:
        for role, (families, splits) in TABLES.items():
            tname = h.TTableName(ns=b"default", qualifier=name(role))
            t2.createTable(h.TTableDescriptor(tableName=tname, columns=[
                h.TColumnFamilyDescriptor(name=f.encode(), maxVersions=v) for f, v in families.items()]), splits)
            made.append(tname)
        yield t1, t2
    finally:
        for tname in made:
            try:
                t2.disableTable(tname)
                t2.deleteTable(tname)
            except Exception:  # noqa: BLE001 - best effort; the failure that matters is the test's
                pass
        t1.close()
        t2.close()


@pytest.fixture(scope="module")
def idle_scanner(backend: Backend, thrift):
    """The backend's idle scanner (conftest.open_idle_scanner): opened when the suite started on realhbase, when
    this module started on minihbase (whose pair lives one module); closed and its table dropped afterwards."""
    _, h = tp.thrift_modules()
    idle = open_idle_scanner(backend)
    yield idle
    IDLE.pop(backend.name, None)
    try:
        tname = h.TTableName(ns=b"default", qualifier=idle["table"])
        thrift[1].disableTable(tname)
        thrift[1].deleteTable(tname)
    finally:
        idle["client"].close()


def test_thrift2_timestamps_and_versions(request, backend, thrift, idle_scanner):
    observe(request, backend, tp.thrift2_timestamps_and_versions(thrift[1], name("versions")))


def test_thrift2_batch_size(request, backend, thrift):
    observe(request, backend, tp.thrift2_batch_size(thrift[1], name("batch")))


def test_thrift2_deletes(request, backend, thrift):
    observe(request, backend, tp.thrift2_deletes(thrift[1], name("deletes")))


def test_thrift2_errors(request, backend, thrift):
    observe(request, backend, tp.thrift2_errors(thrift[1], name("versions"), MISSING),
            difference=thrift2_error_difference)


def thrift2_error_difference(real, mini) -> None:
    """Listed differences `thrift2-missing-table`: HBase 2.6's TIOError for a missing table carries
    TableNotFoundException's message alone (the table's name; minihbase prefixes the Java class, as the reference
    says), and its openScanner on a missing table answers a scanner id (the table is looked up at the first
    getScannerRows) where minihbase answers the TIOError at once. The toolkit accepts both forms
    (datapath/thrift2.py `_table_missing`). Everything else equal. Asserted exactly."""
    table = MISSING.decode()
    assert isinstance(real["openScanner_missing_table"], int), real
    assert mini["openScanner_missing_table"] == ("raised", "TIOError",
                                                 f"org.apache.hadoop.hbase.TableNotFoundException: {table}")
    expected = dict(real, openScanner_missing_table=mini["openScanner_missing_table"])
    for key in ("get_missing_table", "put_missing_table"):
        assert real[key] == ("raised", "TIOError", table), real[key]
        expected[key] = ("raised", "TIOError", f"org.apache.hadoop.hbase.TableNotFoundException: {table}")
    assert expected == mini


def _servers(backend: Backend) -> dict:
    """(host, port, start code) of each dc1 region server -> its slot's placeholder."""
    out = {}
    for slot, rs in enumerate(backend.endpoints()["dc1"]["region_servers"]):
        host, port, code = rs["servername"].split(",")
        out[(host, int(port), int(code))] = f"<dc1 rs{slot}>"
    return out


def test_thrift2_regions(request, backend, thrift):
    regions = tp.thrift2_regions(thrift[1], name("versions"), _servers(backend))
    # the region id is the table's creation time: named, checked to be one instant for both regions
    assert len({r[6] for r in regions}) == 1, regions
    got = [(r[0].replace(SUFFIX.encode(), b"<suffix>"), *r[1:6], "<region id>", r[7] != "?") for r in regions]
    observe(request, backend, got)


def test_thrift1_timestamps_and_versions(request, backend, thrift):
    observe(request, backend, tp.thrift1_timestamps_and_versions(thrift[0], name("thrift1")))


def test_thrift1_errors(request, backend, thrift):
    got = tp.thrift1_errors(thrift[0], name("thrift1"), MISSING)
    observe(request, backend, got, difference=thrift1_error_difference)


def thrift1_error_difference(real, mini) -> None:
    """Listed difference `thrift1-stack-trace`: HBase's Thrift1 IOError message is the exception's whole Java
    stack trace (its first line is the `<class>: <message>` minihbase sends), and a region's NoSuchColumnFamily
    names the full region name and describes the table in full. The toolkit reads only the first line's class.
    Everything else equal. Asserted exactly."""
    for key, answer in real.items():
        if isinstance(answer, tuple) and answer[:2] == ("raised", "IOError"):
            lines = answer[2].split("\n")
            assert len(lines) > 10 and lines[1].startswith("\tat org.apache.hadoop.hbase."), (key, lines[:3])
            first = lines[0]
            mini_text = mini[key][2]
            if "NoSuchColumnFamilyException" in mini_text:
                family = "Column family nofam does not exist in region "
                assert family in answer[2] and family in mini_text, (answer[2][:300], mini_text)
                assert mini_text.startswith("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: ")
            else:
                assert first == mini_text, (first, mini_text)
        else:
            assert answer == mini[key], key


def test_thrift1_regions(request, backend, thrift):
    host = server_host(backend)
    got = [(r[0], r[1], r[2], r[3], r[4].replace(SUFFIX.encode(), b"<suffix>"))
           for r in tp.thrift1_regions(thrift[0], name("thrift1"), {host: "<host>"})]
    observe(request, backend, got)


@pytest.mark.full  # a minute idle on each backend (the stand-in's not overlapped): a listed difference the data
# path handles either way (it re-opens its connection and its scan); make test keeps the other probes
def test_thrift2_idle_scanner(request, backend, thrift, idle_scanner):
    """A scanner left idle past the gateways' socket timeout: what its connection answers, then what a new
    connection answers for the same scanner id (the data path re-opens its scan where it stopped either way)."""
    from thriftpy2.transport import TTransportException

    client, sid, opened, first = (idle_scanner[k] for k in ("client", "sid", "opened", "first"))
    time.sleep(max(0.0, IDLE_S - (time.monotonic() - opened)))
    try:
        same = ("rows", [r.row for r in client.getScannerRows(sid, 10)])
    except TTransportException as exc:
        same = ("transport error", exc.type)
    fresh = tp.client("thrift2", backend.endpoints()["dc1"]["thrift2"])
    try:
        again = tp.call(lambda: [r.row for r in fresh.getScannerRows(sid, 10)])
    finally:
        fresh.close()
    observe(request, backend, {"first": first, "same connection": same, "new connection": again},
            difference=idle_difference)


def idle_difference(real, mini) -> None:
    """Listed difference `idle-60s`: after a minute idle HBase 2.6's gateway has closed the connection (its
    socket read timeout, 60 s) and forgotten the scanner (a new connection gets "Invalid scanner Id"); minihbase
    keeps both (connections until closed, scanners 10 minutes). The data path re-opens its connection and its
    scan where it stopped on either answer. Asserted exactly."""
    assert real == {"first": [b"idle-0"], "same connection": ("transport error", 4),
                    "new connection": ("raised", "TIllegalArgument", "Invalid scanner Id")}, real
    assert mini == {"first": [b"idle-0"], "same connection": ("rows", [b"idle-1", b"idle-2"]),
                    "new connection": []}, mini
