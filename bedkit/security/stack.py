"""Everything a pair of secured clusters runs on, as HBase's own tests set it up around MiniKdc: a real MIT KDC
with two realms, every principal and keytab of the security contract, a CA and server certificate, and one
SASL-secured ZooKeeper both clusters share (in DC1, znode parents /hbase-dc1, /hbase-dc2).

    stack = SecureStack(workdir).start()          # KDC, keytabs, TLS files, ZooKeeper (KRB5_CONFIG set here)
    security = stack.cluster_security("DC1.TEST", thrift_qop="auth-conf")   # ClusterConfig.security
    cluster = MiniCluster.start(stack.zookeeper.hosts, workdir, name="dc1", security=security)
    env = stack.kinit("hbase@DC1.TEST", tmp / "cc")   # KRB5CCNAME + KRB5_CONFIG for `hbase shell`
    stack.stop()

Principals (host part: the canonical name of 127.0.0.1, `localhost`):
    hbase/localhost@<realm>, HTTP/localhost@<realm>   each realm's services (their own keytabs)
    zookeeper/localhost@DC1.TEST                      the ZooKeeper server
    hbase-migration@DC1.TEST                          the toolkit; a superuser of both clusters
    hbase@<realm>                                     each realm's HBase admin (an operator's `hbase shell`)
    intruder@DC1.TEST                                 authenticated, authorized for nothing

`cross_realm=False` leaves DC1's principals without any path into DC2 (no krbtgt/DC2.TEST@DC1.TEST): the
toolkit and dc1's replication cannot reach dc2. DC2's principals still reach DC1 (krbtgt/DC1.TEST@DC2.TEST, a
one-way trust), because dc2's servers use the ZooKeeper that lives in DC1.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from bedkit.kdc import Kdc
from bedkit.security import gss, tls
from bedkit.security.names import cross_realm_rules
from bedkit.zookeeper import ZooKeeperSasl, ZooKeeperServer

REALMS = ("DC1.TEST", "DC2.TEST")
ZK_REALM = "DC1.TEST"
TOOLKIT = "hbase-migration@DC1.TEST"
INTRUDER = "intruder@DC1.TEST"
SUPERUSERS = ["hbase-migration"]


class SecureStack:
    def __init__(self, workdir: Path, ticket_lifetime_s: int = 3600, renew_lifetime_s: int = 86400,
                 cross_realm: bool = True, zookeeper_port: int | None = None, host: str = "127.0.0.1"):
        self.dir = Path(workdir)
        self.host = host
        self.host_name = gss.canonical_host(host)
        self.ticket_lifetime_s = ticket_lifetime_s
        self.renew_lifetime_s = renew_lifetime_s
        self.cross_realm = cross_realm
        self.zookeeper_port = zookeeper_port
        trusts = True if cross_realm else [(r, ZK_REALM) for r in REALMS if r != ZK_REALM]
        self.kdc = Kdc(self.dir / "kdc", REALMS, cross_realm=trusts, ticket_lifetime_s=ticket_lifetime_s,
                       renew_lifetime_s=renew_lifetime_s)
        self.zookeeper: ZooKeeperServer | None = None
        self.tls: tls.TlsFiles | None = None
        self._previous_krb5_config: str | None = None

    # ------------------------------------------------------------------------------------------ names
    def service_principal(self, service: str, realm: str) -> str:
        return f"{service}/{self.host_name}@{realm}"

    @property
    def zookeeper_principal(self) -> str:
        return self.service_principal("zookeeper", ZK_REALM)

    @property
    def krb5_conf(self) -> Path:
        return self.kdc.krb5_conf

    def keytab_path(self, principal: str) -> Path:
        """Where `principal`'s keytab is (created by `start`)."""
        safe = principal.replace("/", "_").replace("@", "-at-")
        return self.dir / "keytabs" / f"{safe}.keytab"

    def principals(self) -> dict[str, list[str]]:
        """Every principal of the contract, by role."""
        return {
            "toolkit": [TOOLKIT], "intruder": [INTRUDER], "zookeeper": [self.zookeeper_principal],
            "admin": [f"hbase@{r}" for r in REALMS],
            "hbase_service": [self.service_principal("hbase", r) for r in REALMS],
            "spnego_service": [self.service_principal("HTTP", r) for r in REALMS],
        }

    def env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    # ------------------------------------------------------------------------------------------ lifecycle
    def _options(self) -> dict:
        return {"realms": list(REALMS), "cross_realm": self.cross_realm, "ticket_lifetime_s": self.ticket_lifetime_s,
                "renew_lifetime_s": self.renew_lifetime_s, "host": self.host_name}

    def start(self, timeout: float = 30.0) -> "SecureStack":
        """Start the KDC (realms and trusts created once per workdir; other options start a fresh KDC), export
        every keytab, generate the TLS files and start the secure ZooKeeper. Sets KRB5_CONFIG in this process."""
        options_file = self.dir / "stack.json"
        if options_file.exists() and json.loads(options_file.read_text()) != self._options():
            shutil.rmtree(self.dir / "kdc", ignore_errors=True)  # realms, trusts and lifetimes are set at creation
            shutil.rmtree(self.dir / "keytabs", ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.kdc.start()
        try:
            options_file.write_text(json.dumps(self._options(), indent=1))
            self._previous_krb5_config = os.environ.get("KRB5_CONFIG")
            os.environ["KRB5_CONFIG"] = str(self.krb5_conf)
            for principals in self.principals().values():
                for principal in principals:
                    self.kdc.keytab([principal], self.keytab_path(principal))
            self.tls = tls.generate(self.dir / "tls")
            zk_rules = cross_realm_rules([r for r in REALMS if r != ZK_REALM])
            self.zookeeper = ZooKeeperServer(
                self.dir / "zookeeper", port=self.zookeeper_port, sasl=ZooKeeperSasl(
                    self.zookeeper_principal, self.keytab_path(self.zookeeper_principal), self.krb5_conf,
                    zk_rules, root_writers=["hbase", *SUPERUSERS]))
            self.zookeeper.start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.zookeeper is not None:
            self.zookeeper.stop()
        self.kdc.stop()
        if self._previous_krb5_config is None:
            os.environ.pop("KRB5_CONFIG", None)
        else:
            os.environ["KRB5_CONFIG"] = self._previous_krb5_config

    def __enter__(self) -> "SecureStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------------ clusters
    def cluster_security(self, realm: str, thrift_qop: str | None = None, thrift_http: bool = False,
                         thrift_ssl: bool = False, **overrides) -> dict:
        """`ClusterConfig.security` for a cluster of `realm`: its service principals and keytabs, the shared
        ZooKeeper's principal, the toolkit as superuser, auth_to_local for the other realms, and the Thrift
        gateways' mode (binary SASL with `thrift_qop`, or `thrift_http` with SPNEGO, over TLS with `thrift_ssl`)."""
        if realm not in REALMS:
            raise ValueError(f"realm {realm!r} is not one of this stack's {REALMS}")
        if thrift_qop is None and not thrift_http:
            thrift_qop = "auth-conf"
        files = self.tls
        settings = {
            "realm": realm, "krb5_conf": str(self.krb5_conf),
            "hbase_principal": f"hbase/_HOST@{realm}", "hbase_keytab": str(self.keytab_path(
                self.service_principal("hbase", realm))),
            "spnego_principal": f"HTTP/_HOST@{realm}", "spnego_keytab": str(self.keytab_path(
                self.service_principal("HTTP", realm))),
            "zookeeper_principal": f"zookeeper/_HOST@{ZK_REALM}", "superusers": list(SUPERUSERS),
            "auth_to_local": cross_realm_rules([r for r in REALMS if r != realm]),
            "thrift_qop": thrift_qop, "thrift_http": thrift_http, "thrift_ssl": thrift_ssl,
            "client_principal": TOOLKIT, "client_keytab": str(self.keytab_path(TOOLKIT)),
        }
        if thrift_ssl and files is not None:
            settings.update(ssl_cert=str(files.cert), ssl_key=str(files.key), ssl_ca=str(files.ca))
        settings.update(overrides)
        return settings

    # ------------------------------------------------------------------------------------------ clients
    def kinit(self, principal: str, ccache: Path) -> dict[str, str]:
        """A ticket cache filled from `principal`'s keytab (as `kinit -kt` does); returns the environment
        (KRB5CCNAME, KRB5_CONFIG) of a process acting as `principal`, e.g. `hbase shell`."""
        env = {"KRB5_CONFIG": str(self.krb5_conf), "KRB5CCNAME": f"FILE:{ccache}"}
        proc = subprocess.run(["kinit", "-kt", str(self.keytab_path(principal)), principal],
                              env={**os.environ, **env}, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise gss.KerberosError(f"kinit {principal} failed: {proc.stderr.strip()}")
        return env

    def describe(self) -> dict:
        """The `security` entry of `endpoints --json`: files, realms, the KDC, every principal and keytab."""
        keytabs = {p: str(self.keytab_path(p)) for ps in self.principals().values() for p in ps}
        return {
            "krb5_conf": str(self.krb5_conf), "realms": list(REALMS), "kdc": f"127.0.0.1:{self.kdc.port}",
            "cross_realm_trust": "both ways" if self.cross_realm else f"none from {ZK_REALM} ({REALMS[1]} -> "
                                                                       f"{ZK_REALM} only, for ZooKeeper)",
            "ticket_lifetime_s": self.ticket_lifetime_s, "principals": self.principals(), "keytabs": keytabs,
            "toolkit": {"principal": TOOLKIT, "keytab": keytabs[TOOLKIT]},
            "zookeeper": {"hosts": self.zookeeper.hosts if self.zookeeper else None,
                          "principal": self.zookeeper_principal},
            "tls": {"ca": str(self.tls.ca), "cert": str(self.tls.cert), "key": str(self.tls.key)} if self.tls else None,
        }
