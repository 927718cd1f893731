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
