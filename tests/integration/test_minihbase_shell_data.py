"""The shell lookalike's data commands on an unsecured cluster: `put`, `get`, `scan`, `deleteall` with HBase
2.x's arguments and output (non-terminal width), as an operator checks a cluster by hand."""
from __future__ import annotations

import os
import re
import subprocess
import time
import uuid

import pytest

pytestmark = pytest.mark.integration
TOOK = re.compile(r"Took \d+\.\d{4} seconds")


def run(cluster, *statements: str) -> tuple[int, list[str]]:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=60, env={**os.environ, "TZ": "UTC"})
    return proc.returncode, [line for line in proc.stdout.splitlines() if not TOOK.fullmatch(line)]


@pytest.fixture
def table(minihbase_dc1):
    name = f"data_{uuid.uuid4().hex[:6]}"
    minihbase_dc1.create_table(name, {"cf": {"max_versions": 3}, "cg": {}})
    return name


def test_put_then_get_and_scan_print_as_hbase_does(minihbase_dc1, table):
    rc, out = run(minihbase_dc1,
                  f"put '{table}', 'r1', 'cf:a', 'one', 1700000000001",
                  f"put '{table}', 'r1', 'cf:a', 'two', 1700000000002",
                  f"put '{table}', 'r1', 'cg:', 'empty qualifier', 1700000000003",
                  f"put '{table}', \"r\\x01\", 'cf:b', 42, 1700000000004",
                  f"get '{table}', 'r1'",
                  f"get '{table}', 'r1', {{COLUMN => 'cf:a', VERSIONS => 3}}",
                  f"get '{table}', 'r1', 'cg'",
                  f"get '{table}', 'r1', {{COLUMN => 'cf:a', TIMESTAMP => 1700000000001}}",
                  f"get '{table}', 'r1', {{TIMERANGE => [1700000000000, 1700000000002]}}",
                  f"get '{table}', 'absent'",
                  f"scan '{table}'")
    assert rc == 0, out
    assert out == [
        "COLUMN  CELL",
        " cf:a timestamp=2023-11-14T22:13:20.002, value=two",
        " cg: timestamp=2023-11-14T22:13:20.003, value=empty qualifier",
        "1 row(s)",
        "COLUMN  CELL",
        " cf:a timestamp=2023-11-14T22:13:20.002, value=two",
        " cf:a timestamp=2023-11-14T22:13:20.001, value=one",
        "1 row(s)",
        "COLUMN  CELL",
        " cg: timestamp=2023-11-14T22:13:20.003, value=empty qualifier",
        "1 row(s)",
        "COLUMN  CELL",
        " cf:a timestamp=2023-11-14T22:13:20.001, value=one",
        "1 row(s)",
        "COLUMN  CELL",
        " cf:a timestamp=2023-11-14T22:13:20.001, value=one",
        "1 row(s)",
        "COLUMN  CELL",
        "0 row(s)",
        "ROW  COLUMN+CELL",  # rows in byte order: 0x01 before '1'
        " r\\x01 column=cf:b, timestamp=2023-11-14T22:13:20.004, value=42",
        " r1 column=cf:a, timestamp=2023-11-14T22:13:20.002, value=two",
        " r1 column=cg:, timestamp=2023-11-14T22:13:20.003, value=empty qualifier",
        "2 row(s)",
    ]


def test_scan_options(minihbase_dc1, table):
    puts = [f"put '{table}', '{row}', 'cf:q', 'v{row}', 1700000000000" for row in ("a1", "a2", "b1", "b2", "c1")]
    rc, out = run(minihbase_dc1, *puts,
                  f"scan '{table}', {{STARTROW => 'a2', STOPROW => 'b2'}}",
                  f"scan '{table}', {{ROWPREFIXFILTER => 'b'}}",
                  f"scan '{table}', {{LIMIT => 2, REVERSED => true}}",
                  f"scan '{table}', {{FILTER => \"RowFilter(=, 'binary:c1')\", MAXLENGTH => 14}}")
    assert rc == 0, out
    assert out == [
        "ROW  COLUMN+CELL", " a2 column=cf:q, timestamp=2023-11-14T22:13:20, value=va2",
        " b1 column=cf:q, timestamp=2023-11-14T22:13:20, value=vb1", "2 row(s)",
        "ROW  COLUMN+CELL", " b1 column=cf:q, timestamp=2023-11-14T22:13:20, value=vb1",
        " b2 column=cf:q, timestamp=2023-11-14T22:13:20, value=vb2", "2 row(s)",
        "ROW  COLUMN+CELL", " c1 column=cf:q, timestamp=2023-11-14T22:13:20, value=vc1",
        " b2 column=cf:q, timestamp=2023-11-14T22:13:20, value=vb2", "2 row(s)",
        "ROW  COLUMN+CELL", " c1 column=cf:q, timestamp=2023", "1 row(s)",  # MAXLENGTH cuts the cell text
    ]


def test_put_without_a_timestamp_takes_the_servers_now(minihbase_dc1, table):
    before = int(time.time() * 1000)
    rc, _ = run(minihbase_dc1, f"put '{table}', 'r', 'cf:q', 'v'")
    assert rc == 0
    cells = minihbase_dc1._control("/control/data/get", {"table": table, "row_hex": b"r".hex()})["cells"]
    assert len(cells) == 1 and before <= cells[0][2] <= int(time.time() * 1000)


def test_deleteall_a_row_a_column_up_to_a_timestamp_and_by_prefix(minihbase_dc1, table):
    rc, out = run(minihbase_dc1,
                  f"put '{table}', 'r1', 'cf:a', 'old', 10",
                  f"put '{table}', 'r1', 'cf:a', 'new', 20",
                  f"put '{table}', 'r1', 'cf:b', 'b', 20",
                  f"put '{table}', 'r2', 'cf:a', 'x', 20",
                  f"put '{table}', 'p1', 'cf:a', 'x', 20",
                  f"put '{table}', 'p2', 'cg:a', 'x', 20",
                  f"deleteall '{table}', 'r1', 'cf:a', 15",
                  f"get '{table}', 'r1', {{COLUMN => 'cf:a', VERSIONS => 3}}",
                  f"deleteall '{table}', 'r1', 'cf'",
                  f"deleteall '{table}', 'r2'",
                  f"deleteall '{table}', {{ROWPREFIXFILTER => 'p'}}",
                  f"scan '{table}'")
    assert rc == 0, out
    assert out == ["COLUMN  CELL", " cf:a timestamp=1970-01-01T00:00:00.020, value=new", "1 row(s)",
                   "ROW  COLUMN+CELL", "0 row(s)"]


def test_errors_are_hbases(minihbase_dc1, table):
    cases = {
        f"put '{table}', 'r', 'nope:q', 'v'": "ERROR: org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"
                                              ": Column family nope does not exist in region",
        "get 'no_such_table', 'r'": "ERROR: Unknown table no_such_table!",
        "scan 'no_such_table'": "ERROR: Unknown table no_such_table!",
        f"get '{table}', 'r', {{VERSIONS => 2}}": "ERROR: Failed parse of {\"VERSIONS\"=>2}, Hash",
        f"put '{table}', 'r', 'cf:q'": "ERROR: wrong number of arguments (3) for put",
        f"scan '{table}', {{ATTRIBUTES => {{'a' => 'b'}}}}": "ERROR: minihbase's scan does not support ATTRIBUTES",
        f"scan '{table}', {{RAW => true, REVERSED => true}}": "ERROR: minihbase's raw scan does not support FILTER or "
                                                              "REVERSED",
    }
    for statement, error in cases.items():
        rc, out = run(minihbase_dc1, statement)
        assert rc == 1 and out[-1].startswith(error), (statement, out)
