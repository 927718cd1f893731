"""spark-submit target for the deployment test: what an executor's Python can import, before and after the job
ships the toolkit (`hbase_migration/executors.ship_package`). Prints one JSON line: {"before": ..., "after": ...}."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the driver has the repository; executors do not


def probe(_):
    import os
    import sys

    out = {"pid": os.getpid(), "cwd": os.getcwd(), "python": sys.executable,
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    try:
        import hbase_migration

        out["hbase_migration"] = hbase_migration.__file__
    except ImportError as e:
        out["hbase_migration"] = f"ImportError: {e}"
    return [out]


def main() -> None:
    from pyspark.sql import SparkSession

    from hbase_migration.data.executors import ship_package

    spark = SparkSession.builder.appName("executor-probe").getOrCreate()
    sc = spark.sparkContext
    before = sc.parallelize([0], 1).mapPartitions(probe).collect()[0]
    ship_package(sc)
    after = sc.parallelize([0], 1).mapPartitions(probe).collect()[0]
    print(json.dumps({"before": before, "after": after, "master": sc.master}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
