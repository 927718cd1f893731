"""A secured cluster's settings (`ClusterConfig.security`, a table `[clusters.<name>.security]` in a clusters
file), validated, each named after the hbase-site / core-site key it stands for.

    realm                 the cluster's Kerberos realm (DC1.TEST)
    krb5_conf             the krb5.conf its processes use (KRB5_CONFIG; java.security.krb5.conf)
    hbase_principal       hbase.regionserver.kerberos.principal / hbase.master.kerberos.principal and the Thrift
                          gateways' hbase.thrift.kerberos.principal (default hbase/_HOST@<realm>)
    hbase_keytab          their keytab (hbase.regionserver.keytab.file, hbase.thrift.keytab.file)
    spnego_principal      hbase.security.authentication.spnego.kerberos.principal, hbase.thrift.spnego.principal,
                          dfs.web.authentication.kerberos.principal (default HTTP/_HOST@<realm>)
    spnego_keytab         its keytab
    zookeeper_principal   the ZooKeeper servers' principal the cluster's clients ask tickets for
    superusers            hbase.superuser (short names; the service user `hbase` always is one)
    auth_to_local         hadoop.security.auth_to_local (Hadoop's rule syntax; default DEFAULT)
    thrift_qop            hbase.thrift.security.qop: auth | auth-int | auth-conf (or authentication | integrity |
                          privacy): binary Thrift over SASL GSSAPI
    thrift_http           hbase.regionserver.thrift.http: Thrift over HTTP with SPNEGO per request
    thrift_ssl            hbase.thrift.ssl.enabled (HTTP mode): TLS with ssl_cert / ssl_key (ssl_ca: the CA)
    client_principal / client_keytab   the toolkit's own, only advertised by `endpoints` (connection extras)

Paths are checked when the cluster starts (a clusters file names them before `up --secure` creates them).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bedkit.security.names import BadRules, parse_rules

QOP_NAMES = {"auth": "auth", "auth-int": "auth-int", "auth-conf": "auth-conf",
             "authentication": "auth", "integrity": "auth-int", "privacy": "auth-conf"}
QOP_BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}


class SecurityConfigError(ValueError):
    """A security setting is invalid; the message names it and the fix."""


@dataclass
class SecuritySettings:
    realm: str
    krb5_conf: str = ""
    hbase_principal: str = ""
    hbase_keytab: str = ""
    spnego_principal: str = ""
    spnego_keytab: str = ""
    zookeeper_principal: str = ""
    superusers: list[str] = field(default_factory=list)
    auth_to_local: str = "DEFAULT"
    thrift_qop: str | None = None
    thrift_http: bool = False
    thrift_ssl: bool = False
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_ca: str | None = None
    client_principal: str | None = None
    client_keytab: str | None = None

    def __post_init__(self) -> None:
        self.hbase_principal = self.hbase_principal or f"hbase/_HOST@{self.realm}"
        self.spnego_principal = self.spnego_principal or f"HTTP/_HOST@{self.realm}"
        self.zookeeper_principal = self.zookeeper_principal or f"zookeeper/_HOST@{self.realm}"
        if self.thrift_qop is not None:
            self.thrift_qop = QOP_NAMES.get(str(self.thrift_qop).lower(), self.thrift_qop)

    @classmethod
    def from_dict(cls, cluster: str, data: dict[str, Any]) -> "SecuritySettings":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise SecurityConfigError(f"{cluster}: unknown security setting(s) {', '.join(sorted(unknown))}; "
                                      f"known: {', '.join(sorted(known))}")
        if not data.get("realm"):
            raise SecurityConfigError(f"{cluster}: security.realm is required (e.g. realm = \"DC1.TEST\")")
        settings = cls(**data)
        settings.validate(cluster)
        return settings

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self, cluster: str) -> None:
        realm = self.realm
        if not isinstance(realm, str) or realm != realm.upper() or "@" in realm or "/" in realm:
            raise SecurityConfigError(f"{cluster}: security.realm must be an upper-case realm such as DC1.TEST, "
                                      f"got {realm!r}")
        for key in ("hbase_principal", "spnego_principal", "zookeeper_principal"):
            value = getattr(self, key)
            if not isinstance(value, str) or "@" not in value or value.endswith("@"):
                raise SecurityConfigError(f"{cluster}: security.{key} must name its realm (service/_HOST@REALM), "
                                          f"got {value!r}")
        if not isinstance(self.superusers, list) or not all(isinstance(u, str) and u for u in self.superusers):
            raise SecurityConfigError(f"{cluster}: security.superusers must be a list of short user names, "
                                      f"got {self.superusers!r}")
        try:
            parse_rules(self.auth_to_local)
        except BadRules as e:
            raise SecurityConfigError(f"{cluster}: security.auth_to_local: {e}") from None
        if self.thrift_qop is not None and self.thrift_qop not in QOP_BITS:
            raise SecurityConfigError(f"{cluster}: security.thrift_qop must be auth, auth-int or auth-conf "
                                      f"(or authentication, integrity, privacy), got {self.thrift_qop!r}")
        for key in ("thrift_http", "thrift_ssl"):
            if not isinstance(getattr(self, key), bool):
                raise SecurityConfigError(f"{cluster}: security.{key} must be true or false")
        if self.thrift_http and self.thrift_qop is not None:
            raise SecurityConfigError(f"{cluster}: security.thrift_qop applies to binary Thrift (SASL) and "
                                      "thrift_http to HTTP mode (SPNEGO): set one of them")
        if self.thrift_qop is None and not self.thrift_http:
            raise SecurityConfigError(f"{cluster}: a secured cluster's Thrift gateways need security.thrift_qop "
                                      "(binary SASL) or security.thrift_http = true (SPNEGO): an unauthenticated "
                                      "gateway acting as the hbase user would bypass Kerberos")
        if self.thrift_ssl and not self.thrift_http:
            raise SecurityConfigError(f"{cluster}: security.thrift_ssl needs thrift_http = true (TLS is served "
                                      "in HTTP mode)")
        if self.thrift_ssl and not (self.ssl_cert and self.ssl_key):
            raise SecurityConfigError(f"{cluster}: security.thrift_ssl needs ssl_cert and ssl_key")

    def check_files(self, cluster: str) -> None:
        """At start: every file named exists (a missing keytab is a clear error, not a GSSAPI riddle)."""
        paths = {"krb5_conf": self.krb5_conf, "hbase_keytab": self.hbase_keytab, "spnego_keytab": self.spnego_keytab}
        if self.thrift_ssl:
            paths.update(ssl_cert=self.ssl_cert, ssl_key=self.ssl_key)
        for key, path in paths.items():
            if not path or not Path(path).is_file():
                raise SecurityConfigError(f"{cluster}: security.{key} {path!r} is not a file (run `python -m "
                                          "minihbase up --secure`, which creates the KDC's keytabs and certificates)")

    @property
    def qop_bit(self) -> int:
        return QOP_BITS[self.thrift_qop] if self.thrift_qop else 0
