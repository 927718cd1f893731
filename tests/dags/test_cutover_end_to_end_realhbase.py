"""Cut-over and rollback end to end on real HBase (the session's realhbase test bed, dc1 -> dc2), each through
`airflow dags test`, the approvals given through Airflow's REST API (an `airflow api-server` on the same metadata
database, as an operator's script would answer the Required Actions), with clients that switch clusters when told
(demo/switching_writer.py, told through a switch file: what `switch_command` writes) writing all along:

0. the finished migration the cut-over starts from: the tables on both clusters, the forward peer dc1 -> dc2
   ENABLED (the tables were empty when it was added, so no copy was needed), the run and its clean verification
   in the ledger (the migration DAG's own end-to-end test covers the migration);
1. (`make test-full`) a cut-over whose plan is rejected through the REST API: nothing changed (no reverse peer, the
   source writable, the forward peer as it was), the run failed at its approval;
2. the cut-over: the plan approved through REST before anything changes, then no person: reverse peer DISABLED,
   full verification, the window (READONLY fence, drain, bounded check, the switch command writes the switch file,
   the clients move), the reverse peer ENABLED, the source writable again, the verification after the switch, the
   forward peer retired. Every acknowledged write is on the target, none was accepted by the source after the
   target's first, and the target's writes reach the source;
3. `hbase_rollback`, the same window with the roles swapped: approved through REST before anything changes, then
   no person: the forward peer re-created DISABLED, the target fenced (READONLY), the reverse peer drained, the
   bounded check, the switch command sends the clients back; the target writable again, the forward peer ENABLED
   (the target current), the verification after the switch, the reverse peer removed. Every acknowledged write on
   the source, none accepted by the target after the source's first, the source's writes reach the target;
4. a second `hbase_cutover` of the same migration run (no new migration: it finds the forward peer the rollback
   re-created), the writer still writing: every acknowledged write of the whole test on the target (the side that
   took writes last), none accepted by both sides at any switch.

Each run's phases are read back from the ledger. Timings are printed, never asserted.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from bedkit.zookeeper import free_port
from tests.airflow_home import Hitl, api_server, make_home
from tests.dags.airflow_run import REPO, connections_env
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase]

AIRFLOW = str(Path(sys.executable).parent / "airflow")


class Conn:
    """What `connections_env` needs of a cluster: its connection as JSON."""

    def __init__(self, endpoint: dict):
        self.connection_json = json.dumps(endpoint["connection"])


def dags_test(dag_id: str, conf: dict, env: dict, log_path: Path) -> subprocess.Popen:
    out = open(log_path, "w")
    return subprocess.Popen([AIRFLOW, "dags", "test", dag_id, "-c", json.dumps(conf)], cwd=REPO, env=env, stdout=out,
                            stderr=subprocess.STDOUT)


def tail(path: Path, n: int = 80) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


# HexStringSplit's keys for 4 regions, as the shell's `{NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}` makes them
SPLITS = [b"40000000", b"80000000", b"c0000000"]


def finished_migration(ledger_url: str, eps: dict, clusters: dict, pair, tables: list[str], peer_id: str) -> str:
    """The state a finished migration leaves: tables on both sides (scope 1, 4 regions; created through Thrift2,
    no shell JVM), the forward peer ENABLED, the run `success` with a clean verification per table in the
    ledger."""
    from hbase_migration.ledger.store import Ledger
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig

    for cluster in pair:
        for t in tables:
            cluster.create_table(t, {"f": {"replication_scope": 1}}, SPLITS)
    with peer_admin(clusters["dc1"]) as admin:
        admin.add_peer(peer_id, PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                       enabled=True)
    run_id = f"manual__migration_{peer_id}"
    with Ledger.open(ledger_url) as ledger:
        ledger.start_run(run_id, "hbase_table_migration", "manual", eps["dc1"]["cluster_key"],
                         eps["dc2"]["cluster_key"], peer_id, tables, {"versions": None,
                                                                                     "bulk_loads": "none"})
        for t in tables:
            ledger.verification(run_id, t, window_start_ms=0, window_end_ms=None, source_rows=0, target_rows=0,
                                matching=0, content_different=0, only_in_source=0, only_in_target=0)
        ledger.end_run(run_id, "success")
    return run_id


def readonly(cluster, tables) -> dict:
    from hbase_migration.migration.freeze import readonly_states

    return readonly_states(cluster, tables)


def peer(cluster, peer_id: str):
    from hbase_migration.replication import peer_admin

    with peer_admin(cluster) as admin:
        return admin.get_peer(peer_id)


def missing(cluster, log, accepted_before: float | None = None) -> list:
    from demo.switching_writer import lost_writes
    from hbase_migration.data.datapath import open_data_path

    with open_data_path(cluster) as path:
        return lost_writes(log, lambda t, keys: set(path.get_rows(t, keys).keys()), accepted_before)


def replication_warnings(workdir: Path, cluster: str, last: int = 6) -> str:
    """The last replication WARN/ERROR lines of each of a cluster's region servers: why a peer does not ship."""
    out = []
    for log in sorted((workdir / cluster / "logs").glob("rs*.log")):
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if (" WARN " in line or " ERROR " in line) and "eplication" in line]
        out += [f"{cluster}/{log.name}: {len(lines)} replication warning(s)"] + lines[-last:]
    return "\n".join(out)


@dataclass
class Bed:
    """A finished migration on the session's clusters (tables of its own, the forward peer ENABLED), an Airflow
    home whose connections name them, an API server answering the approvals, the switch file the clients read."""
    eps: dict
    clusters: dict
    tables: list
    peer_id: str
    ledger_url: str
    env: dict
    api: Hitl
    switch_file: Path
    migration_run: str
    workdir: Path  # the test bed's: each cluster's logs

    @property
    def switch_command(self) -> str:
        """Tells the clients where to write: the cut-over's switch (and a rollback's abort) to dc2, the rollback's
        switch (and a cut-over's abort) to dc1."""
        return (f"{sys.executable} -c \"import os, pathlib; pathlib.Path({str(self.switch_file)!r}).write_text("
                "'dc2' if (os.environ['HBASE_CUTOVER_PHASE'] == 'switch') == (os.environ['HBASE_CUTOVER_KIND'] == "
                "'cutover') else 'dc1')\"")

    def conf(self) -> dict:
        return {"migration_run_id": self.migration_run, "switch_command": self.switch_command,
                "recompare_sleep_s": 1, "idle_window_s": 10, "skew_margin_ms": 2000}

    def rollback_conf(self, cutover_run: str) -> dict:
        return {"cutover_run_id": cutover_run, "switch_command": self.switch_command, "recompare_sleep_s": 1,
                "idle_window_s": 10, "skew_margin_ms": 2000}


@pytest.fixture
def bed(tmp_path, realhbase, realhbase_pair):
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.replication import peer_admin

    eps = realhbase.endpoints()
    clusters = {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}
    tag = uuid.uuid4().hex[:5]
    # One table: each verification is a Spark job (about 45 s here), four per table in this test; several tables in
    # one window are shown by test_cutover_window_realhbase.py and bench/bench_cutover.py (3 x 50 regions).
    tables = [f"ce{tag}_users"]
    peer_id = f"ce{tag}"
    ledger_path = tmp_path / "ledger.db"
    ledger_url = f"sqlite:///{ledger_path}"
    switch_file = tmp_path / "active-cluster"
    switch_file.write_text("dc1")
    env, passwords = make_home(tmp_path / "airflow")
    env.update(connections_env(Conn(eps["dc1"]), Conn(eps["dc2"]), ledger_path))
    with ExitStack() as server:
        try:
            migration_run = finished_migration(ledger_url, eps, clusters, realhbase_pair, tables, peer_id)
            api = Hitl(server.enter_context(api_server(env, free_port(), tmp_path / "api-server.log")), "admin",
                       passwords["admin"])
            yield Bed(eps, clusters, tables, peer_id, ledger_url, env, api, switch_file, migration_run,
                      realhbase.workdir)
        finally:
            server.close()
            for cluster in clusters.values():
                with peer_admin(cluster) as admin:
                    for p in (peer_id, f"{peer_id}_rev"):
                        if admin.get_peer(p) is not None:
                            admin.remove_peer(p, force=True)
            for pair_cluster in realhbase_pair:  # through Thrift2, no shell JVM (READONLY or not)
                for t in tables:
                    pair_cluster.drop_table(t)


@pytest.mark.full  # make test: the approved cut-over and the rollback below; test_cutover_dags.py checks the branch
@pytest.mark.timeout(1800)
def test_a_cut_over_whose_plan_is_rejected_changes_nothing(tmp_path, bed):
    from hbase_migration.ledger.store import Ledger

    log = tmp_path / "cutover-rejected.log"
    rejected = dags_test("hbase_cutover", bed.conf(), bed.env, log)
    rejected_run, question = bed.api.wait_for_question("hbase_cutover", "approve_cutover", 900, rejected, log)
    assert question["subject"] == "Cut over now?" and bed.switch_command in question["body"]
    assert "Bulk loads: **none, as the migration run's operator attested**" in question["body"]  # issue 39
    bed.api.answer("hbase_cutover", rejected_run, "approve_cutover", "Reject")
    assert rejected.wait(timeout=600) == 0, tail(log)
    assert peer(bed.clusters["dc2"], f"{bed.peer_id}_rev") is None and peer(bed.clusters["dc1"], bed.peer_id).enabled
    assert readonly(bed.clusters["dc1"], bed.tables) == {t: False for t in bed.tables}
    with Ledger.open(bed.ledger_url) as ledger:
        called_off = ledger.run_summary(rejected_run)
    assert called_off["run"]["status"] == "failed"
    assert "rejected at approve_cutover" in called_off["phases"]["*"]["approval"]["detail"]
    assert called_off["peer"]["notes"] == []


def cut_over(bed, writer, tmp_path, name: str) -> tuple[str, dict, float]:
    """One approved hbase_cutover of the bed's migration run, the writer switching: (run id, ledger summary, when
    it started)."""
    from hbase_migration.ledger.store import Ledger

    log = tmp_path / f"{name}.log"
    started = time.time()
    cutover = dags_test("hbase_cutover", bed.conf(), bed.env, log)
    cut_run, question = bed.api.wait_for_question("hbase_cutover", "approve_cutover", 900, cutover, log)
    assert question["subject"] == "Cut over now?" and bed.switch_command in question["body"]
    answered = bed.api.answer("hbase_cutover", cut_run, "approve_cutover", "Approve")
    assert answered["chosen_options"] == ["Approve"]
    assert cutover.wait(timeout=2400) == 0, tail(log)
    print(f"{name} DAG run: {time.time() - started:.0f} s")
    assert bed.switch_file.read_text() == "dc2"
    wait_for(lambda: any(a.cluster == "dc2" and a.accepted > started for a in writer.log.acks), 60,
             "the clients on the target")
    with Ledger.open(bed.ledger_url) as ledger:
        cut = ledger.run_summary(cut_run)
    assert cut["run"]["status"] == "success", cut["run"]
    phases = cut["phases"]["*"]
    for phase in ("check", "approval", "reverse_peer", "window", "lag_gate", "live_pass", "freeze",
                  "final_drain", "bounded_check", "switch", "enable_peer", "unfreeze", "remove_peer"):
        assert phases[phase]["status"] == "success", (phase, phases.get(phase))
    for t in bed.tables:
        assert cut["phases"][t]["verify"]["status"] == "success"
        assert cut["phases"][t]["post_verify"]["status"] == "success"
    window = json.loads(phases["window"]["detail"])
    print(f"{name} window:", json.dumps({k: window[k] for k in ("steps", "freeze_s", "freeze_shares")}))
    assert [n["state"] for n in cut["peer"]["notes"]] == ["DISABLED", "ENABLED", "REMOVED"]
    assert peer(bed.clusters["dc1"], bed.peer_id) is None
    assert peer(bed.clusters["dc2"], f"{bed.peer_id}_rev").enabled is True
    assert readonly(bed.clusters["dc1"], bed.tables) == {t: False for t in bed.tables}
    return cut_run, cut, started


def every_write_so_far_on(bed, log, name: str, why: str) -> None:
    """The writes acknowledged until now (the writer's `log`) are on `name`: waited for, the writer going on and
    replication always trailing its newest writes."""
    until = time.time()
    try:
        wait_for(lambda: missing(bed.clusters[name], log, until) == [], 240, why, interval=3)
    except AssertionError as e:
        other = "dc2" if name == "dc1" else "dc1"
        raise AssertionError(f"{e}: {len(missing(bed.clusters[name], log, until))} missing\n"
                             + replication_warnings(bed.workdir, other)) from None


@pytest.mark.timeout(3600)  # make test's two workers share two cores: several times its quiet-machine time
@pytest.mark.parametrize("again", [False, pytest.param(True, marks=pytest.mark.full, id="again")])
def test_cut_over_roll_back_and_cut_over_again_on_real_hbase_with_rest_approvals(tmp_path, bed, again):
    """make test: the cut-over and the rollback. make test-full (`again`): then a second cut-over of the same
    migration run, no new migration (a third DAG run of 10 minutes under make test's load)."""
    from demo.switching_writer import SwitchingWriter, freeze_figures
    from demo.workload import Thrift2
    from hbase_migration.ledger.store import Ledger

    eps, clusters, tables, peer_id, ledger_url, env, api, switch_file = (
        bed.eps, bed.clusters, bed.tables, bed.peer_id, bed.ledger_url, bed.env, bed.api, bed.switch_file)
    writer = SwitchingWriter(lambda n: Thrift2(eps[n]), ("dc1", "dc2"), tables, threads=4, ops_per_second=20,
                             switch_file=switch_file).start()
    try:
        # 2. The cut-over: approved, then no person.
        cut_run, _cut, started = cut_over(bed, writer, tmp_path, "cut-over")
        figures = freeze_figures(writer.log, "dc1", "dc2", since=started)
        print("writer at the cut-over:", figures)
        assert figures["writes_accepted_by_both"] == 0, figures
        assert missing(clusters["dc2"], writer.log) == []
        every_write_so_far_on(bed, writer.log, "dc1", "every write so far on the source too (the reverse peer)")

        # 3. The rollback: approved before anything changes, then no person; the switch command sends the
        # clients back.
        log = tmp_path / "rollback.log"
        back = time.time()
        rollback = dags_test("hbase_rollback", bed.rollback_conf(cut_run), env, log)
        rb_run, question = api.wait_for_question("hbase_rollback", "approve_rollback", 900, rollback, log)
        assert question["subject"] == "Roll back now?" and bed.switch_command in question["body"]
        assert peer(clusters["dc1"], peer_id) is None  # nothing changed before the approval
        assert readonly(clusters["dc2"], tables) == {t: False for t in tables}
        api.answer("hbase_rollback", rb_run, "approve_rollback", "Approve")
        assert rollback.wait(timeout=2400) == 0, tail(log)
        print(f"rollback DAG run: {time.time() - back:.0f} s")
        assert switch_file.read_text() == "dc1"
        wait_for(lambda: any(a.cluster == "dc1" and a.accepted > back for a in writer.log.acks), 60,
                 "the clients on the source again")
        with Ledger.open(ledger_url) as ledger:
            rb = ledger.run_summary(rb_run)
        assert rb["run"]["status"] == "success", rb["run"]
        phases = rb["phases"]["*"]
        for phase in ("check", "approval", "forward_peer", "window", "lag_gate", "live_pass", "freeze", "final_drain",
                      "bounded_check", "switch", "unfreeze", "enable_peer", "remove_peer"):
            assert phases[phase]["status"] == "success", (phase, phases.get(phase))
        assert phases["unfreeze_source"]["status"] == "success"  # READONLY cut-over: already writable, left so
        for t in tables:
            assert rb["phases"][t]["verify"]["status"] == "success"
        window = json.loads(phases["window"]["detail"])
        print("rollback window:", json.dumps({k: window[k] for k in ("steps", "freeze_s", "freeze_shares")}))
        # The forward peer re-created DISABLED, ENABLED after the switch; the reverse peer removed.
        assert [(n["peer_id"], n["state"]) for n in rb["peer"]["notes"]] == [
            (peer_id, "DISABLED"), (peer_id, "ENABLED"), (f"{peer_id}_rev", "REMOVED")]
        assert peer(clusters["dc1"], peer_id).enabled is True and peer(clusters["dc2"], f"{peer_id}_rev") is None
        assert readonly(clusters["dc2"], tables) == {t: False for t in tables}
        figures = freeze_figures(writer.log, "dc2", "dc1", since=back)
        print("writer at the rollback:", figures)
        assert figures["writes_accepted_by_both"] == 0, figures
        assert any(r[0] == "dc2" and "region is read only" in r[2] for r in writer.log.refusals if r[1] > back)
        assert missing(clusters["dc1"], writer.log) == []
        every_write_so_far_on(bed, writer.log, "dc2", "every write so far on the target too (the forward peer again)")

        if not again:
            time.sleep(3)
            final = writer.stop()
            writer = None
            assert missing(clusters["dc1"], final) == []  # every acknowledged write of the test, on the last side
            every_write_so_far_on(bed, final, "dc2", "every write on the target too (the forward peer)")
            return
        # 4. Cut over again: the same migration run, no new migration.
        _again, second, started = cut_over(bed, writer, tmp_path, "second cut-over")
        assert second["run"]["params"]["migration_run_id"] == bed.migration_run
        figures = freeze_figures(writer.log, "dc1", "dc2", since=started)
        print("writer at the second cut-over:", figures)
        assert figures["writes_accepted_by_both"] == 0, figures
        time.sleep(3)
        final = writer.stop()
        writer = None
        assert missing(clusters["dc2"], final) == []  # every acknowledged write of the test, on the last side
        every_write_so_far_on(bed, final, "dc1", "every write on the source too (the reverse peer)")
    finally:
        if writer is not None:
            writer.stop()
