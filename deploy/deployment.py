"""One deployment: PostgreSQL, Redis, a Spark standalone cluster and Airflow (API server, scheduler, DAG
processor, triggerer, Celery workers), all on loopback ports chosen at start, all stopped by `stop()`.

    dep = Deployment.start(workdir, spark_workers=2, celery_workers=2)
    dep.client.set_connection("hbase_source", {...}); dep.client.trigger("hbase_table_migration", conf)
    ...
    dep.stop()

`<workdir>/deployment.json` says where everything is (no secret in it; the admin's password is in
`<workdir>/airflow/secrets/passwords.json`), so `python -m deploy down --workdir DIR` can stop a deployment
started by another process. Every process's session is in `<workdir>/deploy.sessions` (`scripts/no-leftovers`
checks them).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from deploy import spark_jvm
from deploy.airflow import ADMIN, REPO, AirflowServices
from deploy.postgres import PostgresServer
from deploy.processes import leftovers, record_session, recorded_sessions, stop_session
from deploy.redis import RedisServer
from deploy.rest import AirflowClient
from deploy.spark import SparkStandalone

STATE_FILE = "deployment.json"
MIGRATION_DAG = "hbase_table_migration"


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The services' environment: the caller's, without any Airflow setting or connection of its own (the
    deployment's airflow.cfg and metadata database decide), plus the repository on PYTHONPATH (the DAGs import
    `operators` and `hbase_migration`) and the venv's binaries (airflow, spark-submit) on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_", "HBASE_MIGRATION_", "SPARK_",
                                "PYSPARK_"))
           and k not in ("AIRFLOW_HOME", "AIRFLOW_CONFIG", "PYTHONPATH")}
    env.update({"PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    env.update(extra or {})
    return spark_jvm.with_submit_opts(env)


class Deployment:
    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir).resolve()
        self.postgres: PostgresServer | None = None
        self.redis: RedisServer | None = None
        self.spark: SparkStandalone | None = None
        self.airflow: AirflowServices | None = None
        self.client: AirflowClient | None = None
        self.ledger_url: str | None = None
        self.timings: dict[str, float] = {}

    # -------------------------------------------------------------------------------------------- start
    @classmethod
    def start(cls, workdir: Path | str, *, spark_workers: int = 2, celery_workers: int = 2,
              worker_concurrency: int = 1, worker_memory: str = "1g", executor_memory: str = "512m",
              cores_per_app: int = 1, heartbeat_timeout_s: int = 30, unpause: tuple[str, ...] = (MIGRATION_DAG,),
              airflow_overrides: Mapping[str, Mapping[str, Any]] | None = None,
              extra_env: Mapping[str, str] | None = None, timeout: float = 600.0) -> "Deployment":
        """Start everything; on any failure, stop what was started and re-raise."""
        dep = cls(workdir)
        dep.workdir.mkdir(parents=True, exist_ok=True)
        if leftovers(dep.workdir):
            raise RuntimeError(f"a deployment still runs under {dep.workdir}: `python -m deploy down --workdir "
                               f"{dep.workdir}` first")
        (dep.workdir / "deploy.sessions").unlink(missing_ok=True)
        try:
            dep._start(spark_workers, celery_workers, worker_concurrency, worker_memory, executor_memory,
                       cores_per_app, heartbeat_timeout_s, unpause, airflow_overrides, extra_env, timeout)
        except BaseException:
            dep.stop()
            raise
        return dep

    def _timed(self, name: str, started: float) -> None:
        self.timings[name] = round(time.monotonic() - started, 1)

    def _start(self, spark_workers, celery_workers, worker_concurrency, worker_memory, executor_memory,
               cores_per_app, heartbeat_timeout_s, unpause, airflow_overrides, extra_env, timeout) -> None:
        env = base_env(extra_env)
        t = time.monotonic()
        self.postgres = PostgresServer(options="-c max_connections=300")  # assigned first: stop() cleans up
        self.postgres.start()
        record_session(self.workdir, self.postgres.pid, "postgres")
        airflow_db = self.postgres.create_database("airflow")
        self.ledger_url = self.postgres.create_database("ledger")
        self._timed("postgres", t)
        t = time.monotonic()
        self.redis = RedisServer(self.workdir, env)
        self.redis.start()
        self._timed("redis", t)
        t = time.monotonic()
        self.spark = SparkStandalone(self.workdir, env, workers=spark_workers, worker_memory=worker_memory,
                                     executor_memory=executor_memory, cores_per_app=cores_per_app)
        env["SPARK_CONF_DIR"] = str(self.spark.client_conf_dir)  # spark-submit on the Airflow workers
        self.spark.start()
        self._timed("spark", t)
        t = time.monotonic()
        self.airflow = AirflowServices(
            self.workdir, env, sql_alchemy_conn=airflow_db.replace("postgresql://", "postgresql+psycopg://", 1),
            broker_url=self.redis.url(0), result_backend=self.redis.url(1), ledger_url=self.ledger_url,
            celery_workers=celery_workers, worker_concurrency=worker_concurrency,
            heartbeat_timeout_s=heartbeat_timeout_s, overrides=airflow_overrides)
        self.airflow.write_home()
        self.airflow.migrate()
        self._timed("airflow_db_migrate", t)
        t = time.monotonic()
        self.airflow.start(timeout=timeout)
        self._timed("airflow_services", t)
        self.client = AirflowClient(self.airflow.api_url, ADMIN, self.airflow.admin_password)
        self.client.set_connection("spark_default", {"conn_type": "spark", "host": self.spark.master_url,
                                                     "extra": {"deploy-mode": "client"}})
        t = time.monotonic()
        for dag_id in unpause:
            self.client.wait_dag(dag_id, timeout=timeout)
            self.client.unpause(dag_id)
        self._timed("dags_parsed", t)
        self._write_state()

    def _write_state(self) -> None:
        state = self.describe()
        (self.workdir / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def describe(self) -> dict[str, Any]:
        """Where everything is (no secret)."""
        assert self.airflow and self.spark and self.postgres and self.redis
        return {
            "workdir": str(self.workdir),
            "airflow_home": str(self.airflow.home),
            "api_url": self.airflow.api_url,
            "admin_user": ADMIN,
            "admin_password_file": str(self.airflow.secrets / "passwords.json"),
            "postgres": {"port": self.postgres.port, "dir": str(self.postgres.dir), "pid": self.postgres.pid},
            "ledger_url": ledger_shown(self.ledger_url),  # the password masked: it is in the secrets file
            "ledger_url_file": str(self.airflow.secrets / "ledger_url"),
            "redis_port": self.redis.port,
            "spark": {"master_url": self.spark.master_url, "master_ui": self.spark.master_ui_url,
                      "workers": self.spark.n_workers, "client_conf_dir": str(self.spark.client_conf_dir)},
            "celery_workers": [self.airflow.worker_name(i) for i in range(1, self.airflow.celery_workers + 1)],
            "sessions": {name: sid for sid, name in recorded_sessions(self.workdir)},
            "startup_s": self.timings,
        }

    # -------------------------------------------------------------------------------------------- helpers
    @property
    def env(self) -> dict[str, str]:
        """The environment of the deployment's Airflow processes (AIRFLOW_HOME, PYTHONPATH, SPARK_CONF_DIR)."""
        assert self.airflow is not None
        return dict(self.airflow.env)

    def worker_index(self, hostname: str) -> int:
        """The Celery worker (1-based) that reports `hostname` on its task instances."""
        assert self.airflow is not None
        for i in range(1, self.airflow.celery_workers + 1):
            if self.airflow.worker_name(i) == hostname:
                return i
        raise KeyError(hostname)

    # -------------------------------------------------------------------------------------------- stop
    def stop(self) -> None:
        """Stop everything this object started, then check that no recorded session has a process left."""
        errors = []
        for part in (self.airflow, self.spark, self.redis):
            if part is None:
                continue
            try:
                part.stop()
            except Exception as e:
                errors.append(str(e))
        if self.postgres is not None:
            try:
                self.postgres.stop()
            except Exception as e:
                errors.append(f"postgres: {e}")
        self.airflow = self.spark = self.redis = self.postgres = None
        left = leftovers(self.workdir)
        if left:
            for sid, name in recorded_sessions(self.workdir):
                stop_session(sid, name, timeout=5)
            errors.append(f"processes left after stop: {left}")
        if errors:
            raise RuntimeError("; ".join(errors))

    def __enter__(self) -> "Deployment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def stop_workdir(workdir: Path | str, timeout: float = 30.0) -> dict[str, list[int]]:
    """Stop a deployment from its workdir alone (another process started it): every recorded session, the
    Airflow services first and PostgreSQL last; its PostgreSQL directory is removed. Returns what was running."""
    import shutil

    workdir = Path(workdir).resolve()
    running = leftovers(workdir)
    sessions = recorded_sessions(workdir)
    order = sorted(sessions, key=lambda s: (s[1].startswith("postgres"), s[1].startswith(("redis", "spark")),
                                            not s[1].startswith("airflow-celery")))
    for sid, name in order:
        stop_session(sid, name, timeout=timeout)
    state_file = workdir / STATE_FILE
    if state_file.exists():
        pg_dir = json.loads(state_file.read_text()).get("postgres", {}).get("dir")
        if pg_dir and Path(pg_dir).name.startswith("hbase-migration-pg-"):
            shutil.rmtree(pg_dir, ignore_errors=True)
    return running


def ledger_shown(url: str | None) -> str | None:
    """A ledger URL with its password masked (`***`), for the state file and logs."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True) if url else url
