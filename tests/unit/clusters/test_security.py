"""The security description: extras decoded and validated, `_HOST` expansion, QOP names, keytab files, what
MIT's errors mean, the cross-realm peer CONFIG, the SASL security layer and Thrift's SASL framing. Pure."""
import struct
import sys
import types

import pytest

from hbase_migration.clusters import security as sec
from hbase_migration.clusters.cluster import Cluster, ClusterConfigError
from hbase_migration.clusters.sasl import QopMismatch, SaslError, security_layer_reply
from hbase_migration.clusters.security import (
    Security,
    SecurityConfigError,
    explain,
    normalize_qop,
    parse_principal,
    peer_principal_config,
    read_keytab,
    server_principal,
)
from hbase_migration.clusters.thrift_transports import negotiation_message


@pytest.fixture
def keytab(tmp_path):
    path = tmp_path / "migration.keytab"
    path.write_bytes(keytab_bytes([("hbase-migration", "DC1.TEST", 2, 18)]))
    return str(path)


def keytab_bytes(entries, version=2):
    """A keytab file as MIT's ktadd writes it: (name/instance, realm, kvno, enctype) per entry."""
    out = bytes([5, version])
    for name, realm, kvno, enctype in entries:
        components = name.split("/")
        body = struct.pack(">H", len(components) + (1 if version == 1 else 0))
        body += struct.pack(">H", len(realm)) + realm.encode()
        for c in components:
            body += struct.pack(">H", len(c)) + c.encode()
        if version == 2:
            body += struct.pack(">I", 1)  # KRB5_NT_PRINCIPAL
        body += struct.pack(">IB", 1700000000, kvno & 0xFF)
        body += struct.pack(">HH", enctype, 32) + b"K" * 32
        body += struct.pack(">I", kvno)
        out += struct.pack(">i", len(body)) + body
    return out


def secured(keytab_path, **extra):
    base = {"principal": "hbase-migration@DC1.TEST", "keytab": keytab_path}
    return Security(**{**base, **extra})


# ------------------------------------------------------------------------------------------ principals


@pytest.mark.parametrize("text, parts", [
    ("hbase/_HOST@DC2.TEST", ("hbase", "_HOST", "DC2.TEST")),
    ("hbase-migration@DC1.TEST", ("hbase-migration", None, "DC1.TEST")),
    (" HTTP/nn1.example.com@EXAMPLE.COM ", ("HTTP", "nn1.example.com", "EXAMPLE.COM")),
])
def test_principals_parse_into_their_parts(text, parts):
    assert parse_principal(text, "p") == parts


@pytest.mark.parametrize("text", ["hbase/_HOST", "hbase", "a/b/c@R", "a@b@c", "", "with space@R"])
def test_a_principal_without_realm_or_malformed_is_refused_with_its_name(text):
    with pytest.raises(SecurityConfigError, match="hbase_principal"):
        parse_principal(text, "hbase_principal")


def test_host_is_expanded_to_the_canonical_lower_case_name_of_the_host_connected_to(monkeypatch):
    sec.canonical_host.cache_clear()
    monkeypatch.setattr(sec.socket, "getfqdn", lambda h: {"10.0.0.7": "RS7.dc2.example.com"}.get(h, h))
    try:
        assert server_principal("hbase/_HOST@DC2.TEST", "10.0.0.7") == "hbase/rs7.dc2.example.com@DC2.TEST"
        # Only an instance that IS _HOST is replaced, as HBase's SecurityUtil does.
        assert server_principal("hbase/fixed.example.com@DC2.TEST", "10.0.0.7") == "hbase/fixed.example.com@DC2.TEST"
        assert server_principal("zookeeper@DC1.TEST", "10.0.0.7") == "zookeeper@DC1.TEST"
    finally:
        sec.canonical_host.cache_clear()


@pytest.mark.parametrize("given, qop", [("auth", "auth"), ("authentication", "auth"), ("auth-int", "auth-int"),
                                        ("integrity", "auth-int"), ("AUTH-CONF", "auth-conf"),
                                        ("privacy", "auth-conf")])
def test_every_qop_name_hbase_accepts_is_understood(given, qop):
    assert normalize_qop(given) == qop


def test_an_unknown_qop_is_refused_naming_the_extra():
    with pytest.raises(SecurityConfigError, match=r"thrift_qop must be one of .*got 'confidential'"):
        normalize_qop("confidential")


# ------------------------------------------------------------------------------------------ Security


@pytest.mark.parametrize("extra, fragment", [
    ({"principal": "hbase-migration"}, "principal 'hbase-migration' must be a full Kerberos principal"),
    ({"principal": "hbase-migration/_HOST@DC1.TEST"}, "_HOST is expanded in server principals only"),
    ({"keytab": None}, "needs keytab"),
    ({"keytab": "/nonexistent/migration.keytab"}, "keytab /nonexistent/migration.keytab does not exist"),
    ({"krb5_conf": "/nonexistent/krb5.conf"}, "krb5_conf /nonexistent/krb5.conf does not exist"),
    ({"thrift_qop": "strong", "hbase_principal": "hbase/_HOST@DC1.TEST"}, "thrift_qop must be one of"),
    ({"thrift_qop": "auth-conf"}, "thrift_qop needs the gateways' principal"),
    ({"thrift_qop": "auth", "thrift_http": True, "hbase_principal": "hbase/_HOST@DC1.TEST"},
     "thrift_qop applies to the binary Thrift transport"),
    ({"thrift_ssl": True}, "thrift_ssl needs thrift_http"),
    ({"thrift_http": True}, "thrift_http with Kerberos needs spnego_principal"),
    ({"hbase_principal": "hbase/_HOST"}, "hbase_principal 'hbase/_HOST' must be a full Kerberos principal"),
    ({"hbase_principal": "hbase/_HOST@DC2.TEST", "spnego_principal": "HTTP/_HOST@DC1.TEST"},
     "name different realms"),
    ({"thrift_http": "yes"}, "thrift_http must be true or false"),
])
def test_every_bad_security_extra_is_refused_with_its_name_and_fix(keytab, extra, fragment):
    with pytest.raises(SecurityConfigError, match=fragment):
        secured(keytab, **extra)


def test_server_principals_and_qop_need_the_toolkits_own_principal():
    with pytest.raises(SecurityConfigError, match="zookeeper_principal is set but principal/keytab are not"):
        Security(zookeeper_principal="zookeeper/_HOST@DC1.TEST")
    with pytest.raises(SecurityConfigError, match="keytab is set without principal"):
        Security(keytab="/etc/hosts")


def test_channels_say_how_each_authenticates_and_name_no_secret(keytab):
    s = secured(keytab, hbase_principal="hbase/_HOST@DC2.TEST", zookeeper_principal="zookeeper/_HOST@DC1.TEST",
                spnego_principal="HTTP/_HOST@DC2.TEST", thrift_qop="privacy")
    assert s.channels() == {
        "kerberos": f"hbase-migration@DC1.TEST, keytab {keytab}",
        "zookeeper": "SASL GSSAPI as hbase-migration@DC1.TEST to zookeeper/_HOST@DC1.TEST",
        "thrift": "SASL GSSAPI as hbase-migration@DC1.TEST to hbase/_HOST@DC2.TEST, QOP auth-conf",
        "http": "SPNEGO as hbase-migration@DC1.TEST to HTTP/_HOST@DC2.TEST",
        "shell": "ticket cache of its own filled from the keytab as hbase-migration@DC1.TEST",
    }
    http = secured(keytab, spnego_principal="HTTP/_HOST@DC2.TEST", thrift_http=True, thrift_ssl=True)
    assert http.channels()["thrift"] == "HTTP mode, SPNEGO as hbase-migration@DC1.TEST to HTTP/_HOST@DC2.TEST, TLS"
    assert http.channels()["zookeeper"] == "plain"
    assert Security(thrift_http=True).channels()["thrift"] == "HTTP mode, no authentication, no TLS"


def test_a_cluster_decodes_security_extras_and_keeps_them_in_its_wire_form(keytab):
    extra = {"zookeeper_quorum": "zk1", "principal": "hbase-migration@DC1.TEST", "keytab": keytab,
             "hbase_principal": "hbase/_HOST@DC2.TEST", "thrift_qop": "integrity", "thrift_http": "false",
             "zookeeper_principal": "zookeeper/_HOST@DC1.TEST"}
    cluster = Cluster.from_connection("hbase_target", "thrift.dc2", 9090, extra)
    assert cluster.security.thrift_qop == "auth-int"
    assert cluster.security.thrift_sasl and cluster.security.zookeeper_sasl and not cluster.security.http_spnego
    assert Cluster.from_dict(cluster.to_dict()) == cluster
    assert cluster.to_dict()["security"]["keytab"] == keytab
    assert cluster.describe()["security"]["thrift"].endswith("QOP auth-int")


def test_an_open_cluster_stays_open_also_with_the_forms_defaults():
    plain = Cluster.from_connection("c", "h", 9090, {"zookeeper_quorum": "zk1"})
    defaults = Cluster.from_connection("c", "h", 9090, {"zookeeper_quorum": "zk1", "thrift_http": False,
                                                        "thrift_ssl": False, "ssl_verify": True})
    assert plain.security is None and defaults == plain
    assert plain.describe()["security"] == "none (open cluster)"
    assert plain.to_dict()["security"] is None


def test_a_security_error_names_the_cluster(keytab):
    with pytest.raises(ClusterConfigError, match="cluster 'hbase_target': thrift_ssl needs thrift_http"):
        Cluster.from_connection("hbase_target", "h", 9090, {"zookeeper_quorum": "zk1", "thrift_ssl": True})
    with pytest.raises(ClusterConfigError, match="ssl_ca is set but no channel uses TLS"):
        Cluster.from_connection("c", "h", 9090, {"zookeeper_quorum": "zk1", "ssl_ca": keytab,
                                                 "webhdfs_url": "http://nn:9870"})


def test_a_file_not_here_is_found_where_spark_shipped_it(tmp_path, monkeypatch, keytab):
    shipped = tmp_path / "spark-files"
    shipped.mkdir()
    (shipped / "executor.keytab").write_bytes(b"\x05\x02")
    files = types.ModuleType("pyspark.files")
    files.SparkFiles = type("SparkFiles", (), {"_root_directory": str(shipped)})
    monkeypatch.setitem(sys.modules, "pyspark.files", files)
    assert sec.local_file("/etc/security/keytabs/executor.keytab", "keytab") == str(shipped / "executor.keytab")
    # YARN localizes --files into the container's working directory.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "yarn.keytab").write_bytes(b"\x05\x02")
    assert sec.local_file("/elsewhere/yarn.keytab", "keytab") == str(tmp_path / "yarn.keytab")
    assert sec.local_file(keytab, "keytab") == keytab


# ------------------------------------------------------------------------------------------ keytab files


def test_a_keytab_lists_its_principals_never_its_keys():
    data = keytab_bytes([("hbase-migration", "DC1.TEST", 3, 18), ("hbase/localhost", "DC2.TEST", 300, 17)])
    entries = read_keytab(data)
    assert [(e.principal, e.kvno, e.enctype) for e in entries] == [
        ("hbase-migration@DC1.TEST", 3, 18), ("hbase/localhost@DC2.TEST", 300, 17)]
    assert not any(b"KKKK" in repr(e).encode() for e in entries)


def test_old_keytab_format_holes_and_garbage():
    assert [e.principal for e in read_keytab(keytab_bytes([("a/b", "R", 1, 17)], version=1))] == ["a/b@R"]
    hole = bytes([5, 2]) + struct.pack(">i", -6) + b"\0" * 6 + keytab_bytes([("a", "R", 1, 17)])[2:]
    assert [e.principal for e in read_keytab(hole)] == ["a@R"]
    with pytest.raises(SecurityConfigError, match="is not a Kerberos keytab"):
        read_keytab(b"-----BEGIN")
    with pytest.raises(SecurityConfigError, match="truncated"):
        read_keytab(keytab_bytes([("a", "R", 1, 17)])[:-10])


# ------------------------------------------------------------------------------------------ MIT's errors


@pytest.mark.parametrize("text, client, target, kind", [
    ("Clock skew too great", "m@DC1.TEST", "hbase/h@DC1.TEST", "skew"),
    ("Server krbtgt/DC2.TEST@DC1.TEST not found in Kerberos database", "m@DC1.TEST", "hbase/h@DC2.TEST",
     "no_trust"),
    ("Server hbase/h@DC2.TEST not found in Kerberos database", "m@DC1.TEST", "hbase/h@DC2.TEST", "unknown_server"),
    ("Client 'm@DC1.TEST' not found in Kerberos database", "m@DC1.TEST", None, "unknown_client"),
    ("Preauthentication failed", "m@DC1.TEST", None, "bad_key"),
    ("Cannot contact any KDC for realm 'DC1.TEST'", "m@DC1.TEST", None, "kdc_unreachable"),
    ("Cannot find KDC for realm \"DC3.TEST\"", "m@DC1.TEST", None, "no_realm"),
    ("Ticket expired", "m@DC1.TEST", "hbase/h@DC1.TEST", "expired"),
    ("Something else entirely", "m@DC1.TEST", None, "other"),
])
def test_mit_errors_are_named_with_their_cause_and_fix(text, client, target, kind):
    problem = explain(text, client, target)
    assert problem.kind == kind
    assert problem.fix


def test_a_missing_trust_names_both_realms_and_the_principal_to_create():
    problem = explain("Server krbtgt/DC2.TEST@DC1.TEST not found in Kerberos database", "m@DC1.TEST",
                      "hbase/localhost@DC2.TEST")
    assert "no cross-realm trust from DC1.TEST to DC2.TEST" in problem.cause
    assert "krbtgt/DC2.TEST@DC1.TEST" in problem.fix


# ------------------------------------------------------------------------------------------ replication


def test_a_peer_towards_another_realm_carries_the_targets_region_server_principal(keytab):
    dc1 = secured(keytab, hbase_principal="hbase/_HOST@DC1.TEST")
    dc2 = secured(keytab, hbase_principal="hbase/_HOST@DC2.TEST")
    assert peer_principal_config(dc1, dc2) == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC2.TEST"}
    assert peer_principal_config(dc1, secured(keytab, hbase_principal="hbase/_HOST@DC1.TEST")) == {}
    assert peer_principal_config(dc1, None) == {}
    assert peer_principal_config(None, dc2) == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC2.TEST"}
    assert peer_principal_config(dc1, secured(keytab)) == {}  # target servers' principal unknown: nothing to say


def test_migration_peer_config_puts_it_in_config(keytab):
    from hbase_migration.migration.preflight import migration_peer_config

    src = Cluster("src", "h", ("zk1",), security=secured(keytab, hbase_principal="hbase/_HOST@DC1.TEST"))
    dst = Cluster("dst", "h", ("zk2",), security=secured(keytab, hbase_principal="hbase/_HOST@DC2.TEST"))
    config = migration_peer_config(dst, ["t"], source=src)
    assert config.configuration == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC2.TEST"}
    assert config != migration_peer_config(dst, ["t"], source=dst)  # "another config" for a peer without it
    plain = Cluster("p", "h", ("zk3",))
    assert migration_peer_config(plain, ["t"], source=src).configuration == {}


# ------------------------------------------------------------------------------------------ SASL


def test_the_security_layer_answer_takes_the_wanted_qop_with_the_authorization_id():
    qop, reply = security_layer_reply(bytes([4]) + (65536).to_bytes(3, "big"), ["auth-conf"], "m@DC1.TEST", "gw")
    assert qop == "auth-conf"
    assert reply == bytes([4]) + (0xFFFFFF).to_bytes(3, "big") + b"m@DC1.TEST"
    qop, reply = security_layer_reply(bytes([7, 0, 0, 0]), ["auth"], "m@DC1.TEST", "zk")
    assert (qop, reply) == ("auth", bytes([1, 0, 0, 0]) + b"m@DC1.TEST")  # no layer: max buffer 0 (RFC 4752)


def test_a_gateway_offering_another_qop_is_refused_naming_both():
    with pytest.raises(QopMismatch, match=r"gw offers SASL QOP auth-int but the connection asks for auth-conf"):
        security_layer_reply(bytes([2, 1, 0, 0]), ["auth-conf"], "m@R", "gw")
    with pytest.raises(SaslError, match="not 4"):
        security_layer_reply(b"\x04\x00", ["auth"], "m@R", "gw")


def test_thrift_sasl_negotiation_messages_are_status_length_payload():
    assert negotiation_message(1, b"GSSAPI") == b"\x01\x00\x00\x00\x06GSSAPI"
    assert negotiation_message(5, b"") == b"\x05\x00\x00\x00\x00"
