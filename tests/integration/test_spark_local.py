"""The pinned PySpark runs a job in local[2] (pyspark-client must not have replaced pyspark's files)."""
import os

import pytest

pytestmark = pytest.mark.integration


def test_pinned_pyspark_version():
    import pyspark

    assert pyspark.__version__ == "4.2.0"


def test_local_session_runs_a_job():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("harness-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        rdd = spark.sparkContext.parallelize(range(1000), 4)
        assert rdd.getNumPartitions() == 4
        assert rdd.map(lambda x: x * 2).sum() == 999000
        assert rdd.mapPartitions(lambda it: [sum(1 for _ in it)]).collect() == [250, 250, 250, 250]
    finally:
        spark.stop()


def test_partitions_run_one_task_each_or_dealt_to_fewer_tasks(spark):
    from pyspark import TaskContext

    from hbase_migration.data.executors import run_partitions

    def task(item):
        return item, TaskContext.get().partitionId()

    done = []
    items = list(range(10))
    one_each = run_partitions(spark.sparkContext, items, task, done.extend, log_level="WARNING")
    assert [item for item, _ in one_each] == items and len({task_id for _, task_id in one_each}) == 10
    assert sorted(item for item, _ in done) == items  # every result reached the driver as its task ended
    done.clear()
    dealt = run_partitions(spark.sparkContext, items, task, done.extend, log_level="WARNING", slices=3)
    assert [item for item, _ in dealt] == items  # results in item order
    assert sorted(item for item, _ in done) == items
    # three tasks, items dealt round-robin: neighbouring partitions run in different tasks
    by_task = {}
    for item, task_id in dealt:
        by_task.setdefault(task_id, []).append(item)
    assert sorted(by_task.values()) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]


DRIVER = '''
import json, os, sys
from hbase_migration.data import jobargs
name, yarn_name = sys.argv[1:3]
read = lambda n: jobargs.read_ledger_url_file("--ledger-url-file", n)
before = read(name), read(yarn_name)  # no SparkContext yet: spark-submit's spark.files / spark.yarn.dist.files
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
after = read(name), read(yarn_name)  # SparkFiles' copy on the driver; YARN's client mode gives none
on_executor = spark.sparkContext.parallelize([0], 1).map(lambda _: (read(name), os.getpid())).collect()[0]
spark.stop()
print(json.dumps({"before": before, "after": after, "executor": on_executor[0], "driver_pid": os.getpid(),
                  "executor_pid": on_executor[1]}))
'''


def test_a_client_mode_driver_reads_the_ledger_url_file_spark_submit_shipped_by_its_name(tmp_path):
    """What the operators do in local or client mode: the URL in a 0600 file in the worker's temporary folder,
    shipped with --files, its bare name on the command line; the driver's working directory is elsewhere."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from hbase_migration.data.jobargs import LEDGER_URL_FILE, write_ledger_url_file

    repo = Path(__file__).resolve().parents[2]
    url = "postgresql+psycopg://migrator:s3cr3t@db.example/ledger"
    worker = tmp_path / "worker"
    worker.mkdir(mode=0o700)
    path = write_ledger_url_file(url, worker)
    on_yarn = write_ledger_url_file(url + "?yarn", worker, "yarn-ledger-url")  # what YARN's client mode passes on
    (tmp_path / "driver.py").write_text(DRIVER)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(repo), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.yarn.dist.files=file://{on_yarn}", "--files", path, str(tmp_path / "driver.py"),
         LEDGER_URL_FILE, "yarn-ledger-url"],
        capture_output=True, text=True, cwd=str(elsewhere), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["before"] == out["after"] == [url, url + "?yarn"] and out["executor"] == url
    assert out["executor_pid"] != out["driver_pid"]  # read in a Python worker too
