"""Every channel the toolkit opens to a secured cluster, against minihbase's secured pair (a real KDC, a SASL
ZooKeeper, SPNEGO on every HTTP server): dc1 in DC1.TEST, dc2 in DC2.TEST, reached through the cross-realm trust.
The same calls without the security extras are refused, so it is the toolkit's authentication that opens them."""
from __future__ import annotations

import dataclasses

import pytest
from kazoo.exceptions import NoAuthError

from hbase_migration import channels, kerberos, zk
from hbase_migration.jobargs import cluster_from_text
from hbase_migration.kerberos import KerberosError
from hbase_migration.metrics import JmxUnavailable, fetch_jmx
from hbase_migration.quota import webhdfs
from hbase_migration.replication import zk_peers

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
    from hbase_migration.preflight import migration_peer_config
    from hbase_migration.replication.zookeeper_backend import ZooKeeperPeerAdmin

    dc1, dc2 = clusters
    config = migration_peer_config(dc2, ["acl_probe"], dc1)
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
