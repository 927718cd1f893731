"""The copy: HBase's CopyTable, partition by partition, every cell written with its source timestamp.

As CopyTable (`org.apache.hadoop.hbase.mapreduce.CopyTable`): one task per source region, a `[start, end)` time
range, `--versions`, `--families=src:dst` renames. Preserving timestamps is what makes the copy safe to combine
with replication: an edit made after T0 and replayed from the backlog carries a newer timestamp than the copied
cell, so it wins on the target whatever the order of arrival. For the same reason a re-run (resume, retry) is
idempotent: it writes the same cells with the same timestamps. Deletes are not copied (a scan does not return
them): the replication backlog carries every delete made after T0.

`copy_partition` streams one partition through the data path (`hbase_migration.data.datapath`): memory stays flat,
at most a few scan batches and the writer's queue are held, never the partition, and never a whole wide row
either: the scan brings it in slices (`scan_batch_cells`) and each slice is written as its own put (a row
need not arrive in one put: every cell carries its own timestamp).
"""
from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from hbase_migration.data.datapath import open_data_path
from hbase_migration.data.datapath.base import prefetch, rows_in
from hbase_migration.data.partitions import Partition
from hbase_migration.data.progress import ProgressMeter, Throttle, human_bytes
from hbase_migration.data.scope import (
    TableScope,
    positive_option,
    rename_column,
    to_string_binary,
)
from hbase_migration.data.throttle import LoadGate

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CopyOptions(TableScope):
    """A copy's scope plus how it runs. Every tuning knob has a reason:

    - write_batch_cells / write_batch_bytes: cells and bytes buffered before they are handed to the
      writer; one write call never carries more.
    - writers: target connections written in parallel (the Thrift server gives one
      thread per connection, so this hides both network and server time); None: the
      data path's own (Thrift1 needs many: one call per timestamp; Thrift2 batches).
    - pipeline: calls sent back to back per connection before reading the answers;
      hides network RTT only, and only against servers that set TCP_NODELAY on
      accepted sockets (Java Thrift does; a server that does not pays Nagle's
      ~40 ms per delayed answer), hence 1 by default.
    - rows_per_s / bytes_per_s: per-task cap on what is read from the source.
    - load_url: the driver's load-throttle decision (`hbase_migration.data.throttle.LoadGovernor.url`), applied
      between batches; None: no load-aware throttle.
    """

    write_batch_cells: int = 5000
    write_batch_bytes: int = 4 << 20
    writers: int | None = None
    pipeline: int = 1
    rows_per_s: float | None = None
    bytes_per_s: float | None = None
    log_every_s: float = 30.0
    load_url: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("write_batch_cells", "write_batch_bytes", "pipeline"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name))
        object.__setattr__(self, "writers", positive_option(self.writers, "writers", allow_none=True))
        for name in ("rows_per_s", "bytes_per_s"):
            value = positive_option(getattr(self, name), name, allow_none=True, integer=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "log_every_s", positive_option(self.log_every_s, "log_every_s", integer=False))



@dataclass
class PartitionResult:
    """What one task did; small, JSON-ready, sent back to the driver."""

    partition_id: str
    index: int
    table: str
    start_row: bytes
    stop_row: bytes
    status: str = "copied"  # copied | failed
    rows: int = 0
    cells: int = 0
    delete_markers: int = 0  # of `cells`: the native path copies delete markers (the Thrift paths read none)
    bytes: int = 0
    scanned_rows: int = 0
    write_calls: int = 0  # server calls; on the native path, mutations handed to HBase's BufferedMutator
    retries: int = 0
    throttled_s: float = 0.0
    elapsed_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_row"] = self.start_row.hex()
        d["stop_row"] = self.stop_row.hex()
        return d


def summarize(results: Iterable[PartitionResult], skipped: int, elapsed_s: float) -> dict[str, Any]:
    """The final JSON summary of a copy (totals, rate, failures)."""
    results = list(results)
    done = [r for r in results if r.status == "copied"]
    failed = [r for r in results if r.status != "copied"]
    rows = sum(r.rows for r in done)
    nbytes = sum(r.bytes for r in done)
    return {
        "partitions": len(results) + skipped,
        "copied_partitions": len(done),
        "skipped_partitions": skipped,
        "failed_partitions": len(failed),
        "rows": rows,
        "cells": sum(r.cells for r in done),
        "delete_markers": sum(r.delete_markers for r in done),
        "bytes": nbytes,
        "scanned_rows": sum(r.scanned_rows for r in done),
        "write_calls": sum(r.write_calls for r in done),
        "retries": sum(r.retries for r in results),
        "throttled_s": round(sum(r.throttled_s for r in results), 3),
        "elapsed_s": round(elapsed_s, 3),
        "rows_per_s": round(rows / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "bytes_per_s": round(nbytes / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "failures": [
            {"partition_id": r.partition_id, "index": r.index, "start_row": to_string_binary(r.start_row),
             "stop_row": to_string_binary(r.stop_row), "error": r.error}
            for r in failed
        ],
    }


def copy_partition(
    source: "Cluster",
    target: "Cluster",
    partition: Partition,
    options: CopyOptions,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> PartitionResult:
    """Copy one partition: stream the source scan, write every cell with its own timestamp.

    `on_progress` gets a dict (rows, cells, bytes, rates) every `log_every_s` and at the end. Raises on failure
    after retries (the caller decides whether that fails the job).
    """
    result = PartitionResult(partition.partition_id, partition.index, partition.table,
                             partition.start_row, partition.stop_row)
    meter = ProgressMeter(total_partitions=1, total_rows=partition.est_rows, clock=clock)
    throttle = Throttle(options.rows_per_s, options.bytes_per_s)
    gate = LoadGate(options.load_url) if options.load_url else None
    if gate is not None:
        gate.check()  # the copy may have given up on an overloaded source: fail before scanning
    stats: dict[str, int] = {}
    started = clock()
    last_log = started
    path_args = (options.timeout_s, options.retries, options.retry_wait_max_s)
    reader = open_data_path(source, *path_args, partition.gateway or None)
    writer = None
    try:
        with open_data_path(target, *path_args) as target_path:
            writer = target_path.writer(options.target_table, writers=options.writers or target_path.default_writers,
                                        pipeline=options.pipeline, batch_cells=options.write_batch_cells,
                                        batch_bytes=options.write_batch_bytes)
        pending: list = []
        pending_cells = pending_bytes = 0
        scan = reader.scan(options.table, partition.start_row, partition.stop_row, columns=options.source_columns,
                           start_ms=options.start_time_ms, end_ms=options.end_time_ms, versions=options.versions,
                           batch_rows=options.scan_batch_rows, batch_cells=options.scan_batch_cells,
                           call_cells=options.scan_call_cells, stats=stats)
        renames = options.renames
        last_row = None  # a wide row comes in pieces: it counts as one row
        for batch in prefetch(scan, depth=2):
            batch_rows, last_row = rows_in(batch, last_row)
            result.scanned_rows += batch_rows
            batch_bytes = 0
            for row, cells in batch:  # the data path returns only cells inside the window
                kept = [(rename_column(c, renames), ts, v) for c, ts, v in cells] if renames else cells
                size = sum(len(c) + len(v) for c, _, v in kept) + (len(row) + 8) * len(kept)
                pending.append((row, kept))
                pending_cells += len(kept)
                pending_bytes += size
                batch_bytes += size
                result.cells += len(kept)
                result.bytes += size
                if pending_cells >= options.write_batch_cells or pending_bytes >= options.write_batch_bytes:
                    writer.put(pending)
                    pending, pending_cells, pending_bytes = [], 0, 0
            result.rows += batch_rows
            meter.add(rows=batch_rows, nbytes=batch_bytes)
            if throttle.enabled:
                # pieces, not rows, pace the copy: each slice of a wide row is as much work as a narrow row
                result.throttled_s += throttle.acquire(len(batch), batch_bytes)
            if gate is not None:
                result.throttled_s += gate.after_batch(len(batch))
            now = clock()
            if now - last_log >= options.log_every_s:
                last_log = now
                _report(partition, result, meter, on_progress, final=False)
        if pending:
            writer.put(pending)
        writer.close()  # returns once every write is acknowledged: only then is the partition done
        result.write_calls = writer.calls
        stats["retries"] = stats.get("retries", 0) + writer.retried
        writer = None
    finally:
        if writer is not None:
            try:
                writer.close()
            except Exception:  # the original error is the one to report
                pass
        reader.close()
    result.elapsed_s = round(clock() - started, 3)
    result.retries = stats.get("retries", 0) + reader.reconnects
    meter.cells = result.cells
    _report(partition, result, meter, on_progress, final=True)
    return result


def _report(partition: Partition, result: PartitionResult, meter: ProgressMeter,
            on_progress: Callable[[dict[str, Any]], None] | None, final: bool) -> None:
    snap = meter.snapshot()
    snap.update(partition_id=partition.partition_id, index=partition.index, final=final,
                rows=result.rows, cells=result.cells, bytes=result.bytes)
    log.info("partition %s %s: %d rows, %d cells, %s (%.0f rows/s)%s", partition.describe(),
             "done" if final else "progress", result.rows, result.cells, human_bytes(result.bytes),
             snap["rows_per_s"], "" if final or snap["eta_s"] is None else f", ETA {snap['eta_s']:.0f}s")
    if on_progress is not None:
        on_progress(snap)


def copy_partition_safely(source: "Cluster", target: "Cluster", partition: Partition,
                          options: CopyOptions) -> PartitionResult:
    """`copy_partition` that turns a failure into a `failed` result, so the other partitions carry on and the
    failure is listed (and retried by the next run)."""
    started = time.monotonic()
    try:
        return copy_partition(source, target, partition, options)
    except Exception as e:
        log.error("partition %s failed: %s: %s", partition.describe(), type(e).__name__, e)
        return PartitionResult(partition.partition_id, partition.index, partition.table,
                               partition.start_row, partition.stop_row, status="failed",
                               elapsed_s=round(time.monotonic() - started, 3),
                               error=f"{type(e).__name__}: {e}")


def default_copy_id(source: "Cluster", target: "Cluster", options: TableScope) -> str:
    """A copy's id when none is given: the clusters and tables (not the window: each window is its own
    set of partition ids already)."""
    text = f"{source.cluster_key}|{options.table}|{target.cluster_key}|{options.target_table}"
    return "copy-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
