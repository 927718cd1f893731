"""The Thrift gateways in HTTP mode: a POST per call with SPNEGO (as HBase's ThriftHttpServlet), over TLS with
minihbase's CA and server certificate (SAN localhost, 127.0.0.1). dc2 runs it in DC2.TEST; the toolkit reaches it
from DC1.TEST through the cross-realm trust."""
from __future__ import annotations

import socket
import ssl
import uuid
from pathlib import Path

import pytest
import requests
import thriftpy2

from bedkit.security.stack import TOOLKIT
from tests.secure_thrift_clients import HttpRefused, HttpSpnegoTransport, thrift_client

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
T1 = thriftpy2.load(str(REPO / "bedkit" / "Hbase.thrift"), module_name="secure_http_t1_hbase_thrift")
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="secure_http_t2_hbase2_thrift")


def _url(cluster, kind="thrift2", host="localhost") -> str:
    scheme = "https" if cluster.security["thrift_ssl"] else "http"
    return f"{scheme}://{host}:{cluster.endpoints[kind]['port']}/"


def _transport(cluster, creds, kind="thrift2", host="localhost", principal=None) -> HttpSpnegoTransport:
    return HttpSpnegoTransport(_url(cluster, kind, host), creds,
                               principal or f"HTTP/localhost@{cluster.security['realm']}",
                               ca=cluster.security.get("ssl_ca"))


def _round_trip(cluster, creds, host="localhost") -> None:
    table = f"http_{uuid.uuid4().hex[:6]}"
    cluster.create_table(table, {"cf": {}})
    client = thrift_client(T2.THBaseService, _transport(cluster, creds, "thrift2", host))
    client.put(table.encode(), T2.TPut(row=b"r1", columnValues=[
        T2.TColumnValue(family=b"cf", qualifier=b"q", value=b"v", timestamp=777)]))
    assert [(c.value, c.timestamp) for c in client.get(table.encode(), T2.TGet(row=b"r1")).columnValues] == \
        [(b"v", 777)]
    assert table.encode() in thrift_client(T1.Hbase, _transport(cluster, creds, "thrift", host)).getTableNames()


def test_both_gateways_serve_spnego_over_tls_across_realms(secure_pair, gss_credentials):
    _, dc2 = secure_pair
    assert dc2.security["thrift_http"] and dc2.security["thrift_ssl"]
    creds = gss_credentials(TOOLKIT)  # DC1.TEST -> HTTP/localhost@DC2.TEST through the trust
    _round_trip(dc2, creds, host="localhost")
    _round_trip(dc2, creds, host="127.0.0.1")  # the certificate names both


def test_the_connection_names_http_mode_tls_and_the_ca(secure_pair, secure_stack):
    dc1, dc2 = secure_pair
    extra = dc2.endpoints["connection"]["extra"]
    assert {k: extra[k] for k in ("thrift_http", "thrift_ssl", "ssl_ca", "spnego_principal", "hbase_principal")} == {
        "thrift_http": True, "thrift_ssl": True, "ssl_ca": str(secure_stack.tls.ca),
        "spnego_principal": "HTTP/_HOST@DC2.TEST", "hbase_principal": "hbase/_HOST@DC2.TEST"}
    assert "thrift_qop" not in extra
    assert dc1.endpoints["connection"]["extra"]["thrift_qop"] == "auth-conf"
    for key in ("thrift_http", "thrift_ssl", "ssl_ca"):
        assert key not in dc1.endpoints["connection"]["extra"]


def test_a_call_without_a_ticket_is_401_negotiate(secure_pair):
    _, dc2 = secure_pair
    with pytest.raises(HttpRefused) as refused:
        thrift_client(T2.THBaseService, _transport(dc2, None)).getThriftServerType()
    assert refused.value.status == 401
    assert refused.value.headers["WWW-Authenticate"] == "Negotiate"


def test_a_ticket_for_another_principal_is_401_with_the_reason(secure_pair, gss_credentials):
    _, dc2 = secure_pair
    url = _url(dc2)
    for principal in ("hbase/localhost@DC2.TEST", "HTTP/localhost@DC1.TEST"):
        import gssapi
        from requests_gssapi import DISABLED, HTTPSPNEGOAuth

        auth = HTTPSPNEGOAuth(creds=gss_credentials(TOOLKIT), target_name=gssapi.Name(
            principal, gssapi.NameType.kerberos_principal), mutual_authentication=DISABLED, opportunistic_auth=True)
        response = requests.post(url, data=b"\x80\x01", auth=auth, verify=dc2.security["ssl_ca"], timeout=10,
                                 headers={"Content-Type": "application/x-thrift"})
        assert response.status_code == 401, principal
        assert response.headers["WWW-Authenticate"] == "Negotiate"
        assert "Authentication Error: org.apache.hadoop.hbase.thrift.HttpAuthenticationException: Kerberos " \
               "authentication failed" in response.text


def test_a_client_without_tls_or_without_the_ca_is_refused(secure_pair, gss_credentials):
    _, dc2 = secure_pair
    port = dc2.endpoints["thrift2"]["port"]
    with pytest.raises(requests.exceptions.ConnectionError):  # plain HTTP to the TLS port
        requests.post(f"http://localhost:{port}/", data=b"x", timeout=10)
    with pytest.raises(requests.exceptions.SSLError):  # the system's CAs do not know minihbase's
        requests.post(f"https://localhost:{port}/", data=b"x", timeout=10)
    context = ssl.create_default_context(cafile=dc2.security["ssl_ca"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_only_post_is_served(secure_pair):
    _, dc2 = secure_pair
    response = requests.get(_url(dc2), verify=dc2.security["ssl_ca"], timeout=10)
    assert response.status_code == 405


def test_http_mode_without_tls(secure_cluster_factory, gss_credentials):
    cluster = secure_cluster_factory("dc2", "DC2.TEST", thrift_http=True)
    assert cluster.endpoints["connection"]["extra"]["thrift_http"] is True
    assert "thrift_ssl" not in cluster.endpoints["connection"]["extra"]
    _round_trip(cluster, gss_credentials(TOOLKIT))


def test_a_stopped_gateway_drops_its_tls_connections_and_serves_again_once_started(secure_cluster_factory,
                                                                                   gss_credentials):
    cluster = secure_cluster_factory("dc2", "DC2.TEST", thrift_http=True, thrift_ssl=True)
    transport = _transport(cluster, gss_credentials(TOOLKIT))  # one keep-alive TLS connection for every call
    client = thrift_client(T2.THBaseService, transport)
    assert client.getThriftServerType() == T2.TThriftServerType.TWO
    cluster.stop_gateway("thrift2", 0)
    with pytest.raises(requests.exceptions.ConnectionError):
        client.getThriftServerType()
    cluster.start_gateway("thrift2", 0)
    assert thrift_client(T2.THBaseService, _transport(cluster, gss_credentials(TOOLKIT))).getThriftServerType() == \
        T2.TThriftServerType.TWO
