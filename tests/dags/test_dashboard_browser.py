"""The operator's view, in a real browser: Debian's Chromium (headless, driven by selenium through Debian's
chromedriver) signs in to a real Airflow API server of the test's own, opens Browse -> HBase migrations while
`airflow dags test hbase_table_migration` migrates two live tables from minihbase dc1 to dc2 (a writer keeps
editing the source, its WALs roll), and finds the charts filling in: copy progress against the plan, the lag
of every region server while the peer is DISABLED. When the run has finished it finds the verification and
the oldWALs quota, follows the links between the run's page and its DAG run, and an expired sign-in leads
back to Airflow's sign-in page. The API server, the DAG run and the dashboard share one metadata database and
one ledger. With HBASE_MIGRATION_SCREENSHOTS=DIR the run page is saved there as PNG (the README's pictures).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from bedkit.zookeeper import free_port
from tests.airflow_home import BIN, REPO, api_server, make_home, stop_group
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ROWS = 2_000  # per table: the copy takes a few Spark jobs' time, long enough to watch it live
RUN_TIMEOUT_S = 900


def chrome(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,2000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 1.0):
    """`wait_for` in a browser: an error from the page (between two loads, an element not there yet) is "not yet"."""
    return wait_for(predicate, timeout_s, what, interval_s, ignore=(Exception,))


class SourceActivity:
    """Edits on the source (puts to both tables) and a WAL roll every few seconds, in a thread: the disabled
    peer's queues then grow, as on a live cluster."""

    def __init__(self, cluster, tables: list[str]):
        self.cluster, self.tables = cluster, tables
        self.stop_event = threading.Event()
        self.puts = 0
        self.thread = threading.Thread(target=self._run, name="source-activity", daemon=True)

    def _run(self) -> None:
        conn = self.cluster.connection()
        try:
            i = 0
            next_roll = time.monotonic() + 3
            while not self.stop_event.wait(0.05):
                table = self.tables[i % len(self.tables)]
                conn.table(table).put(b"%02x-live-%06d" % (i % 256, i), {b"d:a": b"live-%d" % i})
                self.puts += 1
                i += 1
                if time.monotonic() >= next_roll:
                    self.cluster.roll_wals()
                    next_roll = time.monotonic() + 3
        finally:
            conn.close()

    def __enter__(self) -> "SourceActivity":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(30)


def sign_in(driver, base: str, user: str, password: str, next_path: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + next_path)
    wait_until(lambda: "/auth/login" in driver.current_url, 60, "Airflow's sign-in page")
    wait_until(lambda: driver.find_element(By.NAME, "username"), 60, "the sign-in form")
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: "/auth/login" not in driver.current_url, 60, "the sign-in to complete")


def open_browse_hbase_migrations(driver, base: str):
    """Browse -> HBase migrations in the Airflow UI's nav; returns with the driver inside the dashboard's frame."""
    from selenium.webdriver.common.by import By

    driver.switch_to.default_content()
    driver.get(base + "/")
    browse = wait_until(lambda: next(e for e in driver.find_elements(By.TAG_NAME, "button")
                                     if e.text.strip() == "Browse"), 60, "the Browse menu")
    browse.click()
    entry = wait_until(lambda: next(e for e in driver.find_elements(By.XPATH, "//*[@role='menuitem']")
                                    if e.text.strip() == "HBase migrations" and e.is_displayed()), 30,
                       "the HBase migrations entry")
    assert entry.get_attribute("href") == base + "/plugin/hbase-migrations"
    entry.click()
    wait_until(lambda: "/plugin/hbase-migrations" in driver.current_url, 30, "the plugin page")
    frame = wait_until(lambda: driver.find_element(By.CSS_SELECTOR, "iframe"), 30, "the dashboard's frame")
    assert frame.get_attribute("src").endswith("/hbase-migration/"), frame.get_attribute("src")
    driver.switch_to.frame(frame)
    wait_until(lambda: driver.find_element(By.TAG_NAME, "h1").text == "HBase migrations", 30, "the runs list")


def chart_points(driver, css: str) -> int:
    from selenium.webdriver.common.by import By

    total = 0
    for svg in driver.find_elements(By.CSS_SELECTOR, f"svg.{css}"):
        total += len(svg.find_elements(By.CSS_SELECTOR, "circle.pt"))
    return total


def section_text(driver, section_id: str) -> str:
    """The text from a section's heading up to the next heading."""
    return driver.execute_script("""
        const start = document.getElementById(arguments[0]); let out = [start.innerText];
        for (let n = start.nextElementSibling; n && n.tagName !== 'H2'; n = n.nextElementSibling) {
            out.push(n.innerText === undefined ? n.textContent : n.innerText);
        }
        return out.join(' ').replace(/\\s+/g, ' ');""", section_id)


@pytest.fixture(scope="module")
def airflow(minihbase_pair, tmp_path_factory):
    dc1, dc2 = minihbase_pair
    home = tmp_path_factory.mktemp("airflow_home")
    env, passwords = make_home(home)
    password = passwords["admin"]
    env.update({
        "AIRFLOW_CONN_HBASE_SOURCE": dc1.connection_json, "AIRFLOW_CONN_HBASE_TARGET": dc2.connection_json,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{home / 'ledger.db'}",
        "AIRFLOW__HBASE_MIGRATION__WATCHDOG_INTERVAL_S": "2",
    })
    with api_server(env, free_port(), home / "api-server.log") as base:
        yield base, env, password, home


@pytest.mark.timeout(1800)  # make test's two workers share two cores: several times its quiet-machine time
def test_the_dashboard_during_and_after_a_live_migration(minihbase_pair, airflow, tmp_path):
    from selenium.webdriver.common.by import By

    from demo.workload import SampleTable, Thrift2, load

    dc1, dc2 = minihbase_pair
    base, env, password, home = airflow
    splits = (b"40", b"80", b"c0")
    tables = [f"ui_{name}_{uuid.uuid4().hex[:4]}" for name in ("orders", "users")]
    loader = Thrift2(dc1.endpoints)
    for name in tables:
        dc1.create_table(name, {"d": {"replication_scope": 1, "max_versions": 3}}, split_keys=list(splits))
        load(loader, SampleTable(name, {"d": {"max_versions": 3}}, splits, ROWS))
    loader.close()
    peer_id = "ui_" + uuid.uuid4().hex[:6]
    conf = {"tables": tables, "peer_id": peer_id, "create_missing_tables": True, "rows_per_s": 400,
            "bulk_loads": "none", "stable_samples": 2, "recompare_sleep_s": 1, "expected_copy_s": 60}
    dag_log = home / "dags-test.log"
    driver = None
    started = time.monotonic()
    with open(dag_log, "w") as out:
        dag = subprocess.Popen([str(BIN / "airflow"), "dags", "test", "hbase_table_migration", "-c", json.dumps(conf)],
                               cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with SourceActivity(dc1, tables) as activity:
            driver = chrome(tmp_path / "chromium-profile")
            # An unsigned visitor of the dashboard is sent to Airflow's sign-in, and back to it afterwards.
            sign_in(driver, base, "admin", password, "/hbase-migration/")
            wait_until(lambda: driver.current_url == base + "/hbase-migration/", 30, "the way back to the dashboard")
            open_browse_hbase_migrations(driver, base)

            # The live run appears in the list (the frame's page, opened on its own to reload it); its page fills
            # in while the peer is DISABLED and the copy runs.
            driver.switch_to.default_content()

            def listed():
                driver.get(base + "/hbase-migration/")
                return driver.find_element(By.PARTIAL_LINK_TEXT, "manual__")

            link = wait_until(listed, 180, "the running migration in the list", interval_s=3)
            run_id = link.text
            run_href = link.get_attribute("href")
            assert run_href == f"{base}/hbase-migration/runs/{quote(run_id, safe='')}", run_href

            def live_page():
                if dag.poll() is not None:
                    return "ended"
                driver.get(run_href)
                status = driver.find_element(By.CSS_SELECTOR, "h1 .badge").text
                copy_points, lag_points = chart_points(driver, "copy-chart"), chart_points(driver, "lag-size")
                copy_text = section_text(driver, "copy")
                # The peer's state is cached for a few seconds: a read from before add_peer may still show.
                peer_fact = driver.find_element(By.CSS_SELECTOR, "dd.peer-state").text
                return (status == "running" and copy_points >= 3 and lag_points >= 6
                        and re.search(r"\d+ of \d+", copy_text)
                        and re.search(r"(DISABLED|ENABLED) \(read from the cluster at", peer_fact)) and (
                    copy_points, lag_points, copy_text)

            seen = wait_until(live_page, 420, "the live charts to fill in", interval_s=3)
            assert seen != "ended", "the run ended before its page showed live charts:\n" + dag_log.read_text()[-3000:]
            copy_points, lag_points, copy_text = seen
            assert "peer DISABLED" in driver.find_element(By.CSS_SELECTOR, "svg.lag-size").text
            if os.environ.get("HBASE_MIGRATION_SCREENSHOTS"):
                save_page(driver, Path(os.environ["HBASE_MIGRATION_SCREENSHOTS"]) / "dashboard-live.png")
            rc = dag.wait(timeout=RUN_TIMEOUT_S)
        assert rc == 0, dag_log.read_text()[-5000:]
        dag_s = time.monotonic() - started

        # The finished run: verified clean, the quota section with its chart, every partition of the plan.
        driver.get(run_href)
        assert driver.find_element(By.CSS_SELECTOR, "h1 .badge").text == "success"
        verification = section_text(driver, "verification")
        assert "not verified" not in verification, verification
        for name in tables:
            # The migration's verification has no end time: every timestamp, future ones included (issue 18).
            row = re.search(rf"{name} from the start \u2192 no end \(every timestamp\) "
                            r"([\d,]+) ([\d,]+) ([\d,]+) 0 0 0 ", verification)
            assert row and row.group(1) == row.group(2) == row.group(3), verification
            assert int(row.group(1).replace(",", "")) >= ROWS
        quota = section_text(driver, "quota")
        assert "No quota sample yet." not in quota and "samples in all" in quota, quota
        assert chart_points(driver, "quota-chart") >= 2
        assert chart_points(driver, "lag-age") >= lag_points  # the catch-up's samples came after
        copy_text = section_text(driver, "copy")
        for n in re.findall(r"(\d+) of (\d+)", copy_text):
            assert n[0] == n[1], copy_text
        assert "so far" not in copy_text
        if os.environ.get("HBASE_MIGRATION_SCREENSHOTS"):
            save_page(driver, Path(os.environ["HBASE_MIGRATION_SCREENSHOTS"]) / "dashboard-run.png")

        # From the run's page to its DAG run in Airflow, and from a task of that run back to the page.
        to_airflow = driver.find_element(By.CSS_SELECTOR, "a.airflow-link")
        assert to_airflow.get_attribute("target") == "_top"
        dag_run_url = to_airflow.get_attribute("href")
        assert dag_run_url == f"{base}/dags/hbase_table_migration/runs/{quote(run_id, safe='')}"
        # Both tables fit one batch (issue 42): their copy ran in the mapped `batch` group, at index 0.
        copy_task = driver.find_element(By.CSS_SELECTOR, "a[href$='/tasks/batch.copy/mapped/0']")
        assert copy_task.get_attribute("href") == dag_run_url + "/tasks/batch.copy/mapped/0"
        to_airflow.click()
        wait_until(lambda: driver.current_url == dag_run_url, 30, "the DAG run page")
        wait_until(lambda: run_id in driver.find_element(By.TAG_NAME, "body").text, 60,
                   "the Airflow UI showing the DAG run")
        token = requests.post(f"{base}/auth/token", json={"username": "admin", "password": password},
                              timeout=10).json()["access_token"]
        links = requests.get(f"{base}/api/v2/dags/hbase_table_migration/dagRuns/{quote(run_id, safe='')}"
                             "/taskInstances/report/links", headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
        assert links.status_code == 200, links.text
        assert links.json()["extra_links"]["HBase migration dashboard"] == (
            "/hbase-migration/runs/" + quote(run_id, safe=""))

        # The sign-in expires (the cookie goes): the dashboard leads to Airflow's sign-in page, not an error.
        driver.delete_cookie("_token")
        driver.get(run_href)
        wait_until(lambda: "/auth/login" in driver.current_url, 30, "Airflow's sign-in page")
        assert "next=" in driver.current_url
        print(f"browser test: DAG run {dag_s:.0f}s, {activity.puts} live puts, copy chart {copy_points} points, "
              f"lag chart {lag_points} points while live")
    finally:
        if driver is not None:
            driver.quit()
        stop_group(dag)



def save_page(driver, path: Path) -> None:
    """The whole page as PNG: the window grown to the document's height for the shot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    size = driver.get_window_size()
    driver.set_window_size(1100, min(max(height + 40, 800), 6000))
    driver.save_screenshot(str(path))
    driver.set_window_size(size["width"], size["height"])
