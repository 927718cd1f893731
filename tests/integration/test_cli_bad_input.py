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

from bedkit.zookeeper import free_port

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


def test_preflight_same_cluster_is_a_usage_error(conns, no_peer_created):
    rc, out = cli(["preflight", "--source", "src", "--target", "src", "--tables", "t", "--peer-id", "p4",
                   "--sample-gap-s", "0"], conns)
    assert rc == 2 and "the same cluster" in out and "give --target the connection of the other cluster" in out, out


def test_preflight_skips_the_checks_it_cannot_make_and_says_why(conns, no_peer_created):
    rc, out = cli(["preflight", "--source", "src", "--target", "dst", "--tables", "no_such_table",
                   "--peer-id", "p3", "--sample-gap-s", "0"], conns)
    assert rc == 1 and "[FAIL] source_tables: not found on the source: no_such_table" in out, out
    for check in ("target_tables", "replication_scope"):
        assert f"[skip] {check}: not checked: no_such_table not found on the source" in out, out
        assert f"[ok  ] {check}" not in out, out


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


def test_peer_enable_with_target_refuses_while_a_table_is_absent_there(minihbase_pair, conns, zookeeper):
    """Issue 39: `peer enable --target` lists the target's tables first; a peer whose table it lacks stays DISABLED
    (exit 1, the table named); once the table exists it is enabled."""
    dc1, dc2 = minihbase_pair
    dc1.create_table("gate_a", {"d": {"replication_scope": 1}})
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "gate_a", "--peer-id", "gate",
                   "--force"], conns)  # --force: peer add's own checks would refuse the absent target table
    assert rc == 0, out
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    state = f"{dc1.znode_parent}/replication/peers/gate/peer-state"
    try:
        before = zk.get(state)
        rc, out = cli(["peer", "enable", "--source", "src", "--target", "dst", "--peer-id", "gate"], conns)
        assert rc == 1 and "peer gate not enabled: its table(s) gate_a are absent on dst" in out, out
        assert zk.get(state) == before  # same bytes, same mzxid: still DISABLED
        dc2.create_table("gate_a", {"d": {"replication_scope": 1}})
        rc, out = cli(["peer", "enable", "--source", "src", "--target", "dst", "--peer-id", "gate"], conns)
        assert rc == 0 and "peer gate: enabled" in out, out
    finally:
        zk.stop()
        zk.close()
        cli(["peer", "remove", "--source", "src", "--peer-id", "gate"], conns)


# ------------------------------------------------------------------------------------------------ peer add's checks

def peer_ids(zookeeper, cluster):
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    try:
        path = f"{cluster.znode_parent}/replication/peers"
        return sorted(zk.get_children(path)) if zk.exists(path) else []
    finally:
        zk.stop()
        zk.close()


def test_peer_add_towards_a_dead_cluster_is_refused_and_creates_nothing(minihbase_pair, conns, no_peer_created):
    dc1, dc2 = minihbase_pair
    for c in (dc1, dc2):
        c.create_table("pa_ok", {"d": {"replication_scope": 1}})
    dead = with_extra(conns["dst"], zookeeper_port=free_port(), timeout_s=1)
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dead", "--tables", "pa_ok", "--peer-id", "pz"],
                  {**conns, "dead": dead})
    assert rc == 2, out
    assert "[FAIL] target_reachable: dead (" in out and "did not answer" in out, out
    assert "error: peer add pz refused, nothing changed: target_reachable" in out and "--force" in out, out
    assert "ran: add_peer" not in out and "Traceback" not in out


def test_peer_add_of_tables_missing_or_unscoped_is_refused(minihbase_pair, conns, no_peer_created):
    dc1, _ = minihbase_pair
    dc1.create_table("pa_scope0", {"d": {"replication_scope": 0}, "e": {"replication_scope": 1}})
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "nosuch", "--peer-id", "pn",
                   "--json"], conns)
    assert rc == 2, out
    report = json.loads(out[:out.rindex("}") + 1])
    assert report["outcome"] == "refused"
    assert [(c["name"], c["ok"], c["severity"]) for c in report["checks"]["checks"]] == [
        ("source_reachable", True, "error"), ("target_reachable", True, "error"), ("distinct_clusters", True, "error"),
        ("source_tables", False, "error"), ("replication_scope", False, "skipped")]
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "pa_scope0", "--peer-id",
                   "pn"], conns)
    assert rc == 2 and "REPLICATION_SCOPE is 0 on pa_scope0:d" in out, out
    assert 'alter "pa_scope0", {NAME => "d", REPLICATION_SCOPE => "1"}' in out, out  # the fix, as preflight says


def test_peer_add_with_force_skips_the_checks_and_says_so(minihbase_pair, zookeeper, conns):
    dc1, _ = minihbase_pair
    rc, out = cli(["peer", "add", "--source", "src", "--target", "dst", "--tables", "nosuch_forced",
                   "--peer-id", "pf", "--force", "--json"], conns)
    try:
        assert rc == 0, out
        assert "warning: --force: peer add skipped its checks (source_reachable, target_reachable," in out, out
        doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
        assert doc["outcome"] == "created" and doc["checks"]["skipped"] is True and doc["checks"]["reason"] == "--force"
        assert "pf" in peer_ids(zookeeper, dc1)
    finally:
        cli(["peer", "remove", "--source", "src", "--peer-id", "pf"], conns)
    assert "pf" not in peer_ids(zookeeper, dc1)


def test_a_peer_this_toolkit_did_not_create_needs_force(minihbase_pair, zookeeper, conns):
    dc1, dc2 = minihbase_pair
    shell = shlex.split(json.loads(conns["src"])["extra"]["shell_command"])
    made = subprocess.run(shell, input=f'add_peer "foreign1", CLUSTER_KEY => "{dc2.cluster_key}", '
                                       'STATE => "ENABLED"\n', capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    for action in ("remove", "disable"):
        rc, out = cli(["peer", action, "--source", "src", "--peer-id", "foreign1"], conns)
        assert rc == 2, out
        [line] = [x for x in out.splitlines() if x.startswith("error: ")]
        assert line.startswith(f"error: {action}_peer refused: peer 'foreign1' on cluster 'src'"), line
        assert line.endswith("— pass --force only if you are sure this peer may be touched"), line
        assert "force=True" not in out
    assert "foreign1" in peer_ids(zookeeper, dc1)
    rc, out = cli(["peer", "remove", "--source", "src", "--peer-id", "foreign1", "--force"], conns)
    assert rc == 0 and "peer foreign1: removed" in out, out
    assert "foreign1" not in peer_ids(zookeeper, dc1)


def test_peer_commands_on_a_znode_parent_without_hbase_are_refused(conns, no_peer_created):
    wrong = with_extra(conns["src"], znode_parent="/hbase-nowhere")
    for argv in (["peer", "list", "--source", "wrong"], ["peer", "remove", "--source", "wrong", "--peer-id", "p1"]):
        rc, out = cli(argv, {**conns, "wrong": wrong})
        assert rc == 2 and "/hbase-nowhere/hbaseid does not exist" in out, out
        assert "check the connection's znode_parent" in out, out
