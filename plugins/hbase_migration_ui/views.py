"""What the dashboard shows, computed from the ledger's dicts: pure functions, no I/O, no HTML.

The templates only lay these out; every judgement (a verdict, a warning, a colour) is made here, where unit
tests pin it down exactly. Levels are 'ok', 'warn', 'bad' and 'none' (nothing to judge yet).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote

from hbase_migration.ledger.store import ALL_TABLES, NO_PEER, PHASES

from . import charts, formatting
from .live import LivePeer

# Colours draw the eye; the oldWALs watchdog acts on its own policy. A quota this full is close to the point
# where HDFS refuses WAL blocks (DSQuotaExceededException) and region servers abort.
QUOTA_BAD_FRACTION = 0.9
QUOTA_WARN_FRACTION = 0.75
QUOTA_WARN_HORIZON_MS = 6 * 3600 * 1000  # an exhaustion projected this soon is worth a look now


def run_href(run_id: str) -> str:
    """The run page's address relative to the dashboard root; `/` in a run id stays one path segment."""
    return "runs/" + quote(run_id, safe="")


def table_label(table: str) -> str:
    return "all tables" if table == ALL_TABLES else table


def differing(entry: Mapping[str, Any]) -> int:
    return entry["content_different"] + entry["only_in_source"] + entry["only_in_target"]


# ---------------------------------------------------------------------------------------------------------
# Verdicts and the peer

@dataclass(frozen=True)
class Verdict:
    level: str
    label: str


def verdict(run: Mapping[str, Any], verification: Mapping[str, list[Mapping[str, Any]]]) -> Verdict:
    """A run's verification verdict: every window of every table clean, and every planned table verified."""
    rows = sum(differing(e) for entries in verification.values() for e in entries)
    if rows:
        tables = sum(1 for entries in verification.values() if any(differing(e) for e in entries))
        return Verdict("bad", f"{rows:,} rows differ in {tables} table{'s' if tables != 1 else ''}")
    if not verification:
        return Verdict("none", "not verified")
    planned = list(run["tables"])
    verified = [t for t in planned if t in verification]
    if len(verified) < len(planned):
        return Verdict("warn", f"{len(verified)} of {len(planned)} tables verified, clean so far")
    return Verdict("ok", "clean")


@dataclass(frozen=True)
class PeerAlert:
    level: str
    title: str
    lines: tuple[str, ...]


def peer_alert(run: Mapping[str, Any], state: str | None, reason: str | None,
               live: LivePeer | None = None) -> PeerAlert | None:
    """What an operator must know about the run's peer, or None when its state needs no action.

    A peer left DISABLED after its run ended pins every WAL written since T0 (the log cleaner keeps any WAL a
    queue still references: HBase's `ReplicationLogCleaner`) until someone enables or removes it: that is the one
    alarm here. The state is the cluster's when `live` could read it (a peer removed since is no alarm), else
    the ledger's last note `state`, and the alarm then says the cluster could not be read.
    """
    stale = None
    if live is not None and live.readable:
        state = live.state
    elif live is not None:
        stale = (f"The source cluster could not be read ({live.error}): this is the ledger's last note about the "
                 "peer, which may be out of date.")
    if state != "DISABLED":
        return None
    peer = run["peer_id"]
    t0 = formatting.instant(run["t0_ms"])
    if run["status"] == "running":
        return PeerAlert("warn", f"Peer {peer} is DISABLED while the run copies, as planned", tuple(filter(None, (
            f"Every WAL written since T0 ({t0}) is kept in oldWALs until enable_peer ships the backlog; "
            "watch the quota samples.", stale,
        ))))
    ended = "a failed run" if run["status"] == "failed" else "its run"
    return PeerAlert("bad", f"Peer {peer} was left DISABLED by {ended}", tuple(filter(None, (
        f"Reason noted: {reason or 'none recorded'}",
        f"A disabled peer keeps every WAL written since T0 ({t0}) in oldWALs, counted against the HDFS quota "
        "of the HBase root directory, until the peer ships them or is removed. It grows without bound.",
        "To finish the migration: fix the cause, then clear the failed tasks of this DAG run. add_peer finds "
        "its own peer, the copy resumes from the ledger, and enable_peer ships the backlog.",
        f"To abandon it: run remove_peer '{peer}' in the source cluster's hbase shell. The log cleaner then "
        "frees oldWALs; a later attempt starts from a new T0 with a full copy.",
        stale,
    ))))


@dataclass(frozen=True)
class PeerShown:
    """The peer's state as a page shows it, and where it comes from."""

    state: str | None  # ENABLED, DISABLED, ABSENT (cluster), or the ledger's note; None: nothing known
    text: str
    from_cluster: bool
    level: str


def peer_shown(run: Mapping[str, Any], ledger_state: str | None, live: LivePeer | None,
               reading: bool = True) -> PeerShown:
    """"DISABLED (read from the cluster at ...)", "not on the cluster", or the ledger's note saying why the
    cluster was not read. `reading`: whether the dashboard reads clusters at all."""
    if run["peer_id"] == NO_PEER:
        return PeerShown(None, "no peer (this run touches none)", False, "none")
    noted = ledger_state or MISSING_NOTE
    if live is not None and live.readable:
        at = formatting.instant(live.read_ms)
        if live.state == "ABSENT":
            return PeerShown("ABSENT", f"not on the cluster (removed, or never added); read from the cluster at "
                                       f"{at}", True, "none")
        level = "bad" if live.state == "DISABLED" and run["status"] != "running" else "none"
        return PeerShown(live.state, f"{live.state} (read from the cluster at {at})", True, level)
    if live is not None:
        return PeerShown(ledger_state, f"cluster unreachable ({live.error}); the ledger's last note: {noted}",
                         False, "warn")
    why = "the cluster is not read" if not reading else "not read"
    return PeerShown(ledger_state, f"{noted} (from the ledger; {why})", False, "none")


MISSING_NOTE = "no note"


# ---------------------------------------------------------------------------------------------------------
# The list of runs

@dataclass(frozen=True)
class RunRow:
    run: Mapping[str, Any]
    href: str
    peer_state: str | None
    rows_copied: int
    verdict: Verdict
    alert: PeerAlert | None
    peer: PeerShown | None = None
    duration_ms: int | None = None  # ended - started, or so far while running


def run_row(item: Mapping[str, Any], summary: Mapping[str, Any], live: LivePeer | None = None,
            reading: bool = False, now_ms: int | None = None) -> RunRow:
    """One line of the run list from a `recent_runs()` entry, that run's `run_summary()` and the peer's state
    read from its cluster (`live`, when the dashboard reads clusters)."""
    shown = peer_shown(item, item["peer_state"], live, reading)
    return RunRow(
        run=item,
        href=run_href(item["run_id"]),
        peer_state=shown.state if shown.from_cluster else item["peer_state"],
        rows_copied=summary["copy"]["total"]["rows"],
        verdict=verdict(item, summary["verification"]),
        alert=peer_alert(item, item["peer_state"], item["peer_reason"], live),
        peer=shown,
        duration_ms=run_duration(item, now_ms),
    )


def run_duration(run: Mapping[str, Any], now_ms: int | None) -> int | None:
    """A finished run's duration; a running one's so far."""
    if run.get("duration_ms") is not None:
        return run["duration_ms"]
    if run.get("status") == "running" and now_ms is not None and run.get("started_ms") is not None:
        return max(0, now_ms - run["started_ms"])
    return None


# ---------------------------------------------------------------------------------------------------------
# Links into the Airflow UI (its React routes: /dags/<dag>/runs/<run>[/tasks/<task>[/mapped/<index>]])

PHASE_TASKS = {"preflight": "preflight", "create_tables": "create_target_tables", "add_peer": "add_peer",
               "copy": "copy", "enable_peer": "enable_peer", "catch_up": "wait_drained", "metadata": "metadata",
               "verify": "verify", "report": "report"}
MAPPED_PHASES = frozenset({"copy", "verify"})  # one task per table, in the run's table order (before batches)
BATCH_PHASES = frozenset({"add_peer", "copy", "enable_peer", "catch_up", "metadata", "verify"})  # a batch group's tasks


def dag_run_id(run: Mapping[str, Any]) -> str:
    """The Airflow run id behind a ledger run (a watch run is '<dag run id>:<connection id>')."""
    return run["run_id"].rsplit(":", 1)[0] if run.get("plan") == "watch" else run["run_id"]


def dag_run_href(ui_base: str, run: Mapping[str, Any]) -> str:
    return f"{ui_base}/dags/{quote(run['dag_id'], safe='')}/runs/{quote(dag_run_id(run), safe='')}"


def task_href(ui_base: str, run: Mapping[str, Any], table: str, phase: str,
              batches: Iterable[Mapping[str, Any]] = ()) -> str | None:
    """The task instance (its logs) that recorded `phase` for `table`, or None when no task maps to it. A run in
    batches (issue 42) ran a batch's steps in the mapped `batch` group, at the batch's index."""
    task = PHASE_TASKS.get(phase)
    if task is None:
        return None
    batches = list(batches)
    if batches and phase in BATCH_PHASES:
        index = next((b["index"] for b in batches if table in b["tables"]), None)
        if index is None:
            return None
        return f"{dag_run_href(ui_base, run)}/tasks/{quote('batch.' + task, safe='')}/mapped/{index}"
    href = f"{dag_run_href(ui_base, run)}/tasks/{quote(task, safe='')}"
    if phase in MAPPED_PHASES:
        if table not in run["tables"]:
            return None
        href += f"/mapped/{run['tables'].index(table)}"
    return href


# ---------------------------------------------------------------------------------------------------------
# The run page

BATCH_STEPS = ("copy", "catch_up", "verify")


@dataclass(frozen=True)
class BatchRow:
    name: str
    peer_id: str
    peer_state: str | None  # the latest the ledger noted for its peer
    tables: int
    bytes: int
    t0_ms: int | None
    copying: bool  # holds one of the run's slots: its peer added, its copies running
    steps: list[tuple[str, str]]  # (step, status rolled up over its tables: failed > running > success)
    failed_tables: list[str]

    @property
    def level(self) -> str:
        if self.failed_tables:
            return "bad"
        return "ok" if all(status == "success" for _, status in self.steps) else "warn"


def _rolled_up(statuses: list[str | None]) -> str:
    for status in ("failed", "running"):
        if status in statuses:
            return status
    if statuses and all(s == "success" for s in statuses):
        return "success"
    return "pending" if not any(statuses) else "partly"


def batch_rows(batches: Iterable[Mapping[str, Any]], phases: Mapping[str, Mapping[str, Any]]) -> list[BatchRow]:
    """One line per batch: its peer and that peer's state, its tables, its T0, whether it copies now, and its
    steps rolled up over its tables (a run of one batch records its catch-up once for the run)."""
    out = []
    for b in batches:
        steps, failed = [], set()
        for step in BATCH_STEPS:
            statuses = [((phases.get(t) or phases.get(ALL_TABLES) if step == "catch_up" else phases.get(t)) or {})
                        .get(step, {}).get("status") for t in b["tables"]]
            failed |= {t for t, st in zip(b["tables"], statuses) if st == "failed"}
            steps.append((step, _rolled_up(statuses)))
        out.append(BatchRow(b["batch"], b["peer_id"], b.get("peer_state"), len(b["tables"]), b.get("bytes") or 0,
                            b.get("t0_ms"), b.get("slot") is not None, steps, sorted(failed)))
    return out


@dataclass(frozen=True)
class PhaseCell:
    status: str
    started_ms: int | None
    ended_ms: int | None
    duration_ms: int | None  # so far, while it runs
    detail: str | None
    href: str | None = None  # its task instance in the Airflow UI

    @property
    def level(self) -> str:
        return {"success": "ok", "failed": "bad", "running": "warn"}.get(self.status, "none")


@dataclass(frozen=True)
class PhaseGrid:
    columns: list[str]  # the phases recorded for any table, in migration order
    rows: list[tuple[str, list[PhaseCell | None]]]  # (table label, one cell per column)
    failures: list[tuple[str, str, str]]  # (table label, phase, detail) of every failed phase


def phase_grid(phases: Mapping[str, Mapping[str, Mapping[str, Any]]],
               href: Callable[[str, str], str | None] | None = None, now_ms: int | None = None) -> PhaseGrid:
    """Tables down (in the ledger's plan order), phases across; failed phases' details listed apart.
    `href(table, phase)` links a cell to its task; a running phase's duration is the time so far."""
    seen = {phase for by_phase in phases.values() for phase in by_phase}
    columns = [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))
    rows, failures = [], []
    for table, by_phase in phases.items():
        cells: list[PhaseCell | None] = []
        for phase in columns:
            entry = by_phase.get(phase)
            cell = None
            if entry is not None:
                duration = entry["duration_ms"]
                if duration is None and entry["status"] == "running" and entry["started_ms"] is not None \
                        and now_ms is not None:
                    duration = max(0, now_ms - entry["started_ms"])
                cell = PhaseCell(entry["status"], entry["started_ms"], entry["ended_ms"], duration,
                                 entry["detail"], href(table, phase) if href else None)
            cells.append(cell)
            if cell is not None and cell.status == "failed":
                failures.append((table_label(table), phase, cell.detail or "no detail recorded"))
        rows.append((table_label(table), cells))
    return PhaseGrid(columns, rows, failures)


@dataclass(frozen=True)
class CopyRow:
    table: str
    partitions: int
    rows: int
    cells: int
    bytes: int
    duration_ms: int | None
    rows_per_s: float | None
    planned: int | None = None  # partitions in the copy's plan (None: not recorded, an older copy)
    eta_ms: int | None = None  # time left at the pace so far, while the copy runs
    running: bool = False

    @property
    def done_text(self) -> str:
        if self.planned is None:
            return f"{self.partitions:,}" if self.partitions or self.duration_ms is not None else "not started"
        return f"{self.partitions:,} of {self.planned:,}"

    @property
    def percent(self) -> float | None:
        return None if not self.planned else min(100.0, 100 * self.partitions / self.planned)


def copy_rows(copy: Mapping[str, Any], progress: Mapping[str, Any] | None = None,
              phases: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None, now_ms: int | None = None,
              tables: Iterable[str] = ()) -> list[CopyRow]:
    """Per-table copy figures: partitions done (of the planned total), rows, rate and, while the copy runs,
    its ETA. The copy's start is its first partition's start, else its planning instant (the ledger's copy
    plan), else the copy phase's start; its end is the last finished partition, or now while it runs."""
    plans = (progress or {}).get("plans", {})
    started = set(copy["tables"]) | set(plans)
    if not started:
        return []  # nothing copied or planned yet: the page says so
    order = list(tables) + sorted(started - set(tables))
    out = []
    for table in order:
        t = copy["tables"].get(table)
        plan = plans.get(table)
        phase = ((phases or {}).get(table) or {}).get("copy") or {}
        t = t or {"partitions": 0, "rows": 0, "cells": 0, "bytes": 0, "started_ms": None, "finished_ms": None}
        planned = plan["partitions"] if plan else None
        running = phase.get("status") == "running" and (planned is None or t["partitions"] < planned)
        start = next((v for v in (t["started_ms"], plan and plan["planned_ms"], phase.get("started_ms"))
                      if v is not None), None)
        end = now_ms if running and now_ms is not None else t["finished_ms"]
        span = None if start is None or end is None or end < start else end - start
        rate = t["rows"] * 1000 / span if span else None
        eta = None
        if running and span and planned and 0 < t["partitions"] < planned:
            eta = round(span * (planned - t["partitions"]) / t["partitions"])
        out.append(CopyRow(table, t["partitions"], t["rows"], t["cells"], t["bytes"], span, rate, planned, eta,
                           running))
    return out


def copy_chart(rows: list[CopyRow], progress: Mapping[str, Any], now_ms: int) -> charts.Chart:
    """Partitions finished over time, per table: in percent of the plan when every table has one, else as
    counts. A running copy's line is drawn up to now."""
    plans = progress.get("plans", {})
    percent = bool(rows) and all(r.planned for r in rows)
    finished: dict[str, list[int]] = {}
    for p in progress.get("partitions", []):
        finished.setdefault(p["table_name"], []).append(p["finished_ms"])
    series = []
    for r in rows:
        times = sorted(finished.get(r.table, []))
        plan = plans.get(r.table)
        start = plan["planned_ms"] if plan else (times[0] if times else None)
        if start is None:
            continue
        scale = 100 / r.planned if percent and r.planned else 1
        points = [(start, 0.0)] + [(at, (i + 1) * scale) for i, at in enumerate(times)]
        if r.running:
            points.append((max(now_ms, points[-1][0]), points[-1][1]))
        series.append(charts.Series(r.table, charts.downsample(points, 600), step=True))
    fmt = (lambda v: f"{v:.0f}%") if percent else charts.count_format
    rules = (charts.Rule(100.0, "planned total", "#1a7f37"),) if percent else ()
    return charts.Chart("Copy: partitions done" + (" (% of plan)" if percent else ""), tuple(series), fmt,
                        rules=rules, y_max=100.0 if percent else None, css_class="chart copy-chart",
                        empty_text="No partition planned yet.", integer=not percent, min_top=1)


@dataclass(frozen=True)
class RunInstants:
    t0_ms: int | None
    enabled_ms: int | None  # the peer enabled (enable_peer, or the quota policy's early enable)
    drained_ms: int | None  # the catch-up succeeded


def run_instants(run: Mapping[str, Any], phases: Mapping[str, Mapping[str, Mapping[str, Any]]],
                 notes: Iterable[Mapping[str, Any]]) -> RunInstants:
    run_wide = phases.get(ALL_TABLES, {})
    enable = run_wide.get("enable_peer") or {}
    candidates = [enable["ended_ms"]] if enable.get("status") == "success" and enable.get("ended_ms") else []
    t0 = run["t0_ms"]
    candidates += [n["noted_ms"] for n in notes if n["state"] == "ENABLED" and (t0 is None or n["noted_ms"] >= t0)]
    catch_up = run_wide.get("catch_up") or {}
    drained = catch_up["ended_ms"] if catch_up.get("status") == "success" else None
    return RunInstants(t0, min(candidates) if candidates else None, drained)


def _server_labels(servers: Iterable[str]) -> dict[str, str]:
    """'host,port,startcode' -> 'host:port' when that stays unique (a restarted server keeps its full name)."""
    servers = sorted(set(servers))
    short = {s: ":".join(s.split(",")[:2]) for s in servers}
    counts: dict[str, int] = {}
    for v in short.values():
        counts[v] = counts.get(v, 0) + 1
    return {s: (v if counts[v] == 1 else s) for s, v in short.items()}


def lag_charts(series: Iterable[Mapping[str, Any]], instants: RunInstants, run_status: str,
               now_ms: int) -> tuple[charts.Chart, charts.Chart]:
    """sizeOfLogQueue and ageOfLastShippedOp over time, one line per region server (its queues of the run's
    peer folded: sizes summed, the worst age), with T0, enable_peer and the drain marked and the disabled
    phase shaded: its queues only grow until the peer is enabled."""
    rows = list(series)
    labels = _server_labels(r["server"] for r in rows)
    sizes: dict[str, list[tuple[int, float]]] = {}
    ages: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        sizes.setdefault(r["server"], []).append((r["sampled_ms"], float(r["size_of_log_queue"])))
        ages.setdefault(r["server"], []).append((r["sampled_ms"], float(r["age_of_last_shipped_op_ms"])))
    markers = tuple(charts.Marker(at, label) for at, label in ((instants.t0_ms, "T0: peer added"),
                                                               (instants.enabled_ms, "peer enabled"),
                                                               (instants.drained_ms, "drained"))
                    if at is not None)
    bands: tuple[charts.Band, ...] = ()
    if instants.t0_ms is not None:
        last = max([r["sampled_ms"] for r in rows], default=instants.t0_ms)
        end = instants.enabled_ms or (max(now_ms, last) if run_status == "running" else last)
        bands = (charts.Band(instants.t0_ms, end, "peer DISABLED: WALs kept"),)

    def chart(title: str, data: dict[str, list[tuple[int, float]]], fmt: Any, css: str, **scale: Any) -> charts.Chart:
        return charts.Chart(title, tuple(charts.Series(labels[s], charts.downsample(points, 600))
                                         for s, points in sorted(data.items())), fmt, markers=markers,
                            bands=bands, css_class=f"chart lag-chart {css}", **scale)

    return (chart("sizeOfLogQueue (WALs queued) per region server", sizes, charts.count_format, "lag-size",
                  integer=True, min_top=2),
            chart("ageOfLastShippedOp per region server", ages, lambda v: formatting.duration(int(v)), "lag-age",
                  min_top=1000))


def quota_charts(samples: Iterable[Mapping[str, Any]], quota_mark: float | None, now_ms: int) -> list[charts.Chart]:
    """oldWALs usage over time per quota path, against its space quota (and the run's quota mark), with the
    latest growth projected forward to the exhaustion instant (or as far again as the history spans). A quota
    far above the usage stays off the scale, named in a note, so the growth stays visible."""
    by_path: dict[str, list[Mapping[str, Any]]] = {}
    for q in samples:
        by_path.setdefault(q["path"], []).append(q)
    out = []
    for path, rows in sorted(by_path.items()):
        rows.sort(key=lambda q: q["sampled_ms"])
        points = tuple((q["sampled_ms"], float(q["space_consumed"])) for q in rows)
        last = rows[-1]
        series = [charts.Series("space used", charts.downsample(points, 600))]
        growth, quota = last["growth_bytes_per_s"], last["space_quota"]
        span = max(points[-1][0] - points[0][0], 60_000)
        if growth and growth > 0:
            until = last["projected_exhaustion_ms"] or points[-1][0] + span
            until = min(until, points[-1][0] + span)
            value = points[-1][1] + growth * (until - points[-1][0]) / 1000
            if quota:
                value = min(value, float(quota))
            series.append(charts.Series("projection", ((points[-1][0], points[-1][1]), (until, value)),
                                        dashed=True, color="#8250df"))
        top = max(v for s in series for _, v in s.points)
        rules: list[charts.Rule] = []
        note = None
        if quota:
            used = points[-1][1] / quota
            if quota <= 4 * max(top, 1.0):
                rules.append(charts.Rule(float(quota), f"quota {formatting.size(quota)}"))
                if quota_mark:
                    rules.append(charts.Rule(quota * quota_mark, f"quota mark {quota_mark:.0%}", "#bf8700"))
            else:
                note = f"quota {formatting.size(quota)}: {used:.2%} used (off this scale)"
            if last["projected_exhaustion_ms"]:
                when = formatting.relative(last["projected_exhaustion_ms"], now_ms)
                note = (note + "; " if note else "") + f"exhausted {when} at this growth"
        else:
            note = "no space quota on this path"
        out.append(charts.Chart(f"oldWALs: space used under {path}", tuple(series), lambda v: formatting.size(int(v)),
                                rules=tuple(rules), css_class="chart quota-chart", note=note, binary=True))
    return out


@dataclass(frozen=True)
class LagPoint:
    sampled_ms: int
    queues: int
    recovered: int
    total_size_of_log_queue: int
    max_age_of_last_shipped_op_ms: int


def lag_history(rows: Iterable[Mapping[str, Any]]) -> list[LagPoint]:
    """`latest_samples()["lag"]` rows (one per queue) folded into one point per sample, newest first."""
    points: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        points.setdefault(row["sampled_ms"], []).append(row)
    return [
        LagPoint(
            sampled_ms=at,
            queues=len(queues),
            recovered=sum(1 for q in queues if q["recovered"]),
            total_size_of_log_queue=sum(q["size_of_log_queue"] for q in queues),
            max_age_of_last_shipped_op_ms=max(q["age_of_last_shipped_op_ms"] for q in queues),
        )
        for at, queues in sorted(points.items(), reverse=True)
    ]


@dataclass(frozen=True)
class QuotaRow:
    path: str
    sampled_ms: int
    space_consumed: int
    space_quota: int | None
    ns_consumed: int
    ns_quota: int | None
    growth_bytes_per_s: float | None
    projected_exhaustion_ms: int | None
    level: str


def quota_row(sample: Mapping[str, Any], now_ms: int) -> QuotaRow:
    """One quota sample with its level: the fuller of the space and name quotas decides."""
    fractions = [sample[used] / sample[quota] for used, quota in
                 (("space_consumed", "space_quota"), ("ns_consumed", "ns_quota")) if sample[quota]]
    fullest = max(fractions, default=0.0)
    exhaustion = sample["projected_exhaustion_ms"]
    if fullest >= QUOTA_BAD_FRACTION:
        level = "bad"
    elif fullest >= QUOTA_WARN_FRACTION or (
        exhaustion is not None and exhaustion - now_ms <= QUOTA_WARN_HORIZON_MS
    ):
        level = "warn"
    elif fractions:
        level = "ok"
    else:
        level = "none"  # no quota on this path: nothing to run out of
    return QuotaRow(sample["path"], sample["sampled_ms"], sample["space_consumed"], sample["space_quota"],
                    sample["ns_consumed"], sample["ns_quota"], sample["growth_bytes_per_s"], exhaustion,
                    level)


@dataclass(frozen=True)
class VerificationRow:
    table: str
    entry: Mapping[str, Any] | None  # None: the table has no verification recorded
    differing: int = 0
    sample_keys: list[tuple[str, str]] = field(default_factory=list)  # (hex, as toStringBinary prints it)

    @property
    def level(self) -> str:
        if self.entry is None:
            return "none"
        return "ok" if self.entry["clean"] else "bad"


def verification_rows(run: Mapping[str, Any], verification: Mapping[str, list[Mapping[str, Any]]],
                      ) -> list[VerificationRow]:
    """Every verified window of every table, plan order first; an unverified table gets an empty row."""
    order = list(run["tables"]) + sorted(t for t in verification if t not in run["tables"])
    out = []
    for table in order:
        entries = verification.get(table)
        if not entries:
            out.append(VerificationRow(table, None))
            continue
        for e in entries:
            keys = [(k, formatting.row_key(k)) for k in e["sample_keys"]]
            out.append(VerificationRow(table, e, differing(e), keys))
    return out


@dataclass(frozen=True)
class SizingRow:
    table: str
    regions: int
    store_files: int
    store_file_bytes: int
    memstore_bytes: int
    est_rows: int | None
    sample: str  # "250 rows of 1.0 KiB in 2.0 s", or why there is none
    work_ms: int | None  # one task's copy work for the table; None: not projected


@dataclass(frozen=True)
class SizingLimit:
    name: str
    unit: str
    room: float
    needed: float
    level: str  # 'ok' | 'bad'


@dataclass(frozen=True)
class SizingView:
    sized_ms: int
    level: str  # 'ok' | 'warn' | 'bad'
    verdict: str
    fix: str | None
    copy_ms: int | None
    copy_tasks: int
    growth_bytes_per_s: float | None
    pinned_bytes: float | None
    tables: list[SizingRow]
    limits: list[SizingLimit]
    errors: list[str]


def sizing_view(sizing: Mapping[str, Mapping[str, Any]]) -> SizingView | None:
    """The run's sizing as preflight recorded it (`Ledger.run_sizings`: one entry per table and `ALL_TABLES` for
    the projection); None when the run was not sized."""
    run = sizing.get(ALL_TABLES)
    if run is None:
        return None
    figures = run["figures"]
    projection, verdict_ = figures["projection"], figures["verdict"]
    per_table = projection.get("per_table") or {}
    rows = []
    for table in sorted(t for t in sizing if t != ALL_TABLES):
        t = sizing[table]["figures"]
        s = t.get("sample")
        sample = (f"{s['rows']:,} rows of {formatting.size(s['region_bytes'])} in {s['elapsed_s']:.1f} s"
                  + ("" if s["complete"] else " (stopped at the timeout)")
                  + (" (approx. region size)" if s.get("approximate") else "")) if s else (t.get("error") or "no data")
        work = per_table.get(table)
        rows.append(SizingRow(table, t["regions"], t["store_files"], t["store_file_bytes"], t["memstore_bytes"],
                              t.get("est_rows"), sample, None if work is None else round(work["work_s"] * 1000)))
    level = {"ok": "ok", "warning": "warn", "error": "bad"}[verdict_["severity"]]
    limits = [SizingLimit(limit["name"], limit["unit"], limit["room"], limit["needed"],
                          "bad" if limit["exceeded"] else "ok") for limit in projection.get("limits") or ()]
    copy_s = projection.get("copy_s")
    return SizingView(run["sized_ms"], level, verdict_["reason"], verdict_.get("fix"),
                      None if copy_s is None else round(copy_s * 1000), projection["copy_tasks"],
                      projection.get("growth_bytes_per_s"), projection.get("pinned_bytes"), rows, limits,
                      list(figures.get("errors") or ()))


# ---------------------------------------------------------------------------------------------------------
# The initial copy by snapshot


@dataclass(frozen=True)
class ExportRow:
    """One table's initial copy: its method and, for a snapshot export, where it stands."""

    table: str
    method: str  # scan | snapshot
    reason: str
    snapshot: str | None = None
    state: str | None = None
    level: str = "none"
    files_done: int | None = None
    files_total: int | None = None
    bytes_done: int | None = None
    bytes_total: int | None = None
    bytes_per_s: float | None = None
    eta_ms: int | None = None
    found_in_archive: int | None = None
    left: str | None = None
    running: bool = False

    @property
    def percent(self) -> float | None:
        if self.bytes_total is None or self.bytes_done is None:
            return None
        return 100.0 if not self.bytes_total else min(100.0, 100.0 * self.bytes_done / self.bytes_total)


EXPORT_DONE = ("cloned", "cleaned")


def export_rows(initial: Mapping[str, Any], tables: Iterable[str]) -> list[ExportRow]:
    """Each table's initial copy as preflight decided it (`Ledger.initial_copy_summary`), in the run's table order,
    with the snapshot export's figures (files and bytes done of the totals, rate and ETA while it runs; what it left
    when it stopped). Empty when preflight decided nothing yet."""
    methods, exports = initial.get("methods") or {}, initial.get("exports") or {}
    rows = []
    for table in tables:
        decided = methods.get(table)
        if decided is None:
            continue
        e = exports.get(table)
        if decided["method"] != "snapshot" or e is None:
            rows.append(ExportRow(table, decided["method"], decided["reason"],
                                  state=None if decided["method"] == "scan" else "not started"))
            continue
        state = e["state"]
        files = e.get("files") or {}
        running = state not in EXPORT_DONE and state != "failed"
        level = "ok" if state in EXPORT_DONE else "bad" if state == "failed" else "warn"
        eta = e.get("eta_s")
        rows.append(ExportRow(
            table, "snapshot", decided["reason"], e["snapshot_name"], state, level,
            max(e.get("files_done") or 0, files.get("files") or 0), e.get("files_total"),
            e.get("bytes_done"), e.get("bytes_total"), e.get("bytes_per_s") if running else None,
            None if eta is None or not running else round(eta * 1000), files.get("found_in_archive"),
            (e.get("detail") or {}).get("left") if state == "failed" else None, running))
    return rows
