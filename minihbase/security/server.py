"""The security of one secured minihbase cluster (`ClusterConfig.security`), inside its `serve` process.

`ClusterSecurity.install(cluster)` secures every channel the cluster serves, with no bypass:
- ZooKeeper: the master, region servers and replication connect with SASL GSSAPI as the hbase service
  principal (`new_zk_client`), creating znodes with HBase's ACLs;
- the master's info port (control API, `/jmx`, `/conf`) and WebHDFS: SPNEGO as the HTTP principal, on every
  route (`HttpServer.authenticator`); the control API's changes need a superuser (AccessController's texts);
- each region server: its info port (`/jmx`, `/conf`, ...) SPNEGO as the HTTP principal, its RPC port
  (`replicateWALEntry`) SPNEGO as the hbase principal, for superusers only (the peers' `hbase` principals);
- the master's RPC port: SPNEGO as the hbase principal;
- the Thrift gateways: binary SASL GSSAPI with the QOP, or HTTP mode with SPNEGO (and TLS)
  (`minihbase.security.thrift_sasl`, `minihbase.security.thrift_http`).

The serve process runs one cluster, so it points its Kerberos library at the cluster's krb5.conf (KRB5_CONFIG)
and, like each HBase daemon with its own krb5.conf, takes its own realm as the default realm of auth_to_local.
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from bedkit.security import gss, names
from bedkit.security import zk as secure_zk
from minihbase.security.authz import Authorizer
from minihbase.security.settings import SecuritySettings
from minihbase.security.spnego import SpnegoAuthenticator

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster
    from minihbase.config import ClusterConfig
    from minihbase.regionserver import RegionServer

log = logging.getLogger(__name__)


class ClusterSecurity:
    def __init__(self, config: "ClusterConfig"):
        self.name = config.name
        self.host = config.host
        self.settings = s = SecuritySettings.from_dict(config.name, config.security)
        s.check_files(config.name)
        os.environ["KRB5_CONFIG"] = s.krb5_conf
        self.rules = names.parse_rules(s.auth_to_local)
        self.hbase_principal = gss.expand_host(s.hbase_principal, config.host)
        self.spnego_principal = gss.expand_host(s.spnego_principal, config.host)
        self.authorizer = Authorizer(s.superusers)
        self.znode_parent = config.znode_parent
        # Checked once at start: a keytab without its principal fails the start, naming both.
        gss.acceptor_credentials(self.hbase_principal, s.hbase_keytab)
        gss.acceptor_credentials(self.spnego_principal, s.spnego_keytab)

    # ------------------------------------------------------------------------------------------ identities
    def short_name(self, principal: str) -> str:
        return names.short_name(principal, self.rules, self.settings.realm)

    def client_credentials(self):
        """This cluster's servers as Kerberos clients (replication to a peer): the hbase principal's keytab."""
        return gss.keytab_credentials(self.hbase_principal, self.settings.hbase_keytab)

    def zk_client(self, hosts: str, timeout: float):
        return secure_zk.secure_client(hosts, timeout, self.znode_parent, self.settings.superusers,
                                       self.settings.zookeeper_principal, self.hbase_principal,
                                       self.settings.hbase_keytab)

    SINK_PRINCIPAL_KEY = "hbase.regionserver.kerberos.principal"

    def replication_auth(self, peer_configuration: dict[str, str], host: str) -> dict[str, str]:
        """`Authorization` of a shipment to a peer's region server at `host`: this region server's own ticket
        (hbase/<host>@<this realm>, from its keytab) for the sink's principal, which is the peer CONFIG's
        `hbase.regionserver.kerberos.principal` when set (HBASE-15294), else this cluster's own pattern (as HBase
        assumes the peer's servers share it: across realms that ticket is refused by the sink)."""
        target = self._sink_principal(peer_configuration, host)
        try:
            return {"Authorization": gss.negotiate_header(self.client_credentials(), target, mech=gss.KRB5)}
        except gss.KerberosError as e:
            raise gss.KerberosError(f"{e}; {self.replication_auth_note(peer_configuration, host)}") from None

    def _sink_principal(self, peer_configuration: dict[str, str], host: str) -> str:
        pattern = peer_configuration.get(self.SINK_PRINCIPAL_KEY) or self.settings.hbase_principal
        return gss.expand_host(pattern, host)

    def replication_auth_note(self, peer_configuration: dict[str, str], host: str) -> str:
        """Which ticket a shipment presents and why, for the source's log (an operator's next step)."""
        target = self._sink_principal(peer_configuration, host)
        if peer_configuration.get(self.SINK_PRINCIPAL_KEY):
            origin = f"the peer's CONFIG {self.SINK_PRINCIPAL_KEY}"
        else:
            origin = (f"this cluster's own pattern: the peer's CONFIG has no {self.SINK_PRINCIPAL_KEY}; set it to "
                      "the peer cluster's region server principal (add_peer ... CONFIG => {...})")
        return f"shipped as {self.hbase_principal} to the sink principal {target} ({origin})"

    # ------------------------------------------------------------------------------------------ HTTP
    def spnego(self, policy=None, json_errors: bool = False) -> SpnegoAuthenticator:
        """Hadoop's web authentication filter: tickets for the HTTP principal."""
        return SpnegoAuthenticator(self.spnego_principal, self.settings.spnego_keytab, self.short_name, policy,
                                   json_errors)

    def rpc(self, policy=None) -> SpnegoAuthenticator:
        """HBase's RPC ports (minihbase's run over HTTP): tickets for the hbase principal."""
        return SpnegoAuthenticator(self.hbase_principal, self.settings.hbase_keytab, self.short_name, policy,
                                   json_errors=True)

    # ------------------------------------------------------------------------------------------ Thrift
    def thrift_transport(self, gateway, client, processor):
        """The transport of a new gateway connection once the client authenticated (binary SASL with the QOP),
        or None when the connection is done: refused, or served whole in HTTP mode."""
        from minihbase.security.thrift_sasl import SaslRefused, TSaslServerTransport

        if self.settings.thrift_http:
            from minihbase.security.thrift_http import serve_connection

            serve_connection(gateway, client, processor, self._thrift_http_creds, self._tls)
            return None

        transport = TSaslServerTransport(client, self.settings.thrift_qop)
        try:
            principal = transport.negotiate(self._thrift_creds)
        except SaslRefused as e:
            log.info("%s gateway %d refused a client: %s", gateway.kind, gateway.index, e)
            return None
        log.debug("%s gateway %d: %s authenticated (QOP %s)", gateway.kind, gateway.index, principal,
                  self.settings.thrift_qop)
        return transport

    def install(self, cluster: "MiniHBaseCluster") -> None:
        # Binary mode: the gateways' principal is the hbase one (hbase.thrift.kerberos.principal); HTTP mode: the
        # SPNEGO one (hbase.thrift.spnego.principal), with TLS from the certificate and key when configured.
        self._thrift_creds = gss.acceptor_credentials(self.hbase_principal, self.settings.hbase_keytab)
        self._thrift_http_creds = gss.acceptor_credentials(self.spnego_principal, self.settings.spnego_keytab)
        self._tls = None
        if self.settings.thrift_ssl:
            from minihbase.security.thrift_http import tls_context

            self._tls = tls_context(self.settings.ssl_cert, self.settings.ssl_key)
        cluster.control.authenticator = self.spnego(self.authorizer.control_policy, json_errors=True)
        cluster.webhdfs.authenticator = self.spnego()
        cluster.master.rpc.authenticator = self.rpc()
        cluster.rs_init_hooks.append(self._secure_region_server)
        log.info("cluster %s secured: realm %s, services %s and %s, Thrift %s", self.name, self.settings.realm,
                 self.hbase_principal, self.spnego_principal, self.thrift_mode)

    def _secure_region_server(self, rs: "RegionServer") -> None:
        rs.info.authenticator = self.spnego()
        rs.rpc.authenticator = self.rpc(self.authorizer.replication_policy)

    # ------------------------------------------------------------------------------------------ views
    @property
    def thrift_mode(self) -> str:
        s = self.settings
        if s.thrift_http:
            return "HTTP with SPNEGO" + (" over TLS" if s.thrift_ssl else "")
        return f"binary SASL GSSAPI, QOP {s.thrift_qop}"

    def describe(self) -> dict:
        """The cluster's entry `security` of `endpoints --json`."""
        s = self.settings
        return {"realm": s.realm, "krb5_conf": s.krb5_conf, "hbase_principal": s.hbase_principal,
                "spnego_principal": s.spnego_principal, "zookeeper_principal": s.zookeeper_principal,
                "hbase_keytab": s.hbase_keytab, "spnego_keytab": s.spnego_keytab, "superusers": s.superusers,
                "auth_to_local": s.auth_to_local, "thrift_qop": s.thrift_qop, "thrift_http": s.thrift_http,
                "thrift_ssl": s.thrift_ssl, "ssl_ca": s.ssl_ca}

    def connection_extras(self) -> dict:
        """The security extras of the cluster's Airflow connection (the contract's names)."""
        s = self.settings
        extra = {"krb5_conf": s.krb5_conf, "hbase_principal": s.hbase_principal,
                 "spnego_principal": s.spnego_principal, "zookeeper_principal": s.zookeeper_principal}
        if s.client_principal:
            extra["principal"] = s.client_principal
        if s.client_keytab:
            extra["keytab"] = s.client_keytab
        if s.thrift_http:
            extra["thrift_http"] = True
            if s.thrift_ssl:
                extra["thrift_ssl"] = True
                if s.ssl_ca:
                    extra["ssl_ca"] = s.ssl_ca
        else:
            extra["thrift_qop"] = s.thrift_qop
        return extra
