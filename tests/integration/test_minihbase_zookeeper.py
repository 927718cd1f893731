"""minihbase's znodes decode per the reference (§0, §1.5), and a region server's life shows in ZooKeeper.

The decoding here is written from the reference alone (no codec shared with minihbase or the toolkit).
"""
from __future__ import annotations

import struct
import threading
import time

import happybase
import pytest
from kazoo.client import KazooClient

from tests.polling import wait_for

pytestmark = pytest.mark.integration


def strip_metadata(data: bytes) -> bytes:
    """ZKMetadata: FF, int32 id length (id + 8-byte salt), id, salt, payload."""
    assert data[0] == 0xFF, data[:8]
    (id_length,) = struct.unpack(">i", data[1:5])
    return data[5 + id_length:]


def varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(message: bytes) -> dict[int, list]:
    """Protobuf wire format: field number -> values (varints as int, length-delimited as bytes)."""
    out: dict[int, list] = {}
    i = 0
    while i < len(message):
        key, i = varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(message, i)
        elif wire == 2:
            length, i = varint(message, i)
            value, i = message[i:i + length], i + length
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(value)
    return out



@pytest.fixture
def zk(zookeeper):
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def test_znode_bytes_decode_per_reference(minihbase_dc1, zk):
    ep = minihbase_dc1.endpoints
    parent = ep["zookeeper"]["znode_parent"]
    assert ep["cluster_key"] == f"127.0.0.1:{ep['zookeeper']['port']}:{parent}"

    raw, _ = zk.get(f"{parent}/hbaseid")
    payload = strip_metadata(raw)
    assert payload == b"PBUF" + b"\x0a\x24" + ep["cluster_id"].encode()
    assert len(ep["cluster_id"]) == 36

    children = sorted(zk.get_children(f"{parent}/rs"))
    assert children == sorted(rs["servername"] for rs in ep["region_servers"])
    for rs in ep["region_servers"]:
        host, port, startcode = rs["servername"].split(",")
        assert (host, int(port)) == (rs["host"], rs["port"]) and startcode.isdigit()
        raw, stat = zk.get(f"{parent}/rs/{rs['servername']}")
        assert stat.ephemeralOwner != 0
        payload = strip_metadata(raw)
        assert payload[:4] == b"PBUF"
        info = fields(payload[4:])
        assert info[1] == [rs["info_port"]]  # RegionServerInfo.infoPort
        version = fields(info[2][0])  # VersionInfo: version, url, revision, user, date, src_checksum
        assert version[1][0].startswith(b"2.") and set(version) >= {1, 2, 3, 4, 5, 6}

    raw, stat = zk.get(f"{parent}/master")
    assert stat.ephemeralOwner != 0
    master = fields(strip_metadata(raw)[4:])
    server = fields(master[1][0])
    assert server[1] == [b"127.0.0.1"] and server[2] == [ep["master"]["port"]]
    assert master[3] == [ep["master"]["info_port"]]


def test_killed_region_server_vanishes_and_its_regions_recover(minihbase_factory, zk):
    cluster = minihbase_factory("dc1", client_retry_s=20.0)
    parent = cluster.znode_parent
    cluster.create_table("t", {"cf": {}}, split_keys=[b"m"])
    conn = cluster.connection(timeout=60000)
    table = conn.table("t")
    with table.batch() as b:
        for i in range(200):
            b.put(b"%c%03d" % (ord("a") + i % 26, i), {b"cf:v": b"%d" % i})
    victim = next(r for r in table.regions() if r["start_key"] == b"m")
    servername = next(rs["servername"] for rs in cluster.region_servers if rs["port"] == victim["port"])
    others = sorted(set(zk.get_children(f"{parent}/rs")) - {servername})

    # A client writing meanwhile sees no error: its requests wait for the region to come back, as HBase's
    # client retries do.
    written, errors, stop = [], [], threading.Event()

    def writer():
        c = cluster.connection(timeout=60000)
        try:
            i = 0
            while not stop.is_set():
                key = b"%c-live-%05d" % (ord("a") + (i % 2) * 13, i)  # alternates between both regions
                c.table("t").put(key, {b"cf:v": b"live"})
                written.append(key)
                i += 1
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            c.close()

    thread = threading.Thread(target=writer)
    thread.start()
    wait_for(lambda: len(written) > 20, what="the writer to start")
    assert cluster.kill_rs(servername) == servername
    wait_for(lambda: servername not in zk.get_children(f"{parent}/rs"), what="the killed server's znode to go")
    count = len(written)
    wait_for(lambda: len(written) > count + 20, what="writes to go on after the kill")
    stop.set()
    thread.join(60)
    assert errors == []
    assert all(table.row(key) == {b"cf:v": b"live"} for key in written)
    for key in written:
        table.delete(key)
    assert sorted(zk.get_children(f"{parent}/rs")) == others
    # The master replays the dead server's WAL on a live server: every acknowledged edit is there.
    assert sum(1 for _ in table.scan()) == 200
    assert table.row(b"z025") == {b"cf:v": b"25"}
    assert all(r["port"] != victim["port"] for r in table.regions())
    state = {rs["servername"]: rs["alive"] for rs in cluster.region_servers}
    assert state[servername] is False

    restarted = cluster.start_rs(servername)
    host, port, startcode = restarted.split(",")
    assert (host, int(port)) == (victim["server_name"].decode(), victim["port"])  # same slot, same ports
    assert int(startcode) > int(servername.split(",")[2])
    wait_for(lambda: restarted in zk.get_children(f"{parent}/rs"), what="the restarted server's znode")
    table.put(b"n999", {b"cf:v": b"after"})
    assert table.row(b"n999") == {b"cf:v": b"after"}
    conn.close()


def test_latency_knob_delays_every_rpc(minihbase_dc1):
    conn = happybase.Connection(minihbase_dc1.thrift_host, minihbase_dc1.thrift_port)
    try:
        conn.tables()
        minihbase_dc1.set_latency(150)
        started = time.monotonic()
        for _ in range(3):
            conn.tables()
        assert time.monotonic() - started >= 0.45
    finally:
        minihbase_dc1.set_latency(0)
        conn.close()


def test_a_znode_parent_in_use_is_refused(minihbase_dc1, zookeeper, tmp_path):
    from minihbase.testing import MiniCluster, MiniHBaseError

    with pytest.raises(MiniHBaseError, match=f"znode parent {minihbase_dc1.znode_parent} on ZooKeeper "
                                             f"{zookeeper.hosts} is in use by another running cluster"):
        MiniCluster.start(zookeeper.hosts, tmp_path, name="dc1", znode_parent=minihbase_dc1.znode_parent)
    assert minihbase_dc1.status()["master"]["alive"] is True
    assert all(rs["alive"] for rs in minihbase_dc1.region_servers)
