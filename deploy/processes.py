"""Starting and stopping the deployment's processes, and proving none is left.

Every service runs in a session of its own (`start_new_session`): its children (Celery's pool, Airflow's task
supervisors, spark-submit and its driver, the Spark workers' executors) stay in that session unless they call
setsid themselves, so "every process of the service" is "every process whose session id is the service's".
Each session is recorded in `<workdir>/deploy.sessions` ("SID NAME" per line) as it starts, so another
process (`python -m deploy down`, `scripts/no-leftovers`) can find and check them.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterable, Mapping, Sequence

SESSIONS_FILE = "deploy.sessions"


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now (the usual race with whoever binds it next is accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def session_members(sid: int) -> list[int]:
    """Pids of every live process in session `sid` (zombies excluded)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.getsid(pid) != sid:
                continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (ProcessLookupError, PermissionError, FileNotFoundError, OSError):
            continue
        if state != b"Z":
            members.append(pid)
    return members


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (by parent pid), whatever their session."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:  # our own children would otherwise stay zombies (they are excluded from members anyway)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def signal_session(sid: int, sig: int = signal.SIGTERM) -> None:
    """Signal every process of the session without waiting (stop_session then waits for it)."""
    _signal(session_members(sid), sig)


def stop_session(sid: int, name: str = "", timeout: float = 30.0, sig: int = signal.SIGTERM) -> None:
    """Signal every process of the session, wait up to `timeout`, SIGKILL what is left, and check that
    nothing is: RuntimeError naming the survivors otherwise."""
    members = session_members(sid)
    if not members:
        _reap([sid])
        return
    _signal(members, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap([sid])
        members = session_members(sid)
        if not members:
            return
        time.sleep(0.2)
    kill_session(sid)
    members = session_members(sid)
    if members:
        raise RuntimeError(f"{name or sid}: processes {members} of session {sid} survived SIGKILL")


def kill_session(sid: int, timeout: float = 15.0) -> None:
    """SIGKILL every process of the session (new ones forked meanwhile too), until none is left."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        members = session_members(sid)
        _reap([sid])
        if not members:
            return
        _signal(members, signal.SIGKILL)
        time.sleep(0.1)


def record_session(workdir: Path, sid: int, name: str) -> None:
    with open(Path(workdir) / SESSIONS_FILE, "a", encoding="utf-8") as f:
        f.write(f"{sid} {name}\n")


def recorded_sessions(workdir: Path) -> list[tuple[int, str]]:
    path = Path(workdir) / SESSIONS_FILE
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        sid, _, name = line.partition(" ")
        if sid.isdigit():
            out.append((int(sid), name))
    return out


def leftovers(workdir: Path) -> dict[str, list[int]]:
    """Recorded sessions that still have processes: {name: pids}."""
    return {name: pids for sid, name in recorded_sessions(workdir) if (pids := session_members(sid))}


def spawn(workdir: Path, name: str, cmd: Sequence[str], env: Mapping[str, str], log_path: Path,
          cwd: Path | None = None) -> subprocess.Popen:
    """Start `cmd` in a session of its own, output to `log_path`, and record the session."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(list(cmd), env=dict(env), cwd=str(cwd or workdir), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    record_session(workdir, proc.pid, name)
    return proc


def wait_until(predicate, timeout: float, what: str, interval: float = 0.5, proc: subprocess.Popen | None = None,
               log_path: Path | None = None):
    """Poll `predicate()` until truthy; fail early if `proc` exits, naming its log's tail."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = predicate()
        except Exception:
            result = None
        if result:
            return result
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited ({proc.returncode}){_tail(log_path)}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{_tail(log_path)}")
        time.sleep(interval)


def _tail(log_path: Path | None, lines: int = 30) -> str:
    if log_path is None or not Path(log_path).exists():
        return ""
    text = Path(log_path).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return f"; last lines of {log_path}:\n" + "\n".join(text)
