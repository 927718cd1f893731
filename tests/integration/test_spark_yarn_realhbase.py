"""The copy and verify Spark jobs on a real YARN (issue 30), client and cluster mode, against real HBase (realhbase).

The bed is the session's `realhbase` with YARN added beside dc2 (`realhbase_yarn`: a ResourceManager and a
NodeManager from Hadoop 3.4.2's jars). The Airflow operators submit through SparkSubmitOperator with the
`spark_yarn` (cluster) or `spark_yarn_client` (client) connection that `endpoints --json` gives, and spark-submit
reads what an operator's machine would have: HADOOP_CONF_DIR (the bed's core-, hdfs- and yarn-site) and
SPARK_CONF_DIR (the bed's spark-defaults.conf: PySpark's jars `local:`, the nodes' Python, 512 MiB containers).
Nothing else: the operator ships the toolkit's code itself (--py-files) and empties PYTHONPATH for spark-submit, so
a container imports nothing from this checkout.

Each test has its own table on both clusters (a unique prefix), dropped afterwards. Verdicts: the job's summary as
the task received it (through the ledger, from a driver in a container in cluster mode) names the YARN application
and the containers that ran it; YARN's own REST API says the application succeeded; an independent comparison of
every version of every cell (demo/workload.py's plain Thrift2 client) finds no difference.

Every spark-submit to YARN costs about a minute here (an AM, an executor, Python workers on two shared cores):
`full`, run by `make test-yarn`.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.snapshot_bed import BedTable, load, shell_ok, unique

# Each test: a copy and a verification (about a minute and a half each), two shell calls to create and two to drop.
pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.full, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
CONNECTIONS = {"cluster": "spark_yarn", "client": "spark_yarn_client"}
APPLICATION = re.compile(r"^application_\d+_\d+$")


@pytest.fixture
def yarn_env(realhbase_yarn, tmp_path, monkeypatch):
    """What an Airflow worker submitting to this YARN has: the connections, HADOOP_CONF_DIR, SPARK_CONF_DIR, the
    venv's spark-submit on PATH, a ledger of the test's own."""
    bed = realhbase_yarn
    endpoints, yarn = bed.endpoints(), bed.yarn_endpoints()
    assert yarn and yarn["resourcemanager"]["alive"] and yarn["nodemanager"]["alive"], yarn
    monkeypatch.setenv("HADOOP_CONF_DIR", yarn["hadoop_conf_dir"])
    monkeypatch.setenv("SPARK_CONF_DIR", yarn["spark_conf_dir"])
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(endpoints["dc1"]["connection"]))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps(endpoints["dc2"]["connection"]))
    for conn_id, conn in yarn["connections"].items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    return bed, endpoints, yarn


@contextlib.contextmanager
def own_table(bed, endpoints: dict):
    """A table of the test's own on both clusters (4 regions on dc1, the same families on dc2), rows with several
    versions and explicit old timestamps on dc1; dropped from both at the end of the test's body (not in a
    fixture's teardown: the shared bed stops right after the last test that uses it, before fixtures end)."""
    t = BedTable(unique("yarn_"))
    for cluster in ("dc1", "dc2"):
        shell_ok(bed, cluster, t.create_statements())
    try:
        load(endpoints["dc1"], t, 600)
        yield t
    finally:
        for cluster in ("dc1", "dc2"):
            shell_ok(bed, cluster, [f"disable '{t.name}'", f"drop '{t.name}'"])


def _rm_app(yarn: dict, app_id: str) -> dict:
    with urllib.request.urlopen(f"{yarn['resourcemanager']['web_ui']}/ws/v1/cluster/apps/{app_id}", timeout=30) as r:
        return json.loads(r.read())["app"]


def _ran_on_yarn(summary: dict, mode: str, yarn: dict) -> dict:
    """The summary names a YARN application in `mode` that YARN itself says succeeded, and every executor (and in
    cluster mode the driver) ran in a container of it, importing the toolkit from the zip the job shipped."""
    spark = summary["spark"]
    assert spark["master"] == "yarn" and spark["deploy_mode"] == mode, spark
    app_id = spark["application_id"]
    assert APPLICATION.match(app_id), spark
    containers = yarn["containers_dir"]
    suffix = app_id.split("_", 1)[1]
    assert spark["executors"], spark
    for executor in spark["executors"]:
        assert executor["container"].startswith(f"container_{suffix}_"), spark
        assert executor["code"].startswith(containers) and executor["code"].endswith(".zip"), spark
    if mode == "cluster":  # the driver too: in the AM's container, the toolkit from the shipped zip
        assert spark["driver"]["container"].startswith(f"container_{suffix}_"), spark
        assert spark["driver"]["code"].startswith(containers) and spark["driver"]["code"].endswith(".zip"), spark
    else:  # client mode: the driver is the submitting worker's process
        assert spark["driver"]["container"] is None, spark
    app = _rm_app(yarn, app_id)
    assert (app["applicationType"], app["finalStatus"]) == ("SPARK", "SUCCEEDED"), app
    return spark


def _compare(endpoints: dict, table: str) -> dict:
    from demo.workload import Thrift2, compare

    src, dst = Thrift2(endpoints["dc1"]), Thrift2(endpoints["dc2"])
    try:
        return compare(src, dst, table).as_dict()
    finally:
        src.close()
        dst.close()


@pytest.mark.parametrize("mode", ["client", "cluster"])
def test_copy_and_verify_on_yarn(yarn_env, mode):
    bed, endpoints, _yarn = yarn_env
    with own_table(bed, endpoints) as table:
        _copy_and_verify(yarn_env, table, mode)


def _copy_and_verify(yarn_env, table, mode):
    from operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

    _bed, endpoints, yarn = yarn_env
    conn_id = CONNECTIONS[mode]
    copy = HBaseCopyTableOperator(task_id=f"copy_{mode}", table=table.name, spark_conn_id=conn_id,
                                  copy_id=unique("yarncopy-"), hold_switches=False)
    summary = copy.execute({})
    assert summary["failed_partitions"] == 0 and summary["copied_partitions"] == summary["partitions"] == 4, summary
    assert summary["versions"] == "all" and summary["rows"] == 600 < summary["cells"], summary  # and their history
    copy_app = _ran_on_yarn(summary, mode, yarn)

    verify = HBaseVerifyTableOperator(task_id=f"verify_{mode}", table=table.name, spark_conn_id=conn_id,
                                      recompare_sleep_s=0)
    result = verify.execute({})
    assert result["identical"] is True, result
    assert (result["content_different"], result["only_in_source"], result["only_in_target"]) == (0, 0, 0), result
    assert result["source_rows"] == result["target_rows"] == summary["rows"], result
    verify_app = _ran_on_yarn(result, mode, yarn)
    assert verify_app["application_id"] != copy_app["application_id"]

    independent = _compare(endpoints, table.name)  # every version of every column, no toolkit code
    assert independent["differences"] == 0, independent
    assert independent["source_rows"] == independent["target_rows"] == summary["rows"], independent
