"""Batches with a peer each (issue 42), on real HBase: a table failing in one batch while the other batch catches
up and verifies.

Two batches as the form lists them, one at a time (`batches_at_once` 1): b1 holds `good`, b2 holds `bad`. Once the
plan is kept, the test disables `bad` on the source, so b2's copy cannot read it (HBase refuses a scan of a
disabled table) and fails after its retries. Meanwhile a writer keeps editing `good` (new rows, new versions, row
deletes) through b1's copy and catch-up. What must come of it: b1 copied, its own peer enabled and drained, its
table verified and equal to the source, every version compared independently (demo/workload.py's Thrift2 client);
b2 failed at its copy, its own peer left DISABLED (its backlog kept), never enabled; the run failed and its verdict
(state_left_behind, run once both batches had ended) names each batch's peer and state; b2 waited for b1's turn
to end before adding its peer.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.snapshot_bed import connection, shell_ok, unique

# make test-full: make test's migration on real HBase is one batch (the secured end-to-end run); this is a run of
# several batches with a failure, a second migration run of its own on the bed (several minutes on a loaded host).
pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase, pytest.mark.full]

REPO = Path(__file__).resolve().parents[2]
BASE_TS = 1_700_000_000_000


def _env(dc1: dict, dc2: dict, ledger: Path) -> dict[str, str]:
    from tests.dags.airflow_run import airflow_env

    class Conn:  # airflow_env takes minihbase's clusters; a realhbase endpoint's connection is the same JSON
        def __init__(self, endpoint: dict) -> None:
            self.connection_json = connection(endpoint)

    return airflow_env(Conn(dc1), Conn(dc2), ledger)


class Writer:
    """New rows, new versions of existing rows (the writer's clock as timestamp) and whole-row deletes on one
    table, through the Thrift2 gateway, until stopped."""

    def __init__(self, endpoint: dict, table: str, rows: int) -> None:
        from demo.workload import Thrift2

        self.client, self.table, self.rows = Thrift2(endpoint), table, rows
        self.counts = {"puts": 0, "versions": 0, "deletes": 0, "errors": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Writer":
        self._thread.start()
        return self

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(0.05):
            i += 1
            try:
                if i % 7 == 0:
                    self.client.delete(self.table, b"r%05d" % (i % self.rows))
                    self.counts["deletes"] += 1
                elif i % 2:
                    self.client.put(self.table, [(b"n%06d" % i, {b"d:v": b"new %d" % i}, None)])
                    self.counts["puts"] += 1
                else:
                    self.client.put(self.table, [(b"r%05d" % (i % self.rows), {b"d:v": b"v%d" % i}, None)])
                    self.counts["versions"] += 1
            except Exception:
                self.counts["errors"] += 1

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(30)
        self.client.close()
        return self.counts


def _load(endpoint: dict, table: str, rows: int) -> None:
    from demo.workload import Thrift2

    client = Thrift2(endpoint)
    try:
        for start in range(0, rows, 500):  # two versions each, at old timestamps
            chunk = range(start, min(rows, start + 500))
            client.put(table, [(b"r%05d" % i, {b"d:v": b"old %d" % i}, BASE_TS + i) for i in chunk])
            client.put(table, [(b"r%05d" % i, {b"d:v": b"newer %d" % i}, BASE_TS + 10_000 + i) for i in chunk])
    finally:
        client.close()


@pytest.mark.timeout(3600)
def test_a_table_failing_in_one_batch_leaves_the_other_to_catch_up_and_verify(realhbase, tmp_path):
    from demo.workload import Thrift2, compare
    from hbase_migration.ledger.store import Ledger

    endpoints = realhbase.endpoints()
    dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
    tag = unique("bt")
    good, bad, peer = f"{tag}_good", f"{tag}_bad", tag
    shell_ok(realhbase, "dc1", [f"create '{t}', {{NAME => 'd', VERSIONS => 3, REPLICATION_SCOPE => 1}}, "
                                f"SPLITS => ['r01000']" for t in (good, bad)])
    for table in (good, bad):
        _load(dc1, table, 2000)
    ledger_path = tmp_path / "ledger.db"
    ledger_url = f"sqlite:///{ledger_path}"
    env = _env(dc1, dc2, ledger_path)
    conf = {"tables": [good, bad], "peer_id": peer, "batches": [good, bad], "batches_at_once": 1, "sizing": False,
            "bulk_loads": "none", "expected_copy_s": 600, "recompare_sleep_s": 2, "stable_samples": 2}
    disabled = threading.Event()

    def break_bad_once_planned(dag: subprocess.Popen) -> None:
        while dag.poll() is None:
            try:
                with Ledger.open(ledger_url) as ledger:
                    runs = [r for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration"]
                    if runs and ledger.run_batches(runs[0]["run_id"]):
                        break
            except Exception:  # the ledger is not there yet
                pass
            time.sleep(1)
        shell_ok(realhbase, "dc1", [f"disable '{bad}'"])
        disabled.set()

    writer = Writer(dc1, good, 2000).start()
    try:
        with open(tmp_path / "dags-test.log", "w") as out:
            dag = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), "dags", "test",
                                    "hbase_table_migration", "-c", json.dumps(conf)], cwd=REPO, env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
            breaker = threading.Thread(target=break_bad_once_planned, args=(dag,), daemon=True)
            breaker.start()
            rc = dag.wait(timeout=3300)
        writes = writer.stop()
        breaker.join(600)
        with Ledger.open(ledger_url) as ledger:
            run_id = next(r["run_id"] for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
            summary = ledger.run_summary(run_id)
        # b1's writes after its drain ship too before the independent comparison
        subprocess.run([sys.executable, "-m", "hbase_migration", "lag", "--source",
                        "hbase_source", "--peer-id", f"{peer}_b1", "--watch", "--interval-s", "2",
                        "--watch-timeout-s", "300", "--json"], env=env, cwd=REPO, capture_output=True, timeout=400)
        src, dst = Thrift2(dc1), Thrift2(dc2)
        try:
            comparison = compare(src, dst, good).as_dict()
        finally:
            src.close()
            dst.close()
        peers = realhbase.shell("dc1", "list_peers\n").stdout
    finally:
        if not writer._stop.is_set():
            writer.stop()
        # the bed is the session's: its peers would pin dc1's WALs for the rest of it
        realhbase.shell("dc1", "".join(f"remove_peer '{p}'\n" for p in (f"{peer}_b1", f"{peer}_b2"))
                        + (f"enable '{bad}'\n" if disabled.is_set() else "")
                        + "".join(f"disable '{t}'\ndrop '{t}'\n" for t in (good, bad)), args=())
        realhbase.shell("dc2", "".join(f"disable '{t}'\ndrop '{t}'\n" for t in (good, bad)), args=())

    log = (tmp_path / "dags-test.log").read_text(errors="replace")
    assert rc != 0 and disabled.is_set(), log[-3000:]
    assert writes["errors"] == 0 and min(writes.values()) >= 0 and writes["puts"] > 0, writes
    # The plan: two batches as listed, each with its own peer.
    batches = {b["batch"]: b for b in summary["batches"]}
    assert [(b["batch"], b["peer_id"], b["tables"]) for b in summary["batches"]] == [
        ("b1", f"{peer}_b1", [good]), ("b2", f"{peer}_b2", [bad])]
    # b1: copied, its own peer enabled and drained, verified; its table equal to the source, every version.
    phases = summary["phases"]
    assert [phases[good][p]["status"] for p in ("copy", "catch_up", "verify")] == ["success"] * 3, phases[good]
    assert comparison["differences"] == 0 and comparison["source_rows"] > 2000, comparison
    assert [v["clean"] for v in summary["verification"][good]] == [True]
    assert batches["b1"]["peer_state"] == "ENABLED" and f"{peer}_b1" in peers
    # b2: its copy failed; its own peer is left DISABLED (never enabled), and said so.
    assert phases[bad]["copy"]["status"] == "failed" and "verify" not in phases[bad], phases[bad]
    verdict = json.loads(phases["*"]["report"]["detail"])
    assert [(b["batch"], b["peer_id"], b["state"], b["failed"]) for b in verdict["batches"]] == [
        ("b1", f"{peer}_b1", "ENABLED", False), ("b2", f"{peer}_b2", "DISABLED", True)], verdict
    assert any(t.startswith("batch.copy_1") for t in verdict["failed_tasks"]), verdict
    assert f"peer {peer}_b2 (batch b2) left DISABLED" in log and f"peer {peer}_b1 (batch b1) left ENABLED" in log
    assert summary["run"]["status"] == "failed"
    # one batch at a time: b2's peer was added only after b1's copies ended (b1's turn given up)
    assert batches["b2"]["t0_ms"] > phases[good]["copy"]["ended_ms"], (batches, phases[good]["copy"])
