"""The security preflight through the CLI (`python -m hbase_migration preflight`) on minihbase's secured clusters:
passes when everything authenticates; refuses a wrong keytab, a QOP mismatch and a missing cross-realm trust,
each with one error naming the principal, the endpoint and the fix, exit 1, and nothing changed on either
cluster (no peer, no table)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bedkit.security.stack import INTRUDER
from hbase_migration.clusters import kerberos, zk
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.migration.tables import existing_tables
from hbase_migration.replication import zk_peers

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TABLE = "pf_secure"


def connection(cluster, **extra) -> str:
    conn = json.loads(cluster.connection_json)
    conn["extra"].update(extra)
    return json.dumps(conn)


def preflight(source: str, target: str, krb5_conf) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5_CONFIG": str(krb5_conf),
           "AIRFLOW_CONN_SRC": source, "AIRFLOW_CONN_DST": target}
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", "preflight", "--source", "src", "--target", "dst",
                           "--tables", TABLE, "--peer-id", "pfsec", "--sample-gap-s", "0",
                           "--bulk-loads", "none"], env=env,
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def line(output: str, check: str) -> str:
    return next(t for t in output.splitlines() if f"] {check}:" in t)


def fix(output: str, check: str) -> str:
    lines = output.splitlines()
    at = lines.index(line(output, check))
    return lines[at + 1].strip() if at + 1 < len(lines) and lines[at + 1].strip().startswith("fix:") else ""


def assert_nothing_changed(source_mini, target_mini) -> None:
    kerberos.forget_krb5_conf()
    source = cluster_from_text("s", source_mini.connection_json)
    target = cluster_from_text("t", target_mini.connection_json)
    with zk.connect(source, timeout=15) as client:
        assert zk_peers.read_peers(client, source.znode_parent) == []
    assert existing_tables(target, [TABLE]) == set()
    kerberos.forget_krb5_conf()


@pytest.fixture(scope="module")
def pair(secure_pair):
    secure_pair[0].create_table(TABLE, {"cf": {"replication_scope": 1}})
    return secure_pair


def test_everything_authenticated_passes_and_says_so(pair, secure_stack):
    dc1, dc2 = pair
    rc, out = preflight(dc1.connection_json, dc2.connection_json, secure_stack.krb5_conf)
    assert rc == 0, out
    assert "[ok  ] source_authentication: src: accepted by all" in out
    assert "[ok  ] target_authentication: dst: accepted by all" in out
    assert "[ok  ] source_thrift_qop: src: every gateway agreed on QOP auth-conf" in out
    assert "preflight passed" in out


def test_a_wrong_keytab_is_refused_naming_it_and_what_it_holds(pair, secure_stack):
    dc1, dc2 = pair
    rc, out = preflight(connection(dc1, keytab=str(secure_stack.keytab_path(INTRUDER))), dc2.connection_json,
                        secure_stack.krb5_conf)
    assert rc == 1, out
    failed = line(out, "source_kerberos_login")
    assert failed.startswith("[FAIL]")
    assert f"keytab {secure_stack.keytab_path(INTRUDER)} does not hold hbase-migration@DC1.TEST" in failed
    assert f"(it holds: {INTRUDER})" in failed
    assert "ktadd" in fix(out, "source_kerberos_login")
    assert "preflight FAILED" in out
    assert_nothing_changed(dc1, dc2)


def test_a_qop_mismatch_is_refused_naming_the_gateway_and_both_qops(pair, secure_stack):
    dc1, dc2 = pair
    rc, out = preflight(connection(dc1, thrift_qop="auth-int"), dc2.connection_json, secure_stack.krb5_conf)
    assert rc == 1, out
    failed = line(out, "source_thrift_qop")
    thrift1, thrift2 = (dc1.endpoints[k] for k in ("thrift", "thrift2"))
    assert failed.startswith("[FAIL]")
    assert (f"thrift1 gateway {thrift1['host']}:{thrift1['port']}, thrift2 gateway {thrift2['host']}:"
            f"{thrift2['port']} offer SASL QOP auth-conf, the connection's thrift_qop is auth-int") in failed
    assert fix(out, "source_thrift_qop").startswith("fix: set thrift_qop to auth-conf")
    assert_nothing_changed(dc1, dc2)


def test_a_missing_cross_realm_trust_is_refused_naming_each_endpoint_and_the_krbtgt(
        secure_stack_factory, secure_cluster_factory):
    stack = secure_stack_factory(cross_realm=False)  # no krbtgt/DC2.TEST@DC1.TEST: DC1 cannot reach DC2
    src = secure_cluster_factory("nt1", "DC1.TEST", stack=stack, thrift_qop="auth-conf")
    dst = secure_cluster_factory("nt2", "DC2.TEST", stack=stack, thrift_qop="auth-conf")
    src.create_table(TABLE, {"cf": {"replication_scope": 1}})
    rc, out = preflight(src.connection_json, dst.connection_json, stack.krb5_conf)
    assert rc == 1, out
    assert line(out, "source_authentication").startswith("[ok  ]")
    failed = line(out, "target_authentication")
    assert failed.startswith("[FAIL]")
    assert "no cross-realm trust from DC1.TEST to DC2.TEST" in failed
    gateway = dst.endpoints["thrift2"]
    assert f"thrift2 {gateway['host']}:{gateway['port']} (hbase/localhost@DC2.TEST)" in failed
    assert "(HTTP/localhost@DC2.TEST)" in failed  # its /jmx and WebHDFS too
    assert "krbtgt/DC2.TEST@DC1.TEST" in fix(out, "target_authentication")
    kerberos.forget_krb5_conf()
    source = cluster_from_text("s", src.connection_json)
    with zk.connect(source, timeout=15) as client:
        assert zk_peers.read_peers(client, source.znode_parent) == []
    kerberos.forget_krb5_conf()


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.mark.skipif(not os.path.exists(FAKETIME_LIB), reason="needs Debian's faketime package")
def test_a_server_clock_six_minutes_ahead_is_named_as_skew(pair, secure_stack, secure_cluster_factory, monkeypatch):
    """A target cluster whose processes run under libfaketime 6 minutes ahead (past the 5 allowed, within its
    10-minute tickets): its acceptors refuse the toolkit's authenticators (KRB_AP_ERR_SKEW) and its HTTP servers'
    Date says by how much; the refusals are reported as the skew, not as authentication problems."""
    dc1, _ = pair
    with monkeypatch.context() as skewed_env:
        skewed_env.setenv("LD_PRELOAD", FAKETIME_LIB)
        skewed_env.setenv("FAKETIME", "+6m")
        skewed_env.setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        skewed = secure_cluster_factory("skewed", "DC2.TEST", thrift_qop="auth-conf")
    rc, out = preflight(dc1.connection_json, skewed.connection_json, secure_stack.krb5_conf)
    assert rc == 1, out
    failed = line(out, "clock_skew")
    assert failed.startswith("[FAIL]")
    assert re.search(r"its clock is 3(59|60|61)s ahead of this host's", failed)
    assert "KRB_AP_ERR_SKEW" in failed
    assert "synchronize the clocks" in fix(out, "clock_skew")
    assert "refused on those hosts: dst thrift1" in failed
    assert not line(out, "target_authentication").startswith("[FAIL]")
