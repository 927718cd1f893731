"""A fact, or a failure to learn one: did an endpoint not answer, or did it answer something definite?

Every step applies one rule to its errors (issue 24): a check that could not be made because a cluster's
ZooKeeper, a Thrift gateway, an info server's `/jmx` or `/conf`, WebHDFS or the HBase shell did not answer (a lost
connection, an expired ZooKeeper session, a timeout, an HTTP 5xx, a server that says it cannot serve *now*) is an
operational failure: the task retries with its normal policy. An answer that states a fact (a missing znode or
table, a refused statement, an HTTP 4xx, a wrong keytab) is kept as what it is: retrying cannot change it.
"""
from __future__ import annotations

# What an HBase or HDFS server answers while it cannot serve for now: a region in transition, a master starting
# or failing over, a standby NameNode, a server shutting down, a call queue full. Read in the message of a Thrift
# IOError, a shell's ERROR line or a WebHDFS RemoteException.
NOT_NOW = (
    "NotServingRegionException", "RegionMovedException", "RegionTooBusyException", "RegionOpeningException",
    "RetriesExhaustedException", "CallTimeoutException", "CallQueueTooBigException", "SocketTimeoutException",
    "ConnectException", "ServerNotRunningYetException", "PleaseHoldException", "ServerTooBusyException",
    "MasterNotRunningException", "ConnectionClosingException", "ConnectionClosedException",
    "StandbyException", "RetriableException", "SafeModeException", "ConnectionLoss", "SessionExpired",
    "Connection refused", "Connection reset",
)


def _one(exc: BaseException) -> bool:
    """This exception alone (not its causes) says an endpoint did not answer."""
    from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
    from kazoo.handlers.threading import KazooTimeoutError

    from hbase_migration.clusters.hdfs import WebHdfsRemoteError, WebHdfsUnreachable
    from hbase_migration.clusters.shell import ShellCommandError

    if isinstance(exc, (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)):
        return True
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):  # an HTTP answer: 5xx (and 429) are "not now", every other status a fact
        return status >= 500 or status == 429
    if isinstance(exc, ShellCommandError):  # a shell that hung, or an HBase that could not serve the statement
        return exc.timed_out or any(s in str(exc) for s in NOT_NOW)
    if isinstance(exc, WebHdfsUnreachable):  # retried already, no answer
        return True
    if isinstance(exc, WebHdfsRemoteError):  # the NameNode answered: only a standby or safe mode is "not now"
        return any(s in f"{exc.java_class} {exc.exception}" for s in NOT_NOW)
    from hbase_migration.clusters.thrift import is_transient

    return is_transient(exc)  # lost connections, timeouts, OSErrors, Thrift IOErrors with a retryable cause


def unreachable(exc: BaseException) -> bool:
    """True when `exc`, or an error it was raised from, says an endpoint did not answer (see the module); False
    when any of them is a refused credential (a fact about the keytab or QOP, whatever wrapped it)."""
    from hbase_migration.clusters.channels import auth_errors

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    for error in chain:
        if isinstance(error, auth_errors()) and not isinstance(error, ConnectionError):
            # only a KDC that did not answer is "not now"; a refused ticket or QOP stays refused
            return getattr(getattr(error, "problem", None), "kind", None) == "kdc_unreachable"
    return any(_one(error) for error in chain)


def describe(exc: BaseException) -> str:
    """The error as checks report it: `Type: message`."""
    return f"{type(exc).__name__}: {exc}"
