"""Migration, cut-over and rollback end to end, each through `airflow dags test`, against minihbase dc1 -> dc2,
with the approvals given through Airflow's REST API (an `airflow api-server` on the same metadata database, as an
operator's script would answer the Required Actions), and every cell compared independently (a plain Thrift2
client of HBase's IDL) at each step:

1. `hbase_table_migration` with a live writer (puts, new versions, old-timestamp puts, row/column/version
   deletes) during the copy and the catch-up;
2. a cut-over rejected through the REST API: undone (source writable, reverse peer removed, forward peer kept);
   then live writers again, and `hbase_cutover`: when it asks "Clients switched to the target?", the source is
   READONLY (the writers' puts are refused with HBase's error), every acknowledged edit is on the target, the
   reverse peer is ENABLED; the clients then write to the target, and the approval is given by REST;
3. afterwards: the forward peer is gone, the source writable again, and the target's writes reach the source
   through the reverse peer; both sides equal;
4. `hbase_rollback`: at its question the target is READONLY; approved by REST; the reverse peer is gone, the
   source takes writes again; both sides equal.
"""
from __future__ import annotations

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from minihbase.zookeeper import free_port
from tests.airflow_home import Hitl, api_server, make_home
from tests.dags.airflow_run import REPO, connections_env
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow]

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def dags_test(dag_id: str, conf: dict, env: dict, log_path: Path) -> subprocess.Popen:
    out = open(log_path, "w")
    return subprocess.Popen([AIRFLOW, "dags", "test", dag_id, "-c", json.dumps(conf)], cwd=REPO, env=env, stdout=out,
                            stderr=subprocess.STDOUT)


def tail(path: Path, n: int = 80) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def put_rows(endpoint_cluster, table: str, rows: list[bytes]) -> None:
    conn = endpoint_cluster.connection()
    try:
        conn.table(table).put  # noqa: B018 - the table exists
        with conn.table(table).batch(batch_size=100) as b:
            for r in rows:
                b.put(r, {b"profile:a": b"client-" + r})
    finally:
        conn.close()


def present(cluster, table: str, rows: list[bytes]) -> bool:
    conn = cluster.connection()
    try:
        return len(conn.table(table).rows(rows)) == len(rows)
    finally:
        conn.close()


def differences(dc1_ep: dict, dc2_ep: dict, tables) -> dict:
    from demo.workload import Thrift2, compare

    src, dst = Thrift2(dc1_ep), Thrift2(dc2_ep)
    try:
        return {t.name: compare(src, dst, t.name).as_dict() for t in tables}
    finally:
        src.close()
        dst.close()


def all_equal(dc1_ep, dc2_ep, tables):
    diff = differences(dc1_ep, dc2_ep, tables)
    return diff if all(d["differences"] == 0 and d["source_rows"] > 0 for d in diff.values()) else None


def readonly(cluster, tables) -> dict:
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.migration.freeze import readonly_states

    return readonly_states(cluster_from_text("c", cluster.connection_json), [t.name for t in tables])


def peer(cluster, peer_id: str):
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.replication import peer_admin

    with peer_admin(cluster_from_text("c", cluster.connection_json)) as admin:
        return admin.get_peer(peer_id)


def test_migrate_cut_over_and_roll_back_with_rest_approvals(tmp_path, minihbase_pair):
    from demo.run import create_source_tables, wait_for_catch_up
    from demo.workload import LiveWriter, Thrift2, load, sample_tables
    from hbase_migration.ledger.store import Ledger

    dc1, dc2 = minihbase_pair
    ep1, ep2 = dc1.endpoints, dc2.endpoints
    tables = sample_tables(3000)
    create_source_tables(ep1, tables)
    client = Thrift2(ep1)
    for t in tables:
        load(client, t)
    client.close()
    ledger_path = tmp_path / "ledger.db"
    ledger_url = f"sqlite:///{ledger_path}"
    env, passwords = make_home(tmp_path / "airflow")
    env.update(connections_env(dc1, dc2, ledger_path))
    server = ExitStack()
    api = Hitl(server.enter_context(api_server(env, free_port(), tmp_path / "api-server.log")), "admin",
               passwords["admin"])
    writer = None
    try:
        # 1. The migration, a live writer until the catch-up has drained (as the demo does).
        writer = LiveWriter(lambda: Thrift2(ep1), tables, ops_per_second=30).start()
        log = tmp_path / "migration.log"
        migration = dags_test("hbase_table_migration", {
            "tables": [t.name for t in tables], "peer_id": "cut", "expected_copy_s": 600, "recompare_sleep_s": 3,
            "repair": True}, env, log)
        wait_for_catch_up(ledger_url, "manual__", 900, migration)
        stats = writer.stop()
        assert migration.wait(timeout=900) == 0, tail(log)
        assert stats.errors == 0 and stats.puts > 0, stats
        with Ledger.open(ledger_url) as ledger:
            migration_run = next(r for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
        assert migration_run["status"] == "success"
        wait_for(lambda: all_equal(ep1, ep2, tables), 180, "both sides equal after the migration", interval=2)

        # 2a. A cut-over called off: rejected through the REST API. The source is writable again, the reverse
        # peer gone, the forward peer as it was; the ledger says the run failed at its approval.
        log = tmp_path / "cutover-rejected.log"
        rejected = dags_test("hbase_cutover", {"migration_run_id": migration_run["run_id"], "idle_window_s": 10,
                                               "recompare_sleep_s": 1}, env, log)
        rejected_run, _ = api.wait_for_question("hbase_cutover", "approve_clients_switched", 900, rejected, log)
        assert readonly(dc1, tables) == {t.name: True for t in tables}
        api.answer("hbase_cutover", rejected_run, "approve_clients_switched", "Reject")
        assert rejected.wait(timeout=600) == 0, tail(log)
        assert readonly(dc1, tables) == {t.name: False for t in tables}
        assert peer(dc2, "cut_rev") is None and peer(dc1, "cut").enabled is True
        with Ledger.open(ledger_url) as ledger:
            called_off = ledger.run_summary(rejected_run)
        assert called_off["run"]["status"] == "failed"
        assert called_off["phases"]["*"]["approval"]["status"] == "failed"
        assert "rejected at approve_clients_switched" in called_off["phases"]["*"]["approval"]["detail"]
        answer = api.detail("hbase_cutover", rejected_run, "approve_clients_switched")
        assert answer["chosen_options"] == ["Reject"] and answer["responded_by_user"]["name"] == "admin"
        assert [n["state"] for n in called_off["peer"]["notes"]] == ["ENABLED", "REMOVED"]
        put_rows(dc1, "users", [b"after-reject-0001"])  # the clients carry on with the source

        # 2b. The cut-over, clients writing to the source until it is frozen.
        writer = LiveWriter(lambda: Thrift2(ep1), tables, ops_per_second=30, seed=11).start()
        log = tmp_path / "cutover.log"
        cutover = dags_test("hbase_cutover", {"migration_run_id": migration_run["run_id"], "idle_window_s": 10,
                                              "recompare_sleep_s": 1}, env, log)
        cut_run, question = api.wait_for_question("hbase_cutover", "approve_clients_switched", 900, cutover, log)
        stats = writer.stop()
        assert question["subject"] == "Clients switched to the target?"
        assert question["options"] == ["Approve", "Reject"] and question["response_received"] is False
        assert "the source (hbase_source) is READONLY" in question["body"]
        # The writers were refused once the source froze, with HBase's text; everything acknowledged is on the
        # target (the final drain and verification passed), and the reverse peer is ready.
        assert stats.errors > 0 and "region is read only" in stats.last_error, stats
        assert readonly(dc1, tables) == {t.name: True for t in tables}
        assert all_equal(ep1, ep2, tables)
        reverse = peer(dc2, "cut_rev")
        assert reverse is not None and reverse.enabled is True
        # The clients move: they write to the target (the source refuses the reverse peer's edits while frozen).
        after_cut = [b"after-cut-%04d" % i for i in range(50)]
        put_rows(dc2, "users", after_cut)
        answered = api.answer("hbase_cutover", cut_run, "approve_clients_switched", "Approve")
        assert answered["chosen_options"] == ["Approve"] and answered["responded_by"]["name"] == "admin"
        assert cutover.wait(timeout=600) == 0, tail(log)

        # 3. After the cut-over: forward peer gone, source writable, the target's writes reach the source.
        assert peer(dc1, "cut") is None
        assert readonly(dc1, tables) == {t.name: False for t in tables}
        wait_for(lambda: present(dc1, "users", after_cut), 180, "the target's writes on the source", interval=1)
        more = [b"after-cut-more-%04d" % i for i in range(20)]
        put_rows(dc2, "users", more)
        wait_for(lambda: present(dc1, "users", more), 120, "later target writes on the source", interval=1)
        wait_for(lambda: all_equal(ep1, ep2, tables), 180, "both sides equal after the cut-over", interval=2)
        with Ledger.open(ledger_url) as ledger:
            cut_summary = ledger.run_summary(cut_run)
        assert cut_summary["run"]["status"] == "success"
        phases = cut_summary["phases"]["*"]
        for phase in ("check", "freeze", "final_drain", "reverse_peer", "approval", "remove_peer", "unfreeze"):
            assert phases[phase]["status"] == "success", (phase, phases)
        assert json.loads(phases["approval"]["detail"])["responded_by"] == "admin"
        assert all(v[-1]["clean"] for v in cut_summary["verification"].values())
        assert [n["state"] for n in cut_summary["peer"]["notes"]] == ["ENABLED", "REMOVED"]

        # 4. The rollback.
        log = tmp_path / "rollback.log"
        rollback = dags_test("hbase_rollback", {"cutover_run_id": cut_run, "idle_window_s": 10,
                                                "recompare_sleep_s": 1}, env, log)
        rb_run, question = api.wait_for_question("hbase_rollback", "approve_clients_back", 900, rollback, log)
        assert question["subject"] == "Clients switched back to the source?"
        assert readonly(dc2, tables) == {t.name: True for t in tables}
        assert readonly(dc1, tables) == {t.name: False for t in tables}
        assert all_equal(ep1, ep2, tables)
        api.answer("hbase_rollback", rb_run, "approve_clients_back", "Approve")
        assert rollback.wait(timeout=600) == 0, tail(log)
        assert peer(dc2, "cut_rev") is None
        assert all_equal(ep1, ep2, tables)
        back = [b"after-rollback-%04d" % i for i in range(10)]
        put_rows(dc1, "users", back)  # the source is writable again
        assert present(dc1, "users", back)
        with Ledger.open(ledger_url) as ledger:
            rb_summary = ledger.run_summary(rb_run)
        assert rb_summary["run"]["status"] == "success"
        for phase in ("check", "freeze", "unfreeze", "final_drain", "approval", "remove_peer"):
            assert rb_summary["phases"]["*"][phase]["status"] == "success", (phase, rb_summary["phases"])
    finally:
        if writer is not None:
            writer.stop()
        server.close()
