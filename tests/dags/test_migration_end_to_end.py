"""The migration DAG end to end through `airflow dags test`, against minihbase dc1 -> dc2, with a writer doing
puts, overwrites and deletes on the source during the copy and the catch-up. The verdict is an independent
comparison of every row's latest cells (value and timestamp) on both sides, through stock happybase."""
from argparse import Namespace
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_migration_with_live_writes_loses_nothing(tmp_path, zookeeper):
    from demo.run import run

    result = run(Namespace(rows=4000, write_rate=40.0, cores=2, timeout_s=1200.0, workdir=str(tmp_path / "demo"),
                           zookeeper=zookeeper.hosts))
    assert result["dag_exit_code"] == 0, result
    assert result["run_status"] == "success", result
    writer = result["writer"]
    # The writer really ran during the copy and the catch-up, with every kind of edit.
    assert writer["puts"] > 0 and writer["overwrites"] > 0 and writer["deletes"] > 0, writer
    assert writer["errors"] == 0, writer
    # The deferrable catch-up left every poll in the ledger: at least the stable window the demo asks for (3).
    assert result["catch_up"]["lag_samples"] >= 3, result["catch_up"]
    for table, r in result["tables"].items():
        cmp = r["independent_comparison"]
        assert cmp["differences"] == 0, (table, cmp)
        assert cmp["source_rows"] == cmp["target_rows"] > 0, (table, cmp)
        assert r["rows_copied"] and r["rows_copied"] > 0, (table, r)
        assert r["verification"] == "clean", (table, r)
