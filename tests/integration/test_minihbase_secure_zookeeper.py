"""The secured clusters' ZooKeeper: SASL/Kerberos (a real Java ZooKeeper, a real KDC), znodes with the ACLs
secure HBase sets, the toolkit a superuser, an authenticated intruder and an unauthenticated client refused
every write and every znode that is not world-readable."""
from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

from bedkit.security import zk as secure_zk
from bedkit.security.gss import KerberosError
from bedkit.security.stack import INTRUDER, TOOLKIT

pytestmark = pytest.mark.integration
ALL = Permissions.ALL
READ = Permissions.READ


def _session(stack, principal=None, keytab=None, base="/none"):
    if principal is None:
        client = KazooClient(hosts=stack.zookeeper.hosts, timeout=10)
    else:
        client = secure_zk.secure_client(stack.zookeeper.hosts, 10, base, [], stack.zookeeper_principal,
                                         principal, keytab or stack.keytab_path(principal))
    client.start(timeout=15)
    return client


@pytest.fixture
def sessions(secure_stack):
    opened = []

    def open_(principal=None, keytab=None, base="/none"):
        client = _session(secure_stack, principal, keytab, base)
        opened.append(client)
        return client
    yield open_
    for client in opened:
        client.stop()
        client.close()


def _acl_set(client, path) -> set[tuple[str, str, int]]:
    return {(a.id.scheme, a.id.id, a.perms) for a in client.get_acls(path)[0]}


HBASE_ACL = {("sasl", "hbase", ALL), ("sasl", "hbase-migration", ALL)}
WORLD_READ = ("world", "anyone", READ)


def test_cluster_znodes_carry_secure_hbase_acls(secure_pair, sessions):
    dc1, dc2 = secure_pair
    admin = sessions(TOOLKIT)
    for cluster in (dc1, dc2):  # dc2's servers (hbase/localhost@DC2.TEST) came across the trust as `hbase`
        base = cluster.znode_parent
        for readable in ("", "/master", "/hbaseid", "/meta-region-server", "/rs"):
            assert _acl_set(admin, base + readable) == HBASE_ACL | {WORLD_READ}, readable
        servers = admin.get_children(f"{base}/rs")
        assert len(servers) == 2
        for private in (f"/rs/{servers[0]}", "/replication", "/replication/rs", f"/replication/rs/{servers[0]}"):
            assert _acl_set(admin, base + private) == HBASE_ACL, private


def test_the_root_znode_is_locked_for_everyone_but_hbase_and_the_toolkit(secure_stack, sessions):
    anonymous = sessions()
    assert _acl_set(anonymous, "/") == {WORLD_READ, ("sasl", "zookeeper", ALL), ("sasl", "hbase", ALL),
                                         ("sasl", "hbase-migration", ALL)}
    with pytest.raises(NoAuthError):
        anonymous.create("/anonymous-was-here")


def test_the_toolkit_is_a_superuser_of_both_clusters(secure_pair, sessions):
    for cluster in secure_pair:
        toolkit = sessions(TOOLKIT, base=cluster.znode_parent)
        probe = f"{cluster.znode_parent}/replication/toolkit-probe"
        toolkit.create(probe, b"x")
        assert toolkit.get(probe)[0] == b"x"
        assert _acl_set(toolkit, probe) == HBASE_ACL
        toolkit.delete(probe)
        assert toolkit.get_children(f"{cluster.znode_parent}/replication/rs")


def test_the_intruder_reads_world_readable_znodes_only_and_writes_nothing(secure_pair, sessions):
    dc1, _ = secure_pair
    base = dc1.znode_parent
    intruder = sessions(INTRUDER)
    assert intruder.get(f"{base}/master")[0].startswith(b"\xff")
    assert len(intruder.get_children(f"{base}/rs")) == 2
    server = intruder.get_children(f"{base}/rs")[0]
    for refused in (lambda: intruder.get(f"{base}/rs/{server}"),
                    lambda: intruder.get_children(f"{base}/replication/rs"),
                    lambda: intruder.create(f"{base}/replication/peers-by-intruder"),
                    lambda: intruder.create(f"{base}/intruder"),
                    lambda: intruder.set(f"{base}/master", b""),
                    lambda: intruder.delete(f"{base}/hbaseid"),
                    lambda: intruder.set_acls(f"{base}/master", [ACL(ALL, Id("world", "anyone"))])):
        with pytest.raises(NoAuthError):
            refused()


def test_an_unauthenticated_client_reads_what_clients_must_and_writes_nothing(secure_pair, sessions):
    _, dc2 = secure_pair
    base = dc2.znode_parent
    anonymous = sessions()
    assert anonymous.get(f"{base}/hbaseid")[0]
    assert anonymous.get(f"{base}/meta-region-server")[0]
    server = anonymous.get_children(f"{base}/rs")[0]
    for refused in (lambda: anonymous.get(f"{base}/rs/{server}"),
                    lambda: anonymous.get_children(f"{base}/replication"),
                    lambda: anonymous.create(f"{base}/anonymous"),
                    lambda: anonymous.set(f"{base}/hbaseid", b""),
                    lambda: anonymous.delete(f"{base}/master")):
        with pytest.raises(NoAuthError):
            refused()


def test_a_keytab_without_the_principal_cannot_open_a_session(secure_stack):
    """The toolkit's principal with the intruder's keytab: no ticket, no session, and the reason is named."""
    client = secure_zk.secure_client(secure_stack.zookeeper.hosts, 5, "/none", [], secure_stack.zookeeper_principal,
                                     TOOLKIT, secure_stack.keytab_path(INTRUDER))
    with pytest.raises(KerberosError, match=r"SASL GSSAPI as hbase-migration@DC1.TEST to "
                                            r"zookeeper/localhost@DC1.TEST failed: cannot log in as hbase-migration"):
        client.start(timeout=5)
    assert not client.connected


def test_a_ticket_for_another_service_is_refused_by_zookeeper(secure_stack):
    """A client that asks a ticket for the wrong service principal (hbase's) gets no session: ZooKeeper's
    acceptor holds only zookeeper/localhost@DC1.TEST's key."""
    client = secure_zk.secure_client(secure_stack.zookeeper.hosts, 5, "/none", [], "hbase/_HOST@DC1.TEST",
                                     TOOLKIT, secure_stack.keytab_path(TOOLKIT))
    with pytest.raises(KerberosError, match="to hbase/localhost@DC1.TEST failed"):
        client.start(timeout=5)
