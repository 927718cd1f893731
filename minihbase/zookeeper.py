"""Start and stop a real ZooKeeper server from Debian's `zookeeper` package.

Used by the test harness, the benchmarks and `python -m minihbase up` when no
`--zookeeper` is given. The server runs standalone on a loopback port with its
data in a directory the caller owns; `stop()` ends the JVM and waits for it.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

ZOOKEEPER_JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (bound to 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def zookeeper_installed() -> bool:
    return all(os.path.exists(jar) for jar in ZOOKEEPER_JARS)


def _answers_ruok(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


class ZooKeeperServer:
    """One standalone ZooKeeper JVM on 127.0.0.1.

    >>> zk = ZooKeeperServer(Path("/tmp/zk")); zk.start(); zk.hosts
    '127.0.0.1:41234'
    """

    def __init__(self, workdir: Path, port: int | None = None, host: str = "127.0.0.1"):
        self.workdir = Path(workdir)
        self.host = host
        self.port = port or free_port(host)
        self.process: subprocess.Popen | None = None

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def _write_config(self) -> Path:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(
            "tickTime=500\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,stat,mntr\n"
            # Short sessions let tests expire a session or a region server quickly.
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=60000\n"
        )
        return cfg

    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        if not zookeeper_installed():
            raise RuntimeError(
                "ZooKeeper is not installed: expected %s (run `make bootstrap`, "
                "which does `apt-get install -y zookeeper`)" % ", ".join(ZOOKEEPER_JARS)
            )
        if _answers_ruok(self.host, self.port):
            raise RuntimeError(f"port {self.port} already has a ZooKeeper: refusing to share it")
        cfg = self._write_config()
        log = open(self.workdir / "zookeeper.log", "ab")
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", ":".join(ZOOKEEPER_JARS),
             "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        (self.workdir / "zookeeper.pid").write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self.process.returncode}; see {self.workdir / 'zookeeper.log'}"
                )
            if _answers_ruok(self.host, self.port):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.hosts} within {timeout}s")

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        (self.workdir / "zookeeper.pid").unlink(missing_ok=True)

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
