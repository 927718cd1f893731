"""Preflight and the peer steps tell a fact from a failure to learn it (issue 24), on real ZooKeeper and
minihbase, with the toolkit's source ZooKeeper reached through the chaos harness's proxy: a session expired in the
middle of a step (chaos seeds 7 and 12) is read again on a new session and the same try goes on; a ZooKeeper that
does not answer at all fails the try for Airflow's retry; a definite refusal fails at once."""
from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from chaos.zkproxy import ZkProxy
from chaos.zksessions import expire
from hbase_migration.operators.checks import PreflightOperator

pytestmark = pytest.mark.integration


@pytest.fixture
def proxied_source(minihbase_pair, zookeeper, monkeypatch):
    """The pair as the DAG's connections, the source's ZooKeeper reached through the chaos proxy."""
    dc1, dc2 = minihbase_pair
    proxy = ZkProxy(zookeeper.host, zookeeper.port).start()
    source = json.loads(dc1.connection_json)
    source["extra"]["zookeeper_port"] = proxy.port
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(source))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", dc2.connection_json)
    yield dc1, dc2, proxy
    proxy.stop()


def preflight(table: str, peer_id: str) -> PreflightOperator:
    return PreflightOperator(task_id="preflight", tables=[table], peer_id=peer_id, expected_copy_s=1, retries=2,
                              bulk_loads="none")


def _arm(proxy: ZkProxy, zookeeper):
    return proxy.arm(lambda s: expire(zookeeper.hosts, s.session_id, s.password), lambda s: f"session {s}")


def _new_session_after(proxy: ZkProxy, armed) -> bool:
    """The proxy expired a session and a later one was opened (kazoo's own, after the expiry)."""
    assert armed.done.is_set() and armed.strike is not None, "the proxy never expired a session"
    return any(s.session_id != armed.strike.session.session_id
               for s in proxy.sessions_since(armed.strike.expired_at))


def test_a_session_expired_during_preflight_is_read_again_and_the_same_try_passes(proxied_source, zookeeper,
                                                                                  caplog):
    dc1, dc2, proxy = proxied_source
    for cluster in (dc1, dc2):
        cluster.create_table("pt_expired", {"d": {"replication_scope": 1}})
    armed = _arm(proxy, zookeeper)
    with caplog.at_level("WARNING", logger="hbase_migration.clusters.channels"):
        report = preflight("pt_expired", "ptexp").execute({"ti": SimpleNamespace(try_number=1)})
    assert _new_session_after(proxy, armed)
    assert report["ok"] is True and report["retryable"] is False
    assert any("SessionExpiredError during a read; reading again" in r.getMessage() or
               "ConnectionLoss during a read; reading again" in r.getMessage() for r in caplog.records)


def test_a_session_expired_while_the_peer_is_enabled_does_not_fail_the_step(proxied_source, zookeeper):
    """Chaos seed 12: an expiry in each try of `enable_peer` failed the run; the step now goes on."""
    from hbase_migration.operators.replication import AddPeerOperator, EnablePeerOperator, RemovePeerOperator

    dc1, dc2, proxy = proxied_source
    for cluster in (dc1, dc2):
        cluster.create_table("pt_enable", {"d": {"replication_scope": 1}})
    added = AddPeerOperator(task_id="add_peer", peer_id="ptenable", tables=["pt_enable"]).execute({})
    assert added["peer"]["state"] == "DISABLED"
    armed = _arm(proxy, zookeeper)
    try:
        enabled = EnablePeerOperator(task_id="enable_peer", peer_id="ptenable").execute({})
        assert _new_session_after(proxy, armed)
        assert enabled["outcome"] == "enabled" and enabled["peer"]["state"] == "ENABLED"
        listed = subprocess.run(dc1.endpoints["shell_command"], input="list_peers\n", capture_output=True,
                                text=True, timeout=120).stdout  # the cluster's own word, not only ZooKeeper's
        assert any(line.split()[:1] == ["ptenable"] and "ENABLED" in line.split() for line in listed.splitlines())
    finally:
        proxy.disarm()
        RemovePeerOperator(task_id="remove_peer", peer_id="ptenable").execute({})


def test_a_read_still_lost_after_its_bound_raises_the_lost_connection(zookeeper):
    from kazoo.exceptions import ConnectionLoss

    from hbase_migration.clusters import channels

    proxy = ZkProxy(zookeeper.host, zookeeper.port).start()
    client = channels.zookeeper(f"127.0.0.1:{proxy.port}", timeout=2.0)
    try:
        assert client.exists("/") is not None
        client.reread_s = 2.0
        proxy.block()  # a partition that outlasts the bound
        with pytest.raises(ConnectionLoss):
            client.get_children("/")
    finally:
        client.stop()
        client.close()
        proxy.stop()


def test_a_refusal_fails_at_once_even_with_an_endpoint_silent(proxied_source):
    dc1, dc2, proxy = proxied_source
    dc1.create_table("pt_scope", {"d": {"replication_scope": 0}})  # a definite fact: nothing would replicate
    dc2.create_table("pt_scope", {"d": {"replication_scope": 1}})
    with pytest.raises(AirflowFailException, match="preflight failed: replication_scope: "):
        preflight("pt_scope", "ptscope").execute({"ti": SimpleNamespace(try_number=1)})
    proxy.stop()  # the source's ZooKeeper silent: its scopes cannot be read now, so the try fails (Airflow retries)
    with pytest.raises(AirflowException) as silent:
        preflight("pt_scope", "ptscope").execute({"ti": SimpleNamespace(try_number=1)})
    assert "source_reachable" in str(silent.value)
