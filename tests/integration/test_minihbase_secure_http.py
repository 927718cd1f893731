"""SPNEGO on every HTTP endpoint of a secured cluster: the master's info port (`/jmx`, `/conf`, the control
API), the region servers' info ports and RPC ports, the master's RPC port and WebHDFS. Clients are
requests-gssapi (mutual authentication required), across realms for dc2 (DC2.TEST) as the toolkit (DC1.TEST)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import gssapi
import pytest
import requests
from requests_gssapi import DISABLED, REQUIRED, HTTPSPNEGOAuth

from bedkit.security.stack import INTRUDER, TOOLKIT

pytestmark = pytest.mark.integration


def _urls(cluster) -> dict[str, tuple[str, str]]:
    """name -> (url, the service whose ticket it takes: HTTP or hbase)."""
    ep = cluster.endpoints
    rs = ep["region_servers"][0]
    return {
        "master /jmx": (f"{ep['control_url']}/jmx?qry=Hadoop:service=HBase,name=Master,sub=Server", "HTTP"),
        "master /conf": (f"{ep['control_url']}/conf", "HTTP"),
        "control status": (f"{ep['control_url']}/control/status", "HTTP"),
        "region server /jmx": (f"http://{rs['host']}:{rs['info_port']}/jmx", "HTTP"),
        "region server /rs-status": (f"http://{rs['host']}:{rs['info_port']}/rs-status", "HTTP"),
        "webhdfs": (f"{ep['webhdfs_url']}/webhdfs/v1/hbase?op=LISTSTATUS&user.name=hbase", "HTTP"),
        "region server rpc": (f"http://{rs['host']}:{rs['port']}/", "hbase"),
        "master rpc": (f"http://{ep['master']['host']}:{ep['master']['port']}/", "hbase"),
    }


def _auth(creds, service: str, realm: str, mutual=REQUIRED) -> HTTPSPNEGOAuth:
    """Mutual authentication required for successes; refusals (no mutual token) are read with it DISABLED, since
    requests-gssapi blanks an unauthenticated error response otherwise."""
    target = gssapi.Name(f"{service}/localhost@{realm}", gssapi.NameType.kerberos_principal)
    return HTTPSPNEGOAuth(creds=creds, target_name=target, mutual_authentication=mutual, opportunistic_auth=True)


def test_every_endpoint_answers_401_negotiate_without_a_ticket(secure_pair):
    for cluster in secure_pair:
        for name, (url, _) in _urls(cluster).items():
            response = requests.get(url, timeout=10)
            assert response.status_code == 401, (cluster.name, name, response.text[:200])
            assert response.headers["WWW-Authenticate"] == "Negotiate", name


def test_a_route_that_does_not_exist_is_refused_before_it_is_looked_up(secure_pair):
    """The check sits in front of the routes: any path, registered now or later, is 401 without a ticket."""
    dc1, _ = secure_pair
    for path in ("/no-such-servlet", "/logs/", "/stacks"):
        assert requests.get(dc1.endpoints["control_url"] + path, timeout=10).status_code == 401
    response = requests.post(dc1.endpoints["control_url"] + "/control/kill-rs", json={"server": 0}, timeout=10)
    assert response.status_code == 401
    assert all(rs["alive"] for rs in dc1.region_servers)


def test_every_endpoint_serves_the_toolkit_with_a_ticket_in_both_realms(secure_pair, gss_credentials):
    creds = gss_credentials(TOOLKIT)
    for cluster in secure_pair:
        realm = cluster.security["realm"]
        for name, (url, service) in _urls(cluster).items():
            if name == "master /conf":
                continue  # served once the /conf servlet exists; the refusal above covers it
            response = requests.get(url, auth=_auth(creds, service, realm), timeout=10)
            expected = 404 if name == "master rpc" else 200  # authenticated; the master's port has no GET route
            assert response.status_code == expected, (cluster.name, name, response.text[:300])
            assert response.headers["WWW-Authenticate"].startswith("Negotiate "), name  # mutual authentication
    jmx = requests.get(_urls(secure_pair[1])["master /jmx"][0], auth=_auth(creds, "HTTP", "DC2.TEST"), timeout=10)
    assert jmx.json()["beans"][0]["tag.clusterId"] == secure_pair[1].cluster_id


def test_a_ticket_for_another_principal_is_refused(secure_pair, gss_credentials):
    dc1, dc2 = secure_pair
    creds = gss_credentials(TOOLKIT)
    jmx1, jmx2 = _urls(dc1)["region server /jmx"][0], _urls(dc2)["region server /jmx"][0]
    cases = [
        (jmx1, _auth(creds, "hbase", "DC1.TEST", DISABLED)),  # the RPC principal on the web port
        (jmx2, _auth(creds, "HTTP", "DC1.TEST", DISABLED)),   # the other realm's HTTP principal
        (_urls(dc1)["region server rpc"][0], _auth(creds, "HTTP", "DC1.TEST", DISABLED)),  # web principal on RPC
    ]
    for url, auth in cases:
        response = requests.get(url, auth=auth, timeout=10)
        assert response.status_code == 403, url
        assert "GSSException" in response.text


def test_a_token_that_is_not_kerberos_is_refused(secure_pair):
    dc1, _ = secure_pair
    url = _urls(dc1)["master /jmx"][0]
    garbage = "Negotiate " + base64.b64encode(b"not a kerberos token").decode()
    assert requests.get(url, headers={"Authorization": garbage}, timeout=10).status_code == 403
    assert requests.get(url, headers={"Authorization": "Negotiate %%%"}, timeout=10).status_code == 403
    assert requests.get(url, headers={"Authorization": "Basic aGJhc2U6aGJhc2U="}, timeout=10).status_code == 401


def test_the_intruder_reads_metrics_but_changes_nothing(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    creds = gss_credentials(INTRUDER)
    control = dc1.endpoints["control_url"]
    assert requests.get(_urls(dc1)["master /jmx"][0], auth=_auth(creds, "HTTP", "DC1.TEST"), timeout=10).ok
    web = _auth(creds, "HTTP", "DC1.TEST", DISABLED)
    refused = requests.post(control + "/control/kill-rs", json={"server": 0}, auth=web, timeout=10)
    assert refused.status_code == 403
    assert refused.json()["error"] == ("org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient "
                                       "permissions for user 'intruder' (global, action=ADMIN)")
    create = requests.post(control + "/control/create-table", json={"table": "t9", "families": {"b": {}, "a": {}}},
                           auth=web, timeout=10)
    assert create.json()["error"] == (
        "org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient permissions (user=intruder@DC1.TEST, "
        "scope=default, params=[namespace=default,table=default:t9,family=a|b],action=CREATE)")
    rpc = requests.get(_urls(dc1)["region server rpc"][0], auth=_auth(creds, "hbase", "DC1.TEST", DISABLED),
                       timeout=10)
    assert rpc.status_code == 403
    assert "Insufficient permissions for user 'intruder' (global, action=WRITE)" in rpc.json()["error"]
    assert all(rs["alive"] for rs in dc1.region_servers)
    assert "t9" not in {t["name"] for t in dc1._control("/control/tables")["tables"]}


def test_the_harness_and_the_cli_authenticate_with_the_hbase_keytab(secure_pair):
    dc1, _ = secure_pair
    assert len(dc1.roll_wals()) == 2  # MiniCluster's knobs: SPNEGO as hbase/localhost@DC1.TEST
    cli = subprocess.run([sys.executable, "-m", "minihbase", "roll-wals", "dc1", "--workdir", str(dc1.workdir)],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "KRB5_CONFIG": "/nonexistent"})
    assert cli.returncode == 0, cli.stderr
    assert len(json.loads(cli.stdout)["wals"]) == 2
