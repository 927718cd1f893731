"""An Airflow of the test's own: an AIRFLOW_HOME with the repository's airflow.cfg, DAGs and plugins, a copy of
the migrated metadata database, fresh secrets and a SimpleAuthManager user with a generated password; and its
API server (UI, REST API, the dashboard plugin) on a free loopback port, stopped with its process group."""
from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import requests

REPO = Path(__file__).resolve().parents[2]
METADATA_DB = REPO / ".airflow" / "airflow.db"  # made by `make bootstrap` (airflow db migrate)
BIN = Path(sys.executable).parent
START_TIMEOUT_S = 120.0


def make_home(home: Path, user: str = "admin") -> tuple[dict[str, str], str]:
    """A fresh AIRFLOW_HOME; returns (the environment every Airflow command of the test runs with, the
    user's generated password). Connections and the ledger are for the caller to add to the environment."""
    if not METADATA_DB.is_file():
        raise AssertionError(f"{METADATA_DB} is missing: run `make bootstrap` first")
    (home / ".airflow" / "secrets").mkdir(parents=True)
    shutil.copy(REPO / "airflow.cfg", home / "airflow.cfg")
    shutil.copy(METADATA_DB, home / ".airflow" / "airflow.db")
    keys = {"fernet_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "api_secret_key": secrets.token_urlsafe(32), "jwt_secret": secrets.token_urlsafe(32)}
    for name, value in keys.items():  # read by airflow.cfg's *_cmd options
        (home / ".airflow" / "secrets" / name).write_text(value + "\n")
    password = secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({user: password}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__"))}
    env.update({
        "AIRFLOW_HOME": str(home), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
    })
    return env, password


@contextmanager
def api_server(env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    """`airflow api-server` (one worker) on 127.0.0.1:port; yields its base URL once healthy."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(BIN / "airflow"), "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"],
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise AssertionError(f"api-server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if requests.get(f"{base}/api/v2/monitor/health", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"api-server not up after {START_TIMEOUT_S}s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)  # a poll interval, bounded by the deadline above
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
