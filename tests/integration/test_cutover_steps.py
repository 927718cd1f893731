"""The cut-over's steps against minihbase dc1 -> dc2 with a real run ledger, outside a DAG run:

* the final drain with writes frozen: a peer ships a backlog (so its last shipped edit's age, frozen in HBase
  2.x's gauge once nothing more is written, sits above max_lag_ms), the source is frozen, and the drained gate
  still passes once the counters stayed frozen for idle_window_s. Before the drain fix this never passed: the
  stale age was judged over the last K polls only, which span less than the idle window;
* bad input refused before anything changes: a run not in the ledger, not finished, not verified clean, tables
  not part of it, a reverse peer id taken by another config (the source is not frozen), a rollback without a
  reverse peer.
"""
from __future__ import annotations

import time
import uuid

import pytest
from airflow.sdk.exceptions import AirflowFailException

from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.ledger.store import Ledger
from hbase_migration.migration.cutover import SwitchRefused
from hbase_migration.migration.freeze import readonly_states
from hbase_migration.migration.preflight import migration_peer_config
from hbase_migration.operators import cutover_steps
from hbase_migration.operators.cutover import (
    CutoverCheckOperator,
    FinalDrainSensor,
    RollbackCheckOperator,
    SetReadOnlyOperator,
)
from hbase_migration.operators.replication import AddPeerOperator, EnablePeerOperator, RemovePeerOperator
from hbase_migration.replication import peer_admin
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def env(minihbase_pair, monkeypatch, tmp_path):
    dc1, dc2 = minihbase_pair
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", dc1.connection_json)
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", dc2.connection_json)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", url)
    table = "cut_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=[b"m"])
    peer_id = "cut_" + uuid.uuid4().hex[:6]
    AddPeerOperator(task_id="add", peer_id=peer_id, tables=[table]).execute({})
    yield dc1, dc2, table, peer_id, url
    for c in (dc1, dc2):
        c.alter_table(table, readonly=False)
    src = cluster_from_text("source", dc1.connection_json)
    with peer_admin(src) as admin:
        if admin.get_peer(peer_id) is not None:
            RemovePeerOperator(task_id="rm", peer_id=peer_id).execute({})


def write(cluster, table: str, rows: list[bytes]) -> None:
    conn = cluster.connection()
    with conn.table(table).batch(batch_size=500) as b:
        for r in rows:
            b.put(r, {b"d:v": r})
    conn.close()


def missing(cluster, table: str, rows: list[bytes]) -> list[bytes]:
    conn = cluster.connection()
    try:
        return sorted(set(rows) - {r for r, _ in conn.table(table).rows(rows)})
    finally:
        conn.close()


def test_final_drain_with_writes_frozen_passes_on_a_stale_age(env):
    dc1, dc2, table, peer_id, _ = env
    rows = [b"%s%05d" % (b"am"[i % 2:i % 2 + 1], i) for i in range(2000)]
    write(dc1, table, rows)  # the peer is DISABLED: the burst waits in the WALs
    time.sleep(4)  # so the last edit is ~4 s old when it ships: the frozen gauge then stays above max_lag_ms
    EnablePeerOperator(task_id="en", peer_id=peer_id).execute({})
    SetReadOnlyOperator(task_id="freeze", conn_id="hbase_source", tables=[table], readonly=True).execute({})

    sensor = FinalDrainSensor(task_id="final_drain", peer_id=peer_id, max_lag_ms=2_000, stable_samples=3,
                              idle_window_s=6)  # the DAG's shape scaled down: K polls span less than the window
    verdicts, polled_at = [], []

    def poke() -> bool:
        polled_at.append(time.time())
        verdicts.append(sensor.poke({}))
        return verdicts[-1]

    wait_for(poke, 90, "the final drain with writes frozen", interval=1)
    assert verdicts[-1] is True, "never drained with writes frozen (stale age never believed idle)"
    assert missing(dc2, table, rows) == []
    ages = [q["age_ms"] for r in sensor._history[-1]["servers"] for q in r["queues"]]
    assert max(ages) > 2_000, f"the gauge was not stale above max_lag_ms ({ages}): the test proves nothing"
    # ... so the gate believed it only after the counters had stayed frozen for the idle window
    assert polled_at[-1] - polled_at[0] >= 6 and not any(verdicts[:-1])


# ------------------------------------------------------------------------------------------------ refusals

def migration_run(url: str, dc1, dc2, table: str, peer_id: str, *, status: str = "success", clean: bool = True,
                  run_id: str = "manual__mig") -> str:
    src, dst = cluster_from_text("s", dc1.connection_json), cluster_from_text("t", dc2.connection_json)
    with Ledger.open(url) as ledger:
        ledger.start_run(run_id, "hbase_table_migration", "manual", src.cluster_key, dst.cluster_key, peer_id, [table],
                         {"versions": None, "start_time_ms": None, "end_time_ms": None})
        ledger.verification(run_id, table, window_start_ms=0, window_end_ms=1000, source_rows=10, target_rows=10,
                            matching=10 if clean else 9, content_different=0 if clean else 1, only_in_source=0,
                            only_in_target=0, verified_ms=1000)
        if status != "running":
            ledger.end_run(run_id, status)
    return run_id


def test_bad_input_is_refused_and_changes_nothing(env):
    dc1, dc2, table, peer_id, url = env
    EnablePeerOperator(task_id="en", peer_id=peer_id).execute({})
    go = {"switch_command": "true"}
    form = {"migration_run_id": "manual__nothing", **go}
    with pytest.raises(SwitchRefused, match="run 'manual__nothing' is not in the run ledger"):
        cutover_steps.open_cutover(form, "cut1", "hbase_cutover")

    migration_run(url, dc1, dc2, table, peer_id, status="running", run_id="manual__running")
    with pytest.raises(SwitchRefused, match="is 'running': only a run that finished"):
        cutover_steps.open_cutover({"migration_run_id": "manual__running", **go}, "cut2", "hbase_cutover")
    migration_run(url, dc1, dc2, table, peer_id, clean=False, run_id="manual__dirty")
    with pytest.raises(SwitchRefused, match=f"table {table}: the latest verification .* is not clean"):
        cutover_steps.open_cutover({"migration_run_id": "manual__dirty", **go}, "cut3", "hbase_cutover")
    run_id = migration_run(url, dc1, dc2, table, peer_id)
    with pytest.raises(SwitchRefused, match="table.s. other_table are not part of migration run"):
        cutover_steps.open_cutover({"migration_run_id": run_id, "only_tables": [table, "other_table"], **go}, "cut4",
                                   "hbase_cutover")

    # A reverse peer id taken on the target by another config: refused by the check, the source stays writable.
    taken = "taken_" + uuid.uuid4().hex[:4]
    dst = cluster_from_text("t", dc2.connection_json)
    with peer_admin(dst) as admin:
        admin.add_peer(taken, migration_peer_config(cluster_from_text("s", dc1.connection_json), ["elsewhere"]))
    try:
        opened = cutover_steps.open_cutover({"migration_run_id": run_id, "reverse_peer_id": taken, **go}, "cut5",
                                            "hbase_cutover")
        with pytest.raises(AirflowFailException) as e:
            CutoverCheckOperator(task_id="check", plan=opened["plan"], ledger_run_id="cut5", max_lag_ms=60_000,
                                 drain_timeout_s=30).execute({})
        assert f"reverse peer id {taken} is already taken on the target by another config" in str(e.value)
        assert str(e.value).startswith("cut-over refused, nothing was changed: ")
        assert readonly_states(cluster_from_text("s", dc1.connection_json), [table]) == {table: False}
        with Ledger.open(url) as ledger:
            assert ledger.run_summary("cut5")["phases"]["*"]["check"]["status"] == "failed"
    finally:
        with peer_admin(dst) as admin:
            admin.remove_peer(taken)

    # A rollback of a cut-over whose reverse peer does not exist (never made: the cut-over stopped at its check).
    opened = cutover_steps.open_cutover({"migration_run_id": run_id, **go}, "cut6", "hbase_cutover")
    rollback = cutover_steps.open_rollback({"cutover_run_id": "cut6", **go}, "rb1", "hbase_rollback")
    assert rollback["plan"]["reverse_peer_id"] == f"{peer_id}_rev" == opened["plan"]["reverse_peer_id"]
    with pytest.raises(AirflowFailException, match=f"rollback refused, nothing was changed: no reverse peer "
                                                   f"{peer_id}_rev on the target"):
        RollbackCheckOperator(task_id="check", plan=rollback["plan"], ledger_run_id="rb1").execute({})
    with pytest.raises(SwitchRefused, match="is not a cut-over run"):
        cutover_steps.open_rollback({"cutover_run_id": run_id, **go}, "rb2", "hbase_rollback")


def test_a_failed_cutover_records_what_it_left_for_its_alert(env):
    """A cut-over whose window died in the freeze (its task killed: the fence not lifted by the window itself) is
    undone by state_left_behind (the clients were not switched, says the ledger), which records its verdict in the
    ledger; the failure alert reads it there and tells the person what to run."""
    from hbase_migration.migration.alerts import ClusterRef, failed_run_alert, verdict_of
    from hbase_migration.migration.runspec import CUTOVER
    from hbase_migration.operators.cutover import record_phase

    dc1, dc2, table, peer_id, url = env
    EnablePeerOperator(task_id="en", peer_id=peer_id).execute({})
    run_id = migration_run(url, dc1, dc2, table, peer_id, run_id="manual__alerted")
    opened = cutover_steps.open_cutover({"migration_run_id": run_id, "switch_command": "true"}, "cut_alert",
                                        "hbase_cutover")
    record_phase("cut_alert", "window", "running")
    SetReadOnlyOperator(task_id="freeze", conn_id="hbase_source", tables=[table], readonly=True,
                        ledger_run_id="cut_alert").execute({})
    left = cutover_steps.state_left_behind("cut_alert", CUTOVER, opened["plan"], "hbase_source", "hbase_target",
                                           ["window"], approved=False)
    assert readonly_states(cluster_from_text("s", dc1.connection_json), [table]) == {table: False}  # undone
    with Ledger.open(url) as ledger:
        summary = ledger.run_summary("cut_alert")
    verdict = verdict_of(summary)
    assert verdict["advice"] == left["advice"] == (
        "the cutover was undone before the clients moved: they stay on the source, which is writable again; fix "
        f"the cause (the failed task's log) and trigger hbase_cutover again (migration_run_id={run_id})")
    assert verdict["failed_tasks"] == ["window"] and summary["run"]["status"] == "failed"
    alert = failed_run_alert(dag_id="hbase_cutover", dag_run_id="cut_alert", reason="task_failure",
                             task_id="window", map_index=-1, try_number=1, summary=summary, planned={},
                             source=ClusterRef("hbase_source", dc1.cluster_key),
                             target=ClusterRef("hbase_target", dc2.cluster_key), url=None, now_ms=0)
    lines = dict(alert.lines)
    assert lines["Run"] == (f"DAG hbase_cutover, DAG run cut_alert; migration run cut_alert in the ledger (cut-over "
                            f"of migration run {run_id})")
    assert lines["Action"] == verdict["advice"]
    assert lines["State"].startswith(f"source tables {table} unfrozen; reverse peer {peer_id}_rev absent (read by "
                                     "state_left_behind at ")
