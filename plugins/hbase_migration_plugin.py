"""The toolkit's Airflow plugin: the migration dashboard in the Airflow UI.

A FastAPI app mounted on the API server at /hbase-migration/ (see `hbase_migration_ui/app.py`), behind
Airflow's own sign-in, a "HBase migrations" entry under Browse that frames it in the UI, and an extra link
"HBase migration dashboard" on the tasks of every DAG run the ledger holds, leading to that run's page.

Every Airflow process loads this file (a task does, to render its templates), so it imports nothing beyond
the standard library, AirflowPlugin and BaseOperatorLink: the dashboard, and with it FastAPI and the ledger,
is built on first access to `fastapi_apps`, which only the API server (and `airflow plugins`) makes. A
dashboard that cannot be built (a bad `[hbase_migration] ledger_url`, a dependency missing) is
replaced by one that says why, so the API server still starts.
"""
from __future__ import annotations

import logging
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from airflow.configuration import conf
from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperatorLink

log = logging.getLogger(__name__)

PLUGIN_NAME = "hbase_migration"
URL_PREFIX = "/hbase-migration"


# ---------------------------------------------------------------------------------------------------------
# Dashboard

def dashboard_href(base_url: str | None) -> str:
    """Where the browser finds the dashboard: under the path of `[api] base_url` when Airflow is served
    below one (the UI frames an external view's href as given, without adding that path)."""
    return urlsplit(base_url or "").path.rstrip("/") + URL_PREFIX + "/"


def airflow_sign_in() -> Any:
    """FastAPI dependency: the caller holds a valid Airflow token (the UI's `_token` cookie, or a Bearer
    header) and may use the Airflow website.

    Plugin apps are mounted beside Airflow's API without its authentication; without this, anyone who reaches
    the API server could read cluster keys and differing row keys.
    """
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import requires_access_view

    return requires_access_view(AccessView.WEBSITE)


def build_dashboard() -> Any:
    """The dashboard over the configured ledger behind Airflow's sign-in; on failure, a page saying why."""
    from fastapi import Depends

    guard = [Depends(airflow_sign_in())]
    try:
        from airflow.models.connection import Connection

        from hbase_migration.plugins.hbase_migration_ui.app import create_app
        from hbase_migration.plugins.hbase_migration_ui.live import PeerStates, connection_or_key
        from hbase_migration.plugins.hbase_migration_ui.settings import configured_ledger_location

        location = configured_ledger_location()
        # Each run's peer is read from its source cluster (ZooKeeper), through its Airflow connection.
        peers = PeerStates(connection_or_key(Connection.get_connection_from_secrets))
        app = create_app(location, dependencies=guard, peer_states=peers)
    except Exception as exc:  # keep the API server up; the error goes to its log and onto the page
        log.exception("hbase_migration plugin: the migration dashboard cannot start")
        return broken_dashboard(f"{type(exc).__name__}: {exc}", guard)
    log.info("hbase_migration plugin: dashboard at %s/ reads the ledger %s (from %s)",
             URL_PREFIX, location.shown, location.source)
    return app


def broken_dashboard(reason: str, dependencies: list[Any]) -> Any:
    """An app answering 503 with `reason` at every path: the nav entry then explains instead of failing."""
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, dependencies=dependencies)

    @app.get("/{path:path}")
    def unavailable(path: str) -> PlainTextResponse:
        return PlainTextResponse(f"The HBase migration dashboard cannot start: {reason}", status_code=503)

    return app


# ---------------------------------------------------------------------------------------------------------
# From a DAG run to its dashboard page

LINK_NAME = "HBase migration dashboard"
_link_ledger: Any = None


def dashboard_run_href(base_url: str | None, run_id: str) -> str:
    from urllib.parse import quote

    return dashboard_href(base_url) + "runs/" + quote(run_id, safe="")


def dashboard_link_for(dag_id: str, run_id: str) -> str | None:
    """The dashboard page of the ledger run behind a DAG run, or None when the ledger holds no run of that
    DAG under that id (another DAG's tasks, a run that failed before open_run, the watch's per-cluster runs)."""
    global _link_ledger
    from hbase_migration.plugins.hbase_migration_ui.app import LedgerSource
    from hbase_migration.plugins.hbase_migration_ui.settings import configured_ledger_location

    try:
        if _link_ledger is None:
            _link_ledger = LedgerSource(configured_ledger_location())
        ledger = _link_ledger.get()
        run = ledger.find_run(run_id) if ledger is not None else None
    except Exception as exc:  # a link is a convenience: the task page must still show
        log.warning("hbase_migration plugin: no dashboard link for %s/%s: %s", dag_id, run_id, exc)
        return None
    if run is None or run["dag_id"] != dag_id:
        return None
    return dashboard_run_href(conf.get("api", "base_url", fallback=""), run_id)


class MigrationDashboardLink(BaseOperatorLink):
    """On every task of a migration's DAG run: its page on the dashboard (computed on the API server; empty,
    so not shown, for tasks of DAG runs the ledger does not hold)."""

    name = LINK_NAME

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return dashboard_link_for(ti_key.dag_id, ti_key.run_id) or ""


class HBaseMigrationPlugin(AirflowPlugin):
    name = PLUGIN_NAME
    external_views = [
        {
            "name": "HBase migrations",
            # Same origin as the UI, so the browser sends Airflow's session cookie into the frame.
            "href": dashboard_href(conf.get("api", "base_url", fallback="")),
            "destination": "nav",
            "category": "browse",
            "url_route": "hbase-migrations",  # the UI shows it at /plugin/hbase-migrations
        }
    ]
    global_operator_extra_links = [MigrationDashboardLink()]

    @cached_property
    def fastapi_apps(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [{"app": build_dashboard(), "url_prefix": URL_PREFIX, "name": "HBase migration dashboard"}]
