"""A whole copy or verification of one table: checks, plan, partitions on an executor, the summary.

`run_copy` and `run_verify` are what the Spark jobs (`jobs/`, with a `SparkExecutor`) and the CLI (with a
`LocalExecutor`) both call; `job_main` is the command-line skeleton they share: arguments, checks before
actions, the run, one JSON summary line on stdout (logs go to stderr), exit 0 / 1 / 2.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from hbase_migration.copy import CopyOptions, PartitionResult, copy_partition_safely, default_copy_id, summarize
from hbase_migration.datapath import Region, open_data_path
from hbase_migration.partitions import Partition, plan_partitions, sample_region
from hbase_migration.progress import ProgressMeter, record_done, record_plan
from hbase_migration.scope import CopyConfigError, TableScope, versions_text
from hbase_migration.verify import PartitionVerdict, VerifyOptions, exit_code, summarize_verify, verify_partition_safely

if TYPE_CHECKING:
    from hbase_migration.cluster import Cluster

log = logging.getLogger(__name__)
MAX_PARTITION_RESULTS = 1000
VERIFY_TASKS_PER_SLOT = 2


def check_tables(source: "Cluster", target: "Cluster", options: TableScope) -> tuple[dict[bytes, int], list[Region]]:
    """Refuse a copy/verify whose tables or families are missing (before anything is written); returns the
    source's family -> VERSIONS and its regions."""
    with open_data_path(source) as s, open_data_path(target) as t:
        src = s.families(options.table)
        if not src:
            raise CopyConfigError(f"table: {options.table!r} does not exist on the source {source.name!r}")
        dst = t.families(options.target_table)
        if not dst:
            raise CopyConfigError(
                f"target_table: {options.target_table!r} does not exist on the target {target.name!r} "
                "(create it with the same families and split keys first)")
        for s_family, d_family in options.families or tuple((f, f) for f in sorted(src)):
            if s_family not in src:
                raise CopyConfigError(f"families: {s_family.decode()!r} is not a family of {options.table!r} on the "
                                      f"source (it has {', '.join(sorted(f.decode() for f in src))})")
            if d_family not in dst:
                raise CopyConfigError(f"families: {d_family.decode()!r} is not a family of {options.target_table!r} "
                                      f"on the target (it has {', '.join(sorted(f.decode() for f in dst))})")
        regions = s.regions(options.table)
    if not regions:
        raise CopyConfigError(f"table {options.table!r} has no regions on the source {source.name!r}")
    return src, regions


def _sample(source: "Cluster", options: TableScope, region: Region) -> tuple[bytes, Any]:
    return region.name, sample_region(source, options, region)


def _copy(source: "Cluster", target: "Cluster", options: CopyOptions, partition: Partition) -> PartitionResult:
    return copy_partition_safely(source, target, partition, options)


def _verify(source: "Cluster", target: "Cluster", options: VerifyOptions, partition: Partition) -> PartitionVerdict:
    return verify_partition_safely(source, target, partition, options)


def run_copy(source: "Cluster", target: "Cluster", options: CopyOptions, executor: Any, *, store: Any = None,
             copy_id: str | None = None, started: float | None = None, load_limits: Any = None,
             checked: tuple[dict[bytes, int], list[Region]] | None = None) -> dict[str, Any]:
    """Copy one table on `executor`; `store` (savepoint file or ledger) records finished partitions as they end
    and a re-run skips them. With `load_limits` (`hbase_migration.load.LoadLimits`) this driver samples the
    source's region servers while the partitions run and the tasks follow its decision (slow down, pause, give
    up). `checked`: what `check_tables` returned just before (not asked again). Returns the JSON summary
    (`failed_partitions` > 0 when a partition failed)."""
    started = time.monotonic() if started is None else started
    copy_id = copy_id or default_copy_id(source, target, options)
    _families, regions = checked or check_tables(source, target, options)
    samples = None
    if options.rows_per_partition:
        log.info("sampling %d regions of %s (key-only scans) to split those over %d rows", len(regions),
                 options.table, options.rows_per_partition)
        samples = dict(executor.map(regions, functools.partial(_sample, source, options)))
    partitions = plan_partitions(regions, options, samples, source.gateways)
    record_plan(store, copy_id, options.table, partitions)  # the dashboard's "partitions done of total"
    done = store.done_partitions(copy_id, options.table) if store is not None else set()
    todo = [p for p in partitions if p.partition_id not in done]
    skipped = len(partitions) - len(todo)
    if skipped:
        log.info("resuming copy %s: %d of %d partitions already copied, skipping them", copy_id, skipped,
                 len(partitions))
    est = [p.est_rows for p in todo]
    meter = ProgressMeter(total_partitions=len(todo),
                          total_rows=sum(est) if est and all(e is not None for e in est) else None)
    log.info("copy %s: %s -> %s, table %s -> %s, %d partitions to copy, window [%s, %s), versions %s", copy_id,
             source.describe()["thrift"], target.describe()["thrift"], options.table, options.target_table,
             len(todo), options.start_time_ms, options.end_time_ms, versions_text(options.versions))

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

    governor = None
    if load_limits is not None and todo:
        from hbase_migration.load import LoadGovernor, advertised_host, ledger_recorder

        governor = LoadGovernor(source, load_limits, host=advertised_host(executor), label=options.table,
                                record=ledger_recorder(store, copy_id, options.table)).start()
        options = dataclasses.replace(options, load_url=governor.url)
    try:
        results = executor.run(todo, functools.partial(_copy, source, target, options), on_done,
                               lambda: log.info("progress: %s", meter.line()))
    finally:
        load_control = governor.stop() if governor is not None else None
    summary = {
        "job": "copy", "copy_id": copy_id, "table": options.table, "target_table": options.target_table,
        "source": source.describe()["thrift"], "target": target.describe()["thrift"],
        "start_time_ms": options.start_time_ms, "end_time_ms": options.end_time_ms,
        "versions": versions_text(options.versions),
        "families": options.content_key()["families"],
    }
    summary.update(summarize(results, skipped, time.monotonic() - started))
    if load_control is not None:
        summary["load_control"] = load_control
    # Per-partition figures, capped so the summary line stays small on tables with thousands of regions
    # (the savepoint/ledger holds every finished partition).
    ordered = sorted(results, key=lambda r: (r.status == "copied", r.index))  # failures first
    summary["partition_results"] = [r.to_dict() for r in ordered[:MAX_PARTITION_RESULTS]]
    summary["partition_results_truncated"] = len(ordered) > MAX_PARTITION_RESULTS
    return summary


def run_verify(source: "Cluster", target: "Cluster", options: VerifyOptions, executor: Any, *,
               started: float | None = None,
               checked: tuple[dict[bytes, int], list[Region]] | None = None) -> dict[str, Any]:
    """Verify one table on `executor`, one task per source region (as VerifyReplication's mappers); `checked`:
    what `check_tables` returned just before. Returns the JSON result (`identical`)."""
    started = time.monotonic() if started is None else started
    _families, regions = checked or check_tables(source, target, options)
    partitions = plan_partitions(regions, options, gateways=source.gateways)
    log.info("verify %s -> %s: %d partitions, level %s, cells with %s <= ts < %s%s", options.table,
             options.target_table, len(partitions), options.level, options.start_time_ms or 0, options.end_time_ms,
             ", REPAIR enabled" if options.repair else "")
    done = 0

    def on_done(verdicts: list[PartitionVerdict]) -> None:
        nonlocal done
        done += len(verdicts)
        for v in verdicts:
            if v.status != "verified":
                log.error("partition %d could not be verified: %s", v.index, v.error)
        log.info("verified %d/%d partitions", done, len(partitions))

    # Two tasks per slot, each verifying its share of the partitions in turn: a verification is read-only and
    # resumes nothing, so coarser tasks lose nothing, and small partitions stop paying a Spark task each.
    verdicts = executor.run(partitions, functools.partial(_verify, source, target, options), on_done,
                            tasks_per_slot=VERIFY_TASKS_PER_SLOT)
    result = {"job": "verify", "source": source.describe()["thrift"], "target": target.describe()["thrift"]}
    result.update(summarize_verify(verdicts, options, time.monotonic() - started))
    return result


# ---------------------------------------------------------------------------------------------------------
# The command line shared by jobs/copy_table.py, jobs/verify_table.py and `python -m hbase_migration copy|verify`


def open_store(ns: Any) -> Any:
    """The savepoint file or the ledger named on the command line; None: no resume."""
    from hbase_migration.jobargs import UsageError

    if ns.savepoint and ns.ledger_url:
        raise UsageError("--savepoint and --ledger-url are exclusive: record progress in one place")
    if ns.savepoint:
        from hbase_migration.progress import SavepointFile

        return SavepointFile(ns.savepoint)
    if ns.ledger_url:
        from hbase_migration.ledger import Ledger
        from hbase_migration.progress import LedgerStore

        return LedgerStore(Ledger.open(ns.ledger_url))
    return None


def job_main(kind: str, argv: Sequence[str], make_executor: Callable[[str, Any], Any]) -> int:
    """Run `kind` ("copy" or "verify") from command-line arguments. `make_executor(app_name, ns)` gives the
    executor (its `close()`, if any, is called at the end). Exit 0: done and clean; 1: a partition failed or
    verify found differences; 2: bad arguments or tables (nothing was written)."""
    from hbase_migration import jobargs
    from hbase_migration.executors import configure_logging

    parser = jobargs.copy_parser() if kind == "copy" else jobargs.verify_parser()
    ns = parser.parse_args(list(argv))  # exits 2 on a malformed command line
    configure_logging(ns.log_level)
    started = time.monotonic()
    prog = f"{kind}_table"
    try:
        jobargs.spark_conf(ns.conf)
        source = jobargs.cluster_from_text("source", ns.source)
        target = jobargs.cluster_from_text("target", ns.target)
        if kind == "copy":
            options: Any = jobargs.copy_options(ns)
            load_limits = jobargs.load_limits(ns)
            store = open_store(ns)
        else:
            options = jobargs.verify_options(ns)
        checked = check_tables(source, target, options)  # checks before actions: a bad table changes nothing
    except (jobargs.UsageError, CopyConfigError, ConnectionError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    executor = make_executor(f"{kind} {options.table} -> {options.target_table}", ns)
    try:
        if kind == "copy":
            summary = run_copy(source, target, options, executor, store=store, copy_id=ns.copy_id, started=started,
                               load_limits=load_limits, checked=checked)
            status = 0 if summary["failed_partitions"] == 0 else 1
        else:
            summary = run_verify(source, target, options, executor, started=started, checked=checked)
            status = exit_code(summary)
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    text = json.dumps(summary, sort_keys=True)
    if ns.summary_file:
        Path(ns.summary_file).write_text(text + "\n", encoding="utf-8")
    print(text, flush=True)
    return status
