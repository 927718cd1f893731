"""minihbase's raw scan (`scan 't', {RAW => true}`, HBase's `Scan.setRaw(true)`): delete markers shown with their key
types, as HBase 2.4+'s shell prints them (`Table#to_string`: `column=cf:, timestamp=<LocalDateTime>,
type=DeleteFamily`). Issue 31: a repair may call a row `masked_by_delete` only when its markers are shown to hide
the cells, and the shell's raw scan is where an operator (and the toolkit) reads them.
"""
from __future__ import annotations

import subprocess
import uuid

import pytest

from minihbase.shell_data import local_date_time

pytestmark = pytest.mark.integration

MAX = 9223372036854775807


def shell(cluster, *statements: str) -> list[str]:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return [line for line in proc.stdout.splitlines() if not line.startswith("Took ")]


@pytest.fixture(scope="module")
def table(minihbase_dc1):
    name = "raw_" + uuid.uuid4().hex[:8]
    minihbase_dc1.create_table(name, {"d": {"max_versions": 3}, "h": {"max_versions": 2}}, [b"m"])
    shell(minihbase_dc1,
          f"put '{name}', 'a1', 'd:a', 'old', 1000",
          f"put '{name}', 'a1', 'h:a', 'old', 1000",
          f"deleteall '{name}', 'a1', 'd', 2000",      # DeleteFamily d at 2000: masks d:a@1000
          f"put '{name}', 'a1', 'd:a', 'new', 3000",
          f"deleteall '{name}', 'a1', 'h:a', 1500",    # DeleteColumn h:a at 1500
          f"deleteall '{name}', 'n2', 'd', 2500",      # a row that holds only a marker, in the 2nd region
          f"put '{name}', 'z3', 'd:a', 'v', 4000")
    return name


def test_a_raw_scan_shows_markers_with_their_types_in_hbase_order(minihbase_dc1, table):
    lines = shell(minihbase_dc1, f"scan '{table}', {{RAW => true, VERSIONS => 10}}")
    assert lines == [
        "ROW  COLUMN+CELL",
        f" a1 column=d:, timestamp={local_date_time(2000)}, type=DeleteFamily",
        f" a1 column=d:a, timestamp={local_date_time(3000)}, value=new",
        f" a1 column=h:a, timestamp={local_date_time(1500)}, type=DeleteColumn",
        f" n2 column=d:, timestamp={local_date_time(2500)}, type=DeleteFamily",
        f" z3 column=d:a, timestamp={local_date_time(4000)}, value=v",
        "3 row(s)",
    ]
    # Without RAW, as before: no markers, no marker-only row.
    assert shell(minihbase_dc1, f"scan '{table}'") == [
        "ROW  COLUMN+CELL",
        f" a1 column=d:a, timestamp={local_date_time(3000)}, value=new",
        f" z3 column=d:a, timestamp={local_date_time(4000)}, value=v",
        "2 row(s)",
    ]


def test_a_raw_scan_takes_a_row_range_and_a_time_range(minihbase_dc1, table):
    """The question a repair asks of one row: which markers at or after a cell's timestamp does it hold?"""
    one_row = "STARTROW => 'a1', STOPROW => \"a1\\x00\", RAW => true, VERSIONS => 2147483647"
    assert shell(minihbase_dc1, f"scan '{table}', {{{one_row}, TIMERANGE => [1800, {MAX}]}}") == [
        "ROW  COLUMN+CELL",
        f" a1 column=d:, timestamp={local_date_time(2000)}, type=DeleteFamily",
        f" a1 column=d:a, timestamp={local_date_time(3000)}, value=new",
        "1 row(s)",
    ]
    assert shell(minihbase_dc1, f"scan '{table}', {{{one_row}, TIMERANGE => [3500, {MAX}]}}") == [
        "ROW  COLUMN+CELL", "0 row(s)"]
    assert shell(minihbase_dc1, f"scan '{table}', {{{one_row}, COLUMNS => ['h'], TIMERANGE => [0, {MAX}]}}") == [
        "ROW  COLUMN+CELL",
        f" a1 column=h:a, timestamp={local_date_time(1500)}, type=DeleteColumn",
        "1 row(s)",
    ]
