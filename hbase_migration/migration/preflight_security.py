"""Preflight of a secured migration: before anything changes, can the toolkit authenticate everywhere it must?

For each Kerberized cluster: the keytab holds the principal and gives a ticket; a service ticket can be had for
every endpoint (ZooKeeper servers, Thrift1/Thrift2 gateways, region servers' /jmx, WebHDFS), the target's
through the cross-realm trust; each endpoint accepts it (a SASL handshake, an HTTP request with SPNEGO); the
gateways offer the QOP the connection names; the servers' clocks (HTTP `Date`) are within Kerberos' skew of
this host's. `gather` collects the facts (I/O, read-only: no znode, table or peer is touched), `evaluate`
turns them into `checks.CheckResult`s (pure, unit-tested as a table). Each failure names the principal, the
endpoint and the fix; secrets never appear (only names, paths and what the servers answered).
"""
from __future__ import annotations

import email.utils
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from hbase_migration.clusters.reachability import unreachable
from hbase_migration.clusters.security import explain, server_principal
from hbase_migration.migration.checks import WARNING, CheckResult

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

MAX_SKEW_S = 300.0  # krb5.conf's clockskew default, which Java's Kerberos shares
WARN_SKEW_S = 60.0
JMX_PROBE_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Server"
NO_ANSWER = ("unreachable", "kdc_unreachable")  # a probe's kinds that mean "not checked now": the task retries


@dataclass(frozen=True)
class LoginFact:
    which: str  # "source" or "target"
    cluster: str
    principal: str
    keytab: str
    error: str | None = None
    kind: str | None = None
    fix: str | None = None


@dataclass(frozen=True)
class Probe:
    """One endpoint: could the toolkit's principal get a ticket for it and be accepted?"""

    which: str
    cluster: str
    channel: str  # zookeeper, thrift1, thrift2, jmx, webhdfs
    endpoint: str  # host:port or URL
    service: str | None  # the service principal asked for (expanded)
    error: str | None = None
    kind: str | None = None  # security.KerberosProblem.kind, or "qop", "refused", "unreachable"
    fix: str | None = None
    offered_qop: tuple[str, ...] = ()
    wanted_qop: str | None = None
    skew_s: float | None = None  # the server's clock minus this host's (HTTP Date), when it answered

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class SecurityFacts:
    logins: tuple[LoginFact, ...]
    probes: tuple[Probe, ...]
    krb5_conf_error: str | None = None
    open_clusters: tuple[str, ...] = ()  # names of the clusters without Kerberos


# ------------------------------------------------------------------------------------------------
# Pure evaluation


def _skewed(probe: Probe) -> bool:
    return probe.kind == "skew" or (probe.skew_s is not None and abs(probe.skew_s) > MAX_SKEW_S)


def _host(endpoint: str) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(endpoint).hostname if "://" in endpoint else endpoint.rpartition(":")[0]) or endpoint


def _explained_by_skew(facts: "SecurityFacts") -> list[Probe]:
    """Refusals on a host whose clock is measured past the skew (a Thrift gateway says only "GSS initiate failed";
    its info server's `Date` on the same host says why), as skew failures."""
    hosts = {_host(p.endpoint) for p in facts.probes if _skewed(p)}
    return [p for p in facts.probes if not p.ok and not _skewed(p) and p.kind in ("refused", "other", "unreachable")
            and _host(p.endpoint) in hosts]


def _skew_words(seconds: float) -> str:
    return f"{abs(seconds):.0f}s {'ahead of' if seconds > 0 else 'behind'}"


def evaluate(facts: SecurityFacts) -> list[CheckResult]:
    results: list[CheckResult] = []
    if facts.krb5_conf_error:
        results.append(CheckResult("krb5_conf", False, facts.krb5_conf_error,
                                   fix="name the same krb5.conf (listing both realms) in both connections"))
    failed_logins = set()
    for login in facts.logins:
        name = f"{login.which}_kerberos_login"
        if login.error:
            failed_logins.add(login.which)
            results.append(CheckResult(name, False, f"{login.cluster}: {login.error}", fix=login.fix,
                                       transient=login.kind in NO_ANSWER))
        else:
            results.append(CheckResult(name, True, f"{login.cluster}: {login.principal} has a ticket from keytab "
                                                   f"{login.keytab}"))
    by_skew = _explained_by_skew(facts)
    for which in ("source", "target"):
        probes = [p for p in facts.probes if p.which == which]
        if which in failed_logins or not probes:
            continue
        auth = [p for p in probes if not p.ok and p.kind not in ("qop",) and not _skewed(p) and p not in by_skew]
        by_kind: dict[tuple[str | None, str | None], list[Probe]] = {}
        for p in auth:
            by_kind.setdefault((p.kind, p.fix), []).append(p)
        for (kind, fix), group in by_kind.items():
            where = "; ".join(f"{p.channel} {p.endpoint}" + (f" ({p.service})" if p.service else "")
                              + f": {p.error}" for p in group)
            results.append(CheckResult(f"{which}_authentication", False, f"{group[0].cluster}: {where}", fix=fix,
                                       transient=kind in NO_ANSWER))
        if not auth:
            channels = sorted({p.channel for p in probes})
            results.append(CheckResult(f"{which}_authentication", True,
                                       f"{probes[0].cluster}: accepted by all {len(probes)} endpoint(s) "
                                       f"({', '.join(channels)})"))
        qop = [p for p in probes if p.kind == "qop"]
        if qop:
            offers: dict[tuple[str, ...], list[str]] = {}
            for p in qop:
                offers.setdefault(p.offered_qop, []).append(f"{p.channel} gateway {p.endpoint}")
            said = "; ".join(f"{', '.join(where)} offer{'s' if len(where) == 1 else ''} SASL QOP "
                             f"{', '.join(offered) or 'none'}" for offered, where in offers.items())
            offered = "/".join(sorted({q for p in qop for q in p.offered_qop}))
            results.append(CheckResult(
                f"{which}_thrift_qop", False, f"{qop[0].cluster}: {said}, the connection's thrift_qop is "
                                              f"{qop[0].wanted_qop}",
                fix=f"set thrift_qop to {offered} (the gateways' hbase.thrift.security.qop), or configure the "
                    f"gateways with {qop[0].wanted_qop}"))
        sasl = [p for p in probes if p.wanted_qop and p.ok]
        if sasl and not qop:
            results.append(CheckResult(f"{which}_thrift_qop", True,
                                       f"{probes[0].cluster}: every gateway agreed on QOP {sasl[0].wanted_qop}"))
    skewed = [p for p in facts.probes if _skewed(p)]
    if skewed:
        where = "; ".join(f"{p.cluster} {p.channel} {p.endpoint}: "
                          + (f"its clock is {_skew_words(p.skew_s)} this host's" if p.skew_s is not None
                             else f"{p.error}") for p in skewed)
        if by_skew:
            where += "; refused on those hosts: " + ", ".join(f"{p.cluster} {p.channel} {p.endpoint}" for p in by_skew)
        results.append(CheckResult("clock_skew", False, f"{where} (Kerberos allows {MAX_SKEW_S:.0f}s: "
                                                        "KRB_AP_ERR_SKEW)",
                                   fix="synchronize the clocks (chrony/ntpd) of this host, the KDCs and the "
                                       "servers named"))
    else:
        measured = [p for p in facts.probes if p.skew_s is not None]
        worst = max(measured, key=lambda p: abs(p.skew_s), default=None)
        if worst is not None and abs(worst.skew_s) > WARN_SKEW_S:
            results.append(CheckResult("clock_skew", False, f"{worst.cluster} {worst.channel} {worst.endpoint}: "
                                                            f"its clock is {_skew_words(worst.skew_s)} this host's",
                                       severity=WARNING, fix="synchronize the clocks before they drift past "
                                                             f"{MAX_SKEW_S:.0f}s"))
        elif worst is not None:
            results.append(CheckResult("clock_skew", True, f"worst: {worst.cluster} {worst.channel} "
                                                           f"{worst.endpoint} {_skew_words(worst.skew_s)} this host"))
    return results


# ------------------------------------------------------------------------------------------------
# Gathering facts (I/O, read-only)


def _problem(error: BaseException, principal: str | None, service: str | None) -> tuple[str, str | None, str]:
    """(message, kind, fix) of an exception met while probing."""
    from hbase_migration.clusters.sasl import QopMismatch

    if isinstance(error, QopMismatch):
        return str(error), "qop", ""
    problem = getattr(error, "problem", None) or explain(str(error), principal, service)
    kind = problem.kind if problem.kind != "other" else ("unreachable" if unreachable(error) else "refused")
    return f"{type(error).__name__}: {error}", kind, problem.fix


def _date_skew(response: Any, started: float, ended: float) -> float | None:
    text = response.headers.get("Date") if response is not None else None
    if not text:
        return None
    try:
        server = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None
    return server - (started + ended) / 2


def _probe(which: str, cluster: "Cluster", channel: str, endpoint: str, service: str | None,
           fn: Callable[[], Any], wanted_qop: str | None = None) -> Probe:
    """Run `fn()` (which raises on failure; returns an HTTP response or a SASL client, or None) into a Probe."""
    from hbase_migration.clusters.sasl import QopMismatch

    principal = cluster.security.principal
    started = time.time()
    try:
        result = fn()
    except Exception as e:
        message, kind, fix = _problem(e, principal, service)
        offered = e.offered if isinstance(e, QopMismatch) else ()
        response = getattr(e, "response", None)
        return Probe(which, cluster.name, channel, endpoint, service, message, kind, fix, offered, wanted_qop,
                     _date_skew(response, started, time.time()))
    skew = _date_skew(result, started, time.time()) if hasattr(result, "headers") else None
    offered = tuple(getattr(result, "offered", ()) or ())
    return Probe(which, cluster.name, channel, endpoint, service, offered_qop=offered, wanted_qop=wanted_qop,
                 skew_s=skew)


def _http_get(cluster: "Cluster", url: str, params: dict[str, str]) -> Any:
    from hbase_migration.clusters import channels

    response = channels.http(cluster).get(url, params=params, timeout=cluster.timeout_s)
    if response.status_code in (401, 403):
        raise _HttpRefused(f"{url} answered HTTP {response.status_code}", response)
    return response


class _HttpRefused(Exception):
    def __init__(self, message: str, response: Any):
        super().__init__(message)
        self.response = response


def probes_of(which: str, cluster: "Cluster", zk_client: Any = None) -> list[Probe]:
    """Every endpoint of `cluster` the migration uses, probed with the toolkit's principal."""
    from hbase_migration.clusters import channels, kerberos, zk

    security = cluster.security
    login = kerberos.login(security, cluster.name)
    out: list[Probe] = []

    def ticket(target: str, what: str) -> Callable[[], None]:
        return lambda: login.service_ticket(target, what)

    if security.zookeeper_sasl:
        for host_port in cluster.zk_hosts.split(","):
            host = host_port.rsplit(":", 1)[0]
            service = server_principal(security.zookeeper_principal, host)
            out.append(_probe(which, cluster, "zookeeper", host_port, service,
                              ticket(service, f"ZooKeeper {host_port}")))
    for kind, gateways in (("thrift1", cluster.thrift_servers), ("thrift2", cluster.thrift2_servers)):
        for gateway in gateways:
            host = gateway.rsplit(":", 1)[0]
            if security.thrift_sasl:
                service = server_principal(security.thrift_service_principal, host)
                out.append(_probe(which, cluster, kind, gateway, service,
                                  lambda g=gateway: channels.thrift_handshake(cluster, g, cluster.timeout_s),
                                  wanted_qop=security.thrift_qop))
            elif security.thrift_http and security.http_spnego:
                service = server_principal(security.spnego_principal, host)
                out.append(_probe(which, cluster, kind, gateway, service,
                                  lambda g=gateway, k=kind: channels.thrift_call_probe(cluster, g, k)))
    if security.http_spnego:
        servers = []
        try:
            if zk_client is not None:
                servers = zk.live_region_servers(zk_client, cluster.znode_parent)
            else:
                with zk.connect(cluster, timeout=cluster.timeout_s) as client:
                    servers = zk.live_region_servers(client, cluster.znode_parent)
        except Exception as e:  # the ZooKeeper probe (or preflight's reachability check) says why
            log.warning("preflight: %s's region servers not listed (%s); their /jmx is not probed", cluster.name, e)
        for server in servers:
            port = cluster.info_port or server.info_port
            if port is None:
                continue
            url = f"http://{server.host}:{port}/jmx"
            service = server_principal(security.spnego_principal, server.host)
            out.append(_probe(which, cluster, "jmx", f"{server.host}:{port}", service,
                              lambda u=url: _http_get(cluster, u, {"qry": JMX_PROBE_BEAN})))
        if cluster.webhdfs_url:
            from urllib.parse import urlsplit

            base = cluster.webhdfs_url.rstrip("/")
            base = base[: -len("/webhdfs/v1")] if base.endswith("/webhdfs/v1") else base
            service = server_principal(security.spnego_principal, urlsplit(base).hostname or "")
            out.append(_probe(which, cluster, "webhdfs", base, service,
                              lambda: _http_get(cluster, f"{base}/webhdfs/v1{cluster.rootdir}",
                                                {"op": "GETFILESTATUS"})))
    return out


def gather(source: "Cluster", target: "Cluster") -> SecurityFacts:
    from hbase_migration.clusters import kerberos
    from hbase_migration.clusters.security import SecurityConfigError

    logins, probes, open_clusters = [], [], []
    conf_error = None
    confs = {c.name: c.security.krb5_conf for c in (source, target) if c.security and c.security.krb5_conf}
    if len(set(confs.values())) > 1:
        conf_error = "the connections name different krb5.conf files: " + ", ".join(
            f"{name}: {path}" for name, path in confs.items())
    for which, cluster in (("source", source), ("target", target)):
        security = cluster.security
        if security is None or not security.kerberos:
            open_clusters.append(cluster.name)
            continue
        try:
            login = kerberos.login(security, cluster.name)
            login.credentials()
        except (kerberos.KerberosError, SecurityConfigError) as e:
            problem = getattr(e, "problem", None)
            logins.append(LoginFact(which, cluster.name, security.principal, security.keytab, str(e),
                                    problem.kind if problem else "config", problem.fix if problem else None))
            continue
        logins.append(LoginFact(which, cluster.name, security.principal, security.keytab))
        probes += probes_of(which, cluster)
    return SecurityFacts(tuple(logins), tuple(probes), conf_error, tuple(open_clusters))


def check(source: "Cluster", target: "Cluster") -> list[CheckResult]:
    """The security checks of a preflight ([] when neither cluster is Kerberized)."""
    if not any(c.security is not None and c.security.kerberos for c in (source, target)):
        return []
    return evaluate(gather(source, target))
