"""Migration, cut-over and rollback end to end, each through `airflow dags test`, against minihbase dc1 -> dc2 (the
stand-in; the same cut-over and rollback run on real HBase in `make test`: test_cutover_end_to_end_realhbase.py),
with the approvals given through Airflow's REST API (an `airflow api-server` on the same metadata database, as an
operator's script would answer the Required Actions), and every cell compared independently (a plain Thrift2
client of HBase's IDL) at each step:

1. `hbase_table_migration` with a live writer (puts, new versions, old-timestamp puts, row/column/version
   deletes) during the copy and the catch-up;
2. a cut-over whose plan is rejected through the REST API: nothing changed (source writable, no reverse peer,
   forward peer kept); then clients that switch when told, and `hbase_cutover` approved through REST: no person
   after that; its switch command writes the switch file the clients watch; afterwards the forward peer is gone,
   the source writable again, every acknowledged write on the target, none accepted by both sides, and the
   target's writes reach the source through the reverse peer; both sides equal;
3. `hbase_rollback`, approved by REST before anything changes: its window fences the target, drains the reverse
   peer and runs the switch command back; the forward peer is re-created (ENABLED after the switch), the reverse
   peer is gone; both sides equal, and the source's writes reach the target.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from bedkit.zookeeper import free_port
from tests.airflow_home import Hitl, api_server, make_home
from tests.dags.airflow_run import REPO, connections_env
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.full]

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
            "repair": True, "bulk_loads": "none"}, env, log)
        wait_for_catch_up(ledger_url, "manual__", 900, migration)
        stats = writer.stop()
        assert migration.wait(timeout=900) == 0, tail(log)
        assert stats.errors == 0 and stats.puts > 0, stats
        with Ledger.open(ledger_url) as ledger:
            migration_run = next(r for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
        assert migration_run["status"] == "success"
        wait_for(lambda: all_equal(ep1, ep2, tables), 180, "both sides equal after the migration", interval=2)

        # 2a. A cut-over called off at its plan's approval: nothing changed.
        switch_file = tmp_path / "active-cluster"
        switch_file.write_text("dc1")
        switch_command = (f"{sys.executable} -c \"import os, pathlib; pathlib.Path({str(switch_file)!r}).write_text("
                          "'dc2' if (os.environ['HBASE_CUTOVER_PHASE'] == 'switch') == "
                          "(os.environ['HBASE_CUTOVER_KIND'] == 'cutover') else 'dc1')\"")
        conf = {"migration_run_id": migration_run["run_id"], "switch_command": switch_command, "idle_window_s": 10,
                "recompare_sleep_s": 1}
        log = tmp_path / "cutover-rejected.log"
        rejected = dags_test("hbase_cutover", conf, env, log)
        rejected_run, _ = api.wait_for_question("hbase_cutover", "approve_cutover", 900, rejected, log)
        api.answer("hbase_cutover", rejected_run, "approve_cutover", "Reject")
        assert rejected.wait(timeout=600) == 0, tail(log)
        assert readonly(dc1, tables) == {t.name: False for t in tables}
        assert peer(dc2, "cut_rev") is None and peer(dc1, "cut").enabled is True
        with Ledger.open(ledger_url) as ledger:
            called_off = ledger.run_summary(rejected_run)
        assert called_off["run"]["status"] == "failed"
        assert "rejected at approve_cutover" in called_off["phases"]["*"]["approval"]["detail"]
        answer = api.detail("hbase_cutover", rejected_run, "approve_cutover")
        assert answer["chosen_options"] == ["Reject"] and answer["responded_by_user"]["name"] == "admin"
        assert called_off["peer"]["notes"] == []

        # 2b. The cut-over, clients writing to the source until they are switched.
        from demo.switching_writer import SwitchingWriter, freeze_figures

        names = [t.name for t in tables]
        writer = SwitchingWriter(lambda n: Thrift2(ep1 if n == "dc1" else ep2), ("dc1", "dc2"), names, threads=3,
                                 ops_per_second=30, family={t.name: next(iter(t.families)).encode() for t in tables},
                                 switch_file=switch_file).start()
        log = tmp_path / "cutover.log"
        started = time.time()
        cutover = dags_test("hbase_cutover", conf, env, log)
        cut_run, question = api.wait_for_question("hbase_cutover", "approve_cutover", 900, cutover, log)
        assert question["subject"] == "Cut over now?"
        assert "Bulk loads: **none, as the migration run's operator attested**" in question["body"]  # its conf's
        answered = api.answer("hbase_cutover", cut_run, "approve_cutover", "Approve")
        assert answered["chosen_options"] == ["Approve"] and answered["responded_by"]["name"] == "admin"
        assert cutover.wait(timeout=1800) == 0, tail(log)
        assert switch_file.read_text() == "dc2"
        wait_for(lambda: any(a.cluster == "dc2" for a in writer.log.acks), 60, "the clients on the target")
        stats = writer.stop()
        writer = None
        assert freeze_figures(stats, "dc1", "dc2", since=started)["writes_accepted_by_both"] == 0
        assert any("region is read only" in r[2] for r in stats.refusals), stats.refusals[:3]

        # 3. After the cut-over: forward peer gone, source writable, the target's writes reach the source.
        assert peer(dc1, "cut") is None and peer(dc2, "cut_rev").enabled is True
        assert readonly(dc1, tables) == {t.name: False for t in tables}
        after_cut = [b"after-cut-%04d" % i for i in range(50)]
        put_rows(dc2, "users", after_cut)
        wait_for(lambda: present(dc1, "users", after_cut), 180, "the target's writes on the source", interval=1)
        wait_for(lambda: all_equal(ep1, ep2, tables), 180, "both sides equal after the cut-over", interval=2)
        with Ledger.open(ledger_url) as ledger:
            cut_summary = ledger.run_summary(cut_run)
        assert cut_summary["run"]["status"] == "success"
        phases = cut_summary["phases"]["*"]
        for phase in ("check", "approval", "reverse_peer", "window", "freeze", "final_drain", "bounded_check",
                      "switch", "enable_peer", "unfreeze", "remove_peer"):
            assert phases[phase]["status"] == "success", (phase, phases)
        assert json.loads(phases["approval"]["detail"])["responded_by"] == "admin"
        assert all(v[-1]["clean"] for v in cut_summary["verification"].values())
        assert [n["state"] for n in cut_summary["peer"]["notes"]] == ["DISABLED", "ENABLED", "REMOVED"]

        # 4. The rollback.
        log = tmp_path / "rollback.log"
        rollback = dags_test("hbase_rollback", {"cutover_run_id": cut_run, "idle_window_s": 10,
                                                "recompare_sleep_s": 1, "switch_command": switch_command}, env, log)
        rb_run, question = api.wait_for_question("hbase_rollback", "approve_rollback", 900, rollback, log)
        assert question["subject"] == "Roll back now?"
        assert peer(dc1, "cut") is None  # nothing changed before the approval
        api.answer("hbase_rollback", rb_run, "approve_rollback", "Approve")
        assert rollback.wait(timeout=1200) == 0, tail(log)
        assert switch_file.read_text() == "dc1"
        assert peer(dc2, "cut_rev") is None and peer(dc1, "cut").enabled is True
        assert readonly(dc2, tables) == {t.name: False for t in tables}
        assert all_equal(ep1, ep2, tables)
        back = [b"after-rollback-%04d" % i for i in range(10)]
        put_rows(dc1, "users", back)  # the source is writable again, and its writes reach the target
        wait_for(lambda: present(dc2, "users", back), 180, "the source's writes on the target", interval=1)
        with Ledger.open(ledger_url) as ledger:
            rb_summary = ledger.run_summary(rb_run)
        assert rb_summary["run"]["status"] == "success"
        for phase in ("check", "approval", "forward_peer", "window", "freeze", "final_drain", "bounded_check",
                      "switch", "unfreeze", "enable_peer", "remove_peer"):
            assert rb_summary["phases"]["*"][phase]["status"] == "success", (phase, rb_summary["phases"])
    finally:
        if writer is not None:
            writer.stop()
        server.close()
