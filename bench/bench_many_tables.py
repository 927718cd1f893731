"""300 tables in one migration against the same rows in one table (issue 42), on real HBase (realhbase dc1 -> dc2),
through the `hbase_table_migration` DAG end to end (`airflow dags test`, Spark local[2]).

The same rows (`--rows`, 300k by default, `--versions` versions each at old timestamps) are migrated three times,
each a run of its own with a writer adding new versions on the source throughout (so WALs roll and peers pin them):
1. in one table;
2. spread over `--tables` tables (300), batched by the run spec's defaults (by bytes: `batch_max_bytes` 1 TiB,
   `batch_max_tables` 300; the bench does not size, so these 300 small tables are one batch, one peer): one Spark
   application for the copy, one for the verification;
3. (unless `--no-batches`) the same rows over as many other tables in batches of `--batch-max-tables` (100: three
   batches, `--batches-at-once`), each batch its own peer and two Spark applications: what batches cost.
After each run every table is compared with the source independently, every version of every cell (demo/
workload.py's Thrift2 client, no toolkit code), once each peer has drained the writer's last edits.

Figures (printed, never asserted; the last line is one JSON object):
- `many_vs_one`: run 2's wall time / run 1's (the goal: <= 2.0), `many_vs_one_batches` run 3's; `differences`: rows
  differing in any run;
- `spark_applications`: the Spark applications run 2 started (the distinct application ids its copy and verify
  recorded; before batches a table's copy and verification were two each: 600 for 300 tables);
- `namenode_calls_per_min`: the oldWALs watchdogs' WebHDFS calls over run 2 (the ledger's count, which the
  NameNode's audit log matched in tests/integration/test_oldwals_watch_realhbase.py) per minute of the run;
- `peak_pinned_wal_bytes`: oldWALs' largest growth above its size at the run's start, sampled every 5 s (the bench's
  own WebHDFS calls), for run 2 (`one_peer`, when the defaults made it one batch) and run 3 (`batches`);
- `breakdown`, `breakdown_batches`: where run 2's and run 3's time went, from Airflow's task instances: the steps
  before the batches, the copy tasks (and inside them the Spark jobs' own time: the rest is spark-submit, the
  driver's start and the checks), the catch-ups, the verifications, and what no task covers (the scheduling loop
  of `airflow dags test`).
`airflow dags test` runs one task at a time, so the batches of run 3 copy one after the other (`--batches-at-once`
counts for a scheduler with several workers).

    .venv/bin/python bench/bench_many_tables.py [--rows 300000] [--tables 300] [--versions 3]
        [--batch-max-tables 100] [--batches-at-once 2] [--write-rate 20] [--no-batches] [--testbed DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BASE_TS = 1_600_000_000_000
AIRFLOW = str(Path(sys.executable).parent / "airflow")


def log(message: str) -> None:
    print(f"[bench_many_tables {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def shell(bed, cluster: str, statements: list[str], check: bool = True) -> str:
    # a statement takes up to a second or two on the bed (a create, a disable): 300 tables need more than the
    # bed's default 300 s for one call
    proc = bed.shell(cluster, "\n".join(statements) + "\n", args=("-n",) if check else (),
                     timeout=max(300.0, 3.0 * len(statements)))
    if check and proc.returncode != 0:
        raise RuntimeError(f"hbase shell on {cluster} failed: {proc.stdout[-2000:]}")
    return proc.stdout


def row_key(i: int) -> bytes:
    return b"%08d" % ((i * 2654435761) % 100_000_000)  # spread over the key space


def create_and_load(bed, dc1: dict, tables: list[str], rows: int, versions: int) -> None:
    from demo.workload import Thrift2
    from hbase_migration.migration import create_at_once

    creates = [f"create '{t}', {{NAME => 'd', VERSIONS => {versions}, REPLICATION_SCOPE => 1}}" for t in tables]
    shell(bed, "dc1", create_at_once.statements(creates, 600) if len(tables) > 1 else creates)
    share = [list(range(k, rows, len(tables))) for k in range(len(tables))]

    def load(k: int) -> None:
        client = Thrift2(dc1)
        try:
            for start in range(0, len(share[k]), 500):
                chunk = share[k][start:start + 500]
                for v in range(versions):
                    client.put(tables[k], [(row_key(i), {b"d:v": b"v%d-%d" % (v, i)}, BASE_TS + v * 1000 + i % 1000)
                                           for i in chunk])
        finally:
            client.close()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(load, range(len(tables))))


class Writer:
    """New versions of existing rows (the server's clock), spread over the tables, at `rate` puts/s."""

    def __init__(self, dc1: dict, tables: list[str], rows: int, rate: float) -> None:
        from demo.workload import Thrift2

        self.client, self.tables, self.rows, self.rate = Thrift2(dc1), tables, rows, rate
        self.puts = self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(1.0 / self.rate):
            i += 1
            row = (i * 7919) % self.rows
            try:
                self.client.put(self.tables[row % len(self.tables)], [(row_key(row), {b"d:v": b"live%d" % i}, None)])
                self.puts += 1
            except Exception:
                self.errors += 1

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(30)
        self.client.close()
        return {"puts": self.puts, "errors": self.errors}


class OldWalsSampler:
    """oldWALs' size on the source every `interval_s` (the bench's own WebHDFS calls): the peak above the start."""

    def __init__(self, dc1: dict, interval_s: float = 5.0) -> None:
        import requests

        self.url = f"{dc1['webhdfs_url']}/webhdfs/v1/hbase/oldWALs"
        self.params = {"op": "GETCONTENTSUMMARY", "user.name": dc1["connection"]["extra"].get("webhdfs_user", "")}
        self.session, self.interval_s = requests.Session(), interval_s
        self.start = self.peak = self._read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _read(self) -> int:
        return int(self.session.get(self.url, params=self.params, timeout=30).json()["ContentSummary"]
                   ["spaceConsumed"])

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.peak = max(self.peak, self._read())
            except Exception as e:
                log(f"oldWALs sample failed: {e}")

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(60)
        return self.peak - self.start


def dag_env(dc1: dict, dc2: dict, workdir: Path) -> dict[str, str]:
    return {**os.environ, "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_CONN_HBASE_SOURCE": json.dumps(dc1["connection"]),
            "AIRFLOW_CONN_HBASE_TARGET": json.dumps(dc2["connection"]),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{workdir / 'ledger.db'}",
            "AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S": "5",
            "AIRFLOW__HBASE_MIGRATION__WATCHDOG_INTERVAL_S": "30"}


def spark_applications(dag_log: Path) -> set[str]:
    """The distinct Spark application ids the run's jobs printed in their summaries (a batch's copy and verify each
    print one for all its tables; the ledger's per-table details do not carry it)."""
    import re

    return set(re.findall(r'"application_id": "([^"]+)"', dag_log.read_text(errors="replace")))


def task_times(env: dict[str, str], run_id: str, tries: int = 3) -> list[dict]:
    for attempt in range(tries):
        proc = subprocess.run([AIRFLOW, "tasks", "states-for-dag-run", "hbase_table_migration", run_id, "-o", "json"],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
        try:  # the JSON array's own line: a warning line before it starts "<time> [warning  ]"
            return json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("[")))
        except (StopIteration, ValueError):
            log(f"task states not read (try {attempt + 1}): {(proc.stdout + proc.stderr)[-500:]}")
            time.sleep(5)
    return []


def _seconds(ti: dict) -> float:
    from datetime import datetime

    if not ti.get("start_date") or not ti.get("end_date"):
        return 0.0
    return (datetime.fromisoformat(ti["end_date"]) - datetime.fromisoformat(ti["start_date"])).total_seconds()


def breakdown(tis: list[dict], summary: dict, wall_s: float) -> dict:
    """Where the run's time went, from its task instances (one at a time under `airflow dags test`)."""
    by_task: dict[str, float] = {}
    for ti in tis:
        by_task[ti["task_id"]] = by_task.get(ti["task_id"], 0.0) + _seconds(ti)
    jobs = {}
    for phase in ("copy", "verify"):
        elapsed = {}
        for table, phases in summary["phases"].items():
            detail = json.loads((phases.get(phase) or {}).get("detail") or "{}")
            app = (detail.get("spark") or {}).get("application_id")
            if app:
                elapsed[app] = max(elapsed.get(app, 0.0), float(detail.get("elapsed_s") or 0.0))
        jobs[phase] = sum(elapsed.values())
    before = sum(by_task.get(t, 0.0) for t in ("open_run", "preflight", "scan_tables", "snapshot_tables",
                                                "create_target_tables", "plan_batches"))
    tasks_s = sum(by_task.values())
    return {"before_batches_s": round(before, 1), "copy_tasks_s": round(by_task.get("batch.copy", 0.0), 1),
            "copy_jobs_s": round(jobs["copy"], 1),
            "catch_up_s": round(by_task.get("batch.wait_drained", 0.0), 1),
            "verify_tasks_s": round(by_task.get("batch.verify", 0.0), 1), "verify_jobs_s": round(jobs["verify"], 1),
            "peer_steps_s": round(sum(by_task.get(f"batch.{t}", 0.0) for t in ("wait_turn", "add_peer", "enable_peer",
                                                                              "copies_done")), 1),
            "other_tasks_s": round(tasks_s - before - sum(by_task.get(f"batch.{t}", 0.0) for t in (
                "copy", "wait_drained", "verify", "wait_turn", "add_peer", "enable_peer", "copies_done")), 1),
            "outside_tasks_s": round(wall_s - tasks_s, 1), "by_task": {k: round(v, 1) for k, v in by_task.items()}}


def migrate(bed, name: str, tables: list[str], args: argparse.Namespace, conf_extra: dict) -> dict:
    """One run: tables created and loaded, the writer, the DAG, the drain, the independent comparison, cleanup."""
    from demo.workload import Thrift2, compare
    from hbase_migration.ledger.store import Ledger

    endpoints = bed.endpoints()
    dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-many-{name}-"))
    peer = f"bm{uuid.uuid4().hex[:6]}"
    log(f"{name}: creating {len(tables)} table(s) and loading {args.rows} rows x {args.versions} versions")
    started = time.monotonic()
    create_and_load(bed, dc1, tables, args.rows, args.versions)
    log(f"{name}: loaded in {time.monotonic() - started:.0f}s")
    env = dag_env(dc1, dc2, workdir)
    conf = {"tables": tables, "peer_id": peer, "sizing": False, "bulk_loads": "none",  # the bed does not replicate them
            "expected_copy_s": 3600, "recompare_sleep_s": 2, "stable_samples": 2,
            "batches_at_once": args.batches_at_once, **conf_extra}
    writer = Writer(dc1, tables, args.rows, args.write_rate)
    sampler = OldWalsSampler(dc1)
    peers: list[str] = []
    try:
        log(f"{name}: airflow dags test hbase_table_migration (log {workdir / 'dags-test.log'})")
        started = time.monotonic()
        with open(workdir / "dags-test.log", "w") as out:
            rc = subprocess.run([AIRFLOW, "dags", "test", "hbase_table_migration", "-c", json.dumps(conf)], env=env,
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT, timeout=args.timeout_s).returncode
        wall = time.monotonic() - started
        writes = writer.stop()
        pinned = sampler.stop()
        with Ledger.open(f"sqlite:///{workdir / 'ledger.db'}") as ledger:
            run_id = next(r["run_id"] for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
            summary = ledger.run_summary(run_id)
        peers = [b["peer_id"] for b in summary["batches"]] or [peer]
        log(f"{name}: run {run_id} exit {rc} in {wall:.0f}s; waiting for {len(peers)} peer(s) to drain the writer's "
            "last edits")
        for p in peers:
            subprocess.run([sys.executable, "-m", "hbase_migration", "lag", "--source", "hbase_source", "--peer-id", p,
                            "--watch", "--interval-s", "2", "--watch-timeout-s", "600", "--json"], env=env, cwd=REPO,
                           capture_output=True, timeout=900)
        src, dst = Thrift2(dc1), Thrift2(dc2)
        try:
            differences = sum(compare(src, dst, t).differences for t in tables)
        finally:
            src.close()
            dst.close()
        apps = spark_applications(workdir / "dags-test.log")
        calls = sum(w["namenode_calls"] for w in summary["quota"]["watch"])
        result = {"rc": rc, "run_status": summary["run"]["status"], "wall_s": round(wall, 1), "writes": writes,
                  "differences": differences, "spark_applications": len(apps), "batches": len(summary["batches"]),
                  "namenode_calls": calls, "namenode_calls_per_min": round(calls / (wall / 60), 2),
                  "peak_pinned_wal_bytes": pinned,
                  "breakdown": breakdown(task_times(env, run_id), summary, wall), "workdir": str(workdir)}
        log(f"{name}: {json.dumps({k: v for k, v in result.items() if k != 'breakdown'})}")
        return result
    finally:
        if not writer._stop.is_set():
            writer.stop()
        sampler.stop()
        log(f"{name}: removing the peers and the tables")
        shell(bed, "dc1", [f"remove_peer '{p}'" for p in peers or [peer]]
              + [s for t in tables for s in (f"disable '{t}'", f"drop '{t}'")], check=False)
        shell(bed, "dc2", [s for t in tables for s in (f"disable '{t}'", f"drop '{t}'")], check=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=300_000)
    p.add_argument("--tables", type=int, default=300)
    p.add_argument("--versions", type=int, default=3)
    p.add_argument("--batch-max-tables", type=int, default=100, help="run 3's batches")
    p.add_argument("--batches-at-once", type=int, default=2)
    p.add_argument("--write-rate", type=float, default=20.0, help="the writer's puts/s during each run")
    p.add_argument("--no-batches", action="store_true", help="skip run 3 (the tables in batches of --batch-max-tables)")
    p.add_argument("--timeout-s", type=float, default=6 * 3600)
    p.add_argument("--rs-heap-mb", type=int, default=1536, help="the bed's region servers' heap (MiB)")
    p.add_argument("--testbed", help="the workdir of a realhbase test bed already up (else one is started)")
    args = p.parse_args(argv)
    from bench.harness import exit_on_sigterm
    from realhbase.roles import Topology
    from realhbase.testbed import RealHBase

    exit_on_sigterm()
    own = args.testbed is None
    # 300 tables are 150 regions a region server, each holding a 2 MiB MSLAB chunk once written: at the bed's
    # default 512m heap the source's servers ran out of memory in run 3 (2026-11-29)
    bed = RealHBase(Path(args.testbed) if args.testbed else Path(tempfile.mkdtemp(prefix="bench-many-bed-")),
                    topology=Topology(rs_heap_mb=args.rs_heap_mb))
    if own:
        log("starting a realhbase test bed")
        bed.up()
    try:
        tag = uuid.uuid4().hex[:5]
        one = migrate(bed, "one_table", [f"bm{tag}_one"], args, {})
        many_tables = [f"bm{tag}_t{k:03d}" for k in range(args.tables)]
        many = migrate(bed, "many_tables", many_tables, args, {})  # the run spec's defaults
        batched = None if args.no_batches else migrate(
            bed, "many_tables_batches", [f"bm{tag}_p{k:03d}" for k in range(args.tables)], args,
            {"batch_max_tables": args.batch_max_tables})
    finally:
        if own:
            bed.down()
    figures = {
        "tables": args.tables, "rows": args.rows, "versions": args.versions,
        "differences": sum(r["differences"] for r in (one, many, batched) if r),
        "many_vs_one": round(many["wall_s"] / one["wall_s"], 2),
        "many_vs_one_batches": round(batched["wall_s"] / one["wall_s"], 2) if batched else None,
        "spark_applications": many["spark_applications"], "batches": many["batches"],
        "spark_applications_batches": batched["spark_applications"] if batched else None,
        "batches_batches": batched["batches"] if batched else None,
        "namenode_calls_per_min": many["namenode_calls_per_min"],
        "namenode_calls_per_min_batches": batched["namenode_calls_per_min"] if batched else None,
        "peak_pinned_wal_bytes": {"one_peer" if many["batches"] == 1 else "default": many["peak_pinned_wal_bytes"],
                                  "batches": batched["peak_pinned_wal_bytes"] if batched else None},
        "wall_s": {"one_table": one["wall_s"], "many_tables": many["wall_s"],
                   "many_tables_batches": batched["wall_s"] if batched else None},
        "runs_ok": all(r["rc"] == 0 for r in (one, many, batched) if r),
        "breakdown": many["breakdown"], "breakdown_batches": batched["breakdown"] if batched else None,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
