"""The JVMs of one cluster, as a table: each role's main class, heap, ports and readiness checks, for a topology
(`Topology`: how many region servers and gateways). What the roles are:

    master   RealHBaseLauncher master: NameNode + DataNode + HMaster, 640m; ports namenode, namenode_http, master,
             master_info; ready when WebHDFS and the master's info server answer
    rs<i>    HRegionServer start, 512m; ports rs<i>, rs<i>_info; ready when its info server answers and it is
             registered in ZooKeeper
    gw<i>    RealHBaseLauncher thrift: a Thrift1 and a Thrift2 gateway, 256m; ports gw<i>_thrift(_info),
             gw<i>_thrift2(_info); ready when Thrift1 getTableNames (the master initialized) and Thrift2 answer

Each region server is its own JVM because HBase's replication metrics are one set per JVM; each gateway JVM is one
gateway host (its Thrift1 and Thrift2 servers), so one can be killed alone.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from realhbase import config
from realhbase.config import HOST, ROOTDIR
from realhbase.processes import markers

LAUNCHER = "RealHBaseLauncher"
REGION_SERVER_MAIN = "org.apache.hadoop.hbase.regionserver.HRegionServer"
GATEWAY_KINDS = ("thrift", "thrift2")  # each gateway JVM serves both protocols


@dataclass(frozen=True)
class Topology:
    """How many of each JVM a cluster runs (`up --region-servers N --gateways N`)."""
    region_servers: int = config.REGION_SERVERS
    gateways: int = 1

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "Topology":
        known = {k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True)
class Role:
    name: str        # "master", "rs0", "gw1": <cluster>/<name> on the command line, logs/<name>.log
    kind: str        # "master", "rs", "thrift": its heap, its class data archive, what it runs
    slot: int
    ports: tuple[str, ...]

    @property
    def heap(self) -> str:
        return config.HEAP[self.kind]


def gateway_port(index: int, kind: str, info: bool = False) -> str:
    """The cluster.json name of gateway `index`'s Thrift1 (`kind` "thrift") or Thrift2 port, or its info port."""
    return f"gw{index}_{kind}{'_info' if info else ''}"


def roles(topology: Topology = Topology()) -> list[Role]:
    """Every JVM of a cluster, in start order."""
    out = [Role("master", "master", 0, ("namenode", "namenode_http", "master", "master_info"))]
    out += [Role(f"rs{i}", "rs", i, (f"rs{i}", f"rs{i}_info")) for i in range(topology.region_servers)]
    out += [Role(f"gw{i}", "thrift", i, tuple(gateway_port(i, k, info) for k in GATEWAY_KINDS
                                                for info in (False, True))) for i in range(topology.gateways)]
    return out


def role(name: str, topology: Topology = Topology()) -> Role:
    found = next((r for r in roles(topology) if r.name == name), None)
    if found is None:
        raise ValueError(f"no role {name!r} in a cluster of {topology}")
    return found


def port_names(topology: Topology = Topology()) -> list[str]:
    return [p for r in roles(topology) for p in r.ports]


def jvm_command(java: str, classpath: list[str], workdir: Path, cluster: str, cluster_dir: Path, name: str,
                heap: str, main: str, args: list[str], flags: list[str] = (), client: bool = False,
                log_config: str = "log4j2.properties") -> list[str]:
    """A JVM of the bed: its heap, the JDK 17 flags bin/hbase gives, the markers that name it (realhbase/
    processes.py), its logging and scratch directory, `flags` (class data sharing, security), then main and args.
    `classpath`: jars first, in the same order for every JVM of a kind, directories last (what a class data
    sharing archive requires; no jar holds a *-site.xml, so conf/ last still wins)."""
    return [java, f"-Xmx{heap}", *config.JVM_FLAGS, *config.JDK17_FLAGS,
            *markers(workdir, cluster, name, client=client),
            f"-Dlog4j2.configurationFile={cluster_dir / 'conf' / log_config}",
            f"-Djava.io.tmpdir={cluster_dir / 'tmp'}", *flags, "-cp", os.pathsep.join(classpath), main, *args]


def main_and_args(r: Role, ports: dict[str, int]) -> tuple[str, list[str], list[str]]:
    """(main class, arguments, JVM properties) of role `r`."""
    if r.kind == "master":
        ns, space = config.ROOT_QUOTA
        return LAUNCHER, ["master"], [f"-Drealhbase.quota={ROOTDIR}:{ns}:{space}"]
    if r.kind == "thrift":
        def side(kind):
            return ["-b", HOST, "-p", str(ports[gateway_port(r.slot, kind)]), "--infoport",
                    str(ports[gateway_port(r.slot, kind, info=True)]), "-threadpool", "start"]
        return LAUNCHER, ["thrift", *side("thrift"), "--", *side("thrift2")], []
    return REGION_SERVER_MAIN, [f"-Dhbase.regionserver.port={ports[r.name]}",
                                f"-Dhbase.regionserver.info.port={ports[r.name + '_info']}", "start"], []


@dataclass(frozen=True)
class Check:
    label: str                  # what is awaited, in an error ("rs1 in ZooKeeper")
    role: str                   # whose log's tail an error shows
    ready: Callable[[], bool]


def checks(r: Role, ports: dict[str, int], server_host: str, http_answers: Callable[[str], bool],
           thrift_answers: Callable[[int, str], bool], registered: Callable[[int], bool]) -> list[Check]:
    """Role `r`'s readiness checks, in the order they pass (a Thrift probe before the master runs only piles
    retries up in the gateway). `http_answers(url)`, `thrift_answers(port, kind)` and `registered(port)` (a region
    server on that port in ZooKeeper) are the bed's probes, authenticated on a secured bed."""
    if r.kind == "master":
        return [Check("WebHDFS", r.name, lambda: http_answers(
                    f"http://{HOST}:{ports['namenode_http']}/webhdfs/v1/?op=GETFILESTATUS")),
                Check("master info server", r.name,
                      lambda: http_answers(f"http://{server_host}:{ports['master_info']}/jmx?qry=x:y=z"))]
    if r.kind == "rs":
        return [Check(f"{r.name} info server", r.name,
                      lambda: http_answers(f"http://{server_host}:{ports[r.name + '_info']}/jmx?qry=x:y=z")),
                Check(f"{r.name} in ZooKeeper", r.name, lambda: registered(ports[r.name]))]
    label = "" if r.slot == 0 else f" ({r.name})"
    return [Check(f"Thrift1 (master initialized){label}", r.name,
                  lambda: thrift_answers(ports[gateway_port(r.slot, "thrift")], "thrift")),
            Check(f"Thrift2{label}", r.name, lambda: thrift_answers(ports[gateway_port(r.slot, "thrift2")], "thrift2"))]
