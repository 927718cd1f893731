"""The one rule every step applies to its errors: an endpoint that did not answer (retry) or an answer that is a
fact (fail at once). One case per class of error."""
from __future__ import annotations

import socket

import pytest
import requests
from kazoo.exceptions import ConnectionLoss, NoAuthError, NoNodeError, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from thriftpy2.transport import TTransportException

from hbase_migration.clusters.channels import ZooKeeperUnreachable
from hbase_migration.clusters.hdfs import HdfsPathNotFound, WebHdfsRemoteError, WebHdfsUnreachable
from hbase_migration.clusters.idl import hbase2, hbase_thrift
from hbase_migration.clusters.kerberos import KerberosError
from hbase_migration.clusters.reachability import describe, unreachable
from hbase_migration.clusters.sasl import QopMismatch, SaslConnectionLost
from hbase_migration.clusters.security import explain
from hbase_migration.clusters.shell import ShellCommandError
from hbase_migration.clusters.zk import ZnodeMissing
from hbase_migration.data.datapath.base import PartitionFailed
from hbase_migration.replication.metrics import JmxUnavailable


def http_error(status: int) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(f"{status} answered", response=response)


def raised_from(outer: BaseException, cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise outer from inner
    except BaseException as e:
        return e


NO_ANSWER = {
    "zookeeper connection loss": ConnectionLoss(),
    "zookeeper session expired": SessionExpiredError(),
    "zookeeper operation timeout": OperationTimeoutError(),
    "kazoo start timeout": KazooTimeoutError("Connection time-out"),
    "no zookeeper server answered": ZooKeeperUnreachable("ZooKeeper quorum h:2181 did not answer within 10s"),
    "connection refused": ConnectionRefusedError(111, "Connection refused"),
    "socket timeout": socket.timeout("timed out"),
    "requests connection error": requests.ConnectionError("Max retries exceeded"),
    "requests read timeout": requests.ReadTimeout("read timed out"),
    "http 503": http_error(503),
    "http 500": http_error(500),
    "http 429": http_error(429),
    "webhdfs no answer after its retries": WebHdfsUnreachable("http://nn:9870: connection refused"),
    "namenode standby": WebHdfsRemoteError("standby", exception="StandbyException",
                                           java_class="org.apache.hadoop.ipc.StandbyException", status=403),
    "namenode in safe mode": WebHdfsRemoteError("safe mode", exception="SafeModeException", status=403),
    "jmx unreadable": JmxUnavailable("rs1:16030: /jmx did not answer"),
    "thrift transport": TTransportException(message="Could not connect"),
    "thrift1 region moving": hbase_thrift().IOError(message="org.apache.hadoop.hbase.NotServingRegionException: r"),
    "thrift2 region too busy": hbase2().TIOError(message="org.apache.hadoop.hbase.RegionTooBusyException: r"),
    "sasl connection lost": SaslConnectionLost("connection closed during the SASL exchange"),
    "shell timed out": ShellCommandError("`hbase shell -n` did not finish within 180s", None, "", timed_out=True),
    "master initializing": ShellCommandError(
        "failed (exit 1)\nERROR: org.apache.hadoop.hbase.PleaseHoldException: Master is initializing", 1),
    "kdc did not answer": KerberosError("Cannot contact any KDC for realm 'DC1.TEST'",
                                        explain("Cannot contact any KDC for realm 'DC1.TEST'", "m@DC1.TEST", None)),
    "a copy's partition failed after its retries because a gateway did not answer":
        raised_from(PartitionFailed("partition 3 failed after 8 attempts"), ConnectionResetError(104, "reset")),
    "a library error raised from a zookeeper session expiry": raised_from(RuntimeError("listing peers"),
                                                                           SessionExpiredError()),
}

FACTS = {
    "a znode that is not there": NoNodeError(),
    "a zookeeper acl refusing us": NoAuthError(),
    "a znode hbase always has is absent (wrong parent)": ZnodeMissing("/hbase/hbaseid does not exist"),
    "http 403": http_error(403),
    "http 404": http_error(404),
    "hdfs path missing": HdfsPathNotFound("no such path", exception="FileNotFoundException", status=404),
    "hdfs permission denied": WebHdfsRemoteError("denied", exception="AccessControlException", status=403),
    "thrift1 table missing": hbase_thrift().IOError(message="org.apache.hadoop.hbase.TableNotFoundException: t"),
    "shell refused the statement": ShellCommandError("failed (exit 1)\nERROR: Table already exists: t!", 1),
    "shell command missing": ShellCommandError("cannot start the HBase shell `/no/hbase shell -n`: not found"),
    "wrong keytab": KerberosError("Preauthentication failed",
                                  explain("Preauthentication failed", "m@DC1.TEST", None)),
    "qop mismatch": QopMismatch("gw:9090", ["auth"], ["auth-conf"]),
    "bad input": ValueError("peer id must not contain '-'"),
    "wrong keytab raised through a connection error": raised_from(ConnectionError("probe failed"),
                                                                   KerberosError("Preauthentication failed")),
}


@pytest.mark.parametrize("case", sorted(NO_ANSWER))
def test_an_endpoint_that_did_not_answer_is_retried(case):
    assert unreachable(NO_ANSWER[case]) is True


@pytest.mark.parametrize("case", sorted(FACTS))
def test_an_answer_is_a_fact(case):
    assert unreachable(FACTS[case]) is False


def test_describe_names_the_type():
    assert describe(ConnectionLoss()) == "ConnectionLoss: "
    assert describe(ZnodeMissing("/hbase/hbaseid")) == "ZnodeMissing: /hbase/hbaseid"
