"""PeerConfig / Peer: validation, canonical form, the "same config" relation, ownership, ZK form."""
from __future__ import annotations

import pytest

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.replication.model import (
    OWNER_KEY,
    InvalidPeerConfig,
    Peer,
    PeerConfig,
    is_ours,
    normalize_table,
    parse_table_cfs_string,
    table_cfs_to_string,
    validate_peer_id,
)
from hbase_migration.replication.result import PeerOpResult, planned

KEY = "zk1,zk2:2181:/hbase"


@pytest.mark.parametrize("peer_id", ["1", "peer_2", "MIGRATION_dc2", "a" * 64])
def test_valid_peer_ids(peer_id):
    assert validate_peer_id(peer_id) == peer_id


@pytest.mark.parametrize("peer_id, message", [
    ("", "non-empty string"),
    (None, "non-empty string"),
    (1, "non-empty string"),
    ("a-b", "contains '-'.*HBASE-11394"),
    ("lock", "reserved by HBase"),
    ("a.b", r"'\.' would break the source.<peer>.<metric> JMX keys"),
    ("a b", "must be 1-64 characters"),
    ("a/b", "must be 1-64 characters"),
    ("a" * 65, "must be 1-64 characters"),
])
def test_invalid_peer_ids(peer_id, message):
    with pytest.raises(InvalidPeerConfig, match=message):
        validate_peer_id(peer_id)


@pytest.mark.parametrize("name, normal", [
    ("t1", "t1"), ("default:t1", "t1"), ("ns:t1", "ns:t1"), ("ns_2:my-table.v2", "ns_2:my-table.v2"),
])
def test_normalize_table(name, normal):
    assert normalize_table(name) == normal


@pytest.mark.parametrize("name", ["", ":t", "ns:", "-t", ".t", "ns:.t", "a b", "ns-x:t", "a:b:c"])
def test_invalid_table_names(name):
    with pytest.raises(InvalidPeerConfig, match="table name"):
        normalize_table(name)


def test_config_is_canonical():
    config = PeerConfig(cluster_key=KEY, table_cfs={"default:t2": ["b", "a", "a"], "ns:t1": []},
                        namespaces=["z", "a"], configuration={"b": "2", "a": "1"})
    assert isinstance(config.cluster_key, ClusterKey)
    assert config.table_cfs == {"ns:t1": [], "t2": ["a", "b"]}
    assert list(config.table_cfs) == ["ns:t1", "t2"]
    assert config.namespaces == ["a", "z"]
    assert list(config.configuration) == ["a", "b"]
    assert config.replicate_all is False  # derived: TABLE_CFS given


def test_replicate_all_defaults_and_conflicts():
    assert PeerConfig(cluster_key=KEY).replicate_all is True
    assert PeerConfig(cluster_key=KEY, namespaces=["ns"]).replicate_all is False
    assert PeerConfig(cluster_key=KEY, replicate_all=False).replicate_all is False
    with pytest.raises(InvalidPeerConfig, match="replicate_all=true cannot be combined with table_cfs"):
        PeerConfig(cluster_key=KEY, table_cfs={"t": []}, replicate_all=True)
    with pytest.raises(InvalidPeerConfig, match="exclude_table_cfs/exclude_namespaces only apply"):
        PeerConfig(cluster_key=KEY, table_cfs={"t": []}, exclude_namespaces=["x"])


@pytest.mark.parametrize("kwargs, message", [
    ({"cluster_key": "nonsense"}, "cluster_key: cluster key 'nonsense' must have the form"),
    ({"cluster_key": 42}, "cluster_key must be a ClusterKey"),
    ({"table_cfs": ["t1"]}, "table_cfs must be a mapping"),
    ({"table_cfs": {"t1": "cf1"}}, r"table_cfs\['t1'\] must be a list of column families"),
    ({"table_cfs": {"t1": ["a:b"]}}, "column family 'a:b' of table 't1'"),
    ({"table_cfs": {"t1": [], "default:t1": ["cf"]}}, "names table 't1' twice, once with all families"),
    ({"namespaces": "ns"}, "namespaces must be a list"),
    ({"namespaces": ["n-s"]}, "namespaces entry 'n-s'"),
    ({"bandwidth": -1}, "bandwidth must be a non-negative integer"),
    ({"bandwidth": True}, "bandwidth must be a non-negative integer"),
    ({"serial": "yes"}, "serial must be true or false"),
    ({"configuration": {"a": 1}}, "configuration entry 'a' => 1"),
    ({"data": {"": "x"}}, "data entry '' => 'x'"),
    ({"endpoint_class": ""}, "endpoint_class must be a non-empty string"),
])
def test_bad_config_is_refused_naming_the_field(kwargs, message):
    kwargs.setdefault("cluster_key", KEY)
    with pytest.raises(InvalidPeerConfig, match=message):
        PeerConfig(**kwargs)


def test_same_config_relation():
    base = PeerConfig(cluster_key="zk1:2181,zk2:2181:/hbase", table_cfs={"t": ["a", "b"]})
    # same cluster spelled otherwise, CFs as a set, default namespace spelled out, owner mark ignored
    same = PeerConfig(cluster_key="ZK2,zk1:2181:/hbase/", table_cfs={"default:t": ["b", "a", "b"]},
                      configuration={OWNER_KEY: "someone"})
    assert base == same and hash(base) == hash(same)
    assert base != base.replace(table_cfs={"t": []})  # all families != some families
    assert base != base.replace(cluster_key="zk1:2181,zk2:2181:/hbase-other")
    assert base != base.replace(configuration={"replication.source.nb.capacity": "100"})
    assert base != base.replace(bandwidth=1)
    assert base.differences(base.replace(table_cfs={"t": []}, bandwidth=5)) == [
        "table_cfs: {'t': ['a', 'b']} != {'t': []}",
        "bandwidth: 0 != 5",
    ]


def test_ownership():
    config = PeerConfig(cluster_key=KEY, table_cfs={"t": []})
    assert config.owner is None and not is_ours(config)
    mine = config.with_owner("hbase_migration:dag1")
    assert mine.configuration == {OWNER_KEY: "hbase_migration:dag1"}
    peer = Peer("1", mine, False)
    assert is_ours(peer) and is_ours(peer, "hbase_migration:dag1")
    assert not is_ours(peer, "hbase_migration:dag2")
    assert not is_ours(None)
    with pytest.raises(InvalidPeerConfig, match="owner must be a non-empty string"):
        config.with_owner(" ")


def test_replace_rederives_replicate_all():
    wide = PeerConfig(cluster_key=KEY)
    assert wide.replicate_all is True
    assert wide.replace(table_cfs={"t": []}).replicate_all is False


def test_to_replication_peer_and_back():
    config = PeerConfig(cluster_key=KEY, table_cfs={"ns:t1": [], "t2": ["cf"]}, bandwidth=1024, serial=True,
                        data={"k": "v"}, configuration={OWNER_KEY: "me"})
    message = config.to_replication_peer()
    assert message == zk.ReplicationPeer(
        clusterkey=KEY, data=((b"k", b"v"),), configuration=((OWNER_KEY, "me"),),
        table_cfs=(zk.TableCF("ns", "t1", ()), zk.TableCF("default", "t2", ("cf",))),
        bandwidth=1024, replicate_all=False, serial=True)
    back = PeerConfig.from_replication_peer(zk.decode_replication_peer(zk.encode_replication_peer(message)))
    assert back == config and back.configuration == config.configuration


def test_hbase_1x_peer_without_replicate_all_reads_as_scoped():
    # 1.x wrote no replicate_all (field 8): protobuf's default (true) must not make a scoped peer "all tables"
    table = zk.TableCF("default", "t", ())
    message = zk.ReplicationPeer(clusterkey=KEY, table_cfs=(table,), replicate_all=True)
    config = PeerConfig.from_replication_peer(message)
    assert config.replicate_all is False and config.table_cfs == {"t": []}


def test_legacy_raw_cluster_key_peer():
    config = PeerConfig.from_replication_peer(zk.decode_replication_peer(b"zk9:2181:/hbase"))
    assert str(config.cluster_key) == "zk9:2181:/hbase" and config.replicate_all is True


def test_table_cfs_string_forms():
    assert table_cfs_to_string({"t1": [], "ns:t2": ["cf1", "cf2"]}) == "t1;ns.t2:cf1,cf2"
    assert parse_table_cfs_string("table1; table2:cf1,cf3; ns.t3:cfx") == {
        "ns:t3": ["cfx"], "table1": [], "table2": ["cf1", "cf3"]}
    assert parse_table_cfs_string("") == {}
    with pytest.raises(InvalidPeerConfig, match="tableCFs entry 'a:b:c' is not 'table\\[:cf1,cf2\\]'"):
        parse_table_cfs_string("a:b:c")


def test_describe_and_result_to_dict():
    config = PeerConfig(cluster_key=KEY, table_cfs={"t": []}).with_owner("o")
    peer = Peer("1", config, None)
    assert peer.state == "MISSING" and peer.owner == "o"
    result = PeerOpResult("add_peer", "1", "created", False, ["x"], peer, "done")
    assert result.changed
    assert result.to_dict() == {
        "operation": "add_peer", "peer_id": "1", "outcome": "created", "changed": True, "dry_run": False,
        "commands": ["x"], "message": "done",
        "peer": {"id": "1", "state": "MISSING", "owner": "o", "config": {
            "cluster_key": KEY, "table_cfs": {"t": []}, "namespaces": [], "replicate_all": False,
            "bandwidth": 0, "serial": False, "data": {}, "configuration": {OWNER_KEY: "o"},
            "endpoint_class": None, "exclude_table_cfs": {}, "exclude_namespaces": [],
            "remote_wal_dir": None}},
    }
    assert planned("removed", True) == "would_remove" and planned("removed", False) == "removed"
    assert not PeerOpResult("add_peer", "1", "would_create", True).changed
    assert not PeerOpResult("add_peer", "1", "unchanged", False).changed
