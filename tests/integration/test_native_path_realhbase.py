"""The native data path on real HBase (the session's realhbase bed, dc1 -> dc2): the copy and the verification run
in Spark's JVMs with HBase's own client, raw. Only real HBase can show what a raw scan holds: every kind of delete
marker, the cells a KEEP_DELETED_CELLS family keeps, the puts a marker masks. Each test has tables of its own.
"""
from __future__ import annotations

import json
import uuid

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow]


def shell(bed, name: str, statements: list[str]) -> str:
    proc = bed.shell(name, "".join(s + "\n" for s in statements))
    assert proc.returncode == 0 and "ERROR" not in proc.stdout, f"shell on {name}: {proc.stdout[-3000:]}"
    return proc.stdout


def both(bed, statements: dict[str, list[str]]) -> dict[str, str]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(shell, bed, name, s) for name, s in statements.items()}
        return {name: f.result() for name, f in futures.items()}


def raw_cells(stdout: str) -> list[str]:
    """Every cell line of the raw scans in a shell's output (row, column, timestamp, type or value), in order."""
    return [line for line in stdout.splitlines() if line.startswith(" ") and " column=" in line]


def connection(endpoints: dict, name: str) -> str:
    conn = json.loads(json.dumps(endpoints[name]["connection"]))
    conn["extra"]["data_path"] = "native"
    return json.dumps(conn)


def run_job(kind: str, endpoints: dict, table: str, *extra: str) -> tuple[int, dict]:
    import io
    from contextlib import redirect_stdout

    from hbase_migration.jobs import copy_table, verify_table

    main = copy_table.main if kind == "copy" else verify_table.main
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["--source", connection(endpoints, "dc1"), "--target", connection(endpoints, "dc2"),
                   "--table", table, "--master", "local[2]", *extra])
    return rc, json.loads(out.getvalue().strip().splitlines()[-1])


def family_version_delete(table: str, row: str, family: str, ts: int) -> list[str]:
    """A DeleteFamilyVersion marker (the shell has no command for it: HBase's client API in its JRuby)."""
    return [
        "conn = org.apache.hadoop.hbase.client.ConnectionFactory.createConnection(@shell.hbase.configuration)",
        f"tb = conn.getTable(org.apache.hadoop.hbase.TableName.valueOf('{table}'))",
        f"d = org.apache.hadoop.hbase.client.Delete.new('{row}'.to_java_bytes)",
        f"d.addFamilyVersion('{family}'.to_java_bytes, {ts})",
        "tb.delete(d)",
        "conn.close",
    ]


@pytest.fixture
def table(realhbase):
    """A table on both clusters (split at 'm'): family d keeps 3 versions, k 2 with KEEP_DELETED_CELLS."""
    name = f"native_{uuid.uuid4().hex[:8]}"
    create = (f"create '{name}', {{NAME => 'd', VERSIONS => 3}}, {{NAME => 'k', VERSIONS => 2, "
              f"KEEP_DELETED_CELLS => true}}, SPLITS => ['m']")
    both(realhbase, {"dc1": [create], "dc2": [create]})
    yield name
    drop = [f"disable '{name}'", f"drop '{name}'"]
    both(realhbase, {"dc1": drop, "dc2": drop})


def test_a_raw_copy_carries_every_delete_marker_and_every_kept_cell(realhbase, spark, table):
    """Puts, and every kind of delete marker at its own timestamp, each masking puts older than itself (written
    after it: the interplay of a pre-T0 delete and an old-timestamp put), on both sides of the region boundary;
    a KEEP_DELETED_CELLS family's deleted cell. The target's raw scan must equal the source's, cell for cell."""
    endpoints = realhbase.endpoints()
    t = table
    shell(realhbase, "dc1", [
        f"put '{t}', 'a1', 'd:q', 'v1', 1000", f"put '{t}', 'a1', 'd:q', 'v2', 2000",
        f"put '{t}', 'a1', 'd:r', 'x', 1500",
        f"deleteall '{t}', 'a2', 'd:q', 5000",  # DeleteColumn on a row that had nothing yet
        f"put '{t}', 'a2', 'd:q', 'masked', 4000",  # older than the marker: masked on the source
        f"delete '{t}', 'a3', 'd:q', 3000", f"put '{t}', 'a3', 'd:q', 'one', 3000",  # Delete (one version)
        f"put '{t}', 'a3', 'd:q', 'ok', 2000",
        f"put '{t}', 'b1', 'k:q', 'kept', 1000", f"delete '{t}', 'b1', 'k:q', 1000",  # KEEP_DELETED_CELLS
        f"deleteall '{t}', 'z2', 'd', 3000", f"put '{t}', 'z2', 'd:q', 'under', 2000",  # DeleteFamily
        f"put '{t}', 'z3', 'd:q', 'v', 3000", f"put '{t}', 'z3', 'd:r', 'w', 3000",
        *family_version_delete(t, "z3", "d", 3000),  # DeleteFamilyVersion
        f"put '{t}', 'z9', 'd:q', 'z', 3000",
    ])
    scan = [f"scan '{t}', {{RAW => true, VERSIONS => 10}}"]
    before = raw_cells(shell(realhbase, "dc1", scan))
    markers = sum("type=Delete" in line for line in before)
    assert markers == 5, before

    rc, summary = run_job("copy", endpoints, t)
    assert rc == 0, summary
    assert summary["data_path"] == "native" and summary["delete_markers"] == markers
    after = both(realhbase, {"dc1": scan, "dc2": scan})
    source, target = raw_cells(after["dc1"]), raw_cells(after["dc2"])
    # the source may have flushed meanwhile (a flush drops masked puts): the target holds what the copy read, and
    # the source's raw scan now is a subset of it with the same markers
    assert set(source) <= set(target) and set(target) <= set(before), (source, target, before)
    assert [c for c in target if "type=Delete" in c] == [c for c in before if "type=Delete" in c]
    assert " b1 column=k:q, timestamp=1970-01-01T00:00:01, value=kept" in target  # the deleted cell is kept

    rc, result = run_job("verify", endpoints, t)
    assert rc == 0 and result["identical"], result
    assert result["data_path"] == "native" and result["matching"] == 7  # a1 a2 a3 b1 z2 z3 z9


def test_native_verify_names_each_cell_only_one_side_shows_and_passes_over_what_both_hide(realhbase, spark, table):
    """After a native copy: a column deleted on the target only (its marker, and the put it now masks there), a row
    only on the target, and on the source a put its own marker masks (shown by neither side: no difference)."""
    endpoints = realhbase.endpoints()
    t = table
    shell(realhbase, "dc1", [f"put '{t}', 'a1', 'd:q', 'v', 1000", f"deleteall '{t}', 'a2', 'd:q', 5000",
                             f"put '{t}', 'a2', 'd:q', 'masked', 4000", f"put '{t}', 'z1', 'd:q', 'z', 3000"])
    rc, summary = run_job("copy", endpoints, t)
    assert rc == 0 and summary["delete_markers"] == 1, summary
    both(realhbase, {"dc1": [f"put '{t}', 'a2', 'd:q', 'masked-too', 4500"],
                     "dc2": [f"deleteall '{t}', 'a1', 'd:q', 1500", f"put '{t}', 'z9', 'd:q', 'extra', 1000"]})

    rc, result = run_job("verify", endpoints, t, "--recompare-sleep-s", "1")
    assert rc == 1 and not result["identical"], result
    assert (result["matching"], result["content_different"], result["only_in_source"], result["only_in_target"]) == \
        (2, 1, 0, 1), result
    assert result["differing_rows_sample"] == {"content_different": ["a1"], "only_in_source": [],
                                               "only_in_target": ["z9"]}
    assert result["differing_versions_sample"] == [
        {"row": "a1", "column": "d:q", "timestamp": 1500, "kind": "marker_only_on_target", "type": "DeleteColumn"},
        {"row": "a1", "column": "d:q", "timestamp": 1000, "kind": "missing_on_target"},
        {"row": "z9", "column": "d:q", "timestamp": 1000, "kind": "only_on_target"},
    ]
    assert (result["recompared_rows"], result["recompare_changed_rows"]) == (2, 0)  # nothing in flight

    rc, counted = run_job("verify", endpoints, t, "--level", "rows")  # RowCounter's rows: those a read shows
    assert (counted["source_rows"], counted["target_rows"]) == (2, 2), counted
