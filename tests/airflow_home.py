"""An Airflow of the test's own: an AIRFLOW_HOME with the repository's airflow.cfg, DAGs and plugins, a copy of
the migrated metadata database, fresh secrets and a SimpleAuthManager users with generated passwords; and its
API server (UI, REST API, the dashboard plugin) on a free loopback port, stopped with its process group.

`airflow dags test` run with the same environment shares the metadata database: a human-in-the-loop task (the
cut-over's `ApprovalOperator`) waits in `awaiting_input` until an answer is recorded through the API server's
`PATCH .../taskInstances/{task}/{map_index}/hitlDetails` (`Hitl`), as an operator's script would answer."""
from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping
from urllib.parse import quote

import requests

from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[1]
METADATA_DB = REPO / ".airflow" / "airflow.db"  # made by `make bootstrap` (airflow db migrate)
BIN = Path(sys.executable).parent
START_TIMEOUT_S = 120.0


def make_home(home: Path, roles: Mapping[str, str] | None = None,
              passwords: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """A fresh AIRFLOW_HOME; returns (the environment every Airflow command of the test runs with, each user's
    password). `roles`: SimpleAuthManager users and their roles (default: `admin` an admin); `passwords`: theirs
    (default: generated). Connections and the ledger are for the caller to add to the environment."""
    if not METADATA_DB.is_file():
        raise AssertionError(f"{METADATA_DB} is missing: run `make bootstrap` first")
    roles = dict(roles or {"admin": "admin"})
    passwords = dict(passwords or {user: secrets.token_urlsafe(12) for user in roles})
    (home / ".airflow" / "secrets").mkdir(parents=True)
    shutil.copy(REPO / "airflow.cfg", home / "airflow.cfg")
    shutil.copy(METADATA_DB, home / ".airflow" / "airflow.db")
    keys = {"fernet_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "api_secret_key": secrets.token_urlsafe(32), "jwt_secret": secrets.token_urlsafe(32)}
    for name, value in keys.items():  # read by airflow.cfg's *_cmd options
        (home / ".airflow" / "secrets" / name).write_text(value + "\n")
    (home / "passwords.json").write_text(json.dumps(passwords))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__"))}
    env.update({
        "AIRFLOW_HOME": str(home), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),  # the dashboard comes by its entry point
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in roles.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
    })
    return env, passwords


@contextmanager
def api_server(env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    """`airflow api-server` (one worker) on 127.0.0.1:port; yields its base URL once healthy."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(BIN / "airflow"), "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"],
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"api-server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        return requests.get(f"{base}/api/v2/monitor/health", timeout=2).ok

    try:
        try:
            # A server still starting may accept the connection and answer late (a loaded machine): not yet.
            wait_for(healthy, START_TIMEOUT_S, "the api-server", interval=0.25,
                     ignore=(requests.ConnectionError, requests.Timeout))
        except AssertionError as e:
            raise AssertionError(f"{e}:\n{log_path.read_text()[-3000:]}") from None
        yield base
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """End a process started with start_new_session=True, and everything it started."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout_s)
    try:  # children that outlived their parent (a Spark JVM) are in the same group
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Hitl:
    """Answers a DAG run's human-in-the-loop tasks through the REST API (JWT of the SimpleAuthManager user)."""

    def __init__(self, base: str, user: str, password: str):
        from deploy.rest import AirflowClient

        self.client = AirflowClient(base, user, password)

    def running_run(self, dag_id: str) -> str | None:
        """The running run's id; None before `airflow dags test` has written the DAG to the database (a 404)."""
        from deploy.rest import AirflowAPIError

        try:
            runs = self.client.request("GET", f"/dags/{quote(dag_id)}/dagRuns",
                                       params={"state": "running", "limit": 10})["dag_runs"]
        except AirflowAPIError as e:
            if ": 404 " in str(e):
                return None
            raise
        return runs[0]["dag_run_id"] if runs else None

    def detail(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any] | None:
        from deploy.rest import AirflowAPIError

        try:
            return self.client.request("GET", self._path(dag_id, run_id, task_id))
        except AirflowAPIError as e:
            if ": 404 " in str(e):
                return None
            raise

    def wait_for_question(self, dag_id: str, task_id: str, timeout: float, dag_test: subprocess.Popen,
                          log_path: Path) -> tuple[str, dict[str, Any]]:
        """Until the run of `dag_id` asks its question at `task_id`: (run id, the HITL detail)."""
        run_id = None

        def asked() -> tuple[str, dict[str, Any]] | None:
            nonlocal run_id
            if dag_test.poll() is not None:
                raise AssertionError(f"`airflow dags test {dag_id}` exited {dag_test.returncode} before asking; "
                                     f"log {log_path}:\n" + "\n".join(log_path.read_text().splitlines()[-60:]))
            run_id = run_id or self.running_run(dag_id)
            found = self.detail(dag_id, run_id, task_id) if run_id else None
            return (run_id, found) if found is not None else None

        return wait_for(asked, timeout, f"{dag_id} to ask at {task_id} (log {log_path})", interval=2)

    def answer(self, dag_id: str, run_id: str, task_id: str, option: str) -> dict[str, Any]:
        """What an operator's script does: PATCH the task's HITL detail with the chosen option."""
        return self.client.request("PATCH", self._path(dag_id, run_id, task_id),
                                   json={"chosen_options": [option], "params_input": {}})

    @staticmethod
    def _path(dag_id: str, run_id: str, task_id: str) -> str:
        return f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances/{quote(task_id)}/-1/hitlDetails"
