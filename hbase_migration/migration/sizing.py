"""Sizing a migration before it starts: what each table holds, how long its copy will take, and whether the
oldWALs the disabled peer pins meanwhile fit under the quota and in HDFS's free space. Pure; the figures are
gathered by `sizing_probe.py`.

Per table, from the source region servers' `sub=Regions` metrics (`region_metrics.py`): regions, store file
bytes (as stored: compressed, one copy), memstore bytes, store files, read/write requests. One region (the
smallest that holds data: the sample is bounded, and a table's regions are alike once its split policy has
run) is copied whole into a scratch table on the target, timed. From it:

- rows: the sample's rows per byte of region data (store files + memstore, as HBase sizes the region) times the
  table's data bytes. Exact for the sampled region, an estimate for the rest (as good as the regions are alike);
- copy work: the sample's seconds per byte of region data times the table's data bytes (one task's work); with
  a `rows_per_s` throttle, at least rows / rows_per_s;
- the longest partition: the biggest region at that pace (the run cannot end before it).

The run's copy time: the work of every table spread over `copy_tasks` partitions at once (Spark cores given to
the copies, or the CLI's `--workers`), and never shorter than the longest partition:
`max(sum(work) / copy_tasks, max(longest))`. A small sample over-weighs the fixed cost of opening a scan, so
the projection errs long, the safe side for the quota.

The peer pins `growth x copy time` bytes of oldWALs (the growth sampled during the dry run, raw bytes, as a
space quota and `CapacityRemaining` count them), times `safety_factor`. That must fit:
- under each space quota over oldWALs (oldWALs or an ancestor): `quota_mark x limit - used`, and under each
  namespace quota, with the growth of oldWALs' file count;
- in HDFS's free space (the namenode's `CapacityRemaining`): without a quota it is the only limit.
With quota policy `enable_peer` the copy's watchdog enables the peer when a quota reaches its mark, so a quota
that would overflow is a warning, not a refusal (and free space only has to hold what fits under that quota).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from hbase_migration.clusters.hdfs import HdfsCapacity, QuotaUsage
from hbase_migration.data.progress import human_bytes, human_duration


@dataclass(frozen=True)
class SampleCopy:
    """The timed copy of one region into the scratch table."""

    region: str  # encoded name
    region_bytes: int  # the region's store files + memstore, as its server reported them
    rows: int
    cells: int
    bytes: int  # logical bytes copied (keys, qualifiers, values)
    elapsed_s: float
    complete: bool  # False: stopped at the sample timeout
    approximate: bool = False  # True: the region's own size was unknown, the table's mean region size was used

    def to_dict(self) -> dict[str, Any]:
        return {"region": self.region, "region_bytes": self.region_bytes, "rows": self.rows, "cells": self.cells,
                "bytes": self.bytes, "elapsed_s": self.elapsed_s, "complete": self.complete,
                "approximate": self.approximate}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SampleCopy":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class TableSizing:
    """One table's figures as HBase reports them, and its sample copy."""

    table: str
    regions: int  # what the copy partitions over (the data path's region list)
    regions_reported: int  # regions the region servers' metrics showed
    store_file_bytes: int
    memstore_bytes: int
    store_files: int
    read_requests: int
    write_requests: int
    biggest_region_bytes: int
    sample: SampleCopy | None = None
    error: str | None = None  # why the table has no sample (the projection leaves it out, and says so)

    @property
    def data_bytes(self) -> int:
        return self.store_file_bytes + self.memstore_bytes

    @property
    def est_rows(self) -> int | None:
        return estimate_rows(self.data_bytes, self.sample)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "regions": self.regions, "regions_reported": self.regions_reported,
                "store_file_bytes": self.store_file_bytes, "memstore_bytes": self.memstore_bytes,
                "store_files": self.store_files, "read_requests": self.read_requests,
                "write_requests": self.write_requests, "biggest_region_bytes": self.biggest_region_bytes,
                "est_rows": self.est_rows, "sample": self.sample.to_dict() if self.sample else None,
                "error": self.error}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TableSizing":
        values = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "sample"}
        return cls(**values, sample=SampleCopy.from_dict(d["sample"]) if d.get("sample") else None)


def estimate_rows(data_bytes: int, sample: SampleCopy | None) -> int | None:
    """Rows of a table holding `data_bytes`, at the sample's rows per byte; 0 for no data; None without a whole
    sample to scale."""
    if data_bytes == 0:
        return 0
    if sample is None or not sample.complete or sample.region_bytes <= 0:
        return None
    return round(data_bytes * sample.rows / sample.region_bytes)


@dataclass(frozen=True)
class TableWork:
    work_s: float  # one task's seconds to copy the whole table
    longest_s: float  # its biggest partition alone


def table_work(t: TableSizing, rows_per_s: float = 0.0) -> TableWork | None:
    """One task's seconds for the table and for its biggest region, at the sample's pace (and under the
    `rows_per_s` throttle); None when the table has data but no whole sample."""
    if t.data_bytes == 0:
        return TableWork(0.0, 0.0)
    s = t.sample
    if s is None or not s.complete or s.region_bytes <= 0 or s.elapsed_s <= 0:
        return None
    per_byte_s = s.elapsed_s / s.region_bytes
    work, longest = t.data_bytes * per_byte_s, t.biggest_region_bytes * per_byte_s
    if rows_per_s and rows_per_s > 0:
        rows_per_byte = s.rows / s.region_bytes
        work = max(work, t.data_bytes * rows_per_byte / rows_per_s)
        longest = max(longest, t.biggest_region_bytes * rows_per_byte / rows_per_s)
    return TableWork(work, longest)


@dataclass(frozen=True)
class Limit:
    """One thing the pinned oldWALs must fit in."""

    kind: str  # "quota" | "free_space"
    name: str  # e.g. "space quota on /hbase", "HDFS free space"
    unit: str  # "bytes" | "names"
    room: float  # what may still be added (below the quota mark, or free)
    needed: float  # what the copy pins, with the safety factor
    fix: str

    @property
    def exceeded(self) -> bool:
        return self.needed > self.room

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "unit": self.unit, "room": self.room, "needed": self.needed,
                "exceeded": self.exceeded, "fix": self.fix}


@dataclass(frozen=True)
class Projection:
    copy_s: float | None  # None: no table could be projected
    per_table: Mapping[str, TableWork]
    unprojected: Mapping[str, str]  # table -> why
    copy_tasks: int
    growth_bytes_per_s: float | None
    growth_files_per_s: float | None
    pinned_bytes: float | None  # growth x copy time
    safety_factor: float
    limits: tuple[Limit, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exceeded(self) -> list[Limit]:
        return [limit for limit in self.limits if limit.exceeded]

    def to_dict(self) -> dict[str, Any]:
        return {"copy_s": self.copy_s, "copy_tasks": self.copy_tasks,
                "per_table": {t: {"work_s": w.work_s, "longest_s": w.longest_s} for t, w in self.per_table.items()},
                "unprojected": dict(self.unprojected), "growth_bytes_per_s": self.growth_bytes_per_s,
                "growth_files_per_s": self.growth_files_per_s, "pinned_bytes": self.pinned_bytes,
                "safety_factor": self.safety_factor, "limits": [limit.to_dict() for limit in self.limits],
                "notes": list(self.notes)}


def run_copy_seconds(works: Sequence[TableWork], copy_tasks: int) -> float:
    """The run's copy time: every table's work over `copy_tasks` at once, never shorter than its longest
    partition."""
    if copy_tasks < 1:
        raise ValueError(f"copy_tasks must be >= 1, got {copy_tasks!r}")
    if not works:
        return 0.0
    return max(sum(w.work_s for w in works) / copy_tasks, max(w.longest_s for w in works))


def _fewer_tables(per_table: Mapping[str, TableWork]) -> str:
    biggest = sorted(per_table.items(), key=lambda kv: -kv[1].work_s)[:3]
    return "fewer tables per run (the longest: " + ", ".join(
        f"{t} {human_duration(w.work_s)} of work" for t, w in biggest) + ")"


def project(tables: Sequence[TableSizing], *, copy_tasks: int, rows_per_s: float = 0.0,
            growth_bytes_per_s: float | None, growth_files_per_s: float | None = None,
            usage: QuotaUsage | None = None, capacity: HdfsCapacity | None = None, quota_mark: float = 0.8,
            safety_factor: float = 2.0, quota_policy: str = "fail") -> Projection:
    """The run's projected copy time and the limits the pinned oldWALs must fit in (see the module docstring)."""
    per_table: dict[str, TableWork] = {}
    unprojected: dict[str, str] = {}
    for t in tables:
        work = table_work(t, rows_per_s)
        if work is None:
            unprojected[t.table] = t.error or (
                "the sample copy stopped at the timeout before its region ended" if t.sample else "no sample copy")
        else:
            per_table[t.table] = work
    notes: list[str] = []
    if not per_table:
        return Projection(None, per_table, unprojected, copy_tasks, growth_bytes_per_s, growth_files_per_s, None,
                          safety_factor, (), ("no table could be projected",))
    copy_s = run_copy_seconds(list(per_table.values()), copy_tasks)
    if growth_bytes_per_s is None:
        return Projection(copy_s, per_table, unprojected, copy_tasks, None, growth_files_per_s, None, safety_factor,
                          (), ("oldWALs growth not measured (no webhdfs_url, or WebHDFS unreadable): the limits are "
                               "not checked",))
    pinned = growth_bytes_per_s * copy_s
    needed = pinned * safety_factor
    needed_files = (growth_files_per_s or 0.0) * copy_s * safety_factor
    faster = (f"a faster copy (more partitions at once than copy_tasks={copy_tasks}: Spark cores for the copy "
              "jobs or the CLI's --workers; a higher rows_per_s)")
    fewer = _fewer_tables(per_table)
    limits: list[Limit] = []
    quota_rooms: list[float] = []
    for c in (usage.constraints if usage is not None else ()):
        room = quota_mark * c.limit - c.used
        if c.unit == "bytes":
            quota_rooms.append(room)
            minimum = math.ceil((c.used + needed) / quota_mark)
            fix = (f"more quota: at least {minimum} bytes ({human_bytes(minimum)}) on {c.path} (`hdfs dfsadmin "
                   f"-setSpaceQuota {minimum} {c.path}`); or {faster}; or quota_policy enable_peer (the watchdog "
                   f"enables the peer when the quota reaches {quota_mark:.0%}); or {fewer}")
            limits.append(Limit("quota", f"{c.kind} quota on {c.path}", "bytes", room, needed, fix))
        else:
            minimum = math.ceil((c.used + needed_files) / quota_mark)
            fix = (f"a namespace quota of at least {minimum} names on {c.path} (`hdfs dfsadmin -setQuota {minimum} "
                   f"{c.path}`); or {faster}; or quota_policy enable_peer; or {fewer}")
            limits.append(Limit("quota", f"namespace quota on {c.path}", "names", room, needed_files, fix))
    if capacity is not None:
        free_needed = needed
        if quota_policy == "enable_peer" and quota_rooms:
            free_needed = min(needed, max(0.0, min(quota_rooms)))  # the watchdog stops the pinning at the mark
            notes.append("quota policy enable_peer: HDFS free space has to hold what fits under the quota mark")
        fix = (f"free HDFS space: at least {human_bytes(free_needed)} more than the {human_bytes(capacity.remaining)} "
               f"remaining (add datanodes, delete data); or {faster}; or {fewer}"
               + ("" if quota_rooms else "; or a space quota on the oldWALs directory with quota_policy enable_peer "
                                         "(the watchdog then enables the peer before HDFS fills)"))
        limits.append(Limit("free_space", "HDFS free space (the namenode's CapacityRemaining)", "bytes",
                            float(capacity.remaining), free_needed, fix))
    else:
        notes.append("HDFS free space not read (namenode /jmx unreadable): only quotas are checked")
    return Projection(copy_s, per_table, unprojected, copy_tasks, growth_bytes_per_s, growth_files_per_s, pinned,
                      safety_factor, tuple(limits), tuple(notes))


@dataclass(frozen=True)
class Verdict:
    ok: bool  # False: refuse the run
    severity: str  # "error" | "warning" | "ok"
    reason: str
    fix: str | None = None


def verdict(p: Projection, quota_policy: str = "fail") -> Verdict:
    """What preflight says about a projection: a refusal names the figures and the fix."""
    if p.copy_s is None:
        return Verdict(True, "warning", "not projected: " + "; ".join(f"{t}: {why}" for t, why in p.unprojected.items())
                       + (f"; {'; '.join(p.notes)}" if p.notes else ""),
                       "raise sample_timeout_s, or check the errors named (expected_copy_s is used meanwhile)")
    head = (f"projected copy {human_duration(p.copy_s)} ({p.copy_s:.0f}s, {p.copy_tasks} partitions at once)"
            + (f", oldWALs growth {human_bytes(p.growth_bytes_per_s)}/s pins {human_bytes(p.pinned_bytes)} "
               f"(x{p.safety_factor:g} = {human_bytes(p.pinned_bytes * p.safety_factor)})"
               if p.pinned_bytes is not None else ""))
    refusals, warnings, fixes = [], [], []
    for limit in p.exceeded:
        shown = (f"{limit.name}: needs {human_bytes(limit.needed)}, room {human_bytes(max(limit.room, 0))}"
                 if limit.unit == "bytes" else
                 f"{limit.name}: needs {limit.needed:.0f} names, room {max(limit.room, 0):.0f}")
        if limit.kind == "quota" and quota_policy == "enable_peer":
            warnings.append(f"{shown} (quota_policy enable_peer: the watchdog enables the peer early at the mark)")
        else:
            refusals.append(shown)
            fixes.append(limit.fix)
    unprojected = [f"{t} not projected: {why}" for t, why in p.unprojected.items()]
    if refusals:
        return Verdict(False, "error", f"{head}; does not fit: " + "; ".join(refusals + warnings + unprojected),
                       " | ".join(fixes))
    if warnings or unprojected or p.pinned_bytes is None:
        return Verdict(True, "warning", "; ".join([head, *warnings, *unprojected, *p.notes]),
                       "raise sample_timeout_s for the tables not projected" if unprojected else None)
    fits = "; ".join(f"{limit.name}: room {human_bytes(limit.room) if limit.unit == 'bytes' else round(limit.room)}"
                     for limit in p.limits)
    return Verdict(True, "ok", f"{head}; fits: {fits or 'no limit known'}" + (f"; {'; '.join(p.notes)}"
                                                                             if p.notes else ""))


def text(tables: Sequence[TableSizing], p: Projection) -> str:
    """The sizing as the CLI and the task log print it: one line per table, then the projection."""
    lines = ["sizing: table, regions, store files (bytes), memstore, est. rows, sample, work"]
    for t in tables:
        s = t.sample
        sample = (f"{s.rows} rows/{human_bytes(s.region_bytes)} in {s.elapsed_s:.1f}s"
                  + ("" if s.complete else " (stopped)") + (" (approx.)" if s.approximate else "")) if s else "-"
        work = p.per_table.get(t.table)
        lines.append(f"  {t.table}: {t.regions} regions, {t.store_files} files {human_bytes(t.store_file_bytes)}, "
                     f"memstore {human_bytes(t.memstore_bytes)}, ~{t.est_rows if t.est_rows is not None else '?'} "
                     f"rows, sample {sample}, work {human_duration(work.work_s) if work else '?'}"
                     + (f" [{t.error}]" if t.error else ""))
    lines.append(f"  copy: {human_duration(p.copy_s)} with {p.copy_tasks} partitions at once; oldWALs growth "
                 + (f"{human_bytes(p.growth_bytes_per_s)}/s, pinned {human_bytes(p.pinned_bytes)}"
                    if p.pinned_bytes is not None else "unknown"))
    for limit in p.limits:
        value = (lambda v: human_bytes(v)) if limit.unit == "bytes" else (lambda v: f"{v:.0f} names")
        lines.append(f"  {limit.name}: room {value(max(limit.room, 0))}, needs {value(limit.needed)}"
                     + (" EXCEEDED" if limit.exceeded else ""))
    return "\n".join(lines)
