"""The demo on the production-shaped deployment (`make demo-cluster`, `python -m demo.run --cluster`): the
migration DAG triggered through Airflow's REST API and run by the CeleryExecutor's workers, its Spark jobs on a
standalone cluster, the deferrable catch-up served by the triggerer (see `deploy/`).

What the run shows about where things ran (which Celery worker ran each mapped copy and verify, that
`wait_drained` was deferred to the triggerer, which Spark workers ran each application's executors) is
gathered here from Airflow's REST API and the Spark master's and workers' JSON endpoints, for the summary.
"""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

DAG_ID = "hbase_table_migration"

# ------------------------------------------------------------------------------------------------------------
# Thrift gateways per cluster: the cluster demo asks minihbase for GATEWAYS_PER_CLUSTER of each kind per cluster
# (in a derived clusters.toml); the connections list them all (`thrift_servers`, `thrift2_servers`).
GATEWAYS_PER_CLUSTER = 2
GATEWAY_SETTINGS = ("thrift_gateways", "thrift2_gateways")


def gateway_settings(count: int = GATEWAYS_PER_CLUSTER) -> dict[str, int]:
    """The gateway settings this checkout's minihbase supports, each set to `count`."""
    from minihbase.config import ClusterConfig

    known = {f.name for f in fields(ClusterConfig)}
    return {name: count for name in GATEWAY_SETTINGS if name in known}
# ------------------------------------------------------------------------------------------------------------


def clusters_toml(workdir: Path, gateways: dict[str, int], unique_parents: bool) -> Path | None:
    """A clusters.toml derived from minihbase's checked-in one: the gateway settings in `[defaults]`, and with
    `unique_parents` znode parents no other run on the same ZooKeeper uses. None when nothing differs."""
    if not gateways and not unique_parents:
        return None
    from minihbase.config import CLUSTERS_TOML

    text = Path(CLUSTERS_TOML).read_text(encoding="utf-8")
    for name, value in gateways.items():  # set in [defaults] (replaced when the checked-in file sets it already)
        text, n = re.subn(rf"^{name}\s*=.*$", f"{name} = {value}", text, count=1, flags=re.M)
        if not n:
            text = text.replace("[defaults]\n", f"[defaults]\n{name} = {value}\n", 1)
    if unique_parents:
        suffix = uuid.uuid4().hex[:8]
        text = re.sub(r'^(znode_parent\s*=\s*")([^"]+)"', lambda m: f'{m.group(1)}{m.group(2)}-{suffix}"', text,
                      flags=re.M)
    path = workdir / "clusters.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run_on_deployment(dep: Any, conf: dict[str, Any], source_conn: dict, target_conn: dict,
                      on_caught_up: Callable[[], None], timeout_s: float,
                      log: Callable[[str], None] = print) -> dict[str, Any]:
    """Set the clusters' connections, trigger the migration through the REST API, and follow it to the end
    through the API (task states every 2 s; `on_caught_up()` once `wait_drained` has succeeded).
    Returns {"run_id", "state", "started_ms", "observed": {(task_id, map_index): [...]}}."""
    client = dep.client
    client.set_connection("hbase_source", source_conn)
    client.set_connection("hbase_target", target_conn)
    started_ms = int(time.time() * 1000)
    run = client.trigger(DAG_ID, conf)
    run_id = run["dag_run_id"]
    log(f"triggered {DAG_ID} through {dep.airflow.api_url}/api/v2/dags/{DAG_ID}/dagRuns: run {run_id}")
    observed: dict[tuple[str, int], list[dict[str, Any]]] = {}
    caught_up = False

    def on_poll(_run: dict[str, Any]) -> None:
        nonlocal caught_up
        for ti in client.task_instances(DAG_ID, run_id):
            key = (ti["task_id"], ti["map_index"])
            seen = observed.setdefault(key, [])
            entry = {"state": ti["state"], "hostname": ti["hostname"], "pid": ti["pid"], "try": ti["try_number"]}
            if ti.get("trigger"):
                entry["trigger"] = ti["trigger"].get("classpath")
            if ti.get("triggerer_job"):
                job = ti["triggerer_job"]
                entry["triggerer_job"] = {"id": job.get("id"), "job_type": job.get("job_type"),
                                          "hostname": job.get("hostname")}
            if not seen or {k: v for k, v in seen[-1].items() if k != "at"} != entry:
                seen.append({**entry, "at": round(time.time(), 1)})
                if entry["state"] in ("running", "deferred", "success", "failed", "up_for_retry"):
                    where = entry["hostname"] or "-"
                    log(f"  {key[0]}{'' if key[1] < 0 else f'[{key[1]}]'}: {entry['state']} "
                        f"(try {entry['try']}, {where})")
        drains = {k: v[-1]["state"] for k, v in observed.items() if k[0] == "batch.wait_drained"}
        if drains and all(s == "success" for s in drains.values()) and not caught_up:  # every batch caught up
            caught_up = True
            on_caught_up()

    final = client.wait_run(DAG_ID, run_id, timeout=timeout_s, interval=2.0, on_poll=on_poll)
    if not caught_up:
        on_caught_up()
    return {"run_id": run_id, "state": final["state"], "started_ms": started_ms, "observed": observed}


def spark_applications(dep: Any, since_ms: int) -> list[dict[str, Any]]:
    """The Spark applications started since `since_ms`, each with its executors as the workers report them
    (the master's `/json/` lists applications and workers; each worker's `/json/` its executors)."""
    state = dep.spark.state()
    apps = {a["id"]: {"id": a["id"], "name": a["name"], "state": a.get("state"), "cores": a.get("cores"),
                      "executors": []}
            for a in state.get("activeapps", []) + state.get("completedapps", [])
            if a.get("starttime", 0) >= since_ms}
    for worker in state.get("workers", []):
        info = dep.spark.worker_state(worker["webuiaddress"])
        work_dir = dep.spark.worker_work_dir(worker["webuiaddress"])
        for ex in info.get("executors", []) + info.get("finishedexecutors", []):
            app_id = ex.get("appid")
            if app_id not in apps:
                continue
            exec_dir = work_dir / app_id / str(ex.get("id")) if work_dir else None
            apps[app_id]["executors"].append({
                "worker_id": worker["id"], "worker_ui": worker["webuiaddress"], "executor_id": ex.get("id"),
                # what the job shipped, as the executor received it in its working directory
                "shipped_files": sorted(p.name for p in exec_dir.glob("*.zip")) if exec_dir else []})
    return sorted(apps.values(), key=lambda a: a["id"])


def evidence(dep: Any, outcome: dict[str, Any]) -> dict[str, Any]:
    """Where the run's work ran, for the summary (and the end-to-end test's checks)."""
    client, run_id, observed = dep.client, outcome["run_id"], outcome["observed"]
    mapped: dict[str, dict[str, Any]] = {}
    for (task_id, map_index), seen in sorted(observed.items()):
        if task_id not in ("batch.copy", "batch.verify") or map_index < 0:
            continue
        try:  # a batch's summary: its tables' (the demo on a deployment runs each table as a batch of its own)
            table = ",".join((client.xcom(DAG_ID, run_id, task_id, map_index) or {}).get("tables") or {}) or None
        except Exception:  # no XCom (the task failed): name it by its map index
            table = None
        hosts = sorted({s["hostname"] for s in seen if s["hostname"]})
        mapped.setdefault(task_id.split(".")[-1], {})[table or f"map_index={map_index}"] = {
            "celery_workers": hosts, "tries": max(s["try"] for s in seen),
            "states": list(dict.fromkeys(s["state"] for s in seen if s["state"]))}
    drained = observed.get(("batch.wait_drained", 0), [])  # the first batch's
    return {
        "api_url": dep.airflow.api_url,
        "executor": "CeleryExecutor",
        "celery_workers": len(dep.describe()["celery_workers"]),
        "mapped_tasks": mapped,
        "copy_workers_used": sorted({h for t in mapped.get("copy", {}).values() for h in t["celery_workers"]}),
        "wait_drained": {
            "states": list(dict.fromkeys(s["state"] for s in drained if s["state"])),
            "trigger": next((s["trigger"] for s in drained if s.get("trigger")), None),
            "triggerer_job": next((s["triggerer_job"] for s in drained if s.get("triggerer_job")), None),
        },
        "spark": {"master": dep.spark.master_url, "master_ui": dep.spark.master_ui_url,
                  "workers": dep.spark.n_workers,
                  "applications": spark_applications(dep, outcome["started_ms"] - 1000)},
    }
