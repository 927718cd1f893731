"""The dashboard reads the peer's state from the source cluster (real ZooKeeper, minihbase), not from the
ledger's last note (regression, issue 14 bug 4: after `peer remove` the "left DISABLED" alarm stayed), and a
cluster that does not answer costs the page no more than the budget and is shown as unreachable."""
from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from bedkit.zookeeper import free_port
from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.ledger.store import Ledger
from hbase_migration.plugins.hbase_migration_ui.app import create_app
from hbase_migration.plugins.hbase_migration_ui.live import PeerStates, connection_or_key
from hbase_migration.plugins.hbase_migration_ui.settings import resolve_ledger_url
from hbase_migration.replication import peer_admin
from hbase_migration.replication.model import PeerConfig
from tests.unit.test_plugin_dashboard import text_of

pytestmark = pytest.mark.integration

T = 1_714_564_800_000


def no_connection(conn_id):
    raise LookupError(f"no connection {conn_id}")  # the run's connection is gone: its cluster key is read


def failed_run(ledger, run_id, source_key, peer_id):
    ledger.start_run(run_id, "hbase_table_migration", "manual", source_key, "zkb:2181:/hbase", peer_id, ["t"],
                     {"source_conn_id": "hbase_source"}, started_ms=T)
    ledger.record_t0(run_id, T + 1_000)
    ledger.peer_note(run_id, peer_id, "DISABLED", "run failed at copy; peer DISABLED", noted_ms=T + 2_000)
    ledger.end_run(run_id, "failed", ended_ms=T + 3_000)


@pytest.fixture
def dashboard(tmp_path):
    path = tmp_path / "ledger.db"
    states = PeerStates(connection_or_key(no_connection), budget_s=2.0, ttl_s=0.0)
    app = FastAPI()
    app.mount("/hbase-migration", create_app(resolve_ledger_url(f"sqlite:///{path}", None, tmp_path),
                                             peer_states=states))
    with TestClient(app) as client:
        yield f"sqlite:///{path}", client
    states.close()


def test_the_alarm_follows_the_cluster_after_peer_remove(minihbase_dc1, dashboard):
    url, client = dashboard
    source = cluster_from_text("source", minihbase_dc1.connection_json)
    peer_id = "live_" + uuid.uuid4().hex[:6]
    with peer_admin(source) as admin:
        admin.add_peer(peer_id, PeerConfig(ClusterKey.parse("127.0.0.1:1:/hbase-nowhere"), {"t": []}),
                       enabled=False)
    with Ledger.open(url) as ledger:
        failed_run(ledger, "run-live", minihbase_dc1.cluster_key, peer_id)
    try:
        page = text_of(client.get("/hbase-migration/").text)
        assert f"Peer {peer_id} was left DISABLED by a failed run" in page
        assert f"{peer_id}: DISABLED (read from the cluster at" in page
    finally:
        with peer_admin(source) as admin:
            admin.remove_peer(peer_id, force=True)  # what the README's roll-back does
    page = text_of(client.get("/hbase-migration/").text)
    assert "left DISABLED" not in page
    assert f"{peer_id}: not on the cluster (removed, or never added)" in page
    run_page = text_of(client.get(f"/hbase-migration/runs/{quote('run-live', safe='')}").text)
    assert "left DISABLED" not in run_page and f"Peer {peer_id}: not on the cluster" in run_page


def test_an_unreachable_cluster_is_said_so_within_the_budget(dashboard):
    url, client = dashboard
    with Ledger.open(url) as ledger:
        failed_run(ledger, "run-dead", f"127.0.0.1:{free_port()}:/hbase", "dead_peer")
    # That a page waits for its budget and never for a cluster is shown event by event in
    # tests/unit/test_plugin_live.py (the page answered while the read was still blocked); here, what it says.
    page = text_of(client.get(f"/hbase-migration/runs/{quote('run-dead', safe='')}").text)
    assert "Peer dead_peer: cluster unreachable (" in page
    assert "the ledger's last note: DISABLED" in page
    assert "Peer dead_peer was left DISABLED by a failed run" in page  # the ledger's alarm stands, flagged
    assert "this is the ledger's last note about the peer, which may be out of date" in page
