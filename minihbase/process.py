"""Starting, finding and stopping cluster processes (`python -m minihbase serve`), for the CLI and tests.

Workdir layout: `<workdir>/<cluster>/` holds `config.json` (what `serve` runs with), `serve.pid`,
`endpoints.json` (written once the cluster is ready, removed when it stops), `cluster.log`, `serve.out`
(the process's stdout/stderr), `ports.json` (ports reused on the next start) and `hdfs/` (the rootdir).
`<workdir>/instance.json` records what `up` started (ZooKeeper and clusters) for `down` and `status`.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from minihbase.config import ClusterConfig
from minihbase.security.client import cluster_auth

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WORKDIR = PACKAGE_ROOT / ".state" / "minihbase"


class MiniHBaseError(RuntimeError):
    """A cluster process failed to start, or a control request was refused (the message says why)."""


def cluster_dir(workdir: Path, name: str) -> Path:
    return Path(workdir) / name


def spawn(config: ClusterConfig, workdir: Path, zk_hosts: str) -> subprocess.Popen:
    d = cluster_dir(workdir, config.name)
    d.mkdir(parents=True, exist_ok=True)
    for stale in ("endpoints.json", "serve.error"):
        (d / stale).unlink(missing_ok=True)
    (d / "config.json").write_text(config.to_json())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    out = open(d / "serve.out", "ab")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "minihbase", "serve", "--cluster", config.name, "--workdir", str(workdir),
             "--zookeeper", zk_hosts],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            cwd=str(PACKAGE_ROOT), env=env,
        )
    finally:
        out.close()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_ready(workdir: Path, name: str, proc: subprocess.Popen | None, timeout: float = 90.0) -> dict:
    """The cluster's endpoints once `endpoints.json` appears; raises with the log's tail if the process ends."""
    d = cluster_dir(workdir, name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = d / "endpoints.json"
        if path.exists():
            return json.loads(path.read_text())
        if proc is not None and proc.poll() is not None:
            error = (d / "serve.error").read_text().splitlines() if (d / "serve.error").exists() else []
            detail = error[0] if error else _tail(d / "serve.out")
            raise MiniHBaseError(f"minihbase cluster {name} exited with {proc.returncode} while starting: "
                                 f"{detail}\nsee {d / 'cluster.log'}")
        time.sleep(0.1)
    raise MiniHBaseError(f"minihbase cluster {name} not ready within {timeout:.0f}s; see {d / 'cluster.log'}")


def read_pid(workdir: Path, name: str) -> int | None:
    path = cluster_dir(workdir, name) / "serve.pid"
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if is_serve_process(pid, name) else None


def is_serve_process(pid: int, name: str) -> bool:
    """True if `pid` is a running `minihbase serve --cluster <name>` (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"minihbase" in cmdline and b"serve" in cmdline and name.encode() in cmdline


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child is not alive
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return False


def control(url: str, path: str, body: dict | None = None, timeout: float = 60.0, auth=None) -> dict:
    """GET (body None) or POST a control request; a refusal raises MiniHBaseError with the server's reason.
    `auth(url)`: headers authenticating the request (a secured cluster: `minihbase.security.client`)."""
    data = None if body is None else json.dumps(body).encode()
    try:
        headers = {"Content-Type": "application/json", **(auth(url) if auth else {})}
    except Exception as e:  # no ticket to be had (KDC down, keytab gone): the request cannot be made
        raise MiniHBaseError(f"{path}: cannot authenticate to {url}: {e}") from None
    req = urllib.request.Request(url.rstrip("/") + path, data=data, method="GET" if body is None else "POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            reason = json.loads(e.read()).get("error")
        except ValueError:
            reason = None
        raise MiniHBaseError(f"{path}: {reason or e}") from None
    except (urllib.error.URLError, OSError) as e:
        raise MiniHBaseError(f"{path}: cluster control endpoint {url} unreachable: {e}") from None


def stop(workdir: Path, name: str, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> bool:
    """Graceful shutdown (flush, archive); SIGTERM then SIGKILL if it does not end. True if it was running."""
    d = cluster_dir(workdir, name)
    pid = proc.pid if proc is not None and proc.poll() is None else read_pid(workdir, name)
    if pid is None:
        return False
    endpoints = d / "endpoints.json"
    if endpoints.exists():
        try:
            control(json.loads(endpoints.read_text())["control_url"], "/control/shutdown", {}, timeout=10,
                    auth=cluster_auth(workdir, name))
        except (MiniHBaseError, ValueError, KeyError):
            os.kill(pid, signal.SIGTERM)
    else:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
    if not _wait_exit(pid, proc, timeout):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_exit(pid, proc, 10)
    return True


def kill(workdir: Path, name: str, proc: subprocess.Popen | None = None) -> None:
    """SIGKILL the whole cluster process (a machine crash: nothing is flushed)."""
    pid = proc.pid if proc is not None else read_pid(workdir, name)
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _wait_exit(pid, proc, 10)
    d = cluster_dir(workdir, name)
    (d / "endpoints.json").unlink(missing_ok=True)
    (d / "serve.pid").unlink(missing_ok=True)


def _wait_exit(pid: int, proc: subprocess.Popen | None, timeout: float) -> bool:
    if proc is not None:
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def running_clusters(workdir: Path) -> list[str]:
    """Names of clusters under `workdir` whose serve process is alive."""
    workdir = Path(workdir)
    if not workdir.is_dir():
        return []
    return sorted(d.name for d in workdir.iterdir()
                  if d.is_dir() and (d / "config.json").exists() and read_pid(workdir, d.name) is not None)


def known_clusters(workdir: Path) -> list[str]:
    workdir = Path(workdir)
    if not workdir.is_dir():
        return []
    return sorted(d.name for d in workdir.iterdir() if d.is_dir() and (d / "config.json").exists())
