"""The batch job's pure parts (hbase_migration/data/batch.py): its argv from a single table's, each table's options
from the batch's arguments, the progress line in tables."""
from __future__ import annotations

import pytest

from hbase_migration.data import jobargs
from hbase_migration.data.batch import BatchMeter, batch_args, batch_parser, table_options

SRC, DST = '{"thrift_host": "a", "thrift_port": 1}', '{"thrift_host": "b", "thrift_port": 2}'


def test_the_batch_argv_is_the_tables_argv_with_tables_for_table():
    one = jobargs.copy_job_args(SRC, DST, "t1", versions=2, copy_id="run-1", ledger_url_file="u", summary_key="k",
                                summary_ledger_url_file="u")
    assert batch_args(one, ["t1", "ns:t2"], "b03", 4) == [
        "--source", SRC, "--target", DST, "--tables", "t1", "ns:t2", "--batch", "b03", "--versions", "2",
        "--copy-id", "run-1", "--ledger-url-file", "u", "--summary-ledger-url-file", "u", "--summary-key", "k",
        "--tables-at-once", "4"]
    assert batch_args(jobargs.verify_job_args(SRC, DST, "t1"), ["t1"], "b1") == [
        "--source", SRC, "--target", DST, "--tables", "t1", "--batch", "b1"]
    with pytest.raises(ValueError, match="at least one table"):
        batch_args(one, [], "b")


def test_each_tables_options_are_the_batchs_with_its_name():
    ns = batch_parser("copy").parse_args(["--source", SRC, "--target", DST, "--tables", "a", "b", "--versions", "3",
                                         "--start-time-ms", "5"])
    opts = table_options("copy", ns, ns.tables)
    assert [(o.table, o.target_table, o.versions, o.start_time_ms) for o in opts] == [("a", "a", 3, 5),
                                                                                      ("b", "b", 3, 5)]
    verify = batch_parser("verify").parse_args(["--source", SRC, "--target", DST, "--tables", "a", "--repair"])
    assert [(o.table, o.repair) for o in table_options("verify", verify, verify.tables)] == [("a", True)]


@pytest.mark.parametrize("argv, message", [
    (["--tables", "a", "--table", "b"], "--table and --target-table are the single-table job's"),
    (["--tables", "a", "--target-table", "b"], "--table and --target-table are the single-table job's"),
    (["--tables", "a", "b", "a"], "--tables: 'a' is given twice — name each table once"),
])
def test_bad_batch_arguments_are_usage_errors(argv, message):
    ns = batch_parser("copy").parse_args(["--source", SRC, "--target", DST, *argv])
    with pytest.raises(jobargs.UsageError, match=message):
        table_options("copy", ns, ns.tables)


def test_a_batch_needs_its_tables():
    with pytest.raises(jobargs.UsageError, match="the following arguments are required: --tables"):
        batch_parser("verify").parse_args(["--source", SRC, "--target", DST])


def test_the_batch_progress_counts_tables_and_projects_the_rest():
    now = [100.0]
    meter = BatchMeter("b1", 4, clock=lambda: now[0])
    assert meter.line() == "batch b1: 0/4 tables done (0 failed), 0 in flight, 0s elapsed, ETA unknown"
    meter.begin(), meter.begin()
    now[0] = 130.0
    assert meter.end(True) == "batch b1: 1/4 tables done (0 failed), 1 in flight, 30s elapsed, ETA 90s"
    now[0] = 140.0
    assert meter.end(False) == "batch b1: 2/4 tables done (1 failed), 0 in flight, 40s elapsed, ETA 40s"


def test_a_batchs_verification_passes_the_method_to_its_job_which_picks_each_tables():
    """`auto` is decided per table by its size (in the batch's job), so the operator passes the run spec's method
    as given; each table's options carry it, and a method the job does not know is refused at once."""
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.operators.batch import HBaseVerifyBatchOperator

    for method in ("auto", "cells", "hash"):
        op = HBaseVerifyBatchOperator(task_id="verify", tables=["a", "b"], batch="b1", verify_method=method)
        assert op._resolve_method() == method
    with pytest.raises(AirflowFailException, match="verify_method must be auto, cells or hash, got 'sha'"):
        HBaseVerifyBatchOperator(task_id="verify", tables=["a"], verify_method="sha")._resolve_method()
    argv = batch_args(jobargs.verify_job_args(SRC, DST, "a", method="hash"), ["a", "b"], "b1")
    ns = batch_parser("verify").parse_args(argv)
    assert [(o.table, o.method) for o in table_options("verify", ns, ns.tables)] == [("a", "hash"), ("b", "hash")]


def test_each_tables_result_names_the_batchs_spark_application():
    from hbase_migration.operators.batch import with_application

    app = {"application_id": "application_1_0001", "master": "yarn", "deploy_mode": "cluster"}
    assert with_application({"spark": app}, {"rows": 3}) == {"rows": 3, "spark": app}
    own = {"rows": 3, "spark": {"application_id": "other"}}
    assert with_application({"spark": app}, own) is own  # a table's own report is kept
    assert with_application({}, {"rows": 3}) == {"rows": 3}  # no application reported: nothing added
