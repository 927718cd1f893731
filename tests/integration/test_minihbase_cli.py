"""`python -m minihbase`: up/down/status/endpoints/kill-rs/start-rs, and /jmx on region servers' info ports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import happybase
import pytest
import requests

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
REPLICATION = "Hadoop:service=HBase,name=RegionServer,sub=Replication"


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "minihbase", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def serve_pids(workdir: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if str(workdir).encode() in cmdline:
                pids.append(int(proc.name))
    return pids


@pytest.fixture
def instance(tmp_path):
    workdir = tmp_path / "instance"
    yield workdir
    cli("down", "--workdir", str(workdir))


def test_up_endpoints_kill_start_status_down(zookeeper, instance):
    up = cli("up", "--zookeeper", zookeeper.hosts, "--workdir", str(instance))
    assert up.returncode == 0, up.stderr
    assert up.stdout == ""
    again = cli("up", "--zookeeper", zookeeper.hosts, "--workdir", str(instance))
    assert again.returncode == 0, again.stderr  # already up: nothing to do

    out = cli("endpoints", "--json", "--workdir", str(instance))
    assert out.returncode == 0, out.stderr
    clusters = json.loads(out.stdout)["clusters"]
    assert sorted(clusters) == ["dc1", "dc2"]
    dc1 = clusters["dc1"]
    quorum, port = zookeeper.hosts.split(":")
    assert dc1["cluster_key"] == f"{quorum}:{port}:/hbase-dc1"
    assert clusters["dc2"]["zookeeper"]["znode_parent"] == "/hbase-dc2"
    assert dc1["rootdir"] == "/hbase" and dc1["webhdfs_url"].startswith("http://127.0.0.1:")
    assert len(dc1["region_servers"]) == 3 and all(rs["alive"] for rs in dc1["region_servers"])
    assert dc1["shell_command"] == [sys.executable, "-m", "minihbase", "shell", "-n", "--cluster", "dc1",
                                    "--workdir", str(instance)]
    conn = dc1["connection"]
    assert conn["conn_type"] == "hbase" and (conn["host"], conn["port"]) == (
        dc1["thrift"]["host"], dc1["thrift"]["port"])
    assert conn["extra"] == {
        "zookeeper_quorum": quorum, "zookeeper_port": int(port), "znode_parent": "/hbase-dc1",
        "webhdfs_url": dc1["webhdfs_url"], "rootdir": "/hbase", "peer_admin": "shell",
        "shell_command": " ".join(dc1["shell_command"]),
        "thrift2_servers": f"{dc1['thrift2']['host']}:{dc1['thrift2']['port']}",  # one Thrift2 gateway by default
    }
    no_fault = {"latency_ms": 0.0, "reset_probability": 0.0, "resets": 0}  # no gateway fault set (gateway-fault)
    assert dc1["thrift_gateways"] == [{"index": 0, **dc1["thrift"], "alive": True, "fault": no_fault}]
    assert dc1["thrift2_gateways"] == [{"index": 0, **dc1["thrift2"], "alive": True, "fault": no_fault}]
    assert dc1["thrift2"]["port"] not in (dc1["thrift"]["port"], clusters["dc2"]["thrift2"]["port"])
    assert dc1["connection_uri"].startswith(f"hbase://{conn['host']}:{conn['port']}/?__extra__=")
    hb = happybase.Connection(dc1["thrift"]["host"], dc1["thrift"]["port"])
    assert hb.tables() == []
    hb.close()

    status = cli("status", "--workdir", str(instance))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "dc1: up" in status.stdout and "dc2: up" in status.stdout
    assert f"thrift2 gateway [0] 127.0.0.1:{dc1['thrift2']['port']}  up" in status.stdout

    victim = dc1["region_servers"][1]["servername"]
    assert cli("kill-rs", "dc1", "1", "--workdir", str(instance)).returncode == 0
    status = cli("status", "--json", "--workdir", str(instance))
    assert status.returncode == 1
    states = {rs["servername"]: rs["alive"] for rs in json.loads(status.stdout)["clusters"]["dc1"]["region_servers"]}
    assert states[victim] is False
    started = cli("start-rs", "dc1", victim, "--workdir", str(instance))
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["started"].startswith(victim.rsplit(",", 1)[0] + ",")
    assert cli("status", "--workdir", str(instance)).returncode == 0
    bad = cli("kill-rs", "dc1", "7", "--workdir", str(instance))
    assert bad.returncode == 1 and "out of range" in bad.stderr

    assert serve_pids(instance)
    down = cli("down", "--workdir", str(instance))
    assert down.returncode == 0, down.stderr
    assert serve_pids(instance) == []
    assert cli("status", "--workdir", str(instance)).returncode == 1


def test_up_without_zookeeper_starts_and_stops_its_own_and_data_survives(instance):
    up = cli("up", "--workdir", str(instance))
    assert up.returncode == 0, up.stderr
    endpoints = json.loads(cli("endpoints", "--json", "--workdir", str(instance)).stdout)["clusters"]
    zk_pid = int((instance / "zookeeper" / "zookeeper.pid").read_text())
    assert b"ZooKeeperServerMain" in Path(f"/proc/{zk_pid}/cmdline").read_bytes()
    assert endpoints["dc1"]["zookeeper"]["hosts"] == endpoints["dc2"]["zookeeper"]["hosts"]
    thrift = endpoints["dc1"]["thrift"]
    hb = happybase.Connection(thrift["host"], thrift["port"])
    hb.create_table("kept", {"cf": {}})
    hb.table("kept").put(b"r", {b"cf:q": b"v"}, timestamp=1234)
    hb.close()

    assert cli("down", "--workdir", str(instance)).returncode == 0
    assert serve_pids(instance) == []
    assert not Path(f"/proc/{zk_pid}").exists() or b"ZooKeeperServerMain" not in Path(
        f"/proc/{zk_pid}/cmdline").read_bytes()

    assert cli("up", "--workdir", str(instance)).returncode == 0
    again = json.loads(cli("endpoints", "--json", "--workdir", str(instance)).stdout)["clusters"]
    # Same ZooKeeper port and Thrift port after a restart: cluster keys and connections stay valid.
    assert again["dc1"]["cluster_key"] == endpoints["dc1"]["cluster_key"]
    assert again["dc1"]["thrift"] == thrift and again["dc1"]["cluster_id"] == endpoints["dc1"]["cluster_id"]
    hb = happybase.Connection(thrift["host"], thrift["port"])
    assert hb.table("kept").row(b"r", include_timestamp=True) == {b"cf:q": (b"v", 1234)}
    hb.close()
    assert cli("down", "--workdir", str(instance)).returncode == 0
    assert serve_pids(instance) == []


def test_jmx_beans_and_query_filtering(minihbase_dc1):
    rs = minihbase_dc1.region_servers[0]
    url = f"http://{rs['host']}:{rs['info_port']}/jmx"
    all_beans = requests.get(url, timeout=10).json()["beans"]
    names = {b["name"] for b in all_beans}
    assert {REPLICATION, "Hadoop:service=HBase,name=RegionServer,sub=Server",
            "Hadoop:service=HBase,name=RegionServer,sub=WAL"} <= names
    replication = requests.get(url, params={"qry": REPLICATION}, timeout=10).json()["beans"]
    assert len(replication) == 1
    bean = replication[0]
    assert {k: bean[k] for k in ("name", "modelerType", "tag.Context", "tag.Hostname")} == {
        "name": REPLICATION, "modelerType": "RegionServer,sub=Replication", "tag.Context": "regionserver",
        "tag.Hostname": rs["host"]}
    # No peer: the global source and sink figures are there and zero, and no queue has keys of its own.
    assert bean["source.sizeOfLogQueue"] == 0 and bean["source.shippedOps"] == 0 and bean["sink.appliedOps"] == 0
    assert [k for k in bean if k.startswith("source.") and k.count(".") > 1] == []
    wildcard = requests.get(url, params={"qry": "Hadoop:service=HBase,name=RegionServer,*"}, timeout=10).json()
    assert {b["name"] for b in wildcard["beans"]} == {n for n in names if "name=RegionServer" in n}
    none = requests.get(url, params={"qry": "Hadoop:service=HBase,name=Nothing"}, timeout=10)
    assert none.status_code == 200 and none.json() == {"beans": []}
    assert requests.get(url, params={"qry": "no-colon"}, timeout=10).status_code == 400
    server = requests.get(url, params={"get": "Hadoop:service=HBase,name=RegionServer,sub=Server::tag.serverName"},
                          timeout=10).json()
    assert server["beans"][0]["tag.serverName"] == rs["servername"]
