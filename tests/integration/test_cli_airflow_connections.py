"""The README's CLI recovery commands with the cluster's connection stored in Airflow's metadata database (not
in an AIRFLOW_CONN_* variable): the CLI asks `airflow connections get`, whose stdout carries Airflow's warning
lines before the JSON when it has any (regression, issue 14 bug 2: JSONDecodeError). A real metadata database (a
copy of the migrated one), a real `airflow connections add`, the real CLI against minihbase."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.replication import peer_admin
from hbase_migration.replication.model import PeerConfig
from tests.airflow_home import BIN, REPO, make_home

pytestmark = pytest.mark.integration


@pytest.fixture
def airflow_home(tmp_path):
    """An AIRFLOW_HOME of its own (`tests.airflow_home.make_home`): a copy of the migrated metadata database, no
    AIRFLOW_CONN_* variable in the environment."""
    env, _ = make_home(tmp_path / "airflow_home")
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True, timeout=180)


def test_peer_list_reads_a_connection_from_airflows_database(minihbase_dc1, airflow_home):
    added = run([str(BIN / "airflow"), "connections", "add", "hbase_db_source", "--conn-json",
                 minihbase_dc1.connection_json], airflow_home)
    assert added.returncode == 0, added.stderr[-3000:]
    raw = run([str(BIN / "airflow"), "connections", "get", "hbase_db_source", "-o", "json"], airflow_home)
    assert raw.returncode == 0, raw.stderr[-3000:]
    # Airflow printed warnings before the JSON document here until the package's editable install stopped
    # registering the plugin twice (issue 44); the CLI skips any such lines (cli_json: tests/unit/clusters/
    # test_connections.py), and reads the connection from the database either way, below.
    assert '"conn_id": "hbase_db_source"' in raw.stdout

    source = cluster_from_text("source", minihbase_dc1.connection_json)
    peer_id = "cli_" + uuid.uuid4().hex[:8]
    with peer_admin(source) as admin:
        admin.add_peer(peer_id, PeerConfig(ClusterKey.parse("127.0.0.1:1:/hbase-nowhere"), {"t": []}),
                       enabled=False)
    try:
        listed = run([sys.executable, "-m", "hbase_migration", "peer", "list", "--source", "hbase_db_source",
                      "--json"], airflow_home)
        assert listed.returncode == 0, listed.stderr[-3000:]
        peers = {p["id"]: p for p in json.loads(listed.stdout)}
        assert peers[peer_id]["state"] == "DISABLED"
        shown = run([sys.executable, "-m", "hbase_migration", "cluster", "--source", "hbase_db_source", "--json"],
                    airflow_home)
        assert shown.returncode == 0, shown.stderr[-3000:]
        assert json.loads(shown.stdout)["zk_quorum"] == list(source.zk_quorum)
    finally:
        with peer_admin(source) as admin:
            admin.remove_peer(peer_id, force=True)
