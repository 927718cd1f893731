"""A batch's tables in one Spark application (issue 42): jobs/copy_tables.py and jobs/verify_tables.py through Spark
local[2] against two minihbase clusters (the module's session, borrowed: one application for every table of a
batch). Each table is copied exactly as alone (timestamps, versions, its own partitions in the ledger and its own
summary); a re-run resumes each table from the ledger; a table refused refuses the batch before anything is
written; a table that differs fails only itself. The batch on real HBase runs in the migration DAG's tests."""
from __future__ import annotations

import json
import uuid

import pytest

from tests.hbase_data import SPLITS, connect, spread_key, write_cells

pytestmark = pytest.mark.integration

BASE = 1_600_000_000_000


@pytest.fixture(scope="module")
def pair(minihbase_pair):
    return minihbase_pair


def _run(job, argv, tmp_path) -> tuple[int, dict]:
    summary = tmp_path / f"summary-{uuid.uuid4().hex[:6]}.json"
    rc = job.main([*argv, "--summary-file", str(summary)])
    return rc, json.loads(summary.read_text()) if summary.exists() else {}


def _tables(dc1, dc2, n: int, rows: int) -> list[str]:
    """`n` tables of `rows` rows, two versions a column, the first split into regions; created on both sides."""
    prefix = f"cb_{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}_{i}" for i in range(n)]
    for i, name in enumerate(names):
        families = {"d": {"max_versions": 2}}
        dc1.create_table(name, families, SPLITS if i == 0 else None)
        dc2.create_table(name, families, SPLITS if i == 0 else None)
        with connect(dc1) as c1:
            write_cells(c1, name, {BASE + 1: {spread_key(r): {b"d:v": b"old%d" % r} for r in range(rows)},
                                   BASE + 2 + i: {spread_key(r): {b"d:v": b"new%d-%d" % (i, r)} for r in range(rows)}})
    return names


def _versions(cluster, table: str, rows: int) -> dict:
    with connect(cluster) as c:
        t = c.table(table)
        return {spread_key(r): t.cells(spread_key(r), b"d:v", versions=5, include_timestamp=True) for r in range(rows)}


def test_one_application_copies_every_table_and_a_rerun_resumes_each(spark, pair, tmp_path):
    from hbase_migration.jobs import copy_tables
    from hbase_migration.ledger.store import Ledger

    dc1, dc2 = pair
    names = _tables(dc1, dc2, 4, 200)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    argv = ["--source", dc1.connection_json, "--target", dc2.connection_json, "--tables", *names,
            "--batch", "b1", "--copy-id", "run-b", "--ledger-url", ledger_url, "--tables-at-once", "3"]
    rc, summary = _run(copy_tables, argv, tmp_path)
    assert rc == 0, summary
    assert summary["failed_tables"] == [] and list(summary["tables"]) == names and summary["tables_at_once"] == 3
    assert summary["spark"]["application_id"] == spark.sparkContext.applicationId  # one application, all tables
    for name in names:  # each table copied as alone: every version, with its source timestamp
        assert _versions(dc2, name, 200) == _versions(dc1, name, 200)
        assert summary["tables"][name]["rows"] == 200 and summary["tables"][name]["failed_partitions"] == 0
    assert summary["rows"] == 800
    with Ledger.open(ledger_url) as ledger:  # each table's own partitions and plan, as alone
        done = {t: len(ledger.done_partitions("run-b", t)) for t in names}
        plans = ledger.copy_progress("run-b")["plans"]
    assert summary["tables"][names[0]]["partitions"] > 1  # the split table's own plan
    assert done == {t: summary["tables"][t]["partitions"] for t in names} == {
        t: plans[t]["partitions"] for t in names}, (done, plans)
    rc, again = _run(copy_tables, argv, tmp_path)  # every table resumes from the ledger: nothing left to copy
    assert rc == 0 and all(again["tables"][t]["skipped_partitions"] == again["tables"][t]["partitions"]
                           and again["tables"][t]["rows"] == 0 for t in names), again


def test_a_refused_table_refuses_the_batch_before_anything_is_written(spark, pair, tmp_path, capsys):
    from hbase_migration.jobs import copy_tables

    dc1, dc2 = pair
    names = _tables(dc1, dc2, 2, 20)
    rc = copy_tables.main(["--source", dc1.connection_json, "--target", dc2.connection_json,
                           "--tables", names[0], "cb_absent_table", names[1]])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("copy_tables: error: 1 of the batch's 3 tables refused, nothing written: "
                             "cb_absent_table: table: 'cb_absent_table' does not exist on the source"), err
    for name in names:
        with connect(dc2) as c2:
            assert list(c2.table(name).scan()) == []
    rc = copy_tables.main(["--source", dc1.connection_json, "--target", dc2.connection_json,
                           "--tables", names[0], names[0]])
    assert rc == 2 and "is given twice" in capsys.readouterr().err


def test_a_table_that_differs_fails_only_itself(spark, pair, tmp_path):
    from hbase_migration.jobs import copy_tables, verify_tables

    dc1, dc2 = pair
    names = _tables(dc1, dc2, 3, 50)
    base = ["--source", dc1.connection_json, "--target", dc2.connection_json]
    rc, _ = _run(copy_tables, [*base, "--tables", *names], tmp_path)
    assert rc == 0
    with connect(dc2) as c2:
        c2.table(names[1]).put(spread_key(7), {b"d:v": b"changed on the target"}, timestamp=BASE + 99)
    rc, summary = _run(verify_tables, [*base, "--tables", *names, "--batch", "v1"], tmp_path)
    assert rc == 1 and summary["failed_tables"] == [names[1]] and summary["identical"] is False, summary
    assert summary["tables"][names[0]]["identical"] and summary["tables"][names[2]]["identical"]
    assert summary["tables"][names[1]]["content_different"] == 1, summary["tables"][names[1]]
