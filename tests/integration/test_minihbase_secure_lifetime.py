"""Short ticket lifetimes (a stack of its own, 10 s tickets): minihbase's servers log in again from their keytabs
as HBase daemons do, so they outlive their first tickets; a user's ticket cache does not renew itself."""
from __future__ import annotations

import os
import subprocess

import pytest

from bedkit.security.stack import TOOLKIT
from tests.polling import wait_for

pytestmark = pytest.mark.integration


def test_servers_outlive_their_tickets_and_a_stale_cache_is_refused(secure_stack_factory, secure_cluster_factory,
                                                                     tmp_path):
    stack = secure_stack_factory(ticket_lifetime_s=10)
    cluster = secure_cluster_factory("dc1", "DC1.TEST", stack=stack, thrift_qop="auth")
    first = cluster.region_servers[0]["servername"]
    env = stack.kinit(TOOLKIT, tmp_path / "cc")
    # Every ticket issued so far (the servers', the harness's, this cache's) expires within 10 s.
    wait_for(lambda: subprocess.run(["klist", "-s"], env={**os.environ, **env}).returncode != 0, timeout=20,
             what="the 10 s ticket to expire")
    # A new region server opens a new SASL ZooKeeper session: its process logs in again from the keytab.
    cluster.kill_rs(0)
    restarted = cluster.start_rs(0)
    assert restarted != first
    assert {rs["servername"] for rs in cluster.region_servers if rs["alive"]} == {restarted}
    # The harness (SPNEGO as hbase/localhost@DC1.TEST from its keytab) gets fresh tickets too.
    assert len(cluster.roll_wals()) == 1
    # A user's cache is what `kinit` left in it: expired, the shell refuses it.
    shell = subprocess.run(cluster.endpoints["shell_command"], input="list\n", capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=60)
    assert shell.returncode == 1 and "Consider 'kinit'." in shell.stdout
