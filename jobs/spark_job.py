"""The skeleton of the spark-submit jobs: the library's `job_main` with a Spark executor.

The copy and verify themselves live in the library (`hbase_migration.data.runner`); the executors receive the
library from what the job ships (`--py-files`, or the zip `SparkExecutor` adds), not from the driver's path.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

from hbase_migration.data import jobargs
from hbase_migration.data.executors import SparkExecutor
from hbase_migration.data.runner import job_main


def _spark(app_name: str, ns: Any) -> SparkExecutor:
    return SparkExecutor(app_name, ns.master, jobargs.spark_conf(ns.conf), ns.log_level)


def main(kind: str, argv: Sequence[str] | None = None) -> int:
    from hbase_migration.migration.region_metrics import table_region_bytes

    return job_main(kind, sys.argv[1:] if argv is None else argv, _spark, region_sizes=table_region_bytes)
