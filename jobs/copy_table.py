"""Spark job: copy an HBase table to another cluster, keeping every cell's timestamp (a PySpark CopyTable).

    spark-submit jobs/copy_table.py --source CONN --target CONN --table T [--target-table T2]
        [--start-time MS] [--end-time MS] [--families cf1 src:dst] [--savepoint FILE | --ledger-url URL]
    python jobs/copy_table.py --master 'local[2]' ...   (the same, without spark-submit)

The driver checks both tables, plans one partition per source region (big regions split at sampled keys
with --rows-per-partition), drops the partitions the savepoint/ledger already holds, and runs one task per
remaining partition; each finished partition is recorded while the job runs. The last stdout line is the
JSON summary; logs go to stderr. Exit 0: every partition copied; 1: some failed (re-run to retry them,
finished ones are skipped); 2: bad arguments or tables (nothing was written).
"""
from __future__ import annotations

import functools
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):  # run as a script (spark-submit jobs/copy_table.py, python jobs/copy_table.py)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_migration.copy import (  # noqa: E402
    CopyConfigError,
    CopyOptions,
    Partition,
    PartitionResult,
    check_tables,
    copy_partition_safely,
    default_copy_id,
    fetch_regions,
    plan_partitions,
    sample_region,
    summarize,
)
from hbase_migration.progress import ProgressMeter, record_done  # noqa: E402
from hbase_migration.thrift import ThriftSession  # noqa: E402
from jobs import job_args, spark_runtime  # noqa: E402

log = logging.getLogger("jobs.copy_table")
MAX_PARTITION_RESULTS = 1000


def _copy_task(source: Any, target: Any, options: CopyOptions, multi_version: set[bytes],
               partition: Partition) -> PartitionResult:
    return copy_partition_safely(source, target, partition, options, multi_version_families=multi_version)


def _sample_task(source: Any, options: CopyOptions, region: Any) -> tuple[bytes, Any]:
    return region.name, sample_region(source, options, region)


def open_store(ns: Any) -> Any:
    """The savepoint file or the ledger named on the command line; None: no resume."""
    if ns.savepoint and ns.ledger_url:
        raise job_args.UsageError("--savepoint and --ledger-url are exclusive: record progress in one place")
    if ns.savepoint:
        from hbase_migration.progress import SavepointFile

        return SavepointFile(ns.savepoint)
    if ns.ledger_url:
        from hbase_migration.ledger import Ledger
        from hbase_migration.progress import LedgerStore

        return LedgerStore(Ledger.open(ns.ledger_url))
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = job_args.copy_parser()
    ns = parser.parse_args(argv)  # exits 2 on a malformed command line
    spark_runtime.configure_logging(ns.log_level)
    started = time.monotonic()
    try:
        source = job_args.cluster_from_text("source", ns.source)
        target = job_args.cluster_from_text("target", ns.target)
        options = job_args.copy_options(ns)
        conf = job_args.spark_conf(ns.conf)
        store = open_store(ns)
        copy_id = ns.copy_id or default_copy_id(source, target, options)
        # Checks before actions: both tables and every family must exist.
        with ThriftSession(source) as s, ThriftSession(target) as t:
            families = check_tables(s, t, options)
            regions = fetch_regions(s, options.table)
    except (job_args.UsageError, CopyConfigError) as e:
        print(f"copy_table: error: {e}", file=sys.stderr)
        return 2
    except ConnectionError as e:
        print(f"copy_table: error: {e}", file=sys.stderr)
        return 2
    multi_version = {f for f, v in families.items() if v > 1}
    app = f"copy {options.table} -> {options.target_table}"
    spark, own_session = spark_runtime.spark_session(app, ns.master, conf)
    if own_session:  # a job of its own (not a session borrowed in-process): finish cleanly on SIGTERM
        spark_runtime.install_sigterm_handler()
    sc = spark.sparkContext
    try:
        spark_runtime.ship_package(sc)
        samples = None
        if options.rows_per_partition:
            log.info("sampling %d regions of %s (key-only scans) to split those over %d rows", len(regions),
                     options.table, options.rows_per_partition)
            samples = dict(sc.parallelize(regions, len(regions))
                           .map(functools.partial(_sample_task, source, options)).collect())
        partitions = plan_partitions(regions, options, samples)
        done = store.done_partitions(copy_id, options.table) if store is not None else set()
        todo = [p for p in partitions if p.partition_id not in done]
        skipped = len(partitions) - len(todo)
        if skipped:
            log.info("resuming copy %s: %d of %d partitions already copied, skipping them", copy_id, skipped,
                     len(partitions))
        est = [p.est_rows for p in todo]
        meter = ProgressMeter(total_partitions=len(todo),
                              total_rows=sum(est) if est and all(e is not None for e in est) else None)
        log.info("copy %s: %s -> %s, table %s -> %s, %d partitions to copy, window [%s, %s), versions %d",
                 copy_id, source.describe()["thrift"], target.describe()["thrift"], options.table,
                 options.target_table, len(todo), options.start_time, options.end_time, options.versions)

        def on_done(results: list[PartitionResult]) -> None:
            copied = [r for r in results if r.status == "copied"]
            if store is not None and copied:
                record_done(store, copy_id, options.table, [
                    {"partition_id": r.partition_id, "start_row": r.start_row, "stop_row": r.stop_row,
                     "rows": r.rows, "cells": r.cells, "bytes": r.bytes} for r in copied])
            for r in results:
                meter.add(rows=r.rows, cells=r.cells, nbytes=r.bytes, partitions=1)
                if r.status != "copied":
                    log.error("partition %d failed: %s", r.index, r.error)
            log.info("progress: %s", meter.line())

        task = functools.partial(_copy_task, source, target, options, multi_version)
        results = spark_runtime.run_partitions(sc, todo, task, on_done, job_group=f"copy-{copy_id}",
                                               log_level=ns.log_level,
                                               on_heartbeat=lambda: log.info("progress: %s", meter.line()))
    finally:
        if own_session:
            spark_runtime.stop_session(spark)
    summary = {
        "job": "copy", "copy_id": copy_id, "table": options.table, "target_table": options.target_table,
        "source": source.describe()["thrift"], "target": target.describe()["thrift"],
        "start_time": options.start_time, "end_time": options.end_time, "versions": options.versions,
        "families": options.content_key()["families"],
    }
    summary.update(summarize(results, skipped, spark_runtime.elapsed_since(started)))
    # Per-partition figures, capped so the summary line stays small on tables with thousands of regions
    # (the savepoint/ledger holds every finished partition).
    ordered = sorted(results, key=lambda r: (r.status == "copied", r.index))  # failures first
    summary["partition_results"] = [r.to_dict() for r in ordered[:MAX_PARTITION_RESULTS]]
    summary["partition_results_truncated"] = len(ordered) > MAX_PARTITION_RESULTS
    text = json.dumps(summary, sort_keys=True)
    if ns.summary_file:
        Path(ns.summary_file).write_text(text + "\n", encoding="utf-8")
    print(text, flush=True)
    return 0 if summary["failed_partitions"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
