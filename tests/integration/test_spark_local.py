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
