"""The migration dashboard: a FastAPI app rendering the run ledger as server-side HTML, plus its JSON.

Mounted by the plugin under /hbase-migration on Airflow's API server (and framed by the UI's nav entry):

    GET /                       recent runs (not the watch's)        ?limit=1..500 (default 50)
    GET /runs/{run_id}          one run: phases, copy, lag, quota (with charts), verification, peer
    GET /api/runs               Ledger.recent_runs(limit) but watch  ?limit=1..500
    GET /api/runs/{run_id}      Ledger.run_summary(run_id)           404 when unknown
    GET /api/samples/{run_id}   Ledger.latest_samples(run_id, limit) ?limit=1..1000 (default 100)

Handlers are plain `def`: the ledger is synchronous SQL, so FastAPI runs them in its thread pool and the API
server's event loop never waits on the database. The ledger is opened once per URL and kept; a SQLite ledger
file that does not exist yet reads as "no runs", and is not created (a dashboard request writes nothing).
Everything shown is HTML-escaped by Jinja's autoescape, and the pages carry a CSP that allows no script (the
charts are inline SVG drawn on the server, `charts.py`). A page requested without a valid Airflow sign-in (none,
or expired) is redirected to Airflow's sign-in with the page as `next`; the JSON API answers 401. The peer's
state comes from its source cluster when the app is given a `PeerStates` (`live.py`; the plugin gives one).
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import urlencode

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import formatting, views
from .live import PeerStates
from .settings import LedgerLocation

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).resolve().parent / "templates"
REFRESH_S = 30  # pages showing a running run reload themselves (no script needed)
WATCH_PLAN = "watch"  # the replication watch's runs (every 10 minutes) stay out of the list of migrations
SECURITY_HEADERS = {
    # No script may run even if something slipped past escaping; framing only by the Airflow UI (same origin).
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'self'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # live figures, shown to signed-in users only
}


class LedgerUnavailable(Exception):
    """The ledger exists (or is not SQLite) but cannot be opened or read; the message is safe to show."""


class LedgerSource:
    """Opens the ledger at one URL on first use and keeps it; thread-safe, retried after a failure."""

    def __init__(self, location: LedgerLocation):
        self.location = location
        self._ledger: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        """The open `Ledger`, or None when its SQLite file does not exist (yet)."""
        sqlite_file = self.location.sqlite_file
        if sqlite_file is not None and not sqlite_file.is_file():
            self.close()  # deleted under us: do not keep reading a vanished file through open handles
            return None
        with self._lock:
            if self._ledger is None:
                from hbase_migration.ledger.store import Ledger, LedgerError

                try:
                    self._ledger = Ledger.open(self.location.url)
                except LedgerError as exc:  # its messages name the file or version, never a password
                    log.error("dashboard: cannot open the ledger at %s: %s", self.location.shown, exc)
                    raise LedgerUnavailable(str(exc)) from exc
                except Exception as exc:
                    log.exception("dashboard: cannot open the ledger at %s", self.location.shown)
                    raise LedgerUnavailable(
                        f"the ledger at {self.location.shown} cannot be opened ({type(exc).__name__}); "
                        "the API server's log has the details"
                    ) from exc
            return self._ledger

    def close(self) -> None:
        with self._lock:
            if self._ledger is not None:
                self._ledger.close()
                self._ledger = None


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    for name in ("instant", "window_end", "duration", "count", "size", "rate", "percent", "relative", "row_key",
                 "per_second"):
        env.filters[name] = getattr(formatting, name)
    env.globals["MISSING"] = formatting.MISSING
    return env


def _now_ms() -> int:
    return int(time.time() * 1000)


def create_app(location: LedgerLocation, *, dependencies: Sequence[Any] = (),
               clock: Callable[[], int] = _now_ms, peer_states: PeerStates | None = None) -> FastAPI:
    """The dashboard over the ledger at `location`.

    `dependencies` guard every route (the plugin passes Airflow's own authentication and authorization);
    `clock` gives now in epoch ms, for "in 2h" next to a projected quota exhaustion. `peer_states` reads each
    run's peer from its source cluster (the plugin passes one); without it, pages show the ledger's last note
    and say that the cluster is not read.
    """
    app = FastAPI(title="HBase migrations", docs_url=None, redoc_url=None, openapi_url=None,
                  dependencies=list(dependencies))
    source = LedgerSource(location)
    env = _environment()
    app.state.ledger_source = source
    app.state.peer_states = peer_states

    def live(runs: list[dict[str, Any]]) -> dict[str, Any]:
        return peer_states.states(runs) if peer_states is not None else {}

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Callable) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("refresh", None)
        # Where the ledger lives is for signed-in eyes only (a 401/403 page is shown to anyone).
        context.setdefault("location", None if status_code in (401, 403) else location)
        # Links are absolute from the mount point (root_path), so they hold at any depth and behind a prefix.
        root = request.scope.get("root_path", "").rstrip("/") + "/"
        html = env.get_template(template).render(now_ms=clock(), root=root, ui=airflow_ui_base(request),
                                                 **context)
        return HTMLResponse(html, status_code=status_code)

    def message(request: Request, status_code: int, title: str, text: str) -> HTMLResponse:
        return page(request, "message.html", status_code, title=title, text=text)

    @app.exception_handler(StarletteHTTPException)
    async def html_errors(request: Request, exc: StarletteHTTPException) -> Response:
        """Errors of the pages (a 401 from the auth dependency included) as a page; the API keeps JSON."""
        api = request.scope.get("root_path", "").rstrip("/") + "/api/"
        if request.url.path.startswith(api):
            return await http_exception_handler(request, exc)
        if exc.status_code == 401:  # no sign-in, or it expired: Airflow's sign-in, then back to this page
            return RedirectResponse(sign_in_url(request), status_code=303)
        return message(request, exc.status_code, f"Error {exc.status_code}", str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def html_bad_input(request: Request, exc: RequestValidationError) -> Response:
        """A bad query parameter on a page: a page naming the parameter; the API keeps FastAPI's JSON."""
        api = request.scope.get("root_path", "").rstrip("/") + "/api/"
        if request.url.path.startswith(api):
            return await request_validation_exception_handler(request, exc)
        problems = "; ".join(f"{e['loc'][-1]}: {e['msg']}" for e in exc.errors())
        return message(request, 422, "Bad request", problems)

    @app.exception_handler(SQLAlchemyError)
    async def ledger_read_failed(request: Request, exc: SQLAlchemyError) -> Response:
        """The ledger opened but a read failed (locked past the busy timeout, server gone, damaged tables)."""
        log.error("dashboard: reading the ledger at %s failed for %s: %s", location.shown, request.url.path,
                  exc.__class__.__name__, exc_info=exc)
        detail = (f"the ledger at {location.shown} could not be read ({type(exc).__name__}); "
                  "the API server's log has the details")
        return await html_errors(request, StarletteHTTPException(503, detail))

    @app.get("/", response_class=HTMLResponse)
    def runs_page(request: Request, limit: int = Query(50, ge=1, le=500)) -> HTMLResponse:
        try:
            ledger = source.get()
        except LedgerUnavailable as exc:
            return message(request, 503, "Ledger unavailable", str(exc))
        if ledger is None:
            return page(request, "runs.html", rows=[], ledger_found=False, limit=limit)
        items = ledger.recent_runs(limit, except_plan=WATCH_PLAN)  # the watch runs every 10 min: not here
        states = live(items)
        now = clock()
        rows = [views.run_row(item, ledger.run_summary(item["run_id"]), states.get(item["run_id"]),
                              peer_states is not None, now) for item in items]
        refresh = REFRESH_S if any(r.run["status"] == "running" for r in rows) else None
        return page(request, "runs.html", rows=rows, ledger_found=True, limit=limit, refresh=refresh)

    @app.get("/runs/{run_id:path}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str, samples: int = Query(100, ge=1, le=1000)) -> HTMLResponse:
        try:
            ledger = source.get()
        except LedgerUnavailable as exc:
            return message(request, 503, "Ledger unavailable", str(exc))
        summary = _read(ledger, run_id, lambda: ledger.run_summary(run_id))
        recent = _read(ledger, run_id, lambda: ledger.latest_samples(run_id, samples))
        series = _read(ledger, run_id, lambda: ledger.chart_series(run_id))
        initial = _read(ledger, run_id, lambda: ledger.initial_copy_summary(run_id))
        run, peer = summary["run"], summary["peer"]
        reason = peer["notes"][-1]["reason"] if peer["notes"] else None
        now = clock()
        state = live([run]).get(run_id)
        ui = airflow_ui_base(request)
        copy_rows = views.copy_rows(summary["copy"], series["copy"], summary["phases"], now, run["tables"])
        instants = views.run_instants(run, summary["phases"], peer["notes"])
        lag_size, lag_age = views.lag_charts(series["lag"], instants, run["status"], now)
        return page(
            request,
            "run.html",
            run=run,
            peer=peer,
            peer_shown=views.peer_shown(run, peer["state"], state, peer_states is not None),
            duration_ms=views.run_duration(run, now),
            dag_run_href=views.dag_run_href(ui, run),
            lag=summary["lag"],
            copy_total=summary["copy"]["total"],
            quota_samples=summary["quota"]["samples"],
            verdict=views.verdict(run, summary["verification"]),
            alert=views.peer_alert(run, peer["state"], reason, state),
            grid=views.phase_grid(summary["phases"],
                                  lambda t, ph: views.task_href(ui, run, t, ph, summary["batches"]), now),
            batches=views.batch_rows(summary["batches"], summary["phases"]),
            copy_rows=copy_rows,
            copy_chart=views.copy_chart(copy_rows, series["copy"], now),
            lag_charts=(lag_size, lag_age),
            quota_charts=views.quota_charts(series["quota"], run["params"].get("quota_mark"), now),
            lag_history=views.lag_history(recent["lag"]),
            quota_latest=[views.quota_row(q, now) for q in summary["quota"]["latest"]],
            quota_history=[views.quota_row(q, now) for q in recent["quota"]],
            verification=views.verification_rows(run, summary["verification"]),
            sizing=views.sizing_view(summary["sizing"]),
            exports=views.export_rows(initial, run["tables"]),
            refresh=REFRESH_S if run["status"] == "running" else None,
        )

    @app.get("/api/runs")
    def runs_json(limit: int = Query(50, ge=1, le=500)) -> JSONResponse:
        ledger = _ledger_or_503(source)
        return JSONResponse([] if ledger is None else ledger.recent_runs(limit, except_plan=WATCH_PLAN))

    @app.get("/api/runs/{run_id:path}")
    def run_json(run_id: str) -> JSONResponse:
        ledger = _ledger_or_503(source)
        return JSONResponse(_read(ledger, run_id, lambda: ledger.run_summary(run_id)))

    @app.get("/api/initial-copy/{run_id:path}")
    def initial_copy_json(run_id: str) -> JSONResponse:
        """Each table's initial copy and its snapshot export (state, files and bytes done, rate, ETA, left)."""
        ledger = _ledger_or_503(source)
        return JSONResponse(_read(ledger, run_id, lambda: ledger.initial_copy_summary(run_id)))

    @app.get("/api/samples/{run_id:path}")
    def samples_json(run_id: str, limit: int = Query(100, ge=1, le=1000)) -> JSONResponse:
        ledger = _ledger_or_503(source)
        return JSONResponse(_read(ledger, run_id, lambda: ledger.latest_samples(run_id, limit)))

    return app


def airflow_ui_base(request: Request) -> str:
    """The Airflow UI's base path: the dashboard's mount point (root_path) without its last segment."""
    return request.scope.get("root_path", "").rstrip("/").rsplit("/", 1)[0]


def sign_in_url(request: Request) -> str:
    """Airflow's sign-in (its /api/v2/auth/login hands over to the auth manager's page) with this page as
    `next`, a path on the same host (Airflow refuses a `next` that is not)."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"{airflow_ui_base(request)}/api/v2/auth/login?{urlencode({'next': target})}"


def _ledger_or_503(source: LedgerSource) -> Any:
    try:
        return source.get()
    except LedgerUnavailable as exc:
        raise HTTPException(503, str(exc)) from None


def _read(ledger: Any, run_id: str, read: Callable[[], Any]) -> Any:
    """`read()` one run's figures; an unknown run (or no ledger yet) is a 404 naming the run."""
    from hbase_migration.ledger.store import LedgerError

    if ledger is None:
        raise HTTPException(404, f"run {run_id!r} is not in the ledger: the ledger has no runs yet")
    try:
        return read()
    except LedgerError:  # the reads raise it only for a run id the ledger does not hold
        raise HTTPException(404, f"run {run_id!r} is not in the ledger") from None
