"""Bad input through the operator's CLI: each gets a clear error, the documented exit status, and changes
nothing (no peer znode appears on the source)."""
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from minihbase.zookeeper import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def cli(args, conns, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")}
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update({f"AIRFLOW_CONN_{k.upper()}": v for k, v in conns.items()})
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", *args], env=env, capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def with_extra(conn_json, **extra):
    conn = json.loads(conn_json)
    conn["extra"].update(extra)
    return json.dumps(conn)


@pytest.fixture
def conns(minihbase_pair):
    dc1, dc2 = minihbase_pair
    return {"src": dc1.connection_json, "dst": dc2.connection_json}


@pytest.fixture
def no_peer_created(minihbase_pair, zookeeper):
    dc1, _ = minihbase_pair
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    path = f"{dc1.znode_parent}/replication/peers"
    before = zk.get_children(path) if zk.exists(path) else []
    yield
    after = zk.get_children(path) if zk.exists(path) else []
    zk.stop()
    zk.close()
    assert after == before, "bad input changed the source's peers"


def test_malformed_cluster_key_is_a_usage_error(conns, no_peer_created):
    bad = with_extra(conns["dst"], znode_parent="hbase-dc2")
    rc, out = cli(["peer", "add", "--source", "src", "--target", "bad", "--tables", "t", "--peer-id", "p1"],
                  {**conns, "bad": bad})
    assert rc == 2 and "znode_parent must be an absolute znode path" in out, out


def test_peer_id_with_dash_is_refused(conns, no_peer_created):
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "t", "--peer-id", "mig-1"],
                  conns)
    assert rc == 2 and "mig-1" in out and "-" in out, out


def test_source_equal_to_target_is_refused(conns, no_peer_created):
    rc, out = cli(["peer", "add", "--source", "src", "--target", "src", "--tables", "t", "--peer-id", "p2"], conns)
    assert rc == 2 and "same cluster" in out, out


def test_unreachable_zookeeper_fails_quickly_and_clearly(conns, no_peer_created):
    dead = with_extra(conns["src"], zookeeper_port=free_port(), timeout_s=2)
    rc, out = cli(["peer", "list", "--source", "dead"], {**conns, "dead": dead}, timeout=60)
    assert rc == 1 and "ZooKeeper" in out and "127.0.0.1" in out, out


def test_webhdfs_down_is_a_clear_failure(conns):
    dead = with_extra(conns["src"], webhdfs_url=f"http://127.0.0.1:{free_port()}", timeout_s=2)
    rc, out = cli(["quota", "--source", "dead", "--sample-gap-s", "0"], {"dead": dead}, timeout=60)
    assert rc == 1 and "127.0.0.1" in out and "WebHdfs" in out, out


def test_missing_connection_is_a_usage_error(conns):
    rc, out = cli(["lag", "--source", "nowhere", "--peer-id", "p"], conns)
    assert rc == 2 and "AIRFLOW_CONN_NOWHERE" in out, out


def test_preflight_unknown_table_fails_with_the_check_named(conns, no_peer_created):
    rc, out = cli(["preflight", "--source", "src", "--target", "dst", "--tables", "no_such_table",
                   "--peer-id", "p3", "--sample-gap-s", "0"], conns)
    assert rc == 1 and "source_tables" in out and "no_such_table" in out, out


def test_preflight_same_cluster_fails(conns, no_peer_created):
    rc, out = cli(["preflight", "--source", "src", "--target", "src", "--tables", "t", "--peer-id", "p4",
                   "--sample-gap-s", "0"], conns)
    assert rc == 1 and "distinct_clusters" in out, out


def test_preflight_names_a_family_missing_on_the_target(minihbase_pair, conns, no_peer_created):
    dc1, dc2 = minihbase_pair
    dc1.create_table("fam_gap", {"d": {"replication_scope": 1}, "e": {"replication_scope": 1}})
    dc2.create_table("fam_gap", {"d": {"replication_scope": 1}})
    rc, out = cli(["preflight", "--source", "src", "--target", "dst", "--tables", "fam_gap", "--peer-id", "p5",
                   "--sample-gap-s", "0"], conns)
    assert rc == 1 and "target_tables" in out and "fam_gap on the target lacks families e" in out, out


def test_preflight_refuses_scope_0_and_prints_the_alter_that_fixes_it(minihbase_pair, conns, no_peer_created):
    dc1, dc2 = minihbase_pair
    for c in (dc1, dc2):
        c.create_table("scope_zero", {"d": {"replication_scope": 0}})
    rc, out = cli(["preflight", "--source", "src", "--target", "dst", "--tables", "scope_zero", "--peer-id", "p6",
                   "--sample-gap-s", "0"], conns)
    assert rc == 1 and "REPLICATION_SCOPE is 0 on scope_zero:d" in out, out
    fix = 'alter "scope_zero", {NAME => "d", REPLICATION_SCOPE => "1"}'
    assert fix in out, out
    # The printed fix is a working shell statement: applied through the source's shell, preflight passes.
    shell = shlex.split(json.loads(conns["src"])["extra"]["shell_command"])
    applied = subprocess.run(shell, input=fix + "\n", capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rc, out = cli(["preflight", "--source", "src", "--target", "dst", "--tables", "scope_zero", "--peer-id", "p6",
                   "--sample-gap-s", "0"], conns)
    assert "[ok  ] replication_scope" in out, out


def test_conflicting_peer_is_refused_and_left_untouched(minihbase_pair, conns, zookeeper):
    dc1, dc2 = minihbase_pair
    for c in (dc1, dc2):
        for t in ("conflict_a", "conflict_b"):
            c.create_table(t, {"d": {"replication_scope": 1}})
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "conflict_a",
                   "--peer-id", "conflict"], conns)
    assert rc == 0, out
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    try:
        peer = f"{dc1.znode_parent}/replication/peers/conflict"
        before = [zk.get(p) for p in (peer, peer + "/peer-state")]
        rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "conflict_b",
                       "--peer-id", "conflict"], conns)
        assert rc == 1 and "conflict" in out and "conflict_b" in out, out
        assert [zk.get(p) for p in (peer, peer + "/peer-state")] == before  # same bytes, same mzxid
    finally:
        zk.stop()
        zk.close()
        cli(["peer", "remove", "--source", "src", "--peer-id", "conflict"], conns)
