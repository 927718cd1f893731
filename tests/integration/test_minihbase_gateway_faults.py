"""minihbase's network faults of one Thrift gateway (`/control/gateway-fault`, `MiniCluster.gateway_fault`, the
`gateway-fault` CLI): a latency of its own, every open connection reset now, and a per-call reset probability
whose resets fall before the call runs (nothing applied) or after it (applied, unanswered)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import thriftpy2
from thriftpy2.rpc import make_client
from thriftpy2.transport import TTransportException

from minihbase.testing import MiniHBaseError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="test_gwf_hbase2_thrift")


def connect(gateway: dict):
    return make_client(T2.THBaseService, gateway["host"], gateway["port"], timeout=30000)


def put(client, row: bytes, ts: int) -> None:
    client.put(b"t", T2.TPut(row=row, columnValues=[T2.TColumnValue(family=b"cf", qualifier=b"a", value=b"v",
                                                                    timestamp=ts)]))


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    import uuid

    from minihbase.testing import MiniCluster

    c = MiniCluster.start(zookeeper.hosts, tmp_path_factory.mktemp("minihbase"), name="dc1",
                          znode_parent=f"/hbase-gwf-{uuid.uuid4().hex[:8]}", region_servers=1, thrift2_gateways=2)
    c.create_table("t", {"cf": {"max_versions": 1}})
    yield c
    c.stop()


def test_a_gateways_own_latency_slows_only_that_gateway(cluster):
    g0, g1 = cluster.thrift2_gateways
    slow, other = connect(g0), connect(g1)
    try:
        described = cluster.gateway_fault("thrift2", 0, latency_ms=200)
        assert described["fault"] == {"latency_ms": 200.0, "reset_probability": 0.0, "resets": 0}
        started = time.monotonic()
        for _ in range(3):
            slow.getThriftServerType()
        assert time.monotonic() - started >= 0.6  # three calls, each at least the injected 200 ms
        assert cluster.thrift2_gateways[1]["fault"]["latency_ms"] == 0.0  # the other gateway has none
    finally:
        cluster.gateway_fault("thrift2", 0, latency_ms=0)
        slow.close()
        other.close()


def test_reset_now_resets_every_open_connection_and_the_gateway_keeps_serving(cluster):
    g0 = cluster.thrift2_gateways[0]
    clients = [connect(g0) for _ in range(3)]
    for c in clients:
        c.getThriftServerType()  # connected and served
    before = cluster.thrift2_gateways[0]["fault"]["resets"]
    described = cluster.gateway_fault("thrift2", 0, reset_now=True)
    assert described["fault"]["resets"] == before + 3 and described["alive"]
    for c in clients:
        with pytest.raises((TTransportException, ConnectionResetError, BrokenPipeError)):
            c.getThriftServerType()
        c.close()
    fresh = connect(g0)  # still listening: a new connection is served
    put(fresh, b"after-reset", 7)
    assert fresh.get(b"t", T2.TGet(row=b"after-reset")).columnValues[0].timestamp == 7
    fresh.close()


def test_resets_per_call_fall_before_or_after_the_call(cluster):
    """Probability 1: every call's connection is reset; a reset before the call applies nothing, one after it
    applies the put without answering. Both happen (each with even odds, over 40 calls)."""
    g0, g1 = cluster.thrift2_gateways
    reader = connect(g1)
    cluster.gateway_fault("thrift2", 0, reset_probability=1.0)
    try:
        for i in range(40):
            c = connect(g0)
            with pytest.raises((TTransportException, ConnectionResetError, BrokenPipeError)):
                put(c, b"p%02d" % i, 100 + i)
            c.close()
    finally:
        described = cluster.gateway_fault("thrift2", 0, reset_probability=0)
    applied = [i for i in range(40) if reader.get(b"t", T2.TGet(row=b"p%02d" % i)).columnValues]
    assert 0 < len(applied) < 40, applied
    assert described["fault"]["reset_probability"] == 0.0 and described["fault"]["resets"] >= 40
    ok = connect(g0)  # probability 0 again: calls are answered
    put(ok, b"calm", 1)
    ok.close()
    reader.close()


def test_bad_fault_settings_are_refused_and_change_nothing(cluster):
    for body, message in (
            ({"kind": "thrift2", "index": 0, "latency_ms": -1}, "latency_ms must be a number >= 0, got -1"),
            ({"kind": "thrift2", "index": 0, "reset_probability": 1.5},
             r"reset_probability must be a number in \[0, 1\], got 1.5"),
            ({"kind": "thrift2", "index": 0, "reset_now": "yes"}, "reset_now must be true or false, got 'yes'"),
            ({"kind": "thrift2", "index": 5}, r"thrift2 gateway index 5 out of range \(the cluster has 2\)"),
            ({"kind": "thrift2", "index": 0, "latency": 5}, "unknown gateway-fault field"),
            ({"kind": "thrift2", "index": 0, "latency_ms": 10, "reset_probability": 2},
             "reset_probability must be")):
        with pytest.raises(MiniHBaseError, match=message):
            cluster._control("/control/gateway-fault", body)
    assert cluster.thrift2_gateways[0]["fault"]["latency_ms"] == 0.0  # the last one's valid latency not applied


def test_the_cli_sets_a_thrift1_gateways_faults(cluster):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-m", "minihbase", "gateway-fault", "dc1", "thrift", "0", "--latency-ms",
                          "25", "--reset-probability", "0.5", "--workdir", str(cluster.workdir)],
                         capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["gateway"]["fault"] == {"latency_ms": 25.0, "reset_probability": 0.5, "resets": 0}
    cluster.gateway_fault("thrift", 0, latency_ms=0, reset_probability=0)
    assert cluster.thrift_gateways[0]["fault"] == {"latency_ms": 0.0, "reset_probability": 0.0, "resets": 0}
