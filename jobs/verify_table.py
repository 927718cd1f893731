"""Spark job: prove a copy. Row counts, range hashes, bisection to a row diff, re-compare, optional repair.

    spark-submit jobs/verify_table.py --source CONN --target CONN --table T [--target-table T2]
        [--end-time MS] [--start-time MS] [--families ...] [--level rows|content]
        [--recompare-sleep-s S] [--repair]
    python jobs/verify_table.py --master 'local[2]' ...

One task per source region (as VerifyReplication's mappers). Cells newer than the cutoff (--end-time,
default: when the job starts) are not compared, so edits in flight do not count. The last stdout line is
the JSON result; exit 0: identical; 1: differences (or a failed partition); 2: bad arguments or tables.
Read-only unless --repair is given.
"""
from __future__ import annotations

import functools
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_migration.copy import (  # noqa: E402
    CopyConfigError,
    Partition,
    check_tables,
    fetch_regions,
    plan_partitions,
)
from hbase_migration.thrift import ThriftSession  # noqa: E402
from hbase_migration.verify import (  # noqa: E402
    PartitionVerdict,
    VerifyOptions,
    exit_code,
    summarize_verify,
    verify_partition_safely,
)
from jobs import job_args, spark_runtime  # noqa: E402

log = logging.getLogger("jobs.verify_table")


def _verify_task(source: Any, target: Any, options: VerifyOptions, partition: Partition) -> PartitionVerdict:
    return verify_partition_safely(source, target, partition, options)


def main(argv: Sequence[str] | None = None) -> int:
    parser = job_args.verify_parser()
    ns = parser.parse_args(argv)
    spark_runtime.configure_logging(ns.log_level)
    started = time.monotonic()
    try:
        source = job_args.cluster_from_text("source", ns.source)
        target = job_args.cluster_from_text("target", ns.target)
        options = job_args.verify_options(ns, now_ms=int(time.time() * 1000))
        conf = job_args.spark_conf(ns.conf)
        with ThriftSession(source) as s, ThriftSession(target) as t:
            check_tables(s, t, options)
            regions = fetch_regions(s, options.table)
    except (job_args.UsageError, CopyConfigError, ConnectionError) as e:
        print(f"verify_table: error: {e}", file=sys.stderr)
        return 2
    partitions = plan_partitions(regions, options)
    log.info("verify %s -> %s: %d partitions, level %s, cells with %s <= ts < %s%s", options.table,
             options.target_table, len(partitions), options.level, options.start_time or 0, options.end_time,
             ", REPAIR enabled" if options.repair else "")
    app = f"verify {options.table} -> {options.target_table}"
    spark, own_session = spark_runtime.spark_session(app, ns.master, conf)
    if own_session:  # a job of its own (not a session borrowed in-process): finish cleanly on SIGTERM
        spark_runtime.install_sigterm_handler()
    sc = spark.sparkContext
    try:
        spark_runtime.ship_package(sc)
        done = 0

        def on_done(verdicts: list[PartitionVerdict]) -> None:
            nonlocal done
            done += len(verdicts)
            for v in verdicts:
                if v.status != "verified":
                    log.error("partition %d could not be verified: %s", v.index, v.error)
            log.info("verified %d/%d partitions", done, len(partitions))

        task = functools.partial(_verify_task, source, target, options)
        verdicts = spark_runtime.run_partitions(sc, partitions, task, on_done, job_group="verify",
                                                log_level=ns.log_level)
    finally:
        if own_session:
            spark_runtime.stop_session(spark)
    result = {"job": "verify", "source": source.describe()["thrift"], "target": target.describe()["thrift"]}
    result.update(summarize_verify(verdicts, options, spark_runtime.elapsed_since(started)))
    text = json.dumps(result, sort_keys=True)
    if ns.summary_file:
        Path(ns.summary_file).write_text(text + "\n", encoding="utf-8")
    print(text, flush=True)
    return exit_code(result)


if __name__ == "__main__":
    sys.exit(main())
