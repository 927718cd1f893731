"""Verify a table by hashes computed beside each cluster; only the leaves that differ are compared cell by cell.

`run_hash_verify` (what `verify --method hash` runs; the pure parts are `leafhash.py`):
1. **plan**, beside the source: the source's regions (one partition each), each region's row keys sampled with
   key-only scans (RowCounter's filters), the table's size (`table_bytes`, its store files in the region servers'
   /jmx when the caller gives it) spread over the rows, cut into leaves of about `hash_leaf_bytes`. The plan (the
   leaves' first keys) goes to the target's side: the same leaves on both sides.
2. **hash**, both sides at once, each beside its cluster (`source_executor`, `target_executor`): every version of
   every cell older than the time bound (`leafhash.time_bound`: the verification's start minus `skew_margin_ms`),
   through a `SideHasher`. Only the digests meet.
3. **re-check**: the leaves whose digests differ are hashed again on both sides after `recompare_sleep_s` (twice as
   long each round, at most `recompare_rounds` rounds, while a round still clears one): an edit that was in flight
   (replication's lag) is no difference, and costs no read across the WAN.
4. **compare by cells** the leaves that still differ, adjacent ones merged into one range, on the target's side
   (`target_executor`, reading the source as the target's datacenter reaches it: `source_remote`): `verify.py`'s
   merge-join, its re-compare of edits in flight and its verdict, with the same bound.
The two sides meet through an exchange: in one process (`run_hash_verify`: the CLI, one Spark application) a
`LocalExchange`; as two Spark applications, each beside its cluster (`hash_source_side` and `hash_target_side`,
`jobs/verify_table.py --hash-side`), the run ledger (`LedgerExchange`). What the sides send each other (the plan,
digests, re-check requests) is counted: it crosses the link.

The verdict: leaves hashed on each side, leaves that differed, ranges compared by cells, bytes of cells read on
each side and those that crossed the link (the plan, the source's digests, the source's cells of the compared
ranges), and each difference exactly (row, family, qualifier, timestamp, type).

What each side's hasher sees: `ThriftHasher` reads through the cluster's Thrift data path, whose scans return
every version each family keeps (puts only): a delete marker is not hashed, so a marker present on one side only
that masks nothing the other side shows is not seen (what the markers mask is: the masked put is absent from that
side's read). `NativeHasher` (clusters on the native data path) hashes in Spark's JVMs through HBase's own client,
raw: every delete marker with its type, and every put its family keeps.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from hbase_migration.data import leafhash
from hbase_migration.data.datapath import open_data_path
from hbase_migration.data.datapath.base import Region, prefetch
from hbase_migration.data.leafhash import HashPartition, LeafDigests, LeafHasher
from hbase_migration.data.partitions import Partition, RegionSample, partition_id, plan_partitions, sample_region
from hbase_migration.data.progress import human_bytes
from hbase_migration.data.scope import to_string_binary
from hbase_migration.data.verify import (
    PartitionVerdict,
    Side,
    VerifyOptions,
    summarize_verify,
    verify_partition_safely,
)

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

HASH_TASKS_PER_SLOT = 2
SEES_THRIFT = ("every version of every cell each family keeps (row, family, qualifier, timestamp, value; puts): "
               "the Thrift APIs return no delete marker, so a marker on one side only that masks nothing the other "
               "side shows is not seen")


# --------------------------------------------------------------------------------------------------
# One side's hashes


class SideHasher(Protocol):
    """How one side's leaves are hashed beside its cluster: `hash(parts, on_done)` returns each partition's
    `LeafDigests` (a failed one with status "failed": its leaves are then compared by cells); `sees` says what the
    reader behind it returns."""

    sees: str

    def hash(self, parts: Sequence[HashPartition],
             on_done: Callable[[list[LeafDigests]], None] | None = None) -> list[LeafDigests]: ...


def hash_partition(cluster: "Cluster", options: VerifyOptions, is_source: bool, part: HashPartition) -> LeafDigests:
    """One partition's leaves on one side, through the cluster's Thrift data path: a scan of its range (every
    version, the window's families, cells below `options.end_time_ms`: the bound), in the target's terms, the next
    batch read while this one is hashed. A failure is a `failed` result naming it."""
    started = time.monotonic()
    try:
        gateway = (part.gateway or None) if is_source else None
        table = options.table if is_source else options.target_table
        with open_data_path(cluster, options.timeout_s, options.retries, options.retry_wait_max_s,
                            gateway) as path:
            side = Side("source" if is_source else "target", path, table, options, is_source)
            hasher = LeafHasher(part)
            for batch in prefetch(side.batches(part.start_row, part.stop_row), 2):
                hasher.add_batch(batch)
            out = hasher.finish()
    except Exception as e:
        log.error("hashing partition %s of the %s failed: %s: %s", part.describe(),
                  "source" if is_source else "target", type(e).__name__, e)
        out = LeafDigests(part.index, part.first_leaf, status="failed", error=f"{type(e).__name__}: {e}")
    out.elapsed_s = round(time.monotonic() - started, 3)
    return out


class ThriftHasher:
    """A side hashed by Python tasks on `executor`, reading through the cluster's Thrift data path."""

    sees = SEES_THRIFT

    def __init__(self, cluster: "Cluster", options: VerifyOptions, is_source: bool, executor: Any):
        self.cluster, self.options, self.is_source, self.executor = cluster, options, is_source, executor

    def hash(self, parts: Sequence[HashPartition],
             on_done: Callable[[list[LeafDigests]], None] | None = None) -> list[LeafDigests]:
        task = functools.partial(hash_partition, self.cluster, self.options, self.is_source)
        return self.executor.run(list(parts), task, on_done, tasks_per_slot=HASH_TASKS_PER_SLOT)


SEES_NATIVE = ("every delete marker (its type and timestamp) and every version each family keeps (HBase's client, raw "
               "reads through the native path's range reader): a put masked, or past its family's VERSIONS, that only "
               "the cluster's next compaction drops is left out on both sides")


class NativeHasher:
    """A side hashed by the native path's JVM tasks in Spark's executors (`jvm/`: `HashTask` over the raw range
    reader, the digest byte for byte `leafhash`'s), so delete markers are hashed too."""

    sees = SEES_NATIVE

    def __init__(self, cluster: "Cluster", options: VerifyOptions, is_source: bool, executor: Any):
        self.cluster, self.options, self.executor = cluster, options, executor
        self.side = "source" if is_source else "target"

    def hash(self, parts: Sequence[HashPartition],
             on_done: Callable[[list[LeafDigests]], None] | None = None) -> list[LeafDigests]:
        from hbase_migration.data import native_jobs

        first = {p.index: p.first_leaf for p in parts}

        def digests(d: dict[str, Any]) -> LeafDigests:
            if d.get("status") != "hashed":  # a failed task's result names the partition and the error
                return LeafDigests(int(d["index"]), first.get(int(d["index"]), 0), status="failed",
                                   error=d.get("error"), elapsed_s=float(d.get("elapsed_s", 0.0)))
            return LeafDigests.from_dict(d)

        done = (lambda fresh: on_done([digests(d) for d in fresh])) if on_done else None
        return [digests(d) for d in native_jobs.hash_partitions(self.cluster, self.side, self.options,
                                                                [p.to_dict() for p in parts], self.executor, done,
                                                                HASH_TASKS_PER_SLOT)]


def side_hasher(cluster: "Cluster", options: VerifyOptions, is_source: bool, executor: Any) -> SideHasher:
    """The native path's hasher for a cluster on it (both sides are, or neither: `native_jobs.uses_native`), else
    the Thrift one."""
    if getattr(cluster, "uses_native", False):
        return NativeHasher(cluster, options, is_source, executor)
    return ThriftHasher(cluster, options, is_source, executor)


# --------------------------------------------------------------------------------------------------
# The plan


def _sample(cluster: "Cluster", options: VerifyOptions, max_keys: int, region: Region) -> tuple[bytes, RegionSample]:
    return region.name, sample_region(cluster, options, region, max_keys)


def plan_hash(source: "Cluster", options: VerifyOptions, regions: Sequence[Region], executor: Any,
              table_bytes: int | None = None) -> list[HashPartition]:
    """The leaves, from the source: its regions, their rows and sampled keys (key-only scans on `executor`, beside
    the source) and the table's size (`table_bytes`, its store files from the region servers' /jmx; None:
    unknown, leaves then by rows)."""
    native = getattr(source, "uses_native", False)
    partitions = plan_partitions(regions, options, gateways=() if native else source.gateways)
    wanted = {p.region for p in partitions}
    sampled = [r for r in regions if r.name.decode("utf-8", "backslashreplace") in wanted]
    max_keys = leafhash.sample_keys_wanted(table_bytes, len(sampled), options.hash_leaf_bytes)
    if native:  # key-only scans in the executors' JVMs
        from hbase_migration.data import native_jobs

        found = native_jobs.sample_regions(source, options, sampled, executor, max_keys).items()
    else:
        found = executor.map(sampled, functools.partial(_sample, source, options, max_keys))
    samples = {name.decode("utf-8", "backslashreplace"): sample for name, sample in found}
    return leafhash.plan_leaves(partitions, samples, options.hash_leaf_bytes, table_bytes)


def leaf_partitions(plan: Sequence[HashPartition], leaves: Sequence[int]) -> list[HashPartition]:
    """One partition per leaf (to hash those leaves again), with its source gateway and host."""
    by_first = list(plan)
    out = []
    for n, start, stop in leafhash.leaf_ranges(plan, leaves):
        owner = next(p for p in by_first if p.first_leaf <= n < p.first_leaf + p.leaves)
        out.append(HashPartition(n, start, stop, (), n, owner.region, owner.host, owner.gateway))
    return out


# --------------------------------------------------------------------------------------------------
# Where the two sides meet


class ExchangeError(RuntimeError):
    """The other side did not answer in time, or said it failed."""


class LocalExchange:
    """The two sides in one process (the CLI, one Spark application): messages in a dict. Counts the bytes each
    side sent (as JSON, what a link would carry)."""

    def __init__(self, timeout_s: float = 6 * 3600.0):
        self.timeout_s = timeout_s
        self.sent: dict[str, int] = {"source": 0, "target": 0}
        self._box: dict[str, Any] = {}
        self._cond = threading.Condition()

    def put(self, key: str, message: Mapping[str, Any], sender: str) -> None:
        with self._cond:
            self.sent[sender] += _json_bytes(message)
            self._box[key] = json.loads(json.dumps(message))
            self._cond.notify_all()

    def take(self, key: str, what: str) -> dict[str, Any]:
        with self._cond:
            if not self._cond.wait_for(lambda: key in self._box, self.timeout_s):
                raise ExchangeError(f"no {what} within {self.timeout_s:.0f} s (key {key})")
            return self._box.pop(key)


class LedgerExchange:
    """The two sides in two Spark applications (each beside its cluster), meeting in the run ledger: a message is a
    job summary row under `prefix/key` (`Ledger.put_job_summary`), taken once by the other side (polled)."""

    def __init__(self, url: str, prefix: str, side: str, timeout_s: float = 6 * 3600.0, poll_s: float = 1.0):
        self.url, self.prefix, self.side, self.timeout_s, self.poll_s = url, prefix, side, timeout_s, poll_s
        self.sent: dict[str, int] = {"source": 0, "target": 0}  # by this side, and to it by the other

    def put(self, key: str, message: Mapping[str, Any], sender: str) -> None:
        from hbase_migration.data.progress import retry_transient
        from hbase_migration.ledger.store import Ledger

        text = json.dumps(message, separators=(",", ":"))
        self.sent[sender] += len(text.encode("utf-8"))

        def put() -> None:
            with Ledger.open(self.url) as ledger:
                ledger.put_job_summary(f"{self.prefix}/{key}", "hash-exchange", text)

        retry_transient(put, f"sending {key} to the other side", 120.0)

    def abort(self, reason: str) -> None:
        """Tell a side still waiting that the other one is gone (what submitted both jobs says so)."""
        self.put("abort", {"error": reason}, "target")

    def take(self, key: str, what: str) -> dict[str, Any]:
        from hbase_migration.ledger.store import Ledger, is_transient

        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                with Ledger.open(self.url) as ledger:
                    found = ledger.take_job_summary(f"{self.prefix}/{key}")
                    aborted = None if found is not None else ledger.take_job_summary(f"{self.prefix}/abort")
                if found is not None:
                    self.sent["target" if self.side == "source" else "source"] += _json_bytes(found)
                    return found
                if aborted is not None:
                    raise ExchangeError(f"no {what}: {aborted.get('error')}")
            except ExchangeError:
                raise
            except Exception as e:
                if not is_transient(e):
                    raise
            if time.monotonic() >= deadline:
                raise ExchangeError(f"no {what} within {self.timeout_s:.0f} s (ledger key {self.prefix}/{key})")
            time.sleep(self.poll_s)


def _checked_message(message: dict[str, Any], what: str) -> dict[str, Any]:
    if message.get("error"):
        raise ExchangeError(f"the other side failed before sending {what}: {message['error']}")
    return message


# --------------------------------------------------------------------------------------------------
# The two sides


def hash_source_side(source: "Cluster", options: VerifyOptions, executor: Any, exchange: Any, *,
                     regions: Sequence[Region], started_ms: int, table_bytes: int | None = None,
                     hasher: SideHasher | None = None) -> dict[str, Any]:
    """The source's side, beside the source: plans the leaves and sends the plan (with the time bound), hashes
    the source and sends its digests, then hashes again the leaves the target's side asks for, until it says done.
    Returns the side's figures; a failure is sent to the other side before it is raised."""
    t0 = time.monotonic()
    try:
        bound = leafhash.time_bound(started_ms, options.skew_margin_ms, options.end_time_ms)
        bounded = dataclasses.replace(options, end_time_ms=bound, count_bytes=True)
        hasher = hasher or side_hasher(source, bounded, True, executor)
        plan = plan_hash(source, bounded, regions, executor, table_bytes)
        leaves = leafhash.leaf_count(plan)
        exchange.put("plan", {"plan": [p.to_dict() for p in plan], "bound": bound, "started_ms": started_ms,
                              "sees": hasher.sees, "plan_s": round(time.monotonic() - t0, 3)}, "source")
        log.info("hash verify %s (source side): %d partitions, %d leaves planned; cells below %d", options.table,
                 len(plan), leaves, bound)
        t_hash = time.monotonic()
        results = hasher.hash(plan, _meter("source", len(plan), leaves))
        hash_s = time.monotonic() - t_hash
    except Exception as e:
        exchange.put("plan", {"error": f"{type(e).__name__}: {e}"}, "source")
        raise
    exchange.put("source/0", {"results": [r.to_dict() for r in results], "hash_s": round(hash_s, 3)}, "source")
    rounds = 0
    while True:
        request = exchange.take(f"request/{rounds + 1}", "the target side's next request")
        if request.get("done"):
            break
        rounds += 1
        again = leaf_partitions(plan, request["leaves"])
        exchange.put(f"source/{rounds}", {"results": [r.to_dict() for r in hasher.hash(again)]}, "source")
    totals = leafhash.side_totals(results)
    log.info("hash verify %s (source side) done: %d leaves, %s of cells hashed, %d re-check round(s)",
             options.table, totals["leaves"], human_bytes(totals["bytes"]), rounds)
    return {"side": "source", **totals, "recheck_rounds": rounds, "hash_s": round(hash_s, 3),
            "elapsed_s": round(time.monotonic() - t0, 3),
            "target_said": request.get("error")}


def hash_target_side(source_remote: "Cluster", target: "Cluster", options: VerifyOptions, executor: Any,
                     exchange: Any, *, hasher: SideHasher | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The target's side, beside the target: waits for the plan, hashes the target, meets the source's digests,
    has the differing leaves hashed again on both sides (re-check rounds), compares the leaves still differing by
    cells (reading the source as `source_remote`, across the link), and returns the verdict (`hash_verdict`)."""
    t0 = time.monotonic()
    message = _checked_message(exchange.take("plan", "plan from the source's side"), "its plan")
    rounds = 0  # requests sent to the source's side so far
    try:
        plan = [HashPartition.from_dict(d) for d in message["plan"]]
        bound, started_ms = int(message["bound"]), int(message["started_ms"])
        bounded = dataclasses.replace(options, end_time_ms=bound, count_bytes=True)
        hasher = hasher or side_hasher(target, bounded, False, executor)
        leaves = leafhash.leaf_count(plan)
        t_plan = time.monotonic()
        tgt_results = hasher.hash(plan, _meter("target", len(plan), leaves))
        target_hash_s = time.monotonic() - t_plan
        src_message = _checked_message(exchange.take("source/0", "the source's digests"), "its digests")
        src_results = [LeafDigests.from_dict(d) for d in src_message["results"]]
        differing = leafhash.differing_leaves(leafhash.digests_by_leaf(src_results),
                                              leafhash.digests_by_leaf(tgt_results), range(leaves))
        first_pass = list(differing)
        t_hash = time.monotonic()
        log.info("hash verify %s: %d of %d leaves differ after the first pass", options.table, len(differing),
                 leaves)
        recheck_src, recheck_tgt = [], []
        while differing and rounds < options.recompare_rounds and options.recompare_sleep_s > 0:
            sleep(options.recompare_sleep_s * 2 ** rounds)
            rounds += 1
            exchange.put(f"request/{rounds}", {"leaves": differing}, "target")
            again = leaf_partitions(plan, differing)
            t_again = hasher.hash(again)
            s_again = [LeafDigests.from_dict(d) for d in
                       _checked_message(exchange.take(f"source/{rounds}", "the source's re-check"),
                                        "its re-check")["results"]]
            recheck_src += s_again
            recheck_tgt += t_again
            still = leafhash.differing_leaves(leafhash.digests_by_leaf(s_again), leafhash.digests_by_leaf(t_again),
                                              differing)
            log.info("hash verify %s: re-check %d: %d of %d differing leaves still differ", options.table, rounds,
                     len(still), len(differing))
            cleared = len(still) < len(differing)
            differing = still
            if not cleared:
                break
    except BaseException as e:
        exchange.put(f"request/{rounds + 1}", {"done": True, "error": f"{type(e).__name__}: {e}"}, "target")
        raise
    exchange.put(f"request/{rounds + 1}", {"done": True}, "target")
    t_recheck = time.monotonic()

    # Compare by cells, here beside the target, only the ranges still differing.
    ranges = leafhash.merge_ranges(leafhash.leaf_ranges(plan, differing))
    fp = bounded.fingerprint()
    compare = [Partition(options.table, i, start, stop, "", partition_id(options.table, start, stop, fp))
               for i, (start, stop, _leaves) in enumerate(ranges)]
    verdicts: list[PartitionVerdict] = []
    if compare:
        log.info("hash verify %s: comparing %d range(s) (%d leaves) cell by cell, the source read as %s",
                 options.table, len(compare), len(differing), source_remote.describe()["thrift"])
        if getattr(target, "uses_native", False):  # raw on both sides, markers compared too
            from hbase_migration.data import native_jobs

            verdicts = native_jobs.verify_partitions(source_remote, target, bounded, compare, executor, None,
                                                     HASH_TASKS_PER_SLOT)
        else:
            verdicts = executor.run(compare, functools.partial(_verify_range, source_remote, target, bounded), None,
                                    tasks_per_slot=HASH_TASKS_PER_SLOT)
    t_cells = time.monotonic()
    plan_s = float(message.get("plan_s", 0.0))
    return hash_verdict(options, bounded, started_ms, plan, src_results, tgt_results, first_pass, differing,
                        rounds, recheck_src, recheck_tgt, ranges, verdicts, dict(exchange.sent),
                        {"plan_s": plan_s, "hash_s": t_hash - t_plan,
                         "source_hash_s": float(src_message.get("hash_s", 0)), "target_hash_s": target_hash_s,
                         "recheck_s": t_recheck - t_hash, "cells_s": t_cells - t_recheck,
                         "elapsed_s": plan_s + (t_cells - t0)},
                        str(message.get("sees", "")), hasher.sees)


def _json_bytes(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


def _meter(name: str, total_parts: int, total_leaves: int) -> Callable[[list[LeafDigests]], None]:
    """Progress of one side's hashing: partitions, leaves and bytes done, rate, ETA (by leaves)."""
    started = time.monotonic()
    done = {"parts": 0, "leaves": 0, "bytes": 0}
    lock = threading.Lock()

    def on_done(results: list[LeafDigests]) -> None:
        with lock:
            done["parts"] += len(results)
            done["leaves"] += sum(len(r.digests) for r in results)
            done["bytes"] += sum(sum(r.nbytes) for r in results)
            elapsed = time.monotonic() - started
            rate = done["leaves"] / elapsed if elapsed > 0 else 0.0
            eta = (total_leaves - done["leaves"]) / rate if rate > 0 else None
            log.info("hash %s: %d/%d partitions, %d/%d leaves, %s of cells in %.0f s (%s/s), ETA %s", name,
                     done["parts"], total_parts, done["leaves"], total_leaves, human_bytes(done["bytes"]), elapsed,
                     human_bytes(done["bytes"] / elapsed if elapsed > 0 else 0),
                     "unknown" if eta is None else f"{eta:.0f} s")
        for r in results:
            if r.status != "hashed":
                log.error("hash %s: partition %d failed: %s (its leaves are compared by cells)", name, r.index,
                          r.error)
    return on_done


def run_hash_verify(source: "Cluster", target: "Cluster", options: VerifyOptions, *, source_executor: Any,
                    target_executor: Any, checked: tuple[dict[bytes, int], list[Region]],
                    source_remote: "Cluster | None" = None, table_bytes: int | None = None,
                    started_ms: int | None = None, hashers: tuple[SideHasher, SideHasher] | None = None,
                    sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Both sides in this process, meeting in a `LocalExchange` (the CLI, one Spark application): the source's
    side on `source_executor` in a thread of its own, the target's on `target_executor`; the JSON result.

    `source_remote`: the source as the target's datacenter reaches it (default `source`). `started_ms`: the
    verification's start (default now), from which the time bound is taken. `checked`: `runner.check_tables`'
    answer. `hashers`: the sides' `SideHasher`s (default: `ThriftHasher` on each side's executor)."""
    started_ms = int(time.time() * 1000) if started_ms is None else started_ms
    bound = leafhash.time_bound(started_ms, options.skew_margin_ms, options.end_time_ms)
    if options.start_time_ms is not None and options.start_time_ms >= bound:
        from hbase_migration.data.scope import CopyConfigError

        raise CopyConfigError(f"start_time_ms {options.start_time_ms} is at or after the hash verification's time "
                              f"bound {bound} (its start minus skew_margin_ms {options.skew_margin_ms}): nothing "
                              "would be compared — verify later, or with --method cells")
    exchange = LocalExchange()
    src_hasher, tgt_hasher = hashers or (None, None)
    box: dict[str, Any] = {}

    def source_side() -> None:
        try:
            box["source"] = hash_source_side(source, options, source_executor, exchange, regions=checked[1],
                                             started_ms=started_ms, table_bytes=table_bytes, hasher=src_hasher)
        except BaseException as e:  # sent to the target's side already; raised there as an ExchangeError
            box["error"] = e

    thread = threading.Thread(target=source_side, name="hash-source-side", daemon=True)
    thread.start()
    try:
        result = hash_target_side(source_remote or source, target, options, target_executor, exchange,
                                  hasher=tgt_hasher, sleep=sleep)
    except ExchangeError:
        thread.join()
        if "error" in box:
            raise box["error"] from None
        raise
    thread.join()
    if "error" in box:
        raise box["error"]
    return result


def _verify_range(source: "Cluster", target: "Cluster", options: VerifyOptions, partition: Partition
                  ) -> PartitionVerdict:
    return verify_partition_safely(source, target, partition, options)


def hash_verdict(options: VerifyOptions, bounded: VerifyOptions, started_ms: int, plan: Sequence[HashPartition],
                 src: Sequence[LeafDigests], tgt: Sequence[LeafDigests], first_pass: Sequence[int],
                 differing: Sequence[int], rounds: int, recheck_src: Sequence[LeafDigests],
                 recheck_tgt: Sequence[LeafDigests], ranges: Sequence[tuple[bytes, bytes, tuple[int, ...]]],
                 verdicts: Sequence[PartitionVerdict], shipped: Mapping[str, int], times: Mapping[str, float],
                 sees_source: str, sees_target: str) -> dict[str, Any]:
    """The result JSON of a hash verification (pure): the cell comparison's figures (`summarize_verify`, over the
    compared ranges) with the whole table's row counts from the hashes, and the hash figures per side."""
    result: dict[str, Any] = {"job": "verify", "method": "hash"}
    result.update(summarize_verify(verdicts, bounded, times["elapsed_s"]))
    s_tot, t_tot = leafhash.side_totals(list(src)), leafhash.side_totals(list(tgt))
    # Rows: the hashes count every row of the table on each side; the compared ranges' rows were counted there too.
    different = result["content_different"] + result["only_in_source"]
    result["source_rows"], result["target_rows"] = s_tot["rows"], t_tot["rows"]
    result["matching"] = max(0, s_tot["rows"] - different)
    result["verifyreplication_counters"]["GOODROWS"] = result["matching"]
    result["partitions"] = len(plan)
    result["failed_partitions"] = s_tot["failed_partitions"] + t_tot["failed_partitions"] + \
        sum(1 for v in verdicts if v.status != "verified")
    result["identical"] = result["identical"] and result["failed_partitions"] == 0
    if result["failed_partitions"] and not result["failures"]:
        result["failures"] = [{"side": side, "index": r.index, "error": r.error}
                              for side, rs in (("source", src), ("target", tgt)) for r in rs if r.status != "hashed"]
    result["start_time_ms"] = options.start_time_ms
    result["end_time_ms"] = bounded.end_time_ms  # the bound: what this verification covers
    result["verify_started_ms"] = started_ms
    result["skew_margin_ms"] = options.skew_margin_ms
    result["time_bound_ms"] = bounded.end_time_ms
    cells_src = sum(v.source_bytes for v in verdicts)
    cells_tgt = sum(v.target_bytes for v in verdicts)
    recheck_s_bytes = sum(sum(r.nbytes) for r in recheck_src)
    recheck_t_bytes = sum(sum(r.nbytes) for r in recheck_tgt)
    def rate(totals: Mapping[str, int], seconds: float) -> dict[str, float]:
        return {"hash_s": round(seconds, 3), "mb_per_s": round(totals["bytes"] / 1e6 / seconds, 2) if seconds else 0.0}

    result["hash"] = {
        "leaf_bytes": options.hash_leaf_bytes,
        "leaves": leafhash.leaf_count(plan),
        "source": {**s_tot, **rate(s_tot, times.get("source_hash_s", 0.0)), "sees": sees_source},
        "target": {**t_tot, **rate(t_tot, times.get("target_hash_s", 0.0)), "sees": sees_target},
        "differing_leaves_first_pass": len(first_pass),
        "recheck_rounds": rounds,
        "differing_leaves": len(differing),
        "cleared_by_recheck": len(first_pass) - len(differing),
        "ranges_compared_by_cells": len(ranges),
        "differing_leaf_sample": [{"leaf": n, "start_row": to_string_binary(s), "stop_row": to_string_binary(e)}
                                  for n, s, e in leafhash.leaf_ranges(plan, differing[:options.sample_limit])],
    }
    result["bytes_read"] = {
        "source": s_tot["bytes"] + recheck_s_bytes + cells_src,
        "target": t_tot["bytes"] + recheck_t_bytes + cells_tgt,
        "source_by_cells": cells_src, "target_by_cells": cells_tgt,
    }
    result["link_bytes"] = {"source_side_messages": shipped.get("source", 0),
                            "target_side_messages": shipped.get("target", 0), "source_cells": cells_src,
                            "total": shipped.get("source", 0) + shipped.get("target", 0) + cells_src}
    result["differences"] = [leafhash.difference_dict(*v) for verdict in verdicts if verdict.status == "verified"
                             for v in verdict.versions][:options.sample_limit]
    result["times_s"] = {k: round(v, 3) for k, v in times.items()}
    result["elapsed_s"] = round(times["elapsed_s"], 3)
    return result
