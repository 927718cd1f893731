"""`make chaos` (`python -m chaos`): the demo migration on the production-shaped deployment, with its live writer,
while a seeded nemesis injects faults at random moments of every phase; then an independent checker.

1. Two real HBase clusters dc1/dc2 (realhbase, chaos/beds.py: three region servers, two gateway hosts, a backup
   master and two DataNodes each; the toolkit's connections through TCP fault proxies in front of every gateway
   and WebHDFS, and of the source's ZooKeeper) or, with `--stand-in`, minihbase's (faults through its control
   API); the demo's tables loaded on dc1, the deployment (`deploy/`: Airflow with Celery workers, Redis,
   PostgreSQL, Spark standalone) with alerts sent to an SMTP server on loopback, the live writer on dc1.
2. Attempt 1: `hbase_table_migration` triggered through the REST API; the nemesis (`chaos/nemesis.py`) follows
   its phases and fires `chaos.schedule.make_schedule(seed, duration, kinds)`; a supervisor restarts services
   that die by themselves. The nemesis stops when the run ends, every fault is lifted and its recovery timed.
3. A failed attempt is recorded as it stopped: `state_left_behind`'s verdict, the ledger (phases that failed,
   peer notes, copy partitions done of the plan), the peer's real state read independently (the source's
   shell), and the failure alert's mail; then the harness triggers the same migration again (no faults).
4. The checker, after the final drain: every version of every row of both sides compared by a plain Thrift2
   client (`demo.workload.compare`, no toolkit code); verify's repairs of anything but the known HBase
   version-retention case (`only_on_target`, docs/data-path.md "Versions") count against the run.

With `--fail-first-attempt` the first attempt meets a fault no retry outlasts (the toolkit cut off from the source's
ZooKeeper until its preflight has failed for good) and the nemesis strikes the re-triggered attempt instead: the
recovery path of step 3, forced.

The JSON summary is the last stdout line (`status`; `faults`: every fault with kind, phase, time and time to
recover; `attempts`, each with its own faults and, when it failed, what it left); `status` is `success` and the
exit code 0 only when the migration ended in success (after at most one re-trigger) with 0 differences and every
failed attempt's reported state was exact.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from chaos.schedule import BACKEND_KINDS, KINDS, ScheduleError, make_schedule, parse_kinds

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
DAG_ID = "hbase_table_migration"
PEER_ID = "chaos"


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ attempts


def follow(world: Any, client: Any, run_id: str, timeout_s: float, on_caught_up) -> dict[str, Any]:
    """Wait for the run to end (REST polls every 2 s; an API that does not answer is polled again);
    `on_caught_up()` once wait_drained succeeded."""
    deadline = time.monotonic() + timeout_s
    caught_up = False
    while True:
        try:
            run = client.dag_run(DAG_ID, run_id)
            if not caught_up:
                tis = {(t["task_id"], t["map_index"]): t["state"] for t in client.task_instances(DAG_ID, run_id)}
                drains = [s for (task, _), s in tis.items() if task == "batch.wait_drained"]
                if drains and all(s == "success" for s in drains):  # every batch caught up
                    caught_up = True
                    on_caught_up()
            if run["state"] in ("success", "failed"):
                return run
        except Exception as e:  # the API server or its database is down for a moment (a fault)
            log(f"REST API: {type(e).__name__}: {str(e)[:200]}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"run {run_id} did not end within {timeout_s:.0f}s")
        time.sleep(2.0)


class Partition:
    """`--fail-first-attempt`: the toolkit cut off from the source's ZooKeeper (the proxy drops every connection)
    from the first attempt's trigger until its preflight has failed for good, longer than any retry of preflight
    can outlast. It is healed then, so the run's own `state_left_behind` can read the source and say what the
    attempt left (no peer). Recorded like a nemesis fault, in the attempt it failed."""

    kind = "zk_partition"

    def __init__(self, proxy: Any, client: Any, run_id: str, t0: float) -> None:
        self.proxy, self.client, self.run_id, self.t0 = proxy, client, run_id, t0
        self.record: dict[str, Any] = {"kind": self.kind, "phase": "preflight", "target": "source zookeeper",
                                       "forced": True, "fired": False, "hold": "until preflight failed for good"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._heal_when_failed, name="chaos-partition", daemon=True)

    def start(self) -> "Partition":
        self.proxy.block()
        self.record.update(fired=True, injected_at_s=round(time.monotonic() - self.t0, 1))
        log(f"forced fault: {self.kind}: the toolkit cannot reach the source's ZooKeeper until preflight fails")
        self._thread.start()
        return self

    def _heal_when_failed(self) -> None:
        while not self._stop.wait(1.0):
            try:
                states = {t["task_id"]: t["state"] for t in self.client.task_instances(DAG_ID, self.run_id)}
            except Exception:  # the API answers again at the next poll
                continue
            if states.get("preflight") in ("failed", "upstream_failed"):
                self.heal("preflight failed after every retry")
                return

    def heal(self, why: str) -> None:
        self._stop.set()
        if self.record.get("healed_at_s") is None and self.record["fired"]:
            self.proxy.unblock()
            self.record.update(healed_at_s=round(time.monotonic() - self.t0, 1), healed_because=why)
            log(f"forced fault healed ({why})")


def slow_step(what: str, fn: Callable[[], Any], slow_s: float = 60.0) -> Any:
    """`fn()`, said in the log when it took longer than `slow_s` (seed 10 once spent 13 minutes between a run's
    end and its comparison, unexplained: the next time says where)."""
    started = time.monotonic()
    try:
        return fn()
    finally:
        took = time.monotonic() - started
        if took > slow_s:
            log(f"{what} took {took:.0f}s")


def tries(client: Any, run_id: str) -> dict[str, Any]:
    """Every task instance that needed more than one try: its tries and final state."""
    out = {}
    for t in client.task_instances(DAG_ID, run_id):
        if t["try_number"] and t["try_number"] > 1:
            key = t["task_id"] + (f"[{t['map_index']}]" if t["map_index"] >= 0 else "")
            out[key] = {"tries": t["try_number"], "state": t["state"]}
    return out


def peer_state_independently(dc1: dict) -> str:
    """The peer's state as the source cluster's own shell lists it (ENABLED, DISABLED or ABSENT)."""
    from demo.run import shell

    for line in shell(dc1, ["list_peers"]).splitlines():
        words = line.split()
        if words and words[0] == PEER_ID:
            return next((w for w in words if w in ("ENABLED", "DISABLED")), "UNKNOWN")
    return "ABSENT"


def left_behind(dep: Any, client: Any, run_id: str, dc1: dict, mailbox: Any) -> dict[str, Any]:
    """What a failed attempt left: its verdict, the ledger's account, the peer read independently, the alert."""
    from hbase_migration.ledger.store import Ledger

    out: dict[str, Any] = {}
    try:
        out["state_left_behind"] = client.xcom(DAG_ID, run_id, "state_left_behind")
    except Exception as e:
        out["state_left_behind"] = {"error": f"no verdict: {e}"}
    with Ledger.open(dep.ledger_url) as ledger:
        summary = ledger.run_summary(run_id)
        progress = ledger.copy_progress(summary["copy"]["copy_id"])
    done: dict[str, int] = {}
    for p in progress["partitions"]:
        done[p["table_name"]] = done.get(p["table_name"], 0) + 1
    out["ledger"] = {
        "run_status": summary["run"].get("status"),
        "failed_phases": {f"{table}/{phase}": (v.get("detail") or "")[:600]
                          for table, phases in summary["phases"].items() for phase, v in phases.items()
                          if v.get("status") == "failed"},
        "peer_noted": summary["peer"]["state"],
        "copy_partitions_done": {t: f"{done.get(t, 0)}/{plan.get('partitions')}"
                                 for t, plan in progress["plans"].items()},
    }
    out["peer_state_read_independently"] = peer_state_independently(dc1)
    reported = (out["state_left_behind"] or {}).get("state")
    out["state_exact"] = reported == out["peer_state_read_independently"] or (
        reported in (None, "ABSENT", "NONE", "NOT_STARTED") and out["peer_state_read_independently"] == "ABSENT")
    deadline = time.monotonic() + 180
    while not mailbox.for_run(run_id) and time.monotonic() < deadline and mailbox.port:
        time.sleep(2)
    mails = mailbox.for_run(run_id)
    if mails:
        text = mails[0].text
        action = text.split("Action:", 1)[1].split("Airflow:", 1)[0].strip() if "Action:" in text else ""
        out["alert"] = {"messages": len(mails), "subject": mails[0].subject,
                        "state": next((ln for ln in text.splitlines() if ln.startswith("State:")), ""),
                        "next": action}
    else:
        out["alert"] = None
    return out


# ------------------------------------------------------------------------------------------------ the run


def run(args: argparse.Namespace) -> dict[str, Any]:
    from chaos.beds import MiniBed, RealBed
    from chaos.faults import World
    from chaos.mailbox import Mailbox
    from chaos.nemesis import Nemesis, Supervisor
    from chaos.zkproxy import ZkProxy
    from demo.run import create_source_tables
    from demo.workload import LiveWriter, Thrift2, chosen_tables, compare, load

    backend = "minihbase" if getattr(args, "stand_in", False) else "realhbase"
    kinds = parse_kinds(args.faults, backend)
    schedule = make_schedule(args.seed, args.duration, kinds)
    log(f"seed {args.seed}, duration {args.duration}s, {len(schedule)} faults:")
    for f in schedule:
        log(f"  {f.index}. {f.phase} +{f.offset_s}s: {f.kind} on {f.target}, hold {f.hold_s}s {dict(f.settings)}")

    workdir = Path(args.workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    started = time.monotonic()
    bed = (MiniBed if backend == "minihbase" else RealBed)(workdir / backend, args.zookeeper, log)
    log(f"starting {backend} dc1/dc2 in {workdir / backend}")
    bed.up()
    dep = writer = nemesis = supervisor = zk_proxy = None
    mailbox = Mailbox()
    writers: list[Any] = []
    attempts: list[dict[str, Any]] = []
    try:
        endpoints = bed.clusters()
        log(f"{backend} up after {time.monotonic() - started:.0f}s"
            + (f" (HBase {bed.version()})" if bed.version() else ""))
        dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
        tables = chosen_tables(args.rows, names=getattr(args, "tables", None))
        log(f"creating {len(tables)} tables on dc1 and loading {sum(t.rows for t in tables)} rows")
        create_source_tables(dc1, tables)
        client = Thrift2(dc1)
        for t in tables:
            load(client, t)
        client.close()
        if not args.no_alerts:
            mailbox.start()
        from deploy import Deployment

        log(f"starting the deployment in {workdir / 'deploy'}")
        overrides = mailbox.airflow_settings() if mailbox.port else {}
        if getattr(args, "retry_delay_s", None) is not None:
            overrides.setdefault("hbase_migration", {})["retry_delay_s"] = str(args.retry_delay_s)
        dep = Deployment.start(workdir / "deploy", spark_workers=args.spark_workers,
                               celery_workers=args.celery_workers, airflow_overrides=overrides or None)
        rest = dep.client
        if mailbox.port:
            from chaos.mailbox import SMTP_CONN_ID

            rest.set_connection(SMTP_CONN_ID, mailbox.connection())
        # The toolkit reaches the source's ZooKeeper through the nemesis's proxy (zk_expire strikes there).
        zk_proxy = ZkProxy(dc1["zookeeper"]["quorum"].split(",")[0], int(dc1["zookeeper"]["port"])).start()
        # On real HBase every gateway and WebHDFS is reached through a fault proxy too (chaos/netproxy.py).
        source_conn = bed.toolkit_connection("dc1", dc1)
        source_conn["extra"]["zookeeper_port"] = zk_proxy.port
        rest.set_connection("hbase_source", source_conn)
        rest.set_connection("hbase_target", bed.toolkit_connection("dc2", dc2))
        world = World(dep=dep, clusters=endpoints, tables=[t.name for t in tables], dag_id=DAG_ID, log=log,
                      zk_proxy=zk_proxy, bed=bed)
        conf = {"tables": [t.name for t in tables], "peer_id": PEER_ID, "expected_copy_s": 600,
                "bulk_loads": "none",  # the bed does not replicate bulk loads, and none are made
                "recompare_sleep_s": 5, "stable_samples": 3, "max_lag_ms": 30_000, "canary": True,
                "repair": True, **({"rows_per_s": args.rows_per_s} if args.rows_per_s else {})}

        def start_writer() -> Any:
            w = LiveWriter(lambda: Thrift2(dc1), tables, ops_per_second=args.write_rate, seed=args.seed).start()
            writers.append(w)
            return w

        # With --fail-first-attempt the first attempt meets a partition no retry outlasts and the nemesis strikes
        # the re-triggered one, which must succeed; otherwise the nemesis strikes the first.
        nemesis_attempt = 2 if args.fail_first_attempt else 1
        for attempt in (1, 2):
            writer = writer or start_writer()
            t0 = time.monotonic()
            run_id = rest.trigger(DAG_ID, conf)["dag_run_id"]
            log(f"attempt {attempt}: triggered {DAG_ID} run {run_id}"
                + (" with the nemesis" if attempt == nemesis_attempt else ""))
            forced = Partition(zk_proxy, rest, run_id, t0).start() if attempt == 1 and args.fail_first_attempt \
                else None
            if attempt == nemesis_attempt:
                supervisor = Supervisor(world, t0)
                supervisor.start()
                nemesis = Nemesis(world, schedule, log).start(run_id, t0)

            def caught_up() -> None:
                nonlocal writer
                if writer is not None:
                    stats = writer.stop()
                    log(f"catch-up drained; writer stopped after {stats.as_dict()}")
                    writer = None

            try:
                final = follow(world, rest, run_id, args.timeout_s, caught_up)
            finally:
                if forced is not None:
                    forced.heal("the attempt ended")
            entry: dict[str, Any] = {"attempt": attempt, "run_id": run_id, "state": final["state"],
                                     "nemesis": attempt == nemesis_attempt,
                                     "duration_s": round(time.monotonic() - t0, 1)}
            log(f"attempt {attempt}: run {run_id} ended {final['state']} after {entry['duration_s']}s")
            entry["faults"] = [forced.record] if forced is not None else []
            if attempt == nemesis_attempt:
                log("lifting the faults still held and timing their recovery")
                slow_step("the nemesis' stop (every fired fault's recovery judged)", nemesis.stop)
                entry["phases_began_s"] = {p: round(t - t0, 1) for p, t in nemesis.tracker.started.items()}
                entry["faults"] += [{k: v for k, v in r.items() if k != "dispatched"} for r in nemesis.records]
            entry["retried_tasks"] = slow_step("reading the run's task tries from the REST API",
                                               lambda: tries(rest, run_id))
            attempts.append(entry)
            if final["state"] == "success":
                break
            try:
                entry["left_behind"] = left_behind(dep, rest, run_id, dc1, mailbox)
            except Exception as e:  # the account is incomplete: the run cannot be judged exact
                entry["left_behind"] = {"error": f"{type(e).__name__}: {e}", "state_exact": False}
            log(f"attempt {attempt} left: {json.dumps(entry['left_behind'], default=str)[:1500]}")

        log("waiting for the last edits to ship, then comparing every row of both sides")
        env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_CONN_HBASE_SOURCE": json.dumps(source_conn)}
        subprocess.run([PY, "-m", "hbase_migration", "lag", "--source", "hbase_source", "--peer-id", PEER_ID,
                        "--watch", "--interval-s", "2", "--watch-timeout-s", "300", "--json"], env=env, cwd=REPO,
                       capture_output=True, timeout=400)
        per_table, differences = check(dc1, dc2, tables, compare, Thrift2)
        if differences:  # edits still in flight get one more chance; lost ones stay different
            log(f"{differences} differences; comparing again in 30 s")
            time.sleep(30)
            first = differences
            per_table, differences = check(dc1, dc2, tables, compare, Thrift2)
            for t in per_table.values():
                t["first_comparison_differences"] = first
        summary = verification(dep.ledger_url, attempts[-1]["run_id"], per_table)
        out = result(args, kinds, schedule, nemesis, supervisor, attempts, per_table, differences, summary,
                     writers, started)
        out.update(backend=backend, hbase_version=bed.version(),
                   proxies={name: vars(p.counts) for name, p in getattr(bed, "proxies", {}).items()})
        return out
    finally:  # every step on its own: one that fails must not leave the others' processes running
        steps = [("writer", w.stop) for w in writers]
        steps += [("nemesis", lambda: nemesis and nemesis.stop(timeout=60)),
                  ("supervisor", lambda: supervisor and supervisor.stop()),
                  ("deployment", lambda: dep and (log("stopping the deployment"), dep.stop())),
                  ("mailbox", mailbox.stop),
                  ("zookeeper proxy", lambda: zk_proxy and zk_proxy.stop()),
                  (backend, lambda: (log(f"stopping {backend} and ZooKeeper"), bed.down()))]
        for name, step in steps:
            try:
                step()
            except Exception as e:
                log(f"stopping {name}: {type(e).__name__}: {e}")


def check(dc1: dict, dc2: dict, tables: list, compare, Thrift2) -> tuple[dict[str, Any], int]:
    """The independent comparison of every table (a plain Thrift2 client of each side)."""
    src, dst = Thrift2(dc1), Thrift2(dc2)
    try:
        per_table = {t.name: {"independent_comparison": compare(src, dst, t.name).as_dict()} for t in tables}
    finally:
        src.close()
        dst.close()
    return per_table, sum(v["independent_comparison"]["differences"] for v in per_table.values())


def verification(ledger_url: str, run_id: str, per_table: dict[str, Any]) -> dict[str, Any]:
    """What the final run's verify found and repaired, per table; repairs other than `only_on_target`
    (HBase's version-retention interplay) are unexpected: a lost or changed version the copy or replication
    should have carried."""
    from hbase_migration.ledger.store import Ledger

    with Ledger.open(ledger_url) as ledger:
        summary = ledger.run_summary(run_id)
    unexpected = []
    for table, entry in per_table.items():
        detail = json.loads((summary["phases"].get(table, {}).get("verify") or {}).get("detail") or "{}")
        found = detail.get("differing_versions_sample", [])
        copied = summary["copy"]["tables"].get(table, {})
        entry.update({"rows_copied": copied.get("rows"), "cells_copied": copied.get("cells"),
                      "versions_found_different": found, "repair": detail.get("repair")})
        unexpected += [{"table": table, **v} for v in found if v.get("kind") != "only_on_target"]
    return {"run_status": summary["run"].get("status"), "unexpected_repairs": unexpected}


def recovery_by_kind(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in records:
        if not r.get("fired"):
            continue
        k = out.setdefault(r["kind"], {"fired": 0, "recovered": 0, "times_s": []})
        k["fired"] += 1
        if r.get("time_to_recover_s") is not None:
            k["recovered"] += 1
            k["times_s"].append(r["time_to_recover_s"])
    for kind, k in out.items():
        times = k["times_s"]
        k["mean_s"] = round(sum(times) / len(times), 1) if times else None
        k["max_s"] = max(times) if times else None
        k["recovered_means"] = KINDS[kind].recovered
    return out


def result(args, kinds, schedule, nemesis, supervisor, attempts, per_table, differences, verify, writers,
           started) -> dict[str, Any]:
    records = [{k: v for k, v in r.items() if k not in ("dispatched",)} for r in (nemesis.records if nemesis else [])]
    writer = {}
    for w in writers:
        for k, v in w.stats.as_dict().items():
            writer[k] = writer.get(k, 0) + v
    failed = [a for a in attempts if a["state"] != "success"]
    succeeded = bool(attempts) and attempts[-1]["state"] == "success"
    exact = all(a.get("left_behind", {}).get("state_exact") for a in failed)
    ok = succeeded and differences == 0 and not verify["unexpected_repairs"] and exact
    return {
        # success only when the migration finally succeeded, with 0 differences and every failed attempt's
        # account exact
        "status": "success" if ok else "failed",
        "chaos": DAG_ID, "seed": args.seed, "duration_s": args.duration, "kinds": list(kinds), "rows": args.rows,
        "schedule": [f.as_dict() for f in schedule],
        "faults": records,
        "faults_fired": sum(1 for r in records if r.get("fired")),
        "recovery_by_kind": recovery_by_kind(records),
        "supervisor_restarts": supervisor.restarts if supervisor else [],
        "attempts": attempts,
        "retriggered": len(attempts) > 1,
        "succeeded": succeeded,
        "failed_attempts_state_exact": exact,
        "differences": differences,
        "verify_unexpected_repairs": verify["unexpected_repairs"],
        "tables": per_table,
        "writer": writer,
        "wall_time_s": round(time.monotonic() - started, 1),
        "ok": ok,
    }


def main(argv: list[str] | None = None) -> int:
    from demo.workload import table_names

    p = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=1, help="the nemesis's seed (default 1)")
    p.add_argument("--duration", type=float, default=600.0,
                   help="seconds the nemesis spreads its faults over: one per 30 s, at least one per phase "
                        "(default 600)")
    p.add_argument("--faults", default="all",
                   help="fault kinds, comma-separated, or 'all' (default: all the backend can do; real HBase: "
                        f"{', '.join(BACKEND_KINDS['realhbase'])}; the stand-in: "
                        f"{', '.join(BACKEND_KINDS['minihbase'])})")
    p.add_argument("--stand-in", action="store_true",
                   help="run on minihbase, the fast stand-in (its control API's faults), instead of real HBase")
    p.add_argument("--rows", type=int, default=20_000, help="rows loaded in all (default 20000)")
    p.add_argument("--tables", type=table_names, metavar="NAME,...",
                   help="only these of the demo's tables (users, orders, events; default all three)")
    p.add_argument("--write-rate", type=float, default=20.0, help="live writer ops/s (default 20)")
    p.add_argument("--rows-per-s", type=int, default=None, help="the copy's throttle per Spark task (default none)")
    p.add_argument("--timeout-s", type=float, default=3600.0, help="per attempt")
    p.add_argument("--workdir", default=str(REPO / ".state" / "chaos"))
    p.add_argument("--zookeeper", help="use this ZooKeeper (HOST:PORT) instead of starting one")
    p.add_argument("--spark-workers", type=int, default=2)
    p.add_argument("--celery-workers", type=int, default=2)
    p.add_argument("--no-alerts", action="store_true", help="no SMTP receiver, no alert settings")
    p.add_argument("--retry-delay-s", type=float, default=None,
                   help="[hbase_migration] retry_delay_s of the deployment: seconds between a task's retries "
                        "(default: each step's own, 30 s or a minute)")
    p.add_argument("--fail-first-attempt", action="store_true",
                   help="cut the toolkit off from the source's ZooKeeper until the first attempt's preflight has "
                        "failed for good (the recovery path: state left behind, re-trigger); the nemesis then "
                        "strikes the second attempt")
    args = p.parse_args(argv)
    try:
        make_schedule(args.seed, args.duration, parse_kinds(args.faults, "minihbase" if args.stand_in else "realhbase"))
    except ScheduleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # SIGTERM (a CI job's timeout, `kill`) ends the run as Ctrl-C does: through run()'s cleanup, which stops the
    # deployment, the clusters and ZooKeeper (the default action would leave all of them running).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summary = run(args)
    print(json.dumps(summary, sort_keys=True, default=str), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
