"""Every channel to a cluster opens here, with the cluster's security applied (ARCHITECTURE.md).

- ZooKeeper: kazoo, with SASL GSSAPI when the cluster names `zookeeper_principal`;
- Thrift1 (happybase) and Thrift2 (thriftpy2): plain binary as the cluster's transport/protocol say; SASL GSSAPI
  with the QOP `thrift_qop` names; or HBase's HTTP mode (`thrift_http`) with SPNEGO, over TLS with `thrift_ssl`;
- HTTP (`/jmx`, `/conf`, WebHDFS): SPNEGO when the cluster names `spnego_principal`, its CA bundle for https;
- the HBase shell, one call or a session kept open: a ticket cache of the toolkit's own, filled from the keytab
  (KRB5CCNAME, KRB5_CONFIG);
- a plain TCP socket to a region server's RPC port, for the probe `data_path: auto` makes (rpc_probe.py).

An open cluster (no security extras) gets exactly the clients it always had, at no extra cost. Timeouts and
retries stay with the callers (thrift.retrying, the /jmx and WebHDFS readers), but for ZooKeeper's reads: those
are sent again here after a lost connection or an expired session (kazoo opens the new session itself). An
authentication failure raises `kerberos.KerberosError` or `sasl.SaslError`, never a ConnectionError: retrying
would fail the same way.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from hbase_migration.clusters.security import Security, server_principal

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from hbase_migration.clusters.cluster import Cluster, ClusterKey
    from hbase_migration.clusters.shell import ShellOutput, ShellSession

log = logging.getLogger(__name__)


def security_of(cluster: Any) -> Security | None:
    return getattr(cluster, "security", None)


def _login(cluster: "Cluster") -> Any:
    from hbase_migration.clusters import kerberos

    return kerberos.login(cluster.security, cluster.name)


def auth_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "authentication failed" (for `except` clauses that must not wrap them)."""
    from hbase_migration.clusters.kerberos import KerberosError
    from hbase_migration.clusters.sasl import SaslError

    return (KerberosError, SaslError)


# --------------------------------------------------------------------------------------------------
# ZooKeeper


class ZooKeeperUnreachable(ConnectionError):
    """No ZooKeeper server of the quorum answered within the timeout."""


def _rereading_client_class() -> type:
    """KazooClient whose reads outlive a lost connection or an expired session, and never wait unbounded.

    On an expiry kazoo fails the request in flight (SessionExpiredError, or ConnectionLoss first) and opens a
    new session by itself; a read is safe to send again, so `get`, `exists` and `get_children` are, for up to
    `reread_s` seconds in all (chaos seed 12: one expiry failed a whole try of `enable_peer`). Past it, the last
    error is raised, a read left unanswered as ConnectionLoss (a partition: kazoo alone would wait for the
    reconnection however long it took).
    Writes are not sent again: the replication backends change znodes conditionally and read the outcome back."""
    global _REREADING
    if _REREADING is not None:
        return _REREADING
    import time

    from kazoo.client import KazooClient
    from kazoo.exceptions import ConnectionLoss, SessionExpiredError

    class RereadingKazooClient(KazooClient):
        reread_s = 30.0
        toolkit_hosts = ""

        def _reread(self, read_async: Any, *args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + self.reread_s
            delay, warned = 0.1, False
            while True:
                try:
                    return read_async(*args, **kwargs).get(timeout=max(deadline - time.monotonic(), 0.1))
                except self.handler.timeout_exception:
                    raise ConnectionLoss(f"ZooKeeper {self.toolkit_hosts} did not answer a read within "
                                         f"{self.reread_s:.0f}s") from None
                except (ConnectionLoss, SessionExpiredError) as e:
                    if time.monotonic() + delay >= deadline:
                        raise
                    if not warned:
                        log.warning("ZooKeeper %s: %s during a read; reading again, on a new session if it "
                                    "expired, for up to %.0fs", self.toolkit_hosts, type(e).__name__,
                                    self.reread_s)
                        warned = True
                    time.sleep(delay)
                    delay = min(delay * 2, 2.0)

        def get(self, path: str, watch: Any = None) -> Any:
            return self._reread(self.get_async, path, watch=watch)

        def exists(self, path: str, watch: Any = None) -> Any:
            return self._reread(self.exists_async, path, watch=watch)

        def get_children(self, path: str, watch: Any = None, include_data: bool = False) -> Any:
            return self._reread(self.get_children_async, path, watch=watch, include_data=include_data)

    _REREADING = RereadingKazooClient
    return _REREADING


_REREADING: type | None = None


def zookeeper(target: "Cluster | ClusterKey | str", timeout: float = 10.0,
              logger: logging.Logger | None = None) -> "KazooClient":
    """A started KazooClient for a cluster's quorum (a `Cluster`, a `ClusterKey`, or a connect string
    `h1:2181,h2:2181[/chroot]`), whose reads are sent again after a lost connection or session for up to
    `max(3 * timeout, 30)` seconds. With SASL the first call confirms the authentication (kazoo reports the
    connection before its SASL exchange). Raises ZooKeeperUnreachable when no server answers in `timeout`."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import AuthFailedError
    from kazoo.handlers.threading import KazooTimeoutError

    hosts = target if isinstance(target, str) else target.zk_hosts
    if not hosts or not hosts.strip():
        raise ValueError(f"ZooKeeper hosts must be 'host:port[,host:port][/chroot]', got {hosts!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    security = security_of(target)
    errors: list[BaseException] = []
    options: dict[str, Any] = {}
    if security is not None and security.zookeeper_sasl:
        from hbase_migration.clusters import sasl

        login = _login(target)
        login.credentials()  # a keytab problem is named now, not as a ZooKeeper time-out
        options["sasl_options"] = {"mechanism": sasl.zookeeper_mechanism().name, "login": login,
                                   "principal_pattern": security.zookeeper_principal, "errors": errors}
    if logger is not None:  # kazoo's own (its connection lines: INFO) to another logger
        options["logger"] = logger
    client = _rereading_client_class()(hosts=hosts, timeout=max(timeout, 1.0), **options)
    client.toolkit_hosts, client.reread_s = hosts, max(3 * timeout, 30.0)
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.stop()
        client.close()
        if errors:
            raise _zk_auth_failure(target, security, errors) from None
        raise ZooKeeperUnreachable(
            f"ZooKeeper quorum {hosts} did not answer within {timeout:g}s: check the quorum hosts, "
            "the client port and that ZooKeeper is running") from None
    if options:
        try:
            KazooClient.exists(client, "/")  # once: an authentication failure is not waited out
        except AuthFailedError:
            pass
        if errors or client.client_state == "AUTH_FAILED":
            client.stop()
            client.close()
            raise _zk_auth_failure(target, security, errors)
    return client


def _zk_auth_failure(target: Any, security: Security, errors: list[BaseException]) -> Exception:
    from hbase_migration.clusters.kerberos import KerberosError

    if errors and isinstance(errors[-1], auth_errors()):
        return errors[-1]
    detail = f"{type(errors[-1]).__name__}: {errors[-1]}" if errors else "the server closed the connection"
    return KerberosError(
        f"ZooKeeper {target.zk_hosts} refused SASL GSSAPI as {security.principal} for "
        f"{security.zookeeper_principal} ({detail}). Fix: zookeeper_principal must be the servers' principal "
        "(zoo.cfg's JAAS Server section), and the servers need authProvider.1=org.apache.zookeeper.server.auth."
        "SASLAuthenticationProvider")


# --------------------------------------------------------------------------------------------------
# A region server's RPC port (the probe `data_path: auto` makes: rpc_probe.py)


def tcp(host: str, port: int, timeout_s: float, bind_address: str | None = None) -> Any:
    """A plain TCP socket to a cluster's server port, leaving from `bind_address` (a connection's
    `client_bind_address`, as the native path's client does). No security applies: HBase answers the probe's
    preamble before any authentication. Raises OSError."""
    import socket

    return socket.create_connection((host, port), timeout=timeout_s,
                                    source_address=(bind_address, 0) if bind_address else None)


# --------------------------------------------------------------------------------------------------
# Thrift


def _split(gateway: str) -> tuple[str, int]:
    host, _, port = gateway.rpartition(":")
    return host, int(port)


def secured_thrift(cluster: Any) -> bool:
    security = security_of(cluster)
    return security is not None and (security.thrift_sasl or security.thrift_http)


def _thrift_base(cluster: "Cluster", gateway: str, timeout_s: float) -> Any:
    """The transport a secured gateway needs under the buffered transport: SASL over a socket, or HTTP."""
    from thriftpy2.transport import TSocket

    from hbase_migration.clusters.thrift_transports import THttpTransport, TSaslClientTransport

    security = cluster.security
    host, port = _split(gateway)
    if security.thrift_http:
        url = f"{'https' if security.thrift_ssl else 'http'}://{host}:{port}/"
        return THttpTransport(url, lambda: _session(cluster), timeout_s, f"Thrift gateway {url}")
    from hbase_migration.clusters.sasl import GssapiSaslClient

    login = _login(cluster)
    target = server_principal(security.thrift_service_principal, host)
    endpoint = f"Thrift gateway {gateway} of {cluster.name}"
    ms = int(timeout_s * 1000)
    socket = TSocket(host, port, socket_timeout=ms, connect_timeout=ms)
    return TSaslClientTransport(socket, lambda: GssapiSaslClient(login, target, (security.thrift_qop,), endpoint),
                                endpoint)


_secured_happybase: Any = None


def thrift1(cluster: "Cluster | None", gateway: str, timeout_s: float) -> Any:
    """A happybase Connection (not yet opened) to one Thrift1 gateway of `cluster` (None: a plain gateway with
    happybase's defaults)."""
    global _secured_happybase
    import happybase

    host, port = _split(gateway)
    ms = int(timeout_s * 1000)
    if not secured_thrift(cluster):
        return happybase.Connection(host=host, port=port, timeout=ms, autoconnect=False,
                                    transport=getattr(cluster, "thrift_transport", "buffered"),
                                    protocol=getattr(cluster, "thrift_protocol", "binary"))
    if _secured_happybase is None:
        from happybase.connection import Hbase, TClient
        from thriftpy2.transport import TCyBufferedTransport

        class SecuredConnection(happybase.Connection):
            """happybase over a SASL or HTTP transport: happybase builds its transport in
            `_refresh_thrift_client` (also on every re-open), so that is where it is replaced."""

            def __init__(self, base: Any, **kwargs: Any):
                self._base = base
                super().__init__(**kwargs)

            def _refresh_thrift_client(self) -> None:
                self.transport = TCyBufferedTransport(self._base())
                self.client = TClient(Hbase, self._protocol_class(self.transport, decode_response=False))

        _secured_happybase = SecuredConnection
    return _secured_happybase(lambda: _thrift_base(cluster, gateway, timeout_s), host=host, port=port, timeout=ms,
                              transport="buffered", protocol=cluster.thrift_protocol, autoconnect=False)


def _thrift_factories(cluster: Any) -> tuple[Any, Any]:
    from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
    from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

    framed = cluster.thrift_transport == "framed" and not secured_thrift(cluster)  # SASL/HTTP frame themselves
    transport = TFramedTransportFactory() if framed else TBufferedTransportFactory()
    protocol = TCompactProtocolFactory() if cluster.thrift_protocol == "compact" else TBinaryProtocolFactory()
    return transport, protocol


def thrift2(cluster: "Cluster", gateway: str, timeout_s: float, service: Any) -> Any:
    """An open thriftpy2 client of `service` (THBaseService) on one Thrift2 gateway of `cluster`."""
    from thriftpy2.rpc import make_client

    host, port = _split(gateway)
    transport, protocol = _thrift_factories(cluster)
    ms = int(timeout_s * 1000)
    if not secured_thrift(cluster):
        return make_client(service, host, port, timeout=ms, trans_factory=transport, proto_factory=protocol)
    from thriftpy2.thrift import TClient

    trans = transport.get_transport(_thrift_base(cluster, gateway, timeout_s))
    trans.open()
    return TClient(service, protocol.get_protocol(trans))


def thrift_handshake(cluster: "Cluster", gateway: str, timeout_s: float) -> Any:
    """Open and close a SASL connection to a binary gateway (preflight): the SASL client, which says the QOP the
    gateway offered and the one agreed. Raises as opening a session would."""
    base = _thrift_base(cluster, gateway, timeout_s)
    base.open()
    try:
        return base.sasl
    finally:
        base.close()


def thrift_call_probe(cluster: "Cluster", gateway: str, kind: str) -> None:
    """One cheap call on a gateway (preflight of HTTP mode, where authentication happens per request)."""
    if kind == "thrift2":
        from hbase_migration.clusters.idl import hbase2

        client = thrift2(cluster, gateway, cluster.timeout_s, hbase2().THBaseService)
        try:
            client.getThriftServerType()
        finally:
            client.close()
        return
    connection = thrift1(cluster, gateway, cluster.timeout_s)
    connection.open()
    try:
        connection.client.getTableNames()
    finally:
        connection.close()


# --------------------------------------------------------------------------------------------------
# HTTP (/jmx, /conf, WebHDFS, Thrift's HTTP mode)

_local = threading.local()


def _session(cluster: "Cluster") -> Any:
    import requests

    from hbase_migration.clusters.spnego import SpnegoAuth

    security = cluster.security
    verify = security.ssl_ca if (security.ssl_verify and security.ssl_ca) else security.ssl_verify

    class ClusterSession(requests.Session):
        """`verify` passed with every request: a Session's own `verify` loses to REQUESTS_CA_BUNDLE and
        CURL_CA_BUNDLE in the environment (requests merges those first), which would drop the cluster's CA."""

        def request(self, method: str, url: str, **kwargs: Any) -> Any:
            kwargs.setdefault("verify", verify)
            return super().request(method, url, **kwargs)

    session = ClusterSession()
    if security.http_spnego:
        session.auth = SpnegoAuth(_login(cluster), security.spnego_principal)
    return session


def http(cluster: Any) -> Any:
    """What HTTP requests to `cluster` go through: `requests` itself for an open cluster (or None), else a
    requests.Session (one per thread and cluster) with SPNEGO and the cluster's TLS settings."""
    import requests

    security = security_of(cluster)
    if security is None or not (security.http_spnego or security.ssl_ca or not security.ssl_verify):
        return requests
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = {}
    key = (cluster.name, security)
    if key not in sessions:
        sessions[key] = _session(cluster)
    return sessions[key]


# --------------------------------------------------------------------------------------------------
# The HBase shell


# The sessions `one_shell_per_cluster` keeps open for its block: {key: (ExitStack, ShellSession)}, or None.
_shared_shells: contextvars.ContextVar[dict | None] = contextvars.ContextVar("hbase_shells", default=None)
_shared_lock = threading.RLock()


@contextlib.contextmanager
def one_shell_per_cluster() -> Iterator[None]:
    """Within the block, `shell()` runs each cluster's statements in one `hbase shell` kept open (opened at its
    first call), not in a shell of their own: a task that reads schemas, namespaces and switches, creates and
    describes again pays one JVM start per cluster (10-30 s each on a real cluster) instead of one per call.
    The statements and what they print are the same; a statement that fails ends that session (`-n`) and
    raises as a call of its own would, and the next call opens a new one. Closed on leaving the block."""
    if _shared_shells.get() is not None:  # nested: the outer block's sessions serve
        yield
        return
    sessions: dict = {}
    token = _shared_shells.set(sessions)
    try:
        yield
    finally:
        _shared_shells.reset(token)
        for stack, _ in sessions.values():
            with contextlib.suppress(Exception):  # closing a dead or stuck shell must not hide the block's error
                stack.close()


def _shared_shell(sessions: dict, cluster: "Cluster", statements: Sequence[str], timeout: float) -> "ShellOutput":
    from hbase_migration.clusters.shell import ShellCommandError

    key = (cluster.name, tuple(cluster.shell_command))
    if key not in sessions or not sessions[key][1].alive:
        if key in sessions:
            sessions.pop(key)[0].close()
        stack = contextlib.ExitStack()
        try:
            sessions[key] = (stack, stack.enter_context(shell_session(cluster, timeout_s=timeout)))
        except BaseException:
            stack.close()
            raise
    stack, session = sessions[key]
    log.info("running %d statement(s) in the open shell of %s: %s", len(statements), cluster.name,
             "; ".join(statements))
    try:
        with _shared_lock:  # a session takes one caller at a time (a thread that copied the block's context)
            return session.run(statements, timeout_s=timeout)
    except ShellCommandError:
        sessions.pop(key, None)
        stack.close()  # a failed statement ended it (`-n`), or a timeout killed it
        raise


def shell(cluster: "Cluster", statements: Sequence[str], timeout_s: float | None = None) -> "ShellOutput":
    """`statements` through the cluster's `shell_command` (clusters.shell.run_shell), with a Kerberos ticket
    of the toolkit's own when the cluster is Kerberized; inside `one_shell_per_cluster`, in its open shell."""
    from hbase_migration.clusters.shell import run_shell

    timeout = cluster.shell_timeout_s if timeout_s is None else timeout_s
    sessions = _shared_shells.get()
    if sessions is not None:
        if not statements:
            raise ValueError("no statements to run")
        return _shared_shell(sessions, cluster, statements, timeout)
    security = security_of(cluster)
    if security is None or not security.kerberos:
        return run_shell(statements, cluster.shell_command, timeout)
    from hbase_migration.clusters import kerberos

    with kerberos.shell_cache(security, cluster.name).kept_fresh() as env:
        return run_shell(statements, cluster.shell_command, timeout, env=env)


@contextlib.contextmanager
def shell_session(cluster: "Cluster", timeout_s: float | None = None) -> Iterator["ShellSession"]:
    """An open `clusters.shell.ShellSession` on the cluster's `shell_command` (its start paid here, not when its
    statements run), with a Kerberos ticket of the toolkit's own kept fresh for as long as it is open; closed on
    leaving."""
    from hbase_migration.clusters.shell import ShellSession

    timeout = max(cluster.shell_timeout_s if timeout_s is None else timeout_s, 60.0)
    security = security_of(cluster)
    with contextlib.ExitStack() as stack:
        env = None
        if security is not None and security.kerberos:
            from hbase_migration.clusters import kerberos

            env = stack.enter_context(kerberos.shell_cache(security, cluster.name).kept_fresh())
        session = ShellSession(cluster.shell_command, env=env)
        stack.callback(session.close)
        yield session.open(timeout)
