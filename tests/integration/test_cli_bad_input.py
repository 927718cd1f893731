"""Bad input through the operator's CLI: each gets a clear error, the documented exit status, and changes
nothing (no peer znode appears on the source)."""
import json
import os
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
