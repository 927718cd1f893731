"""minihbase stops when asked, even after its ZooKeeper died: `serve` on SIGTERM, and `down` for every serve
process of its workdir, returning only once they have exited (a stand-in that cannot be stopped keeps ports
and CPU taken on the next run).

Each test runs its own ZooKeeper (it is killed on purpose) and one cluster."""
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bedkit.zookeeper import ZooKeeperServer
from minihbase.testing import MiniCluster
from tests.polling import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def serve_pids(workdir: Path) -> list[int]:
    """Every `minihbase serve` process whose command line names `workdir` (found without its pid files)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if b"serve" in argv and str(workdir).encode() in argv and state != "Z":
            pids.append(int(proc.name))
    return pids


def kill_zookeeper(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or
             Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z",
             timeout=15, what=f"ZooKeeper {pid} to die")


def sessions_met_the_dead_quorum(log: Path, sessions: int) -> bool:
    """Each of the cluster's kazoo sessions has failed to reconnect at least 3 times: its threads have had time
    to issue ZooKeeper calls against the dead quorum (the replication manager's loop runs every 0.5 s)."""
    drops = Counter(line.split(" kazoo.client:")[0].split()[-2] for line in log.read_text().splitlines()
                    if "kazoo.client: Connection dropped" in line)
    return len([t for t, n in drops.items() if n >= 3]) >= sessions


def test_serve_exits_on_sigterm_after_its_zookeeper_died(tmp_path):
    zk = ZooKeeperServer(tmp_path / "zookeeper").start()
    cluster = MiniCluster.start(zk.hosts, tmp_path, name="solo", region_servers=2)
    pid = cluster._proc.pid
    try:
        kill_zookeeper(zk.process.pid)
        log = tmp_path / "solo" / "cluster.log"
        wait_for(lambda: sessions_met_the_dead_quorum(log, sessions=3), timeout=30,
                 what="the master's and both region servers' sessions to see ZooKeeper gone")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: cluster._proc.poll() is not None, timeout=20, what="serve to exit after SIGTERM")
        assert cluster._proc.returncode == 0
        text = log.read_text()
        assert "ZooKeeper does not answer; closing its session first" in text, text[-3000:]
        lines = text.splitlines()
        assert sum(" region server " in line and line.endswith(" stopped") for line in lines) == 2, text[-3000:]
        assert lines[-1].endswith("cluster solo stopped"), text[-3000:]
    finally:
        if cluster._proc.poll() is None:
            cluster.crash()
        zk.stop()


def test_down_stops_every_serve_process_and_waits_for_them(tmp_path):
    workdir = tmp_path / "instance"
    config = tmp_path / "clusters.toml"
    config.write_text('[defaults]\nregion_servers = 2\n\n[clusters.solo]\nznode_parent = "/hbase-solo"\n')
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def minihbase(*args):
        return subprocess.run([sys.executable, "-m", "minihbase", *args, "--workdir", str(workdir)],
                              capture_output=True, text=True, timeout=180, cwd=REPO, env=env)

    up = minihbase("up", "--config", str(config))
    assert up.returncode == 0, up.stderr
    try:
        [pid] = serve_pids(workdir)
        # A start that failed removes serve.pid before it stops its half-started cluster: `down` must still find
        # the process, and here its ZooKeeper is gone too.
        (workdir / "solo" / "serve.pid").unlink()
        kill_zookeeper(int((workdir / "zookeeper" / "zookeeper.pid").read_text()))
        down = minihbase("down")
        assert down.returncode == 0, down.stderr
        assert serve_pids(workdir) == [], f"down returned while serve {pid} of its workdir still runs"
    finally:
        for left in serve_pids(workdir):
            os.killpg(left, signal.SIGKILL)
