"""Airflow as production runs it: API server, scheduler, DAG processor, triggerer and Celery workers as separate
processes, PostgreSQL as the metadata database and Redis as the Celery broker.

The deployment has an AIRFLOW_HOME of its own (`<workdir>/airflow`): an airflow.cfg made from the repository's
(same DAGs, plugins and `[hbase_migration]` settings) with the deployment's overrides, secrets generated for
this run only (fernet key, API secret, JWT secret, the admin's password, the broker's URL with its password)
and the PostgreSQL URLs (metadata database, ledger: the server asks for a password) in `<home>/secrets` (mode 700),
read through `*_cmd` options; logs in `<home>/logs`.
"""
from __future__ import annotations

import base64
import configparser
import json
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from deploy.processes import free_port, signal_session, spawn, stop_session, wait_until

REPO = Path(__file__).resolve().parents[1]
ADMIN = "admin"


def _secret_file(path: Path, value: str) -> None:
    # No trailing newline: a *_cmd option's value is the command's output as printed (a newline would end
    # `sql_alchemy_conn`'s database name).
    path.write_text(value, encoding="utf-8")
    path.chmod(0o600)


def _cmd(path: Path) -> str:
    return f"cat {path}"


class AirflowServices:
    def __init__(self, workdir: Path, env: Mapping[str, str], *, sql_alchemy_conn: str, broker_url: str,
                 result_backend: str, ledger_url: str, celery_workers: int = 2, worker_concurrency: int = 1,
                 heartbeat_timeout_s: int = 30, queued_timeout_s: int = 90,
                 overrides: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.workdir = Path(workdir)
        self.home = self.workdir / "airflow"
        self.secrets = self.home / "secrets"
        self.api_port = free_port()
        self.celery_workers = celery_workers
        self.worker_concurrency = worker_concurrency
        self.sql_alchemy_conn = sql_alchemy_conn
        self.broker_url = broker_url
        self.result_backend = result_backend
        self.ledger_url = ledger_url
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.queued_timeout_s = queued_timeout_s
        self.overrides = overrides or {}
        self.env = {**env, "AIRFLOW_HOME": str(self.home), "AIRFLOW_CONFIG": str(self.home / "airflow.cfg")}
        self.procs: dict[str, subprocess.Popen] = {}
        self.worker_envs: dict[str, dict[str, str]] = {}
        self.commands: dict[str, tuple[list[str], dict[str, str] | None]] = {}  # how each service was started

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def admin_password(self) -> str:
        return json.loads((self.secrets / "passwords.json").read_text())[ADMIN]

    def log_path(self, name: str) -> Path:
        return self.home / "logs" / "services" / f"{name}.log"

    # -------------------------------------------------------------------------------------------- config
    def write_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.secrets.mkdir(mode=0o700, exist_ok=True)
        _secret_file(self.secrets / "fernet_key", base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        _secret_file(self.secrets / "api_secret_key", secrets.token_urlsafe(32))
        _secret_file(self.secrets / "jwt_secret", secrets.token_urlsafe(32))
        _secret_file(self.secrets / "broker_url", self.broker_url)
        _secret_file(self.secrets / "result_backend", self.result_backend)
        # The PostgreSQL URLs carry its password: read through *_cmd options too, never written in airflow.cfg.
        _secret_file(self.secrets / "sql_alchemy_conn", self.sql_alchemy_conn)
        _secret_file(self.secrets / "ledger_url", self.ledger_url)
        # SimpleAuthManager reads its users' passwords from this file (and generates none when present).
        _secret_file(self.secrets / "passwords.json", json.dumps({ADMIN: secrets.token_urlsafe(18)}))

        cfg = configparser.RawConfigParser(interpolation=None)
        cfg.optionxform = str  # keep option names as written
        cfg.read(REPO / "airflow.cfg", encoding="utf-8")
        logs = self.home / "logs"
        settings: dict[str, dict[str, Any]] = {
            "core": {
                "dags_folder": REPO / "dags", "plugins_folder": self.home / "plugins",  # the dashboard: entry point
                "executor": "CeleryExecutor",
                "execution_api_server_url": f"{self.api_url}/execution/",
                "hostname_callable": "deploy.hostname.get_hostname",
                "fernet_key_cmd": _cmd(self.secrets / "fernet_key"),
                "simple_auth_manager_users": f"{ADMIN}:admin",
                "simple_auth_manager_passwords_file": self.secrets / "passwords.json",
                "parallelism": max(4, 2 * self.celery_workers * self.worker_concurrency),
                # As many pool slots as the workers have: a task is queued (sent to Celery) only when a worker
                # can take it, so "queued" for long means the worker that took it was lost (below).
                "default_pool_task_slot_count": self.celery_workers * self.worker_concurrency,
            },
            "database": {"sql_alchemy_conn_cmd": _cmd(self.secrets / "sql_alchemy_conn"),
                         # psycopg 3 has an asyncio driver; Airflow's default async URL would need asyncpg.
                         "sql_alchemy_conn_async_cmd": _cmd(self.secrets / "sql_alchemy_conn")},
            "logging": {"base_log_folder": logs, "dag_processor_child_process_log_directory": logs / "dag_processor"},
            "api": {"host": "127.0.0.1", "port": self.api_port, "base_url": self.api_url, "workers": 1,
                    "secret_key_cmd": _cmd(self.secrets / "api_secret_key")},
            "api_auth": {"jwt_secret_cmd": _cmd(self.secrets / "jwt_secret")},
            "celery": {"broker_url_cmd": _cmd(self.secrets / "broker_url"),
                       "result_backend_cmd": _cmd(self.secrets / "result_backend"),
                       "worker_concurrency": self.worker_concurrency, "worker_prefetch_multiplier": 1},
            # A worker that dies (the resume test kills one) is noticed after this many seconds without a
            # heartbeat, and its task instance fails (and retries) instead of waiting for the default 300 s.
            # A task whose worker was lost after it took the task's message but before it ran it stays queued
            # (Redis redelivers an unacknowledged message only after its visibility timeout, 24 h): the
            # scheduler requeues it after task_queued_timeout (default 600 s), checked every 15 s here.
            "scheduler": {"task_instance_heartbeat_timeout": self.heartbeat_timeout_s,
                          "task_queued_timeout": self.queued_timeout_s, "task_queued_timeout_check_interval": 15},
            "hbase_migration": {"ledger_url_cmd": _cmd(self.secrets / "ledger_url"), "ledger_conn_id": ""},
        }
        for section, values in self.overrides.items():
            settings.setdefault(section, {}).update(values)
        for section, values in settings.items():
            if not cfg.has_section(section):
                cfg.add_section(section)
            for key, value in values.items():
                for stale in (key[:-4] if key.endswith("_cmd") else key + "_cmd",):
                    cfg.remove_option(section, stale)
                cfg.set(section, key, str(value))
        with open(self.home / "airflow.cfg", "w", encoding="utf-8") as f:
            f.write("# Generated by deploy/airflow.py for one deployment (from the repository's airflow.cfg).\n")
            cfg.write(f)

    def airflow(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run an `airflow` CLI command against this deployment."""
        return subprocess.run([str(Path(sys.executable).parent / "airflow"), *args], env=self.env,
                              cwd=str(self.home), capture_output=True, text=True, timeout=timeout)

    def migrate(self) -> None:
        proc = self.airflow("db", "migrate")
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        (self.home / "logs" / "db-migrate.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        if proc.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed ({proc.returncode}): {proc.stderr[-3000:]}")
        # The migration DAG's pools (hbase_spark, hbase_cluster): a task in a pool that does not exist is never run
        proc = self.airflow("pools", "import", str(Path(__file__).resolve().parent / "pools.json"))
        if proc.returncode != 0:
            raise RuntimeError(f"airflow pools import failed ({proc.returncode}): {proc.stderr[-3000:]}")

    # -------------------------------------------------------------------------------------------- processes
    def _start(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> subprocess.Popen:
        self.commands[name] = (list(args), None if env is None else dict(env))
        proc = spawn(self.workdir, f"airflow-{name}", [str(Path(sys.executable).parent / "airflow"), *args],
                     env or self.env, self.log_path(name), cwd=self.home)
        self.procs[name] = proc
        return proc

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.api_url}/api/v2/monitor/health", timeout=10) as r:
            return json.load(r)

    def start(self, timeout: float = 300.0) -> "AirflowServices":
        # All at once: none of them needs the API server to start (a task needs it, and none runs before the
        # workers are ready), and each spends its first half-minute importing Airflow.
        self._start("api-server", ["api-server", "--host", "127.0.0.1", "--port", str(self.api_port),
                                   "--workers", "1"])
        self._start("scheduler", ["scheduler"])
        self._start("dag-processor", ["dag-processor"])
        # No log servers (they bind every interface, on fixed ports for the triggerer): the task and trigger
        # logs are files under [logging] base_log_folder on this machine, which the API server reads directly.
        self._start("triggerer", ["triggerer", "--skip-serve-logs"])
        for i in range(1, self.celery_workers + 1):
            self.start_worker(i, wait=False)

        wait_until(lambda: self.health().get("metadatabase", {}).get("status") == "healthy", timeout,
                   "the Airflow API server", proc=self.procs["api-server"], log_path=self.log_path("api-server"))

        def healthy() -> bool:
            h = self.health()
            return all((h.get(k) or {}).get("status") == "healthy" for k in ("scheduler", "triggerer", "dag_processor"))

        wait_until(healthy, timeout, "scheduler, triggerer and DAG processor to report healthy",
                   proc=self.procs["scheduler"], log_path=self.log_path("scheduler"))
        for i in range(1, self.celery_workers + 1):
            self.wait_worker(i, timeout)
        return self

    def worker_name(self, index: int) -> str:
        return f"celery-worker-{index}"

    def start_worker(self, index: int, wait: bool = True, timeout: float = 180.0) -> subprocess.Popen:
        name = self.worker_name(index)
        log = self.log_path(name)
        if log.exists():  # a restart: keep the old log beside the new one
            log.rename(log.with_suffix(f".{len(list(log.parent.glob(name + '*')))}.log"))
        env = {**self.env, "HBASE_MIGRATION_WORKER_HOSTNAME": name}
        self.worker_envs[name] = env
        proc = self._start(name, ["celery", "worker", "--celery-hostname", f"{name}@127.0.0.1", "--concurrency",
                                  str(self.worker_concurrency), "--without-mingle", "--without-gossip",
                                  "--skip-serve-logs"], env)
        if wait:
            self.wait_worker(index, timeout)
        return proc

    def wait_worker(self, index: int, timeout: float = 180.0) -> None:
        name = self.worker_name(index)
        log = self.log_path(name)
        wait_until(lambda: " ready." in log.read_text(errors="replace"), timeout, f"Celery worker {name}",
                   proc=self.procs[name], log_path=log)

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL the worker and everything it runs (its pool, task supervisors, spark-submit and the Spark
        driver), as a lost machine would; returns the pids that were killed."""
        from deploy.processes import kill_session, session_members

        proc = self.procs[self.worker_name(index)]
        pids = session_members(proc.pid)
        kill_session(proc.pid)
        proc.wait(10)
        return pids

    SERVICES = ("api-server", "scheduler", "dag-processor", "triggerer")

    def kill_service(self, name: str) -> list[int]:
        """SIGKILL one service ("scheduler", "triggerer", "dag-processor", "api-server" or a Celery worker's
        name) and every process of its session, as a lost machine would; returns the pids killed."""
        from deploy.processes import kill_session, session_members

        if name not in self.procs:
            raise KeyError(f"no Airflow service {name!r}; running: {', '.join(sorted(self.procs))}")
        proc = self.procs[name]
        pids = session_members(proc.pid)
        kill_session(proc.pid)
        proc.wait(10)
        return pids

    def start_service(self, name: str) -> subprocess.Popen:
        """Start a service again as it was started (a Celery worker through `start_worker`, without waiting)."""
        if name.startswith("celery-worker-"):
            return self.start_worker(int(name.rsplit("-", 1)[1]), wait=False)
        if name not in self.commands:
            raise KeyError(f"no Airflow service {name!r} was started")
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is None:
            raise RuntimeError(f"airflow {name} still runs (pid {proc.pid})")
        log = self.log_path(name)
        if log.exists():  # keep the old log beside the new one
            log.rename(log.with_suffix(f".{len(list(log.parent.glob(name + '*')))}.log"))
        args, env = self.commands[name]
        return self._start(name, args, env)

    def stop(self) -> None:
        errors = []
        order = [n for n in self.procs if n.startswith("celery-worker")] + [
            "scheduler", "triggerer", "dag-processor", "api-server"]
        # Every component told to stop at once (each takes seconds to wind down; one after the other they took
        # more than a minute), then each waited for in turn, in the order a worker's tasks end before the scheduler.
        for name in order:
            if name in self.procs:
                signal_session(self.procs[name].pid)
        for name in order:
            proc = self.procs.get(name)
            if proc is None:
                continue
            try:
                stop_session(proc.pid, f"airflow {name}", timeout=30)
                proc.wait(5)
            except Exception as e:
                errors.append(f"{name}: {e}")
        self.procs.clear()
        if errors:
            raise RuntimeError("; ".join(errors))
