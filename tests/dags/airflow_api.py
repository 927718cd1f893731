"""An Airflow API server beside `airflow dags test`, both on one metadata database: how a test answers a DAG's
human-in-the-loop task (the cut-over's `ApprovalOperator`) through the REST API, as an operator's script would.

`airflow dags test` runs a DAG in one process and leaves a HITL task parked in `awaiting_input` until a response
is recorded from outside ("the Required Actions UI or the HITL REST API of an api-server sharing this metadata
DB", Airflow's `DAG.test`); the API server's `PATCH .../taskInstances/{task}/{map_index}/hitlDetails` records it
and hands the task back to the run. This module makes an AIRFLOW_HOME of its own (the repository's airflow.cfg with
its own SQLite database, SimpleAuthManager's `admin` with a generated password, secrets generated for it), migrates
the database, starts `airflow api-server` in a session of its own (recorded in `deploy.sessions`, so
`scripts/no-leftovers` checks it) and stops it.
"""
from __future__ import annotations

import base64
import configparser
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]
AIRFLOW = str(Path(sys.executable).parent / "airflow")


class ApiServer:
    def __init__(self, workdir: Path, base_env: Mapping[str, str]):
        from deploy.processes import free_port

        self.workdir = Path(workdir)
        self.home = self.workdir / "airflow-home"
        self.port = free_port()
        self.base_env = dict(base_env)
        self.proc: subprocess.Popen | None = None
        self._client: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.home / "api-server.log"

    @property
    def env(self) -> dict[str, str]:
        """The environment of every `airflow` command of the test: this home, hence this metadata database."""
        return {**self.base_env, "AIRFLOW_HOME": str(self.home), "AIRFLOW_CONFIG": str(self.home / "airflow.cfg")}

    def _write_home(self) -> str:
        secret_dir = self.home / ".airflow" / "secrets"  # where the repository's airflow.cfg reads them (*_cmd)
        secret_dir.mkdir(parents=True, mode=0o700)
        (secret_dir / "fernet_key").write_text(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode() + "\n")
        (secret_dir / "api_secret_key").write_text(secrets.token_urlsafe(32) + "\n")
        (secret_dir / "jwt_secret").write_text(secrets.token_urlsafe(32) + "\n")
        password = secrets.token_urlsafe(18)
        passwords = secret_dir / "passwords.json"
        passwords.write_text(json.dumps({"admin": password}))
        cfg = configparser.RawConfigParser(interpolation=None)
        cfg.optionxform = str
        cfg.read(REPO / "airflow.cfg", encoding="utf-8")
        settings = {
            "core": {"dags_folder": REPO / "dags", "plugins_folder": REPO / "plugins",
                     "simple_auth_manager_users": "admin:admin", "simple_auth_manager_passwords_file": passwords},
            "database": {"sql_alchemy_conn": f"sqlite:///{self.home / 'airflow.db'}"},
            "logging": {"base_log_folder": self.home / "logs",
                        "dag_processor_child_process_log_directory": self.home / "logs" / "dag_processor"},
            "api": {"host": "127.0.0.1", "port": self.port, "base_url": self.url, "workers": 1},
        }
        for section, values in settings.items():
            if not cfg.has_section(section):
                cfg.add_section(section)
            for key, value in values.items():
                cfg.set(section, key, str(value))
        with open(self.home / "airflow.cfg", "w", encoding="utf-8") as f:
            cfg.write(f)
        return password

    def start(self, timeout: float = 240.0) -> "ApiServer":
        from deploy.processes import spawn, wait_until
        from deploy.rest import AirflowClient

        password = self._write_home()
        migrate = subprocess.run([AIRFLOW, "db", "migrate"], env=self.env, cwd=self.home, capture_output=True,
                                 text=True, timeout=600)
        if migrate.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed: {migrate.stderr[-3000:]}")
        self.proc = spawn(self.workdir, "airflow-api-server", [AIRFLOW, "api-server", "--host", "127.0.0.1",
                                                               "--port", str(self.port), "--workers", "1"],
                          self.env, self.log_path, cwd=self.home)

        def healthy() -> bool:
            import requests

            r = requests.get(f"{self.url}/api/v2/monitor/health", timeout=5)
            return r.status_code == 200 and r.json().get("metadatabase", {}).get("status") == "healthy"

        wait_until(healthy, timeout, "the Airflow API server", proc=self.proc, log_path=self.log_path)
        self._client = AirflowClient(self.url, "admin", password)
        return self

    @property
    def client(self) -> Any:
        return self._client

    def stop(self) -> None:
        from deploy.processes import stop_session

        if self.proc is not None:
            stop_session(self.proc.pid, "airflow api-server", timeout=30)
            self.proc.wait(10)
            self.proc = None

    def __enter__(self) -> "ApiServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------------ HITL

    def running_run(self, dag_id: str) -> str | None:
        runs = self.client.request("GET", f"/dags/{quote(dag_id)}/dagRuns",
                                   params={"state": "running", "limit": 10})["dag_runs"]
        return runs[0]["dag_run_id"] if runs else None

    def hitl_detail(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any] | None:
        from deploy.rest import AirflowAPIError

        try:
            return self.client.request(
                "GET", f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances/{quote(task_id)}/-1/hitlDetails")
        except AirflowAPIError as e:
            if ": 404 " in str(e):
                return None
            raise

    def wait_for_question(self, dag_id: str, task_id: str, timeout: float, dag_test: subprocess.Popen,
                          log_path: Path) -> tuple[str, dict[str, Any]]:
        """Until the run of `dag_id` asks its question at `task_id`: (run id, the HITL detail)."""
        deadline = time.monotonic() + timeout
        run_id = None
        while time.monotonic() < deadline:
            if dag_test.poll() is not None:
                raise AssertionError(f"`airflow dags test {dag_id}` exited {dag_test.returncode} before asking; "
                                     f"log {log_path}:\n" + "\n".join(log_path.read_text().splitlines()[-60:]))
            run_id = run_id or self.running_run(dag_id)
            detail = self.hitl_detail(dag_id, run_id, task_id) if run_id else None
            if detail is not None:
                return run_id, detail
            time.sleep(2)
        raise TimeoutError(f"{dag_id} did not ask at {task_id} within {timeout:.0f}s (log {log_path})")

    def answer(self, dag_id: str, run_id: str, task_id: str, option: str) -> dict[str, Any]:
        """What an operator's script does: PATCH the task's HITL detail with the chosen option."""
        return self.client.request(
            "PATCH", f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances/{quote(task_id)}/-1/hitlDetails",
            json={"chosen_options": [option], "params_input": {}})
