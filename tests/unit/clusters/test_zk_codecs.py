"""zk.py's codecs against the exact bytes of the reference (§0, §1)."""
from __future__ import annotations

import pytest

from hbase_migration.clusters import zk
from hbase_migration.clusters.zk import PeerState, ReplicationPeer, TableCF, ZnodeFormatError

SALT = bytes.fromhex("0102030405060708")
HEADER = b"\xff\x00\x00\x00\x10" + b"4242@rs1" + SALT  # idLength = len("4242@rs1") + 8 = 16


# ---------------------------------------------------------------- protobuf wire format

@pytest.mark.parametrize("value, encoded", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (254, "fe01"), (300, "ac02"), (16030, "9e7d"),
    ((1 << 63) - 1, "ffffffffffffffff7f"),
    (-1, "ffffffffffffffffff01"),  # int64 -1: ten bytes, as protobuf writes negative int64
])
def test_varint_exact_bytes_and_back(value, encoded):
    assert zk.encode_varint(value).hex() == encoded
    raw, end = zk.decode_varint(bytes.fromhex(encoded))
    assert (zk.as_int64(raw), end) == (value, len(encoded) // 2)


def test_varint_rejects_truncated_and_overlong_input():
    with pytest.raises(ZnodeFormatError, match="truncated or overlong varint at byte 0"):
        zk.decode_varint(b"\x80")
    with pytest.raises(ZnodeFormatError, match="truncated or overlong varint"):
        zk.decode_varint(b"\xff" * 11)
    with pytest.raises(ValueError, match="does not fit in int64"):
        zk.encode_varint(-(1 << 63) - 1)


def test_field_encoders_and_decoder():
    assert zk.pb_varint(7, 0) == b"\x38\x00"
    assert zk.pb_bytes(1, "zk") == b"\x0a\x02zk"
    assert zk.pb_bytes(12, b"") == b"\x62\x00"
    data = b"\x08\x96\x01" + b"\x12\x03abc" + b"\x19" + bytes(8) + b"\x25" + bytes(4)
    assert zk.decode_fields(data) == [(1, 0, 150), (2, 2, b"abc"), (3, 1, bytes(8)), (4, 5, bytes(4))]


@pytest.mark.parametrize("data, message", [
    (b"\x0a\x05ab", "field 1 claims 5 bytes, only 2 left"),
    (b"\x0b", "unsupported protobuf wire type 3"),
    (b"\x00\x01", "field number 0"),
    (b"\x19\x00", "field 3 truncated"),
])
def test_decode_fields_rejects_malformed_messages(data, message):
    with pytest.raises(ZnodeFormatError, match=message):
        zk.decode_fields(data)


# ---------------------------------------------------------------- ZKMetadata and PBUF framing

def test_add_metadata_exact_header():
    assert zk.add_metadata(b"PBUF\x08\x00", identifier="4242@rs1", salt=SALT) == HEADER + b"PBUF\x08\x00"


def test_add_metadata_default_id_is_pid_at_host_and_salt_is_random():
    first = zk.add_metadata(b"x")
    second = zk.add_metadata(b"x")
    ident = zk.default_metadata_id().encode()
    assert first[:5] == b"\xff" + (len(ident) + 8).to_bytes(4, "big")
    assert first[5:5 + len(ident)] == ident and first.endswith(b"x")
    assert zk.strip_metadata(first) == zk.strip_metadata(second) == b"x"


def test_empty_payload_is_never_wrapped():
    assert zk.add_metadata(b"", identifier="id", salt=SALT) == b""
    assert zk.strip_metadata(b"") == b""
    assert zk.strip_metadata(None) == b""


def test_strip_metadata_only_when_first_byte_is_ff():
    assert zk.strip_metadata(HEADER + b"PBUF\x08\x01") == b"PBUF\x08\x01"
    assert zk.strip_metadata(b"PBUF\x08\x01") == b"PBUF\x08\x01"
    assert zk.strip_metadata(b"zk1:2181:/hbase") == b"zk1:2181:/hbase"
    assert zk.strip_metadata(HEADER) == b""  # a header with an empty payload


@pytest.mark.parametrize("data", [b"\xff\x00\x00", b"\xff\x00\x00\x00\x20abc", b"\xff\xff\xff\xff\xff"])
def test_strip_metadata_rejects_a_broken_header(data):
    with pytest.raises(ZnodeFormatError, match="ZKMetadata"):
        zk.strip_metadata(data)


# ---------------------------------------------------------------- ReplicationPeer

REFERENCE_PEER = bytes.fromhex("50425546") + b"\x0a\x0fzk1:2181:/hbase" + bytes.fromhex("3800 4001 5800")


def test_reference_peer_exact_bytes():
    """Reference §1.2: `50 42 55 46 | 0A 0F "zk1:2181:/hbase" | 38 00 | 40 01 | 58 00`."""
    assert zk.encode_replication_peer(ReplicationPeer(clusterkey="zk1:2181:/hbase")) == REFERENCE_PEER
    assert zk.decode_replication_peer(REFERENCE_PEER) == ReplicationPeer(clusterkey="zk1:2181:/hbase")
    with_header = HEADER + REFERENCE_PEER
    assert zk.decode_replication_peer(with_header) == ReplicationPeer(clusterkey="zk1:2181:/hbase")


def test_peer_with_table_cfs_and_config_exact_bytes():
    peer = ReplicationPeer(
        clusterkey="zk1:2181:/hbase",
        configuration=(("hbase_migration.owner", "dag1"),),
        table_cfs=(TableCF("ns", "t1"), TableCF("default", "t2", ("cf1",))),
        replicate_all=False,
    )
    name_value = b"\x0a\x15hbase_migration.owner" + b"\x12\x04dag1"
    ns_t1 = b"\x0a\x08" + b"\x0a\x02ns\x12\x02t1"
    t2_cf1 = b"\x0a\x0d" + b"\x0a\x07default\x12\x02t2" + b"\x12\x03cf1"
    expected = (
        b"PBUF" + b"\x0a\x0fzk1:2181:/hbase"
        + b"\x22" + bytes([len(name_value)]) + name_value
        + b"\x2a\x0a" + ns_t1
        + b"\x2a\x14" + t2_cf1
        + b"\x38\x00\x40\x00\x58\x00"
    )
    assert zk.encode_replication_peer(peer) == expected
    assert zk.decode_replication_peer(expected) == peer
    assert [cf.table for cf in peer.table_cfs] == ["ns:t1", "t2"]


def test_peer_all_twelve_fields_round_trip():
    peer = ReplicationPeer(
        clusterkey="zk1,zk2:2181:/hbase",
        replication_endpoint_impl="org.example.Endpoint",
        data=((b"\x00k", b"\xffv"),),
        configuration=(("a", "b"), ("c", "")),
        table_cfs=(TableCF("default", "t", ("f1", "f2")),),
        namespaces=("ns1", "ns2"),
        bandwidth=1048576,
        replicate_all=False,
        exclude_table_cfs=(TableCF("ns", "x"),),
        exclude_namespaces=("ns3",),
        serial=True,
        remote_wal_dir="hdfs://nn/remoteWALs",
    )
    encoded = zk.encode_replication_peer(peer)
    tags = [no for no, _, _ in zk.decode_fields(encoded[4:])]
    assert tags == [1, 2, 3, 4, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12]
    assert zk.decode_replication_peer(zk.add_metadata(encoded)) == peer


def test_peer_negative_bandwidth_round_trips_as_int64():
    peer = ReplicationPeer(clusterkey="k:1:/h", bandwidth=-5)
    assert zk.decode_replication_peer(zk.encode_replication_peer(peer)).bandwidth == -5


def test_hbase_2_0_peer_without_serial_and_unknown_fields_reads_defaults():
    data = b"PBUF\x0a\x0fzk1:2181:/hbase\x38\x00\x40\x01" + b"\x68\x07"  # + unknown field 13
    assert zk.decode_replication_peer(data) == ReplicationPeer(clusterkey="zk1:2181:/hbase")


def test_legacy_peer_is_a_raw_cluster_key():
    peer = zk.decode_replication_peer(HEADER + b"zk1:2181:/hbase")
    assert peer.clusterkey == "zk1:2181:/hbase" and peer.legacy


@pytest.mark.parametrize("data, message", [
    (b"", "peer znode is empty"),
    (HEADER, "peer znode is empty"),
    (b"PBUF\x08\x01", "field 1 has wire type 0, expected 2"),
    (b"PBUF\x2a\x04\x12\x02cf", "TableCF without a complete table_name"),
    (b"PBUF\x0a\x02\xff\xfe", "clusterkey is not UTF-8"),
])
def test_malformed_peer_znodes_are_rejected(data, message):
    with pytest.raises(ZnodeFormatError, match=message):
        zk.decode_replication_peer(data)


# ---------------------------------------------------------------- ReplicationState

def test_peer_state_exact_bytes():
    assert zk.encode_peer_state(PeerState.ENABLED) == bytes.fromhex("50 42 55 46 08 00")
    assert zk.encode_peer_state(PeerState.DISABLED) == bytes.fromhex("50 42 55 46 08 01")
    assert zk.encode_peer_state(True) == b"PBUF\x08\x00"
    assert zk.encode_peer_state(False) == b"PBUF\x08\x01"


@pytest.mark.parametrize("data, state", [
    (b"PBUF\x08\x00", PeerState.ENABLED),
    (b"PBUF\x08\x01", PeerState.DISABLED),
    (HEADER + b"PBUF\x08\x00", PeerState.ENABLED),
    (HEADER + b"PBUF\x08\x01", PeerState.DISABLED),
    (b"ENABLED", PeerState.ENABLED),  # 0.94's string form
    (b"DISABLED", PeerState.DISABLED),
])
def test_peer_state_decoding(data, state):
    assert zk.decode_peer_state(data) == state


@pytest.mark.parametrize("data", [b"", b"PBUF", b"PBUF\x08\x02", b"\x08\x00", b"PBUF\x10\x00"])
def test_peer_state_garbage_is_an_error(data):
    with pytest.raises(ZnodeFormatError, match="peer-state"):
        zk.decode_peer_state(data)


def test_hbase_sees_enabled_is_a_byte_compare():
    assert zk.hbase_sees_enabled(HEADER + b"PBUF\x08\x00")
    assert not zk.hbase_sees_enabled(b"PBUF\x08\x01")
    assert not zk.hbase_sees_enabled(b"PBUF\x08\x00\x00")  # HBase compares the whole array
    assert not zk.hbase_sees_enabled(b"ENABLED")


# ---------------------------------------------------------------- WAL position, ClusterId, RegionServerInfo

@pytest.mark.parametrize("position, encoded", [(0, "5042554608 00"), (254, "5042554608 fe01")])
def test_wal_position_exact_bytes(position, encoded):
    data = bytes.fromhex(encoded)
    assert zk.encode_wal_position(position) == data
    assert zk.decode_wal_position(data) == position
    assert zk.decode_wal_position(HEADER + data) == position


def test_wal_position_legacy_long_and_empty():
    assert zk.decode_wal_position((123456789012).to_bytes(8, "big")) == 123456789012
    assert zk.decode_wal_position(b"") == 0
    with pytest.raises(ZnodeFormatError, match="neither PBUF nor an 8-byte long"):
        zk.decode_wal_position(b"\x01\x02")
    with pytest.raises(ZnodeFormatError, match="without its required position"):
        zk.decode_wal_position(b"PBUF")


def test_cluster_id_exact_bytes():
    uuid = "5f1f6c5e-4a3b-4c2d-9e8f-0123456789ab"
    encoded = bytes.fromhex("50 42 55 46 0A 24") + uuid.encode()
    assert zk.encode_cluster_id(uuid) == encoded
    assert zk.decode_cluster_id(HEADER + encoded) == uuid
    assert zk.decode_cluster_id(uuid.encode()) == uuid  # legacy raw string
    with pytest.raises(ZnodeFormatError, match="hbaseid znode is empty"):
        zk.decode_cluster_id(b"")


def test_region_server_info():
    assert zk.encode_region_server_info(16030) == b"PBUF\x08\x9e\x7d"
    assert zk.encode_region_server_info(16030, "2.5.8") == b"PBUF\x08\x9e\x7d\x12\x07\x0a\x052.5.8"
    assert zk.decode_region_server_info(HEADER + b"PBUF\x08\x9e\x7d") == zk.RegionServerInfo(16030, None)
    # A full VersionInfo (version, url, revision...) is tolerated; only the version is kept.
    version_info = b"\x0a\x052.5.8\x12\x03url\x1a\x03rev\x38\x02"
    data = b"PBUF\x08\x9e\x7d\x12" + bytes([len(version_info)]) + version_info
    assert zk.decode_region_server_info(data) == zk.RegionServerInfo(16030, "2.5.8")
    assert zk.decode_region_server_info(b"") == zk.RegionServerInfo(None, None)
    with pytest.raises(ZnodeFormatError, match="RegionServerInfo: expected the PBUF magic"):
        zk.decode_region_server_info(b"garbage")


# ---------------------------------------------------------------- names and queue ids

def test_parse_servername():
    assert zk.parse_servername("ip-10-0-0-1.ec2,16020,1700000000000") == (
        "ip-10-0-0-1.ec2", 16020, 1700000000000)
    with pytest.raises(ValueError, match="server name 'rs1:16020' is not 'host,port,startcode'"):
        zk.parse_servername("rs1:16020")


@pytest.mark.parametrize("queue_id, peer_id, recovered, dead", [
    ("1", "1", False, ()),
    ("peer_a", "peer_a", False, ()),
    ("1-rs1.example.com,16020,1700000000001", "1", True, ("rs1.example.com,16020,1700000000001",)),
    # hyphenated host names, chained twice: cut only after two commas
    ("2-ip-10-0-0-1.ec2,16020,1600000000001-rs-b.dc-1,16020,1600000000002",
     "2", True, ("ip-10-0-0-1.ec2,16020,1600000000001", "rs-b.dc-1,16020,1600000000002")),
    ("2-a,1,1-b,2,2-c-d,3,3", "2", True, ("a,1,1", "b,2,2", "c-d,3,3")),
    ("1-", "1", True, ()),  # Java's split("-", 2) keeps the empty tail: recovered, no server
    ("1-not-a-server", "1", True, ()),  # invalid names are skipped, as HBase logs and skips them
])
def test_parse_queue_id_as_replication_queue_info(queue_id, peer_id, recovered, dead):
    assert zk.parse_queue_id(queue_id) == zk.QueueId(queue_id, peer_id, recovered, dead)


def test_wal_sort_key_orders_by_creation_time():
    names = ["rs%2C1%2C1.1700000000010", "rs%2C1%2C1.meta.1700000000001.meta", "weird", "rs%2C1%2C1.999"]
    assert sorted(names, key=zk.wal_sort_key) == [
        "rs%2C1%2C1.999", "rs%2C1%2C1.meta.1700000000001.meta", "rs%2C1%2C1.1700000000010", "weird"]


def test_paths():
    assert zk.join("/hbase/", "rs", "a,1,2") == "/hbase/rs/a,1,2"
    assert zk.join("/", "hbase") == "/hbase"
    assert zk.peer_path("/hbase-dc1", "1") == "/hbase-dc1/replication/peers/1"
    assert zk.peer_state_path("/hbase", "p") == "/hbase/replication/peers/p/peer-state"
    assert zk.replication_paths("/t/hbase") == {
        "root": "/t/hbase/replication",
        "peers": "/t/hbase/replication/peers",
        "rs": "/t/hbase/replication/rs",
    }
