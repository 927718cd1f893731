"""Debian's redis-server as the Celery broker: a loopback port, a password generated per run, no persistence."""
from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Mapping

from deploy.processes import free_port, spawn, stop_session, wait_until


def redis_binary() -> str:
    found = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists()
                                             else None)
    if not found:
        raise RuntimeError("redis-server not found: run `make bootstrap` (Debian's redis-server package)")
    return found


class RedisServer:
    def __init__(self, workdir: Path, env: Mapping[str, str]) -> None:
        self.workdir = Path(workdir)
        self.dir = self.workdir / "redis"
        self.port = free_port()
        self.password = secrets.token_urlsafe(24)
        self.env = dict(env)
        self.proc: subprocess.Popen | None = None
        self.sid: int | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/{db}"

    def _ping(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            s.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
            data = b""
            while data.count(b"\r\n") < 2:
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
        return b"+PONG" in data

    def start(self, timeout: float = 30.0) -> "RedisServer":
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "redis.conf"
        conf.write_text("\n".join([
            "bind 127.0.0.1", f"port {self.port}", "protected-mode yes", "daemonize no",
            f"dir {self.dir}", 'save ""', "appendonly no", "loglevel notice", "databases 4",
        ]) + "\n", encoding="utf-8")
        conf.chmod(0o600)
        # The password goes in a file only the owner reads, not on the command line.
        (self.dir / "auth.conf").write_text(f"requirepass {self.password}\n", encoding="utf-8")
        (self.dir / "auth.conf").chmod(0o600)
        with open(conf, "a", encoding="utf-8") as f:
            f.write(f"include {self.dir / 'auth.conf'}\n")
        log = self.dir / "redis.log"
        self.proc = spawn(self.workdir, "redis", [redis_binary(), str(conf)], self.env, log)
        self.sid = self.proc.pid
        wait_until(self._ping, timeout, "redis-server to answer PING", proc=self.proc, log_path=log)
        return self

    def stop(self) -> None:
        if self.sid is not None:
            stop_session(self.sid, "redis", timeout=15)
            if self.proc is not None:
                self.proc.wait(5)
            self.sid = None
