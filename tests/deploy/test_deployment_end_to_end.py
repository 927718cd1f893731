"""The migration on the production-shaped deployment (`deploy/`): Airflow's API server, scheduler, DAG processor,
triggerer and two Celery workers (Redis broker, PostgreSQL metadata database and ledger), and a Spark standalone
cluster (a master, two 1-core workers) whose workers have no PYTHONPATH.

One deployment for the module (under pytest's basetemp, so `make test`'s no-leftovers check sees its
sessions); the tests run in order: the executors' environment, the migration triggered through the REST API
with a writer on the source, then a Celery worker killed in the middle of a copy and the copy's resume.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from argparse import Namespace
from pathlib import Path

import pytest

from tests.polling import wait_for

# test-full: make test's run on the deployment is the seeded chaos run (tests/deploy/test_chaos_run.py: a REST-
# triggered migration on Celery workers and Spark standalone, twice, under faults); these are the clean run on
# real HBase, the executors' imports and a killed worker's resume.
pytestmark = [pytest.mark.integration, pytest.mark.deployment, pytest.mark.slow, pytest.mark.full]

REPO = Path(__file__).resolve().parents[2]
DAG_ID = "hbase_table_migration"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    from deploy import Deployment

    dep = Deployment.start(tmp_path_factory.mktemp("deploy"), spark_workers=2, celery_workers=2)
    yield dep
    dep.stop()


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)


def test_executors_import_the_toolkit_only_from_what_the_job_ships(deployment):
    spark = deployment.spark
    for name, pid in spark.worker_pids().items():
        env = _environ(pid)
        assert "PYTHONPATH" not in env, (name, env.get("PYTHONPATH"))
        assert env["PYSPARK_PYTHON"] == sys.executable, name
    # The driver runs as the Airflow workers run spark-submit: the repository on its PYTHONPATH, the deployment's
    # spark-defaults.conf (SPARK_CONF_DIR) naming the master.
    proc = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), str(Path(__file__).with_name(
        "executor_probe.py"))], env=deployment.env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["master"] == spark.master_url
    before, after = probe["before"], probe["after"]
    # An executor (in a worker's work directory) cannot import the toolkit from the repository ...
    assert before["hbase_migration"].startswith("ImportError"), before
    # (The venv may live inside the repository, as in CI's clone: compare path entries, not substrings.)
    entries = [e for e in before["PYTHONPATH"].split(os.pathsep) if e]
    assert str(REPO) not in entries, before
    assert not any((Path(e) / "hbase_migration").exists() for e in entries), before
    assert str(spark.dir) in before["cwd"], before
    # ... only from the zip the job shipped, which the executor fetched into its working directory.
    assert after["hbase_migration"].startswith("./hbase_migration-") and ".zip/" in after["hbase_migration"], after
    assert after["python"] == sys.executable, after


@pytest.mark.timeout(1500)  # a few minutes here; generous for a busy 2-core machine
def test_migration_triggered_through_the_rest_api_runs_on_celery_workers_and_spark_standalone(
        deployment, zookeeper, tmp_path):
    from demo.run import run

    result = run(Namespace(rows=3000, write_rate=30.0, cores=2, timeout_s=1200.0, workdir=str(tmp_path / "demo"),
                           zookeeper=zookeeper.hosts, cluster=True, deployment=deployment, spark_workers=2,
                           celery_workers=2, data_path="thrift2", repair=True))
    assert result["dag_exit_code"] == 0 and result["run_status"] == "success", result
    writer = result["writer"]
    assert writer["puts"] > 0 and writer["overwrites"] > 0 and writer["deletes"] > 0, writer
    assert writer["errors"] == 0, writer
    # Every version of every row of both sides, compared independently (a plain Thrift2 client).
    assert result["differences"] == 0, result
    for table, r in result["tables"].items():
        cmp = r["independent_comparison"]
        assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, (table, cmp)
        assert r["verification"] in ("clean", "repaired"), (table, r)  # see test_migration_end_to_end
        assert {v["kind"] for v in r["versions_found_different"]} <= {"only_on_target"}, (table, r)
    dep_info = result["deployment"]
    tables = sorted(result["tables"])

    # The deferrable catch-up was handed to the triggerer: deferred, with our trigger, by a TriggererJob, and the
    # triggerer wrote the trigger's log.
    drained = dep_info["wait_drained"]
    assert "deferred" in drained["states"] and drained["states"][-1] == "success", drained
    assert drained["trigger"] == "hbase_migration.operators.triggers.ReplicationDrainedTrigger", drained
    assert drained["triggerer_job"]["job_type"] == "TriggererJob", drained
    run_logs = deployment.airflow.home / "logs" / f"dag_id={DAG_ID}" / f"run_id={result['run_id']}"
    trigger_logs = list((run_logs / "task_id=batch.wait_drained").glob("**/*.trigger.*.log"))
    assert trigger_logs and "ReplicationDrainedTrigger" in trigger_logs[0].read_text(), trigger_logs

    # The batches' copies (each table a batch of its own, side by side) ran on both Celery workers (two configured,
    # one task slot each).
    copies = dep_info["mapped_tasks"]["copy"]
    assert sorted(copies) == tables, copies
    assert len(dep_info["copy_workers_used"]) == 2, copies
    assert set(dep_info["copy_workers_used"]) <= {"celery-worker-1", "celery-worker-2"}

    # Each copy and verify was a Spark application on the standalone master, its executors in the workers
    # (as the master's and the workers' JSON endpoints report them), fed the shipped toolkit.
    master = deployment.spark.state()
    worker_ids = {w["id"] for w in master["workers"] if w["state"] == "ALIVE"}
    assert len(worker_ids) == 2, master["workers"]
    finished = {a["id"]: a for a in master["completedapps"]}
    apps = {a["name"]: a for a in dep_info["spark"]["applications"]}
    from hbase_migration.ledger.store import Ledger

    with Ledger.open(deployment.ledger_url) as ledger:  # each table a batch of its own (demo/run.py)
        batch_of = {t: b["batch"] for b in ledger.run_batches(result["run_id"]) for t in b["tables"]}
    for table in tables:
        for kind in ("copy", "verify"):
            app = apps[f"{kind} batch {batch_of[table]} ({table})"]
            assert finished[app["id"]]["state"] == "FINISHED", finished.get(app["id"])
            assert app["executors"], app
            for ex in app["executors"]:
                assert ex["worker_id"] in worker_ids, (app, worker_ids)
                assert any(f.startswith("hbase_migration-") for f in ex["shipped_files"]), ex
    used_workers = {ex["worker_id"] for a in apps.values() for ex in a["executors"]}
    assert used_workers == worker_ids, (used_workers, worker_ids)
    print(json.dumps({k: result[k] for k in ("wall_time_s", "differences", "deployment")}, sort_keys=True))


def _done_partitions(ledger_url: str, table: str) -> dict[str, int]:
    """The ledger's finished copy partitions of `table` (a table only this test copies, under one copy id):
    {partition_id: finished_ms}."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(ledger_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(
                "SELECT copy_id, partition_id, finished_ms FROM copy_partitions WHERE table_name = :t"),
                {"t": table}).all()
    finally:
        engine.dispose()
    assert len({r[0] for r in rows}) <= 1, rows
    return {r[1]: int(r[2]) for r in rows}


@pytest.mark.timeout(1500)
def test_a_copy_whose_celery_worker_is_killed_resumes_from_the_ledger(deployment, minihbase_pair, tmp_path):
    from demo.workload import LiveWriter, SampleTable, Thrift2, compare, load
    from tests.hbase_data import SPLITS

    dc1, dc2 = minihbase_pair
    client = deployment.client
    table = "resume_" + uuid.uuid4().hex[:6]
    sample = SampleTable(table, {"d": {"max_versions": 1}}, tuple(SPLITS), rows=4000)
    dc1.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, list(SPLITS))
    loader = Thrift2(dc1.endpoints)
    load(loader, sample)
    loader.close()
    client.set_connection("hbase_source", json.loads(dc1.connection_json))
    client.set_connection("hbase_target", json.loads(dc2.connection_json))
    writer = LiveWriter(lambda: Thrift2(dc1.endpoints), [sample], ops_per_second=20).start()
    try:
        # Throttled (rows/s per Spark task) so the copy of 8 partitions lasts long enough to be killed midway.
        conf = {"tables": [table], "peer_id": table, "rows_per_s": 100, "expected_copy_s": 600,
                "bulk_loads": "none", "recompare_sleep_s": 2, "stable_samples": 3, "max_lag_ms": 30_000}
        run_id = client.trigger(DAG_ID, conf)["dag_run_id"]

        def copy_midway():
            tis = {(t["task_id"], t["map_index"]): t for t in client.task_instances(DAG_ID, run_id)}
            ti = tis.get(("batch.copy", 0))
            if not ti or ti["state"] != "running" or not ti["hostname"]:
                return None
            done = _done_partitions(deployment.ledger_url, table)
            return ti if 2 <= len(done) <= 5 else None

        ti = wait_for(copy_midway, timeout=600, what="the copy to be running with 2-5 of 8 partitions done",
                      interval=0.5)
        worker = deployment.worker_index(ti["hostname"])
        killed = deployment.airflow.kill_worker(worker)
        kill_ms = int(time.time() * 1000)
        # The task's process was one of the killed worker's (the worker that ran the copy is the one killed).
        assert ti["pid"] in killed, (ti, killed)
        done_before = _done_partitions(deployment.ledger_url, table)
        assert 2 <= len(done_before) < 8, done_before
        # The machine comes back: the same worker name starts again (the other worker may take the retry).
        deployment.airflow.start_worker(worker)

        caught_up = {}

        def on_poll(_run):
            if "stats" not in caught_up:
                states = {(t["task_id"], t["map_index"]): t["state"] for t in client.task_instances(DAG_ID, run_id)}
                if states.get(("batch.wait_drained", 0)) == "success":
                    caught_up["stats"] = writer.stop()

        final = client.wait_run(DAG_ID, run_id, timeout=1200, interval=2.0, on_poll=on_poll)
    finally:
        writer.stop()
    assert final["state"] == "success", final

    # Airflow saw the first try fail (no heartbeat from the dead worker) and retried it.
    tries = {t["try_number"]: t for t in client.task_tries(DAG_ID, run_id, "batch.copy", 0)}
    assert tries[1]["state"] in ("failed", "up_for_retry") and tries[1]["hostname"] == ti["hostname"], tries[1]
    last = tries[max(tries)]
    assert last["state"] == "success" and max(tries) >= 2, tries
    # The retry skipped exactly the partitions finished before the kill ...
    summary = client.xcom(DAG_ID, run_id, "batch.copy", 0)["tables"][table]  # its one batch's, this table
    assert summary["skipped_partitions"] == len(done_before), (summary["skipped_partitions"], done_before)
    recopied = {p["partition_id"] for p in summary.get("partition_results", [])}
    assert not recopied & set(done_before), recopied & set(done_before)
    # ... and the ledger agrees: those keep the time they finished before the kill, the rest finished after it.
    done_after = _done_partitions(deployment.ledger_url, table)
    assert len(done_after) == 8, done_after
    for pid, finished in done_after.items():
        if pid in done_before:
            assert finished == done_before[pid] and finished <= kill_ms, (pid, finished, kill_ms)
        else:
            assert finished > kill_ms, (pid, finished, kill_ms)

    print(f"killed {ti['hostname']} ({len(killed)} processes) with {len(done_before)} of 8 partitions done; "
          f"try {max(tries)} on {last['hostname']} skipped {summary['skipped_partitions']}; the ledger holds "
          f"{len(done_after)}")
    # Zero differences, compared independently once the last edits have shipped.
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_CONN_HBASE_SOURCE": dc1.connection_json}
    subprocess.run([sys.executable, "-m", "hbase_migration", "lag", "--source", "hbase_source", "--peer-id", table,
                    "--watch", "--interval-s", "2", "--watch-timeout-s", "300", "--json"], env=env, cwd=REPO,
                   capture_output=True, timeout=400)
    src, dst = Thrift2(dc1.endpoints), Thrift2(dc2.endpoints)
    cmp = compare(src, dst, table)
    src.close()
    dst.close()
    assert cmp.differences == 0 and cmp.source_rows == cmp.target_rows > 0, cmp.as_dict()
