"""Every channel the toolkit opens to a secured cluster, against minihbase's secured pair (a real KDC, a SASL
ZooKeeper, SPNEGO on every HTTP server): dc1 in DC1.TEST, dc2 in DC2.TEST, reached through the cross-realm trust.
The same calls without the security extras are refused, so it is the toolkit's authentication that opens them."""
from __future__ import annotations

import dataclasses

import pytest
from kazoo.exceptions import NoAuthError

from hbase_migration.clusters import channels, kerberos, zk
from hbase_migration.clusters.kerberos import KerberosError
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.migration.quota import webhdfs
from hbase_migration.replication import zk_peers
from hbase_migration.replication.metrics import JmxUnavailable, fetch_jmx

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def clusters(secure_pair):
    kerberos.forget_krb5_conf()
    return tuple(cluster_from_text(c.name, c.connection_json) for c in secure_pair)


def open_copy(cluster):
    return dataclasses.replace(cluster, security=None)


def test_zookeeper_with_sasl_reads_the_znodes_secure_hbase_locks_to_itself(clusters):
    for cluster in clusters:
        with zk.connect(cluster, timeout=15) as client:
            assert zk.live_region_servers(client, cluster.znode_parent)
            assert zk_peers.read_peers(client, cluster.znode_parent) == []
        with zk.connect(open_copy(cluster), timeout=15) as anonymous:
            anonymous.get_children(zk.join(cluster.znode_parent, "rs"))  # world-readable, as secure HBase leaves it
            with pytest.raises(NoAuthError):  # each server's znode (its info port) is not
                zk.live_region_servers(anonymous, cluster.znode_parent)


def test_a_wrong_zookeeper_principal_is_named_with_the_fix(clusters):
    dc1 = clusters[0]
    wrong = dataclasses.replace(dc1, security=dataclasses.replace(dc1.security,
                                                                 zookeeper_principal="zookeeper/_HOST@DC2.TEST"))
    with pytest.raises(KerberosError, match=r"the KDC does not know the server principal "
                                            r"zookeeper/localhost@DC2.TEST") as err:
        with zk.connect(wrong, timeout=10):
            pass
    assert err.value.kind == "unknown_server"


def test_jmx_and_webhdfs_with_spnego_across_both_realms(clusters):
    for cluster in clusters:
        with zk.connect(cluster, timeout=15) as client:
            server = zk.live_region_servers(client, cluster.znode_parent)[0]
        jmx = fetch_jmx(server.host, server.info_port, session=channels.http(cluster))
        assert "beans" in jmx
        with pytest.raises(JmxUnavailable, match="401"):
            fetch_jmx(server.host, server.info_port, attempts=1)
        assert webhdfs(cluster).file_status(cluster.rootdir).type == "DIRECTORY"
        with pytest.raises(Exception, match="401"):
            webhdfs(open_copy(cluster)).file_status(cluster.rootdir)


def test_peers_written_to_zookeeper_carry_secure_hbases_acl_and_the_cross_realm_principal(clusters):
    """The HBase 1.x backend writes peer znodes itself: on a secured ZooKeeper they get the SASL entries of their
    parent (sasl:hbase and the superusers, ALL), no world access; the peer towards DC2 names DC2's principal."""
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication.zookeeper_backend import ZooKeeperPeerAdmin

    dc1, dc2 = clusters
    config = migration_peer_config(dc2, ["acl_probe"], source=dc1)
    assert config.configuration == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC2.TEST"}
    with zk.connect(dc1, timeout=15) as client:
        admin = ZooKeeperPeerAdmin(dc1, client)
        try:
            admin.add_peer("aclprobe", config)
            peer_acls = client.get_acls(zk.peer_path(dc1.znode_parent, "aclprobe"))[0]
            state_acls = client.get_acls(zk.peer_state_path(dc1.znode_parent, "aclprobe"))[0]
            assert {(a.id.scheme, a.id.id) for a in peer_acls} >= {("sasl", "hbase"), ("sasl", "hbase-migration")}
            assert not [a for a in peer_acls + state_acls if a.id.scheme == "world"]
            assert admin.get_peer("aclprobe").config.configuration["hbase.regionserver.kerberos.principal"] == \
                "hbase/_HOST@DC2.TEST"
        finally:
            admin.remove_peer("aclprobe", force=True)


# ------------------------------------------------------------------------------------------ Thrift, binary SASL


def _round_trip(cluster, table):
    """A put at a chosen timestamp and a read of every version through the toolkit's Thrift2 data path; the
    table listed through its Thrift1 session."""
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.clusters.thrift import ThriftSession
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    T = hbase2()
    with Thrift2Session(cluster) as session:
        session.call("putMultiple", table.encode(), [T.TPut(row=b"r1", columnValues=[
            T.TColumnValue(family=b"cf", qualifier=b"q", value=b"v1", timestamp=1000),
            T.TColumnValue(family=b"cf", qualifier=b"q", value=b"v2", timestamp=2000)])])
        result = session.call("get", table.encode(), T.TGet(row=b"r1", maxVersions=10))
        assert [(c.timestamp, c.value) for c in result.columnValues] == [(2000, b"v2"), (1000, b"v1")]
    for gateway in (*cluster.thrift_servers, *cluster.thrift2_servers):
        assert channels.thrift_handshake(cluster, gateway, 10).qop == cluster.security.thrift_qop
    with ThriftSession(cluster) as session:
        assert table.encode() in session.call("getTableNames")
    with open_data_path(cluster) as path:
        assert path.families(table) == {b"cf": 10}


def test_both_gateways_through_the_toolkits_sasl_transport_with_auth_conf(secure_pair, clusters):
    dc1 = clusters[0]
    assert dc1.security.thrift_qop == "auth-conf"
    secure_pair[0].create_table("sasl_conf", {"cf": {"max_versions": 10}})
    _round_trip(dc1, "sasl_conf")


@pytest.mark.parametrize("qop", ["auth", "auth-int"])
def test_the_other_qops(secure_cluster_factory, qop):
    mini = secure_cluster_factory("dcq", "DC1.TEST", thrift_qop=qop)
    mini.create_table("sasl_qop", {"cf": {"max_versions": 10}})
    _round_trip(cluster_from_text(mini.name, mini.connection_json), "sasl_qop")


def test_a_qop_mismatch_is_refused_before_any_data_naming_both(clusters):
    from hbase_migration.clusters.sasl import QopMismatch
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    dc1 = clusters[0]
    asks_int = dataclasses.replace(dc1, security=dataclasses.replace(dc1.security, thrift_qop="auth-int"))
    with pytest.raises(QopMismatch, match=r"offers SASL QOP auth-conf but the connection asks for auth-int"):
        Thrift2Session(asks_int)
    sasl = channels.thrift_handshake(dc1, dc1.thrift2_servers[0], 10)
    assert (sasl.offered, sasl.qop) == (("auth-conf",), "auth-conf")


def test_a_plain_client_on_a_sasl_gateway_fails_and_does_not_hang(clusters):
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    with pytest.raises(Exception):
        with Thrift2Session(open_copy(clusters[0]), timeout_s=5) as session:
            session.call("tableExists", hbase2().TTableName(qualifier=b"t"), retries=1)


# ------------------------------------------------------------------------------------------ Thrift, HTTP mode


def test_thrift_over_https_with_spnego_across_the_trust(secure_pair, clusters):
    """dc2 (DC2.TEST) runs its gateways in HTTP mode with TLS: the toolkit (DC1.TEST) posts each call with a
    SPNEGO token for HTTP/localhost@DC2.TEST, checking the gateway's certificate against minihbase's CA."""
    dc2 = clusters[1]
    assert dc2.security.thrift_http and dc2.security.thrift_ssl and dc2.security.ssl_ca
    secure_pair[1].create_table("http_mode", {"cf": {"max_versions": 10}})
    _round_trip_http(dc2, "http_mode")
    untrusted = dataclasses.replace(dc2, security=dataclasses.replace(dc2.security, ssl_ca=None))
    with pytest.raises(KerberosError, match="certificate verify failed"):
        channels.thrift_call_probe(untrusted, dc2.thrift2_servers[0], "thrift2")
    anonymous = dataclasses.replace(dc2, security=dataclasses.replace(dc2.security, principal=None, keytab=None,
                                                                     hbase_principal=None, spnego_principal=None,
                                                                     zookeeper_principal=None))
    with pytest.raises(KerberosError, match="HTTP 401"):
        channels.thrift_call_probe(anonymous, dc2.thrift2_servers[0], "thrift2")


def _round_trip_http(cluster, table):
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.clusters.thrift import ThriftSession
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    T = hbase2()
    with Thrift2Session(cluster) as session:
        session.call("putMultiple", table.encode(), [T.TPut(row=b"r1", columnValues=[
            T.TColumnValue(family=b"cf", qualifier=b"q", value=b"v1", timestamp=1000)])])
        result = session.call("get", table.encode(), T.TGet(row=b"r1", maxVersions=10))
        assert [(c.timestamp, c.value) for c in result.columnValues] == [(1000, b"v1")]
    with ThriftSession(cluster) as session:
        assert table.encode() in session.call("getTableNames")


def test_the_shell_backend_adds_the_cross_realm_peer_with_the_principal_in_its_config(clusters):
    """Through the secured shell (a ticket cache of the toolkit's own): add_peer carries CONFIG =>
    {"hbase.regionserver.kerberos.principal" => "hbase/_HOST@DC2.TEST"}, read back from ZooKeeper; an existing
    peer of another CONFIG under the id is refused."""
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.errors import PeerConflict

    dc1, dc2 = clusters
    config = migration_peer_config(dc2, ["shell_probe"], source=dc1)
    with peer_admin(dc1) as admin:
        assert admin.backend == "shell"
        try:
            admin.add_peer("shellprobe", config)
            found = admin.get_peer("shellprobe")
            assert found.config.configuration["hbase.regionserver.kerberos.principal"] == "hbase/_HOST@DC2.TEST"
            assert found.enabled is False
            without = migration_peer_config(dataclasses.replace(dc2, security=None), ["shell_probe"], source=dc1)
            with pytest.raises(PeerConflict, match="another config"):
                admin.add_peer("shellprobe", without.replace(configuration={}))
        finally:
            admin.remove_peer("shellprobe", force=True)
