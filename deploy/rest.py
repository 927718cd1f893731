"""Airflow 3's REST API as a user's script drives it: a JWT from `/auth/token` (SimpleAuthManager's user and
password), then `/api/v2/...` with `Authorization: Bearer`."""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Iterable
from urllib.parse import quote

import requests

FINISHED = ("success", "failed")


class AirflowAPIError(RuntimeError):
    pass


class AirflowClient:
    def __init__(self, base_url: str, username: str, password: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.timeout = timeout
        self.session = requests.Session()
        self._token: str | None = None

    def token(self, refresh: bool = False) -> str:
        if self._token is None or refresh:
            r = self.session.post(f"{self.base_url}/auth/token", json={"username": self.username,
                                                                      "password": self.password},
                                  timeout=self.timeout)
            if r.status_code not in (200, 201):
                raise AirflowAPIError(f"POST /auth/token: {r.status_code} {r.text[:500]}")
            self._token = r.json()["access_token"]
        return self._token

    def request(self, method: str, path: str, ok: Iterable[int] = (200, 201, 204), **kwargs: Any) -> Any:
        url = f"{self.base_url}/api/v2{path}"
        for attempt in (0, 1):
            headers = {"Authorization": f"Bearer {self.token(refresh=attempt > 0)}"}
            r = self.session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
            if r.status_code != 401:
                break
        if r.status_code not in tuple(ok):
            raise AirflowAPIError(f"{method} {path}: {r.status_code} {r.text[:1000]}")
        return r.json() if r.content else None

    # -------------------------------------------------------------------------------------------- DAGs
    def dag(self, dag_id: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", f"/dags/{quote(dag_id)}")
        except AirflowAPIError as e:
            if ": 404 " in str(e):
                return None
            raise

    def wait_dag(self, dag_id: str, timeout: float = 300.0) -> dict[str, Any]:
        """Until the DAG processor has parsed the DAG (it shows in the API)."""
        return _poll(lambda: self.dag(dag_id), timeout, f"DAG {dag_id} to be parsed")

    def unpause(self, dag_id: str) -> None:
        self.request("PATCH", f"/dags/{quote(dag_id)}", json={"is_paused": False})

    def import_errors(self) -> list[dict[str, Any]]:
        return self.request("GET", "/importErrors")["import_errors"]

    # -------------------------------------------------------------------------------------------- runs
    def trigger(self, dag_id: str, conf: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"logical_date": None, "conf": conf}
        if run_id:
            body["dag_run_id"] = run_id
        return self.request("POST", f"/dags/{quote(dag_id)}/dagRuns", json=body)

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return self.request("GET", f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.request("GET", f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances",
                            params={"limit": 1000})["task_instances"]

    def task_tries(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> list[dict[str, Any]]:
        path = f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances/{quote(task_id)}"
        path += f"/{map_index}/tries" if map_index >= 0 else "/tries"
        return self.request("GET", path)["task_instances"]

    def xcom(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1, key: str = "return_value") -> Any:
        path = f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances/{quote(task_id)}/xcomEntries/{key}"
        value = self.request("GET", path, params={"map_index": map_index, "deserialize": True})["value"]
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 1800.0, interval: float = 2.0,
                 on_poll: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Poll the run until it finishes; `on_poll(run)` each time (e.g. to watch task states)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.dag_run(dag_id, run_id)
            if on_poll is not None:
                on_poll(run)
            if run["state"] in FINISHED:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id} of {dag_id} still {run['state']} after {timeout:.0f}s")
            time.sleep(interval)

    # -------------------------------------------------------------------------------------------- connections
    def set_connection(self, conn_id: str, conn: dict[str, Any]) -> None:
        """Create or replace a connection from its AIRFLOW_CONN_* JSON form
        ({"conn_type", "host", "port", "extra": {...}, ...})."""
        body = {"connection_id": conn_id, "conn_type": conn["conn_type"]}
        for key in ("host", "port", "schema", "login", "password", "description"):
            if conn.get(key) is not None:
                body[key] = conn[key]
        extra = conn.get("extra")
        if extra is not None:
            body["extra"] = extra if isinstance(extra, str) else json.dumps(extra)
        try:
            self.request("POST", "/connections", json=body)
        except AirflowAPIError as e:
            if ": 409 " not in str(e):
                raise
            self.request("PATCH", f"/connections/{quote(conn_id)}", json=body)


def _poll(fn: Callable[[], Any], timeout: float, what: str, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
