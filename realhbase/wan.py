"""A WAN between the bed's two datacenters: a bandwidth-limited, byte-counting TCP proxy on the link.

`start(workdir, endpoints, mbps)` runs one proxy process (`python -m realhbase.wan serve`, its pid, ports and log in
`<workdir>/wan/`) listening, for each cluster, where the *other* datacenter reaches its Thrift and Thrift2
gateways: a client in dc2 that connects to dc1's gateways through it crosses the link, and so do the answers. Each
direction of the link (`dc1->dc2`, `dc2->dc1`) is one shared pipe of `mbps` megabits per second (a token bucket
that all connections crossing that way share, as they share a real link), and every byte through it is counted per
direction. `GET http://127.0.0.1:<stats_port>/stats` answers `{"mbps", "bytes": {"dc1->dc2": n, "dc2->dc1": n},
"connections"}`; `stats(workdir)` reads it.

The bed's endpoints (`annotate`) then give each cluster, under `"remote"`, its endpoints as the other datacenter
sees them: the gateways' proxied addresses and a `connection` whose Thrift host, port and `thrift2_servers` go
through the link (its ZooKeeper, WebHDFS and shell stay direct: the toolkit's data paths over Thrift are what the
link carries; HBase's own client, which finds the region servers through ZooKeeper, would not go through it: the
benchmarks' link for it is the kernel's, realhbase/rpclink.py).

`python -m realhbase up --wan-mbps N` starts it with the bed; `down` stops it (`stop`).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
CHUNK = 64 * 1024
BURST_S = 0.05  # how far a direction may run ahead of its rate after an idle moment


def wan_dir(workdir: Path) -> Path:
    return Path(workdir) / "wan"


class Pipe:
    """One direction of the link: `mbps` megabits per second shared by every connection crossing it (None:
    unlimited), and the bytes that crossed."""

    def __init__(self, mbps: float | None, clock=time.monotonic):
        self.rate = None if not mbps else mbps * 1e6 / 8  # bytes per second
        self.clock = clock
        self.bytes = 0
        self._free_at = 0.0  # when the link has sent everything given to it so far
        self._lock = threading.Lock()

    def send(self, n: int) -> float:
        """Account `n` bytes; how long to wait before they have crossed (their turn on the link plus their own
        transmission time)."""
        with self._lock:
            self.bytes += n
            if self.rate is None:
                return 0.0
            now = self.clock()
            self._free_at = max(self._free_at, now - BURST_S) + n / self.rate
            return max(0.0, self._free_at - now)


def _pump(src: socket.socket, dst: socket.socket, pipe: Pipe) -> None:
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            wait = pipe.send(len(data))
            if wait > 0:
                time.sleep(wait)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


class Link:
    """The proxy's routes (listen port -> gateway, and which way requests cross) and the two pipes."""

    def __init__(self, mbps: float | None, names: tuple[str, str]):
        a, b = names
        self.mbps = mbps
        self.pipes = {f"{a}->{b}": Pipe(mbps), f"{b}->{a}": Pipe(mbps)}
        self.connections = 0
        self._lock = threading.Lock()

    def serve(self, listener: socket.socket, forward: tuple[str, int], request_way: str, answer_way: str) -> None:
        while True:
            try:
                client, _addr = listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._connect, args=(client, forward, request_way, answer_way),
                             daemon=True).start()

    def _connect(self, client: socket.socket, forward: tuple[str, int], request_way: str, answer_way: str) -> None:
        try:
            server = socket.create_connection(forward, timeout=30)
            server.settimeout(None)
        except OSError:
            client.close()
            return
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up = threading.Thread(target=_pump, args=(client, server, self.pipes[request_way]), daemon=True)
        up.start()
        _pump(server, client, self.pipes[answer_way])
        up.join()
        client.close()
        server.close()

    def stats(self) -> dict[str, Any]:
        return {"mbps": self.mbps, "bytes": {way: p.bytes for way, p in self.pipes.items()},
                "connections": self.connections}


def routes(endpoints: dict[str, dict]) -> list[dict[str, Any]]:
    """What the link carries: for each cluster, its Thrift and Thrift2 gateways as the other datacenter reaches
    them (requests cross other->cluster, answers cluster->other)."""
    names = sorted(endpoints)
    if len(names) != 2:
        raise ValueError(f"a WAN links two datacenters; the bed has {names}")
    out = []
    for name in names:
        other = names[1 - names.index(name)]
        for kind in ("thrift", "thrift2"):
            ep = endpoints[name][kind]
            out.append({"cluster": name, "kind": kind, "forward": [ep["host"], ep["port"]],
                        "request_way": f"{other}->{name}", "answer_way": f"{name}->{other}"})
    return out


def serve(workdir: Path, mbps: float | None, route_list: list[dict[str, Any]]) -> None:
    """The proxy process: listen on a free port per route and one for /stats, write `wan.json`, serve until
    SIGTERM."""
    names = sorted({r["cluster"] for r in route_list})
    link = Link(mbps, (names[0], names[1]))
    listeners = []
    for r in route_list:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        sock.listen(128)
        r["port"] = sock.getsockname()[1]
        listeners.append(sock)
        threading.Thread(target=link.serve, args=(sock, tuple(r["forward"]), r["request_way"], r["answer_way"]),
                         daemon=True).start()

    class Stats(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps(link.stats()).encode()
            self.send_response(200 if self.path == "/stats" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer((HOST, 0), Stats)
    state = {"pid": os.getpid(), "mbps": mbps, "routes": route_list, "stats_port": http.server_address[1]}
    tmp = wan_dir(workdir) / "wan.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(wan_dir(workdir) / "wan.json")

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=http.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    http.serve_forever()
    for sock in listeners:
        sock.close()


def state(workdir: Path) -> dict[str, Any] | None:
    """The running link's `wan.json` (None: no link, or its process is gone)."""
    path = wan_dir(workdir) / "wan.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if _alive(found.get("pid"), workdir) else None


def _alive(pid: Any, workdir: Path) -> bool:
    """Whether `pid` is this workdir's proxy (its command line names the workdir: another bed's is not ours)."""
    try:
        argv = Path(f"/proc/{int(pid)}/cmdline").read_bytes().split(b"\0")
    except (OSError, TypeError, ValueError):
        return False
    return b"realhbase.wan" in argv and str(Path(workdir).resolve()).encode() in argv


def start(workdir: Path, endpoints: dict[str, dict], mbps: float | None, timeout_s: float = 60.0) -> dict[str, Any]:
    """Start the link's proxy for the bed at `workdir` (stopping one already running); its state once it listens."""
    workdir = Path(workdir).resolve()
    stop(workdir)
    d = wan_dir(workdir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "wan.json").unlink(missing_ok=True)
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    with open(d / "wan.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "realhbase.wan", "serve", "--workdir", str(workdir), "--mbps", str(mbps or 0),
             "--routes", json.dumps(routes(endpoints))], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, cwd=str(repo), start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = state(workdir)
        if found is not None:
            return found
        if proc.poll() is not None:
            raise RuntimeError(f"the WAN proxy exited with {proc.returncode}: {(d / 'wan.log').read_text()[-2000:]}")
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the WAN proxy did not listen within {timeout_s:.0f} s (log: {d / 'wan.log'})")


def stop(workdir: Path) -> None:
    """Stop this workdir's proxy, if it runs (SIGTERM, SIGKILL after 10 s)."""
    workdir = Path(workdir).resolve()
    path = wan_dir(workdir) / "wan.json"
    try:
        pid = int(json.loads(path.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    if _alive(pid, workdir):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(pid, workdir) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid, workdir):
            os.kill(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)


def stats(workdir: Path) -> dict[str, Any]:
    """The link's counters now (a `RuntimeError` when no link runs)."""
    import urllib.request

    found = state(workdir)
    if found is None:
        raise RuntimeError(f"no WAN link runs for the bed at {workdir} (python -m realhbase up --wan-mbps N)")
    with urllib.request.urlopen(f"http://{HOST}:{found['stats_port']}/stats", timeout=10) as r:
        return json.loads(r.read())


def annotate(workdir: Path, endpoints: dict[str, dict]) -> dict[str, dict]:
    """Add to each cluster's endpoints, when a link runs, `"remote"`: the cluster as the other datacenter reaches
    it (the proxied gateways, and a connection through them) and the link (`mbps`, `stats_url`)."""
    found = state(workdir)
    if found is None:
        return endpoints
    for name, ep in endpoints.items():
        ports = {r["kind"]: r["port"] for r in found["routes"] if r["cluster"] == name}
        if set(ports) != {"thrift", "thrift2"}:
            continue
        connection = json.loads(json.dumps(ep["connection"]))
        connection["host"], connection["port"] = HOST, ports["thrift"]
        connection["extra"]["thrift2_servers"] = f"{HOST}:{ports['thrift2']}"
        ep["remote"] = {"thrift": {"host": HOST, "port": ports["thrift"]},
                        "thrift2": {"host": HOST, "port": ports["thrift2"]}, "connection": connection,
                        "wan": {"mbps": found["mbps"], "stats_url": f"http://{HOST}:{found['stats_port']}/stats"}}
    return endpoints


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m realhbase.wan", description=__doc__.split("\n")[0])
    p.add_argument("command", choices=("serve", "stats"))
    p.add_argument("--workdir", required=True, type=lambda t: Path(t).resolve())
    p.add_argument("--mbps", type=float, default=0.0)
    p.add_argument("--routes", default="[]")
    args = p.parse_args(argv)
    if args.command == "serve":
        serve(args.workdir, args.mbps or None, json.loads(args.routes))
    else:
        print(json.dumps(stats(args.workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
