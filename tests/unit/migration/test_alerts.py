"""The alerts' exact text and the rules that make one message per occurrence (hbase_migration/migration/alerts.py),
and the pure parts of their Airflow layer: which channels the options turn on, where a webhook POSTs."""
import json
from types import SimpleNamespace

import pytest

from hbase_migration.migration import alerts
from hbase_migration.migration.alerts import (
    CLEARED,
    RAISED,
    ClusterRef,
    duration,
    failed_run_alert,
    open_alerts,
    plan_watch_alerts,
    size,
    undetermined_keys,
    utc,
    watch_transitions,
)
from hbase_migration.migration.health import PeerHealth, WatchThresholds, evaluate, quota_facts

NOW_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
NOW = NOW_MS / 1000
CK = "zk1.dc1,zk2.dc1:2181:/hbase"
SOURCE = ClusterRef("hbase_source", CK)
TARGET = ClusterRef("hbase_target", "zk1.dc2:2181:/hbase")
RUN = "manual__2023-11-14T22:00:00+00:00"
WATCH_RUN = "scheduled__2023-11-14T22:10:00+00:00"
TH = WatchThresholds(max_disabled_s=3600, alert_lag_ms=60_000, quota_mark=0.8, min_exhaustion_s=86_400)


def summary(verdict=None, plan="manual", phases=None, notes=(), copied=None, params=None):
    phases = dict(phases or {})
    if verdict is not None:
        phases["*"] = {"report": {"status": "failed", "ended_ms": NOW_MS - 60_000, "detail": json.dumps(verdict)}}
    return {"run": {"run_id": RUN, "dag_id": "hbase_table_migration", "plan": plan, "source_key": CK,
                    "target_key": TARGET.cluster_key, "peer_id": "mig1", "tables": ["users", "orders"],
                    "params": params or {"source_conn_id": "hbase_source", "target_conn_id": "hbase_target"},
                    "t0_ms": NOW_MS - 5_400_000, "copy_id": RUN},
            "phases": phases, "copy": {"tables": copied or {}}, "peer": {"notes": list(notes)}}


def failed(s, task_id="copy", map_index=1, try_number=1, dag_id="hbase_table_migration", url=None, planned=None):
    return failed_run_alert(dag_id=dag_id, dag_run_id=RUN, reason="task_failure", task_id=task_id,
                            map_index=map_index, try_number=try_number, summary=s, planned=planned or {},
                            source=SOURCE, target=TARGET, url=url, now_ms=NOW_MS)


# ---------------------------------------------------------------------------------------------------------
# Formatting

@pytest.mark.parametrize("seconds, text", [(None, "unknown"), (0, "0s"), (44.6, "45s"), (200, "3m20s"),
                                           (7380, "2h03m"), (93_600, "1d02h"), (-5, "0s")])
def test_duration(seconds, text):
    assert duration(seconds) == text


@pytest.mark.parametrize("value, unit, text", [(None, "bytes", "unknown"), (512, "bytes", "512 B"),
                                               (2 * 2**30, "bytes", "2.0 GiB"), (1536, "bytes", "1.5 KiB"),
                                               (12_345, "names", "12,345 names")])
def test_size(value, unit, text):
    assert size(value, unit) == text


def test_utc():
    assert utc(NOW_MS) == "2023-11-14T22:13:20Z"
    assert utc(None) == "unknown"


# ---------------------------------------------------------------------------------------------------------
# A failed migration run

DISABLED = {"peer_id": "mig1", "state": "DISABLED", "advice": "(state_left_behind's own words)",
            "failed_tasks": ["copy"]}


def test_failed_run_with_its_peer_left_disabled():
    s = summary(DISABLED, phases={
        "users": {"copy": {"status": "failed", "detail": json.dumps({"quota_breach": "namespace quota 85.0% used"})}},
        "orders": {"copy": {"status": "success", "detail": "{}"}}},
        copied={"users": {"partitions": 2, "rows": 1234}, "orders": {"partitions": 3, "rows": 10}})
    a = failed(s, url="https://airflow.example/dags/hbase_table_migration/runs/manual__x",
               planned={"users": 5, "orders": 3})
    assert a.subject == ("[hbase-migration] FAILED: hbase_table_migration run manual__2023-11-14T22:00:00+00:00 at "
                         "copy (hbase_source)")
    assert a.body == (
        "Run: DAG hbase_table_migration, DAG run manual__2023-11-14T22:00:00+00:00; migration run "
        "manual__2023-11-14T22:00:00+00:00 in the ledger\n"
        "Cluster: source hbase_source (cluster key zk1.dc1,zk2.dc1:2181:/hbase) -> target hbase_target (cluster key "
        "zk1.dc2:2181:/hbase)\n"
        "What: the run failed at copy (last: copy[1] try 1; Airflow: task_failure)\n"
        "  copy of users failed: quota breach: namespace quota 85.0% used\n"
        "  copy: users 2/5 partitions (1,234 rows), orders 3/3 partitions (10 rows)\n"
        "  tables: users, orders; peer: mig1\n"
        "State: peer mig1 DISABLED: it pins every WAL since T0 2023-11-14T20:43:20Z (1h30m ago) in oldWALs until it "
        "is enabled or removed (read by state_left_behind at 2023-11-14T22:12:20Z)\n"
        "Action: clear the copy task(s) of DAG run manual__2023-11-14T22:00:00+00:00 in hbase_table_migration to "
        "resume (finished copy partitions are skipped), or\n"
        "  stop the oldWALs growth (the backlog ships): python -m hbase_migration peer enable --source hbase_source "
        "--peer-id mig1\n"
        "  or roll back: python -m hbase_migration peer remove --source hbase_source --peer-id mig1\n"
        "Airflow: https://airflow.example/dags/hbase_table_migration/runs/manual__x")
    assert a.message_key == "migration_failed|hbase_table_migration|manual__2023-11-14T22:00:00+00:00|failed|copy[1]#1"
    record = a.record()
    assert record["run_id"] == RUN and record["cluster_key"] == CK and record["conn_id"] == "hbase_source"
    assert record["facts"]["state_left_behind"]["state"] == "DISABLED"
    assert record["facts"]["event"] == "failed" and record["facts"]["failed_tasks"] == ["copy"]


@pytest.mark.parametrize("state, action", [
    ("ENABLED", "clear the copy task(s) of DAG run manual__2023-11-14T22:00:00+00:00 in hbase_table_migration to "
                "resume (the peer keeps shipping meanwhile)"),
    ("ABSENT", "fix the cause (the failed task's log says it; preflight names the check) and trigger "
               "hbase_table_migration again"),
])
def test_failed_run_action_follows_the_peer_state(state, action):
    a = failed(summary({**DISABLED, "state": state}))
    assert dict(a.lines)["Action"] == action
    assert dict(a.lines)["State"].startswith(f"peer mig1 {state}: ")


def test_one_message_per_failure_of_a_dag_run():
    """The occurrence is the task instance that failed last and its try: the same failure delivered twice makes
    one key; the run failing again after a person cleared it (a new try) makes another."""
    s = summary(DISABLED)
    assert failed(s).message_key == failed(s).message_key
    assert failed(s, try_number=2).message_key != failed(s).message_key
    assert failed(s, task_id="state_left_behind", map_index=-1).occurrence == "state_left_behind#1"
    assert failed(s, task_id=None).occurrence == "run"


def test_failed_before_open_run_says_nothing_changed():
    a = failed(None, task_id="open_run", map_index=-1)
    lines = dict(a.lines)
    assert lines["Run"] == ("DAG hbase_table_migration, DAG run manual__2023-11-14T22:00:00+00:00; no migration run "
                            "in the ledger")
    assert lines["What"] == "the run failed at open_run (last: open_run try 1; Airflow: task_failure)"
    assert lines["State"] == ("nothing was changed on either cluster: the run failed before it was recorded "
                              "(open_run)")
    assert lines["Action"] == ("fix the inputs (the open_run task's log says which) and trigger hbase_table_migration "
                               "again")
    assert "Airflow" not in lines  # no [api] base_url: no link


def test_failed_run_whose_state_left_behind_did_not_record_names_the_last_note():
    note = {"peer_id": "mig1", "state": "DISABLED", "noted_ms": NOW_MS - 3_600_000, "reason": "added DISABLED at T0"}
    lines = dict(failed(summary(None, notes=[note]), task_id="state_left_behind", map_index=-1).lines)
    assert lines["State"] == (
        "not recorded: state_left_behind did not record it (it failed, e.g. the cluster did not answer, or did not "
        "run: see its log); last noted in the ledger: peer mig1 DISABLED at 2023-11-14T21:13:20Z (added DISABLED "
        "at T0)")
    assert lines["Action"] == (
        "read the peer's state (python -m hbase_migration peer list --source hbase_source), then clear the failed "
        "task(s) of DAG run manual__2023-11-14T22:00:00+00:00 in hbase_table_migration to resume "
        "(docs/operations.md: 'When a run fails halfway')")


def test_failed_backfill_touches_no_peer():
    s = summary(None, plan="backfill", copied={"users": {"partitions": 4, "rows": 40}},
                phases={"users": {"copy": {"status": "failed", "detail": "x" * 400}}})
    s["run"]["peer_id"] = "-"
    a = failed(s, dag_id="hbase_backfill", planned={"users": 9})
    lines = dict(a.lines)
    assert lines["State"] == "no peer was touched; finished copy partitions are recorded in the ledger"
    assert lines["Action"] == ("clear the failed task(s) of DAG run manual__2023-11-14T22:00:00+00:00 in "
                               "hbase_backfill: the copy resumes, finished partitions are skipped")
    assert "\ncopy of users failed: " + "x" * 299 + "…\n" in lines["What"]  # a recorded detail is cut
    assert "copy: users 4/9 partitions (40 rows), orders 0 partitions (0 rows)" in lines["What"]
    assert lines["What"].endswith("\ntables: users, orders")  # a backfill has no peer (the ledger's "-")


def test_failed_cutover_names_the_migration_run_and_uses_its_advice():
    verdict = {"failed_tasks": ["final_drain"], "advice": "the cutover was undone before the approval: ...",
               "reason": "failed at final_drain"}
    s = summary(verdict, params={"source_conn_id": "hbase_source", "target_conn_id": "hbase_target",
                                 "migration_run_id": "manual__mig"})
    lines = dict(failed(s, dag_id="hbase_cutover", task_id="final_drain", map_index=-1).lines)
    assert lines["Run"].endswith("in the ledger (cut-over of migration run manual__mig)")
    assert lines["Action"] == "the cutover was undone before the approval: ..."
    assert lines["State"] == ('{"reason": "failed at final_drain"} (read by state_left_behind at '
                              '2023-11-14T22:12:20Z)')  # a verdict it cannot read is shown as recorded


def test_failed_cutover_after_the_approval_says_both_sides_and_both_peers():
    verdict = {"failed_tasks": ["retire_forward_peer"], "advice": "clear ...", "forward_peer": "ENABLED",
               "reverse_peer": "ENABLED", "source_readonly": {"users": True, "orders": False},
               "target_readonly": {"users": False, "orders": False}}
    lines = dict(failed(summary(verdict), dag_id="hbase_cutover", task_id="retire_forward_peer").lines)
    assert lines["State"] == ("source tables users READONLY, orders writable; target tables users writable, orders "
                              "writable; forward peer ENABLED; reverse peer ENABLED (read by state_left_behind at "
                              "2023-11-14T22:12:20Z)")


# ---------------------------------------------------------------------------------------------------------
# The watch

def quota(fraction=0.5, projected=3600.0, rate=12_345.6):
    binding = SimpleNamespace(kind="space", path="/hbase", fraction_used=fraction, used=int(fraction * 4 * 2**30),
                              limit=4 * 2**30, unit="bytes")
    return SimpleNamespace(usage=SimpleNamespace(binding=binding, oldwals_path="/hbase/oldWALs"),
                           projected_exhaustion_s=projected, growth_bytes_per_s=rate)


DISABLED_PEER = PeerHealth("mig1", "DISABLED", NOW - 7380, None)
LAGGING_PEER = PeerHealth("mig2", "ENABLED", NOW - 100, None,
                          {"max_age_ms": 90_000, "total_size_of_log_queue": 4, "live_servers": 3},
                          ({"server": "rs1,16020,1", "age_of_last_shipped_op_ms": 90_000, "recovered": False},
                           {"server": "rs2,16020,1", "age_of_last_shipped_op_ms": 5, "recovered": False}))
RUNS = {"mig1": {"run_id": RUN, "dag_id": "hbase_table_migration", "status": "failed"}}


def plan(peers, q, history=(), now=NOW, run=WATCH_RUN, quota_known=True):
    return plan_watch_alerts(findings=evaluate(peers, q, None, TH, now), peers=peers,
                             quota_now=quota_facts(q, TH) if q else None, quota_known=quota_known, cluster=SOURCE,
                             dag_run_id=run, history=list(history), runs=RUNS, now_s=now)


def as_history(sent, created_ms=NOW_MS):
    return [{**a.record(), "seq": a.facts["seq"], "created_ms": created_ms} for a in sent]


def test_each_breach_that_starts_raises_one_message():
    sent = plan((DISABLED_PEER, LAGGING_PEER), quota())
    assert [a.message_key for a in sent] == [
        f"lag_breach|{CK}|mig2|raised|1", f"oldwals_quota|{CK}|raised|1", f"peer_disabled|{CK}|mig1|raised|1"]
    lag, q, dis = sent
    assert dis.subject == "[hbase-migration] peer mig1 DISABLED for 2h03m on hbase_source (max 1h00m)"
    assert dis.body == (
        "Run: watch DAG run scheduled__2023-11-14T22:10:00+00:00; peer mig1: migration run "
        "manual__2023-11-14T22:00:00+00:00 (DAG hbase_table_migration, failed)\n"
        "Cluster: hbase_source (cluster key zk1.dc1,zk2.dc1:2181:/hbase)\n"
        "What: peer mig1 has been DISABLED for 7380s, longer than max_disabled_s 3600s: it pins every WAL written "
        "since 2023-11-14T20:10:20Z in oldWALs, which grows until its quota is exhausted (then the region servers "
        "abort)\n"
        "State: peer mig1 DISABLED since 2023-11-14T20:10:20Z\n"
        "Action: resume migration run manual__2023-11-14T22:00:00+00:00 (clear its failed task(s) in DAG "
        "hbase_table_migration), or\n"
        "  enable the peer (its backlog ships, the cleaner then frees oldWALs):\n"
        "    python -m hbase_migration peer enable --source hbase_source --peer-id mig1\n"
        "  or remove it to give the migration up:\n"
        "    python -m hbase_migration peer remove --source hbase_source --peer-id mig1")
    assert dis.migration_run_id == RUN and dis.facts["disabled_for_s"] == 7380
    assert lag.subject == "[hbase-migration] peer mig2 lagging 1m30s on hbase_source (max 1m00s)"
    assert lag.body == (
        "Run: watch DAG run scheduled__2023-11-14T22:10:00+00:00; peer mig2: no migration run in the ledger\n"
        "Cluster: hbase_source (cluster key zk1.dc1,zk2.dc1:2181:/hbase)\n"
        "What: peer mig2: ageOfLastShippedOp 90000 ms > alert_lag_ms 60000 ms (worst region server rs1,16020,1); "
        "sizeOfLogQueue 4 WAL(s) queued over 3 live region server(s)\n"
        "State: peer mig2 ENABLED, its edits are not reaching the target in time\n"
        "Action: see which region server's queue lags: python -m hbase_migration lag --source hbase_source "
        "--peer-id mig2\n"
        "  then check the target accepts the edits (region servers up, tables writable, not READONLY, no quota "
        "refusal) and the link between the datacenters")
    assert q.subject == "[hbase-migration] oldWALs quota on hbase_source: 50.0% used, exhausted in 1h00m"
    assert q.body == (
        "Run: watch DAG run scheduled__2023-11-14T22:10:00+00:00; disabled peers: mig1 (migration run "
        "manual__2023-11-14T22:00:00+00:00 (DAG hbase_table_migration, failed))\n"
        "Cluster: hbase_source (cluster key zk1.dc1,zk2.dc1:2181:/hbase)\n"
        "What: oldWALs /hbase/oldWALs: space quota on /hbase: 50.0% used (2.0 GiB of 4.0 GiB; mark 80.0%); growing "
        "12.1 KiB/s: exhausted in 1h00m (3600s; min_exhaustion_s 86400s); past the quota every region server "
        "aborts at its next WAL roll\n"
        "State: disabled peers pinning WALs: mig1\n"
        "Action: read the figures: python -m hbase_migration quota --source hbase_source\n"
        "  for peer mig1: resume migration run manual__2023-11-14T22:00:00+00:00 (clear its failed task(s) in DAG "
        "hbase_table_migration), or\n"
        "  enable the peer (its backlog ships, the cleaner then frees oldWALs):\n"
        "    python -m hbase_migration peer enable --source hbase_source --peer-id mig1\n"
        "  or remove it to give the migration up:\n"
        "    python -m hbase_migration peer remove --source hbase_source --peer-id mig1\n"
        "  or raise the quota: hdfs dfsadmin -setSpaceQuota <bytes> /hbase")


def test_the_quota_past_its_mark_is_the_same_alert_as_its_projection():
    sent = plan((), quota(fraction=0.9, projected=None, rate=0.0))
    assert [a.message_key for a in sent] == [f"oldwals_quota|{CK}|raised|1"]
    assert sent[0].subject == "[hbase-migration] oldWALs quota on hbase_source: 90.0% used, past its mark"
    assert len(plan((), quota(fraction=0.9, projected=60.0))) == 1  # both breaches: still one message


def test_a_breach_that_lasts_sends_nothing_more_and_its_end_sends_one_clear():
    first = plan((DISABLED_PEER, LAGGING_PEER), quota())
    history = as_history(first)
    assert plan((DISABLED_PEER, LAGGING_PEER), quota(), history, now=NOW + 600) == []  # 10 minutes later
    calm_lag = PeerHealth("mig2", "ENABLED", NOW - 100, None, {"max_age_ms": 12})
    cleared = plan((calm_lag,), quota(projected=None, rate=0.0), history, now=NOW + 1200,
                   run="scheduled__2023-11-14T22:30:00+00:00")
    assert [a.message_key for a in cleared] == [
        f"lag_breach|{CK}|mig2|cleared|1", f"oldwals_quota|{CK}|cleared|1", f"peer_disabled|{CK}|mig1|cleared|1"]
    lag, q, dis = cleared
    assert dis.subject == "[hbase-migration] CLEARED: peer mig1 no longer disabled too long on hbase_source"
    assert dis.body == (
        "Run: watch DAG run scheduled__2023-11-14T22:30:00+00:00; peer mig1: migration run "
        "manual__2023-11-14T22:00:00+00:00 (DAG hbase_table_migration, failed)\n"
        "Cluster: hbase_source (cluster key zk1.dc1,zk2.dc1:2181:/hbase)\n"
        "What: the breach is over (raised at 2023-11-14T22:13:20Z by watch DAG run "
        "scheduled__2023-11-14T22:10:00+00:00, lasted 20m00s)\n"
        "State: peer mig1 is gone (removed)\n"
        "Action: none")
    assert dict(lag.lines)["State"] == "ageOfLastShippedOp 12 ms <= alert_lag_ms 60000 ms"
    assert dict(q.lines)["State"] == ("oldWALs /hbase/oldWALs: space quota on /hbase: 50.0% used (2.0 GiB of 4.0 GiB; "
                                      "mark 80.0%); growing 0 B/s: no exhaustion projected")
    # The breach comes back: a new occurrence (seq 2), raised once more.
    again = plan((DISABLED_PEER,), quota(projected=None, rate=0.0), history + as_history(cleared, NOW_MS + 1_200_000),
                 now=NOW + 1800)
    assert [a.message_key for a in again] == [f"peer_disabled|{CK}|mig1|raised|2"]


def test_what_the_watch_cannot_judge_is_neither_raised_nor_cleared():
    history = as_history(plan((LAGGING_PEER,), quota()))
    blind = PeerHealth("mig2", "ENABLED", NOW - 100, None, {"max_age_ms": None, "unreadable_servers": 3})
    assert plan((blind,), None, history, now=NOW + 600, quota_known=False) == []
    # A lagging peer that is now DISABLED (not lagging any more, not yet disabled too long) clears its lag alert.
    paused = PeerHealth("mig2", "DISABLED", NOW + 500, None)
    [cleared] = plan((paused,), quota(), history, now=NOW + 600)
    assert cleared.message_key == f"lag_breach|{CK}|mig2|cleared|1"
    assert dict(cleared.lines)["State"] == "peer mig2 is DISABLED: its lag is not watched"


def test_transitions_truth_table():
    key_a, key_b, key_c = "peer_disabled|ck|a", "lag_breach|ck|b", "oldwals_quota|ck"
    f = SimpleNamespace()
    history = [{"alert_key": key_a, "event": RAISED, "seq": 1},  # open
               {"alert_key": key_b, "event": RAISED, "seq": 1}, {"alert_key": key_b, "event": CLEARED, "seq": 1},
               {"alert_key": key_c, "event": RAISED, "seq": 3}]  # open, third occurrence
    assert sorted(open_alerts(history)) == [key_c, key_a]
    p = watch_transitions(history, {key_a: f, key_b: f}, frozenset())
    assert [(k, s) for k, s, _ in p.raise_] == [(key_b, 2)]  # b starts again; a lasts
    assert [r["alert_key"] for r in p.clear] == [key_c]  # c is over
    assert watch_transitions(history, {}, frozenset({key_a, key_c})).clear == ()  # undetermined: kept open


def test_undetermined_keys():
    peers = (PeerHealth("a", "ENABLED", NOW, None, {"max_age_ms": None}), PeerHealth("b", "ENABLED", NOW, None,
                                                                                      {"max_age_ms": 3}),
             PeerHealth("c", "DISABLED", NOW, None))
    assert undetermined_keys(peers, True, "ck") == frozenset({"lag_breach|ck|a"})
    assert undetermined_keys((), False, "ck") == frozenset({"oldwals_quota|ck"})


def test_other_breaches_fail_the_watch_but_are_not_alerted():
    findings = evaluate((PeerHealth("x", "UNREADABLE", NOW, None),), None, "cannot read oldWALs", TH, NOW)
    assert [f.level for f in findings] == ["breach", "breach"]
    assert alerts.watch_conditions(findings, CK) == {}


def test_an_alert_refuses_an_unknown_kind_or_event():
    with pytest.raises(ValueError, match="alert kind must be one of"):
        alerts.Alert("nope", RAISED, "k", "1", SOURCE, "r", None, "s", ())
    with pytest.raises(ValueError, match="alert event must be one of"):
        alerts.Alert("lag_breach", "later", "k", "1", SOURCE, "r", None, "s", ())


def test_delivery_formats():
    assert alerts.webhook_payload("S", "a: 1\nb: <2>", {"kind": "lag_breach"}) == {
        "text": "S\n\na: 1\nb: <2>", "hbase_migration": {"kind": "lag_breach"}}
    assert alerts.email_html("a & b\n<c>") == '<pre style="font-family: monospace">a &amp; b\n&lt;c&gt;</pre>'


# ---------------------------------------------------------------------------------------------------------
# The Airflow layer's pure parts: channels and the webhook's address

def test_channels_from_options():
    from hbase_migration.operators.alerts import Channel, channels_from

    assert channels_from({}) == ([], [])
    both = channels_from({"alert_smtp_conn_id": "smtp_x", "alert_email_to": "a@x.org; b@x.org",
                          "alert_email_from": "", "alert_webhook_conn_id": "hook"})
    assert both == ([Channel("smtp", "smtp_x", ("a@x.org", "b@x.org"), None), Channel("webhook", "hook")], [])
    assert [c.name for c in both[0]] == ["smtp:smtp_x", "webhook:hook"]
    channels, problems = channels_from({"alert_smtp_conn_id": "smtp_x", "alert_webhook_conn_id": "hook"})
    assert channels == [Channel("webhook", "hook")]
    assert problems == ["[hbase_migration] alert_smtp_conn_id is 'smtp_x' but alert_email_to is empty: name the "
                        "recipients (comma-separated); no mail is sent"]
    assert channels_from({"alert_email_to": "a@x.org"})[1] == [
        "[hbase_migration] alert_email_to is set but alert_smtp_conn_id is empty: name the SMTP connection; no mail "
        "is sent"]
    assert channels_from({"alert_smtp_conn_id": "s", "alert_email_to": "oncall"})[1] == [
        "[hbase_migration] alert_email_to holds oncall, not mail addresses; no mail is sent"]


def test_webhook_target_token_in_path_is_never_shown():
    from hbase_migration.operators.webhook import webhook_target

    t = webhook_target("hook", "http", "https://hooks.slack.com", None, None, "T0/B0/secret",
                       {"endpoint": "/services/", "token_in_path": True})
    assert t.url == "https://hooks.slack.com/services/T0/B0/secret"
    assert t.headers == {"Content-Type": "application/json"}
    assert t.shown == "https://hooks.slack.com"
    assert t.redact(f"Max retries exceeded with url: /services/T0/B0/secret ({t.url})") == (
        "Max retries exceeded with url: <redacted> (<redacted>)")
    assert t.timeout_s == 10.0


def test_webhook_target_bearer_token_host_and_port():
    from hbase_migration.operators.webhook import webhook_target

    t = webhook_target("hook", "http", "chat.example", "http", 8065, "tok", {"endpoint": "hooks/abc",
                                                                             "headers": {"X-Team": "dba"},
                                                                             "timeout_s": 3})
    assert t.url == "http://chat.example:8065/hooks/abc"
    assert t.headers == {"Content-Type": "application/json", "X-Team": "dba", "Authorization": "Bearer tok"}
    assert t.shown == "http://chat.example:8065" and t.timeout_s == 3.0
    assert webhook_target("h", "http", "https://x.example/in", None, None, None, {}).url == "https://x.example/in"


@pytest.mark.parametrize("conn_type, host, password, extra, message", [
    ("smtp", "x", None, {}, "has conn_type 'smtp': make it an 'http' connection"),
    ("http", "", None, {}, "has no host: set it to the receiver's URL"),
    ("http", "ftp://x", None, {}, "host must be an http(s) URL or a host name"),
    ("http", "x", None, {"token_in_path": True}, "token_in_path is set but the password (the token) is empty"),
    ("http", "x", "t", {"token_in_path": "yes"}, "extra token_in_path must be true or false"),
    ("http", "x", None, {"url": "y"}, "unknown extra url (known: endpoint, token_in_path, headers, timeout_s)"),
    ("http", "x", None, {"headers": {"a": 1}}, "extra headers must be an object of strings"),
    ("http", "x", None, {"timeout_s": 0}, "extra timeout_s must be a positive number of seconds"),
])
def test_webhook_target_refuses_a_connection_that_cannot_work(conn_type, host, password, extra, message):
    from hbase_migration.operators.webhook import WebhookError, webhook_target

    with pytest.raises(WebhookError) as err:
        webhook_target("hook", conn_type, host, None, None, password, extra)
    assert message in str(err.value) and "'hook'" in str(err.value)
