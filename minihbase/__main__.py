"""`python -m minihbase`: run the local HBase stand-ins.

    up        start ZooKeeper (unless --zookeeper) and every cluster of clusters.toml (dc1, dc2); returns when
              all are ready; exit 1 with the log's path on failure. --secure: Kerberos on every channel (a KDC,
              keytabs, TLS, a SASL ZooKeeper; clusters-secure.toml; see minihbase/security/cli.py)
    down      stop the clusters (flushing them) and the ZooKeeper `up` started
    status    liveness of every role; exit 0 when everything runs
    endpoints addresses (--json: {"clusters": {name: {...}}}, the truth about ports)
    kill-rs / start-rs CLUSTER SERVER   crash / restart one region server (slot index or servername)
    stop-gateway / start-gateway CLUSTER KIND INDEX   stop (as if it died) / restart a thrift or thrift2 gateway
    gateway-fault CLUSTER KIND INDEX [--latency-ms MS] [--reset-probability P] [--reset-now]   a gateway's network
    latency CLUSTER MS, quota CLUSTER PATH [--space-bytes N] [--namespace N], roll-wals CLUSTER
    serve     (internal) run one cluster in this process
    shell     HBase shell lookalike (`shell -n`), provided by minihbase part 2

Every subcommand takes --workdir (default <repo>/.state/minihbase) to find its instance.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from minihbase import process
from minihbase.config import CLUSTERS_TOML, ConfigError, load_clusters
from minihbase.process import DEFAULT_WORKDIR, MiniHBaseError
from minihbase.security.client import cluster_auth


def _instance(workdir: Path) -> dict:
    path = workdir / "instance.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _zk_pid(workdir: Path) -> int | None:
    try:
        pid = int((workdir / "zookeeper" / "zookeeper.pid").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"ZooKeeperServerMain" in cmdline else None


def _endpoints(workdir: Path, name: str) -> dict | None:
    path = process.cluster_dir(workdir, name) / "endpoints.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        return process.control(data["control_url"], "/control/endpoints", timeout=5,
                               auth=cluster_auth(workdir, name))
    except (MiniHBaseError, ValueError, KeyError):
        return None


def cmd_up(args) -> int:
    from bedkit.zookeeper import ZooKeeperServer

    if args.secure:
        from minihbase.security.cli import cmd_up_secure

        return cmd_up_secure(args)
    workdir = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        configs = load_clusters(args.config)
    except ConfigError as e:
        print(f"minihbase up: {e}", file=sys.stderr)
        return 2
    running = process.running_clusters(workdir)
    if running and set(configs) <= set(running):
        return 0  # already up: nothing to do
    if running:
        print(f"minihbase up: clusters {', '.join(running)} already run under {workdir}; "
              f"run `python -m minihbase down --workdir {workdir}` first", file=sys.stderr)
        return 1
    instance = _instance(workdir)
    zk = None
    if args.zookeeper:
        zk_hosts, owned = args.zookeeper, False
    else:
        port = instance.get("zookeeper_port") if instance.get("zookeeper_owned") else None
        if port and not _port_free(port):
            port = None
        zk = ZooKeeperServer(workdir / "zookeeper", port=port)
        try:
            zk.start()
        except RuntimeError as e:
            print(f"minihbase up: {e}", file=sys.stderr)
            return 1
        zk_hosts, owned = zk.hosts, True
    procs = {}
    try:
        for name, config in configs.items():
            procs[name] = process.spawn(config, workdir, zk_hosts)
        for name in configs:
            process.wait_ready(workdir, name, procs[name], args.timeout)
    except MiniHBaseError as e:
        for name, proc in procs.items():
            process.stop(workdir, name, proc, timeout=20)
        if zk is not None:
            zk.stop()
        print(f"minihbase up failed: {e}", file=sys.stderr)
        return 1
    (workdir / "instance.json").write_text(json.dumps({
        "zookeeper": zk_hosts, "zookeeper_owned": owned, "zookeeper_port": zk.port if zk else None,
        "clusters": sorted(configs), "config": str(args.config),
    }, indent=1))
    return 0


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZooKeeper binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def cmd_down(args) -> int:
    """Every serve process of the workdir (pid file or not), then the ZooKeeper `up` started; returns once they
    have exited, exit 1 naming any that survived SIGKILL."""
    import time

    workdir = args.workdir
    left = [f"{name} (pid {pid})" for pid, name in process.stop_all(workdir).items()]
    instance = _instance(workdir)
    pid = _zk_pid(workdir)
    if pid is not None and instance.get("zookeeper_owned", True):
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 15
        while process.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if process.pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while process.pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        if process.pid_alive(pid):
            left.append(f"ZooKeeper (pid {pid})")
        else:
            (workdir / "zookeeper" / "zookeeper.pid").unlink(missing_ok=True)
    if left:
        print(f"minihbase down: still running after SIGKILL: {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


def cmd_status(args) -> int:
    workdir = args.workdir
    names = process.known_clusters(workdir)
    ok = bool(names)
    report = {"workdir": str(workdir), "clusters": {}}
    for name in names:
        ep = _endpoints(workdir, name)
        if ep is None:
            ok = False
            report["clusters"][name] = {"running": False}
            continue
        rs = ep["region_servers"]
        alive = sum(1 for r in rs if r["alive"])
        ok = ok and alive == len(rs)
        report["clusters"][name] = {"running": True, "thrift": ep["thrift"], "thrift2": ep.get("thrift2"),
                                    "cluster_key": ep["cluster_key"], "region_servers": rs,
                                    "thrift_gateways": ep.get("thrift_gateways", []),
                                    "thrift2_gateways": ep.get("thrift2_gateways", [])}
    instance = _instance(workdir)
    if instance.get("zookeeper_owned"):
        zk_up = _zk_pid(workdir) is not None
        ok = ok and zk_up
        report["zookeeper"] = {"hosts": instance.get("zookeeper"), "running": zk_up}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0 if ok else 1
    if not names:
        print(f"no minihbase instance under {workdir}")
        return 1
    if "zookeeper" in report:
        z = report["zookeeper"]
        print(f"zookeeper {z['hosts']}: {'up' if z['running'] else 'DOWN'}")
    for name, c in report["clusters"].items():
        if not c["running"]:
            print(f"{name}: DOWN")
            continue
        alive = sum(1 for r in c["region_servers"] if r["alive"])
        print(f"{name}: up  thrift {c['thrift']['host']}:{c['thrift']['port']}  cluster key {c['cluster_key']}  "
              f"region servers {alive}/{len(c['region_servers'])} alive")
        for r in c["region_servers"]:
            print(f"  [{r['slot']}] {r['servername']}  info port {r['info_port']}  {r['state']}")
        for kind in ("thrift", "thrift2"):
            for g in c[f"{kind}_gateways"]:
                print(f"  {kind} gateway [{g['index']}] {g['host']}:{g['port']}  {'up' if g['alive'] else 'DOWN'}")
    return 0 if ok else 1


def cmd_endpoints(args) -> int:
    workdir = args.workdir
    clusters = {}
    for name in process.known_clusters(workdir):
        if args.cluster and name != args.cluster:
            continue
        ep = _endpoints(workdir, name)
        if ep is not None:
            clusters[name] = ep
    if not clusters:
        print(f"minihbase endpoints: no running cluster under {workdir}", file=sys.stderr)
        return 1
    if args.json:
        from minihbase.security.cli import security_summary

        security = security_summary(workdir)  # krb5.conf, realms, KDC, every principal's keytab (secured)
        print(json.dumps({"clusters": clusters, **({"security": security} if security else {})}, indent=1,
                         sort_keys=True))
    else:
        for name, ep in clusters.items():
            thrift2 = f"{ep['thrift2']['host']}:{ep['thrift2']['port']}" if ep.get("thrift2") else "-"
            print(f"{name}: thrift {ep['thrift']['host']}:{ep['thrift']['port']}  thrift2 {thrift2}  "
                  f"cluster key {ep['cluster_key']}  webhdfs {ep['webhdfs_url']}  rootdir {ep['rootdir']}")
    return 0


def _control_cmd(args, path: str, body: dict) -> int:
    ep = _endpoints(args.workdir, args.cluster)
    if ep is None:
        print(f"minihbase: cluster {args.cluster} is not running under {args.workdir}", file=sys.stderr)
        return 1
    try:
        result = process.control(ep["control_url"], path, body, auth=cluster_auth(args.workdir, args.cluster))
    except MiniHBaseError as e:
        print(f"minihbase: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


def _server(text: str):
    return int(text) if text.isdigit() else text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["shell"]:
        try:
            from minihbase import shell
        except ImportError:
            print("minihbase shell: not available yet (the `hbase shell -n` lookalike comes with minihbase "
                  "part 2)", file=sys.stderr)
            return 2
        return shell.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m minihbase", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_: str):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--workdir", type=lambda s: Path(s).resolve(), default=DEFAULT_WORKDIR,
                       help=f"instance directory (default {DEFAULT_WORKDIR})")
        return p

    p = add("up", "start ZooKeeper and the clusters of clusters.toml")
    p.add_argument("--zookeeper", help="use this ZooKeeper (HOST:PORT) instead of starting one")
    p.add_argument("--config", type=Path, default=CLUSTERS_TOML, help="clusters file (default: the checked-in one)")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--secure", action="store_true", help="Kerberos on every channel: KDC, keytabs, SASL "
                   "ZooKeeper, secured clusters (clusters-secure.toml)")
    p.add_argument("--ticket-lifetime-s", type=int, default=3600, help="--secure: the KDC's ticket lifetime")
    p.add_argument("--no-cross-realm-trust", action="store_true",
                   help="--secure: DC1's principals get no tickets in DC2 (DC2 -> DC1 stays, for ZooKeeper)")
    p.add_argument("--security-config", type=Path, default=Path(__file__).with_name("clusters-secure.toml"),
                   help="--secure: each cluster's security settings (default: the checked-in one)")
    add("down", "stop the clusters, the ZooKeeper (and the KDC) `up` started")
    p = add("status", "liveness of every role")
    p.add_argument("--json", action="store_true")
    p = add("endpoints", "addresses of every running cluster")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cluster")
    for name, help_ in (("kill-rs", "crash one region server"), ("start-rs", "start a region server in a slot")):
        p = add(name, help_)
        p.add_argument("cluster")
        p.add_argument("server", type=_server, help="slot index or servername")
    for name, help_ in (("stop-gateway", "stop a Thrift gateway as if its process died"),
                        ("start-gateway", "start a stopped Thrift gateway again on its port")):
        p = add(name, help_)
        p.add_argument("cluster")
        p.add_argument("kind", choices=["thrift", "thrift2"])
        p.add_argument("index", type=int, nargs="?", default=0, help="gateway index (default 0)")
    p = add("gateway-fault", "one Thrift gateway's network faults: its own latency, connection resets")
    p.add_argument("cluster")
    p.add_argument("kind", choices=["thrift", "thrift2"])
    p.add_argument("index", type=int, nargs="?", default=0, help="gateway index (default 0)")
    p.add_argument("--latency-ms", type=float, help="this gateway's own latency per call (0: none)")
    p.add_argument("--reset-probability", type=float, help="chance that a call's connection is reset (0: none)")
    p.add_argument("--reset-now", action="store_true", help="reset every open connection now")
    p = add("latency", "injected latency per RPC")
    p.add_argument("cluster")
    p.add_argument("ms", type=float)
    p = add("quota", "set HDFS quotas on a directory (-1 clears)")
    p.add_argument("cluster")
    p.add_argument("path")
    p.add_argument("--space-bytes", type=int)
    p.add_argument("--namespace", type=int)
    p = add("roll-wals", "roll every region server's WAL")
    p.add_argument("cluster")
    p = add("serve", "(internal) run one cluster in this process")
    p.add_argument("--cluster", required=True)
    p.add_argument("--zookeeper", required=True)
    args = parser.parse_args(argv)

    if args.command == "serve":
        from minihbase.serve import run

        return run(args.cluster, args.workdir, args.zookeeper)
    if args.command == "up":
        return cmd_up(args)
    if args.command == "down":
        from minihbase.security.cli import down_kdc

        return max(cmd_down(args), down_kdc(args.workdir))  # a secured instance's KDC last (none otherwise)
    if args.command == "status":
        return cmd_status(args)
    if args.command == "endpoints":
        return cmd_endpoints(args)
    if args.command == "kill-rs":
        return _control_cmd(args, "/control/kill-rs", {"server": args.server})
    if args.command == "start-rs":
        return _control_cmd(args, "/control/start-rs", {"server": args.server})
    if args.command in ("stop-gateway", "start-gateway"):
        return _control_cmd(args, f"/control/{args.command}", {"kind": args.kind, "index": args.index})
    if args.command == "gateway-fault":
        body = {"kind": args.kind, "index": args.index, "reset_now": args.reset_now}
        if args.latency_ms is not None:
            body["latency_ms"] = args.latency_ms
        if args.reset_probability is not None:
            body["reset_probability"] = args.reset_probability
        return _control_cmd(args, "/control/gateway-fault", body)
    if args.command == "latency":
        return _control_cmd(args, "/control/latency", {"ms": args.ms})
    if args.command == "quota":
        body = {"path": args.path}
        if args.space_bytes is not None:
            body["space_bytes"] = args.space_bytes
        if args.namespace is not None:
            body["namespace"] = args.namespace
        return _control_cmd(args, "/control/quota", body)
    if args.command == "roll-wals":
        return _control_cmd(args, "/control/roll-wals", {})
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
