"""The migration dashboard over a real SQLite ledger filled through the Ledger API, and the plugin in Airflow.

The app is mounted under /hbase-migration in a parent FastAPI app, as Airflow's API server mounts it, and
driven with FastAPI's TestClient. Airflow's plugin manager runs in subprocesses (its caches are per process).
"""
from __future__ import annotations

import html
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote, urljoin

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hbase_migration.clusters.hdfs import HdfsCapacity
from hbase_migration.ledger.store import ALL_TABLES, Ledger
from hbase_migration.migration import sizing_probe
from hbase_migration.migration.sizing import SampleCopy, TableSizing, project, verdict
from hbase_migration.plugins.hbase_migration_plugin import URL_PREFIX, HBaseMigrationPlugin
from hbase_migration.plugins.hbase_migration_ui.app import SECURITY_HEADERS, create_app
from hbase_migration.plugins.hbase_migration_ui.settings import resolve_ledger_url

REPO = Path(__file__).resolve().parents[2]
T = 1_714_564_800_000  # 2024-05-01 12:00:00 UTC
NOW = T + 3_600_000  # the dashboard's clock in these tests: 13:00

OK_RUN = "manual__2024-05-01T12:00:00+00:00"  # Airflow's run id shape: ':' and '+' need quoting in a URL
FAILED_RUN = "cli/<b>retry</b> 2"  # a CLI run id with a '/', a space and markup
HOSTILE_TABLE = "ns:<script>alert(1)</script>"
HOSTILE_DETAIL = "scan failed: <img src=x onerror=alert(2)> & gave up"
HOSTILE_REASON = "copy failed; peer kept <b>DISABLED</b>"
HOSTILE_KEY = b"\x00<script>\xff"
TiB = 1 << 40
GiB, MiB = 1 << 30, 1 << 20


def sizing_report() -> sizing_probe.SizingReport:
    """What preflight's sizing found for OK_RUN: ns:orders sampled, ns:items' sample stopped at the timeout."""
    tables = (
        TableSizing("ns:items", 1, 1, 1_000, 0, 1, 5, 0, 1_000,
                    SampleCopy("b" * 32, 1_000, 10, 10, 100, 300.0, complete=False)),
        TableSizing("ns:orders", 3, 3, 3 * GiB - MiB, MiB, 6, 100, 200, 2 * GiB,
                    SampleCopy("a" * 32, GiB, 400_000, 1_200_000, 120 * MiB, 100.0, complete=True)),
    )
    projection = project(tables, copy_tasks=2, growth_bytes_per_s=1_048_576.0,
                         capacity=HdfsCapacity(10 * TiB, 9 * TiB, TiB))
    return sizing_probe.SizingReport(tables, projection, verdict(projection), None,
                                     HdfsCapacity(10 * TiB, 9 * TiB, TiB).to_dict(),
                                     ("rs9,16020,1: /jmx sub=Regions unreadable (refused)",), 12.5)


def fill(ledger: Ledger) -> None:
    """A successful run (two tables, one re-compared window with differences) and a failed one that left its
    peer DISABLED, written the way the operators write them."""
    ledger.start_run(OK_RUN, dag_id="migrate_orders", plan="orders", source_key="zk1,zk2:2181:/hbase",
                     target_key="zkb:2181:/hbase", peer_id="mig1", tables=["ns:orders", "ns:items"],
                     params={"throttle": 500}, started_ms=T)
    for table in ("ns:orders", "ns:items"):
        ledger.set_phase(OK_RUN, table, "preflight", "running", at_ms=T + 1_000)
        ledger.set_phase(OK_RUN, table, "preflight", "success", at_ms=T + 3_000)
    ledger.set_phase(OK_RUN, ALL_TABLES, "add_peer", "running", at_ms=T + 50_000)
    ledger.set_phase(OK_RUN, ALL_TABLES, "add_peer", "success", at_ms=T + 60_000)
    ledger.record_t0(OK_RUN, T + 60_000)
    ledger.peer_note(OK_RUN, "mig1", "DISABLED", "added disabled before the copy", noted_ms=T + 60_000)
    ledger.set_phase(OK_RUN, "ns:orders", "copy", "running", at_ms=T + 70_000)
    ledger.set_phase(OK_RUN, "ns:orders", "copy", "success", at_ms=T + 70_000 + 1_325_000)  # 22m05s
    parts = [(1_000_000, b"", b"g"), (200_000, b"g", b"p"), (34_567, b"p", b"")]
    for i, (rows, start, stop) in enumerate(parts):
        ledger.partition_done(OK_RUN, "ns:orders", f"p{i}", start, stop, rows=rows, cells=rows * 3,
                              bytes=rows * 300, started_ms=T + 70_000, finished_ms=T + 1_395_000)
    ledger.partition_done(OK_RUN, "ns:items", "p0", b"", b"", rows=15_000, cells=15_000, bytes=1_536,
                          started_ms=T + 70_000, finished_ms=T + 100_000)
    ledger.peer_note(OK_RUN, "mig1", "ENABLED", "enabled after the copy", noted_ms=T + 1_400_000)
    ledger.lag_sample(OK_RUN, "mig1", [
        {"server": "rs1.example.com,16020,1714560000000", "queue_id": "mig1", "size_of_log_queue": 12,
         "age_of_last_shipped_op_ms": 95_000, "shipped_ops": 100},
    ], sampled_ms=T + 1_410_000)
    ledger.lag_sample(OK_RUN, "mig1", [
        {"server": "rs1.example.com,16020,1714560000000", "queue_id": "mig1", "size_of_log_queue": 1,
         "age_of_last_shipped_op_ms": 250, "shipped_ops": 4_000},
        {"server": "rs1.example.com,16020,1714560000000",
         "queue_id": "mig1-rs3.example.com,16020,1714550000000", "size_of_log_queue": 4,
         "age_of_last_shipped_op_ms": 7_000, "shipped_ops": 10},
    ], sampled_ms=T + 1_420_000)
    ledger.quota_sample(OK_RUN, "/hbase", space_consumed=3 * TiB // 4, space_quota=TiB, ns_consumed=4_000,
                        ns_quota=1_000_000, growth_bytes_per_s=1_572_864.0,
                        projected_exhaustion_ms=NOW + 7_200_000, sampled_ms=T + 1_420_000)
    ledger.verification(OK_RUN, "ns:orders", window_start_ms=None, window_end_ms=T + 1_500_000,
                        source_rows=1_234_567, target_rows=1_234_567, matching=1_234_567, content_different=0,
                        only_in_source=0, only_in_target=0, verified_ms=T + 1_600_000)
    ledger.verification(OK_RUN, "ns:items", window_start_ms=None, window_end_ms=T + 1_500_000,
                        source_rows=15_000, target_rows=15_000, matching=15_000, content_different=0,
                        only_in_source=0, only_in_target=0, verified_ms=T + 1_600_000)
    ledger.verification(OK_RUN, "ns:items", window_start_ms=T + 1_500_000, window_end_ms=T + 1_700_000,
                        source_rows=40, target_rows=38, matching=37, content_different=1, only_in_source=2,
                        only_in_target=0, sample_keys=[HOSTILE_KEY, b"row\\9"], verified_ms=T + 1_750_000)
    ledger.end_run(OK_RUN, "success", ended_ms=T + 1_800_000)
    sizing_probe.record(ledger, OK_RUN, sizing_report(), sized_ms=T + 2_000)

    ledger.start_run(FAILED_RUN, dag_id="migrate_users", plan="users", source_key="zk1:2181:/hbase",
                     target_key="zkc:2181:/hbase-unsecure", peer_id="mig2", tables=[HOSTILE_TABLE],
                     started_ms=T + 2_000_000)
    ledger.record_t0(FAILED_RUN, T + 2_010_000)
    ledger.peer_note(FAILED_RUN, "mig2", "DISABLED", HOSTILE_REASON, noted_ms=T + 2_010_000)
    ledger.set_phase(FAILED_RUN, HOSTILE_TABLE, "copy", "running", at_ms=T + 2_020_000)
    ledger.set_phase(FAILED_RUN, HOSTILE_TABLE, "copy", "failed", HOSTILE_DETAIL, at_ms=T + 2_080_000)
    ledger.end_run(FAILED_RUN, "failed", ended_ms=T + 2_090_000)


@pytest.fixture(scope="module")
def ledger_url(tmp_path_factory):
    path = tmp_path_factory.mktemp("ledger") / "ledger.db"
    with Ledger.open(f"sqlite:///{path}") as ledger:
        fill(ledger)
    return f"sqlite:///{path}"


def mounted(url: str, home: Path = REPO) -> TestClient:
    """The dashboard mounted as Airflow's API server mounts plugin apps."""
    parent = FastAPI()
    parent.mount(URL_PREFIX, create_app(resolve_ledger_url(url, None, home), clock=lambda: NOW))
    return TestClient(parent)


@pytest.fixture(scope="module")
def client(ledger_url):
    with mounted(ledger_url) as c:
        yield c


def text_of(page: str) -> str:
    """The body's text as a reader sees it: tags dropped, entities decoded, whitespace collapsed."""
    page = page[max(page.find("<body>"), 0):]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def run_url(run_id: str) -> str:
    return f"{URL_PREFIX}/runs/{quote(run_id, safe='')}"


# ---------------------------------------------------------------------------------------------------------
# The list of runs

def test_runs_page_lists_both_runs_newest_first_with_their_figures(client):
    response = client.get(f"{URL_PREFIX}/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    rows = re.findall(r"<tr>\s*<td><a href=.*?</tr>", response.text, re.S)
    assert len(rows) == 2
    failed, ok = (text_of(r) for r in rows)
    assert ok == ("manual__2024-05-01T12:00:00+00:00 migrate_orders orders zk1,zk2:2181:/hbase \u2192 "
                  "zkb:2181:/hbase mig1: ENABLED (from the ledger; the cluster is not read) success "
                  "2024-05-01 12:00:00 UTC 2024-05-01 12:30:00 UTC 30m00s 1,249,567 3 rows differ in 1 table")
    assert failed == ("cli/<b>retry</b> 2 migrate_users users zk1:2181:/hbase \u2192 "
                      "zkc:2181:/hbase-unsecure mig2: DISABLED (from the ledger; the cluster is not read) failed "
                      "2024-05-01 12:33:20 UTC 2024-05-01 12:34:50 UTC 1m30s 0 not verified")


def test_runs_page_puts_the_disabled_peer_warning_above_the_list(client):
    page = client.get(f"{URL_PREFIX}/").text
    alert = page.index('<div class="alert">')
    assert alert < page.index("<table>")
    shown = text_of(page[alert:page.index("</div>", alert)])
    assert shown.startswith("Peer mig2 was left DISABLED by a failed run: run cli/<b>retry</b> 2 "
                            "Reason noted: copy failed; peer kept <b>DISABLED</b> ")
    assert "remove_peer 'mig2' in the source cluster's hbase shell" in shown
    assert page.count('<div class="alert">') == 1  # mig1 is ENABLED: no alarm for it


def test_every_run_link_opens_its_run_page(client):
    page_url = f"http://testserver{URL_PREFIX}/"
    page = client.get(page_url).text
    hrefs = re.findall(r'href="([^"]*runs/[^"]*)"', page)
    links = sorted({urljoin(page_url, html.unescape(h)) for h in hrefs})
    assert links == sorted(f"http://testserver{run_url(r)}" for r in (OK_RUN, FAILED_RUN))
    for link in links:
        response = client.get(link)
        assert response.status_code == 200
        assert text_of(response.text).startswith("HBase migrations / run ")
        home = re.search(r'<nav><a href="([^"]+)"', response.text).group(1)
        assert client.get(urljoin(link, home)).url == page_url


def test_limit_bounds_the_list_and_is_validated(client):
    page = client.get(f"{URL_PREFIX}/?limit=1").text
    assert len(re.findall(r"<tr>\s*<td><a href=", page)) == 1
    assert f'href="{URL_PREFIX}/?limit=2"' in page  # a page that is full offers more
    response = client.get(f"{URL_PREFIX}/?limit=0")
    assert response.status_code == 422
    assert "limit: Input should be greater than or equal to 1" in text_of(response.text)


# ---------------------------------------------------------------------------------------------------------
# A run page

def test_run_page_shows_phases_copy_lag_quota_and_verification(client):
    response = client.get(run_url(OK_RUN))
    assert response.status_code == 200
    shown = text_of(response.text)
    expected = [
        # header, verdict and facts
        "Run manual__2024-05-01T12:00:00+00:00 success 3 rows differ in 1 table",
        "Peer mig1: ENABLED", "Tables ns:orders, ns:items",
        "T0 (peer added) 2024-05-01 12:01:00 UTC 1714564860000", "Parameters throttle=500",
        # phases: columns in migration order, one row per table, then the run-wide row
        "Table preflight add_peer copy",
        "ns:orders success 2s \u2014 success 22m05s", "ns:items success 2s \u2014 \u2014",
        "all tables \u2014 success 10s \u2014",
        # copy totals
        "ns:items 1 \u2014 15,000 15,000 1.5 KiB 30s 500 \u2014",
        "ns:orders 3 \u2014 1,234,567 3,703,701 353.2 MiB 22m05s 932 \u2014",
        "Total 4 1,249,567 3,718,701 353.2 MiB",
        # lag: peaks, latest queues (a recovered queue flagged), history
        "Samples 2 Peak ageOfLastShippedOp 1m35s Peak sizeOfLogQueue 12 WALs",
        "rs1.example.com,16020,1714560000000 mig1 no 1 250 ms 4,000",
        "rs1.example.com,16020,1714560000000 mig1-rs3.example.com,16020,1714550000000 recovered 4 7s 10",
        "2024-05-01 12:23:40 UTC 2 1 5 7s", "2024-05-01 12:23:30 UTC 1 0 12 1m35s",
        # quota: usage against quota, growth, projected exhaustion relative to now
        "/hbase 2024-05-01 12:23:40 UTC 768.0 GiB / 1.0 TiB (75.0%) 4,000 / 1,000,000 (0.4%) 1.5 MiB/s "
        "2024-05-01 15:00:00 UTC (in 2h00m00s)",
        # verification: every window, sample keys as toStringBinary and hex
        "ns:orders from the start \u2192 2024-05-01 12:25:00 UTC 1,234,567 1,234,567 1,234,567 0 0 0",
        "ns:items 2024-05-01 12:25:00 UTC \u2192 2024-05-01 12:28:20 UTC 40 38 37 1 2 0 "
        "2024-05-01 12:29:10 UTC \\x00<script>\\xFF (hex 003c7363726970743eff) row\\x5C9 (hex 726f775c39)",
        # peer notes in order
        "2024-05-01 12:01:00 UTC mig1 DISABLED added disabled before the copy "
        "2024-05-01 12:23:20 UTC mig1 ENABLED enabled after the copy",
    ]
    for fragment in expected:
        assert fragment in shown, fragment
    assert "left DISABLED" not in shown
    assert 'class="warn"><td><code>rs1.example.com,16020,1714560000000</code></td><td><code>mig1-rs3' in (
        response.text)


def test_failed_run_page_warns_of_the_disabled_peer_and_shows_the_failure(client):
    page = client.get(run_url(FAILED_RUN)).text
    shown = text_of(page)
    assert shown.startswith("HBase migrations / run cli/<b>retry</b> 2 Run cli/<b>retry</b> 2 failed "
                            "not verified DAG run migrate_users in Airflow (its tasks and their logs; each phase "
                            "below links to its task) Peer mig2 was left DISABLED by a failed run Reason noted: copy "
                            "failed; peer kept <b>DISABLED</b> A disabled peer keeps every WAL written "
                            "since T0 (2024-05-01 12:33:30 UTC) in oldWALs")
    assert "remove_peer 'mig2'" in shown
    assert f"copy failed for {HOSTILE_TABLE}: {HOSTILE_DETAIL}" in shown
    assert f"{HOSTILE_TABLE} not verified" in shown
    for empty in ("No partition copied yet", "No lag sample yet.", "No quota sample yet."):
        assert empty in shown
    assert 'class="bad">\n    <td>2024-05-01 12:33:30 UTC</td><td>mig2</td><td>DISABLED</td>' in page


def test_unknown_run_is_a_404_page_naming_it(client):
    response = client.get(run_url("no-such-run"))
    assert response.status_code == 404
    assert "run 'no-such-run' is not in the ledger" in text_of(response.text)


# ---------------------------------------------------------------------------------------------------------
# Escaping and headers

@pytest.mark.parametrize("path", [f"{URL_PREFIX}/", run_url(OK_RUN), run_url(FAILED_RUN),
                                  run_url("<script>alert(3)</script>")])
def test_no_ledger_text_reaches_the_page_as_markup(client, path):
    page = client.get(path).text
    for raw in ("<script>", "<img", "<b>"):
        assert raw not in page, (raw, path)
    if path == f"{URL_PREFIX}/" or path == run_url(FAILED_RUN):
        assert "&lt;b&gt;retry&lt;/b&gt;" in page
        assert "peer kept &lt;b&gt;DISABLED&lt;/b&gt;" in page
    if path == run_url(FAILED_RUN):
        assert "ns:&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&lt;img src=x onerror=alert(2)&gt; &amp; gave up" in page
    if path == run_url(OK_RUN):
        assert "\\x00&lt;script&gt;\\xFF" in page


def test_pages_forbid_scripts_and_foreign_framing(client):
    for path in (f"{URL_PREFIX}/", run_url(OK_RUN), f"{URL_PREFIX}/api/runs", run_url("missing")):
        headers = client.get(path).headers
        for name, value in SECURITY_HEADERS.items():
            assert headers[name] == value, (path, name)
    assert "script-src" not in SECURITY_HEADERS["Content-Security-Policy"]  # default-src 'none' covers it
    assert "frame-ancestors 'self'" in SECURITY_HEADERS["Content-Security-Policy"]


# ---------------------------------------------------------------------------------------------------------
# JSON

def test_json_endpoints_return_the_ledgers_dicts(client, ledger_url):
    with Ledger.open(ledger_url) as ledger:
        runs = ledger.recent_runs(50)
        summaries = {r: ledger.run_summary(r) for r in (OK_RUN, FAILED_RUN)}
        samples = ledger.latest_samples(OK_RUN, 2)
    assert client.get(f"{URL_PREFIX}/api/runs").json() == runs
    assert [r["run_id"] for r in runs] == [FAILED_RUN, OK_RUN]
    assert client.get(f"{URL_PREFIX}/api/runs?limit=1").json() == runs[:1]
    for run_id, summary in summaries.items():
        got = client.get(f"{URL_PREFIX}/api/runs/{quote(run_id, safe='')}")
        assert got.headers["content-type"] == "application/json"
        assert got.json() == summary
    assert summaries[OK_RUN]["copy"]["total"]["rows"] == 1_249_567
    assert client.get(f"{URL_PREFIX}/api/samples/{quote(OK_RUN, safe='')}?limit=2").json() == samples
    assert len(samples["lag"]) == 2 and len(samples["quota"]) == 1


def test_json_errors_stay_json(client):
    missing = client.get(f"{URL_PREFIX}/api/runs/nope")
    assert (missing.status_code, missing.json()) == (404, {"detail": "run 'nope' is not in the ledger"})
    assert client.get(f"{URL_PREFIX}/api/samples/nope").status_code == 404
    bad = client.get(f"{URL_PREFIX}/api/runs?limit=501")
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["query", "limit"]


# ---------------------------------------------------------------------------------------------------------
# No ledger, or a broken one

@pytest.mark.parametrize("relative", ["ledger.db", "no-such-dir/ledger.db"])
def test_missing_ledger_is_an_empty_state_and_is_not_created(tmp_path, relative):
    with mounted(f"sqlite:///{relative}", home=tmp_path) as c:
        page = c.get(f"{URL_PREFIX}/")
        assert page.status_code == 200
        assert "No migration has run yet: the ledger file does not exist." in text_of(page.text)
        assert f"sqlite:///{tmp_path}/{relative}" in page.text  # which file it looked for, anchored at home
        assert c.get(f"{URL_PREFIX}/api/runs").json() == []
        assert c.get(run_url(OK_RUN)).status_code == 404
        assert c.get(f"{URL_PREFIX}/api/runs/x").json() == {
            "detail": "run 'x' is not in the ledger: the ledger has no runs yet"}
    assert list(tmp_path.iterdir()) == []


def test_a_ledger_created_later_is_picked_up(tmp_path):
    path = tmp_path / "ledger.db"
    with mounted(f"sqlite:///{path}") as c:
        assert c.get(f"{URL_PREFIX}/api/runs").json() == []
        with Ledger.open(f"sqlite:///{path}") as ledger:
            fill(ledger)
        assert [r["run_id"] for r in c.get(f"{URL_PREFIX}/api/runs").json()] == [FAILED_RUN, OK_RUN]


def test_unreadable_ledger_is_a_503_that_says_so(tmp_path):
    path = tmp_path / "ledger.db"
    path.write_bytes(b"this is not a SQLite database" * 100)
    with mounted(f"sqlite:///{path}") as c:
        page = c.get(f"{URL_PREFIX}/")
        assert page.status_code == 503
        assert f"the ledger at sqlite:///{path} cannot be opened (DatabaseError)" in text_of(page.text)
        api = c.get(f"{URL_PREFIX}/api/runs")
        assert api.status_code == 503
        assert "cannot be opened" in api.json()["detail"]
    assert path.read_bytes() == b"this is not a SQLite database" * 100


def test_a_damaged_ledger_read_is_a_503_not_a_500(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger.open(f"sqlite:///{path}") as ledger:
        fill(ledger)
    with mounted(f"sqlite:///{path}") as c:
        assert c.get(f"{URL_PREFIX}/api/runs").status_code == 200  # the ledger is open and cached now
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE peer_notes")
        detail = f"the ledger at sqlite:///{path} could not be read (OperationalError)"
        page = c.get(f"{URL_PREFIX}/")
        assert page.status_code == 503
        assert detail in text_of(page.text)
        api = c.get(f"{URL_PREFIX}/api/runs/{quote(OK_RUN, safe='')}")
        assert api.status_code == 503
        assert api.json()["detail"].startswith(detail)


# ---------------------------------------------------------------------------------------------------------
# The plugin

def test_plugin_declares_the_nav_entry_and_the_app_mount():
    plugin = HBaseMigrationPlugin()
    assert plugin.name == "hbase_migration"
    assert plugin.external_views == [{"name": "HBase migrations", "href": "/hbase-migration/",
                                      "destination": "nav", "category": "browse",
                                      "url_route": "hbase-migrations"}]
    [entry] = plugin.fastapi_apps
    assert (entry["url_prefix"], entry["name"]) == ("/hbase-migration", "HBase migration dashboard")
    assert plugin.fastapi_apps[0]["app"] is entry["app"]  # built once


def test_plugin_app_requires_an_airflow_sign_in():
    with TestClient(HBaseMigrationPlugin().fastapi_apps[0]["app"]) as c:
        page = c.get("/runs/x?samples=5", follow_redirects=False)
        # A page without a (valid) sign-in goes to Airflow's sign-in, which comes back to it afterwards.
        assert page.status_code == 303
        assert page.headers["location"] == "/api/v2/auth/login?next=%2Fruns%2Fx%3Fsamples%3D5"
        assert "Ledger:" not in page.text and "sqlite:" not in page.text  # nothing about the ledger
        assert c.get("/api/runs").json() == {"detail": "Not authenticated"}
        assert c.get("/api/runs", headers={"Authorization": "Bearer "}).status_code == 401


def run_airflow(code_or_args: list[str], **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO), **env}
    return subprocess.run(code_or_args, capture_output=True, text=True, timeout=120, env=environment, cwd="/")


def test_airflow_plugin_manager_loads_the_plugin(tmp_path):
    script = textwrap.dedent("""
        import json
        from airflow import plugins_manager

        info = {p["name"]: p for p in plugins_manager.get_plugin_info()}
        print(json.dumps({"errors": plugins_manager.get_import_errors(), "plugin": info["hbase_migration"]},
                         default=str))
    """)
    done = run_airflow([sys.executable, "-c", script])
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    plugin = result["plugin"]
    # By the distribution's entry point, once: the plugins folder does not hold it (airflow.cfg)
    assert plugin["source"] == ("hbase-migration==0.1.0: EntryPoint(name='hbase_migration', value='hbase_migration"
                                ".plugins.hbase_migration_plugin:HBaseMigrationPlugin', group='airflow.plugins')")
    assert not plugin.get("macros")
    assert plugin["fastapi_apps"] == [{"app": "fastapi.applications.FastAPI",
                                       "url_prefix": "/hbase-migration", "name": "HBase migration dashboard"}]
    assert [v["url_route"] for v in plugin["external_views"]] == ["hbase-migrations"]


def test_airflow_plugins_cli_lists_it_under_its_name():
    done = run_airflow([str(REPO / ".venv" / "bin" / "airflow"), "plugins", "--output", "json"])
    assert done.returncode == 0, done.stderr[-3000:]
    plugins = json.loads(done.stdout.strip().splitlines()[-1])  # after any log line Airflow prints
    assert [p["name"] for p in plugins] == ["hbase_migration"]


def test_a_bad_ledger_url_gives_a_dashboard_that_says_why(monkeypatch, caplog):
    import hbase_migration.plugins.hbase_migration_plugin as plugin_module

    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", "sqlite:///:memory:")
    # No Airflow auth manager runs in a unit test: let every request past the sign-in.
    monkeypatch.setattr(plugin_module, "airflow_sign_in", lambda: lambda: None)
    with TestClient(plugin_module.build_dashboard()) as c:
        for path in ("/", "/runs/x", "/api/runs"):
            response = c.get(path)
            assert (response.status_code, response.text) == (503, (
                "The HBase migration dashboard cannot start: LedgerUrlError: ledger url from "
                "[hbase_migration] ledger_url must name a SQLite database file, got ':memory:'"))
    assert "the migration dashboard cannot start" in caplog.text


def test_run_page_shows_the_sizing_preflight_recorded(client):
    shown = text_of(client.get(run_url(OK_RUN)).text)
    sizing = shown[shown.index("Sizing Sized"):shown.index("Copy Table Partitions done")]
    assert sizing == (
        "Sizing Sized 2024-05-01 12:00:02 UTC: projected copy 3m20s (200s, 2 partitions at once), oldWALs growth "
        "1.0 MiB/s pins 200.0 MiB (x2 = 400.0 MiB); ns:items not projected: the sample copy stopped at the timeout "
        "before its region ended Fix: raise sample_timeout_s for the tables not projected "
        "Table Regions Store files Memstore Rows (est.) Sample copy Copy work (one task) "
        "ns:items 1 1: 1000 B 0 B \u2014 10 rows of 1000 B in 300.0 s (stopped at the timeout) \u2014 "
        "ns:orders 3 6: 3.0 GiB 1.0 MiB 1,200,000 400,000 rows of 1.0 GiB in 100.0 s 5m00s "
        "Projected copy: 3m20s with 2 partitions at once; oldWALs growth 1.0 MiB/s, pinned meanwhile 200.0 MiB. "
        "Limit Room Needed (x safety factor) HDFS free space (the namenode's CapacityRemaining) 1.0 TiB 400.0 MiB "
        "Not read: rs9,16020,1: /jmx sub=Regions unreadable (refused) ")
    assert "Not sized (sizing off, or preflight has not run yet)." in text_of(client.get(run_url(FAILED_RUN)).text)
