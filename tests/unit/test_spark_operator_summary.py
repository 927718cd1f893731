"""The Spark operators' two channels to a driver that may run in any container (issue 30): the job's summary comes
back through the ledger under a key the task chose, and the job's code goes with it as one zip (--py-files). The
spark-submit itself is replaced here by a stand-in "driver" that does what the job's last lines do."""
from __future__ import annotations

import json
import zipfile

import pytest

CLUSTER = {"conn_type": "hbase", "host": "thrift.dc1", "port": 9090,
           "extra": {"zookeeper_quorum": "zk1", "zookeeper_port": 2181, "znode_parent": "/hbase"}}


@pytest.fixture
def connections(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(CLUSTER))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps({**CLUSTER, "host": "thrift.dc2"}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", url)
    return url


def fake_driver(monkeypatch, summary: dict | None, seen: dict) -> None:
    """spark-submit replaced: parse the job's argv as the job does, keep the summary where it is told to."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.data import jobargs
    from hbase_migration.data.progress import write_summary

    def execute(self, context):
        seen.update(py_files=self.py_files, env_vars=dict(self.env_vars or {}), argv=list(self.application_args))
        with zipfile.ZipFile(self.py_files.split(",")[0]) as zf:
            seen["zip"] = set(zf.namelist())
        ns = jobargs.verify_parser().parse_args(self.application_args)
        jobargs.summary_args_check(ns)
        if summary is not None:
            assert write_summary(ns, "verify", json.dumps(summary), "verify_table") is None

    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)


def test_a_cluster_mode_driver_s_summary_reaches_the_task_through_the_ledger(connections, monkeypatch):
    from hbase_migration.ledger.store import Ledger
    from operators.spark import HBaseVerifyTableOperator

    seen: dict = {}
    summary = {"identical": True, "level": "content", "spark": {"application_id": "application_1_0001",
                                                                 "deploy_mode": "cluster"}}
    fake_driver(monkeypatch, summary, seen)
    op = HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id="spark_yarn", py_files="extra.zip")
    assert op.execute({}) == summary
    argv = seen["argv"]
    key = argv[argv.index("--summary-key") + 1]
    assert key.startswith("verify/t/verify/") and argv[argv.index("--summary-ledger-url") + 1] == connections
    assert "--summary-file" not in argv  # no local path: the driver may be in a container on another host
    with Ledger.open(connections) as ledger:
        assert ledger.take_job_summary(key) is None  # taken by the task
    # the code goes with the job, the operator's own py_files after it; on YARN nothing of this checkout's path
    shipped, given = seen["py_files"].split(",")
    assert "hbase_migration" in shipped.rsplit("/", 1)[1] and given == "extra.zip"
    assert {"jobs/copy_table.py", "jobs/spark_job.py", "hbase_migration/data/runner.py",
            "sql/queries.sql"} <= seen["zip"]
    assert seen["env_vars"] == {"PYTHONPATH": ""}


def test_elsewhere_the_worker_s_interpreter_and_checkout_stay_the_job_s(connections, monkeypatch):
    import sys

    from operators.spark import REPO, HBaseVerifyTableOperator

    seen: dict = {}
    fake_driver(monkeypatch, {"identical": True}, seen)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_local").execute({}) == {
        "identical": True}
    assert seen["env_vars"] == {"PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}


def test_a_job_that_kept_no_summary_fails_the_task(connections, monkeypatch):
    from airflow.sdk.exceptions import AirflowException

    from operators.spark import HBaseVerifyTableOperator

    fake_driver(monkeypatch, None, {})
    with pytest.raises(AirflowException, match="verify of t failed"):
        HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_yarn").execute({})
