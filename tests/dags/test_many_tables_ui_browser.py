"""A 300-table migration run in the Airflow UI (issue 42), in a real browser: Debian's Chromium (headless, through
chromedriver) signs in to an Airflow API server of the test's own, whose metadata database holds the
`hbase_table_migration` run of 300 tables from minihbase dc1 to dc2 (`airflow dags test`, batches of 50: six
instances of the mapped `batch` group, where each table was a mapped copy and verify task before batches). The
run's grid and its graph both load and show the batch group and its steps, and the dashboard's run page lists the
six batches, each with its own peer, verified.

Heavy (300 tables created on both stand-in clusters, twelve Spark applications, a browser): `make test-full`.
"""
from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest

from minihbase.zookeeper import free_port
from tests.airflow_home import BIN, REPO, api_server, make_home, stop_group
from tests.dags.test_dashboard_browser import chrome, section_text, sign_in, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.full]

TABLES = 300
BATCH = 50


@pytest.mark.timeout(5400)
def test_a_300_table_runs_grid_and_graph_load_in_the_airflow_ui(minihbase_pair, tmp_path):
    from selenium.webdriver.common.by import By

    from hbase_migration.ledger.store import Ledger

    dc1, dc2 = minihbase_pair
    prefix = f"ui300_{uuid.uuid4().hex[:4]}"
    tables = [f"{prefix}_{k:03d}" for k in range(TABLES)]
    conn = dc1.connection()
    for k, name in enumerate(tables):
        dc1.create_table(name, {"d": {"replication_scope": 1, "max_versions": 2}})
        conn.table(name).put(b"row-%03d" % k, {b"d:v": b"%d" % k})
    conn.close()
    home = tmp_path / "airflow_home"
    home.mkdir()
    env, passwords = make_home(home)
    env.update({
        "AIRFLOW_CONN_HBASE_SOURCE": dc1.connection_json, "AIRFLOW_CONN_HBASE_TARGET": dc2.connection_json,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{home / 'ledger.db'}",
        "AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S": "2",
    })
    peer_id = prefix
    conf = {"tables": tables, "peer_id": peer_id, "sizing": False, "bulk_loads": "none", "expected_copy_s": 600,
            "stable_samples": 2,
            "recompare_sleep_s": 1, "batch_max_tables": BATCH}
    with open(home / "dags-test.log", "w") as out:
        dag = subprocess.Popen([str(BIN / "airflow"), "dags", "test", "hbase_table_migration", "-c", json.dumps(conf)],
                               cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        rc = dag.wait(timeout=4800)
    finally:
        if dag.poll() is None:
            stop_group(dag)
    log = (home / "dags-test.log").read_text(errors="replace")
    assert rc == 0, log[-5000:]
    with Ledger.open(f"sqlite:///{home / 'ledger.db'}") as ledger:
        run = next(r for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
        summary = ledger.run_summary(run["run_id"])
    run_id = run["run_id"]
    assert [len(b["tables"]) for b in summary["batches"]] == [BATCH] * (TABLES // BATCH)
    assert all(summary["verification"][t][0]["clean"] for t in tables)

    driver = None
    with api_server(env, free_port(), home / "api-server.log") as base:
        try:
            driver = chrome(tmp_path / "chromium-profile")
            run_page = f"/dags/hbase_table_migration/runs/{run_id}"
            sign_in(driver, base, "admin", passwords["admin"], run_page)
            for view in ("grid", "graph"):  # the UI keeps the chosen view in the browser's local storage, as JSON
                driver.execute_script("window.localStorage.setItem('default_dag_view', JSON.stringify(arguments[0]));",
                                      view)
                started = time.monotonic()
                driver.get(base + run_page)
                if view == "graph":
                    nodes = wait_until(lambda: [n.text for n in driver.find_elements(By.CSS_SELECTOR,
                                                                                       ".react-flow__node")
                                                if n.text.strip()] or None, 300, "the run's graph")
                    assert any("batch" in n for n in nodes) and any("plan_batches" in n for n in nodes), nodes
                else:
                    text = wait_until(lambda: (lambda t: t if "batch" in t and "plan_batches" in t else None)(
                        driver.find_element(By.TAG_NAME, "body").text), 300, "the run's grid")
                    assert "report" in text and "state_left_behind" in text, text[:2000]
                print(f"{view} of the {TABLES}-table run loaded in {time.monotonic() - started:.1f}s")  # not asserted
            driver.get(f"{base}/hbase-migration/runs/{run_id}")
            batches = wait_until(lambda: section_text(driver, "batches"), 120, "the dashboard's batches")
            for k in range(1, TABLES // BATCH + 1):
                assert f"b{k} {peer_id}_b{k}" in batches, batches
            assert batches.count("success success success") == TABLES // BATCH, batches
        finally:
            if driver is not None:
                driver.quit()
