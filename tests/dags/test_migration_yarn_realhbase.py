"""The migration DAG end to end with its Spark jobs on YARN, cluster mode (issue 30): `hbase_table_migration` through
`airflow dags test` (demo/run.py with `--spark yarn`), against real HBase (the session's realhbase bed, with YARN
beside dc2: `realhbase_yarn`), a writer editing the source through the copy and the catch-up.

The DAG's Spark connection (`spark_default`) is the bed's `spark_yarn` connection (cluster mode, the application
followed through the ResourceManager's REST API); spark-submit reads the bed's HADOOP_CONF_DIR and SPARK_CONF_DIR.
Of the three tables `users` is copied by scan (the PySpark CopyTable), `orders` and `events` by snapshot (each
export's file copy a Spark job, the batch's export task deferring for each in turn, each `clone_snapshot` after its
wait), and all are verified by the batch's Spark verify job: four YARN applications, each driver in a YARN
container. Verdicts: an independent comparison of every version
of every column (demo/workload.py's plain Thrift2 client) finds no difference; the run's summary names each job's
YARN application, which YARN's REST API reports as a SPARK application of one attempt that SUCCEEDED (a verification
that found differences and repaired them: FAILED, its driver's exit 1 being its verdict), and the containers its
driver and executors ran in
(tests/integration/test_spark_yarn_realhbase.py checks them); verify's differing versions, if any, are the ones
HBase's own version rules explain.

The first test runs in `make test` (the one run of the kind: YARN cluster mode, the operators' deferred waits, a
batch exporting two tables by snapshot); the native one is `full`, run by `make test-yarn`.
"""
import uuid
from argparse import Namespace

import pytest

from tests.dags.test_migration_end_to_end import (
    assert_table_landed,
    assert_the_ledger_feeds_the_dashboard,
    drop_peer_and_tables,
    unexplained,
)
from tests.integration.test_spark_yarn_realhbase import _rm_app, app_attempts, assert_ran_on_yarn

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase,
              pytest.mark.timeout(3000)]


def demo_on_yarn(request, tmp_path, zookeeper, bed, prefix: str, **options) -> tuple[str, dict]:
    """demo.run on the session's bed with its Spark jobs on YARN (cluster mode), tables and peer named `prefix` plus
    a tag; the bed is left as found (the migration keeps its peer until a cut-over). Returns the tag and the run's
    summary."""
    from demo.run import run

    tag = uuid.uuid4().hex[:6]
    request.addfinalizer(lambda: drop_peer_and_tables(bed, f"{prefix}{tag}", f"{prefix}{tag}_"))
    return tag, run(Namespace(rows=4000, write_rate=40.0, cores=2, timeout_s=2700.0, workdir=str(tmp_path / "demo"),
                              zookeeper=zookeeper.hosts, stand_in=False, testbed=str(bed.workdir),
                              table_prefix=f"{prefix}{tag}_", peer_id=f"{prefix}{tag}", spark="yarn", **options))

def test_migration_on_yarn_cluster_mode_loses_no_version(request, tmp_path, zookeeper, realhbase_yarn):
    bed = realhbase_yarn
    yarn = bed.yarn_endpoints()
    tag, result = demo_on_yarn(request, tmp_path, zookeeper, bed, "yarn", data_path="thrift2", repair=True,
                               tables=["users", "orders", "events"], snapshot=["orders", "events"])
    assert result["dag_exit_code"] == 0, result
    assert result["run_status"] == "success", result
    assert result["spark"] == {"mode": "yarn", "deploy_mode": "cluster", "connection": "spark_yarn",
                               "resourcemanager": yarn["resourcemanager"]["web_ui"]}, result["spark"]
    writer = result["writer"]
    for kind in ("puts", "overwrites", "old_puts", "deletes", "column_deletes", "version_deletes"):
        assert writer[kind] > 0, (kind, writer)  # the writer ran through the copy and the catch-up
    assert writer["errors"] == 0, writer
    assert result["catch_up"]["lag_samples"] >= 3, result["catch_up"]
    users, orders, events = f"yarn{tag}_users", f"yarn{tag}_orders", f"yarn{tag}_events"
    assert {t: r["initial_copy"] for t, r in result["tables"].items()} == {users: "scan", orders: "snapshot",
                                                                           events: "snapshot"}
    assert_the_ledger_feeds_the_dashboard(tmp_path / "demo" / "ledger.db", result["run_id"])

    applications = {}
    found_by_table = {}
    for table, r in result["tables"].items():
        assert_table_landed(table, r)
        # every Spark job of the run (the copy or export, the verification) ran on YARN in cluster mode, in one
        # attempt. A verification that found differences exits 1 (its verdict; the repair report says what was
        # done): YARN records its application FAILED and, told so by the operator, starts no second verification.
        for job in ("copy", "verify"):
            # the batch's one verification: its driver exits 1 when any of its tables was repaired
            repaired = any(x["verification"] == "repaired" for x in result["tables"].values())
            final = "FAILED" if job == "verify" and repaired else "SUCCEEDED"
            spark = assert_ran_on_yarn(r["spark"][job], "cluster", yarn, final)
            assert len(app_attempts(yarn, spark["application_id"])) == 1, (table, job, spark)
            applications[(table, job)] = spark["application_id"]
        found = r["versions_found_different"]
        assert {v["kind"] for v in found} <= {"only_on_target", "missing_on_target"}, (table, r)
        found_by_table[table] = found
    # four applications: the batch's scan copy (users), each export (orders, then events: the batch's export task
    # deferred for each in turn, and went on after the first's clone), the batch's one verification of all three
    assert len(set(applications.values())) == 4, applications
    assert len({applications[(t, "verify")] for t in (users, orders, events)}) == 1, applications
    left = unexplained(bed, found_by_table)
    assert not any(left.values()), (left, found_by_table)
    print(f"\nYARN applications: {applications}; wall {result['wall_time_s']} s; "
          + "; ".join(f"{t}: {r['initial_copy']} copy {r['copy_s']} s, catch-up {r['catch_up_s']} s, "
                      f"verification {r['verification']}, differences {r['independent_comparison']['differences']}"
                      for t, r in result["tables"].items()))


@pytest.mark.full
def test_native_migration_on_yarn_cluster_mode_needs_no_repair(request, tmp_path, zookeeper, realhbase_yarn):
    """The native data path on YARN (issue 40): the copy and the verification run HBase's own client in YARN's
    containers (the jars shipped with the job by spark-submit --jars, from this worker's `make jvm`), raw on both
    sides, `repair` off; the writer's deletes and old-timestamp puts ran through the copy and the catch-up. Both
    jobs ran on native in cluster mode, the verification is clean, the independent comparison finds nothing."""
    bed = realhbase_yarn
    yarn = bed.yarn_endpoints()
    _, result = demo_on_yarn(request, tmp_path, zookeeper, bed, "ynat", data_path="native", repair=False,
                             tables=["users"], snapshot=[])
    assert result["dag_exit_code"] == 0 and result["run_status"] == "success", result
    assert result["writer"]["errors"] == 0 and result["writer"]["deletes"] > 0, result["writer"]
    (table, r), = result["tables"].items()
    assert_table_landed(table, r)
    assert r["data_paths"] == {"copy": "native", "verify": "native"}, r
    assert r["verification"] == "clean" and r["repair"] is None, r
    for job in ("copy", "verify"):
        # the driver (Python, py4j to the native jars) in the application's own container; the tasks are JVM code,
        # each reporting the container it ran in and the jar YARN localized for the application
        spark = r["spark"][job]
        assert spark and (spark["master"], spark["deploy_mode"]) == ("yarn", "cluster"), (job, spark)
        suffix = spark["application_id"].split("_", 1)[1]
        assert spark["driver"]["container"].startswith(f"container_{suffix}_"), (job, spark)
        assert spark["executors"], (job, spark)
        for executor in spark["executors"]:
            assert executor["container"].startswith(f"container_{suffix}_"), (job, spark)
            assert executor["code"].startswith(yarn["containers_dir"]) and executor["code"].endswith(".jar"), spark
        assert (_rm_app(yarn, spark["application_id"])["finalStatus"]) == "SUCCEEDED", (job, spark)
        assert len(app_attempts(yarn, spark["application_id"])) == 1, (job, spark)
    print(f"\nnative on YARN: copy {r['copy_s']} s, catch-up {r['catch_up_s']} s, wall {result['wall_time_s']} s")
