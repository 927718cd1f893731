"""The synchronous-replication cut-over driven by the toolkit's executor (`python -m hbase_migration sync-replication
run`, migration/sync_switch.py) on real HBase 3.x (realhbase with `REALHBASE_VERSION=3.0.0-alpha-4`; `make
test-sync-replication`). The CLI runs as an operator runs it, in its own process, the clusters given as Airflow
connections (AIRFLOW_CONN_DC1/DC2):

* the cut-over with a live writer (demo/switching_writer.py, clients that switch clusters when the switch command
  writes the switch file): the migration's asynchronous forward peer shipping dc1 -> dc2; `--kind setup` (the sync
  peer on both, dc2 STANDBY, dc1 ACTIVE) with the clients writing; the forward peer drained, then removed; `--kind
  planned` with the switch command: dc1 STANDBY (the fence), dc2 DOWNGRADE_ACTIVE, the clients switched, dc2
  ACTIVE. Every acknowledged write is on dc2; none accepted by dc1 after dc2's first; the write freeze measured
  from the writer's own acknowledgements. dc2's writes reach dc1 (the sync peer ships back): the rollback, the
  planned switch the other way, is run too, the clients back on dc1 with every write there. Bad starts: refused
  with exit 2 and one line, both clusters' states unchanged.
* the failover with every JVM of dc1 SIGKILLed mid-writes (the sync peer's asynchronous shipping disabled on dc1:
  only the remote WAL carries the writes): `--kind failover` takes dc2 to DOWNGRADE_ACTIVE and ends `pending` (the
  old source down); every acknowledged put is on dc2; dc1 started again, the same command finishes: dc1 STANDBY,
  dc2 ACTIVE.

Skipped with `check_support`'s reasons on a 2.x bed. Timings printed (one JSON line per test), never asserted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from demo.switching_writer import SwitchingWriter, freeze_figures, lost_writes
from tests.integration.test_sync_replication_realhbase import AckedWriter, dismantle, read_back, states
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow, pytest.mark.full,
              pytest.mark.timeout(1800)]  # the bed's start, a datacenter killed and started again

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bed(realhbase):
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.replication.sync_replication import check_support

    eps = realhbase.endpoints()
    clusters = {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}
    for ask_shells in (False, True):
        support = check_support(clusters["dc1"], clusters["dc2"], ask_shells=ask_shells)
        if not support.supported:
            pytest.skip(f"the test bed runs HBase {eps['dc1']['hbase_version']}, which cannot do synchronous "
                        f"replication: {'; '.join(support.reasons)}. Run it on HBase 3.x: make test-sync-replication")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update({f"AIRFLOW_CONN_{n.upper()}": json.dumps(eps[n]["connection"]) for n in ("dc1", "dc2")})
    return realhbase, eps, clusters, env


def cli(env, *args: str, timeout: float = 900) -> tuple[int, dict | None, str, float]:
    """`python -m hbase_migration <args> --json` in its own process: (exit, the JSON document or None, stderr,
    seconds)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", *args, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    seconds = round(time.monotonic() - started, 1)
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return proc.returncode, data, proc.stderr, seconds


def create_table(clusters, table: str, regions: int = 4) -> None:
    from hbase_migration.clusters import channels

    split = f", {{NUMREGIONS => {regions}, SPLITALGO => 'HexStringSplit'}}" if regions > 1 else ""
    for cluster in clusters.values():
        channels.shell(cluster, [f"create '{table}', {{NAME => 'f', REPLICATION_SCOPE => 1}}{split}"], timeout_s=900)


def rows_on(endpoint: dict):
    """read_rows(table, keys) -> the keys present on that cluster (Thrift2 getMultiple)."""
    def read_rows(table: str, keys: list[bytes]) -> set[bytes]:
        return set(read_back(endpoint, table, keys))
    return read_rows


def both_states(clusters, peer: str) -> tuple[str | None, str | None]:
    return states(clusters["dc1"], peer), states(clusters["dc2"], peer)


def assert_refused(env, clusters, peer: str, args: list[str], expected: str, before: tuple) -> str:
    """The CLI refuses with exit 2 and one line naming `expected`; both clusters' states as they were."""
    rc, _, err, _ = cli(env, "sync-replication", "run", "--peer-id", peer, *args)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and expected in lines[0], (rc, err)
    assert both_states(clusters, peer) == before
    return lines[0]


def test_sync_cutover_with_a_live_writer_loses_nothing_and_rolls_back_the_other_way(bed, tmp_path):
    from demo.workload import Thrift2

    realhbase, eps, clusters, env = bed
    tag = uuid.uuid4().hex[:6]
    table, peer, forward = f"sc{tag}", f"sc{tag}", f"fw{tag}"
    switch_file = tmp_path / "active"
    switch_file.write_text("dc1")
    switch = f"sh -c 'echo dc2 > {switch_file}'"
    back = f"sh -c 'echo dc1 > {switch_file}'"
    figures: dict = {"hbase": eps["dc1"]["hbase_version"]}
    writer = None
    try:
        create_table(clusters, table)
        # the migration's forward peer (asynchronous, ENABLED), as the cut-over finds it
        rc, _, err, figures["forward_peer_add_s"] = cli(env, "peer", "add", "--source", "dc1", "--target", "dc2",
                                                        "--tables", table, "--peer-id", forward, "--state",
                                                        "enabled")
        assert rc == 0, err
        writer = SwitchingWriter(lambda n: Thrift2(eps[n]), ("dc1", "dc2"), [table], threads=3, ops_per_second=60,
                                 switch_file=switch_file).start()
        wait_for(lambda: len(writer.log.acks) >= 100, 300, "100 writes acknowledged by dc1")

        # setup, the clients writing to dc1 all along
        rc, report, err, figures["setup_cli_s"] = cli(env, "sync-replication", "run", "--source", "dc1", "--target",
                                                      "dc2", "--peer-id", peer, "--kind", "setup", "--tables", table)
        assert rc == 0, (err, report)
        assert report["outcome"] == "done" and report["final"] == {"source": "ACTIVE", "target": "STANDBY"}, report
        figures["setup_steps"] = {s["action"]: s["seconds"] for s in report["steps"]}
        assert both_states(clusters, peer) == ("ACTIVE", "STANDBY")
        acks_at_setup = len(writer.log.acks)
        wait_for(lambda: len(writer.log.acks) >= acks_at_setup + 150, 300, "150 synchronous writes on dc1")

        # the forward peer has carried everything from before the sync peer (the toolkit's /jmx drain check, as an
        # operator runs it), then it goes. With a sync peer each region server writes two WAL groups (the sync
        # peer's tables get a WAL of their own): a caught-up queue holds 2 WALs (real 3.0.0-alpha-4). One more is
        # refused: the toolkit reads the layout (the servers' /conf, the sync peer) and names both numbers
        rc, _, err, _ = cli(env, "lag", "--source", "dc1", "--peer-id", forward, "--caught-up-queue-size", "3")
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and "caught_up_queue_size 3" in lines[0] and "at most 2" in lines[0], err
        figures["caught_up_3_refused"] = lines[0][:300]
        rc, lag, err, figures["forward_drain_s"] = cli(env, "lag", "--source", "dc1", "--peer-id", forward,
                                                       "--watch", "--watch-timeout-s", "300",
                                                       "--caught-up-queue-size", "2")
        figures["forward_drain"] = (lag or {}).get("decision")
        assert rc == 0, (err[-500:], lag)
        rc, _, err, _ = cli(env, "peer", "remove", "--source", "dc1", "--peer-id", forward)
        assert rc == 0, err

        # bad starts: refused, nothing changed
        before = both_states(clusters, peer)
        figures["refused"] = [
            assert_refused(env, clusters, peer, ["--source", "dc1", "--target", "dc2", "--kind", "failover"],
                           "the source answers and is ACTIVE", before),
        ]

        # the planned switch with the clients switched by the switch command
        acks_before = len(writer.log.acks)
        rc, report, err, figures["planned_cli_s"] = cli(env, "sync-replication", "run", "--source", "dc1",
                                                        "--target", "dc2", "--peer-id", peer, "--kind", "planned",
                                                        "--switch-command", switch)
        assert rc == 0, (err, report)
        assert report["final"] == {"source": "STANDBY", "target": "ACTIVE"}, report
        figures["planned_steps"] = {s["action"]: s["seconds"] for s in report["steps"]}
        figures["executor_freeze_s"] = report["freeze_s"]
        wait_for(lambda: sum(a.cluster == "dc2" for a in writer.log.acks) >= 100, 300, "100 writes on dc2")
        switched = freeze_figures(writer.log, "dc1", "dc2")
        figures.update(writer_freeze_s=switched["write_freeze_s"],
                       writes_accepted_by_both=switched["writes_accepted_by_both"],
                       refusals=len(writer.log.refusals), fence_refusals=[r[2][:160] for r in writer.log.refusals[:2]])
        assert switched["writes_accepted_by_both"] == 0
        assert len(writer.log.acks) > acks_before
        assert any("STANDBY" in error for _, _, error in writer.log.refusals), writer.log.refusals[:3]  # the fence
        # every write acknowledged so far is on dc2 (read now: it is ACTIVE; a STANDBY cluster refuses reads)
        checked_at = time.time()
        lost_dc2 = lost_writes(writer.log, rows_on(eps["dc2"]), accepted_before=checked_at)
        figures.update(checked_on_dc2=sum(a.accepted < checked_at for a in writer.log.acks), lost_on_dc2=len(lost_dc2))
        assert not lost_dc2, lost_dc2[:5]
        # dc1's sync peer is STANDBY now: HBase writes no .syncrep WAL group for it there, so the layout allows 1
        rc, _, err, _ = cli(env, "lag", "--source", "dc1", "--peer-id", peer, "--caught-up-queue-size", "2")
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and "at most 1 WAL(s)" in lines[0], err
        figures["caught_up_2_refused_on_standby"] = lines[0][:300]

        # rollback: the planned switch the other way; the clients back on dc1
        first_back = time.time()
        rc, report, err, figures["rollback_cli_s"] = cli(env, "sync-replication", "run", "--source", "dc2",
                                                         "--target", "dc1", "--peer-id", peer, "--kind", "planned",
                                                         "--switch-command", back)
        assert rc == 0, (err, report)
        assert report["final"] == {"source": "STANDBY", "target": "ACTIVE"}, report
        figures["rollback_freeze_executor_s"] = report["freeze_s"]
        figures["rollback_steps"] = {s["action"]: s["seconds"] for s in report["steps"]}
        wait_for(lambda: sum(a.cluster == "dc1" and a.accepted > first_back for a in writer.log.acks) >= 50, 300,
                 "50 writes on dc1 again")
        log = writer.stop()
        writer = None
        returned = freeze_figures(log, "dc2", "dc1", since=first_back - 1)
        figures.update(rollback_writer_freeze_s=returned["write_freeze_s"],
                       rollback_writes_accepted_by_both=returned["writes_accepted_by_both"])
        assert returned["writes_accepted_by_both"] == 0
        assert both_states(clusters, peer) == ("ACTIVE", "STANDBY")

        # every acknowledged write, on either cluster, is on dc1, where the clients ended
        lost_dc1 = lost_writes(log, rows_on(eps["dc1"]))
        figures.update(acknowledged=len(log.acks), on_dc1_acks=sum(a.cluster == "dc1" for a in log.acks),
                       on_dc2_acks=sum(a.cluster == "dc2" for a in log.acks), lost_on_dc1=len(lost_dc1),
                       writer_errors=len(log.errors), writer_error_samples=[(c, e[:200]) for c, _, e in log.errors[:3]],
                       rollback_refusals=[(c, e[:160]) for c, w, e in log.refusals if w > first_back][:3])
        assert not lost_dc1, lost_dc1[:5]
    finally:
        print("sync replication cut-over (executor):", json.dumps(figures, sort_keys=True, default=str))
        if writer is not None:
            writer.stop()
        cli(env, "peer", "remove", "--source", "dc1", "--peer-id", forward)
        dismantle(realhbase, clusters, table, peer)


def test_failover_through_the_executor_with_the_source_datacenter_killed(bed):
    from hbase_migration.clusters import channels

    realhbase, eps, clusters, env = bed
    tag = uuid.uuid4().hex[:6]
    table, peer = f"sf{tag}", f"sf{tag}"
    figures: dict = {"hbase": eps["dc1"]["hbase_version"]}
    writer = None
    command = ["sync-replication", "run", "--source", "dc1", "--target", "dc2", "--peer-id", peer, "--kind",
               "failover", "--read-timeout", "90"]
    try:
        create_table(clusters, table, regions=1)
        rc, report, err, figures["setup_cli_s"] = cli(env, "sync-replication", "run", "--source", "dc1", "--target",
                                                      "dc2", "--peer-id", peer, "--kind", "setup", "--tables", table)
        assert rc == 0 and report["final"] == {"source": "ACTIVE", "target": "STANDBY"}, (err, report)
        # the ordinary shipping off: nothing reaches dc2 but through the remote WAL on its HDFS
        channels.shell(clusters["dc1"], [f"disable_peer '{peer}'"], timeout_s=600)

        writer = AckedWriter(eps["dc1"], table).start()
        wait_for(lambda: writer.count() >= 1000, 300, "1000 puts acknowledged by the ACTIVE source")
        killed = realhbase.kill_cluster("dc1")
        writer.wait_stopped()
        acked, unacked = list(writer.acked), list(writer.unacked)
        figures.update(killed=len(killed), acknowledged=len(acked), in_flight=len(unacked))

        rc, report, err, figures["failover_cli_s"] = cli(env, *command)
        assert rc == 0, (err, report)
        assert report["outcome"] == "pending" and report["final"]["target"] == "DOWNGRADE_ACTIVE", report
        assert report["final"]["source"] == "DOWN", report
        figures["failover_steps"] = {s["action"]: s["seconds"] for s in report["steps"]}
        figures["next"] = report["next_command"]
        found = read_back(eps["dc2"], table, [row for row, _, _ in acked])
        lost = [(row, ts, value, found.get(row)) for row, ts, value in acked if found.get(row) != [(ts, value)]]
        figures["acknowledged_found"] = len(acked) - len(lost)
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged puts are not on the target: {lost[:5]}"

        # the same command again while dc1 is still down: still pending, no transition sent (the executor keeps no
        # memory between runs, so from target DOWNGRADE_ACTIVE it runs the switch command again: it must be safe
        # to run twice, docs/cutover.md#the-executor)
        rc, report, err, figures["pending_rerun_cli_s"] = cli(env, *command)
        assert rc == 0 and report["outcome"] == "pending", (err, report)
        assert [s["action"] for s in report["steps"]] == ["the switch command (clients to the target)"], report
        assert report["final"] == {"source": "DOWN", "target": "DOWNGRADE_ACTIVE"}, report

        started = time.monotonic()
        realhbase.start_cluster("dc1")
        figures["source_restart_s"] = round(time.monotonic() - started, 1)
        rc, report, err, figures["rejoin_cli_s"] = cli(env, *command)
        assert rc == 0 and report["outcome"] == "done", (err, report)
        assert report["start"]["source"] == "ACTIVE"  # the old source comes back as it was
        assert report["final"] == {"source": "STANDBY", "target": "ACTIVE"}, report
        figures["rejoin_steps"] = {s["action"]: s["seconds"] for s in report["steps"]}
        assert both_states(clusters, peer) == ("STANDBY", "ACTIVE")
    finally:
        print("sync replication failover (executor):", json.dumps(figures, sort_keys=True, default=str))
        if writer is not None:
            writer.stop()
        dismantle(realhbase, clusters, table, peer)
