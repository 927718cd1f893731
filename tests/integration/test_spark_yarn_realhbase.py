"""The copy and verify Spark jobs on a real YARN (issue 30), client and cluster mode, against real HBase (realhbase).

The bed is the session's `realhbase` with YARN added beside dc2 (`realhbase_yarn`: a ResourceManager and a
NodeManager from Hadoop 3.4.2's jars). The Airflow operators submit through SparkSubmitOperator with the
`spark_yarn` (cluster) or `spark_yarn_client` (client) connection that `endpoints --json` gives, and spark-submit
reads what an operator's machine would have: HADOOP_CONF_DIR (the bed's core-, hdfs- and yarn-site) and
SPARK_CONF_DIR (the bed's spark-defaults.conf: PySpark's jars `local:`, the nodes' Python, 512 MiB containers).
Nothing else (SPARK_SUBMIT_OPTS only gives spark-submit's own JVM a heap): the operator ships the toolkit's code
itself (--py-files) and empties PYTHONPATH for spark-submit, so a container imports nothing from this checkout.

Each test has its own table on both clusters (a unique prefix), dropped afterwards. Verdicts: the job's summary as
the task received it (through the ledger, from a driver in a container in cluster mode) names the YARN application
and the containers that ran it; YARN's own REST API says the application succeeded; an independent comparison of
every version of every cell (demo/workload.py's plain Thrift2 client) finds no difference. The killed driver's test
(the application master's JVM SIGKILLed mid-copy) proves from the ledger's records and YARN's application attempts
that the second attempt resumed and copied no finished key range again.

Every spark-submit to YARN costs about a minute here (an AM, an executor, Python workers on two shared cores):
`full`, run by `make test-yarn`.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from deploy import spark_jvm
from realhbase.testbed import pid_alive
from tests.snapshot_bed import BedTable, load, shell_ok, unique

# Each test: a copy and a verification (about a minute and a half each), or a copy of two application attempts; two
# shell calls to create and two to drop.
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
    # spark-submit's own heap in cluster mode (in client mode the launcher's -Xmx of spark.driver.memory follows and
    # wins); the quicker JVM flags, without the class archive (HADOOP_CONF_DIR's place in the class path voids it)
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", " ".join([*spark_jvm.FLAGS, "-Xmx256m"]))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(endpoints["dc1"]["connection"]))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps(endpoints["dc2"]["connection"]))
    for conn_id, conn in yarn["connections"].items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    return bed, endpoints, yarn


@contextlib.contextmanager
def own_table(bed, endpoints: dict, rows: int = 600, splits: tuple[bytes, ...] = (b"40", b"80", b"c0")):
    """A table of the test's own on both clusters (len(splits) + 1 regions on dc1, the same families on dc2), rows
    with several versions and explicit old timestamps on dc1; dropped from both at the end of the test's body (not
    in a fixture's teardown: the shared bed stops right after the last test that uses it, before fixtures end)."""
    t = BedTable(unique("yarn_"), splits)
    for cluster in ("dc1", "dc2"):
        shell_ok(bed, cluster, t.create_statements())
    try:
        load(endpoints["dc1"], t, rows)
        yield t
    finally:
        for cluster in ("dc1", "dc2"):
            shell_ok(bed, cluster, [f"disable '{t.name}'", f"drop '{t.name}'"])


def _rm(yarn: dict, path: str) -> dict:
    """The ResourceManager's REST API (/ws/v1/cluster/...)."""
    with urllib.request.urlopen(f"{yarn['resourcemanager']['web_ui']}/ws/v1/cluster/{path}", timeout=30) as r:
        return json.loads(r.read())


def _rm_app(yarn: dict, app_id: str) -> dict:
    return _rm(yarn, f"apps/{app_id}")["app"]


def app_attempts(yarn: dict, app_id: str) -> list[dict]:
    """The application's attempts as YARN records them (id, startTime, containerId: the AM's container)."""
    return sorted((_rm(yarn, f"apps/{app_id}/appattempts").get("appAttempts") or {}).get("appAttempt") or [],
                  key=lambda a: int(a["id"]))


def _running_app(yarn: dict, name: str) -> str | None:
    """The id of the running Spark application named `name` (None: none yet)."""
    apps = (_rm(yarn, "apps?applicationTypes=SPARK&states=RUNNING").get("apps") or {}).get("app") or []
    ids = [a["id"] for a in apps if a["name"] == name]
    assert len(ids) <= 1, apps
    return ids[0] if ids else None


def _container_jvm(container_id: str) -> int | None:
    """The pid of the JVM a YARN container runs (its command line names the container's log directory), found
    in /proc; None when there is none (not started yet, or gone)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and argv[0].endswith("/java") and any(container_id in a for a in argv[1:]):
            return int(entry.name)
    return None


def _container_processes(container_id: str) -> list[int]:
    """Every live process a YARN container started (its launch script, the JVM, a driver's Python): their
    environment names the container (CONTAINER_ID, set by the NodeManager)."""
    wanted = f"CONTAINER_ID={container_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0") and pid_alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _ran_on_yarn(summary: dict, mode: str, yarn: dict) -> dict:
    return assert_ran_on_yarn(summary["spark"], mode, yarn)


def assert_ran_on_yarn(spark: dict, mode: str, yarn: dict, final: str = "SUCCEEDED") -> dict:
    """A job's `spark` (its summary's) names a YARN application in `mode` that YARN itself says ended `final`
    (SUCCEEDED; FAILED for a verification whose driver exited 1, its verdict: differences found), and every
    executor (and in cluster mode the driver) ran in a container of it, importing the toolkit from the zip the job
    shipped. Shared with the migration DAG's test on YARN (tests/dags/test_migration_yarn_realhbase.py)."""
    assert spark and spark["master"] == "yarn" and spark["deploy_mode"] == mode, spark
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
    assert (app["applicationType"], app["finalStatus"]) == ("SPARK", final), app
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
    from hbase_migration.operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

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


# The killed copy: 8 regions of 100 rows each, every copy task held to 15 rows/s (the per-task throttle), so a
# partition takes some 7 s and the copy, two tasks at a time in its one executor, about half a minute.
KILL_SPLITS = (b"20", b"40", b"60", b"80", b"a0", b"c0", b"e0")
KILL_ROWS = 800
# An attempt's states from its application master's registration on (YARN's RMAppAttemptState)
REGISTERED = {"RUNNING", "FINISHING", "FINISHED", "FAILED", "KILLED"}


def test_driver_container_killed_mid_copy_resumes_without_copying_a_finished_range_again(yarn_env):
    """Cluster mode; the driver's container (the application master's JVM, which runs the driver) is SIGKILLed
    once the ledger holds some finished partitions and not all. The driver, not an executor: it is the process that
    holds the copy's plan and records finished partitions, so its loss is the one only the ledger can recover
    from (an executor's loss is retried by Spark inside the same driver, which knows what finished without the
    ledger). YARN starts the application's second attempt (yarn.resourcemanager.am.max-attempts, 2 by default),
    whose driver plans again and resumes from the ledger; the task, following the application through the
    ResourceManager, receives that attempt's summary. Proved from the ledger's records, YARN's attempts and the
    summary, not timing: the second attempt skipped exactly the partitions the first recorded and copied only the
    others, the first's records are untouched (a partition copied again is recorded again), every key range is
    recorded once and their rows add up to the table's."""
    from hbase_migration.ledger.store import Ledger
    from hbase_migration.operators.spark import HBaseCopyTableOperator

    bed, endpoints, yarn = yarn_env
    ledger_url = os.environ["AIRFLOW__HBASE_MIGRATION__LEDGER_URL"]
    with own_table(bed, endpoints, KILL_ROWS, KILL_SPLITS) as table:
        copy_id = unique("yarnkill-")
        copy = HBaseCopyTableOperator(task_id="copy_killed", table=table.name, spark_conn_id="spark_yarn",
                                      copy_id=copy_id, hold_switches=False, rows_per_s=15, name=f"copy-{table.name}")
        outcome: dict = {}

        def execute():
            try:
                outcome["summary"] = copy.execute({})
            except BaseException as e:  # noqa: BLE001 - reported by the assertions
                outcome["error"] = e

        with Ledger.open(ledger_url) as ledger:  # its schema, before the driver and this test use it side by side
            task = threading.Thread(target=execute, name="copy-task", daemon=True)
            task.start()
            try:
                _kill_the_driver_mid_copy(yarn, endpoints, table.name, task, outcome,
                                          lambda: ledger.finished_ranges(copy_id, table.name))
            finally:
                if task.is_alive():  # a failed assertion: the application is killed, not left copying
                    copy.on_kill()


def _kill_the_driver_mid_copy(yarn: dict, endpoints: dict, table: str, task: threading.Thread, outcome: dict,
                              finished) -> None:
    from tests.polling import wait_for

    total = len(KILL_SPLITS) + 1
    app_id = wait_for(lambda: _running_app(yarn, f"copy-{table}") or (not task.is_alive() and outcome), 600,
                      "the copy's YARN application to run", interval=1, ignore=(OSError,))
    assert isinstance(app_id, str), outcome  # the task ended before its application ran
    wait_for(lambda: finished() or not task.is_alive(), 600, "a first partition recorded in the ledger",
             interval=0.2)
    at_kill = finished()
    assert 1 <= len(at_kill) < total, (at_kill, outcome)  # mid-copy: some partitions finished, not all
    [first] = app_attempts(yarn, app_id)
    am_container = first["containerId"]
    assert am_container.startswith(f"container_{app_id.split('_', 1)[1]}_01_"), first
    pid = _container_jvm(am_container)
    assert pid is not None, f"no JVM of {am_container} (the application master, which runs the driver)"
    os.kill(pid, signal.SIGKILL)
    # Every process of the killed container gone (the driver's Python too), then what the first attempt recorded,
    # read while no second attempt has registered: a driver records a partition only after its application master
    # registered (the attempt RUNNING) and a task finished, so none of these is the second attempt's.
    wait_for(lambda: not _container_processes(am_container), 120,
             f"every process of the killed container {am_container} to be gone", interval=0.2)
    first_records = {r["partition_id"]: r for r in finished()}
    later = [a for a in app_attempts(yarn, app_id) if int(a["id"]) > 1]
    assert all(a["appAttemptState"] not in REGISTERED for a in later), (
        "the second attempt registered before the first one's records were read: the test cannot tell them apart",
        later)
    assert set(first_records) >= {r["partition_id"] for r in at_kill}, (at_kill, first_records)
    wait_for(lambda: not task.is_alive(), 900, "the copy task to end", interval=1)
    assert "error" not in outcome, outcome
    attempts = app_attempts(yarn, app_id)
    assert len(attempts) == 2 and attempts[0]["containerId"] == am_container, attempts
    second = attempts[1]["containerId"]

    summary = outcome["summary"]
    assert summary["failed_partitions"] == 0 and summary["partitions"] == total, summary
    # the second attempt skipped exactly what the first had recorded, and copied only the rest
    assert summary["skipped_partitions"] == len(first_records) < total, (summary, first_records)
    assert summary["copied_partitions"] == total - len(first_records), summary
    copied = {(r["start_row"], r["stop_row"]) for r in summary["partition_results"]}
    assert len(copied) == summary["copied_partitions"], summary["partition_results"]
    earlier = {(r["start_row"].hex(), r["stop_row"].hex()) for r in first_records.values()}
    assert not any(_overlap(a, b) for a in copied for b in earlier), (copied, earlier)
    after = {r["partition_id"]: r for r in finished()}
    for partition, record in first_records.items():  # never recorded again: not copied again
        assert after[partition]["finished_ms"] == record["finished_ms"], (record, after[partition])
    # every key range once, and the rows of the ranges add up to the table's
    ranges = sorted((r["start_row"], r["stop_row"]) for r in after.values())
    assert len(ranges) == total and ranges[0][0] == b"" and ranges[-1][1] == b"", ranges
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), ranges
    assert sum(r["rows"] for r in after.values()) == KILL_ROWS, after

    # the application: the killed container was its first attempt's AM, the summary's driver ran in the second's,
    # and YARN says the application succeeded
    spark = _ran_on_yarn(summary, "cluster", yarn)
    assert spark["application_id"] == app_id, spark
    assert spark["driver"]["container"] == second != am_container, (spark, attempts)

    independent = _compare(endpoints, table)
    assert independent["differences"] == 0, independent
    assert independent["source_rows"] == independent["target_rows"] == KILL_ROWS, independent
    print(f"\nkilled {am_container} (pid {pid}) of {app_id} with {len(first_records)} of {total} partitions "
          f"recorded; attempt 2 ({second}) skipped {summary['skipped_partitions']}, copied "
          f"{summary['copied_partitions']}; differences {independent['differences']}")


def _overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether key ranges [start, stop) in hex ('' stop: the end of the table) share a key."""
    (a0, a1), (b0, b1) = [(bytes.fromhex(x), bytes.fromhex(y)) for x, y in (a, b)]
    return (not b1 or a0 < b1) and (not a1 or b0 < a1)
