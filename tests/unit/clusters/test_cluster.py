import pytest

from hbase_migration.clusters.cluster import Cluster, ClusterConfigError, ClusterKey


@pytest.mark.parametrize(
    "text, quorum, port, parent",
    [
        ("zk1,zk2,zk3:2181:/hbase", ("zk1", "zk2", "zk3"), 2181, "/hbase"),
        ("127.0.0.1:2181:/hbase-dc1", ("127.0.0.1",), 2181, "/hbase-dc1"),
        ("zk1:2182,zk2:2183:2181:/hbase", ("zk1:2182", "zk2:2183"), 2181, "/hbase"),
        (" zk1:2181:/hbase/ ", ("zk1",), 2181, "/hbase"),
    ],
)
def test_cluster_key_parse(text, quorum, port, parent):
    key = ClusterKey.parse(text)
    assert (key.quorum, key.port, key.znode_parent) == (quorum, port, parent)


def test_cluster_key_round_trip_and_connect_string():
    key = ClusterKey.parse("zk1,zk2:2182:2181:/hbase")
    assert str(key) == "zk1,zk2:2182:2181:/hbase"
    assert key.zk_hosts == "zk1:2181,zk2:2182"


def test_normalized_keys_compare_equal_across_spellings():
    a = ClusterKey.parse("ZK2,zk1:2181:/hbase/")
    b = ClusterKey.parse("zk1:2181,zk2:2181:2181:/hbase")
    assert a.normalized() == b.normalized()
    assert a.normalized() != ClusterKey.parse("zk1,zk2:2181:/hbase2").normalized()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "quorum:port:/znode-parent"),
        ("zk1:2181", "must have the form"),
        ("zk1:port:/hbase", "must be an integer port"),
        ("zk1:70000:/hbase", "within 1..65535"),
        ("zk1:2181:hbase", "absolute znode path"),
        (",zk2:2181:/hbase", "empty host"),
        ("zk1:x,zk2:2181:/hbase", "port of quorum host"),
    ],
)
def test_cluster_key_rejects_malformed(text, fragment):
    with pytest.raises(ClusterConfigError, match=fragment):
        ClusterKey.parse(text)


def test_cluster_from_connection_fields():
    c = Cluster.from_connection(
        "hbase_source",
        "thrift.dc1",
        9091,
        {
            "zookeeper_quorum": "zk1, zk2",
            "zookeeper_port": "2181",
            "znode_parent": "/hbase-dc1",
            "webhdfs_url": "http://nn:9870",
            "peer_admin": "zookeeper",
            "shell_command": "/opt/hbase/bin/hbase shell -n",
            "thrift_transport": "framed",
            "shell_timeout_s": "60",
        },
    )
    assert c.thrift_port == 9091 and c.zk_port == 2181
    assert str(c.cluster_key) == "zk1,zk2:2181:/hbase-dc1"
    assert c.shell_command == ("/opt/hbase/bin/hbase", "shell", "-n")
    assert c.info_port is None and c.rootdir == "/hbase"
    assert (c.thrift_transport, c.shell_timeout_s, c.thrift_protocol) == ("framed", 60.0, "binary")
    assert c.describe()["cluster_key"] == "zk1,zk2:2181:/hbase-dc1"


def test_the_wire_form_rebuilds_the_same_cluster():
    import json

    c = Cluster.from_connection("src", "thrift.dc1", 9091, {"zookeeper_quorum": "zk1,zk2", "info_port": 16030,
                                                            "webhdfs_url": "http://nn:9870", "peer_admin": "zookeeper",
                                                            "zk_legacy_table_cfs": "true"})
    wire = json.loads(json.dumps(c.to_dict()))
    assert Cluster.from_dict(wire) == c and Cluster.from_dict(wire).zk_legacy_table_cfs is True
    with pytest.raises(ClusterConfigError, match="unknown cluster field\\(s\\) colour"):
        Cluster.from_dict({**wire, "colour": "red"})


@pytest.mark.parametrize(
    "host, extra, fragment",
    [
        ("t", {}, "zookeeper_quorum' is required"),
        ("", {"zookeeper_quorum": "zk"}, "host \\(the Thrift server\\) is required"),
        ("t", {"zookeeper_quorum": "zk", "peer_admin": "rest"}, "peer_admin must be one of shell, zookeeper"),
        ("t", {"zookeeper_quorum": "zk", "znode_parent": "hbase"}, "znode_parent must be an absolute"),
        ("t", {"zookeeper_quorum": "zk", "webhdfs_url": "nn:9870"}, "webhdfs_url must start with http"),
        ("t", {"zookeeper_quorum": "zk", "zookeeper_port": "x"}, "zookeeper_port must be an integer"),
        ("t", {"zookeeper_quorum": "zk", "zookeeper_qourum": "zk"}, "unknown extra 'zookeeper_qourum'"),
        ("t", {"zookeeper_quorum": "zk", "thrift_transport": "http"}, "thrift_transport must be one of"),
        ("t", {"zookeeper_quorum": "zk", "timeout_s": "0"}, "timeout_s must be positive"),
    ],
)
def test_cluster_rejects_bad_fields_naming_them(host, extra, fragment):
    with pytest.raises(ClusterConfigError, match=fragment):
        Cluster.from_connection("c", host, None, extra)
