"""The nemesis: follows the migration's phases through Airflow's REST API and fires the schedule's faults at their
moments, each in a thread of its own (faults overlap when their moments do; two on one target wait for each
other), holds them, lifts them, and times the recovery. Beside it, a supervisor restarts an Airflow or Spark
service that died by itself (not held down by a fault), as systemd or Kubernetes would in production, and says
so in the summary.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Any, Callable

from chaos.faults import KIND_CLASSES, Fault, NoTarget, World
from chaos.schedule import PHASES, PlannedFault, phase_of

RECOVERY_TIMEOUT_S = 900.0


class PhaseTracker(threading.Thread):
    """Polls the run's task instances every second; `phase`, `started` ({phase: monotonic instant it was first
    seen}) and `run_state` are read by the nemesis."""

    def __init__(self, world: World, run_id: str, t0: float, interval: float = 1.0) -> None:
        super().__init__(name="chaos-phases", daemon=True)
        self.world, self.run_id, self.t0, self.interval = world, run_id, t0, interval
        self.phase = "peer_add"
        self.started: dict[str, float] = {"peer_add": t0}
        self.run_state = "queued"
        self.errors = 0
        self._halt = threading.Event()

    def run(self) -> None:
        client = self.world.client()
        while not self._halt.is_set():
            try:
                tis = client.task_instances(self.world.dag_id, self.run_id)
                states: dict[str, list[str | None]] = {}
                for ti in tis:
                    states.setdefault(ti["task_id"], []).append(ti["state"])
                phase = phase_of(states)
                now = time.monotonic()
                for p in PHASES[:PHASES.index(phase) + 1]:  # a phase passed between two polls still began
                    self.started.setdefault(p, now)
                self.phase = phase
                self.run_state = client.dag_run(self.world.dag_id, self.run_id)["state"]
            except Exception:  # the API or its database may be down (a fault): keep the last phase
                self.errors += 1
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


class Supervisor(threading.Thread):
    """Restarts an Airflow service or Spark worker that exited unless a fault holds it down."""

    def __init__(self, world: World, t0: float, interval: float = 2.0) -> None:
        super().__init__(name="chaos-supervisor", daemon=True)
        self.world, self.t0, self.interval = world, t0, interval
        self.restarts: list[dict[str, Any]] = []
        self._halt = threading.Event()

    def check_once(self) -> None:
        dep = self.world.dep
        candidates = [(n, p, "airflow") for n, p in list(dep.airflow.procs.items())]
        candidates += [(f"spark-{n}", p, "spark") for n, p in list(dep.spark.procs.items()) if n != "master"]
        for name, proc, part in candidates:
            with self.world.lock:
                held = name in self.world.held_down
            if held or proc.poll() is None:
                continue
            code = proc.returncode
            log_tail = ""
            if part == "airflow":
                path = dep.airflow.log_path(name)
                if path.exists():
                    log_tail = "\n".join(path.read_text(errors="replace").splitlines()[-8:])
                dep.airflow.start_service(name)
            else:
                dep.spark.start_worker(int(name.rsplit("-", 1)[1]))
            entry = {"service": name, "exit_code": code, "at_s": round(time.monotonic() - self.t0, 1),
                     "log_tail": log_tail[-1500:]}
            self.restarts.append(entry)
            self.world.log(f"supervisor: {name} had exited ({code}); restarted it")

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            try:
                self.check_once()
            except Exception as e:
                self.world.log(f"supervisor: {e}")

    def stop(self) -> None:
        self._halt.set()
        self.join(30)


class Nemesis:
    def __init__(self, world: World, schedule: tuple[PlannedFault, ...], log: Callable[[str], None]) -> None:
        self.world, self.schedule, self.log = world, schedule, log
        self.records: list[dict[str, Any]] = [{**f.as_dict(), "fired": False} for f in schedule]
        self._threads: list[threading.Thread] = []
        self._target_locks: dict[str, threading.Lock] = {}
        self.tracker: PhaseTracker | None = None
        self._dispatcher: threading.Thread | None = None
        self._halt = threading.Event()

    # ---------------------------------------------------------------------------------------- dispatch
    def start(self, run_id: str, t0: float) -> "Nemesis":
        self.t0 = t0
        self.t0_wall = time.time() - (time.monotonic() - t0)
        self.world.run_id = run_id
        self.tracker = PhaseTracker(self.world, run_id, t0)
        self.tracker.start()
        self._dispatcher = threading.Thread(target=self._dispatch, name="chaos-dispatch", daemon=True)
        self._dispatcher.start()
        return self

    def _dispatch(self) -> None:
        pending = list(range(len(self.schedule)))
        while pending and not self._halt.is_set():
            tracker = self.tracker
            now = time.monotonic()
            for i in list(pending):
                fault, record = self.schedule[i], self.records[i]
                began = tracker.started.get(fault.phase)
                ended = tracker.run_state in ("success", "failed")
                if began is None:
                    if ended:
                        record["missed"] = f"the run ended ({tracker.run_state}) before phase {fault.phase}"
                        pending.remove(i)
                    continue
                if now < began + fault.offset_s:
                    if ended:
                        record["missed"] = (f"the run ended ({tracker.run_state}) {now - began:.1f}s into "
                                            f"{fault.phase}, before this fault's moment")
                        pending.remove(i)
                    continue
                pending.remove(i)
                record["dispatched"] = True
                if tracker.phase != fault.phase or ended:
                    record["missed"] = (f"phase {fault.phase} was over (now {tracker.phase if not ended else 'ended'})"
                                        f" at its moment, {fault.offset_s}s after it began")
                    continue
                t = threading.Thread(target=self._execute, args=(fault, record), name=f"chaos-fault-{fault.index}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
            self._halt.wait(0.2)

    # ---------------------------------------------------------------------------------------- one fault
    def _execute(self, planned: PlannedFault, record: dict[str, Any]) -> None:
        fault: Fault = KIND_CLASSES[planned.kind](self.world, planned.target, dict(planned.settings))
        lock = self._target_locks.setdefault(fault.lock_key, threading.Lock())
        asked = time.monotonic()
        with lock:
            record["waited_for_target_s"] = round(time.monotonic() - asked, 1)
            record["phase_at_injection"] = self.tracker.phase if self.tracker else None
            started = time.time()
            fault.injected_at = started
            try:
                record["details"] = fault.inject()
            except NoTarget as e:
                record["missed"] = str(e)
                self.log(f"fault {planned.index} {planned.kind}: {e}")
                return
            except Exception as e:
                record["error"] = f"inject: {type(e).__name__}: {e}"
                record["traceback"] = traceback.format_exc()[-2000:]
                self.log(f"fault {planned.index} {planned.kind} on {planned.target} failed to inject: {e}")
                return
            record["fired"] = True
            injected_at = fault.injected_at  # a zk_expire searches first: its instant is the expiry's
            record["at_s"] = round(injected_at - self.t0_wall, 1)  # since the run was triggered
            record["phase_at_injection"] = self.tracker.phase if self.tracker else None
            self.log(f"fault {planned.index}: {planned.kind} on {planned.target} in {record['phase_at_injection']} "
                     f"(hold {planned.hold_s}s) {record.get('details') or ''}")
            time.sleep(planned.hold_s)
            try:
                record["heal"] = fault.heal()
            except Exception as e:
                record["error"] = f"heal: {type(e).__name__}: {e}"
                record["traceback"] = traceback.format_exc()[-2000:]
                self.log(f"fault {planned.index} {planned.kind}: heal failed: {e}")
            fault.healed_at = time.time()
            record["held_s"] = round(fault.healed_at - injected_at, 1)
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        last_error = None
        while time.monotonic() < deadline:
            try:
                if fault.recovered():
                    now = time.time()
                    record["time_to_recover_s"] = round(now - injected_at, 1)
                    record["recovered_after_heal_s"] = round(now - fault.healed_at, 1)
                    self.log(f"fault {planned.index} {planned.kind}: recovered {record['time_to_recover_s']}s "
                             "after injection")
                    return
            except Exception as e:
                last_error = f"{type(e).__name__}: {e}"
            time.sleep(1.0)
        record["time_to_recover_s"] = None
        record["not_recovered"] = f"not recovered within {RECOVERY_TIMEOUT_S:.0f}s" + (
            f" (last probe error: {last_error})" if last_error else "")

    # ---------------------------------------------------------------------------------------- end
    def stop(self, timeout: float = RECOVERY_TIMEOUT_S + 120) -> None:
        """Stop dispatching (faults not fired yet are recorded as missed), wait until every fired fault is lifted
        and its recovery judged."""
        self._halt.set()
        if self._dispatcher is not None:
            self._dispatcher.join(10)
        for record in self.records:
            if not record.get("dispatched") and "missed" not in record:
                record["missed"] = "the nemesis stopped (the run ended) before its moment"
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if self.tracker is not None:
            self.tracker.stop()
