"""The ledger's reads for the dashboard's charts and list: the copy plan (partitions planned), the series the
charts draw (oldest first, bounded), and the list of migrations without the watch's runs. Real SQLite files;
exact expectations."""
from __future__ import annotations

import pytest

from hbase_migration.ledger.store import ALL_TABLES, NO_PEER, Ledger, LedgerError


@pytest.fixture
def ledger(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as opened:
        opened.start_run("run-1", "hbase_table_migration", "manual", "zk:2181:/hbase", "zkb:2181:/hbase", "mig1",
                         ["t1", "t2"], copy_id="copy-1", started_ms=1_000)
        yield opened


def test_copy_plan_keeps_the_first_planning_instant_and_the_latest_figures(ledger):
    ledger.copy_plan("copy-1", "t1", 8, est_rows=8_000, planned_ms=2_000)
    ledger.copy_plan("copy-1", "t1", 9, planned_ms=5_000)  # a resumed copy plans again
    ledger.copy_plan("copy-1", "t2", 2, planned_ms=2_100)
    ledger.copy_plan("other-copy", "t1", 50, planned_ms=1)
    assert ledger.copy_progress("copy-1") == {
        "plans": {"t1": {"partitions": 9, "est_rows": None, "planned_ms": 2_000, "replanned_ms": 5_000},
                  "t2": {"partitions": 2, "est_rows": None, "planned_ms": 2_100, "replanned_ms": 2_100}},
        "partitions": [],
    }


@pytest.mark.parametrize("args, message", [
    (("copy-1", "t1", -1), "partitions must be a non-negative integer, got -1"),
    (("copy-1", "", 3), "table must be a non-empty string, got ''"),
    (("copy-1", "t1", 3, 2.5), "est_rows must be a non-negative integer, got 2.5"),
])
def test_copy_plan_refuses_bad_input(ledger, args, message):
    with pytest.raises(LedgerError) as err:
        ledger.copy_plan(*args)
    assert str(err.value) == message


def test_copy_progress_lists_finished_partitions_in_finishing_order_newest_kept(ledger):
    for i, finished in enumerate((3_000, 2_500, 4_000)):
        ledger.partition_done("copy-1", "t1", f"p{i}", b"", b"", rows=10 * (i + 1), cells=1, bytes=1,
                              finished_ms=finished)
    rows = ledger.copy_progress("copy-1")["partitions"]
    assert [(r["partition_id"], r["finished_ms"], r["row_count"]) for r in rows] == [
        ("p1", 2_500, 20), ("p0", 3_000, 10), ("p2", 4_000, 30)]
    assert [r["partition_id"] for r in ledger.copy_progress("copy-1", limit=2)["partitions"]] == ["p0", "p2"]


def test_chart_series_folds_queues_per_server_and_sample(ledger):
    ledger.lag_sample("run-1", "mig1", [
        {"server": "rs1", "queue_id": "mig1", "size_of_log_queue": 3, "age_of_last_shipped_op_ms": 0,
         "shipped_ops": 0},
        {"server": "rs1", "queue_id": "mig1-rs9,1,1", "size_of_log_queue": 2, "age_of_last_shipped_op_ms": 700,
         "shipped_ops": 0},
        {"server": "rs2", "queue_id": "mig1", "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 50,
         "shipped_ops": 4},
    ], sampled_ms=10_000)
    ledger.lag_sample("run-1", "mig1", [
        {"server": "rs1", "queue_id": "mig1", "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 20,
         "shipped_ops": 9}], sampled_ms=20_000)
    ledger.quota_sample("run-1", "/hbase", space_consumed=5, space_quota=100, ns_consumed=1, ns_quota=None,
                        sampled_ms=20_000)
    ledger.quota_sample("run-1", "/hbase", space_consumed=4, space_quota=100, ns_consumed=1, ns_quota=None,
                        sampled_ms=10_000)
    ledger.copy_plan("copy-1", "t1", 4, planned_ms=9_000)
    series = ledger.chart_series("run-1")
    assert series["lag"] == [
        {"sampled_ms": 10_000, "server": "rs1", "queues": 2, "size_of_log_queue": 5, "age_of_last_shipped_op_ms": 700},
        {"sampled_ms": 10_000, "server": "rs2", "queues": 1, "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 50},
        {"sampled_ms": 20_000, "server": "rs1", "queues": 1, "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 20},
    ]
    assert [(q["sampled_ms"], q["space_consumed"]) for q in series["quota"]] == [(10_000, 4), (20_000, 5)]
    assert series["copy"]["plans"]["t1"]["partitions"] == 4
    assert [p["sampled_ms"] for p in ledger.chart_series("run-1", limit=1)["lag"]] == [20_000]
    with pytest.raises(LedgerError, match="run_id 'nope' is not in the ledger"):
        ledger.chart_series("nope")


def test_recent_runs_can_leave_out_one_plan_before_the_limit(ledger):
    for i in range(3):  # the watch runs every 10 minutes: newer than the migration
        ledger.start_run(f"watch-{i}", "hbase_replication_watch", "watch", "zk:2181:/hbase", "zk:2181:/hbase",
                         NO_PEER, [ALL_TABLES], started_ms=5_000 + i)
    assert [r["run_id"] for r in ledger.recent_runs(2)] == ["watch-2", "watch-1"]
    assert [r["run_id"] for r in ledger.recent_runs(2, except_plan="watch")] == ["run-1"]
    with pytest.raises(LedgerError, match="except_plan must be a non-empty string"):
        ledger.recent_runs(2, except_plan="")


def test_a_copy_records_its_plan_in_the_ledger_not_in_a_savepoint_file(ledger, tmp_path):
    from hbase_migration.data.partitions import Partition
    from hbase_migration.data.progress import LedgerStore, SavepointFile, record_plan

    plan = [Partition("t1", 0, b"", b"m", "r0", "t1/0", est_rows=40),
            Partition("t1", 1, b"m", b"", "r1", "t1/1", est_rows=60)]
    record_plan(LedgerStore(ledger), "copy-1", "t1", plan)
    assert ledger.copy_progress("copy-1")["plans"]["t1"]["partitions"] == 2
    assert ledger.copy_progress("copy-1")["plans"]["t1"]["est_rows"] == 100
    record_plan(LedgerStore(ledger), "copy-1", "t2", [plan[0], Partition("t2", 1, b"m", b"", "r1", "t2/1")])
    assert ledger.copy_progress("copy-1")["plans"]["t2"]["est_rows"] is None  # one estimate unknown
    savepoint = SavepointFile(tmp_path / "savepoint.json")
    record_plan(savepoint, "copy-1", "t1", plan)
    record_plan(None, "copy-1", "t1", plan)  # a copy without a store
    assert not (tmp_path / "savepoint.json").exists()


def test_find_run_answers_none_for_a_run_it_does_not_hold(ledger):
    assert ledger.find_run("run-1") == ledger.run_summary("run-1")["run"]
    assert ledger.find_run("nope") is None
