"""A Spark standalone cluster from the installed pyspark package's own classes: one master and N workers
(`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`), all bound to 127.0.0.1.

The workers' environment has no PYTHONPATH (nothing of this repository): the executors import the toolkit only
from what a job ships (`hbase_migration/data/executors.py: ship_package`, spark-submit `--py-files`).
PYSPARK_PYTHON is the venv's interpreter (it has happybase, thriftpy2, tenacity). Applications get
`spark-defaults.conf` from `client_conf_dir` (the Airflow workers export it as SPARK_CONF_DIR): executor memory, cores
per application, the executors' Python.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from deploy import spark_jvm
from deploy.processes import free_port, spawn, stop_session, wait_until


def spark_home() -> Path:
    """The installed pyspark package (it carries bin/spark-class and the jars)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise RuntimeError("pyspark is not installed in this Python")
    home = Path(spec.origin).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise RuntimeError(f"{home}/bin/spark-class not found")
    return home


class SparkStandalone:
    def __init__(self, workdir: Path, env: Mapping[str, str], workers: int = 2, worker_cores: int = 1,
                 worker_memory: str = "1g", executor_memory: str = "512m", cores_per_app: int = 1,
                 python: str | None = None) -> None:
        self.workdir = Path(workdir)
        self.dir = self.workdir / "spark"
        self.home = spark_home()
        self.python = python or sys.executable
        self.n_workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.executor_memory = executor_memory
        self.cores_per_app = cores_per_app
        self.port = free_port()
        self.ui_port = free_port()
        self.rest_port = free_port()  # the master's REST submission server (cluster deploy mode)
        self.worker_ui_ports = [free_port() for _ in range(workers)]
        base = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "SPARK_CONF_DIR")}
        base.update({"SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": self.python,
                     "SPARK_CONF_DIR": str(self.dir / "daemon-conf"), "SPARK_LOG_DIR": str(self.dir / "logs"),
                     "SPARK_NO_DAEMONIZE": "1"})
        self.env = base
        self.procs: dict[str, subprocess.Popen] = {}

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def master_ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def client_conf_dir(self) -> Path:
        """SPARK_CONF_DIR for spark-submit (the Airflow workers): spark-defaults.conf for applications."""
        return self.dir / "conf"

    def worker_dir(self, index: int) -> Path:
        return self.dir / f"worker-{index + 1}"

    def state(self) -> dict[str, Any]:
        """The master's JSON status (`/json/`): workers, active and completed applications."""
        with urllib.request.urlopen(self.master_ui_url + "/json/", timeout=10) as r:
            return json.load(r)

    @staticmethod
    def worker_state(webui: str) -> dict[str, Any]:
        """A worker's JSON status: its running and finished executors (with their application ids)."""
        with urllib.request.urlopen(webui.rstrip("/") + "/json/", timeout=10) as r:
            return json.load(r)

    def _write_conf(self) -> None:
        (self.dir / "daemon-conf").mkdir(parents=True, exist_ok=True)
        self.client_conf_dir.mkdir(parents=True, exist_ok=True)
        # What every application gets unless it says otherwise. One core per application: two copies run at
        # once on a two-worker cluster (an application would otherwise take every free core).
        (self.client_conf_dir / "spark-defaults.conf").write_text("\n".join([
            f"spark.master                 {self.master_url}",
            f"spark.cores.max              {self.cores_per_app}",
            "spark.executor.cores         1",
            f"spark.executor.memory        {self.executor_memory}",
            "spark.driver.memory          512m",
            f"spark.pyspark.python         {self.python}",
            f"spark.pyspark.driver.python  {self.python}",
            "spark.driver.host            127.0.0.1",
            "spark.driver.bindAddress     127.0.0.1",
            "spark.ui.enabled             false",
            "spark.ui.showConsoleProgress false",
            # short jobs on a small machine (deploy/spark_jvm.py: C1 only, serial GC); the driver in client mode
            # gets the same through SPARK_SUBMIT_OPTS
            f"spark.driver.extraJavaOptions   {' '.join(spark_jvm.FLAGS)}",
            f"spark.executor.extraJavaOptions {' '.join(spark_jvm.FLAGS)}",
        ]) + "\n", encoding="utf-8")

    def start(self, timeout: float = 120.0) -> "SparkStandalone":
        self._write_conf()
        cls = str(self.home / "bin" / "spark-class")
        log = self.dir / "master.log"
        master_env = {**self.env, "SPARK_MASTER_OPTS": f"-Dspark.deploy.defaultCores={self.cores_per_app} "
                                                      f"-Dspark.master.rest.port={self.rest_port}"}
        self.procs["master"] = spawn(
            self.workdir, "spark-master",
            [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
             "--webui-port", str(self.ui_port)], master_env, log, cwd=self.dir)
        wait_until(lambda: self.state().get("status") == "ALIVE", timeout, "the Spark master",
                   proc=self.procs["master"], log_path=log)
        for i in range(self.n_workers):
            self.start_worker(i + 1)
        wait_until(lambda: self.state().get("aliveworkers", 0) >= self.n_workers, timeout,
                   f"{self.n_workers} Spark workers to register", proc=self.procs["master"], log_path=log)
        return self

    def worker_work_dir(self, webui: str) -> Path | None:
        """The work directory (one folder per application and executor) of the worker with that web UI."""
        for i, port in enumerate(self.worker_ui_ports):
            if webui.rstrip("/").endswith(f":{port}"):
                return self.worker_dir(i) / "work"
        return None

    def start_worker(self, index: int) -> subprocess.Popen:
        """Start worker `index` (1-based) on its own web UI port and work directory (again, after a kill: it
        registers with the master as a new worker id)."""
        proc = self.procs.get(f"worker-{index}")
        if proc is not None and proc.poll() is None:
            raise RuntimeError(f"Spark worker {index} still runs (pid {proc.pid})")
        wdir = self.worker_dir(index - 1)
        wdir.mkdir(parents=True, exist_ok=True)
        cls = str(self.home / "bin" / "spark-class")
        self.procs[f"worker-{index}"] = spawn(
            self.workdir, f"spark-worker-{index}",
            [cls, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores",
             str(self.worker_cores), "--memory", self.worker_memory, "--work-dir", str(wdir / "work"),
             "--webui-port", str(self.worker_ui_ports[index - 1]), self.master_url],
            self.env, wdir / "worker.log", cwd=wdir)
        return self.procs[f"worker-{index}"]

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL worker `index` (1-based) and its session (the executors it runs), as a lost machine; returns
        the pids killed."""
        from deploy.processes import kill_session, session_members

        proc = self.procs[f"worker-{index}"]
        pids = session_members(proc.pid)
        kill_session(proc.pid)
        proc.wait(10)
        return pids

    def alive_workers(self) -> int:
        """How many workers the master lists ALIVE."""
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def worker_pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items() if name.startswith("worker-")}

    def stop(self) -> None:
        errors = []
        for name in [n for n in self.procs if n != "master"] + (["master"] if "master" in self.procs else []):
            proc = self.procs[name]
            try:
                stop_session(proc.pid, f"spark {name}", timeout=20)
                proc.wait(5)
            except Exception as e:  # stop the others anyway; report at the end
                errors.append(f"{name}: {e}")
        self.procs.clear()
        if errors:
            raise RuntimeError("; ".join(errors))

