"""The migration DAG end to end with its Spark jobs on a Kerberized YARN, cluster mode (issue 30 part 4):
`hbase_table_migration` through `airflow dags test` (demo/run.py with `--secure --spark yarn`), against the secured
real clusters with YARN beside dc2 (`python -m realhbase up --secure --yarn`: HBase and HDFS Kerberized in DC1.TEST
and DC2.TEST, a ResourceManager and a NodeManager logged in as yarn/127.0.0.3@DC2.TEST, their REST API behind
SPNEGO), a writer editing the source through the copy and the catch-up.

The DAG's Spark connection (`spark_default`) is the bed's `spark_yarn` connection: cluster mode, its extras'
`principal` and `keytab_path` given to spark-submit as --principal/--keytab (hbase-migration@DC1.TEST, dc2's HDFS
delegation tokens for the containers), each application followed through the ResourceManager's REST API with
SPNEGO; the operators defer while YARN runs an application, their triggers following it through SPNEGO. `users` is
copied by scan on the native path (`data_path: auto`: HBase's own client in the containers' JVMs, delete markers
included), `orders` by snapshot (the export's file copy over WebHDFS with SPNEGO on both sides, from a YARN
container), both verified natively, raw, with no repair, in one application (the batch's): three YARN applications,
each driver in a container, each job logging in to HBase, HDFS and ZooKeeper from the keytab shipped with it.

Verdicts: what the plain real run asserts (`assert_live_run_landed`: every kind of edit, the initial copy methods,
the dashboard's feed, each table landed with 0 differences by an independent comparison of every version, each
differing version verify found explained by HBase's own rules); what the secured run asserts (`_assert_secured`:
each channel's authentication, preflight's findings, no keytab material or Negotiate token in the run's log, the
ledger or the dashboard); and YARN's own word, asked through SPNEGO as dc2's hbase principal: each job a SPARK
application of user hbase-migration, of one attempt, FINISHED and SUCCEEDED, its driver and executors in its
containers.

A secured bed of its own (eight JVMs, a KDC, a SASL ZooKeeper, YARN) and four spark-submits on two shared cores:
`full`, run by `make test-yarn`.
"""
from __future__ import annotations

import time
import uuid
from argparse import Namespace
from pathlib import Path

import pytest

from tests.dags.test_migration_end_to_end import assert_live_run_landed
from tests.dags.test_migration_secure import _assert_secured
from tests.integration.test_spark_yarn_realhbase import APPLICATION

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase,
              pytest.mark.full, pytest.mark.timeout(4800)]


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    from realhbase.testbed import RealHBase, processes

    bed = RealHBase(tmp_path_factory.mktemp("realhbase-secure-yarn-dag"), secure=True, yarn=True, timeout=900)
    started = time.monotonic()
    try:
        bed.up()
    except BaseException:
        bed.down()
        raise
    print(f"\nup --secure --yarn in {time.monotonic() - started:.0f} s")
    yield bed
    survivors = bed.down()
    left = processes(bed.workdir)
    assert not survivors and not left, f"the secured YARN bed outlived its test: {survivors or left}"


def _rm(bed, yarn: dict, path: str) -> dict:
    """The ResourceManager's REST API through SPNEGO, as dc2's hbase service principal (realhbase's client)."""
    from realhbase import secure

    return secure.http(bed.workdir, "dc2", f"{yarn['resourcemanager']['web_ui']}/ws/v1/cluster/{path}", timeout=60)


def assert_ran_on_kerberized_yarn(bed, yarn: dict, spark: dict, final: str) -> dict:
    """A job's `spark` (its summary's) names a YARN application in cluster mode that YARN (asked through SPNEGO)
    says is a SPARK application of hbase-migration, FINISHED with `final`, in one attempt whose AM container ran
    the driver; every executor ran in a container of it, importing the toolkit from what the job shipped."""
    assert spark and spark["master"] == "yarn" and spark["deploy_mode"] == "cluster", spark
    app_id = spark["application_id"]
    assert APPLICATION.match(app_id), spark
    suffix = app_id.split("_", 1)[1]
    assert spark["executors"], spark
    for executor in spark["executors"]:
        assert executor["container"].startswith(f"container_{suffix}_"), spark
        assert executor["code"].startswith(yarn["containers_dir"]), spark
    assert spark["driver"]["container"].startswith(f"container_{suffix}_"), spark
    app = _rm(bed, yarn, f"apps/{app_id}")["app"]
    assert (app["applicationType"], app["user"], app["state"], app["finalStatus"]) == (
        "SPARK", "hbase-migration", "FINISHED", final), app
    attempts = (_rm(bed, yarn, f"apps/{app_id}/appattempts").get("appAttempts") or {}).get("appAttempt") or []
    assert len(attempts) == 1, attempts
    assert spark["driver"]["container"] == attempts[0]["containerId"], (spark, attempts)
    return app


def run_and_check(bed, workdir: Path, rows: int = 2000) -> dict:
    """The demo's secured run on YARN cluster mode against `bed` (up with --secure --yarn), then every verdict.
    Returns the demo's result with `yarn_applications` added."""
    from demo.run import run
    from tests.dags.test_migration_end_to_end import drop_peer_and_tables

    yarn = bed.yarn_endpoints()
    tag = uuid.uuid4().hex[:6]
    users, orders = f"ky{tag}_users", f"ky{tag}_orders"
    try:
        result = run(Namespace(rows=rows, write_rate=30.0, cores=2, timeout_s=3600.0, workdir=str(workdir),
                               zookeeper=None, data_path="auto", repair=False, secure=True, real=True,
                               stand_in=False, testbed=str(bed.workdir), table_prefix=f"ky{tag}_",
                               peer_id=f"ky{tag}", tables=["users", "orders"], snapshot=["orders"], spark="yarn"))
        assert result["dag_exit_code"] == 0, result
        assert result["spark"] == {
            "mode": "yarn", "deploy_mode": "cluster", "connection": "spark_yarn",
            "resourcemanager": yarn["resourcemanager"]["web_ui"],
            "kerberos": {"principal": "hbase-migration@DC1.TEST",
                         "yarn_spnego_principal": yarn["security"]["spnego_principal"]}}, result["spark"]
        assert (result["backend"], result["hbase_version"]) == ("realhbase", "2.6.4-hadoop3")
        assert_live_run_landed(result, workdir / "ledger.db", {users: "scan", orders: "snapshot"}, bed)
        _assert_secured(result, workdir, bed.workdir)
        assert result["differences"] == 0, result
        paths = {table: r["data_paths"] for table, r in result["tables"].items()}
        assert paths == {users: {"copy": "native", "verify": "native"},  # orders' copy moved files: no path
                         orders: {"copy": None, "verify": "native"}}, paths

        applications = {}
        for table, r in result["tables"].items():
            for job in ("copy", "verify"):
                final = "FAILED" if job == "verify" and r["verification"] == "repaired" else "SUCCEEDED"
                app = assert_ran_on_kerberized_yarn(bed, yarn, r["spark"][job], final)
                applications[f"{table} {job}"] = {"id": app["id"], "final": app["finalStatus"], "attempts": 1,
                                                  "elapsed_s": round(app["elapsedTime"] / 1000)}
        # three applications: the batch's scan copy (users), orders' export, and the batch's one verification
        assert len({a["id"] for a in applications.values()}) == 3, applications
        assert applications[f"{users} verify"]["id"] == applications[f"{orders} verify"]["id"], applications
        result["yarn_applications"] = applications
        return result
    finally:
        drop_peer_and_tables(bed, f"ky{tag}", f"ky{tag}_")


def test_migration_on_kerberized_yarn_cluster_mode_loses_no_version_and_leaks_no_secret(tmp_path, bed):
    result = run_and_check(bed, tmp_path / "demo")
    print(f"\nYARN applications (SPNEGO): {result['yarn_applications']}; wall {result['wall_time_s']} s; "
          + "; ".join(f"{t}: {r['initial_copy']} copy {r['copy_s']} s, catch-up {r['catch_up_s']} s, "
                      f"verification {r['verification']}, differences {r['independent_comparison']['differences']}"
                      for t, r in result["tables"].items()))
