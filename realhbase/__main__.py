"""`python -m realhbase`: two real Apache HBase clusters (dc1, dc2) on real HDFS, with the stand-in's verbs.

    up        resolve the jars (first use), start ZooKeeper (unless --zookeeper) and both clusters; returns when
              every role answers; exit 1 naming the process that failed (and the tail of its log), nothing left.
              --yarn: also YARN on dc2 (a ResourceManager and a NodeManager; added to clusters already up)
    down      stop every process `up` started (YARN and its containers too); exit 1 naming any that survived SIGKILL
    status    liveness of every role; exit 0 when everything runs
    endpoints addresses (--json: {"schema_version": 1, "clusters": {name: {...}}}, realhbase/endpoints.py's
              schema; with YARN also "yarn": its ResourceManager, web UI, HADOOP_CONF_DIR, Spark settings and the
              spark_yarn connections)
    kill-rs / start-rs CLUSTER SERVER   SIGKILL / start again one region server JVM (slot index or servername)
    kill / pause / resume / start CLUSTER ROLE   SIGKILL / SIGSTOP / SIGCONT / start again any JVM of a cluster
              (master, master1, namenode, dn0, rs1, gw0...: `status` lists them)
    quota CLUSTER PATH [--space-bytes N] [--namespace N]   HDFS quotas through DFSAdmin (-1 clears)
    roll-wals CLUSTER   every live region server's WAL rolled (the shell's wal_roll)
    shell -n --cluster NAME   the real HBase shell (reads standard input; exit status as `hbase shell -n`)

Every subcommand takes --workdir (default <repo>/.state/realhbase). Bad input: exit 2 with one line.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from realhbase.config import CLUSTERS
from realhbase.jars import RealHBaseError
from realhbase.roles import Topology
from realhbase.testbed import DEFAULT_WORKDIR, RealHBase


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints the whole usage first)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _workdir(text: str) -> Path:
    return Path(text).resolve()


def _cluster(text: str) -> str:
    if text not in CLUSTERS:
        raise argparse.ArgumentTypeError(f"unknown cluster {text!r} (known: {', '.join(CLUSTERS)})")
    return text


def _server(text: str):
    return int(text) if text.isdigit() else text


def cmd_shell(argv: list[str]) -> int:
    parser = _Parser(prog="python -m realhbase shell", description="the real HBase shell (hbase shell)")
    parser.add_argument("--cluster", type=_cluster, required=True)
    parser.add_argument("--workdir", type=_workdir, default=DEFAULT_WORKDIR)
    args, rest = parser.parse_known_args(argv)  # -n, -d, SCRIPT ... go to jar-bootstrap.rb as they are
    try:  # standard input, output and the exit status are the shell's own
        return RealHBase(args.workdir).shell(args.cluster, None, rest, timeout=None, capture=False).returncode
    except RealHBaseError as e:
        print(e, file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["shell"]:
        return cmd_shell(argv[1:])
    parser = _Parser(prog="python -m realhbase", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, help_: str):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--workdir", type=_workdir, default=DEFAULT_WORKDIR,
                       help=f"instance directory (default {DEFAULT_WORKDIR})")
        return p

    p = add("up", "start ZooKeeper and both clusters")
    p.add_argument("--zookeeper", help="use this ZooKeeper (HOST:PORT) instead of starting Debian's")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--yarn", action="store_true",
                   help="also run YARN (a ResourceManager and a NodeManager) beside dc2's HDFS")
    p.add_argument("--secure", action="store_true",
                   help="Kerberos on every channel: the MIT KDC (DC1.TEST, DC2.TEST, trust both ways), SASL "
                        "ZooKeeper, Kerberized HDFS and HBase, SASL/SPNEGO Thrift (realhbase/secure.py)")
    for option, help_ in (("--region-servers", "region server JVMs per cluster (default 2)"),
                          ("--gateways", "gateway JVMs per cluster, each a Thrift1 and a Thrift2 server (default 1)"),
                          ("--backup-masters", "backup masters per cluster (default 0; HDFS then runs apart)"),
                          ("--datanodes", "DataNode JVMs of their own per cluster (default 0: one in the master's "
                                          "JVM; 2 keep two replicas)"),
                          ("--block-size", "dfs.blocksize in bytes (default 1 MiB)"),
                          ("--wal-roll-size", "bytes a WAL holds before it rolls (default HBase's: one block)"),
                          ("--rs-heap-mb", "a region server's heap in MiB (default 512; 300 tables on two "
                                           "servers need about 1536)")):
        p.add_argument(option, type=int, help=help_)
    p.add_argument("--wan-mbps", type=float,
                   help="a WAN between the datacenters: each cluster's gateways as the other one reaches them go "
                        "through a proxy of this many megabits/s each way, counting the bytes (0: unlimited; see "
                        "endpoints' \"remote\" and realhbase/wan.py)")
    add("down", "stop everything `up` started")
    p = add("status", "liveness of every role")
    p.add_argument("--json", action="store_true")
    p = add("endpoints", "addresses of the clusters")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cluster", type=_cluster)
    for name, help_ in (("kill", "SIGKILL one JVM of a cluster"), ("pause", "SIGSTOP one JVM of a cluster"),
                        ("resume", "SIGCONT a paused JVM"), ("start", "start one JVM of a cluster again")):
        p = add(name, help_)
        p.add_argument("cluster", type=_cluster)
        p.add_argument("role", help="master, master1, namenode, dn0, rs1, gw0... (`status` lists them)")
    for name, help_ in (("kill-rs", "SIGKILL one region server JVM"), ("start-rs", "start a region server again")):
        p = add(name, help_)
        p.add_argument("cluster", type=_cluster)
        p.add_argument("server", type=_server, help="slot index or servername")
    p = add("quota", "set HDFS quotas on a directory (-1 clears)")
    p.add_argument("cluster", type=_cluster)
    p.add_argument("path")
    p.add_argument("--space-bytes", type=int)
    p.add_argument("--namespace", type=int)
    p = add("roll-wals", "roll every region server's WAL")
    p.add_argument("cluster", type=_cluster)
    args = parser.parse_args(argv)

    try:
        topology = _topology(args)
    except ValueError as e:
        print(f"python -m realhbase {args.command}: {e}", file=sys.stderr)
        return 2
    bed = RealHBase(args.workdir, zookeeper_hosts=getattr(args, "zookeeper", None),
                    timeout=getattr(args, "timeout", 300.0), yarn=getattr(args, "yarn", False),
                    secure=getattr(args, "secure", False), topology=topology)
    try:
        return COMMANDS[args.command](bed, args)
    except RealHBaseError as e:
        print(e, file=sys.stderr)
        return 1
    except ValueError as e:  # a slot or servername that does not exist
        print(f"python -m realhbase {args.command}: {e}", file=sys.stderr)
        return 2


def _topology(args) -> Topology | None:
    """The topology `up` was given (None: the one the workdir last ran, else the default)."""
    given = {k: getattr(args, k, None) for k in Topology.__dataclass_fields__}
    if all(v is None for v in given.values()):
        return None
    return Topology(**{k: v for k, v in given.items() if v is not None})


def _up(bed: RealHBase, args) -> int:
    bed.up()
    if args.wan_mbps is not None:  # the link between the datacenters (realhbase/wan.py)
        from realhbase import wan

        wan.start(bed.workdir, bed.endpoints(), args.wan_mbps or None)
    return 0


def _down(bed: RealHBase, args) -> int:
    survivors = bed.down()
    if survivors:
        print(f"realhbase down: still running after SIGKILL: {', '.join(survivors)}", file=sys.stderr)
        return 1
    return 0


def _status(bed: RealHBase, args) -> int:
    running = bed.running()
    endpoints = bed.endpoints() if running else {}
    ok = bool(endpoints)
    report = {"workdir": str(bed.workdir), "clusters": {}}
    for name, ep in endpoints.items():
        rs_ok = all(r["alive"] for r in ep["region_servers"])
        up = all(x["alive"] for x in (*ep["masters"], *ep["datanodes"], *ep["thrift_gateways"]))
        ok = ok and rs_ok and up
        report["clusters"][name] = {"running": up, "cluster_key": ep["cluster_key"], "master": ep["master"],
                                    "region_servers": ep["region_servers"], "thrift_gateways": ep["thrift_gateways"],
                                    "thrift2_gateways": ep["thrift2_gateways"], "masters": ep["masters"],
                                    "datanodes": ep["datanodes"]}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0 if ok else 1
    if not endpoints:
        print(f"no realhbase test bed runs under {bed.workdir}")
        return 1
    for name, c in report["clusters"].items():
        alive = sum(1 for r in c["region_servers"] if r["alive"])
        print(f"{name}: {'up' if c['running'] else 'DOWN'}  master {'up' if c['master']['alive'] else 'DOWN'}  "
              f"cluster key {c['cluster_key']}  region servers {alive}/{len(c['region_servers'])} alive")
        for m in c["masters"]:
            print(f"  master {m['role']} port {m['port']}  {'up' if m['alive'] else 'DOWN'}"
                  f"{'  active' if m['active'] else ''}")
        for d in c["datanodes"]:
            print(f"  DataNode in {d['role']}  {'up' if d['alive'] else 'DOWN'}")
        for r in c["region_servers"]:
            print(f"  [{r['slot']}] {r['servername'] or '-'}  info port {r['info_port']}  {r['state']}")
        for kind in ("thrift", "thrift2"):
            for g in c[f"{kind}_gateways"]:
                print(f"  {kind} gateway [{g['index']}] {g['host']}:{g['port']}  {'up' if g['alive'] else 'DOWN'}")
    return 0 if ok else 1


def _endpoints(bed: RealHBase, args) -> int:
    document = bed.endpoints_document(args.cluster)
    clusters, yarn = document["clusters"], document.get("yarn")
    if not clusters:
        print(f"realhbase endpoints: no cluster under {bed.workdir}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(document, indent=1, sort_keys=True))
    else:
        for name, ep in clusters.items():
            print(f"{name}: thrift {ep['thrift']['host']}:{ep['thrift']['port']}  thrift2 "
                  f"{ep['thrift2']['host']}:{ep['thrift2']['port']}  cluster key {ep['cluster_key']}  "
                  f"webhdfs {ep['webhdfs_url']}  rootdir {ep['rootdir']}")
        if yarn:
            print(f"yarn (on {yarn['cluster']}): resourcemanager {yarn['resourcemanager']['address']}  web UI "
                  f"{yarn['resourcemanager']['web_ui']}  HADOOP_CONF_DIR {yarn['hadoop_conf_dir']}")
    return 0


def _kill_rs(bed: RealHBase, args) -> int:
    print(json.dumps({"killed": bed.kill_rs(args.cluster, args.server)}))
    return 0


def _role_verb(verb: str):
    def run(bed: RealHBase, args) -> int:
        pid = getattr(bed, f"{verb}_role")(args.cluster, args.role)
        print(json.dumps({verb: f"{args.cluster}/{args.role}", "pid": pid}))
        return 0
    return run


def _start_rs(bed: RealHBase, args) -> int:
    print(json.dumps({"started": bed.start_rs(args.cluster, args.server)}))
    return 0


def _quota(bed: RealHBase, args) -> int:
    if args.space_bytes is None and args.namespace is None:
        print("python -m realhbase quota: give --space-bytes and/or --namespace", file=sys.stderr)
        return 2
    bed.set_quota(args.cluster, args.path, args.space_bytes, args.namespace)
    print(json.dumps({"path": args.path, "space_bytes": args.space_bytes, "namespace": args.namespace}))
    return 0


def _roll_wals(bed: RealHBase, args) -> int:
    print(json.dumps({"rolled": bed.roll_wals(args.cluster)}))
    return 0


COMMANDS = {"up": _up, "down": _down, "status": _status, "endpoints": _endpoints, "kill-rs": _kill_rs,
            "start-rs": _start_rs, "quota": _quota, "roll-wals": _roll_wals,
            **{verb: _role_verb(verb) for verb in ("kill", "pause", "resume", "start")}}

if __name__ == "__main__":
    sys.exit(main())
