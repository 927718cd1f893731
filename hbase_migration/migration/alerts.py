"""Alerts that reach a person: which occurrence is worth one message, and its exact text. Pure: no Airflow, no
I/O; the Airflow layer (`operators/alerts.py`) gathers the facts, keeps the ledger's record and delivers.

Four kinds, each ONE message per occurrence:
- `migration_failed`: a migration DAG run (hbase_table_migration, a plan's DAG, hbase_backfill, hbase_cutover,
  hbase_rollback) ended failed. The occurrence is that failure of that DAG run, named by the task instance that
  failed last and its try: retries and mapped tasks do not make a DAG run fail twice, a duplicated callback
  finds its message already claimed, and a run that a person cleared and that fails again is a new occurrence.
- `peer_disabled`, `lag_breach`, `oldwals_quota`: a breach the replication watch sees (every 10 minutes while it
  lasts). The occurrence lasts from the first watch run that sees it to the first run that sees it gone: one
  `raised` message when it starts, one `cleared` message when it ends, nothing in between. A breach the watch
  could not judge (an unreadable quota, no readable region server) neither starts nor ends one.

Each message names the run (DAG run id, and the migration run from the ledger where there is one), the cluster
(connection id and cluster key), what happened with its figures, the state left behind when the toolkit knows it,
and the action to take. It holds no secret: it is made of connection ids, cluster keys, peer and table names,
figures and the ledger's text (which never holds one).
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from hbase_migration.migration.health import LAG_BREACH, OLDWALS_QUOTA, PEER_DISABLED, Finding, PeerHealth

MIGRATION_FAILED = "migration_failed"
KINDS = (MIGRATION_FAILED, PEER_DISABLED, LAG_BREACH, OLDWALS_QUOTA)
WATCH_KINDS = (PEER_DISABLED, LAG_BREACH, OLDWALS_QUOTA)
FAILED, RAISED, CLEARED = "failed", "raised", "cleared"
EVENTS = (FAILED, RAISED, CLEARED)
PREFIX = "[hbase-migration]"
DETAIL_CHARS = 300  # a failed phase's recorded detail (a copy summary, an error) is cut to this in a message
CLI = "python -m hbase_migration"


# ---------------------------------------------------------------------------------------------------------
# Formatting (pure)

def utc(ms: int | float | None) -> str:
    """An epoch-ms instant as ISO 8601 UTC to the second; 'unknown' for None."""
    if ms is None:
        return "unknown"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: float | None) -> str:
    """A duration as a person reads it: 45s, 3m20s, 2h03m, 1d02h."""
    if seconds is None:
        return "unknown"
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def size(value: float | None, unit: str | None = "bytes") -> str:
    """A quota figure: bytes in binary units (2.0 GiB), names as a count."""
    if value is None:
        return "unknown"
    if unit != "bytes":
        return f"{value:,.0f} {unit or ''}".rstrip()
    for factor, name in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(value) >= factor:
            return f"{value / factor:.1f} {name}"
    return f"{value:.0f} B"


def _cut(text: Any, limit: int = DETAIL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True)
class ClusterRef:
    """A cluster as a message names it: the Airflow connection id and the HBase cluster key."""

    conn_id: str | None
    cluster_key: str | None

    def text(self) -> str:
        return f"{self.conn_id or 'unknown connection'} (cluster key {self.cluster_key or 'unknown'})"


@dataclass(frozen=True)
class Alert:
    """One message. `message_key` (what it is about, which event, which occurrence) is its identity in the
    ledger: claiming it a second time is a no-op, so it is sent once."""

    kind: str
    event: str
    alert_key: str
    occurrence: str
    cluster: ClusterRef
    dag_run_id: str
    migration_run_id: str | None
    subject: str
    lines: tuple[tuple[str, str], ...]  # (label, text), in the order a person reads them
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"alert kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.event not in EVENTS:
            raise ValueError(f"alert event must be one of {', '.join(EVENTS)}, got {self.event!r}")

    @property
    def message_key(self) -> str:
        return f"{self.alert_key}|{self.event}|{self.occurrence}"

    @property
    def body(self) -> str:
        return render_lines(self.lines)

    def record(self) -> dict[str, Any]:
        """What the ledger keeps (and a retried delivery sends again): the text and the facts as JSON."""
        return {"message_key": self.message_key, "alert_key": self.alert_key, "event": self.event,
                "kind": self.kind, "cluster_key": self.cluster.cluster_key or "unknown",
                "conn_id": self.cluster.conn_id or "unknown", "dag_run_id": self.dag_run_id,
                "run_id": self.migration_run_id, "subject": self.subject, "body": self.body,
                "facts": {**self.facts, "kind": self.kind, "event": self.event, "alert_key": self.alert_key,
                          "conn_id": self.cluster.conn_id, "cluster_key": self.cluster.cluster_key,
                          "dag_run_id": self.dag_run_id, "migration_run_id": self.migration_run_id}}


def render_lines(lines: Iterable[tuple[str, str]]) -> str:
    """`Label: text` per line; a text's own line breaks are indented under it."""
    return "\n".join(f"{label}: " + text.replace("\n", "\n  ") for label, text in lines)


def webhook_payload(subject: str, body: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """The chat message: `text` is what Slack, Mattermost and Teams (incoming webhooks) show; the facts ride
    along under `hbase_migration` for a receiver that routes on them (chat tools ignore unknown fields)."""
    return {"text": f"{subject}\n\n{body}", "hbase_migration": dict(facts)}


def email_html(body: str) -> str:
    """The mail's HTML part: the same text, escaped, kept as laid out."""
    return f'<pre style="font-family: monospace">{html.escape(body)}</pre>'


# ---------------------------------------------------------------------------------------------------------
# A failed migration DAG run

def failed_alert_key(dag_id: str, dag_run_id: str) -> str:
    return f"{MIGRATION_FAILED}|{dag_id}|{dag_run_id}"


def task_label(task_id: str, map_index: int | None) -> str:
    return f"{task_id}[{map_index}]" if map_index is not None and map_index >= 0 else task_id


def failure_occurrence(task_id: str | None, map_index: int | None, try_number: int | None) -> str:
    """Which failure of a DAG run: the task instance that failed last and its try. A DAG run fails again only
    after a person cleared it, and that clear gives the failing task instance a new try."""
    if not task_id:
        return "run"
    return f"{task_label(task_id, map_index)}#{try_number if try_number is not None else '?'}"


def verdict_of(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What `state_left_behind` recorded (the run-wide `report` phase, failed, its detail a JSON object)."""
    entry = ((summary or {}).get("phases") or {}).get("*", {}).get("report")
    if not entry or entry.get("status") != "failed" or not entry.get("detail"):
        return None
    try:
        verdict = json.loads(entry["detail"])
    except (TypeError, ValueError):
        return None
    return {**verdict, "recorded_ms": entry.get("ended_ms")} if isinstance(verdict, dict) else None


def _detail_text(detail: str) -> str:
    """A phase's recorded detail as a person reads it: the text of a one-field JSON object (a quota breach, an
    error), else the detail as recorded, cut to DETAIL_CHARS."""
    try:
        parsed = json.loads(detail)
    except (TypeError, ValueError):
        return _cut(detail)
    if isinstance(parsed, dict) and len(parsed) == 1 and isinstance(next(iter(parsed.values())), str):
        key, value = next(iter(parsed.items()))
        return _cut(f"{key.replace('_', ' ')}: {value}")
    return _cut(detail)


def _failed_phases(summary: Mapping[str, Any]) -> list[str]:
    out = []
    for table, phases in (summary.get("phases") or {}).items():
        for phase, entry in phases.items():
            if entry.get("status") == "failed" and not (table == "*" and phase == "report"):
                where = "" if table == "*" else f" of {table}"
                detail = f": {_detail_text(entry['detail'])}" if entry.get("detail") else ""
                out.append(f"{phase}{where} failed{detail}")
    return out


def _copy_progress(summary: Mapping[str, Any], planned: Mapping[str, int]) -> str | None:
    copied = (summary.get("copy") or {}).get("tables") or {}
    tables = (summary.get("run") or {}).get("tables") or []
    if not copied and not planned:
        return None
    parts = []
    for t in tables:
        done = copied.get(t, {})
        of = f"/{planned[t]}" if t in planned else ""
        parts.append(f"{t} {done.get('partitions', 0)}{of} partitions ({done.get('rows', 0):,} rows)")
    return "copy: " + ", ".join(parts)


def _state_text(verdict: Mapping[str, Any] | None, summary: Mapping[str, Any] | None, now_ms: int) -> str:
    if summary is None:
        return "nothing was changed on either cluster: the run failed before it was recorded (open_run)"
    run = summary["run"]
    if verdict is None:
        if run.get("plan") == "backfill":
            return "no peer was touched; finished copy partitions are recorded in the ledger"
        notes = (summary.get("peer") or {}).get("notes") or []
        last = (f"; last noted in the ledger: peer {notes[-1]['peer_id']} {notes[-1]['state']} at "
                f"{utc(notes[-1]['noted_ms'])} ({_cut(notes[-1]['reason'], 160)})") if notes else ""
        return ("not recorded: state_left_behind did not record it (it failed, e.g. the cluster did not answer, "
                "or did not run: see its log)" + last)
    return _verdict_text(verdict, run, now_ms) + f" (read by state_left_behind at {utc(verdict.get('recorded_ms'))})"


def _batches_text(verdict: Mapping[str, Any]) -> str | None:
    """A run of several batches (issue 42): each batch's peer and state, the failed ones said."""
    batches = verdict.get("batches")
    if not isinstance(batches, list) or len(batches) < 2:
        return None
    return "; ".join(f"batch {b.get('batch')} peer {b.get('peer_id')} {b.get('state')}"
                     + (" (failed)" if b.get("failed") else "") for b in batches)


def _verdict_text(verdict: Mapping[str, Any], run: Mapping[str, Any], now_ms: int) -> str:
    batches = _batches_text(verdict)
    if batches:
        return batches
    state = verdict.get("state")
    peer = verdict.get("peer_id")
    if peer and state == "DISABLED":
        t0 = run.get("t0_ms")
        pinned = f" since T0 {utc(t0)} ({duration((now_ms - t0) / 1000)} ago)" if t0 else ""
        return f"peer {peer} DISABLED: it pins every WAL{pinned} in oldWALs until it is enabled or removed"
    if peer and state == "ENABLED":
        return f"peer {peer} ENABLED: it ships the backlog to the target"
    if peer and state:
        return f"peer {peer} {state}: no peer is left behind"
    if state == "NOT_STARTED":
        return "nothing was changed on either cluster"
    switch = _switch_text(verdict)
    if switch:
        return switch
    shown = {k: v for k, v in verdict.items() if k not in ("failed_tasks", "advice", "recorded_ms")}
    return json.dumps(shown, sort_keys=True, default=str)


def _switch_text(verdict: Mapping[str, Any]) -> str:
    """A cut-over's or rollback's verdict: what was undone (tables unfrozen, the reverse peer removed), or the
    state of both sides and both peers after the approval."""
    parts = []
    for side in ("source", "target"):
        if isinstance(verdict.get(side), list):
            parts.append(f"{side} tables " + ", ".join(f"{i.get('table')} {i.get('outcome')}" for i in verdict[side]))
        if isinstance(verdict.get(f"{side}_readonly"), dict):
            parts.append(f"{side} tables " + ", ".join(f"{t} {'READONLY' if ro else 'writable'}"
                                                      for t, ro in verdict[f"{side}_readonly"].items()))
    if isinstance(verdict.get("forward_peer"), str):
        parts.append(f"forward peer {verdict['forward_peer']}")
    reverse = verdict.get("reverse_peer")
    if isinstance(reverse, Mapping):
        parts.append(f"reverse peer {reverse.get('peer_id')} {reverse.get('outcome')}")
    elif isinstance(reverse, str):
        parts.append(f"reverse peer {reverse}")
    return "; ".join(parts)


def _action_text(verdict: Mapping[str, Any] | None, summary: Mapping[str, Any] | None, dag_id: str,
                 dag_run_id: str, source: ClusterRef) -> str:
    conn = source.conn_id or "<source connection>"
    peer, state = (verdict or {}).get("peer_id"), (verdict or {}).get("state")
    failed = ", ".join((verdict or {}).get("failed_tasks") or []) or "failed"
    clear = f"clear the {failed} task(s) of DAG run {dag_run_id} in {dag_id}"
    batches = (verdict or {}).get("batches") or ()
    disabled = [b["peer_id"] for b in batches if b.get("state") == "DISABLED"]
    if len(batches) > 1 and disabled:
        return (f"{clear} to resume the failed batches (finished copy partitions are skipped), or\n"
                + "".join(f"stop the oldWALs growth of {p}: {CLI} peer enable --source {conn} --peer-id {p}\n"
                          for p in disabled)
                + "or roll back a batch: " + "; ".join(f"{CLI} peer remove --source {conn} --peer-id {p}"
                                                       for p in disabled))
    if peer and state == "DISABLED":
        return (f"{clear} to resume (finished copy partitions are skipped), or\n"
                f"stop the oldWALs growth (the backlog ships): {CLI} peer enable --source {conn} --peer-id {peer}\n"
                f"or roll back: {CLI} peer remove --source {conn} --peer-id {peer}")
    if peer and state == "ENABLED":
        return f"{clear} to resume (the peer keeps shipping meanwhile)"
    if peer and state == "ABSENT":
        return f"fix the cause (the failed task's log says it; preflight names the check) and trigger {dag_id} again"
    if verdict and verdict.get("advice"):
        return str(verdict["advice"])
    if summary is None:
        return f"fix the inputs (the open_run task's log says which) and trigger {dag_id} again"
    if summary["run"].get("plan") == "backfill":
        return (f"clear the failed task(s) of DAG run {dag_run_id} in {dag_id}: the copy resumes, finished "
                "partitions are skipped")
    return (f"read the peer's state ({CLI} peer list --source {conn}), then clear the failed task(s) of DAG run "
            f"{dag_run_id} in {dag_id} to resume (docs/operations.md: 'When a run fails halfway')")


def failed_run_alert(*, dag_id: str, dag_run_id: str, reason: str | None, task_id: str | None,
                     map_index: int | None, try_number: int | None, summary: Mapping[str, Any] | None,
                     planned: Mapping[str, int], source: ClusterRef, target: ClusterRef, url: str | None,
                     now_ms: int) -> Alert:
    """The message for a failed migration DAG run, from Airflow's callback context (the task instance that
    failed last) and the run's ledger summary (None when the run failed before `open_run` recorded it)."""
    run = (summary or {}).get("run") or {}
    params = run.get("params") or {}
    verdict = verdict_of(summary)
    last = f"{task_label(task_id, map_index)} try {try_number}" if task_id else None
    failed = ([str(t) for t in (verdict or {}).get("failed_tasks") or []]
              or ([task_label(task_id, map_index)] if task_id else []))
    ledger_run = run.get("run_id")
    origin = ""
    if params.get("migration_run_id"):
        origin = f" (cut-over of migration run {params['migration_run_id']})"
    elif params.get("cutover_run_id"):
        origin = f" (rollback of cut-over run {params['cutover_run_id']})"
    run_line = (f"DAG {dag_id}, DAG run {dag_run_id}; migration run {ledger_run} in the ledger{origin}"
                if ledger_run else f"DAG {dag_id}, DAG run {dag_run_id}; no migration run in the ledger")
    what = [f"the run failed at {', '.join(failed) or 'an unknown task'}"
            + (f" (last: {last}; Airflow: {reason})" if last else f" (Airflow: {reason or 'failed'})")]
    if summary:
        what += _failed_phases(summary)
        progress = _copy_progress(summary, planned)
        if progress:
            what.append(progress)
        if run.get("tables"):
            peer = run.get("peer_id")
            what.append(f"tables: {', '.join(run['tables'])}" + (f"; peer: {peer}" if peer and peer != "-" else ""))
    lines = [("Run", run_line),
             ("Cluster", f"source {source.text()} -> target {target.text()}"),
             ("What", "\n".join(what)),
             ("State", _state_text(verdict, summary, now_ms)),
             ("Action", _action_text(verdict, summary, dag_id, dag_run_id, source))]
    if url:
        lines.append(("Airflow", url))
    first = failed[0] if failed else "an unknown task"
    facts = {"dag_id": dag_id, "reason": reason, "failed_tasks": failed, "last_failed": last,
             "source": {"conn_id": source.conn_id, "cluster_key": source.cluster_key},
             "target": {"conn_id": target.conn_id, "cluster_key": target.cluster_key},
             "peer_id": run.get("peer_id"), "tables": run.get("tables"), "state_left_behind": verdict,
             "url": url}
    return Alert(MIGRATION_FAILED, FAILED, failed_alert_key(dag_id, dag_run_id),
                 failure_occurrence(task_id, map_index, try_number), source, dag_run_id, ledger_run,
                 f"{PREFIX} FAILED: {dag_id} run {dag_run_id} at {first} ({source.conn_id or 'unknown cluster'})",
                 tuple(lines), facts)


# ---------------------------------------------------------------------------------------------------------
# The watch: breaches that start and end

def watch_alert_key(kind: str, cluster_key: str, subject: str | None = None) -> str:
    """peer_disabled|<cluster key>|<peer>, lag_breach|<cluster key>|<peer>, oldwals_quota|<cluster key>."""
    return f"{kind}|{cluster_key}" + (f"|{subject}" if subject else "")


def _key_of(finding: Finding, cluster_key: str) -> str:
    return watch_alert_key(finding.kind, cluster_key,
                           finding.facts.get("peer_id") if finding.kind != OLDWALS_QUOTA else None)


def watch_conditions(findings: Iterable[Finding], cluster_key: str) -> dict[str, Finding]:
    """The alerted breaches among a watch's findings, by alert key (the quota's two breaches are one)."""
    out: dict[str, Finding] = {}
    for f in findings:
        if f.level != "breach" or f.kind not in WATCH_KINDS:
            continue
        key = _key_of(f, cluster_key)
        if key in out:
            out[key] = Finding("breach", f.subject, f"{out[key].message}; {f.message}", f.kind,
                               {**out[key].facts, **f.facts})
        else:
            out[key] = f
    return out


def undetermined_keys(peers: Sequence[PeerHealth], quota_known: bool, cluster_key: str) -> frozenset[str]:
    """Alert keys this reading cannot judge: an enabled peer whose lag no region server gave, and the quota when
    it could not be read (or is not watched). Their open alerts stay open: not seeing a breach is not seeing it
    gone."""
    out = {watch_alert_key(LAG_BREACH, cluster_key, p.peer_id) for p in peers
           if p.state == "ENABLED" and p.lag.get("max_age_ms") is None}
    if not quota_known:
        out.add(watch_alert_key(OLDWALS_QUOTA, cluster_key))
    return frozenset(out)


def open_alerts(history: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The alerts whose latest event is `raised`, by key, from the ledger's raised/cleared messages
    (each: alert_key, event, seq, created_ms, dag_run_id, facts)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for row in history:
        if row["event"] not in (RAISED, CLEARED):
            continue
        seen = latest.get(row["alert_key"])
        # A clear shares its raise's seq and comes after it.
        if seen is None or (row["seq"], row["event"] == CLEARED) > (seen["seq"], seen["event"] == CLEARED):
            latest[row["alert_key"]] = row
    return {k: dict(r) for k, r in latest.items() if r["event"] == RAISED}


def next_seq(history: Iterable[Mapping[str, Any]], alert_key: str) -> int:
    return 1 + max((r["seq"] for r in history if r["alert_key"] == alert_key), default=0)


@dataclass(frozen=True)
class WatchPlan:
    """What one watch reading changes: breaches that start (key, seq, finding) and open alerts that end."""

    raise_: tuple[tuple[str, int, Finding], ...]
    clear: tuple[dict[str, Any], ...]


def watch_transitions(history: Sequence[Mapping[str, Any]], active: Mapping[str, Finding],
                      undetermined: frozenset[str]) -> WatchPlan:
    """Starts: breaches with no open alert. Ends: open alerts of this cluster's reading that are neither
    breached nor undetermined. A breach that lasts has its alert open already: nothing."""
    opened = open_alerts(history)
    starts = tuple((key, next_seq(history, key), f) for key, f in sorted(active.items()) if key not in opened)
    ends = tuple(row for key, row in sorted(opened.items()) if key not in active and key not in undetermined)
    return WatchPlan(starts, ends)


def _percent(fraction: float | None) -> str:
    return "unknown" if fraction is None else f"{fraction:.1%}"


def _run_of(runs: Mapping[str, Mapping[str, Any]], peer_id: str) -> str:
    run = runs.get(peer_id)
    if not run:
        return "no migration run in the ledger"
    return f"migration run {run['run_id']} (DAG {run['dag_id']}, {run['status']})"


def _peer_actions(conn: str, peer_id: str, runs: Mapping[str, Mapping[str, Any]]) -> str:
    run = runs.get(peer_id)
    resume = (f"resume migration run {run['run_id']} (clear its failed task(s) in DAG {run['dag_id']}), or\n"
              if run else "")
    return (f"{resume}enable the peer (its backlog ships, the cleaner then frees oldWALs):\n"
            f"  {CLI} peer enable --source {conn} --peer-id {peer_id}\n"
            f"or remove it to give the migration up:\n"
            f"  {CLI} peer remove --source {conn} --peer-id {peer_id}")


def _quota_what(facts: Mapping[str, Any]) -> str:
    b = facts.get("binding") or {}
    growth = facts.get("growth_bytes_per_s")
    proj = facts.get("projected_exhaustion_s")
    used = (f"{b.get('kind')} quota on {b.get('path')}: {_percent(b.get('fraction_used'))} used "
            f"({size(b.get('used'), b.get('unit'))} of {size(b.get('limit'), b.get('unit'))}; "
            f"mark {_percent(facts.get('quota_mark'))})" if b else "no quota over oldWALs")
    grows = ("growth unknown" if growth is None else f"growing {size(growth)}/s")
    ends = ("no exhaustion projected" if proj is None
            else f"exhausted in {duration(proj)} ({proj:.0f}s; min_exhaustion_s {facts.get('min_exhaustion_s'):.0f}s)")
    return f"oldWALs {facts.get('path')}: {used}; {grows}: {ends}"


def watch_alert(event: str, kind: str, key: str, seq: int, *, cluster: ClusterRef, dag_run_id: str,
                facts: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]],
                peers: Sequence[PeerHealth], quota_now: Mapping[str, Any] | None, now_s: float,
                raised: Mapping[str, Any] | None = None) -> Alert:
    """A watch alert's `raised` message (facts: the breach's) or `cleared` message (facts: the raise's;
    `raised`: its ledger row; `peers` and `quota_now`: what this reading sees)."""
    conn = cluster.conn_id or "<connection>"
    where = f"on {conn}"
    by_id = {p.peer_id: p for p in peers}
    peer_id = facts.get("peer_id")
    disabled = [p.peer_id for p in peers if p.state == "DISABLED"]
    run_line = f"watch DAG run {dag_run_id}" + (f"; peer {peer_id}: {_run_of(runs, peer_id)}" if peer_id else "")
    migration_run = (runs.get(peer_id) or {}).get("run_id") if peer_id else None
    if kind == OLDWALS_QUOTA and disabled:
        run_line += "; disabled peers: " + ", ".join(f"{p} ({_run_of(runs, p)})" for p in disabled)
    if event == RAISED:
        if kind == PEER_DISABLED:
            subject = (f"{PREFIX} peer {peer_id} DISABLED for {duration(facts['disabled_for_s'])} {where} "
                       f"(max {duration(facts['max_disabled_s'])})")
            what = (f"peer {peer_id} has been DISABLED for {facts['disabled_for_s']}s, longer than max_disabled_s "
                    f"{facts['max_disabled_s']:.0f}s: it pins every WAL written since {utc(facts['since_ms'])} in "
                    "oldWALs, which grows until its quota is exhausted (then the region servers abort)")
            state = f"peer {peer_id} DISABLED since {utc(facts['since_ms'])}"
            action = _peer_actions(conn, peer_id, runs)
        elif kind == LAG_BREACH:
            subject = (f"{PREFIX} peer {peer_id} lagging {duration(facts['max_age_ms'] / 1000)} {where} "
                       f"(max {duration(facts['alert_lag_ms'] / 1000)})")
            what = (f"peer {peer_id}: ageOfLastShippedOp {facts['max_age_ms']} ms > alert_lag_ms "
                    f"{facts['alert_lag_ms']} ms (worst region server {facts.get('worst_server') or 'unknown'}); "
                    f"sizeOfLogQueue {facts.get('total_size_of_log_queue')} WAL(s) queued over "
                    f"{facts.get('live_servers')} live region server(s)")
            state = f"peer {peer_id} ENABLED, its edits are not reaching the target in time"
            action = (f"see which region server's queue lags: {CLI} lag --source {conn} --peer-id {peer_id}\n"
                      "then check the target accepts the edits (region servers up, tables writable, not "
                      "READONLY, no quota refusal) and the link between the datacenters")
        else:
            proj = facts.get("projected_exhaustion_s")
            subject = (f"{PREFIX} oldWALs quota {where}: {_percent((facts.get('binding') or {}).get('fraction_used'))}"
                       f" used, " + ("exhausted in " + duration(proj) if proj is not None else "past its mark"))
            what = (_quota_what(facts) + "; past the quota every region server aborts at its next WAL roll")
            state = (f"disabled peers pinning WALs: {', '.join(disabled)}" if disabled else
                     "no peer of this cluster is DISABLED (WALs are kept by queues still shipping, or by snapshots)")
            quota_path = (facts.get("binding") or {}).get("path") or "<path>"
            action = "\n".join([f"read the figures: {CLI} quota --source {conn}",
                                *(f"for peer {p}: " + _peer_actions(conn, p, runs) for p in disabled),
                                f"or raise the quota: hdfs dfsadmin -setSpaceQuota <bytes> {quota_path}"])
        lines = [("Run", run_line), ("Cluster", cluster.text()), ("What", what), ("State", state),
                 ("Action", action)]
        occurrence = str(seq)
    else:
        since = raised or {}
        lasted = f"raised at {utc(since.get('created_ms'))} by watch DAG run {since.get('dag_run_id')}"
        if since.get("created_ms") is not None:
            lasted += f", lasted {duration(now_s - since['created_ms'] / 1000)}"
        peer = by_id.get(peer_id) if peer_id else None
        if kind == PEER_DISABLED:
            subject = f"{PREFIX} CLEARED: peer {peer_id} no longer disabled too long {where}"
            now = (f"peer {peer_id} is {peer.state}" if peer else f"peer {peer_id} is gone (removed)")
        elif kind == LAG_BREACH:
            subject = f"{PREFIX} CLEARED: peer {peer_id} lag back under its maximum {where}"
            if peer is None:
                now = f"peer {peer_id} is gone (removed)"
            elif peer.state != "ENABLED":
                now = f"peer {peer_id} is {peer.state}: its lag is not watched"
            else:
                now = (f"ageOfLastShippedOp {peer.lag.get('max_age_ms')} ms <= alert_lag_ms "
                       f"{facts.get('alert_lag_ms')} ms")
        else:
            subject = f"{PREFIX} CLEARED: oldWALs quota back under its thresholds {where}"
            now = _quota_what(quota_now) if quota_now else "oldWALs back under its thresholds"
        lines = [("Run", run_line), ("Cluster", cluster.text()), ("What", f"the breach is over ({lasted})"),
                 ("State", now), ("Action", "none")]
        occurrence = str(seq)
    return Alert(kind, event, key, occurrence, cluster, dag_run_id, migration_run, subject, tuple(lines),
                 {**facts, "seq": seq})


def plan_watch_alerts(*, findings: Sequence[Finding], peers: Sequence[PeerHealth], quota_now: Mapping | None,
                      quota_known: bool, cluster: ClusterRef, dag_run_id: str,
                      history: Sequence[Mapping[str, Any]], runs: Mapping[str, Mapping[str, Any]],
                      now_s: float) -> list[Alert]:
    """Every message one watch reading of one cluster sends: a `raised` per breach that starts, a `cleared` per
    open alert that ended; none for a breach that lasts."""
    ck = cluster.cluster_key or "unknown"
    active = watch_conditions(findings, ck)
    plan = watch_transitions(history, active, undetermined_keys(peers, quota_known, ck))
    out = [watch_alert(RAISED, f.kind, key, seq, cluster=cluster, dag_run_id=dag_run_id, facts=f.facts, runs=runs,
                       peers=peers, quota_now=quota_now, now_s=now_s) for key, seq, f in plan.raise_]
    for row in plan.clear:
        kind = row["alert_key"].split("|", 1)[0]
        out.append(watch_alert(CLEARED, kind, row["alert_key"], row["seq"], cluster=cluster, dag_run_id=dag_run_id,
                               facts=row.get("facts") or {}, runs=runs, peers=peers, quota_now=quota_now,
                               now_s=now_s, raised=row))
    return out
