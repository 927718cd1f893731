"""fetch_jmx, peer_status and the canary against real HBase region servers (the session's bed): real /jmx beans,
the live set in ZooKeeper's rs/, a real region server killed and started again."""
from __future__ import annotations

import socket
import time
import uuid
from dataclasses import replace

import pytest

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.replication.metrics import (
    CANARY_ROW_PREFIX,
    REPLICATION_BEAN,
    CanaryTimeout,
    canary,
    decide_drained,
    fetch_jmx,
    parse_replication_bean,
    peer_status,
)
from tests.polling import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def dc1(realhbase_pair):
    return realhbase_pair[0]


@pytest.fixture
def dc2(realhbase_pair):
    return realhbase_pair[1]


@pytest.fixture
def absent_peer() -> str:
    return "absent_" + uuid.uuid4().hex[:6]  # a peer id no test of the session adds


@pytest.fixture
def canary_table(dc1, dc2):
    """A table of the test's own on both clusters, dropped after."""
    name = "canary_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(name, {"f": {}})
    yield name
    for c in (dc1, dc2):
        c.drop_table(name)


def as_cluster(mini, **overrides) -> Cluster:
    conn = mini.endpoints["connection"]
    cluster = Cluster.from_connection(mini.endpoints["name"], conn["host"], conn["port"], conn["extra"])
    return replace(cluster, **overrides) if overrides else cluster


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_region_server_serves_the_replication_bean(dc1):
    servers = [rs for rs in dc1.endpoints["region_servers"] if rs["alive"]]
    assert len(servers) == len(dc1.region_servers) == 2
    for rs in servers:
        payload = fetch_jmx(rs["host"], rs["info_port"], timeout_s=5, attempts=2)
        assert [b["name"] for b in payload["beans"]] == [REPLICATION_BEAN]
        assert parse_replication_bean(payload).bean_present is True


def test_peer_status_reads_every_live_server_and_zookeeper(dc1, absent_peer):
    cluster = as_cluster(dc1)
    with zk.connect(cluster) as client:
        first = peer_status(cluster, absent_peer, client, taken_at=time.time())
        second = peer_status(cluster, absent_peer, client, taken_at=time.time() + 0.001)
    expected = sorted(rs["servername"] for rs in dc1.endpoints["region_servers"] if rs["alive"])
    assert sorted(first.live_servers) == expected
    assert sorted(s.servername for s in first.servers) == expected
    assert first.unreadable == []
    assert first.peer_state == "ABSENT"
    assert {s.info_port for s in first.servers} == {rs["info_port"] for rs in dc1.endpoints["region_servers"]}
    decision = decide_drained([first, second])
    assert decision.drained is False
    assert f"peer {absent_peer} state is ABSENT in ZooKeeper" in decision.reasons


def test_unreadable_servers_are_listed_not_skipped(dc1, absent_peer):
    cluster = as_cluster(dc1, info_port=closed_port())  # every /jmx read goes to a dead port
    with zk.connect(cluster) as client:
        snap = peer_status(cluster, absent_peer, client, taken_at=time.time(), timeout_s=2, attempts=1)
    assert len(snap.unreadable) == len(snap.live_servers) == 2
    for reading in snap.unreadable:  # each named by the host of its servername in rs/ (HBase: `localhost` here)
        host = reading.servername.split(",")[0]
        assert reading.error.startswith(f"region server {host}:{cluster.info_port}: /jmx unreadable after 1")
    decision = decide_drained([snap, replace(snap, taken_at=snap.taken_at + 1)])
    assert sum(1 for r in decision.reasons if "/jmx unreadable" in r) == 2


@pytest.mark.full  # make test: test_toolkit_realhbase kills a region server during the catch-up (the drain reads
# the live set there); a kill and restart on the shared bed is a minute and a half under make test's load
def test_a_killed_region_server_leaves_the_live_set(dc1, absent_peer):
    """SIGKILL: the master notices only when the server's ZooKeeper session expires (20 s on the bed)."""
    cluster = as_cluster(dc1)
    victim = dc1.endpoints["region_servers"][1]["servername"]
    dc1.kill_rs(victim)
    try:
        with zk.connect(cluster) as client:
            wait_for(lambda: victim not in [s.servername for s in zk.live_region_servers(client, cluster.znode_parent)],
                     120, f"{victim} to leave rs/ after the kill")
            snap = peer_status(cluster, absent_peer, client, taken_at=time.time())
        assert victim not in snap.live_servers
        assert len(snap.servers) == 1 and snap.unreadable == []
    finally:
        dc1.start_rs(1)


def test_canary_round_trip_on_one_cluster_and_cleanup(dc1, canary_table):
    conn = dc1.connection()
    try:
        delay = canary(as_cluster(dc1), (dc1.thrift_host, dc1.thrift_port), canary_table, "f", timeout_s=60)
        assert delay >= 0  # seen within the timeout (else CanaryTimeout)
        assert list(conn.table(canary_table.encode()).scan(row_prefix=CANARY_ROW_PREFIX)) == []
    finally:
        conn.close()


def test_canary_times_out_without_replication_and_cleans_the_source(dc1, dc2, canary_table):
    with pytest.raises(CanaryTimeout, match=r"was not readable on .* after 1s: replication is lagging or not running"):
        canary(as_cluster(dc1), as_cluster(dc2), canary_table, "f", timeout_s=1)
    conn = dc1.connection()
    try:
        assert list(conn.table(canary_table.encode()).scan(row_prefix=CANARY_ROW_PREFIX)) == []
    finally:
        conn.close()
