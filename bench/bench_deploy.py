"""Copy rows/s on Spark local[2] against the Spark standalone cluster of the deployment (a master and two 1-core
workers, started from the pyspark package's own classes; see deploy/spark.py), and through one Thrift gateway per
cluster against two, measured in one run.

All copies are the same `spark-submit jobs/copy_table.py` of the same 8-region table (minihbase dc1 -> dc2, two
Thrift gateways of each kind per cluster); only the master, or the gateways the connections list, differs. The
cluster's application takes both workers' cores (spark.cores.max=2), and its executors get the toolkit from
what the job ships (the workers have no PYTHONPATH). Figures (printed, never
asserted): rows/s inside the job (rows / the job's own elapsed time, Spark start included) and end to end
(rows / spark-submit's wall time), and cluster/local ratios.

On this machine's 2 cores the cluster's two executors share the cores with the driver, minihbase and the
Spark daemons: the figure shows the mechanism (executors in worker processes, the package shipped, the
partitions spread over workers), not how it scales; with workers on their own machines the copy scales with
executor cores until the source's region servers (or the throttle) bound it.

    .venv/bin/python bench/bench_deploy.py [--rows 30000] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from bench.bench_copy import SPLITS, TABLES, load  # noqa: E402
from deploy.spark import SparkStandalone  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402

FAMILIES = TABLES["v1"][0]


def one_gateway(cluster) -> str:
    """The cluster's connection listing only its first gateway of each kind."""
    conn = json.loads(cluster.connection_json)
    conn["extra"].pop("thrift_servers", None)
    conn["extra"]["thrift2_servers"] = conn["extra"]["thrift2_servers"].split(",")[0]
    return json.dumps(conn)


def submit(master: str | None, conf_dir: Path | None, source: str, target: str, table: str, target_table: str,
           workdir: Path) -> dict:
    """One `spark-submit jobs/copy_table.py`; its summary plus the wall time."""
    summary_file = workdir / f"{target_table}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_CONF_DIR", "PYSPARK_"))}
    env.update({"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO)})
    cmd = [str(Path(sys.executable).parent / "spark-submit")]
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)  # spark-defaults.conf: the master, 2 cores, executor memory
        cmd += ["--conf", "spark.cores.max=2"]
    else:
        cmd += ["--master", master, "--conf", "spark.ui.enabled=false"]
    cmd += [str(REPO / "jobs" / "copy_table.py"), "--source", source, "--target", target, "--table", table,
            "--target-table", target_table, "--summary-file", str(summary_file), "--log-level", "WARNING"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"copy on {master or 'the cluster'} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    summary = json.loads(summary_file.read_text())
    return {"rows": summary["rows"], "partitions": summary["partitions"], "job_s": summary["elapsed_s"],
            "wall_s": round(wall, 2), "job_rows_per_s": round(summary["rows"] / summary["elapsed_s"]),
            "wall_rows_per_s": round(summary["rows"] / wall)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=30_000)
    p.add_argument("--repeat", type=int, default=2, help="copies per master (the best one counts)")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-deploy-"))
    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    spark = None
    dc1 = dc2 = None
    try:
        gateways = {"thrift_gateways": 2, "thrift2_gateways": 2}
        dc1 = MiniCluster.start(zk.hosts, workdir, name="dc1", znode_parent="/hbase-bench-deploy-dc1", **gateways)
        dc2 = MiniCluster.start(zk.hosts, workdir, name="dc2", znode_parent="/hbase-bench-deploy-dc2", **gateways)
        spark = SparkStandalone(workdir, dict(os.environ), workers=2, worker_cores=1, cores_per_app=2).start()
        load(dc1, "src", args.rows)
        both = (dc1.connection_json, dc2.connection_json)
        setups = {"local[2]": ("local[2]", None, both), "local[2], one gateway": ("local[2]", None, (
                      one_gateway(dc1), one_gateway(dc2))), "standalone": (None, spark.client_conf_dir, both)}
        runs: dict[str, list[dict]] = {name: [] for name in setups}
        for i in range(args.repeat):
            for n, (name, (master, conf_dir, (src, dst))) in enumerate(setups.items()):
                target = f"t_{n}_{i}"
                dc2.create_table(target, FAMILIES, SPLITS)
                runs[name].append(submit(master, conf_dir, src, dst, "src", target, workdir))
        executors = {}
        for worker in spark.state()["workers"]:
            info = spark.worker_state(worker["webuiaddress"])
            executors[worker["id"]] = len(info.get("finishedexecutors", []) + info.get("executors", []))
    finally:
        if spark is not None:
            spark.stop()
        for c in (dc1, dc2):
            if c is not None:
                c.stop()
        zk.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    best = {name: max(r, key=lambda x: x["job_rows_per_s"]) for name, r in runs.items()}
    local, cluster, single = best["local[2]"], best["standalone"], best["local[2], one gateway"]
    figures = {
        "local2_one_gateway_job_rows_per_s": single["job_rows_per_s"],
        "two_vs_one_gateway_job": round(local["job_rows_per_s"] / single["job_rows_per_s"], 2),
        "rows": args.rows, "partitions": local["partitions"], "runs": runs,
        "local2_job_rows_per_s": local["job_rows_per_s"], "standalone_job_rows_per_s": cluster["job_rows_per_s"],
        "standalone_vs_local2_job": round(cluster["job_rows_per_s"] / local["job_rows_per_s"], 2),
        "standalone_vs_local2_wall": round(cluster["wall_rows_per_s"] / local["wall_rows_per_s"], 2),
        "executors_per_worker": executors,
        "note": "2 cores: this shows the mechanism (executors in two worker processes, the toolkit shipped), "
                "not scale",
    }
    print(f"copy of {args.rows} rows ({local['partitions']} partitions), best of {args.repeat}:")
    print(f"  local[2], one gateway a cluster: {single['job_rows_per_s']} rows/s in the job; two gateways: "
          f"{local['job_rows_per_s']} ({figures['two_vs_one_gateway_job']}x)")
    print(f"  local[2]:                      {local['job_rows_per_s']} rows/s in the job, "
          f"{local['wall_rows_per_s']} rows/s end to end ({local['wall_s']} s)")
    print(f"  standalone, 2 workers x 1 core: {cluster['job_rows_per_s']} rows/s in the job, "
          f"{cluster['wall_rows_per_s']} rows/s end to end ({cluster['wall_s']} s)")
    print(f"  standalone / local[2] = {figures['standalone_vs_local2_job']} (in the job), "
          f"{figures['standalone_vs_local2_wall']} (end to end); executors per worker: {executors}")
    print("  on 2 cores this shows the mechanism, not scale: the two executors, the driver, minihbase and the Spark "
          "daemons share the same 2 cores")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
