"""The JVMs of one cluster, as a table (`KINDS`: each kind's main class, heap, ports and readiness checks) and the
roles a `Topology` gives (how many region servers, gateways, backup masters and DataNodes; block and WAL roll
sizes). The default topology is the small bed every test shares:

    master   RealHBaseLauncher master: NameNode + DataNode + HMaster in one JVM
    rs<i>    HRegionServer, one JVM each: HBase's replication metrics are one set per JVM (2 by default)
    gw<i>    RealHBaseLauncher thrift: one gateway host, its Thrift1 and Thrift2 servers (1 by default)

With backup masters or DataNodes of their own (`up --backup-masters 1 --datanodes 2`: the nemesis's bed), HDFS
runs apart from HBase so that a master or a DataNode can be killed alone:

    namenode     RealHBaseLauncher namenode
    dn<i>        RealHBaseLauncher datanode DIR (two DataNodes keep two replicas of every block)
    master       RealHBaseLauncher hmaster (the first to register in ZooKeeper is the active one)
    master<i>    RealHBaseLauncher hmaster, a backup master (i >= 1)
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
MIN_WAL_ROLL = 512 << 10  # a WAL's HDFS block (twice its roll size) must be at least HDFS's 1 MiB


@dataclass(frozen=True)
class Topology:
    """How many of each JVM a cluster runs, and the sizes that shape its files (`up --region-servers N ...`)."""
    region_servers: int = config.REGION_SERVERS
    gateways: int = 1
    backup_masters: int = 0
    datanodes: int = 0          # DataNode JVMs of their own; 0: one DataNode in the master's JVM
    block_size: int | None = None     # dfs.blocksize (None: config.block_size(), 1 MiB)
    wal_roll_size: int | None = None  # bytes a WAL holds before it rolls (None: HBase's, half of 2 blocks)
    # A region server's heap in MiB (None: config.HEAP's 512m). Each region written holds at least one 2 MiB
    # MSLAB chunk of memstore: 150 regions a server (300 tables on two) need more than 512m
    rs_heap_mb: int | None = None

    def __post_init__(self):
        for name, low, high in (("region_servers", 1, 9), ("gateways", 1, 9), ("backup_masters", 0, 3),
                                ("datanodes", 0, 4)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"--{name.replace('_', '-')} must be a whole number from {low} to {high}, "
                                 f"got {value!r}")
        if self.block_size is not None and (self.block_size < config.TEST_BLOCK_SIZE or self.block_size % 512):
            raise ValueError(f"--block-size must be bytes, a multiple of 512 and at least {config.TEST_BLOCK_SIZE} "
                             f"(HDFS's smallest), got {self.block_size!r}")
        if self.rs_heap_mb is not None and (isinstance(self.rs_heap_mb, bool) or not 256 <= self.rs_heap_mb <= 16384):
            raise ValueError(f"--rs-heap-mb must be MiB from 256 to 16384, got {self.rs_heap_mb!r}")
        if self.wal_roll_size is not None and (self.wal_roll_size < MIN_WAL_ROLL or self.wal_roll_size % 256):
            raise ValueError(f"--wal-roll-size must be bytes, a multiple of 256 and at least {MIN_WAL_ROLL} (its "
                             f"WAL block, twice that, must be HDFS's 1 MiB or more), got {self.wal_roll_size!r}")

    @property
    def hdfs_apart(self) -> bool:
        """HDFS in JVMs of its own: a master or a DataNode can then be killed without the rest of HDFS."""
        return self.backup_masters > 0 or self.datanodes > 0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "Topology":
        return cls(**{k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Role:
    name: str        # "master", "rs0", "gw1", "dn0": <cluster>/<name> on the command line, logs/<name>.log
    kind: str        # a key of KINDS: what it runs, its heap, its class data archive
    slot: int
    ports: tuple[str, ...]
    heap_mb: int | None = None  # the topology's heap for this role (None: its kind's)

    @property
    def heap(self) -> str:
        return f"{self.heap_mb}m" if self.heap_mb else KINDS[self.kind].heap


@dataclass(frozen=True)
class Check:
    label: str                  # what is awaited, in an error ("rs1 in ZooKeeper")
    role: str                   # whose log's tail an error shows
    ready: Callable[[], bool]


@dataclass(frozen=True)
class Probes:
    """The bed's probes for a cluster (authenticated on a secured bed): an HTTP GET answers, its JSON, a Thrift
    call answers on a port (`kind` "thrift"/"thrift2"), a region server is registered on a port."""
    server_host: str
    http_answers: Callable[[str], bool]
    http_json: Callable[[str], object]
    thrift_answers: Callable[[int, str], bool]
    registered: Callable[[int], bool]


@dataclass(frozen=True)
class Kind:
    main: str
    heap: str
    args: Callable[[Role, dict, Path], tuple[list[str], list[str]]]   # (arguments, JVM properties)
    checks: Callable[[Role, dict, Probes], list[Check]]


def gateway_port(index: int, kind: str, info: bool = False) -> str:
    """The cluster.json name of gateway `index`'s Thrift1 (`kind` "thrift") or Thrift2 port, or its info port."""
    return f"gw{index}_{kind}{'_info' if info else ''}"


def master_ports(slot: int) -> tuple[str, str]:
    return ("master", "master_info") if slot == 0 else (f"master{slot}", f"master{slot}_info")


def _quota() -> list[str]:
    ns, space = config.ROOT_QUOTA
    return [f"-Drealhbase.quota={ROOTDIR}:{ns}:{space}"]


def _webhdfs(r: Role, ports: dict, p: Probes) -> Check:
    return Check("WebHDFS", r.name,
                 lambda: p.http_answers(f"http://{HOST}:{ports['namenode_http']}/webhdfs/v1/?op=GETFILESTATUS"))


def _info(r: Role, port: int, p: Probes, label: str) -> Check:
    return Check(label, r.name, lambda: p.http_answers(f"http://{p.server_host}:{port}/jmx?qry=x:y=z"))


def _live_datanodes(ports: dict, p: Probes) -> int:
    try:
        beans = p.http_json(f"http://{HOST}:{ports['namenode_http']}/jmx?qry=Hadoop:service=NameNode,"
                            "name=FSNamesystemState")["beans"]
        return int(beans[0]["NumLiveDataNodes"]) if beans else 0
    except Exception:  # noqa: BLE001 - not answering yet
        return 0


def _master_args(r: Role, ports: dict, cluster_dir: Path):
    port, info = master_ports(r.slot)
    return ["hmaster", f"-Dhbase.master.port={ports[port]}", f"-Dhbase.master.info.port={ports[info]}"], []


def _gateway_args(r: Role, ports: dict, cluster_dir: Path):
    def side(kind):
        return ["-b", HOST, "-p", str(ports[gateway_port(r.slot, kind)]), "--infoport",
                str(ports[gateway_port(r.slot, kind, info=True)]), "-threadpool", "start"]
    return ["thrift", *side("thrift"), "--", *side("thrift2")], []


def _region_server_args(r: Role, ports: dict, cluster_dir: Path):
    return [f"-Dhbase.regionserver.port={ports[r.name]}", f"-Dhbase.regionserver.info.port={ports[r.name + '_info']}",
            "start"], []


KINDS: dict[str, Kind] = {
    # NameNode + DataNode + HMaster in one JVM (the default topology)
    "master": Kind(LAUNCHER, "640m", lambda r, ports, d: (["master"], _quota()),
                   lambda r, ports, p: [_webhdfs(r, ports, p),
                                        _info(r, ports["master_info"], p, "master info server")]),
    "namenode": Kind(LAUNCHER, "384m", lambda r, ports, d: (["namenode"], _quota()),
                     lambda r, ports, p: [_webhdfs(r, ports, p)]),
    "datanode": Kind(LAUNCHER, "256m", lambda r, ports, d: (["datanode", str(d / "hdfs" / f"data{r.slot}")], []),
                     lambda r, ports, p: [Check(f"{r.name} live in the NameNode", r.name,
                                                lambda: _live_datanodes(ports, p) > r.slot)]),
    "hmaster": Kind(LAUNCHER, "512m", _master_args,
                    lambda r, ports, p: [_info(r, ports[master_ports(r.slot)[1]], p,
                                               f"{'master' if r.slot == 0 else r.name} info server")]),
    "rs": Kind(REGION_SERVER_MAIN, "512m", _region_server_args,
               lambda r, ports, p: [_info(r, ports[r.name + "_info"], p, f"{r.name} info server"),
                                    Check(f"{r.name} in ZooKeeper", r.name, lambda: p.registered(ports[r.name]))]),
    # Thrift1 getTableNames answers only once the master initialized (and hbase:meta is online)
    "thrift": Kind(LAUNCHER, "256m", _gateway_args,
                   lambda r, ports, p: [
                       Check(f"Thrift1 (master initialized){'' if r.slot == 0 else f' ({r.name})'}", r.name,
                             lambda: p.thrift_answers(ports[gateway_port(r.slot, "thrift")], "thrift")),
                       Check(f"Thrift2{'' if r.slot == 0 else f' ({r.name})'}", r.name,
                             lambda: p.thrift_answers(ports[gateway_port(r.slot, "thrift2")], "thrift2"))]),
}


def roles(topology: Topology = Topology()) -> list[Role]:
    """Every JVM of a cluster, in start order (HDFS first, gateways last: their probe needs the master)."""
    if topology.hdfs_apart:
        out = [Role("namenode", "namenode", 0, ("namenode", "namenode_http"))]
        out += [Role(f"dn{i}", "datanode", i, ()) for i in range(max(topology.datanodes, 1))]
        out += [Role("master" if i == 0 else f"master{i}", "hmaster", i, master_ports(i))
                for i in range(1 + topology.backup_masters)]
    else:
        out = [Role("master", "master", 0, ("namenode", "namenode_http", "master", "master_info"))]
    out += [Role(f"rs{i}", "rs", i, (f"rs{i}", f"rs{i}_info"), topology.rs_heap_mb)
            for i in range(topology.region_servers)]
    out += [Role(f"gw{i}", "thrift", i, tuple(gateway_port(i, k, info) for k in GATEWAY_KINDS
                                                for info in (False, True))) for i in range(topology.gateways)]
    return out


def role(name: str, topology: Topology = Topology()) -> Role:
    found = next((r for r in roles(topology) if r.name == name), None)
    if found is None:
        raise ValueError(f"no role {name!r} in a cluster of {', '.join(r.name for r in roles(topology))}")
    return found


def port_names(topology: Topology = Topology()) -> list[str]:
    return [p for r in roles(topology) for p in r.ports]


def main_and_args(r: Role, ports: dict[str, int], cluster_dir: Path = Path(".")) -> tuple[str, list[str], list[str]]:
    """(main class, arguments, JVM properties) of role `r`."""
    kind = KINDS[r.kind]
    args, props = kind.args(r, ports, cluster_dir)
    return kind.main, args, props


def checks(r: Role, ports: dict[str, int], probes: Probes) -> list[Check]:
    """Role `r`'s readiness checks, in the order they pass."""
    return KINDS[r.kind].checks(r, ports, probes)


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
