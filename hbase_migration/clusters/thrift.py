"""Thrift access to a cluster: the Thrift1 session (as happybase speaks it) that re-opens after a transport
error, which errors are worth retrying (Thrift1's and Thrift2's), and the tenacity retry loop every session
uses. happybase is imported inside functions.
"""
from __future__ import annotations

import logging
import random
import socket
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.clusters.idl import THRIFT2_MODULE

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)


# HBase exceptions (as named in a Thrift IOError's message, which carries the Java stack trace)
# that a later attempt can get past. happybase's Hbase.thrift predates IOError.canRetry, so the
# message is all a happybase client sees; when a generated class has canRetry it is believed.
RETRYABLE_HBASE_ERRORS = (
    "NotServingRegionException", "RegionMovedException", "RegionTooBusyException", "RegionOpeningException",
    "RetriesExhaustedException", "CallTimeoutException", "CallQueueTooBigException", "SocketTimeoutException",
    "ConnectException", "ServerNotRunningYetException", "PleaseHoldException", "ServerTooBusyException",
    "MultiActionResultTooLarge",
)
# Errors cured by re-opening the scanner after the last row (they are DoNotRetry for the old scanner).
SCANNER_LOST_ERRORS = ("UnknownScannerException", "LeaseException", "ScannerResetException")


# The IDL exception types that carry an HBase exception's text: Thrift1's IOError (happybase's module) and
# Thrift2's TIOError (the toolkit's own IDL, hbase_migration/clusters/hbase2.thrift).
HBASE_IO_ERRORS = {("IOError", "Hbase_thrift"), ("TIOError", THRIFT2_MODULE)}


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: lost connections, timeouts, retryable HBase IOErrors,
    and a lost scanner (the scan is reopened just after its last row)."""
    from thriftpy2.transport import TTransportException

    if isinstance(exc, (TTransportException, socket.timeout, ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, OSError) and not isinstance(exc, (FileNotFoundError, PermissionError)):
        return True
    if (type(exc).__name__, type(exc).__module__) in HBASE_IO_ERRORS:
        message = str(getattr(exc, "message", "") or "")
        if any(s in message for s in SCANNER_LOST_ERRORS):
            return True
        can_retry = getattr(exc, "canRetry", None)
        if can_retry is not None:
            return bool(can_retry)
        return any(s in message for s in RETRYABLE_HBASE_ERRORS)
    return False


def failover(current: str, gateways: Sequence[str]) -> str:
    """The gateway a re-opened session moves to: another one of the cluster's, when it has several (a gateway
    that died costs one retry), else the same."""
    others = [g for g in gateways if g != current]
    return random.choice(others) if others else current


def connect_any(session: Any, gateways: Sequence[str], connect: Callable[[str], None]) -> None:
    """`connect(gateway)` for the session's gateway, then, if it cannot be reached, each other gateway of the
    cluster in turn (a gateway that died before the session opened costs nothing but this). Sets
    `session.gateway` to the one that answered; raises ConnectionError naming every one tried."""
    order = [session.gateway] + [g for g in gateways if g != session.gateway]
    errors = []
    for gateway in order:
        try:
            connect(gateway)
        except ConnectionError as e:
            errors.append(str(e))
            continue
        session.gateway = gateway
        return
    raise ConnectionError("; ".join(errors))


class ThriftSession:
    """One Thrift1 connection to one of a cluster's gateways, re-opened (on another gateway, if there are
    several) after a transport error."""

    def __init__(self, cluster: "Cluster", timeout_s: float | None = None, gateway: str | None = None):
        self.cluster = cluster
        self.timeout_s = timeout_s if timeout_s is not None else cluster.timeout_s
        self.gateway = gateway or cluster.thrift_servers[0]
        self.connection: Any = None
        self.reconnects = 0
        self.open()

    def open(self) -> None:
        connect_any(self, self.cluster.thrift_servers, self._connect)

    def _connect(self, gateway: str) -> None:
        from hbase_migration.clusters import channels

        self.connection = channels.thrift1(self.cluster, gateway, self.timeout_s)
        try:
            self.connection.open()
        except channels.auth_errors():
            raise  # not a ConnectionError: another gateway or a retry would be refused the same way
        except Exception as e:
            raise ConnectionError(
                f"cluster {self.cluster.name!r}: cannot reach the Thrift server at {gateway}: {e}"
            ) from e

    @property
    def client(self) -> Any:
        return self.connection.client

    def reopen(self) -> None:
        self.close()
        self.reconnects += 1
        self.gateway = failover(self.gateway, self.cluster.thrift_servers)
        self.open()

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:  # closing a broken socket may fail; nothing is left to release
                pass

    def __enter__(self) -> "ThriftSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, api: str, *args: Any, retries: int = 5, wait_cap: float = 10.0) -> Any:
        """One Thrift call, retried (with a fresh connection) on a transient error."""
        return retrying(self, lambda: getattr(self.client, api)(*args), retries, wait_cap, api)

    def pipelined(self, api: str, calls: Sequence[Mapping[str, Any]]) -> list[Any]:
        return pipelined(self.client, api, calls)


def pipelined(client: Any, api: str, calls: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Send every call, then read every answer: one round trip for many calls (thriftpy2's client).

    Safe from deadlock when one direction is small (mutations answer nothing; getVer requests are tiny). An
    error answer is raised after all answers are read, so the connection stays in step; a transport error
    leaves it unusable (the caller re-opens it and re-sends: the calls are idempotent).
    """
    for kwargs in calls:
        client._send(api, **kwargs)
    results: list[Any] = []
    first_error: BaseException | None = None
    for _ in calls:
        try:
            results.append(client._recv(api))
        except Exception as e:
            from thriftpy2.transport import TTransportException

            if isinstance(e, (TTransportException, OSError)):
                raise
            results.append(None)
            first_error = first_error or e
    if first_error is not None:
        raise first_error
    return results


def retrying(session: Any, fn: Callable[[], Any], retries: int = 8, wait_cap: float = 20.0,
             what: str = "call", on_retry: Callable[[BaseException], None] | None = None,
             transient: Callable[[BaseException], bool] = is_transient) -> Any:
    """`fn()` until it succeeds, a non-transient error, or `retries` attempts (tenacity, exponential
    backoff with full jitter, capped at `wait_cap` seconds). `session` is any session with `reopen()` and
    `cluster` (Thrift1's or Thrift2's); `transient` says which errors are worth another attempt.

    Every attempt after the first re-opens the connection first, so a server that is still down (the
    re-open is refused) costs an attempt instead of ending the retries. Safe for writes: re-writing a
    cell with its timestamp changes nothing.
    """
    import tenacity

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        if on_retry is not None and error is not None:
            on_retry(error)
        log.warning("%s on %s failed (%s: %s); retry %d/%d on a new connection", what, session.cluster.name,
                    type(error).__name__, error, state.attempt_number, retries - 1)

    for attempt in tenacity.Retrying(
        retry=tenacity.retry_if_exception(transient),
        stop=tenacity.stop_after_attempt(retries),
        wait=tenacity.wait_random_exponential(multiplier=0.2, max=wait_cap),
        before_sleep=before_sleep,
        reraise=True,
    ):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                session.reopen()
            result = fn()
    return result
