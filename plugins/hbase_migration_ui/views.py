"""What the dashboard shows, computed from the ledger's dicts: pure functions, no I/O, no HTML.

The templates only lay these out; every judgement (a verdict, a warning, a colour) is made here, where unit
tests pin it down exactly. Levels are 'ok', 'warn', 'bad' and 'none' (nothing to judge yet).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping
from urllib.parse import quote

from hbase_migration.ledger import ALL_TABLES, PHASES

from . import formatting

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


def peer_alert(run: Mapping[str, Any], state: str | None, reason: str | None) -> PeerAlert | None:
    """What an operator must know about the run's peer, or None when its state needs no action.

    A peer left DISABLED after its run ended pins every WAL written since T0 (the log cleaner keeps any WAL a
    queue still references: HBase's `ReplicationLogCleaner`) until someone enables or removes it: that is the one
    alarm here.
    """
    if state != "DISABLED":
        return None
    peer = run["peer_id"]
    t0 = formatting.instant(run["t0_ms"])
    if run["status"] == "running":
        return PeerAlert("warn", f"Peer {peer} is DISABLED while the run copies, as planned", (
            f"Every WAL written since T0 ({t0}) is kept in oldWALs until enable_peer ships the backlog; "
            "watch the quota samples.",
        ))
    ended = "a failed run" if run["status"] == "failed" else "its run"
    return PeerAlert("bad", f"Peer {peer} was left DISABLED by {ended}", (
        f"Reason noted: {reason or 'none recorded'}",
        f"A disabled peer keeps every WAL written since T0 ({t0}) in oldWALs, counted against the HDFS quota "
        "of the HBase root directory, until the peer ships them or is removed. It grows without bound.",
        "To finish the migration: fix the cause, then clear the failed tasks of this DAG run. add_peer finds "
        "its own peer, the copy resumes from the ledger, and enable_peer ships the backlog.",
        f"To abandon it: run remove_peer '{peer}' in the source cluster's hbase shell. The log cleaner then "
        "frees oldWALs; a later attempt starts from a new T0 with a full copy.",
    ))


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


def run_row(item: Mapping[str, Any], summary: Mapping[str, Any]) -> RunRow:
    """One line of the run list from a `recent_runs()` entry and that run's `run_summary()`."""
    return RunRow(
        run=item,
        href=run_href(item["run_id"]),
        peer_state=item["peer_state"],
        rows_copied=summary["copy"]["total"]["rows"],
        verdict=verdict(item, summary["verification"]),
        alert=peer_alert(item, item["peer_state"], item["peer_reason"]),
    )


# ---------------------------------------------------------------------------------------------------------
# The run page

@dataclass(frozen=True)
class PhaseCell:
    status: str
    started_ms: int | None
    ended_ms: int | None
    duration_ms: int | None
    detail: str | None

    @property
    def level(self) -> str:
        return {"success": "ok", "failed": "bad", "running": "warn"}.get(self.status, "none")


@dataclass(frozen=True)
class PhaseGrid:
    columns: list[str]  # the phases recorded for any table, in migration order
    rows: list[tuple[str, list[PhaseCell | None]]]  # (table label, one cell per column)
    failures: list[tuple[str, str, str]]  # (table label, phase, detail) of every failed phase


def phase_grid(phases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> PhaseGrid:
    """Tables down (in the ledger's plan order), phases across; failed phases' details listed apart."""
    seen = {phase for by_phase in phases.values() for phase in by_phase}
    columns = [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))
    rows, failures = [], []
    for table, by_phase in phases.items():
        cells: list[PhaseCell | None] = []
        for phase in columns:
            entry = by_phase.get(phase)
            cell = None if entry is None else PhaseCell(
                entry["status"], entry["started_ms"], entry["ended_ms"], entry["duration_ms"], entry["detail"]
            )
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


def copy_rows(copy: Mapping[str, Any]) -> list[CopyRow]:
    """Per-table copy totals; duration from the first partition's start to the last one's finish."""
    out = []
    for table, t in copy["tables"].items():
        span = None if t["started_ms"] is None else t["finished_ms"] - t["started_ms"]
        out.append(CopyRow(table, t["partitions"], t["rows"], t["cells"], t["bytes"], span,
                           t["rows"] * 1000 / span if span else None))
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
