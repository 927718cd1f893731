"""Thrift access to a cluster: the Thrift1 session (as happybase speaks it) that re-opens after a transport
error, which errors are worth retrying (Thrift1's and Thrift2's), and the tenacity retry loop every session
uses. happybase is imported inside functions.
"""
from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.cluster import Cluster

log = logging.getLogger(__name__)


def hbase_thrift() -> Any:
    """The thriftpy2 module happybase generated from Hbase.thrift (TScan, Mutation, ...)."""
    import happybase  # noqa: F401  (loads and registers the Hbase_thrift module)
    import Hbase_thrift

    return Hbase_thrift


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
# Thrift2's TIOError (the toolkit's own IDL, hbase_migration/datapath/hbase2.thrift).
HBASE_IO_ERRORS = {("IOError", "Hbase_thrift"), ("TIOError", "hbase_migration_thrift2_thrift")}


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


class ThriftSession:
    """One Thrift connection to a cluster that can be re-opened after a transport error."""

    def __init__(self, cluster: "Cluster", timeout_s: float | None = None):
        self.cluster = cluster
        self.timeout_s = timeout_s if timeout_s is not None else cluster.timeout_s
        self.connection: Any = None
        self.reconnects = 0
        self.open()

    def open(self) -> None:
        import happybase

        self.connection = happybase.Connection(
            host=self.cluster.thrift_host,
            port=self.cluster.thrift_port,
            timeout=int(self.timeout_s * 1000),
            transport=self.cluster.thrift_transport,
            protocol=self.cluster.thrift_protocol,
            autoconnect=False,
        )
        try:
            self.connection.open()
        except Exception as e:
            raise ConnectionError(
                f"cluster {self.cluster.name!r}: cannot reach the Thrift server at "
                f"{self.cluster.thrift_host}:{self.cluster.thrift_port}: {e}"
            ) from e

    @property
    def client(self) -> Any:
        return self.connection.client

    def reopen(self) -> None:
        self.close()
        self.reconnects += 1
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
