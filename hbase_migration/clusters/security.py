"""How a cluster is secured: Kerberos principals and keytab, SASL QOP, Thrift's transport mode, TLS. Pure.

`Security` is decoded from a connection's security extras (docs/secured-clusters.md; the names are the ones
`hbase-site.xml` operators know: `hbase_principal` is `hbase.regionserver.kerberos.principal`, `thrift_qop` is
`hbase.thrift.security.qop`, ...). Every field is validated when it is built and named in the error. It holds
paths and names only: a keytab's contents are read by `kerberos.py` when a channel opens, never kept here,
never shown.

Also here, because they are pure and exact: HBase's `_HOST` expansion of server principals, the QOP names
HBase accepts, the keytab file format (principal names only; keys are skipped unread), and the meaning of the
errors MIT Kerberos reports (what an operator should fix).
"""
from __future__ import annotations

import functools
import os
import re
import socket
import struct
import sys
from dataclasses import dataclass, fields
from typing import Any, Mapping

# hbase.thrift.security.qop: HBase's SaslUtil.getQop accepts both spellings (HBASE-19118).
QOP_NAMES = {"auth": "auth", "authentication": "auth", "auth-int": "auth-int", "integrity": "auth-int",
             "auth-conf": "auth-conf", "privacy": "auth-conf"}
# RFC 4752's security-layer bits, as Java's GSSAPI SASL offers and chooses them.
QOP_BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}

# Connection extras that describe security (docs/secured-clusters.md), in the form's order.
SECURITY_EXTRAS = ("principal", "keytab", "krb5_conf", "hbase_principal", "thrift_principal", "spnego_principal",
                   "zookeeper_principal", "thrift_qop", "thrift_http", "thrift_ssl", "ssl_ca", "ssl_verify")

_PRINCIPAL = re.compile(r"^(?P<primary>[^/@\s]+)(?:/(?P<instance>[^/@\s]+))?@(?P<realm>[^/@\s]+)$")


class SecurityConfigError(ValueError):
    """A security extra is invalid; the message names the extra and the fix."""


def parse_principal(text: str, what: str) -> tuple[str, str | None, str]:
    """(primary, instance, realm) of `primary[/instance]@REALM`; the realm is required."""
    if not isinstance(text, str) or not text.strip():
        raise SecurityConfigError(f"{what} must be a Kerberos principal such as name@REALM, got {text!r}")
    m = _PRINCIPAL.match(text.strip())
    if not m:
        raise SecurityConfigError(
            f"{what} {text!r} must be a full Kerberos principal with its realm, 'primary[/instance]@REALM' "
            "(e.g. hbase/_HOST@DC2.EXAMPLE.COM): a realm is never guessed, since the two clusters of a "
            "migration usually sit in different realms")
    return m.group("primary"), m.group("instance"), m.group("realm")


def realm_of(principal: str) -> str:
    return parse_principal(principal, "principal")[2]


def short_name(principal: str) -> str:
    """The first component (`hbase` of `hbase/host@REALM`): ZooKeeper's SASL id with
    kerberos.removeHostFromPrincipal and kerberos.removeRealmFromPrincipal, as secure HBase recommends."""
    return parse_principal(principal, "principal")[0]


@functools.lru_cache(maxsize=256)
def canonical_host(host: str) -> str:
    """The canonical name of `host`, lower case: what HBase's `_HOST` becomes for a server at that address
    (`InetAddress.getCanonicalHostName()`). The host as given when the name service cannot say."""
    try:
        name = socket.getfqdn(host)
    except OSError:
        name = host
    return (name or host).lower()


def server_principal(pattern: str, host: str) -> str:
    """HBase's `SecurityUtil.getServerPrincipal`: `_HOST` as the instance becomes the canonical name of the
    host the toolkit connects to; any other principal is used as written."""
    primary, instance, realm = parse_principal(pattern, "server principal")
    if instance != "_HOST":
        return pattern.strip()
    return f"{primary}/{canonical_host(host)}@{realm}"


def normalize_qop(value: Any, what: str = "thrift_qop") -> str:
    name = str(value).strip().lower()
    if name not in QOP_NAMES:
        raise SecurityConfigError(f"{what} must be one of {', '.join(QOP_NAMES)} (hbase.thrift.security.qop), "
                                  f"got {value!r}")
    return QOP_NAMES[name]


def qops_from_bits(bits: int) -> tuple[str, ...]:
    return tuple(name for name, bit in QOP_BITS.items() if bits & bit)


def _flag(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise SecurityConfigError(f"{what} must be true or false, got {value!r}")


def _resolve(path: str) -> str | None:
    """Where a file named in a connection is on this machine: the path itself, else a file of the same name
    that Spark shipped (`--files`/`spark.files`: YARN localizes it into the container's working directory;
    Kubernetes and standalone executors into SparkFiles' root directory). None when none exists."""
    if os.path.isfile(path):
        return path
    base = os.path.basename(path)
    if base and os.path.isfile(base):
        return os.path.abspath(base)
    files = sys.modules.get("pyspark.files")  # only where pyspark is already loaded
    root = getattr(getattr(files, "SparkFiles", None), "_root_directory", None) if files else None
    if root and os.path.isfile(os.path.join(root, base)):
        return os.path.join(root, base)
    return None


def local_file(path: str, what: str) -> str:
    """The readable local copy of a file a connection names (see `_resolve`), or an error saying how to fix it."""
    found = _resolve(path)
    if found is None:
        raise SecurityConfigError(
            f"{what} {path} does not exist on this host (nor a copy shipped to this Spark container): put it "
            "there, or ship it with the job (spark-submit --files / spark.files)")
    if not os.access(found, os.R_OK):
        raise SecurityConfigError(f"{what} {found} is not readable by this user (uid {os.getuid()}): "
                                  "give the user running the toolkit read access (mode 600, owned by it)")
    return found


@dataclass(frozen=True)
class Security:
    """How the toolkit authenticates to one cluster. `principal` set = Kerberos (with `keytab`)."""

    principal: str | None = None  # the toolkit's own principal on this cluster
    keytab: str | None = None
    krb5_conf: str | None = None  # None: the system's (or KRB5_CONFIG's)
    hbase_principal: str | None = None  # hbase.regionserver.kerberos.principal
    thrift_principal: str | None = None  # hbase.thrift.kerberos.principal (default: hbase_principal)
    spnego_principal: str | None = None  # HTTP/_HOST@REALM: /jmx, /conf, WebHDFS, Thrift HTTP mode
    zookeeper_principal: str | None = None  # zookeeper/_HOST@REALM; None: ZooKeeper without SASL
    thrift_qop: str | None = None  # binary mode: SASL GSSAPI with this QOP; None: plain Thrift
    thrift_http: bool = False  # hbase.regionserver.thrift.http
    thrift_ssl: bool = False  # hbase.thrift.ssl.enabled (HTTP mode only)
    ssl_ca: str | None = None  # CA bundle for https endpoints; None: the system's
    ssl_verify: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str):
                set_(self, f.name, value.strip() or None)
        set_(self, "thrift_http", _flag(self.thrift_http, "thrift_http"))
        set_(self, "thrift_ssl", _flag(self.thrift_ssl, "thrift_ssl"))
        set_(self, "ssl_verify", _flag(self.ssl_verify, "ssl_verify"))
        if self.principal is not None:
            primary, instance, _ = parse_principal(self.principal, "principal")
            if instance == "_HOST":
                raise SecurityConfigError(
                    f"principal {self.principal!r}: _HOST is expanded in server principals only; name the "
                    "toolkit's own principal in full (it is the same on every host a task runs on)")
            if self.keytab is None:
                raise SecurityConfigError(
                    f"principal {self.principal} needs keytab: the toolkit gets and renews its own tickets from "
                    "a keytab (Spark executors and long copies need one), e.g. "
                    "kadmin: ktadd -k /etc/security/keytabs/hbase-migration.keytab -norandkey " + self.principal)
        elif self.keytab is not None:
            raise SecurityConfigError("keytab is set without principal: name the principal the keytab holds")
        for name in ("hbase_principal", "thrift_principal", "spnego_principal", "zookeeper_principal"):
            value = getattr(self, name)
            if value is None:
                continue
            parse_principal(value, name)
            if self.principal is None:
                raise SecurityConfigError(f"{name} is set but principal/keytab are not: the toolkit needs its "
                                          "own principal and keytab to authenticate to Kerberized services")
        if self.thrift_qop is not None:
            set_(self, "thrift_qop", normalize_qop(self.thrift_qop))
            if self.principal is None:
                raise SecurityConfigError("thrift_qop is set but principal/keytab are not: SASL GSSAPI needs the "
                                          "toolkit's principal and keytab")
            if self.thrift_http:
                raise SecurityConfigError(
                    "thrift_qop applies to the binary Thrift transport (SASL), thrift_http to HBase's HTTP mode "
                    "(SPNEGO, TLS with thrift_ssl): set the one the gateways run")
            if self.thrift_service_principal is None:
                raise SecurityConfigError("thrift_qop needs the gateways' principal: set hbase_principal "
                                          "(or thrift_principal), e.g. hbase/_HOST@REALM")
        if self.thrift_ssl and not self.thrift_http:
            raise SecurityConfigError("thrift_ssl needs thrift_http: HBase's Thrift servers offer TLS in HTTP mode "
                                      "only (hbase.thrift.ssl.enabled with hbase.regionserver.thrift.http)")
        if self.thrift_http and self.principal is not None and self.spnego_principal is None:
            raise SecurityConfigError("thrift_http with Kerberos needs spnego_principal (hbase.thrift.spnego."
                                      "principal, e.g. HTTP/_HOST@REALM): HTTP mode authenticates with SPNEGO")
        realms = {realm_of(p) for p in (self.hbase_principal, self.thrift_principal, self.spnego_principal)
                  if p is not None}
        if len(realms) > 1:
            raise SecurityConfigError(f"hbase_principal, thrift_principal and spnego_principal name different "
                                      f"realms ({', '.join(sorted(realms))}): one cluster's servers sit in one realm")
        if self.keytab is not None:
            local_file(self.keytab, "keytab")
        if self.krb5_conf is not None:
            local_file(self.krb5_conf, "krb5_conf")
        if self.ssl_ca is not None:
            local_file(self.ssl_ca, "ssl_ca")

    # -- what each channel does ------------------------------------------------------------------

    @property
    def kerberos(self) -> bool:
        return self.principal is not None

    @property
    def thrift_service_principal(self) -> str | None:
        """The Thrift gateways' principal pattern (binary SASL)."""
        return self.thrift_principal or self.hbase_principal

    @property
    def zookeeper_sasl(self) -> bool:
        return self.kerberos and self.zookeeper_principal is not None

    @property
    def http_spnego(self) -> bool:
        return self.kerberos and self.spnego_principal is not None

    @property
    def thrift_sasl(self) -> bool:
        return self.kerberos and self.thrift_qop is not None

    @property
    def server_realm(self) -> str | None:
        """The realm the cluster's HBase servers are in (of hbase/thrift/spnego principal)."""
        for p in (self.hbase_principal, self.thrift_principal, self.spnego_principal):
            if p:
                return realm_of(p)
        return None

    def channels(self) -> dict[str, str]:
        """How each channel authenticates, in words (logs, `describe()`, the demo's summary). No secret."""
        who = f"as {self.principal}" if self.kerberos else ""
        if self.thrift_http:
            tls = ("TLS" + ("" if self.ssl_verify else " WITHOUT certificate verification")) if self.thrift_ssl \
                else "no TLS"
            auth = f"SPNEGO {who} to {self.spnego_principal}" if self.kerberos else "no authentication"
            thrift = f"HTTP mode, {auth}, {tls}"
        elif self.thrift_sasl:
            thrift = f"SASL GSSAPI {who} to {self.thrift_service_principal}, QOP {self.thrift_qop}"
        else:
            thrift = "plain binary (no SASL)"
        return {
            "kerberos": f"{self.principal}, keytab {self.keytab}" if self.kerberos else "off",
            "zookeeper": f"SASL GSSAPI {who} to {self.zookeeper_principal}" if self.zookeeper_sasl else "plain",
            "thrift": thrift,
            "http": f"SPNEGO {who} to {self.spnego_principal}" if self.http_spnego else "plain",
            "shell": f"ticket cache of its own filled from the keytab {who}" if self.kerberos
            else "the shell command's own environment",
        }

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Security":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SecurityConfigError(f"unknown security field(s) {', '.join(unknown)} "
                                      f"(known: {', '.join(sorted(known))})")
        return cls(**dict(data))


# --------------------------------------------------------------------------------------------------
# Replication across realms

PEER_PRINCIPAL_KEY = "hbase.regionserver.kerberos.principal"


def peer_principal_config(source: Security | None, target: Security | None) -> dict[str, str]:
    """The CONFIG a replication peer towards `target` carries (HBASE-15294): the target's region server principal
    when its realm differs from the source servers' (their own `hbase.regionserver.kerberos.principal`, which the
    replication sink's principal would otherwise be taken from, names the wrong service and host). Empty otherwise
    (pure). Shown on real HBase 2.6.4: its Java SASL client uses the service and host of this principal but not
    its realm, which comes from the source hosts' krb5.conf `[domain_realm]` for the sink's host (an operator's
    setting the toolkit cannot make; docs/secured-clusters.md)."""
    if target is None or target.hbase_principal is None:
        return {}
    source_realm = source.server_realm if source is not None else None
    if source_realm == realm_of(target.hbase_principal):
        return {}
    return {PEER_PRINCIPAL_KEY: target.hbase_principal}


# --------------------------------------------------------------------------------------------------
# Keytab files (MIT format, as kadmin's ktadd and Java's ktab write it): principal names only


@dataclass(frozen=True)
class KeytabEntry:
    principal: str
    kvno: int
    enctype: int


def read_keytab(data: bytes, what: str = "keytab") -> list[KeytabEntry]:
    """The entries of a keytab file (versions 0x0501 and 0x0502). Key bytes are skipped, never returned."""
    if len(data) < 2 or data[0] != 5 or data[1] not in (1, 2):
        raise SecurityConfigError(f"{what} is not a Kerberos keytab (MIT format 0x0501/0x0502 expected)")
    version = data[1]
    pos, out = 2, []
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0:  # a hole left by a removed entry
            pos += -size
            continue
        if size == 0:
            break
        end = pos + size
        if end > len(data):
            raise SecurityConfigError(f"{what} is truncated (an entry runs past the end of the file)")
        try:
            (count,) = struct.unpack_from(">H", data, pos)
            pos += 2
            if version == 1:
                count -= 1  # 0x0501 counted the realm among the components

            def octets() -> bytes:
                nonlocal pos
                (n,) = struct.unpack_from(">H", data, pos)
                pos += 2
                value = data[pos:pos + n]
                pos += n
                return value

            realm = octets().decode("utf-8", "replace")
            components = [octets().decode("utf-8", "replace") for _ in range(count)]
            if version == 2:
                pos += 4  # name type
            pos += 4  # timestamp
            vno8 = data[pos]
            pos += 1
            (enctype,) = struct.unpack_from(">H", data, pos)
            pos += 2
            (keylen,) = struct.unpack_from(">H", data, pos)
            pos += 2 + keylen  # the key itself: never read
            kvno = struct.unpack_from(">I", data, pos)[0] if pos + 4 <= end else vno8
        except (struct.error, IndexError):
            raise SecurityConfigError(f"{what} has a malformed entry") from None
        out.append(KeytabEntry("/".join(components) + "@" + realm, kvno or vno8, enctype))
        pos = end
    return out


def keytab_principals(path: str) -> list[str]:
    with open(path, "rb") as f:
        entries = read_keytab(f.read(), f"keytab {path}")
    return sorted({e.principal for e in entries})


# --------------------------------------------------------------------------------------------------
# What MIT Kerberos' errors mean for an operator


@dataclass(frozen=True)
class KerberosProblem:
    kind: str  # skew, no_trust, unknown_server, unknown_client, bad_key, kdc_unreachable, no_realm, expired, other
    cause: str
    fix: str


_GSS_NOISE = re.compile(r"Major \(\d+\): (Unspecified GSS failure\.\s+Minor code may provide more information,?\s*)?"
                        r"|Minor \(\d+\): ")


def gss_text(text: str) -> str:
    """A GSSAPI error's text without the status codes and the "Unspecified GSS failure" boilerplate."""
    return _GSS_NOISE.sub("", text or "").strip(" ,")


def explain(error: str, client: str | None, target: str | None = None) -> KerberosProblem:
    """What a GSSAPI/Kerberos error text means, for `client` asking a ticket for `target` (pure).

    The texts are MIT's (`krb5_get_error_message`), which python-gssapi's errors and kinit's carry."""
    text = error or ""
    low = text.lower()
    client_realm = realm_of(client) if client and "@" in client else None
    target_realm = realm_of(target) if target and "@" in target else None
    if "clock skew too great" in low or "krb_ap_err_skew" in low:
        return KerberosProblem(
            "skew", "the clocks of this host and the KDC or the server differ by more than the allowed skew "
                    "(krb5.conf clockskew, 300 s by default)",
            "synchronize the clocks (chrony/ntpd) of this host, the KDCs and the cluster's servers")
    if target and client_realm and target_realm and client_realm != target_realm and (
            f"krbtgt/{target_realm}@{client_realm}".lower() in low
            or ("krbtgt" in low and "not found" in low)):
        return KerberosProblem(
            "no_trust", f"no cross-realm trust from {client_realm} to {target_realm}: the KDC of {client_realm} "
                        f"has no krbtgt/{target_realm}@{client_realm}",
            f"create krbtgt/{target_realm}@{client_realm} with the same key and kvno in both KDCs (kadmin addprinc "
            f"on each), list {target_realm}'s KDCs in krb5.conf's [realms], and add [capaths] when the path "
            "between the realms goes through a third one")
    if "server not found in kerberos database" in low or ("not found in kerberos database" in low and target
                                                          and target.split("@")[0].lower() in low):
        return KerberosProblem(
            "unknown_server", f"the KDC does not know the server principal {target}",
            "check the connection's server principal extras (hbase_principal, thrift_principal, spnego_principal, "
            "zookeeper_principal) against the servers' hbase-site.xml/zoo.cfg; _HOST becomes the canonical name "
            "of the host connected to, lower case")
    if "client not found in kerberos database" in low or ("not found in kerberos database" in low and client
                                                          and client.split("@")[0].lower() in low):
        return KerberosProblem("unknown_client", f"the KDC does not know the principal {client}",
                               f"create {client} in its realm's KDC, or fix the connection's principal extra")
    if any(s in low for s in ("preauthentication failed", "password incorrect", "key table entry not found",
                              "no suitable keys", "bad encryption type", "decrypt integrity check failed",
                              "key version", "no key table entry", "no credentials cache found")):
        return KerberosProblem(
            "bad_key", f"the keytab holds no valid key for {client} (missing, or replaced since: a re-keyed "
                       "principal invalidates older keytabs)",
            f"export the keytab again without changing the key (kadmin: ktadd -k FILE -norandkey {client}) and "
            "check it with klist -kt FILE")
    if "cannot contact any kdc" in low or "cannot resolve network address for kdc" in low:
        return KerberosProblem("kdc_unreachable", "no KDC of the realm answered",
                               "check the [realms] kdc entries of krb5.conf (krb5_conf extra) and the network path "
                               "to the KDC (port 88, TCP and UDP)")
    if "cannot find kdc for realm" in low or "configuration file does not specify default realm" in low:
        return KerberosProblem("no_realm", "krb5.conf does not name a KDC for the realm",
                               "add the realm to [realms] of krb5.conf (krb5_conf extra names the file to use)")
    if "ticket expired" in low or "ticket has expired" in low:
        return KerberosProblem("expired", "a ticket had expired", "check the clocks; the toolkit renews its tickets "
                                                                  "from the keytab before they expire")
    return KerberosProblem("other", text.strip() or "unknown Kerberos error",
                           "see the KDC's log for this request (krb5kdc.log) and `KRB5_TRACE=/dev/stderr kvno "
                           f"{target or client}` on this host")
