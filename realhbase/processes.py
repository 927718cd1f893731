"""The bed's processes: how each is started (its log, its own session), how it is marked on its command line, how it
is found again in /proc, signalled and waited for.

Every daemon JVM carries `-Drealhbase.workdir=<workdir> -Drealhbase.role=<cluster>/<role>` on its command line:
`down` and the checks for survivors find them in /proc, pid files or not. A client JVM (shell, DFSAdmin) carries
`-Drealhbase.client.workdir=` instead: it is no part of the bed, and `down` leaves it alone. Debian's ZooKeeper
and the KDC carry no marker: they are recognized by their configuration files under the workdir, and a YARN
container's processes by its working directory.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

ZOOKEEPER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def markers(workdir: Path, cluster: str, role: str, client: bool = False) -> list[str]:
    """The JVM properties that name a process's bed and role."""
    return [f"-Drealhbase.{'client.' if client else ''}workdir={workdir}", f"-Drealhbase.role={cluster}/{role}"]


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def pid_alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def role_of(argv: list[str], workdir: Path, containers_dir: Path | None, container_role: str) -> str | None:
    """The role of a process by its command line ("<cluster>/<role>", "zookeeper", "kdc", a YARN container's
    `container_role`), None when it is not one of this workdir's bed (pure: unit-tested)."""
    if f"-Drealhbase.workdir={workdir}" in argv:
        return next((a.split("=", 1)[1] for a in argv if a.startswith("-Drealhbase.role=")), "?")
    if containers_dir is not None and any(str(containers_dir) + os.sep in a for a in argv):
        return container_role  # a YARN container's process (a Spark driver, executor, Python worker)
    if ZOOKEEPER_MAIN in argv and str(workdir / "zookeeper" / "zoo.cfg") in argv:
        return "zookeeper"
    if argv and argv[0].endswith("krb5kdc") and str(workdir / "kdc" / "kdc.pid") in argv:
        return "kdc"  # a secured bed's KDC (up --secure)
    return None


def find(workdir: Path, containers_dir: Path | None = None, container_role: str = "container") -> dict[int, str]:
    """pid -> role of every live process of this workdir's bed (see `role_of`)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        role = role_of(cmdline(int(entry.name)), workdir, containers_dir, container_role)
        if role is not None and pid_alive(int(entry.name)):
            found[int(entry.name)] = role
    return found


def send(pid: int, sig: int) -> None:
    """A signal to a process that may be gone already."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(pids, timeout: float) -> set[int]:
    """Waits until none of `pids` runs (reaping our own children); returns those still running."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while True:
        for pid in list(left):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not pid_alive(pid):
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def terminate(pids, grace: float, kill_after: float = 10.0) -> tuple[set[int], set[int]]:
    """SIGTERM to `pids`, SIGKILL to those left after `grace` seconds; returns (SIGKILLed, still running after
    `kill_after` more seconds)."""
    pids = set(pids)
    for pid in pids:
        send(pid, signal.SIGTERM)
    killed = wait_gone(pids, grace)
    for pid in killed:
        send(pid, signal.SIGKILL)
    return killed, wait_gone(killed, kill_after)


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log, for an error message."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join("    " + line[:400] for line in text[-lines:])


def spawn(command: list[str], log: Path, what: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A daemon in a session of its own (a signal to this process's group does not reach it), its output appended
    to `log` after a line saying what starts and when."""
    with open(log, "ab") as out:
        out.write(f"\n==== realhbase: starting {what} at {time.strftime('%F %T')}\n".encode())
        out.flush()
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=str(cwd), env=env)
