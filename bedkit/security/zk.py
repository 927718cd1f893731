"""ZooKeeper with SASL/Kerberos for the test beds' processes (the stand-in's servers, realhbase's set-up), and
the znode ACLs secure HBase sets.

Authentication: kazoo runs SASL through pure-sasl, whose own GSSAPI mechanism needs pykerberos; this
`GssapiMechanism` is built on python-gssapi instead (RFC 4752: the Kerberos context, then the security-layer
exchange, choosing `auth` as ZooKeeper offers). It is registered under its own key (`MECHANISM`), not under
"GSSAPI": a process that also loads the toolkit's mechanism (a test) keeps both, each side its own.

ACLs (`ZKUtil.createACL` on a secure ZooKeeper): every znode under the cluster's base znode gets `sasl:hbase`
ALL (the service user: in HBase 2.x the master writes every znode as hbase), `sasl:<superuser>` ALL and ALL for
its creator (`auth`, `Ids.CREATOR_ALL_ACL`); the znodes every client must read (the base znode, `master`,
`meta-region-server`, `hbaseid`, `rs`, `table` and below: `ZNodePaths.isClientReadable`) also `world:anyone`
READ; replication znodes and the region servers' own `rs/<server>` nodes get no world ACL.
"""
from __future__ import annotations

import logging
import struct

import puresasl.mechanisms
from kazoo.client import KazooClient, TransactionRequest
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions
from puresasl import QOP, SASLProtocolException

from bedkit.security import gss

log = logging.getLogger(__name__)
MECHANISM = "bedkit-GSSAPI"
SERVICE_USER = "hbase"
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))


class GssapiMechanism(puresasl.mechanisms.Mechanism):
    """SASL GSSAPI (RFC 4752) client for kazoo. Options (kazoo's `sasl_options`): `principal` and `keytab` (a
    keytab login) or neither (the ticket cache, KRB5CCNAME); `service_principal`: the server's full principal."""

    name = "GSSAPI"
    score = 100
    qops = QOP.all
    allows_anonymous = False
    uses_plaintext = False
    active_safe = True

    def __init__(self, sasl, principal: str | None = None, keytab: str | None = None,
                 service_principal: str | None = None, errors: list | None = None, **_props):
        super().__init__(sasl)
        self.errors = errors  # kazoo reports any failure as "Unknown error": the reason is kept here
        if not service_principal:
            raise gss.KerberosError("service_principal is required (the server's full principal, e.g. "
                                    "zookeeper/localhost@DC1.TEST)")
        self.principal = principal
        self.keytab = keytab
        self.target = service_principal
        self._ctx = None
        self.qop = QOP.AUTH
        self.user: str | None = None

    def _credentials(self):
        if self.keytab:
            return gss.keytab_credentials(self.principal, self.keytab)
        return gss.ticket_cache_credentials()

    def process(self, challenge=None):
        try:
            return self._process(challenge)
        except Exception as e:
            if self.errors is not None:
                self.errors.append(str(e) or type(e).__name__)
            raise

    def _process(self, challenge):
        if self._ctx is None:
            creds = self._credentials()
            self.user = gss.credentials_principal(creds)
            self._ctx = gss.initiate(creds, self.target)
            try:
                return self._ctx.step()
            except Exception as e:
                raise gss.KerberosError(f"{self.user} cannot get a ticket for {self.target}: "
                                        f"{gss.gss_reason(e)}") from None
        if not self._ctx.complete:
            return self._ctx.step(challenge) or b""
        offer = self._ctx.unwrap(challenge).message
        if len(offer) != 4:
            raise SASLProtocolException(f"GSSAPI security layer offer must be 4 bytes, got {len(offer)}")
        word, = struct.unpack(">I", offer)
        offered = QOP.names_from_bitmask(word >> 24)
        wanted = [q for q in (QOP.AUTH_CONF, QOP.AUTH_INT, QOP.AUTH) if q in offered and q in self.sasl.qops]
        if not wanted:
            raise SASLProtocolException(f"No common protection layer between client and server (server offers "
                                        f"{sorted(q.decode() for q in offered)})")
        self.qop = wanted[0]
        max_buffer = 0 if self.qop == QOP.AUTH else min(self.sasl.max_buffer, word & 0xFFFFFF)
        reply = struct.pack(">I", QOP.flag_from_name(self.qop) << 24 | max_buffer) + self.user.encode()
        self.complete = True
        return self._ctx.wrap(reply, False).message

    def wrap(self, outgoing):
        return outgoing if self.qop == QOP.AUTH else self._ctx.wrap(outgoing, self.qop == QOP.AUTH_CONF).message

    def unwrap(self, incoming):
        return incoming if self.qop == QOP.AUTH else self._ctx.unwrap(incoming).message

    def dispose(self):
        self._ctx = None


puresasl.mechanisms.mechanisms[MECHANISM] = GssapiMechanism


def sasl_options(service_principal: str, principal: str | None = None, keytab: str | None = None,
                 errors: list | None = None) -> dict:
    """kazoo's `sasl_options` for this module's mechanism (principal + keytab, or the ticket cache); `errors`
    collects the reasons of failed authentications."""
    options = {"mechanism": MECHANISM, "service_principal": service_principal, "errors": errors}
    if keytab:
        options.update(principal=principal, keytab=str(keytab))
    return options


# ---------------------------------------------------------------------------------------------- ACLs
def client_readable(path: str, base: str) -> bool:
    """HBase's `ZNodePaths.isClientReadable`: the znodes a client reads to find the cluster."""
    name = path[len(base):].lstrip("/")
    return (path == base or name in ("master", "hbaseid", "rs", "table") or name.startswith("table/")
            or name == "meta-region-server" or name.startswith("meta-region-server-"))


def hbase_acls(path: str, base: str, superusers: list[str]) -> list[ACL]:
    if path != base and not path.startswith(base + "/"):
        return list(OPEN_ACL_UNSAFE)  # HBase: a znode outside the base znode is not its own
    acls = [ACL(Permissions.ALL, Id("sasl", SERVICE_USER))]
    acls += [ACL(Permissions.ALL, Id("sasl", u)) for u in dict.fromkeys(superusers) if u != SERVICE_USER]
    acls.append(CREATOR_ALL)
    if client_readable(path, base):
        acls.append(WORLD_READ)
    return acls


class _PolicyAcl(list):
    """An ACL computed from the path: kazoo hands it on to the parents it creates (makepath), which must get
    their own, so `ensure_path_async` drops it."""


class AclKazooClient(KazooClient):
    """A KazooClient whose creates (plain, makepath, ensure_path, transactions) get HBase's ACL for each path
    unless the caller gives one. `start()` returns once the SASL authentication is through, and raises
    KerberosError with the reason when it failed (kazoo reports a session before authenticating it)."""

    def __init__(self, acl_for, **kwargs):
        super().__init__(**kwargs)
        self._acl_for = acl_for
        self._sasl = kwargs.get("sasl_options") or {}

    def start(self, timeout=15):
        from kazoo.exceptions import AuthFailedError

        options = self._sasl
        try:
            super().start(timeout)
            self.exists("/")  # queued behind the authentication: fails when it failed
        except (AuthFailedError, self.handler.timeout_exception) as e:
            errors = options.get("errors") or []
            self.stop()
            self.close()
            reason = errors[-1] if errors else f"{type(e).__name__} {e}".strip()
            who = options.get("principal") or "the ticket cache's principal"
            raise gss.KerberosError(f"ZooKeeper {self.hosts}: SASL GSSAPI as {who} to "
                                    f"{options.get('service_principal')} failed: {reason}") from None

    def create_async(self, path, value=b"", acl=None, *args, **kwargs):
        if acl is None:
            acl = _PolicyAcl(self._acl_for(path))
        return super().create_async(path, value, acl, *args, **kwargs)

    def ensure_path_async(self, path, acl=None):
        return super().ensure_path_async(path, None if isinstance(acl, _PolicyAcl) else acl)

    def transaction(self):
        return _AclTransaction(self)


class _AclTransaction(TransactionRequest):
    def create(self, path, value=b"", acl=None, ephemeral=False, sequence=False):
        return super().create(path, value, self.client._acl_for(path) if acl is None else acl, ephemeral, sequence)


def secure_client(hosts: str, timeout: float, base: str, superusers: list[str], zookeeper_principal: str,
                  principal: str | None = None, keytab: str | None = None, **kwargs) -> AclKazooClient:
    """A kazoo client that authenticates with SASL GSSAPI (as `principal` from `keytab`, else as the ticket
    cache's principal) to the ZooKeeper server `zookeeper_principal` (`_HOST`: the first server's host), and
    creates znodes with HBase's ACLs for the base znode `base`."""
    first_host = hosts.split(",")[0].rsplit(":", 1)[0]
    target = gss.expand_host(zookeeper_principal, first_host)
    return AclKazooClient(lambda path: hbase_acls(path, base, superusers), hosts=hosts, timeout=timeout,
                          sasl_options=sasl_options(target, principal, keytab, errors=[]), **kwargs)
