"""Region server load metrics that follow real load: every call holds one of `handler_count` RPC handlers, calls
finding none free wait in the call queue, and `/jmx` (`sub=IPC`, `sub=Server`) shows it, read over HTTP exactly
as a client (e.g. a load-aware copy throttle) reads it.
"""
from __future__ import annotations

import subprocess

import pytest
import requests

from minihbase.loadgen import LoadGenerator
from tests.polling import wait_for

pytestmark = pytest.mark.integration

IPC = "Hadoop:service=HBase,name=RegionServer,sub=IPC"
SERVER = "Hadoop:service=HBase,name=RegionServer,sub=Server"


def jmx(rs: dict, qry: str) -> dict:
    body = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": qry}, timeout=10)
    assert body.status_code == 200
    beans = body.json()["beans"]
    assert [b["name"] for b in beans] == [qry]
    return beans[0]


def test_load_fills_the_call_queue_and_latencies_then_both_fall_back(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, handler_count=2, metrics_period_s=1.0)
    cluster.create_table("load", {"cf": {"max_versions": 1}})
    rs = cluster.region_servers[0]
    idle = jmx(rs, IPC)
    assert {k: idle[k] for k in ("modelerType", "tag.Context", "tag.Hostname")} == {
        "modelerType": "RegionServer,sub=IPC", "tag.Context": "regionserver", "tag.Hostname": rs["host"]}
    assert (idle["queueSize"], idle["numCallsInGeneralQueue"], idle["numActiveHandler"]) == (0, 0, 0)

    cluster.set_latency(5)  # each Thrift call, and each region server call while it holds its handler
    load = LoadGenerator(cluster.thrift_host, cluster.thrift_port, "load", threads=12, read_fraction=0.3,
                         single_puts=True).start()
    try:
        # 12 clients, 2 handlers each held >= 5 ms per call: calls wait in the general queue.
        def saturated():
            ipc = jmx(rs, IPC)
            return (ipc["numCallsInGeneralQueue"] > 0 and ipc["queueSize"] > 0 and ipc["numActiveHandler"] == 2
                    and ipc["numActiveGeneralHandler"] == 2 and ipc["numActiveReplicationHandler"] == 0)
        wait_for(saturated, timeout=60, what="a full general call queue")
        assert jmx(rs, IPC)["numOpenConnections"] >= 1

        def slow():
            ipc, server = jmx(rs, IPC), jmx(rs, SERVER)
            return (server["Put_99th_percentile"] >= 5 and server["Get_99th_percentile"] >= 5
                    and server["Put_min"] >= 5 and ipc["QueueCallTime_99th_percentile"] >= 5
                    and ipc["ProcessCallTime_min"] >= 5 and ipc["TotalCallTime_max"] >= 10)
        wait_for(slow, timeout=60, what="put, get, queue and process times above the injected latency")
    finally:
        report = load.stop()
        cluster.set_latency(0)
    assert report.errors == 0 and report.ops > 0 and report.puts > 0 and report.gets > 0
    assert report.latency_ms["p50"] >= 10  # 5 ms on the link + 5 ms in the handler, plus the queue

    # Load gone: the queue is empty at once; the next metrics period has no value, so the figures fall to 0,
    # while the operation counts stay (cumulative).
    after = jmx(rs, IPC)
    assert (after["queueSize"], after["numCallsInGeneralQueue"], after["numActiveHandler"]) == (0, 0, 0)

    def fallen():
        ipc, server = jmx(rs, IPC), jmx(rs, SERVER)
        return (server["Put_99th_percentile"] == 0 and server["Put_max"] == 0 and server["Get_max"] == 0
                and ipc["QueueCallTime_99th_percentile"] == 0 and ipc["QueueCallTime_max"] == 0) and server
    server = wait_for(fallen, timeout=30, what="percentiles back to 0 after a metrics period")
    assert server["Put_num_ops"] >= report.puts and server["Get_num_ops"] >= report.gets
    assert server["totalRequestCount"] >= report.ops


def test_a_scan_is_timed_and_sized_per_scanner_call(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, metrics_period_s=0.5)
    cluster.create_table("scanned", {"cf": {}})
    conn = cluster.connection()
    table = conn.table("scanned")
    with table.batch() as b:
        for i in range(250):
            b.put(b"r%04d" % i, {b"cf:q": b"x" * 100})
    rs = cluster.region_servers[0]
    jmx(rs, SERVER)  # a snapshot now: what follows is the scan only
    cluster.set_handler_latency(20)
    try:
        assert sum(1 for _ in table.scan(batch_size=100)) == 250
    finally:
        cluster.set_handler_latency(None)
    conn.close()

    def scanned():
        server = jmx(rs, SERVER)
        return server["ScanTime_min"] >= 20 and server
    server = wait_for(scanned, timeout=30, what="the scan's figures")
    # 3 scanner calls carried rows (100, 100, 50): each cell a KeyValue of 5 + 3 + 100 + 20 bytes.
    assert server["ScanSize_max"] == 100 * 128 and server["ScanSize_SizeRangeCount_10000-100000"] == 2
    assert server["ScanSize_SizeRangeCount_1000-10000"] == 1
    assert server["ScanTime_TimeRangeCount_10-30"] + server.get("ScanTime_TimeRangeCount_30-100", 0) >= 3


def test_replication_sink_calls_use_the_replication_handlers(minihbase_factory):
    dc1 = minihbase_factory("dc1", region_servers=3)
    dc2 = minihbase_factory("dc2", region_servers=1, replication_handler_count=1)
    for cluster in (dc1, dc2):
        cluster.create_table("shipped", {"cf": {"replication_scope": 1}}, split_keys=[b"h", b"p"])
    sink = dc2.region_servers[0]
    dc2.set_handler_latency(400)  # every write the sink makes holds a general handler 400 ms
    proc = subprocess.run(dc1.endpoints["shell_command"], capture_output=True, text=True, timeout=120,
                          input=f"add_peer 'p1', CLUSTER_KEY => \"{dc2.cluster_key}\", "
                                "TABLE_CFS => {'shipped' => []}\n")
    assert proc.returncode == 0, proc.stdout
    conn = dc1.connection()
    table = conn.table("shipped")
    for i in range(30):
        for prefix in (b"a", b"j", b"t"):  # every region, so every dc1 region server ships
            table.put(prefix + b"%02d" % i, {b"cf:q": b"v"})
    conn.close()

    def queued():
        ipc = jmx(sink, IPC)
        return (ipc["numActiveReplicationHandler"] == 1 and ipc["numCallsInReplicationQueue"] >= 1
                and ipc["numActiveGeneralHandler"] >= 1 and ipc["numActiveHandler"] >= 2)
    wait_for(queued, timeout=60, what="sink calls waiting for the one replication handler")
    dc2.set_handler_latency(0)
    dst = dc2.connection().table("shipped")
    wait_for(lambda: sum(1 for _ in dst.scan()) == 90, what="every row on dc2")
    ipc = jmx(sink, IPC)
    assert ipc["numCallsInReplicationQueue"] == 0 and ipc["numActiveReplicationHandler"] == 0
    assert jmx(sink, SERVER)["PutBatch_num_ops"] >= 3  # the sink writes batches (Table.batch)
