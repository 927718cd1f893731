"""A throw-away PostgreSQL server: Debian's server binaries, a fresh data directory, a free loopback port,
stopped (immediately) and deleted afterwards. The ledger's tests use it for the ledger database, the deployment
(`deploy.Deployment`) for Airflow's metadata database and the ledger.

It asks for a password, as production's does (`scram-sha-256` for every connection, the Unix socket's too): the
superuser's, generated for this server only (`password`), is in the URLs `create_database` returns, so whatever
carries them (a command line, a log, Spark's configuration) is caught leaking a real secret.

PostgreSQL refuses to run as root, so under root the server runs as the `postgres` user the Debian package
creates, with its data directory in /tmp (pytest's own temporary directories are private to root). The
postmaster runs in a session of its own (`pid` is that session's id).
"""
from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from deploy.processes import free_port


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL server's bin directory, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    def __init__(self, options: str = "") -> None:
        self.bin = server_binaries()
        if self.bin is None:
            raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql: run `make bootstrap`")
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="hbase-migration-pg-"))
        self.data = self.dir / "data"
        self.user = "postgres" if os.geteuid() == 0 else None
        self.options = options  # extra `postgres` options, e.g. "-c max_connections=200"
        self.password = secrets.token_urlsafe(24)  # URL-safe: goes into URLs as it is

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = [*(["runuser", "-u", self.user, "--"] if self.user else []), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")

    def start(self) -> "PostgresServer":
        if self.user:
            shutil.chown(self.dir, self.user)
        pwfile = self.dir / "pwfile"  # initdb reads the superuser's password from a file, never its arguments
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if self.user:
            shutil.chown(pwfile, self.user)
        try:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=scram-sha-256",
                      f"--pwfile={pwfile}", "--no-sync", "-E", "UTF8")
        finally:
            pwfile.unlink(missing_ok=True)
        self._start_server()
        return self

    def _start_server(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir} -c fsync=off"
        if self.options:
            options += " " + self.options
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"),
                  "-w", "-t", "60", "start")

    def crash(self) -> None:
        """Stop the server the way a crash does (`pg_ctl stop -m immediate`: no shutdown checkpoint, every
        connection dropped); its data stays, and `resume()` starts it again (crash recovery replays the WAL)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def resume(self) -> None:
        """Start the server again on its port and data after `crash()`; returns once it accepts connections."""
        self._start_server()

    def accepts_connections(self) -> bool:
        import psycopg

        try:
            self._connect(connect_timeout=3).close()
            return True
        except psycopg.OperationalError:
            return False

    @property
    def pid(self) -> int | None:
        """The postmaster's pid (also its session id), while it runs."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    def _connect(self, **kwargs):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", password=self.password,
                               dbname="postgres", **kwargs)

    def create_database(self, name: str) -> str:
        """Create database `name`; returns its SQLAlchemy URL, the superuser's password in it."""
        conn = self._connect(autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:  # `pg_ctl -w stop` returned once the server was gone
            shutil.rmtree(self.dir, ignore_errors=True)
