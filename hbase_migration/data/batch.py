"""Many tables in one Spark application: a batch's copy (or verification) around the per-table core.

A migration of 300 tables paid a spark-submit, a driver JVM and its executors' start per table and per step; here
one application copies (or verifies) every table of a batch. Each table still goes through the library's
per-table core exactly as alone (`runner.check_tables`, `runner.run_copy` / `runner.run_verify`: its partition
plan, resume from the store, progress, its own summary), and the tables run side by side from driver threads, each
submitting its Spark jobs to the one application, so their partitions share the executors' task slots (Spark
schedules the jobs of one application together; a table of one region does not leave the other slots idle). The
batch's summary holds each table's summary under `tables`.

What the batch adds: every table is checked before any is copied (a missing table or family refuses the whole
batch, exit 2, nothing written), at most `tables_at_once` tables are in flight (default: two per task slot), the
copy's load throttle is one governor for the application (one sample of the source's region servers whatever the
number of tables), and a table that fails (a partition, or an error) fails only itself: the others go on, and the
batch's exit status says some failed (1).

    spark-submit jobs/copy_tables.py --tables t1 t2 ... [--batch NAME] [--tables-at-once N] <copy_table.py's options>
    spark-submit jobs/verify_tables.py --tables t1 t2 ... [--batch NAME] <verify_table.py's options>
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from hbase_migration.data import native_jobs
from hbase_migration.data.scope import CopyConfigError

log = logging.getLogger(__name__)

MAX_FAILURES_LISTED = 20  # per table, in the batch's summary (the ledger keeps every finished partition)
SMALL_BATCH = 10  # up to this many tables a batch's summary keeps each table's partition results, as alone
CHECK_THREADS = 8  # tables checked at once before the batch starts (two Thrift calls each)


def batch_parser(kind: str) -> argparse.ArgumentParser:
    """The per-table job's parser (`jobargs.copy_parser` / `verify_parser`) with `--tables` instead of `--table`."""
    from hbase_migration.data import jobargs

    prog = f"{kind}_tables.py"
    p = jobargs.copy_parser(prog) if kind == "copy" else jobargs.verify_parser(prog)
    for action in p._actions:  # argparse keeps its arguments there; --table gives way to --tables
        if action.dest in ("table", "target_table"):
            action.required = False
    p.add_argument("--tables", nargs="+", required=True, help="the batch's source tables (ns:name for a namespace); "
                                                              "each keeps its name on the target")
    p.add_argument("--batch", default="batch", help="the batch's name, in logs and the summary")
    p.add_argument("--tables-at-once", type=int,
                   help="tables in flight at once (default: two per task slot of the application)")
    return p


@dataclasses.dataclass
class Batch:
    """A batch whose command line passed every check: its tables' options, in the given order."""

    kind: str
    ns: Any
    source: Any
    target: Any
    options: list[Any]  # CopyOptions / VerifyOptions, one per table
    checked: list[Any]  # check_tables' answer per table
    started: float
    load_limits: Any = None
    store: Any = None
    source_remote: Any = None  # verify: the source as the target's datacenter reaches it (--source-remote)


def table_options(kind: str, ns: argparse.Namespace, tables: Sequence[str]) -> list[Any]:
    """Each table's options: the batch's arguments with `--table` set to it (pure)."""
    from hbase_migration.data import jobargs

    if ns.table or ns.target_table:
        raise jobargs.UsageError("--table and --target-table are the single-table job's: give the batch's tables "
                                 "with --tables (each keeps its name on the target)")
    if len(set(tables)) != len(tables):
        raise jobargs.UsageError(f"--tables: {sorted(t for t in set(tables) if tables.count(t) > 1)[0]!r} is given "
                                 "twice — name each table once")
    build = jobargs.copy_options if kind == "copy" else jobargs.verify_options
    return [build(argparse.Namespace(**{**vars(ns), "table": t})) for t in tables]


def prepare_batch(kind: str, argv: Sequence[str]) -> Batch:
    """Parse and check a batch's command line, every table checked before anything is written. Raises
    `jobargs.UsageError` or `CopyConfigError` (exit 2) naming every table refused, `ConnectionError` (exit 1)."""
    from hbase_migration.data import jobargs
    from hbase_migration.data.executors import configure_logging
    from hbase_migration.data.runner import check_tables, open_store

    ns = batch_parser(kind).parse_args(list(argv))
    configure_logging(ns.log_level)
    started = time.monotonic()
    jobargs.spark_conf(ns.conf)
    jobargs.summary_args_check(ns)
    jobargs.ledger_args(ns)
    if ns.tables_at_once is not None and ns.tables_at_once < 1:
        raise jobargs.UsageError(f"--tables-at-once must be at least 1, got {ns.tables_at_once}")
    source = jobargs.cluster_from_text("source", ns.source)
    target = jobargs.cluster_from_text("target", ns.target)
    options = table_options(kind, ns, ns.tables)
    if kind == "verify":
        jobargs.hash_side_check(ns)
        if getattr(ns, "hash_side", None):
            raise jobargs.UsageError("--hash-side: a verification by hashes with a job beside each cluster runs "
                                     "per table (jobs/verify_table.py), not in a batch")
    source_remote = None
    if kind == "verify" and getattr(ns, "source_remote", None):
        source_remote = jobargs.cluster_from_text("source-remote", ns.source_remote)
    if native_jobs.uses_native(source, target, options[0]):  # the driver's JVM, as runner.prepare_job starts it
        from hbase_migration.data.datapath.native import bridge

        bridge({**jobargs.spark_conf(ns.conf), **({"spark.master": ns.master} if ns.master else {})})
    with ThreadPoolExecutor(min(CHECK_THREADS, len(options)), thread_name_prefix="check") as pool:
        answers = list(pool.map(lambda o: _checked(source, target, o, check_tables), options))
    refused = [f"{o.table}: {a}" for o, a in zip(options, answers) if isinstance(a, CopyConfigError)]
    if refused:
        raise CopyConfigError(f"{len(refused)} of the batch's {len(options)} tables refused, nothing written: "
                              + "; ".join(refused))
    for a in answers:
        if isinstance(a, BaseException):
            raise a
    load_limits = jobargs.load_limits(ns) if kind == "copy" else None
    store = open_store(ns) if kind == "copy" else None
    return Batch(kind, ns, source, target, options, answers, started, load_limits, store, source_remote)


def _checked(source: Any, target: Any, options: Any, check: Callable[..., Any]) -> Any:
    try:
        return check(source, target, options)
    except (CopyConfigError, ConnectionError) as e:  # said per table by the caller
        return e


def _slim(summary: dict[str, Any], tables: int) -> dict[str, Any]:
    """A table's summary as the batch keeps it: in a batch of more than `SMALL_BATCH` tables its partitions'
    figures only for the failed ones (the ledger holds every finished partition; 300 tables' lists would make the
    batch's summary line megabytes)."""
    if tables <= SMALL_BATCH:
        return summary
    out = {k: v for k, v in summary.items() if k not in ("partition_results", "partition_results_truncated")}
    if "failures" in out:
        out["failures"] = out["failures"][:MAX_FAILURES_LISTED]
    return out


class BatchMeter:
    """The batch's progress in tables: done, failed, in flight, and an ETA from the tables' pace so far."""

    def __init__(self, name: str, total: int, clock: Callable[[], float] = time.monotonic):
        self.name, self.total, self.clock = name, total, clock
        self.started = clock()
        self.done = self.failed = self.running = 0
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            self.running += 1

    def end(self, ok: bool) -> str:
        with self._lock:
            self.running -= 1
            self.done += 1
            self.failed += 0 if ok else 1
            return self.line()

    def line(self) -> str:
        elapsed = self.clock() - self.started
        left = self.total - self.done
        eta = f"{elapsed / self.done * left:.0f}s" if self.done and left else ("0s" if not left else "unknown")
        return (f"batch {self.name}: {self.done}/{self.total} tables done ({self.failed} failed), {self.running} in "
                f"flight, {elapsed:.0f}s elapsed, ETA {eta}")


def run_batch(batch: Batch, executor: Any, tables_at_once: int | None = None,
              region_sizes: Callable[[Any, str], Any] | None = None) -> dict[str, Any]:
    """Copy or verify every table of the batch on one executor, `tables_at_once` tables in flight; each table's
    summary under `tables`, `failed_tables` naming those that did not finish clean. `region_sizes(source, table)`
    (as `runner.run_job`'s): each table's size, asked for a verification by hashes or `auto` (each table picks its
    own method, both sides hashed in this one application)."""
    from hbase_migration.data.runner import run_copy, run_verify
    from hbase_migration.data.verify import exit_code

    ns = batch.ns
    slots = getattr(getattr(executor, "sc", None), "defaultParallelism", None) or getattr(executor, "workers", 2)
    at_once = max(1, min(len(batch.options), tables_at_once or ns.tables_at_once or 2 * int(slots)))
    meter = BatchMeter(ns.batch, len(batch.options))
    log.info("batch %s: %s of %d tables, %d at once on %s task slot(s)", ns.batch, batch.kind, len(batch.options),
             at_once, slots)
    governor = None
    options = batch.options
    if batch.kind == "copy" and batch.load_limits is not None:
        from hbase_migration.data.throttle import LoadGovernor, advertised_host, ledger_recorder

        copy_id = ns.copy_id or "batch"
        governor = LoadGovernor(batch.source, batch.load_limits, host=advertised_host(executor),
                                label=f"batch {ns.batch}", record=ledger_recorder(batch.store, copy_id,
                                                                                 f"batch {ns.batch}")).start()
        options = [dataclasses.replace(o, load_url=governor.url) for o in options]

    def one(item: tuple[Any, Any]) -> tuple[str, dict[str, Any], bool]:
        opts, checked = item
        meter.begin()
        try:
            if batch.kind == "copy":
                summary = run_copy(batch.source, batch.target, opts, executor, store=batch.store,
                                   copy_id=ns.copy_id, checked=checked)
                ok = summary["failed_partitions"] == 0
            else:
                region_bytes = None
                if opts.method != "cells" and region_sizes is not None:
                    region_bytes = region_sizes(batch.source, opts.table)
                summary = run_verify(batch.source, batch.target, opts, executor, checked=checked,
                                     source_remote=batch.source_remote, region_bytes=region_bytes,
                                     started_ms=getattr(ns, "started_ms", None))
                ok = exit_code(summary) == 0
        except Exception as e:  # this table fails; the batch's other tables go on
            log.exception("batch %s: %s of %s failed", ns.batch, batch.kind, opts.table)
            summary, ok = {"job": batch.kind, "table": opts.table, "error": f"{type(e).__name__}: {e}"}, False
        log.info("%s (%s %s: %s)", meter.end(ok), batch.kind, opts.table, "ok" if ok else "FAILED")
        return opts.table, _slim(summary, len(batch.options)), ok

    try:
        with ThreadPoolExecutor(at_once, thread_name_prefix=f"{batch.kind}-table") as pool:
            outcomes = list(pool.map(one, zip(options, batch.checked)))
    finally:
        load_control = governor.stop() if governor is not None else None
    summary: dict[str, Any] = {
        "job": batch.kind, "batch": ns.batch, "source": batch.source.describe()["thrift"],
        "target": batch.target.describe()["thrift"], "tables": {t: s for t, s, _ in outcomes},
        "failed_tables": [t for t, _, ok in outcomes if not ok], "tables_at_once": at_once,
        "elapsed_s": round(time.monotonic() - batch.started, 3)}
    if batch.kind == "copy":
        summary["copy_id"] = ns.copy_id
        summary["rows"] = sum(s.get("rows", 0) for _, s, _ in outcomes)
    else:
        summary["identical"] = not summary["failed_tables"]
    if load_control is not None:
        summary["load_control"] = load_control
    return summary


def batch_main(kind: str, argv: Sequence[str], make_executor: Callable[[str, Any], Any],
               region_sizes: Callable[[Any, str], Any] | None = None) -> int:
    """Run a batch from command-line arguments (the Spark jobs jobs/copy_tables.py, jobs/verify_tables.py). Exit 0:
    every table done and clean; 1: a table failed (or differs), or a cluster does not answer; 2: bad arguments or
    tables (nothing was written), said in one line. The last stdout line is the batch's JSON summary."""
    from hbase_migration.clusters import channels
    from hbase_migration.data import jobargs
    from hbase_migration.data.progress import write_summary

    prog = f"{kind}_tables"
    try:
        batch = prepare_batch(kind, argv)
    except (jobargs.UsageError, CopyConfigError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (ConnectionError, *channels.auth_errors()) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    ns = batch.ns
    named = ", ".join(ns.tables) if len(ns.tables) <= 3 else f"{len(ns.tables)} tables"
    executor = make_executor(f"{kind} batch {ns.batch} ({named})", ns)
    try:
        summary = run_batch(batch, executor, region_sizes=region_sizes)
        describe = getattr(executor, "describe", None)
        if describe is not None:
            summary["spark"] = describe()
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    status = 1 if summary["failed_tables"] else 0
    text = json.dumps(summary, sort_keys=True)
    if write_summary(ns, kind, text, prog) is not None:
        status = status or 1
    print(text, flush=True)
    return status


def batch_args(table_argv: Sequence[str], tables: Sequence[str], batch: str,
               tables_at_once: int | None = None) -> list[str]:
    """The batch job's argv from a single-table job's (`jobargs.copy_job_args` / `verify_job_args`, built for any
    one of the tables): its `--table T` becomes `--tables t1 t2 ... --batch NAME` (pure)."""
    argv = list(table_argv)
    if not tables:
        raise ValueError("a batch needs at least one table")
    at = argv.index("--table")
    argv[at:at + 2] = ["--tables", *tables, "--batch", batch]
    if tables_at_once:
        argv += ["--tables-at-once", str(tables_at_once)]
    return argv
