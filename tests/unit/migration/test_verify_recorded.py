"""What the verify task records in the ledger: differences as found, or, after a repair that read back equal, the
tables as the task leaves them, so that a cut-over accepts the run (its own final verification still compares
everything again)."""
from __future__ import annotations

import pytest

from hbase_migration.data.verify import ledger_counts
from hbase_migration.ledger.store import Ledger
from hbase_migration.migration.cutover import SwitchRefused, plan_cutover

FOUND = {"source_rows": 10, "target_rows": 11, "matching": 8, "content_different": 1, "only_in_source": 1,
         "only_in_target": 1}


def test_counts_as_found_or_as_left_after_a_repair():
    assert ledger_counts(FOUND, repaired=False) == FOUND
    assert ledger_counts(FOUND, repaired=True) == {"source_rows": 10, "target_rows": 10, "matching": 10,
                                                   "content_different": 0, "only_in_source": 0, "only_in_target": 0}


def _summary(repair: dict) -> dict:
    return {**FOUND, "level": "content", "identical": False, "failed_partitions": 0, "start_time_ms": 0,
            "end_time_ms": None, "differing_rows_sample": {"content_different": ["r1"]}, "repair": repair}


@pytest.fixture
def ledger_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", url)
    with Ledger.open(url) as ledger:
        ledger.start_run("run-1", "hbase_table_migration", "adhoc", "zk1:2181:/a", "zk2:2181:/b", "p1", ["t"])
    return url


def _operator():
    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    return HBaseVerifyTableOperator(task_id="verify", table="t", ledger_run_id="run-1", repair=True)


def test_a_repaired_verification_is_recorded_clean_and_the_cut_over_accepts_the_run(ledger_url):
    summary = _summary({"repaired_rows": 3, "still_different": 0, "conflicts": 0, "not_repaired": 0})
    assert _operator()._finish(summary, None) is summary
    with Ledger.open(ledger_url) as ledger:
        ledger.end_run("run-1", "success")
        recorded = ledger.run_summary("run-1")
    [verification] = recorded["verification"]["t"]
    assert verification["clean"] and verification["matching"] == 10
    assert plan_cutover(recorded).peer_id == "p1"  # before the fix: refused, "1 rows differ in content"
    with Ledger.open(ledger_url) as ledger:  # the repair itself stays with the verify phase
        assert '"repaired_rows": 3' in ledger.run_summary("run-1")["phases"]["t"]["verify"]["detail"]


def test_an_unrepaired_difference_is_recorded_as_found_and_refuses_the_cut_over(ledger_url):
    from airflow.exceptions import AirflowException

    summary = _summary({"repaired_rows": 2, "still_different": 1, "conflicts": 0, "not_repaired": 0})
    with pytest.raises(AirflowException, match="rows differ in content"):
        _operator()._finish(summary, None)
    with Ledger.open(ledger_url) as ledger:
        ledger.end_run("run-1", "success")
        recorded = ledger.run_summary("run-1")
    assert not recorded["verification"]["t"][0]["clean"]
    with pytest.raises(SwitchRefused, match="not clean"):
        plan_cutover(recorded)
