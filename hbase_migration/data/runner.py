"""A whole copy or verification of one table: checks, plan, partitions on an executor, the summary.

`run_copy` and `run_verify` are what the Spark jobs (`jobs/`, with a `SparkExecutor`) and the CLI (with a
`LocalExecutor`) both call; `job_main` is the command-line skeleton they share: arguments, checks before
actions, the run, one JSON summary line on stdout (logs go to stderr), exit 0 / 1 / 2.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from hbase_migration.data import native_jobs
from hbase_migration.data.copy import CopyOptions, PartitionResult, copy_partition_safely, default_copy_id, summarize
from hbase_migration.data.datapath import open_data_path
from hbase_migration.data.datapath.base import Region
from hbase_migration.data.leafhash import choose_method
from hbase_migration.data.partitions import Partition, plan_partitions, sample_region
from hbase_migration.data.progress import ProgressMeter, record_done, record_plan, write_summary
from hbase_migration.data.resume import FinishedRange, resume_plan
from hbase_migration.data.scope import CopyConfigError, TableScope, versions_text
from hbase_migration.data.verify import (
    PartitionVerdict,
    VerifyOptions,
    exit_code,
    summarize_verify,
    verify_partition_safely,
)

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)
MAX_PARTITION_RESULTS = 1000
VERIFY_TASKS_PER_SLOT = 2


def onto_itself(source: "Cluster", target: "Cluster", options: TableScope) -> bool:
    """Whether the scope maps cells onto themselves: the same cluster (by normalized cluster key, or a Thrift
    gateway both name: one gateway serves one cluster) and the same table, with at least one family kept under
    its own name. A copy would rewrite the same cells and a verification compare a table with itself (and call
    it identical). Another table on the same cluster (CopyTable's `--new.name`), or only renamed families, is a
    real copy."""
    from hbase_migration.replication.model import normalize_table

    same_cluster = (source.cluster_key.normalized() == target.cluster_key.normalized()
                    or bool(set(source.gateways) & set(target.gateways)))
    same_table = normalize_table(options.table) == normalize_table(options.target_table)
    keeps_a_family = not options.families or any(s == d for s, d in options.families)
    return same_cluster and same_table and keeps_a_family


def check_tables(source: "Cluster", target: "Cluster", options: TableScope) -> tuple[dict[bytes, int], list[Region]]:
    """Refuse a copy/verify onto itself, or whose tables or families are missing (before anything is written);
    returns the source's family -> VERSIONS and its regions."""
    if onto_itself(source, target, options):
        raise CopyConfigError(
            f"target: {target.name!r} is the source cluster {source.name!r} ({source.cluster_key}) and "
            f"{options.target_table!r} the source table, so every cell would map onto itself — give the target "
            "cluster's connection, or another table (--target-table) to copy within one cluster")
    with _metadata(source, target, options) as (s, t):
        src = s.families(options.table)
        if not src:
            raise CopyConfigError(f"table: {options.table!r} does not exist on the source {source.name!r} — check "
                                  "the table's name ('ns:name' for a namespace) and the source connection")
        dst = t.families(options.target_table)
        if not dst:
            raise CopyConfigError(
                f"target_table: {options.target_table!r} does not exist on the target {target.name!r} — create it "
                "with the source's families and split keys first (python -m hbase_migration create-tables)")
        for s_family, d_family in options.families or tuple((f, f) for f in sorted(src)):
            if s_family not in src:
                raise CopyConfigError(f"families: {s_family.decode()!r} is not a family of {options.table!r} on the "
                                      f"source — name one it has: {', '.join(sorted(f.decode() for f in src))}")
            if d_family not in dst:
                raise CopyConfigError(f"families: {d_family.decode()!r} is not a family of {options.target_table!r} "
                                      f"on the target — name one it has: "
                                      f"{', '.join(sorted(f.decode() for f in dst))}")
        regions = s.regions(options.table)
    if not regions:
        raise CopyConfigError(f"table {options.table!r} has no regions on the source {source.name!r}")
    return src, regions


@contextlib.contextmanager
def _metadata(source: "Cluster", target: "Cluster", options: TableScope) -> Iterator[tuple[Any, Any]]:
    """Both clusters' families and regions: through HBase's client in the driver's JVM on the native path
    (`native_jobs`), else through each cluster's data path. Refuses a native/Thrift pair first."""
    if native_jobs.uses_native(source, target, options):
        try:
            yield native_jobs.metadata(source, options.timeout_s), native_jobs.metadata(target, options.timeout_s)
        except RuntimeError as e:  # HBase's client cannot reach a cluster (the JVM's exception, one line)
            raise ConnectionError(str(e)) from None
        return
    with open_data_path(source) as s, open_data_path(target) as t:
        yield s, t


def finished_ranges(store: Any, copy_id: str, table: str, planned: Sequence[Partition],
                    fingerprint: str) -> list[FinishedRange]:
    """What `store` recorded as finished, as key ranges. A store that keeps only ids (a custom one without
    `finished_ranges`) is matched by id against the plan, as resumes did before ranges were kept."""
    if store is None:
        return []
    ranges = getattr(store, "finished_ranges", None)
    if callable(ranges):
        return list(ranges(copy_id, table))
    done = store.done_partitions(copy_id, table)
    return [FinishedRange(p.partition_id, p.start_row, p.stop_row, fingerprint) for p in planned
            if p.partition_id in done]


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
    and a re-run skips them. With `load_limits` (`hbase_migration.data.throttle.LoadLimits`) this driver samples the
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
        if source.uses_native:
            samples = native_jobs.sample_regions(source, options, regions, executor)
        else:
            samples = dict(executor.map(regions, functools.partial(_sample, source, options)))
    partitions = plan_partitions(regions, options, samples, () if source.uses_native else source.gateways)
    fingerprint = options.fingerprint()
    finished = finished_ranges(store, copy_id, options.table, partitions, fingerprint)
    resumed = resume_plan(partitions, finished, options.table, fingerprint)
    todo, skipped = list(resumed.todo), resumed.skipped
    # The dashboard's "partitions done of total": the plan as is when its partitions are the finished ranges
    # (a first run, or a resume on unchanged regions), else the finished ranges plus the pieces left.
    unchanged = resumed.trimmed == 0 and resumed.finished == resumed.skipped
    record_plan(store, copy_id, options.table, partitions if unchanged else [None] * resumed.finished + todo)
    if resumed.finished:
        log.info("resuming copy %s: %d finished key range(s) recorded; of %d planned partitions %d are finished "
                 "(skipped), %d partly (only their unfinished pieces are copied), %d partition(s) to copy",
                 copy_id, resumed.finished, len(partitions), skipped, resumed.trimmed, len(todo))
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
                 "rows": r.rows, "cells": r.cells, "bytes": r.bytes, "fingerprint": fingerprint} for r in copied])
        for r in results:
            meter.add(rows=r.rows, cells=r.cells, nbytes=r.bytes, partitions=1)
            if r.status != "copied":
                log.error("partition %d failed: %s", r.index, r.error)
        log.info("progress: %s", meter.line())

    governor = None
    if load_limits is not None and todo:
        from hbase_migration.data.throttle import LoadGovernor, advertised_host, ledger_recorder

        governor = LoadGovernor(source, load_limits, host=advertised_host(executor), label=options.table,
                                record=ledger_recorder(store, copy_id, options.table)).start()
        options = dataclasses.replace(options, load_url=governor.url)
    try:
        heartbeat = lambda: log.info("progress: %s", meter.line())  # noqa: E731
        if source.uses_native:
            results = native_jobs.copy_partitions(source, target, options, todo, executor, on_done, heartbeat)
        else:
            results = executor.run(todo, functools.partial(_copy, source, target, options), on_done, heartbeat)
    finally:
        load_control = governor.stop() if governor is not None else None
    summary = {
        "job": "copy", "copy_id": copy_id, "table": options.table, "target_table": options.target_table,
        "source": source.describe()["thrift"], "target": target.describe()["thrift"],
        "start_time_ms": options.start_time_ms, "end_time_ms": options.end_time_ms,
        "versions": versions_text(options.versions),
        "families": options.content_key()["families"], "data_path": source.describe()["data_path"],
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
               checked: tuple[dict[bytes, int], list[Region]] | None = None,
               target_executor: Any = None, source_remote: "Cluster | None" = None,
               region_bytes: Mapping[str, int] | None = None, started_ms: int | None = None) -> dict[str, Any]:
    """Verify one table on `executor`, one task per source region (as VerifyReplication's mappers); `checked`:
    what `check_tables` returned just before. Returns the JSON result (`identical`).

    `options.method` "hash" (or "auto" with `region_bytes`, the source's encoded region name -> bytes, reaching
    `hash_min_bytes`): leaves hashed beside each cluster (`executor` beside the source, `target_executor` beside the
    target; default the same), only the differing ones compared by cells, reading the source as `source_remote`
    (the source as the target's datacenter reaches it; default `source`): `hashverify.run_hash_verify`."""
    started = time.monotonic() if started is None else started
    checked = checked or check_tables(source, target, options)
    table_bytes = None if region_bytes is None else sum(region_bytes.values())
    method, why = choose_method(options.method, table_bytes, options.hash_min_bytes)
    if method == "hash":
        from hbase_migration.data.hashverify import run_hash_verify

        log.info("verify %s -> %s by hashes (%s)", options.table, options.target_table, why)
        result = run_hash_verify(source, target, options, source_executor=executor,
                                 target_executor=target_executor or executor, source_remote=source_remote,
                                 checked=checked, table_bytes=table_bytes, started_ms=started_ms)
        result.update(source=source.describe()["thrift"], target=target.describe()["thrift"], method_reason=why,
                      data_path=source.describe()["data_path"])
        return result
    _families, regions = checked
    remote = source_remote or source
    partitions = plan_partitions(regions, options, gateways=() if source.uses_native else remote.gateways)
    log.info("verify %s -> %s: %d partitions, level %s, cells with %s <= ts < %s%s (%s)", options.table,
             options.target_table, len(partitions), options.level, options.start_time_ms or 0, options.end_time_ms,
             ", REPAIR enabled" if options.repair else "", why)
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
    if source.uses_native:
        verdicts = native_jobs.verify_partitions(remote, target, options, partitions, executor, on_done,
                                                 VERIFY_TASKS_PER_SLOT)
    else:
        verdicts = executor.run(partitions, functools.partial(_verify, remote, target, options), on_done,
                                tasks_per_slot=VERIFY_TASKS_PER_SLOT)
    result = {"job": "verify", "method": "cells", "method_reason": why, "source": remote.describe()["thrift"],
              "target": target.describe()["thrift"], "data_path": source.describe()["data_path"]}
    result.update(summarize_verify(verdicts, options, time.monotonic() - started))
    return result


def run_hash_side(job: "Job", executor: Any, region_bytes: Mapping[str, int] | None) -> dict[str, Any]:
    """One side of a verification by hashes (`--hash-side`), beside its cluster, meeting the other side's job in
    the ledger: the source's side returns its figures, the target's the verdict."""
    from hbase_migration.data.hashverify import LedgerExchange, hash_source_side, hash_target_side

    ns = job.ns
    exchange = LedgerExchange(ns.summary_ledger_url, f"hash-exchange/{ns.exchange_key}", ns.hash_side)
    if ns.hash_side == "source":
        started_ms = ns.started_ms if ns.started_ms is not None else int(time.time() * 1000)
        figures = hash_source_side(job.source, job.options, executor, exchange, regions=job.checked[1],
                                   started_ms=started_ms,
                                   table_bytes=None if region_bytes is None else sum(region_bytes.values()))
        return {"job": "verify", "method": "hash", "hash_side": "source", "table": job.options.table, **figures}
    result = hash_target_side(job.source_remote or job.source, job.target, job.options, executor, exchange)
    result.update(source=(job.source_remote or job.source).describe()["thrift"],
                  target=job.target.describe()["thrift"], hash_side="target")
    return result


# ---------------------------------------------------------------------------------------------------------
# The command line shared by jobs/copy_table.py, jobs/verify_table.py and `python -m hbase_migration copy|verify`


def open_store(ns: Any) -> Any:
    """The savepoint file or the ledger named on the command line; None: no resume."""
    from hbase_migration.data.jobargs import UsageError

    if ns.savepoint and ns.ledger_url:
        raise UsageError("--savepoint and --ledger-url are exclusive — record progress in one place")
    if ns.savepoint:
        from hbase_migration.data.progress import SavepointFile

        return SavepointFile(ns.savepoint)
    if ns.ledger_url:
        from hbase_migration.data.progress import LedgerStore
        from hbase_migration.ledger.store import Ledger, LedgerError

        try:
            return LedgerStore(Ledger.open(ns.ledger_url))
        except LedgerError as e:
            raise UsageError(f"--ledger-url: {e} — give a SQLAlchemy URL of a database the toolkit can use, such "
                             "as sqlite:////var/lib/hbase-migration/ledger.db or postgresql+psycopg://user@host/db"
                             ) from None
    return None


def switch_hold(ns: Any, source: "Cluster", copy_id: str, table: str) -> Any:
    """The CLI copy's hold on the source's split/merge and normalizer switches (`hbase_migration.data.switches`),
    counted in the ledger of --ledger-url, else the default one (HBASE_MIGRATION_LEDGER_URL, else
    $AIRFLOW_HOME/.state/ledger.db): the ledger a DAG on this machine uses, so their holds count each other."""
    from hbase_migration.data.switches import SwitchHold, holder_name
    from hbase_migration.ledger.location import cli_ledger_url

    return SwitchHold(source, ns.ledger_url or cli_ledger_url(), holder_name(copy_id, table))


def _release(hold: Any) -> str | None:
    """End the switch hold (None: none); the error text when the restore failed (the hold stays recorded)."""
    if hold is None:
        return None
    try:
        hold.__exit__(None, None, None)
    except Exception as e:  # the copy's own outcome stands; the message says how to release it
        return str(e)
    return None


@dataclasses.dataclass
class Job:
    """A copy or verification whose command line passed every check: what `run_job` runs."""

    kind: str
    ns: Any
    source: "Cluster"
    target: "Cluster"
    options: Any
    started: float
    load_limits: Any = None
    store: Any = None
    checked: Any = None  # what check_tables found (the run reuses it rather than asking the clusters again)
    source_remote: Any = None  # verify: the source as the target's datacenter reaches it (--source-remote)
    data_path_why: str | None = None  # why `data_path: auto` became what it did (the CLI resolves it)


def prepare_job(kind: str, argv: Sequence[str], prog: str | None = None, resolve_auto: bool = False) -> Job:
    """Parse and check `kind`'s ("copy" or "verify") command line: everything that can refuse it before anything
    is written (arguments, clusters, the resume store, the tables). Raises `jobargs.UsageError` or
    `CopyConfigError` for bad input (exit 2) and `ConnectionError` when a cluster does not answer (exit 1).
    `resolve_auto` (the CLI): `data_path: auto` resolved here, from this host (the Spark jobs get it resolved by
    their operator and never probe)."""
    from hbase_migration.data import jobargs
    from hbase_migration.data.executors import configure_logging

    parser = jobargs.copy_parser(prog) if kind == "copy" else jobargs.verify_parser(prog)
    ns = parser.parse_args(list(argv))
    configure_logging(ns.log_level)
    started = time.monotonic()
    jobargs.spark_conf(ns.conf)
    jobargs.summary_args_check(ns)
    if kind == "verify":
        jobargs.hash_side_check(ns)
    jobargs.ledger_args(ns)
    source = jobargs.cluster_from_text("source", ns.source)
    target = jobargs.cluster_from_text("target", ns.target)
    load_limits = store = None
    if kind == "copy":
        options: Any = jobargs.copy_options(ns)
        load_limits = jobargs.load_limits(ns)
        store = open_store(ns)
    else:
        options = jobargs.verify_options(ns)
    source_remote = None
    if kind == "verify" and ns.source_remote:
        source_remote = jobargs.cluster_from_text("source-remote", ns.source_remote)
    choice = None
    if resolve_auto:
        from hbase_migration.data.datapath.auto import follow, resolve

        if onto_itself(source, target, options):  # bad input refused before any probe
            check_tables(source, target, options)
        given = (source, target)
        source, target, choice = resolve(source, target, repair=getattr(options, "repair", False),
                                         where=f"{socket.gethostname()}, where the CLI runs its Spark driver")
        if source_remote is not None:
            source_remote = follow(source_remote, source)
    if native_jobs.uses_native(source, target, options):  # the driver's JVM, started as the job's Spark needs it
        from hbase_migration.data.datapath.native import bridge

        bridge({**jobargs.spark_conf(ns.conf), **({"spark.master": ns.master} if ns.master else {})})
    checked = check_tables(source, target, options)  # checks before actions: a bad table changes nothing
    if source_remote is not None:
        check_tables(source_remote, target, options)  # the same table through the other route
    if choice is not None:  # said once the input passed: a refusal stays one line
        log.info("%s", choice.line(*given))
    return Job(kind, ns, source, target, options, started, load_limits, store, checked, source_remote,
               choice.reason if choice is not None else None)


def run_job(job: Job, make_executor: Callable[[str, Any], Any], *, hold_switches: bool = False,
            region_sizes: Callable[["Cluster", str], Mapping[str, int] | None] | None = None) -> int:
    """Run a prepared job on `make_executor(app_name, ns)`'s executor (its `close()`, if any, is called at the
    end); print the JSON summary line. Exit 0: done and clean; 1: a partition failed, verify found differences or
    the switches could not be held. With `hold_switches` (the CLI; the Spark job leaves that to its operator, as
    its driver may run where no HBase shell is) a copy holds the source's split/merge and normalizer switches off
    while it runs, unless --no-hold-switches. `region_sizes(source, table)`: the source's encoded region name ->
    bytes of the table (its region servers' /jmx; None: unknown), asked for a verification by hashes or "auto"."""
    from hbase_migration.data.switches import SwitchError

    ns, options = job.ns, job.options
    prog = f"{job.kind}_table"
    hold = None
    if job.kind == "copy" and hold_switches and not ns.no_hold_switches:
        hold = switch_hold(ns, job.source, ns.copy_id or default_copy_id(job.source, job.target, options),
                           options.table)
        try:
            hold.__enter__()
        except SwitchError as e:  # nothing was copied, nothing is held
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 1
    executor = make_executor(f"{job.kind} {options.table} -> {options.target_table}", ns)
    try:
        if job.kind == "copy":
            summary = run_copy(job.source, job.target, options, executor, store=job.store, copy_id=ns.copy_id,
                               started=job.started, load_limits=job.load_limits, checked=job.checked)
            status = 0 if summary["failed_partitions"] == 0 else 1
        else:
            region_bytes = None
            if options.method != "cells" and region_sizes is not None:
                region_bytes = region_sizes(job.source, options.table)
            if getattr(ns, "hash_side", None):
                summary = run_hash_side(job, executor, region_bytes)
                status = exit_code(summary) if ns.hash_side == "target" else 0
            else:
                summary = run_verify(job.source, job.target, options, executor, started=job.started,
                                     checked=job.checked, source_remote=job.source_remote,
                                     region_bytes=region_bytes, started_ms=ns.started_ms)
                status = exit_code(summary)
        if job.data_path_why:  # beside the summary's `data_path`
            summary["data_path_why"] = job.data_path_why
        describe = getattr(executor, "describe", None)
        if describe is not None:  # Spark: the application id, and where the driver and executors ran
            summary["spark"] = describe()
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
        release_error = _release(hold)
    if release_error is not None:
        print(f"{prog}: error: {release_error}", file=sys.stderr)
        status = 1
    if hold is not None:
        summary["switches"] = {"found": hold.held["found"], "set": hold.held["set"],
                               "restored": (hold.released or {}).get("restored"),
                               "held_by": (hold.released or {}).get("held_by"),
                               "release_error": release_error}
    text = json.dumps(summary, sort_keys=True)
    if write_summary(ns, job.kind, text, prog) is not None:
        status = status or 1
    print(text, flush=True)
    return status


def job_main(kind: str, argv: Sequence[str], make_executor: Callable[[str, Any], Any],
             region_sizes: Callable[["Cluster", str], Mapping[str, int] | None] | None = None) -> int:
    """Run `kind` ("copy" or "verify") from command-line arguments (the Spark jobs). Exit 0: done and clean;
    1: a partition failed, verify found differences, or a cluster does not answer; 2: bad arguments or tables
    (nothing was written), said in one line."""
    from hbase_migration.clusters import channels
    from hbase_migration.data import jobargs
    from hbase_migration.data.datapath.native import NativeUnavailable

    prog = f"{kind}_table"
    try:
        job = prepare_job(kind, argv)
    except (jobargs.UsageError, CopyConfigError, NativeUnavailable) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (ConnectionError, *channels.auth_errors()) as e:  # a cluster that does not answer or authenticate
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    return run_job(job, make_executor, region_sizes=region_sizes)
