"""Preflight tells a fact from a failure to learn it (issue 24), on real ZooKeeper and minihbase: the toolkit's
ZooKeeper session expired in the middle of preflight (chaos seed 7's fault, through the chaos harness's proxy)
fails the attempt, which Airflow retries, and the retry passes; a definite refusal fails at once."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from chaos.zkproxy import ZkProxy
from chaos.zksessions import expire
from operators.checks import PreflightOperator

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
    return PreflightOperator(task_id="preflight", tables=[table], peer_id=peer_id, expected_copy_s=1, retries=2)


def test_a_session_expired_during_preflight_is_retried_and_the_retry_passes(proxied_source, zookeeper):
    dc1, dc2, proxy = proxied_source
    for cluster in (dc1, dc2):
        cluster.create_table("pt_expired", {"d": {"replication_scope": 1}})
    armed = proxy.arm(lambda s: expire(zookeeper.hosts, s.session_id, s.password), lambda s: f"session {s}")
    with pytest.raises(AirflowException) as attempt_1:
        preflight("pt_expired", "ptexp").execute({"ti": SimpleNamespace(try_number=1)})
    assert armed.done.is_set() and armed.strike is not None, "the proxy never expired a session"
    assert not isinstance(attempt_1.value, AirflowFailException), "a lost session must leave the retry to Airflow"
    assert str(attempt_1.value).startswith("preflight could not reach: ")
    assert "source_reachable" in str(attempt_1.value) or "peer_id" in str(attempt_1.value)
    report = preflight("pt_expired", "ptexp").execute({"ti": SimpleNamespace(try_number=2)})  # the retry
    assert report["ok"] is True and report["retryable"] is False


def test_a_refusal_fails_at_once_even_with_an_endpoint_silent(proxied_source):
    dc1, dc2, proxy = proxied_source
    dc1.create_table("pt_scope", {"d": {"replication_scope": 0}})  # a definite fact: nothing would replicate
    dc2.create_table("pt_scope", {"d": {"replication_scope": 1}})
    with pytest.raises(AirflowFailException, match="preflight failed: replication_scope: "):
        preflight("pt_scope", "ptscope").execute({"ti": SimpleNamespace(try_number=1)})
    proxy.stop()  # the source's ZooKeeper silent: its scopes cannot be read now, so the attempt fails (retried)
    with pytest.raises(AirflowException) as silent:
        preflight("pt_scope", "ptscope").execute({"ti": SimpleNamespace(try_number=1)})
    assert "source_reachable" in str(silent.value)
