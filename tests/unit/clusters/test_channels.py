"""What `channels` builds for each kind of cluster, before any connection is made: an open cluster gets exactly the
clients it always had; a secured one the SASL or HTTP transport its extras name (no network, no KDC here)."""
import happybase
import requests

from hbase_migration.clusters import channels
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.security import Security
from hbase_migration.clusters.thrift_transports import THttpTransport, TSaslClientTransport
from tests.unit.clusters.test_security import keytab_bytes


def open_cluster(**kw):
    return Cluster("open", "thrift.dc1", ("zk1",), **kw)


def secured(tmp_path, **kw):
    keytab = tmp_path / "m.keytab"
    keytab.write_bytes(keytab_bytes([("hbase-migration", "DC1.TEST", 1, 18)]))
    base = {"principal": "hbase-migration@DC1.TEST", "keytab": str(keytab), "hbase_principal": "hbase/_HOST@DC2.TEST",
            "spnego_principal": "HTTP/_HOST@DC2.TEST"}
    return Cluster("dc2", "thrift.dc2", ("zk1",), security=Security(**{**base, **kw}))


def test_an_open_cluster_gets_the_plain_clients_it_always_had():
    cluster = open_cluster(thrift_transport="framed", thrift_protocol="compact")
    assert channels.http(cluster) is requests and channels.http(None) is requests
    connection = channels.thrift1(cluster, "thrift.dc1:9090", 2.0)
    assert type(connection) is happybase.Connection
    assert (connection.host, connection.port, connection.timeout) == ("thrift.dc1", 9090, 2000)
    assert type(connection.transport).__name__ == "TCyFramedTransport"
    transport, protocol = channels._thrift_factories(cluster)
    assert type(transport).__name__.endswith("FramedTransportFactory")
    assert type(protocol).__name__ == "TCompactProtocolFactory"
    assert not channels.secured_thrift(cluster)


def test_a_sasl_cluster_gets_the_sasl_transport_under_a_buffered_one(tmp_path):
    cluster = secured(tmp_path, thrift_qop="auth-conf")
    connection = channels.thrift1(cluster, "thrift.dc2:9090", 2.0)
    assert type(connection) is not happybase.Connection and isinstance(connection, happybase.Connection)
    assert type(connection.transport).__name__ == "TCyBufferedTransport"
    base = channels._thrift_base(cluster, "thrift.dc2:9090", 2.0)
    assert isinstance(base, TSaslClientTransport)
    assert base.endpoint == "Thrift gateway thrift.dc2:9090 of dc2"
    # SASL frames every message itself: a framed setting does not add a second frame (HBase ignores it too).
    framed = Cluster("dc2", "thrift.dc2", ("zk1",), thrift_transport="framed", security=cluster.security)
    assert type(channels._thrift_factories(framed)[0]).__name__.endswith("BufferedTransportFactory")


def test_an_http_mode_cluster_posts_to_https_with_spnego(tmp_path):
    cluster = secured(tmp_path, thrift_http=True, thrift_ssl=True)
    base = channels._thrift_base(cluster, "thrift.dc2:9090", 2.0)
    assert isinstance(base, THttpTransport)
    assert base.url == "https://thrift.dc2:9090/"
    session = channels.http(cluster)
    assert session is not requests and type(session.auth).__name__ == "SpnegoAuth"
    assert channels.http(cluster) is session  # one per thread and cluster
