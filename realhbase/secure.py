"""`python -m realhbase up --secure`: the two real clusters Kerberized as production secures them, on the MIT KDC
stand-in's secure mode runs too (`bedkit.security.stack.SecureStack`: realms DC1.TEST and DC2.TEST with a
cross-realm trust both ways, every principal's keytab, a CA and server certificate, Debian's ZooKeeper with SASL).

What each cluster runs with (the keys below are added to the plain bed's site files, realhbase/config.py):
- HDFS: `hadoop.security.authentication=kerberos`, block access tokens, `ignore.secure.ports.for.testing=true`
  (HBase's own test shortcut instead of privileged ports or data transfer protection), the NameNode and DataNode
  as `hbase/localhost@<realm>` (they share one JVM, and so one login, with the HMaster: as HBase's
  `HBaseKerberosUtils.setSecuredConfiguration` runs MiniDFSCluster), WebHDFS behind SPNEGO (`HTTP/localhost@<realm>`),
  the toolkit in HDFS's superuser group (it reads the quotas of the rootdir and its ancestors: subtree reads);
- HBase: `hbase.security.authentication=kerberos`, `hbase.security.authorization=true` with the AccessController,
  `hbase.superuser=hbase,hbase-migration` (what the README's secured section tells an operator to grant), the
  master and region servers as `hbase/localhost@<realm>`, info servers behind SPNEGO
  (`hbase.security.authentication.ui=kerberos`), ZooKeeper through SASL (a JAAS `Client` section with the hbase
  keytab: HBase then creates its znodes with SASL ACLs), `auth_to_local` rules mapping the other realm's
  principals (replication's sink and the toolkit), `hadoop.proxyuser.hbase.*` (the Thrift gateways act as their
  authenticated client);
- dc1's Thrift1/Thrift2 gateways: binary SASL GSSAPI, `hbase.thrift.security.qop=auth-conf`; dc2's: HTTP mode
  (`hbase.regionserver.thrift.http`) with SPNEGO over TLS (`hbase.thrift.ssl.enabled`, a PKCS#12 keystore made
  from the stack's certificate).

Server principals name the host `localhost` (the canonical name of 127.0.0.1, what `_HOST` becomes in the
toolkit and the stand-in) rather than `_HOST`: HBase's info servers and the NameNode's web server expand `_HOST`
with the address they bind (`HTTP/127.0.0.1@REALM`), not its canonical name (the conformance suite's finding).

Each cluster has its own krb5.conf (`<cluster>/conf/krb5.conf`, its own realm as the default realm, as each
datacenter's hosts have), the JAAS file, and the keystore; the KDC, keytabs and TLS files live in the workdir
(`kdc/`, `keytabs/`, `tls/`), ZooKeeper in `zookeeper/`, as the stand-in's secure mode lays them out.
"""
from __future__ import annotations

import contextlib
import json
import os
import ssl
import struct
import subprocess
import urllib.request
from pathlib import Path

from bedkit.kdc import krb5_conf_text, realm_of
from bedkit.security.names import cross_realm_rules
from bedkit.security.stack import REALMS, SUPERUSERS, TOOLKIT, ZK_REALM, SecureStack

# Each cluster's realm and Thrift mode, as the stand-in's secured pair has them.
CLUSTER_SECURITY = {
    "dc1": {"realm": "DC1.TEST", "thrift_qop": "auth-conf", "thrift_http": False, "thrift_ssl": False},
    "dc2": {"realm": "DC2.TEST", "thrift_qop": None, "thrift_http": True, "thrift_ssl": True},
}
SERVICE_HOST = "localhost"  # the canonical name of 127.0.0.1: what the gateways' and NameNodes' principals name
# Where each cluster's master and region servers listen, and the host their principals name (hbase/<host>,
# HTTP/<host> for their info servers). dc2's have an address of their own: Java's SASL clients (HBase's RPC,
# Hadoop's, ZooKeeper's) ask for the host-based name `hbase@<host>` and drop the realm of the principal they were
# configured with (the peer CONFIG's hbase.regionserver.kerberos.principal included), so the realm of a server
# comes from the client's [domain_realm] for its host, as between two datacenters' hosts: dc1's region servers
# reach dc2's (replication) as hbase/127.0.0.3@DC2.TEST because dc1's krb5.conf maps 127.0.0.3 to DC2.TEST.
SERVER_HOSTS = {"dc1": ("127.0.0.1", "localhost"), "dc2": ("127.0.0.3", "127.0.0.3")}
KEYSTORE_PASSWORD = "realhbase"  # the Thrift gateways' PKCS#12 keystore (a test certificate, nothing else in it)


def realm(name: str) -> str:
    return CLUSTER_SECURITY[name]["realm"]


def server_host(name: str) -> str:
    """The address the cluster's master and region servers listen on."""
    return SERVER_HOSTS[name][0]


def hbase_principal(name: str) -> str:
    """The cluster's service principal: its master, region servers, NameNode, DataNode and gateways log in as it
    (the master JVM holds the NameNode and DataNode: one login)."""
    return f"hbase/{SERVER_HOSTS[name][1]}@{realm(name)}"


def http_principal(name: str, host: str = SERVICE_HOST) -> str:
    """The SPNEGO principal of the cluster's HTTP servers on `host` (the canonical name of the address)."""
    return f"HTTP/{host}@{realm(name)}"


def yarn_principal(name: str) -> str:
    """The principal of the cluster's YARN daemons (`up --secure --yarn`, realhbase/yarn.py): the ResourceManager
    (`yarn/_HOST@<realm>` in yarn-site, _HOST their address) and the NodeManager, named by the cluster's server
    address as its other services are."""
    return f"yarn/{SERVER_HOSTS[name][1]}@{realm(name)}"


ZK_HOST = "127.0.0.2"  # the secured bed's ZooKeeper listens here (see RealSecureStack)


class RealSecureStack(SecureStack):
    """bedkit's SecureStack (the KDC, every keytab, the TLS files) with its SASL ZooKeeper on 127.0.0.2, as
    `zookeeper/127.0.0.2@DC1.TEST`.

    Why not on 127.0.0.1 as `zookeeper/localhost@DC1.TEST`: ZooKeeper's Java client asks for the host-based name
    `zookeeper@<host>` and drops any realm (`zookeeper.server.realm`, the realm of `zookeeper.server.principal`:
    SecurityUtils.createSaslClient in 3.8), so Java takes the host's realm from `[domain_realm]`, else the
    default realm. dc2's JVMs (default realm DC2.TEST) would ask for zookeeper/localhost@DC2.TEST; mapping
    `localhost` to DC1.TEST instead would also move their own acceptors (Hadoop's and HBase's SASL servers are
    host-based, `hbase@localhost`) into DC1.TEST, and MIT's KDC does not refer a host name without a dot. With
    ZooKeeper on its own address, dc2's krb5.conf maps that address to DC1.TEST, as a datacenter maps another
    datacenter's hosts; the toolkit's `zookeeper/_HOST@DC1.TEST` expands to the same name (127.0.0.2 has no
    reverse name)."""

    def __init__(self, workdir: Path, zookeeper_port: int | None = None):
        super().__init__(workdir, zookeeper_port=zookeeper_port)

    @property
    def zookeeper_principal(self) -> str:
        return f"zookeeper/{ZK_HOST}@{ZK_REALM}"

    def principals(self) -> dict[str, list[str]]:
        out = super().principals()
        out["hbase_service"] = [hbase_principal(n) for n in CLUSTER_SECURITY]
        out["yarn_service"] = [yarn_principal("dc2")]  # the secured YARN beside dc2 (up --secure --yarn)
        out["spnego_service"] = list(dict.fromkeys([
            *(http_principal(n) for n in CLUSTER_SECURITY),
            *(http_principal(n, SERVER_HOSTS[n][1]) for n in CLUSTER_SECURITY)]))
        return out

    def start(self, timeout: float = 30.0) -> "RealSecureStack":
        from bedkit.security import tls
        from bedkit.zookeeper import ZooKeeperSasl, ZooKeeperServer

        options_file = self.dir / "stack.json"
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
            self.zookeeper = ZooKeeperServer(
                self.dir / "zookeeper", port=self.zookeeper_port, host=ZK_HOST, sasl=ZooKeeperSasl(
                    self.zookeeper_principal, self.keytab_path(self.zookeeper_principal), self.krb5_conf,
                    cross_realm_rules([r for r in REALMS if r != ZK_REALM]), root_writers=["hbase", *SUPERUSERS]))
            self.zookeeper.start(timeout)
        except BaseException:
            self.stop()
            raise
        return self


def stack(workdir: Path, zookeeper_port: int | None = None) -> RealSecureStack:
    """The KDC, keytabs, TLS files and SASL ZooKeeper of a secured bed (files under `workdir`)."""
    return RealSecureStack(workdir, zookeeper_port=zookeeper_port)


def keytab(workdir: Path, principal: str) -> str:
    return str(RealSecureStack(workdir).keytab_path(principal))


def _other_realms(name: str) -> list[str]:
    return [r for r in REALMS if r != realm(name)]


# ---------------------------------------------------------------------------------------------- site files
def site_overlay(name: str, workdir: Path, cluster_dir: Path) -> dict[str, list[tuple[str, str, str]]]:
    """The secure keys each site file gets on top of the plain bed's: {file name: [(key, value, why)]}."""
    hbase, spnego = hbase_principal(name), http_principal(name)
    info_spnego = http_principal(name, SERVER_HOSTS[name][1])  # the master's and region servers' info servers
    hbase_kt, http_kt, info_kt = keytab(workdir, hbase), keytab(workdir, spnego), keytab(workdir, info_spnego)
    rules = cross_realm_rules(_other_realms(name))
    conf = cluster_dir / "conf"
    core = [
        ("hadoop.security.authentication", "kerberos", "Kerberos on every Hadoop RPC (NameNode, DataNode)"),
        ("hadoop.security.auth_to_local", rules,
         f"principals of the trusted realm(s) {', '.join(_other_realms(name))} map to their first component "
         "(DEFAULT maps only this cluster's realm): the other cluster's region servers (replication) and the "
         "toolkit's principal"),
        ("hadoop.http.filter.initializers", "org.apache.hadoop.security.AuthenticationFilterInitializer",
         "the NameNode's web server (WebHDFS, /jmx) behind SPNEGO: Hadoop 3.4's WebHDFS relies on this global "
         "filter (without it every call is 403 'Security enabled but user not authenticated by filter')"),
        ("hadoop.http.authentication.type", "kerberos", ""),
        ("hadoop.http.authentication.simple.anonymous.allowed", "false", ""),
        ("hadoop.http.authentication.kerberos.principal", spnego, ""),
        ("hadoop.http.authentication.kerberos.keytab", http_kt, ""),
        ("hadoop.http.authentication.kerberos.name.rules", rules, ""),
        ("hadoop.user.group.static.mapping.overrides", f"dr.who=;{TOOLKIT.split('@')[0]}=supergroup",
         "the toolkit in HDFS's superuser group (dfs.permissions.superusergroup): the oldWALs guard reads the "
         "quotas of the rootdir and of every ancestor up to /, and GETCONTENTSUMMARY / GETQUOTAUSAGE need "
         "READ_EXECUTE on the whole subtree (secure HBase keeps its data, staging and WAL directories to itself)"),
        ("hadoop.proxyuser.hbase.hosts", "*",
         "the Thrift gateways (hbase) act as the client they authenticated (SASL authzid, HTTP mode's user)"),
        ("hadoop.proxyuser.hbase.groups", "*", ""),
    ]
    hdfs = [
        ("dfs.block.access.token.enable", "true", "block access tokens, as every Kerberized HDFS"),
        ("ignore.secure.ports.for.testing", "true",
         "HBase's test shortcut (HBaseKerberosUtils.setSecuredConfiguration): the DataNode on unprivileged ports "
         "without data transfer protection"),
        ("dfs.namenode.kerberos.principal", hbase,
         "NameNode, DataNode and HMaster share one JVM, so one Kerberos login: one principal (as HBase's tests)"),
        ("dfs.namenode.keytab.file", hbase_kt, ""),
        ("dfs.datanode.kerberos.principal", hbase, ""),
        ("dfs.datanode.keytab.file", hbase_kt, ""),
        ("dfs.web.authentication.kerberos.principal", spnego, "WebHDFS behind SPNEGO"),
        ("dfs.web.authentication.kerberos.keytab", http_kt, ""),
        ("dfs.namenode.kerberos.internal.spnego.principal", spnego, ""),
    ]
    hbase_site = [
        ("hbase.security.authentication", "kerberos", ""),
        ("hbase.security.authorization", "true", "with the AccessController below"),
        ("hbase.coprocessor.master.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
        ("hbase.coprocessor.region.classes",
         "org.apache.hadoop.hbase.security.token.TokenProvider,org.apache.hadoop.hbase.security.access."
         "AccessController", ""),
        ("hbase.coprocessor.regionserver.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
        ("hbase.superuser", ",".join(["hbase", *SUPERUSERS]),
         "the grant the README's secured section asks for: the toolkit adds peers and tables and reads the "
         "replication znodes"),
        ("hbase.master.kerberos.principal", hbase, ""),
        ("hbase.master.keytab.file", hbase_kt, ""),
        ("hbase.regionserver.kerberos.principal", hbase, ""),
        ("hbase.regionserver.keytab.file", hbase_kt, ""),
        ("hbase.security.authentication.ui", "kerberos", "info servers (/jmx, /conf) behind SPNEGO"),
        ("hbase.security.authentication.spnego.kerberos.principal", info_spnego, ""),
        ("hbase.security.authentication.spnego.kerberos.keytab", info_kt, ""),
        ("hbase.security.authentication.spnego.kerberos.name.rules", rules, ""),
        ("hbase.quota.enabled", "true", "throttle and space quotas (hbase:quota), which the metadata command migrates "
         "(issue 39); the plain beds leave them off"),
        ("hbase.thrift.kerberos.principal", hbase, "the gateways' own login"),
        ("hbase.thrift.keytab.file", hbase_kt, ""),
    ]
    if SERVER_HOSTS[name][0] != "127.0.0.1":
        host = SERVER_HOSTS[name][0]
        hbase_site += [(key, host, "the master and region servers named by their own address (SERVER_HOSTS)")
                       for key in ("hbase.master.hostname", "hbase.regionserver.hostname",
                                   "hbase.unsafe.regionserver.hostname")]
    s = CLUSTER_SECURITY[name]
    if s["thrift_http"]:
        hbase_site += [
            ("hbase.regionserver.thrift.http", "true", "Thrift over HTTP, SPNEGO on every request"),
            ("hbase.thrift.spnego.principal", spnego, ""),
            ("hbase.thrift.spnego.keytab.file", http_kt, ""),
        ]
        if s["thrift_ssl"]:
            hbase_site += [
                ("hbase.thrift.ssl.enabled", "true", "TLS with the stack's server certificate"),
                ("hbase.thrift.ssl.keystore.store", str(conf / "thrift-keystore.p12"), ""),
                ("hbase.thrift.ssl.keystore.password", KEYSTORE_PASSWORD, ""),
                ("hbase.thrift.ssl.keystore.keypassword", KEYSTORE_PASSWORD, ""),
            ]
    else:
        hbase_site.append(("hbase.thrift.security.qop", s["thrift_qop"], "binary Thrift over SASL GSSAPI"))
    return {"core-site.xml": core, "hdfs-site.xml": hdfs, "hbase-site.xml": hbase_site}


def domain_realm() -> str:
    """krb5.conf's [domain_realm]: the ZooKeeper's address is in DC1.TEST (RealSecureStack), what dc2's hosts must
    be told, and dc2's server address in DC2.TEST, what every other host must be told (Java's SASL clients take a
    server's realm from it: see SERVER_HOSTS)."""
    return (f"[domain_realm]\n  {ZK_HOST} = {ZK_REALM}\n"
            + "".join(f"  {SERVER_HOSTS[n][1]} = {realm(n)}\n" for n in CLUSTER_SECURITY
                      if SERVER_HOSTS[n][1] != SERVICE_HOST))


def toolkit_krb5_conf(workdir: Path) -> Path:
    """The toolkit's krb5.conf, which both clusters' connections name (`krb5_conf`): its realm (DC1.TEST) the
    default one and each cluster's server address mapped to its realm, as on a host of the toolkit's datacenter.
    The native data path's JVMs need the mapping (HBase's Java SASL client asks for `hbase@127.0.0.3` in the
    realm [domain_realm] gives that host: without it DC1.TEST, "Server not found in Kerberos database"), and
    hold one krb5.conf for both clusters."""
    return Path(workdir) / "toolkit-krb5.conf"


def write_files(name: str, workdir: Path, cluster_dir: Path, kdc_port: int, tls_files) -> None:
    """The cluster's krb5.conf (its realm the default one), JAAS files (servers: the hbase keytab; clients such as
    the shell: the ticket cache), and for TLS gateways the keystore."""
    conf = cluster_dir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    ss = SecureStack(workdir)
    (conf / "krb5.conf").write_text(krb5_conf_text(REALMS, kdc_port, ss.ticket_lifetime_s, ss.renew_lifetime_s,
                                                   default_realm=realm(name)) + domain_realm())
    toolkit_krb5_conf(workdir).write_text(krb5_conf_text(REALMS, kdc_port, ss.ticket_lifetime_s,
                                                         ss.renew_lifetime_s, default_realm=realm_of(TOOLKIT))
                                          + domain_realm())
    (conf / "jaas.conf").write_text(
        "Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n"
        f'  keyTab="{keytab(workdir, hbase_principal(name))}"\n  storeKey=true\n  useTicketCache=false\n'
        f'  principal="{hbase_principal(name)}";\n}};\n')
    (conf / "jaas-client.conf").write_text(
        "Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=false\n"
        "  useTicketCache=true;\n};\n")
    if CLUSTER_SECURITY[name]["thrift_ssl"]:
        store = conf / "thrift-keystore.p12"
        proc = subprocess.run(["openssl", "pkcs12", "-export", "-in", str(tls_files.cert), "-inkey",
                               str(tls_files.key), "-name", "thrift", "-out", str(store), "-passout",
                               f"pass:{KEYSTORE_PASSWORD}"], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"openssl pkcs12 -export failed: {proc.stderr.strip()[-300:]}")
        store.chmod(0o600)


def jvm_flags(name: str, cluster_dir: Path, client: bool = False) -> list[str]:
    """Every JVM of a secured cluster: its krb5.conf and its JAAS file."""
    conf = cluster_dir / "conf"
    return [f"-Djava.security.krb5.conf={conf / 'krb5.conf'}",
            f"-Djava.security.auth.login.config={conf / ('jaas-client.conf' if client else 'jaas.conf')}"]


# ---------------------------------------------------------------------------------------------- endpoints
def settings(name: str, workdir: Path) -> dict:
    """The cluster's security settings as `SecureStack.cluster_security` gives them, with the realhbase paths:
    what endpoints.security_entry and endpoints.security_extras describe."""
    s = CLUSTER_SECURITY[name]
    ss = SecureStack(workdir)
    out = ss.cluster_security(realm(name), thrift_qop=s["thrift_qop"], thrift_http=s["thrift_http"],
                              thrift_ssl=False)
    toolkit_conf = toolkit_krb5_conf(workdir)  # a bed started before it existed: the KDC's (no [domain_realm])
    out["krb5_conf"] = str(toolkit_conf if toolkit_conf.is_file() else ss.krb5_conf)
    out["hbase_keytab"] = keytab(workdir, hbase_principal(name))
    if s["thrift_ssl"]:
        tls_dir = workdir / "tls"
        out.update(thrift_ssl=True, ssl_cert=str(tls_dir / "server.pem"), ssl_key=str(tls_dir / "server-key.pem"),
                   ssl_ca=str(tls_dir / "ca.pem"))
    return out


def describe(name: str, workdir: Path) -> dict:
    """The cluster's `security` entry of `endpoints --json`."""
    from realhbase import endpoints

    return endpoints.security_entry(settings(name, workdir))


def connection_extras(name: str, workdir: Path) -> dict:
    """The security extras of the cluster's Airflow connection."""
    from realhbase import endpoints

    return endpoints.security_extras(settings(name, workdir))


def summary(workdir: Path) -> dict | None:
    """The top-level `security` entry of `endpoints --json` (written by `up --secure`), None when not secured."""
    try:
        return json.loads((Path(workdir) / "security.json").read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- the bed's clients
def _creds(principal: str, kt: str):
    from bedkit.security import gss

    return gss.keytab_credentials(principal, kt)


def negotiate(workdir: Path, name: str, url: str) -> dict[str, str]:
    """`Authorization: Negotiate` as the cluster's hbase service principal, for the HTTP principal of the URL's
    host (HTTP/<its canonical name>@<realm>)."""
    from urllib.parse import urlsplit

    from bedkit.security import gss

    principal = hbase_principal(name)
    target = http_principal(name, gss.canonical_host(urlsplit(url).hostname))
    return {"Authorization": gss.negotiate_header(_creds(principal, keytab(workdir, principal)), target)}


def http_answers(workdir: Path, name: str, url: str, method: str = "GET") -> bool:
    try:
        http(workdir, name, url, method)
        return True
    except Exception:
        return False


def http(workdir: Path, name: str, url: str, method: str = "GET", timeout: float = 5.0):
    request = urllib.request.Request(url, method=method, headers=negotiate(workdir, name, url))
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        body = resp.read()
    return json.loads(body) if body else None


class _GssapiSasl:
    """What thriftpy2's TSaslClientTransport expects of a SASL client (Cyrus' start/step/encode/decode), on
    python-gssapi: RFC 4752 with exactly the QOP asked for. Only the bed's readiness probe uses it."""

    BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}

    def __init__(self, creds, target: str, principal: str, qop: str):
        import gssapi

        from bedkit.security import gss

        self.ctx = gss.initiate(creds, target)
        self.principal, self.qop, self.error = principal, qop, ""
        self._gssapi = gssapi

    def start(self, mechanism):
        return True, mechanism, self.ctx.step()

    def step(self, challenge):
        try:
            if not self.ctx.complete:
                return True, self.ctx.step(challenge) or b""
            offer = self.ctx.unwrap(challenge).message
            if not offer[0] & self.BITS[self.qop]:
                self.error = f"the gateway does not offer QOP {self.qop} (bits {offer[0]})"
                return False, b""
            size = 0 if self.qop == "auth" else 0xFFFFFF
            reply = bytes([self.BITS[self.qop]]) + size.to_bytes(3, "big") + self.principal.encode()
            return True, self.ctx.wrap(reply, False).message
        except Exception as e:
            self.error = str(e)
            return False, b""

    def encode(self, data):
        if self.qop == "auth":
            return True, data
        wrapped = self.ctx.wrap(data, self.qop == "auth-conf").message
        return True, struct.pack(">I", len(wrapped)) + wrapped

    def decode(self, frame):
        return True, self.ctx.unwrap(frame[4:]).message

    def getError(self):  # noqa: N802 (Cyrus' name)
        return self.error


def thrift_answers(workdir: Path, name: str, host: str, port: int, kind: str, modules) -> bool:
    """The plain bed's readiness probe (Thrift1 getTableNames, Thrift2 getTableNamesByPattern), authenticated as
    the cluster's hbase service principal: binary SASL with the QOP, or HTTP mode with SPNEGO (over TLS)."""
    try:
        with thrift_client(workdir, name, host, port, kind, modules, timeout_ms=3000) as client:
            if kind == "thrift":
                client.getTableNames()
            else:
                client.getTableNamesByPattern(".*", True)  # HBase 3.x's Admin refuses a null pattern
        return True
    except Exception:
        return False


@contextlib.contextmanager
def thrift_client(workdir: Path, name: str, host: str, port: int, kind: str, modules, timeout_ms: int = 30000):
    """A thriftpy2 client of one of the cluster's gateways (`kind` "thrift" or "thrift2", `modules` the Hbase and
    hbase2 IDLs) as the cluster's hbase service principal, an operator's tool (the tests' setup): binary SASL
    with the cluster's QOP, or HTTP mode with SPNEGO over TLS. Built on python-gssapi and thriftpy2's own
    transports, nothing of the toolkit's."""
    from thriftpy2.protocol.binary import TBinaryProtocolFactory
    from thriftpy2.thrift import TClient

    hbase1, hbase2 = modules
    service = hbase1.Hbase if kind == "thrift" else hbase2.THBaseService
    s = CLUSTER_SECURITY[name]
    principal = hbase_principal(name)
    creds = _creds(principal, keytab(workdir, principal))
    if s["thrift_http"]:
        from thriftpy2.http import THttpClient, THttpHeaderFactory

        from bedkit.security import gss

        class Negotiate(THttpHeaderFactory):
            def get_headers(self):
                return {"Authorization": gss.negotiate_header(creds, http_principal(name))}

        ca = str(workdir / "tls" / "ca.pem")
        scheme = "https" if s["thrift_ssl"] else "http"
        transport = THttpClient(f"{scheme}://{host}:{port}/", timeout=timeout_ms, http_header_factory=Negotiate(),
                                ssl_context_factory=lambda: ssl.create_default_context(cafile=ca))
    else:
        from thriftpy2.transport import TSocket
        from thriftpy2.transport.sasl import TSaslClientTransport

        sock = TSocket(host, port, socket_timeout=timeout_ms, connect_timeout=3000)
        transport = TSaslClientTransport(lambda: _GssapiSasl(creds, principal, principal, s["thrift_qop"]),
                                         "GSSAPI", sock)
    transport.open()
    try:
        yield TClient(service, TBinaryProtocolFactory().get_protocol(transport))
    finally:
        transport.close()


def kinit_env(workdir: Path, name: str, cluster_dir: Path) -> dict[str, str]:
    """A ticket cache of the cluster's admin (`hbase@<realm>`, a superuser) for a client JVM such as the shell;
    returns KRB5CCNAME and KRB5_CONFIG."""
    cache_dir = cluster_dir / "tmp" / "krb5cc"
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.chmod(0o700)
    admin = f"hbase@{realm(name)}"
    env = {"KRB5CCNAME": f"FILE:{cache_dir / 'admin'}", "KRB5_CONFIG": str(cluster_dir / "conf" / "krb5.conf")}
    proc = subprocess.run(["kinit", "-kt", keytab(workdir, admin), admin], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"kinit {admin} failed: {proc.stderr.strip()}")
    return env
