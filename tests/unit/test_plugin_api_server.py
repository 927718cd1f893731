"""The dashboard under Airflow's real API server: mounted by the plugin manager, behind Airflow's sign-in.

Starts `airflow api-server` (one worker, loopback, a free port) in a temporary AIRFLOW_HOME holding a copy of
the repository's airflow.cfg and of its migrated metadata database, with this repository's plugins folder and
a filled ledger; signs in through the Simple auth manager; stops the server (its process group) afterwards.
"""
from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from bedkit.zookeeper import free_port
from hbase_migration.ledger.store import Ledger
from tests.airflow_home import api_server, make_home

from .test_plugin_dashboard import FAILED_RUN, OK_RUN, fill

pytestmark = pytest.mark.slow

PASSWORDS = {"admin": "admin-pw", "viewer1": "viewer-pw"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow_home")
    env, _ = make_home(home, {"admin": "admin", "viewer1": "viewer"}, PASSWORDS)
    (home / "dags").mkdir()  # no DAG: the pages are the plugin's
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(home / "dags")
    env["AIRFLOW__HBASE_MIGRATION__LEDGER_URL"] = "sqlite:///ledger.db"  # relative: anchored at AIRFLOW_HOME
    with Ledger.open(f"sqlite:///{home / 'ledger.db'}") as ledger:
        fill(ledger)
    log_path = home / "api-server.log"
    with api_server(env, free_port(), log_path) as base:
        yield base, log_path


def token(base: str, user: str) -> str:
    response = requests.post(f"{base}/auth/token", json={"username": user, "password": PASSWORDS[user]},
                             timeout=10)
    assert response.status_code == 201, response.text
    return response.json()["access_token"]


def expired_token(base: str, user: str, home: Path) -> str:
    """A token Airflow issued, re-signed with the server's own secret after moving its expiry into the past:
    what a browser holds after its sign-in expired."""
    import jwt

    issued = token(base, user)
    header = jwt.get_unverified_header(issued)
    claims = jwt.decode(issued, options={"verify_signature": False})
    now = int(time.time())
    claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    secret = (home / ".airflow" / "secrets" / "jwt_secret").read_text()  # as jwt_secret_cmd gives it, newline kept
    return jwt.encode(claims, secret, algorithm=header["alg"], headers={"kid": header["kid"]} if "kid" in header
                      else None)


def test_a_page_without_a_valid_sign_in_leads_to_airflows_sign_in_and_back(server):
    base, log_path = server
    for cookies in ({}, {"_token": expired_token(base, "viewer1", log_path.parent)}):
        page = requests.get(f"{base}/hbase-migration/runs/x?samples=5", cookies=cookies, allow_redirects=False,
                            timeout=10)
        assert page.status_code == 303, (cookies.keys(), page.text[:300])
        assert page.headers["location"] == "/api/v2/auth/login?next=%2Fhbase-migration%2Fruns%2Fx%3Fsamples%3D5"
        # Airflow's own login route hands over to the auth manager's sign-in page, keeping `next`.
        hop = requests.get(base + page.headers["location"], allow_redirects=False, timeout=10)
        assert hop.status_code == 307
        assert hop.headers["location"] == "/auth/login?next=%2Fhbase-migration%2Fruns%2Fx%3Fsamples%3D5"
        assert requests.get(base + hop.headers["location"], timeout=10).status_code == 200
    expired = requests.get(f"{base}/hbase-migration/api/runs", timeout=10,
                           headers={"Authorization": f"Bearer {expired_token(base, 'admin', log_path.parent)}"})
    assert (expired.status_code, expired.json()) == (401, {"detail": "Token Expired"})  # the API stays JSON


def test_dashboard_is_mounted_and_needs_a_sign_in(server):
    base, log_path = server
    assert requests.get(f"{base}/hbase-migration/", allow_redirects=False, timeout=10).status_code == 303
    anonymous = requests.get(f"{base}/hbase-migration/api/runs", timeout=10)
    assert (anonymous.status_code, anonymous.json()) == (401, {"detail": "Not authenticated"})
    forged = requests.get(f"{base}/hbase-migration/api/runs", headers={"Authorization": "Bearer forged"},
                          timeout=10)
    assert (forged.status_code, forged.json()) == (403, {"detail": "Invalid JWT token"})
    assert f"reads the ledger sqlite:///{log_path.parent / 'ledger.db'}" in log_path.read_text()


def test_the_uis_cookie_opens_the_pages(server):
    base, _ = server
    cookies = {"_token": token(base, "viewer1")}  # what the browser sends into the UI's frame
    page = requests.get(f"{base}/hbase-migration/", cookies=cookies, timeout=10)
    assert page.status_code == 200
    assert "Peer mig2 was left DISABLED by a failed run" in page.text
    assert f'href="/hbase-migration/runs/{quote(OK_RUN, safe="")}"' in page.text
    run_url = f"{base}/hbase-migration/runs/{quote(FAILED_RUN, safe='')}"
    run = requests.get(run_url, cookies=cookies, timeout=10)
    assert run.status_code == 200
    assert "Run cli/&lt;b&gt;retry&lt;/b&gt; 2" in run.text
    assert run.headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_the_api_answers_a_bearer_token(server):
    base, _ = server
    headers = {"Authorization": f"Bearer {token(base, 'admin')}"}
    runs = requests.get(f"{base}/hbase-migration/api/runs", headers=headers, timeout=10).json()
    assert [r["run_id"] for r in runs] == [FAILED_RUN, OK_RUN]
    summary = requests.get(f"{base}/hbase-migration/api/runs/{quote(OK_RUN, safe='')}", headers=headers,
                           timeout=10).json()
    assert summary["copy"]["total"]["rows"] == 1_249_567


def test_airflow_lists_the_plugin_and_its_nav_entry(server):
    base, _ = server
    headers = {"Authorization": f"Bearer {token(base, 'admin')}"}
    plugins = requests.get(f"{base}/api/v2/plugins", headers=headers, timeout=10).json()["plugins"]
    [plugin] = [p for p in plugins if p["name"] == "hbase_migration"]
    [view] = plugin["external_views"]
    assert (view["name"], view["href"], view["url_route"], view["destination"]) == (
        "HBase migrations", "/hbase-migration/", "hbase-migrations", "nav")
    errors = requests.get(f"{base}/api/v2/plugins/importErrors", headers=headers, timeout=10).json()
    assert errors == {"import_errors": [], "total_entries": 0}
    ui = requests.get(f"{base}/plugin/hbase-migrations", headers=headers, timeout=10)
    assert ui.status_code == 200 and ui.headers["content-type"].startswith("text/html")  # the UI's own page
    assert plugin["global_operator_extra_links"] == [
        "<hbase_migration.plugins.hbase_migration_plugin.MigrationDashboardLink object>"]


def test_the_connections_form_knows_the_hbase_type_and_its_fields(server):
    import hbase_migration.operators.provider as provider

    base, _ = server
    headers = {"Authorization": f"Bearer {token(base, 'admin')}"}
    metas = requests.get(f"{base}/ui/connections/hook_meta", headers=headers, timeout=30).json()
    [meta] = [m for m in metas if m["connection_type"] == "hbase"]
    assert (meta["hook_name"], meta["hook_class_name"]) == ("HBase cluster (migration toolkit)",
                                                            "hbase_migration.operators.hooks.HBaseClusterHook")
    assert set(meta["extra_fields"]) == set(provider.CONN_FIELDS)
    quorum = meta["extra_fields"]["zookeeper_quorum"]
    assert quorum["schema"]["title"] == "ZooKeeper quorum" and quorum["schema"]["type"] == ["string", "null"]
    assert meta["extra_fields"]["peer_admin"]["schema"]["enum"] == ["shell", "zookeeper"]
    standard = meta["standard_fields"]
    assert standard["password"]["hidden"] is True and standard["host"]["title"] == "Thrift host"
