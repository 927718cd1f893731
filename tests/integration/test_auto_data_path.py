"""`data_path: auto` decided against real servers: real HBase's region servers answer the probe's preamble as HBase
RPC (WrongVersionException) and the pair resolves to native; minihbase's (HTTP behind region-server znodes) do not,
and the pair stays on Thrift2, the log line naming the server and what it answered."""
from __future__ import annotations

import json
import time

import pytest

pytestmark = [pytest.mark.integration]


def _cluster(name: str, connection: dict):
    from hbase_migration.clusters.cluster import Cluster

    return Cluster.from_connection(name, connection["host"], connection.get("port"), connection["extra"])


@pytest.mark.realhbase
def test_real_hbase_region_servers_answer_as_hbase_rpc_and_auto_becomes_native(realhbase, caplog):
    from hbase_migration.clusters.rpc_probe import probe_cluster
    from hbase_migration.data.datapath.auto import resolve

    endpoints = realhbase.endpoints()
    source, target = (_cluster(n, endpoints[n]["connection"]) for n in ("dc1", "dc2"))
    assert source.data_path == target.data_path == "auto"  # the bed's connections name none
    started = time.monotonic()
    probe = probe_cluster(source)
    assert probe.ok, probe
    assert {s.server.rsplit(":", 1)[1] for s in probe.servers} == \
        {str(rs["port"]) for rs in endpoints["dc1"]["region_servers"] if rs["alive"]}
    for server in probe.servers:
        assert server.what.startswith("HBase RPC: WrongVersionException: serverVersion=0, clientVersion=127"), server
    resolved_source, resolved_target, choice = resolve(source, target, where="the test")
    assert time.monotonic() - started < 10, "the probe is quick against a healthy cluster"
    assert (resolved_source.data_path, resolved_target.data_path, choice.native) == ("native", "native", True)
    assert choice.reason.startswith("every region server of dc1 (") and "answers as HBase RPC from the test" in \
        choice.reason, choice.reason
    # a repair keeps the pair on Thrift2 without probing
    _, thrift_target, repairing = resolve(source, target, repair=True)
    assert thrift_target.data_path == "thrift2" and repairing.reason.startswith("repair is asked"), repairing


def test_minihbase_region_servers_are_not_hbase_rpc_and_auto_stays_on_thrift2(minihbase_dc1):
    from hbase_migration.clusters.rpc_probe import probe_cluster
    from hbase_migration.data.datapath.auto import resolve

    cluster = _cluster("mini", json.loads(minihbase_dc1.connection_json))
    started = time.monotonic()
    probe = probe_cluster(cluster)
    assert not probe.ok and len(probe.servers) == len(minihbase_dc1.region_servers), probe
    for server in probe.servers:  # its region servers' ports are HTTP: an error page, at once
        assert not server.hbase and server.what.startswith("answered b'<!DOCTYPE HTML>"), server
        assert server.what.endswith("not an HBase RPC frame"), server
    source, target, choice = resolve(cluster, cluster, where="the test")
    assert time.monotonic() - started < 5, "a stand-in costs the probe well under its timeout (the half-close)"
    assert (source.data_path, target.data_path, choice.native) == ("thrift2", "thrift2", False)
    assert choice.reason.startswith("mini: region server ") and "not an HBase RPC frame" in choice.reason, choice
    assert choice.line(cluster, cluster).startswith("data_path auto: mini -> thrift2, mini -> thrift2: mini: region")
