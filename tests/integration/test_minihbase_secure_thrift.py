"""The Thrift1 and Thrift2 gateways of a secured cluster in binary mode: SASL GSSAPI (Thrift's TSaslTransport
framing) with the cluster's QOP, each frame wrapped for auth-int / auth-conf. Every refusal: a plain client, a
QOP the gateway does not offer (either side noticing), a ticket for another service, another authzid, another
mechanism, a frame without the negotiated protection."""
from __future__ import annotations

import socket
import struct
import uuid
from pathlib import Path

import pytest
import thriftpy2

from bedkit.security.stack import INTRUDER, TOOLKIT
from tests.secure_thrift_clients import BAD, ERROR, SaslClientTransport, SaslFailed, thrift_client

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
T1 = thriftpy2.load(str(REPO / "bedkit" / "Hbase.thrift"), module_name="secure_t1_hbase_thrift")
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="secure_t2_hbase2_thrift")


def _open(cluster, creds, kind="thrift2", qop=None, principal=None, **kwargs) -> SaslClientTransport:
    gateway = cluster.endpoints[kind]
    return SaslClientTransport(gateway["host"], gateway["port"], creds,
                               principal or f"hbase/localhost@{cluster.security['realm']}",
                               qop=qop or cluster.security["thrift_qop"], **kwargs).open()


def _put_get(cluster, creds, qop=None) -> None:
    """A put and a get through the Thrift2 gateway, a table listing through the Thrift1 gateway."""
    table = f"sasl_{uuid.uuid4().hex[:6]}"
    cluster.create_table(table, {"cf": {}})
    transport = _open(cluster, creds, "thrift2", qop)
    try:
        client = thrift_client(T2.THBaseService, transport)
        client.put(table.encode(), T2.TPut(row=b"r1", columnValues=[
            T2.TColumnValue(family=b"cf", qualifier=b"q", value=b"v", timestamp=1234)]))
        result = client.get(table.encode(), T2.TGet(row=b"r1"))
        assert [(c.value, c.timestamp) for c in result.columnValues] == [(b"v", 1234)]
    finally:
        transport.close()
    transport = _open(cluster, creds, "thrift", qop)
    try:
        assert table.encode() in thrift_client(T1.Hbase, transport).getTableNames()
    finally:
        transport.close()


def test_both_gateways_serve_an_authenticated_client_with_auth_conf(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    assert dc1.security["thrift_qop"] == "auth-conf"
    _put_get(dc1, gss_credentials(TOOLKIT))


@pytest.mark.parametrize("qop", ["auth", "auth-int"])
def test_the_other_qops_serve_a_client_asking_for_them(secure_cluster_factory, gss_credentials, qop):
    cluster = secure_cluster_factory("dc1", "DC1.TEST", thrift_qop=qop)
    creds = gss_credentials(TOOLKIT)
    _put_get(cluster, creds)
    transport = _open(cluster, creds)
    assert transport.offered == {qop}  # the gateway offers exactly its one QOP
    transport.close()


def test_the_qop_may_be_named_as_hbase_19118_does(secure_cluster_factory, gss_credentials):
    cluster = secure_cluster_factory("dc1", "DC1.TEST", thrift_qop="integrity")
    assert cluster.security["thrift_qop"] == "integrity"
    assert cluster.endpoints["connection"]["extra"]["thrift_qop"] == "auth-int"
    _put_get(cluster, gss_credentials(TOOLKIT), qop="auth-int")


def test_a_plain_thrift_client_is_refused(secure_pair):
    """A binary-protocol call where a SASL START is expected: TSaslTransport answers ERROR and closes."""
    dc1, _ = secure_pair
    for kind in ("thrift", "thrift2"):
        gateway = dc1.endpoints[kind]
        with socket.create_connection((gateway["host"], gateway["port"]), timeout=10) as sock:
            name = b"getTableNames"
            sock.sendall(struct.pack(">I", 0x80010001) + struct.pack(">i", len(name)) + name
                         + struct.pack(">i", 1) + b"\x00")
            header = sock.recv(5, socket.MSG_WAITALL)
            assert header[0] == ERROR
            message = sock.recv(struct.unpack(">I", header[1:])[0], socket.MSG_WAITALL)
            assert message == b"Invalid status -128"
            assert sock.recv(1) == b""  # closed


def test_a_client_wanting_another_qop_fails_the_handshake(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    creds = gss_credentials(TOOLKIT)
    with pytest.raises(SaslFailed, match="No common protection layer between client and server"):
        _open(dc1, creds, qop="auth-int")  # the client notices (the gateway offers auth-conf only)
    with pytest.raises(SaslFailed) as refused:
        _open(dc1, creds, qop="auth", force_qop=True)  # a client choosing it anyway: the gateway refuses
    assert (refused.value.status, refused.value.message) == (BAD, "Client selected unsupported protection: 1")


def test_a_ticket_for_another_service_fails_the_handshake(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    with pytest.raises(SaslFailed) as refused:
        _open(dc1, gss_credentials(TOOLKIT), principal="HTTP/localhost@DC1.TEST")
    assert (refused.value.status, refused.value.message) == (BAD, "GSS initiate failed")


def test_a_client_may_not_claim_another_identity(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    with pytest.raises(SaslFailed) as refused:
        _open(dc1, gss_credentials(INTRUDER), authzid="hbase@DC1.TEST")
    assert refused.value.message == "intruder@DC1.TEST is not authorized to connect as hbase@DC1.TEST"


def test_only_gssapi_is_spoken(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    with pytest.raises(SaslFailed) as refused:
        _open(dc1, gss_credentials(TOOLKIT), mechanism="PLAIN")
    assert refused.value.message == "Unsupported mechanism type PLAIN"


def test_a_frame_without_confidentiality_is_refused_on_auth_conf(secure_pair, gss_credentials):
    dc1, _ = secure_pair
    transport = _open(dc1, gss_credentials(TOOLKIT), "thrift2")
    client = thrift_client(T2.THBaseService, transport)
    assert client.getThriftServerType() == T2.TThriftServerType.TWO  # an encrypted call goes through
    transport.write(b"\x80\x01\x00\x01\x00\x00\x00\x13getThriftServerType\x00\x00\x00\x02\x00")
    transport.flush(encrypt=False)  # integrity only
    with pytest.raises((EOFError, ConnectionResetError)):
        transport.read(4)
    transport.close()
