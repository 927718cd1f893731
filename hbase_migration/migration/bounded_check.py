"""The cut-over's bounded check: what changed since the last full verification, compared in seconds.

The full verification (every version of every table, `data/verify.py`) runs *before* the write freeze, with the
clients still writing to the source; it proves that at its read time each key range was the same on both sides
(rows in flight re-compared after a pause). What the freeze must still check is bounded: only cells written
after that verification started. So both sides are scanned with a time range `[since, +inf)`, every version
(HBase skips every HFile whose time range ends before `since`, so the cost follows what was written since, not
the table's size), merge-joined by row key (`data/rowdiff.compare_sides`) and each differing version classified:

* `lost`: a source version the target lacks: an acknowledged write that did not arrive. Stops the cut-over;
* `conflict`: the same column and timestamp with another value on each side. Stops it;
* `not_kept`: a version only on the target, written before the reverse peer existed (`kept_since_ms`): a client
  wrote to the target too early and nothing will ship it back. Stops it;
* `early_write`: a version only on the target written once the reverse peer (target -> source, DISABLED until
  the switch) existed: it is kept in the target's WALs and ships to the source at the switch. Allowed, counted;
* `superseded`: a source version the target lacks because a kept early write of the same column replaced it (a
  family keeping fewer versions than were written). Allowed, counted.

`since` is the start of the last verification (the ledger's `verify` phase started there; a live pass before the
freeze moves it later) minus a clock-skew margin (`skew_margin_ms`): the cells' timestamps are the region
servers' clocks, the verification's start the toolkit's.

The guarantee: every version whose timestamp is at or after `since` is compared, on both sides, after the
forward peer drained with writes fenced. What it cannot see (a time-range scan returns neither delete markers
nor cells older than its range):
* a delete (of a row, a column or a version) that masks only cells older than `since`: a delete made with the
  current time masks older cells, and its marker is not returned; a delete with an explicit old timestamp the
  same;
* a put with an explicit client timestamp older than `since` (replayed or backdated data).
How the design covers them: (1) the forward peer's drain inside the freeze (`replication/wal_drain.py`) proves
that every WAL edit written before the fence, deletes and backdated puts included, has shipped: replication
carries them all, the check is the second line; (2) right after the switch a full verification compares every
version again while the reverse peer (ENABLED at the switch) keeps the source current, and a rollback is one step
away (`hbase_rollback`), so a difference found then is caught with both sides intact.

The live pass (writes not fenced) re-reads its differing rows until they match or `settle_s` has passed
(`settle`): a lag gate reading "drained" does not prove that no batch is in flight.

The work runs in parallel per region across all tables: items (table, key range) cut at the source's region
boundaries (`plan_ranges`, read before the freeze by the window), taken by a bounded pool of threads
(`WindowOptions.parallel_checks`, 16 by default), each with one connection per side reused for every item it
takes; the results merged in plan order (`merge_ranges`), so the verdict and its counts are those of one scan
per table.

Pure: `since_ms`, `classify`, `settle` (given its re-read), `plan_ranges`, `merge_ranges`. I/O:
`read_region_starts`, `compare_window`, `recheck`, `bounded_check` (the data path, Thrift).
"""
from __future__ import annotations

import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from hbase_migration.data.rowdiff import (
    MISSING_ON_TARGET,
    ONLY_ON_TARGET,
    VALUE_DIFFERS,
    cell_differences,
    compare_sides,
)
from hbase_migration.data.scope import cell_order, to_string_binary
from hbase_migration.migration.cutover_plan import CUTOVER_ROLES, Roles

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

LOST, CONFLICT, NOT_KEPT, EARLY_WRITE, SUPERSEDED = "lost", "conflict", "not_kept", "early_write", "superseded"
STOPPING = (LOST, CONFLICT, NOT_KEPT)
ALL_VERSIONS_OF_A_ROW = 1_000_000  # compare_sides names every differing version (the window is small)

Difference = tuple  # (table, row, ((column, ts, kind), ...))


class BoundedCheckError(ValueError):
    """The check cannot be made (no verification to start from); the message says what to do."""


def since_ms(verify_started_ms: Mapping[str, int | None], tables: Sequence[str], skew_margin_ms: int) -> int:
    """The check's lower bound: the earliest start of the tables' last verification, minus the skew margin.
    BoundedCheckError naming every table with no verification start."""
    missing = [t for t in tables if verify_started_ms.get(t) is None]
    if missing:
        raise BoundedCheckError(f"no verification start recorded for {', '.join(missing)}: the bounded check "
                                "compares what changed since the last full verification, which must run first")
    if isinstance(skew_margin_ms, bool) or not isinstance(skew_margin_ms, int) or skew_margin_ms < 0:
        raise BoundedCheckError(f"skew_margin_ms must be an integer >= 0, got {skew_margin_ms!r}")
    return max(0, min(int(verify_started_ms[t]) for t in tables) - skew_margin_ms)


@dataclass(frozen=True)
class CheckVerdict:
    """What the check found, per kind of version, and whether the cut-over may go on."""

    ok: bool
    counts: Mapping[str, int]
    rows: int  # differing rows
    samples: tuple[str, ...] = ()  # the first differing versions, described
    reasons: tuple[str, ...] = ()  # why it stops (empty when ok)
    early_rows: tuple[tuple[str, str], ...] = ()  # (table, row) with kept early target writes

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["counts"] = dict(self.counts)
        d["samples"], d["reasons"] = list(self.samples), list(self.reasons)
        d["early_rows"] = [list(r) for r in self.early_rows]
        return d


def classify(differences: Iterable[Difference], kept_since_ms: int | None, sample_limit: int = 10, *,
             live: bool = False, roles: Roles = CUTOVER_ROLES) -> CheckVerdict:
    """Each differing version of each row as lost, conflict, not_kept, early_write or superseded (module doc).

    `kept_since_ms`: the instant from which the reverse peer keeps the target's writes (None: it does not exist,
    every target-only version is not kept). A target-only version counts as kept when its timestamp is at or
    after it; the caller puts a skew margin into it (a version stamped just before may have been written after).
    `live`: the writes were not fenced (the live pass), so a lost version says replication is behind, not that a
    write is gone. `roles`: whose names the reasons use (a rollback's source side is the migration's target)."""
    counts = {k: 0 for k in (LOST, CONFLICT, NOT_KEPT, EARLY_WRITE, SUPERSEDED)}
    samples: list[str] = []
    early_rows: list[tuple[str, str]] = []
    rows = 0
    for table, row, versions in differences:
        rows += 1
        kept_newest: dict[bytes, int] = {}
        for column, ts, kind in versions:
            if kind == ONLY_ON_TARGET and kept_since_ms is not None and ts >= kept_since_ms:
                kept_newest[column] = max(ts, kept_newest.get(column, ts))
        row_early = False
        for column, ts, kind in versions:
            if kind == MISSING_ON_TARGET:
                label = SUPERSEDED if kept_newest.get(column, -1) > ts else LOST
            elif kind == VALUE_DIFFERS:
                label = CONFLICT
            elif kind == ONLY_ON_TARGET:
                label = EARLY_WRITE if column in kept_newest and ts >= kept_since_ms else NOT_KEPT
            else:
                raise ValueError(f"unknown kind of difference {kind!r}")
            counts[label] += 1
            row_early = row_early or label == EARLY_WRITE
            if label in STOPPING and len(samples) < sample_limit:
                samples.append(f"{table} row {to_string_binary(row)} {to_string_binary(column)} @{ts}: {label}")
        if row_early:
            early_rows.append((table, to_string_binary(row)))
    reasons = []
    if counts[LOST] and live:
        reasons.append(f"{counts[LOST]} {roles.fenced} version(s) written since the last verification were still not "
                       f"on the {roles.joined} when the live pass gave up re-reading them (writes not fenced): the "
                       f"{roles.drained} is behind or stuck although its lag metrics looked drained")
    elif counts[LOST]:
        reasons.append(f"{counts[LOST]} {roles.fenced} version(s) written since the last verification are not on the "
                       f"{roles.joined} although the {roles.drained} drained with writes fenced: an acknowledged write "
                       "did not arrive")
    if counts[CONFLICT]:
        reasons.append(f"{counts[CONFLICT]} version(s) have the same column and timestamp but another value on each "
                       "side: both clusters took a write")
    if counts[NOT_KEPT]:
        reasons.append(f"{counts[NOT_KEPT]} version(s) exist only on the {roles.joined} and were written before the "
                       f"{roles.kept} existed: a client wrote to the {roles.joined} too early, and nothing ships those "
                       "back")
    return CheckVerdict(not reasons, counts, rows, tuple(samples), tuple(reasons), tuple(early_rows))


# --------------------------------------------------------------------------------------------------
# The work: (table, key range) items, compared in parallel across all tables


MAX_RANGES = 1024  # key ranges per check at most: one per region below it (each costs one scan call per side)
# Ranges per thread of the pool at most: enough that a slow region leaves the other threads work to take, few enough
# that the scans' own cost (a region lookup and a scanner per side, each) stays small beside the reading. One range
# per region was slower than one per table at 3 x 50 regions on the bed (docs/cutover.md).
RANGES_PER_THREAD = 4


def max_ranges_for(parallel: int) -> int:
    """Pure: how many key ranges a check run by `parallel` threads is cut into at most."""
    return max(1, min(MAX_RANGES, RANGES_PER_THREAD * parallel))


@dataclass(frozen=True)
class CheckRange:
    """A piece of the check's work: the versions of `table` in `[start, stop)` (`stop` b"": to its end)."""

    table: str
    start: bytes
    stop: bytes


def plan_ranges(tables: Sequence[str], region_starts: Mapping[str, Sequence[bytes]],
                max_ranges: int = MAX_RANGES) -> list[CheckRange]:
    """Pure: every table's key space cut at its regions' start keys, one range per region, in table order then
    key order. The ranges of a table always cover it whole, from b"" to its end, whatever the start keys say: a
    region split or merged after they were read (they are read before the freeze) moves where work is cut, never
    leaves a key out. Above `max_ranges` regions in all, each table keeps a share of `max_ranges` in proportion
    to its regions (contiguous regions grouped), at least one range. BoundedCheckError naming the tables with no
    region read (does it exist?)."""
    if isinstance(max_ranges, bool) or not isinstance(max_ranges, int) or max_ranges < 1:
        raise BoundedCheckError(f"max_ranges must be an integer >= 1, got {max_ranges!r}")
    missing = [t for t in tables if not region_starts.get(t)]
    if missing:
        raise BoundedCheckError(f"no region of {', '.join(missing)} on the source (does it exist?)")
    starts = {t: sorted(set(region_starts[t]) | {b""}) for t in tables}
    total = sum(len(k) for k in starts.values())
    out: list[CheckRange] = []
    for table in tables:
        keys = starts[table]
        n = len(keys) if total <= max_ranges else max(1, min(len(keys), len(keys) * max_ranges // total))
        cuts = [keys[i * len(keys) // n] for i in range(n)] + [b""]
        out.extend(CheckRange(table, cuts[i], cuts[i + 1]) for i in range(n))
    return out


def merge_ranges(plan: Sequence[CheckRange], results: Mapping[int, tuple[list[Difference], Mapping[str, int]]]
                 ) -> tuple[list[Difference], dict[str, int]]:
    """Pure: the ranges' results (by their index in `plan`, in whatever order they finished) as one compare: the
    differing rows in plan order (each table's in key order, as one scan of it would give them), the cells read
    per side summed, `ranges` the number compared. A range of the plan with no result is an error, never "no
    difference"."""
    lost = [i for i in range(len(plan)) if i not in results]
    if lost:
        first = plan[lost[0]]
        raise RuntimeError(f"{len(lost)} of {len(plan)} key range(s) of the bounded check were not compared (first: "
                           f"{first.table} [{to_string_binary(first.start)}, {to_string_binary(first.stop)})): no "
                           "verdict can be given")
    differences: list[Difference] = []
    stats = {"source_cells": 0, "target_cells": 0, "ranges": len(plan)}
    for i in range(len(plan)):
        found, one = results[i]
        differences.extend(found)
        stats["source_cells"] += int(one.get("source_cells", 0))
        stats["target_cells"] += int(one.get("target_cells", 0))
    return differences, stats


# --------------------------------------------------------------------------------------------------
# I/O


def _pooled(clusters: Sequence["Cluster"], count: int, work: Callable[..., Any], parallel: int,
            timeout_s: float | None) -> dict[int, Any]:
    """`work(i, *paths)` for i in range(count), by at most `parallel` threads, each with ONE data path per
    cluster of its own, reused for every item it takes (300 tables are 300 items, not 600 connections). The
    first failure stops every thread from taking another item and is raised. Returns {i: result}."""
    import threading

    from hbase_migration.data.datapath import open_data_path

    results: dict[int, Any] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    items = iter(range(count))

    def worker() -> None:
        try:
            with contextlib.ExitStack() as stack:
                paths = [stack.enter_context(open_data_path(c, timeout_s)) for c in clusters]
                while not errors:
                    with lock:
                        i = next(items, None)
                    if i is None:
                        return
                    results[i] = work(i, *paths)
        except BaseException as e:  # raised in the caller below
            with lock:
                errors.append(e)

    threads = max(1, min(parallel, count))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bounded") as pool:
        for future in [pool.submit(worker) for _ in range(threads)]:
            future.result()
    if errors:
        raise errors[0]
    return results


def read_region_starts(source: "Cluster", tables: Sequence[str], *, parallel: int = 16,
                       timeout_s: float | None = None) -> dict[str, list[bytes]]:
    """Each table's region start keys on `source`, read by `parallel` threads (one call per table)."""
    found = _pooled([source], len(tables), lambda i, path: [r.start_key for r in path.regions(tables[i])],
                    parallel, timeout_s)
    return {t: found[i] for i, t in enumerate(tables)}


def _compare_range(src: Any, tgt: Any, item: CheckRange, since: int) -> tuple[list[Difference], dict[str, int]]:
    from hbase_migration.data.datapath.base import prefetch

    def pieces(path: Any):
        for batch in path.scan(item.table, item.start, item.stop, start_ms=since, versions=None, batch_rows=1000,
                               batch_cells=5000):
            yield from batch

    stats: dict[str, int] = {}
    out = [(item.table, row, versions) for row, _status, versions, _wide in
           compare_sides(prefetch(pieces(src)), prefetch(pieces(tgt)), matching=False, stats=stats,
                         limit=ALL_VERSIONS_OF_A_ROW)]
    return out, stats


def compare_window(source: "Cluster", target: "Cluster", tables: Sequence[str], since: int, *,
                   parallel: int = 16, timeout_s: float | None = None,
                   ranges: Sequence[CheckRange] | None = None) -> tuple[list[Difference], dict[str, int]]:
    """Both sides' versions with timestamp >= `since`, compared per region across all tables: the work items
    (`ranges`, else `plan_ranges` over the source's regions read now) taken by `parallel` threads, each with one
    connection per side; the differing rows (`merge_ranges`)."""
    if ranges is None:
        ranges = plan_ranges(tables, read_region_starts(source, tables, parallel=parallel, timeout_s=timeout_s),
                             max_ranges_for(parallel))
    plan = list(ranges)
    results = _pooled([source, target], len(plan), lambda i, src, tgt: _compare_range(src, tgt, plan[i], since),
                      parallel, timeout_s)
    differences, stats = merge_ranges(plan, results)
    stats["parallel"] = max(1, min(parallel, len(plan)))
    return differences, stats


def recheck(source: "Cluster", target: "Cluster", differences: Sequence[Difference], since: int, *,
            timeout_s: float | None = None) -> list[Difference]:
    """The differing rows read again by key on both sides (edits in flight when the check ran live); those that
    still differ, with their differing versions now."""
    from hbase_migration.data.datapath import open_data_path

    by_table: dict[str, list[bytes]] = {}
    for table, row, _ in differences:
        by_table.setdefault(table, []).append(row)
    out: list[Difference] = []
    with open_data_path(source, timeout_s) as src, open_data_path(target, timeout_s) as tgt:
        for table, keys in by_table.items():
            s = src.get_rows(table, keys, start_ms=since, versions=None)
            t = tgt.get_rows(table, keys, start_ms=since, versions=None)
            for key in keys:
                equal, versions = cell_differences(sorted(s.get(key, ()), key=cell_order),
                                                   sorted(t.get(key, ()), key=cell_order), ALL_VERSIONS_OF_A_ROW)
                if not equal:
                    out.append((table, key, versions))
    return out


def settle(differences: Sequence[Difference], reread: Callable[[Sequence[Difference]], list[Difference]],
           kept_since_ms: int | None, *, pause_s: float, budget_s: float,
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic
           ) -> tuple[list[Difference], int]:
    """The live pass's differing rows re-read (`reread`) every `pause_s` while some still stop the cut-over, for
    at most `budget_s` after the first re-read: writes are not fenced yet, so a version missing on the target may
    be in flight (a replication batch held up by a region move on the target, a slow sink) and a target-only one
    may be a source delete not yet shipped. Returns what still differs and how many re-reads were made."""
    current = list(differences)
    rounds = 0
    deadline = None
    while current and (rounds == 0 or not classify(current, kept_since_ms).ok):
        if deadline is not None and clock() >= deadline:
            break
        sleep(pause_s)
        current = reread(current)
        rounds += 1
        if deadline is None:
            deadline = clock() + budget_s
    return current, rounds


def bounded_check(source: "Cluster", target: "Cluster", tables: Sequence[str], since: int, *,
                  kept_since_ms: int | None, live: bool = False, recompare_sleep_s: float = 2.0,
                  settle_s: float = 0.0, parallel: int = 16, timeout_s: float | None = None,
                  sleep: Any = time.sleep, clock: Any = time.monotonic, roles: Roles = CUTOVER_ROLES,
                  ranges: Sequence[CheckRange] | None = None) -> dict[str, Any]:
    """Compare every version written since `since` on both sides and classify what differs (`classify`).

    `live` (writes still going to the source, before the freeze): the differing rows are read again after
    `recompare_sleep_s`, and again every `recompare_sleep_s` for up to `settle_s` while some still stop the
    cut-over (`settle`); only those still differing then count. Returns the verdict as a dict with `since_ms`, the
    cells read per side, the ranges, `seconds`, `recompared` rows and `rereads`. `ranges`: the work items planned
    beforehand (`plan_ranges`: the window reads the regions before the freeze); None: planned now."""
    started = clock()
    differences, stats = compare_window(source, target, tables, since, parallel=parallel, timeout_s=timeout_s,
                                        ranges=ranges)
    first = len(differences)
    rereads = 0
    if live and differences:
        differences, rereads = settle(differences, lambda d: recheck(source, target, d, since, timeout_s=timeout_s),
                                      kept_since_ms, pause_s=recompare_sleep_s, budget_s=settle_s, sleep=sleep,
                                      clock=clock)
    verdict = classify(differences, kept_since_ms, live=live, roles=roles)
    result = {**verdict.to_dict(), "since_ms": since, "kept_since_ms": kept_since_ms, "live": live,
              "tables": list(tables), **stats, "recompared": first if live else 0, "rereads": rereads,
              "seconds": round(clock() - started, 3)}
    log.info("bounded check since %d (%s): %d source / %d target cells in %d ranges, %d differing row(s) (%s)%s in "
             "%.2fs%s", since, "live" if live else "frozen", stats["source_cells"], stats["target_cells"],
             stats["ranges"], verdict.rows, ", ".join(f"{k} {v}" for k, v in verdict.counts.items() if v) or "none",
             f" after {rereads} re-read(s) of {first} row(s)" if rereads else "", result["seconds"],
             "" if verdict.ok else ": " + "; ".join(verdict.reasons))
    return result
