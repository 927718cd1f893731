"""Secured minihbase for tests: a pytest plugin (`pytest_plugins` in tests/conftest.py).

    secure_stack            session: a real MIT KDC (DC1.TEST, DC2.TEST, cross-realm trust both ways, tickets of
                            600 s), every principal and keytab of the security contract, a CA and server
                            certificate, and a SASL ZooKeeper (`secure_stack.zookeeper.hosts`). KRB5_CONFIG points
                            at its krb5.conf for the session (restored at the end).
    secure_pair             module: (dc1, dc2) on it, `MiniCluster`s with 2 region servers: dc1 in DC1.TEST with
                            binary SASL Thrift gateways (QOP auth-conf), dc2 in DC2.TEST with Thrift over HTTP,
                            SPNEGO and TLS. Each has a znode parent of its own.
    secure_cluster_factory  function: `start(name, realm, stack=None, **choices)` another secured cluster (any
                            QOP or mode: thrift_qop=..., thrift_http=..., thrift_ssl=...; `security={...}`
                            overrides settings), on the session stack or a given one; stopped after the test.
    secure_stack_factory    function: `make(ticket_lifetime_s=600, cross_realm=True)` a stack of its own (its own
                            KDC and ZooKeeper): short ticket lifetimes, no DC1 -> DC2 trust; stopped after the test
                            (KRB5_CONFIG points at the newest stack while it runs).
    kinit                   function: `kinit(principal, stack=None)` -> the environment (KRB5CCNAME, KRB5_CONFIG)
                            of a process holding a fresh ticket of `principal` (e.g. for `hbase shell`).
    gss_credentials         `creds(principal, keytab=None, stack=None)`: python-gssapi initiator credentials from
                            the principal's keytab (a MEMORY ccache of this test process), for test clients
                            (requests-gssapi's HTTPSPNEGOAuth(creds=...), SASL clients).
"""
from __future__ import annotations

import datetime
import re
import uuid

import gssapi
import pytest

from bedkit.security.stack import SecureStack
from minihbase.testing import MiniCluster


def _parent(name: str) -> str:
    return f"/hbase-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def secure_stack(tmp_path_factory):
    """KDC + keytabs + TLS files + SASL ZooKeeper for the whole session."""
    stack = SecureStack(tmp_path_factory.mktemp("secure-stack"), ticket_lifetime_s=600).start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def secure_pair(secure_stack, tmp_path_factory):
    """(dc1, dc2): dc1 binary SASL auth-conf in DC1.TEST, dc2 HTTP + SPNEGO + TLS in DC2.TEST."""
    workdir = tmp_path_factory.mktemp("secure-pair")
    dc1 = MiniCluster.start_secure(secure_stack, workdir, "dc1", "DC1.TEST", thrift_qop="auth-conf",
                                   region_servers=2, znode_parent=_parent("dc1"))
    try:
        dc2 = MiniCluster.start_secure(secure_stack, workdir, "dc2", "DC2.TEST", thrift_http=True, thrift_ssl=True,
                                       region_servers=2, znode_parent=_parent("dc2"))
    except BaseException:
        dc1.stop()
        raise
    yield dc1, dc2
    dc2.stop()
    dc1.stop()


@pytest.fixture
def secure_cluster_factory(secure_stack, secure_stack_factory, tmp_path):
    """Set up after `secure_stack_factory`, so its clusters stop before the stacks they may run on."""
    started = []

    def start(name: str = "dc1", realm: str = "DC1.TEST", stack: SecureStack | None = None, region_servers: int = 1,
              **choices):
        cluster = MiniCluster.start_secure(stack or secure_stack, tmp_path / "secure-clusters", name, realm,
                                           region_servers=region_servers, znode_parent=_parent(name), **choices)
        started.append(cluster)
        return cluster

    yield start
    for cluster in reversed(started):
        cluster.stop()


@pytest.fixture
def secure_stack_factory(secure_stack, tmp_path):
    """Stacks of their own; `secure_stack` is started first so that stops restore KRB5_CONFIG in order."""
    stacks = []

    def make(ticket_lifetime_s: int = 600, cross_realm: bool = True, **kwargs) -> SecureStack:
        stack = SecureStack(tmp_path / f"stack-{len(stacks)}", ticket_lifetime_s=ticket_lifetime_s,
                            cross_realm=cross_realm, **kwargs).start()
        stacks.append(stack)
        return stack

    yield make
    for stack in reversed(stacks):
        stack.stop()


@pytest.fixture
def kinit(secure_stack, tmp_path):
    def fill(principal: str, stack: SecureStack | None = None) -> dict[str, str]:
        return (stack or secure_stack).kinit(principal, tmp_path / f"cc-{uuid.uuid4().hex[:8]}")
    return fill


@pytest.fixture(scope="session")
def gss_credentials(secure_stack):
    def creds(principal: str, keytab=None, stack: SecureStack | None = None) -> gssapi.Credentials:
        stack = stack or secure_stack
        keytab = keytab or stack.keytab_path(principal)
        return gssapi.Credentials(name=gssapi.Name(principal, gssapi.NameType.kerberos_principal), usage="initiate",
                                  store={"client_keytab": str(keytab), "ccache": f"MEMORY:test-{uuid.uuid4().hex}"})
    return creds


LOGGED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def logged_at(line: str) -> float:
    """Seconds since the epoch of a log line's `2026-11-26 08:50:47,539` prefix."""
    stamp = LOGGED.match(line).group(1)
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def ticket_gaps(stderr: str) -> tuple[list[float], list[float]]:
    """When the toolkit's log says it took a ticket from its keytab, and the seconds each ticket had to last (to
    the next one, the last to the log's last line)."""
    lines = stderr.splitlines()
    tickets = [logged_at(t) for t in lines if "has a ticket from keytab" in t and LOGGED.match(t)]
    last = max(logged_at(t) for t in lines if LOGGED.match(t))
    return tickets, [b - a for a, b in zip(tickets, [*tickets[1:], last])]
