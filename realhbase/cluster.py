"""One real cluster of the bed (dc1 or dc2): its ports and configuration, its JVMs (realhbase/roles.py) started,
awaited, killed and started again, and its entry of `endpoints --json` (realhbase/endpoints.py).

    <workdir>/<name>/conf/         the site files, log4j2, metrics2 (realhbase/config.py), security's files
    <workdir>/<name>/logs/<role>.log
    <workdir>/<name>/hdfs/         NameNode and DataNode dirs: data survives down/up
    <workdir>/<name>/cluster.json  its ports, ZooKeeper and topology (kept for the next start when still free)
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Callable

from realhbase import cds, config, endpoints, probes, processes, roles
from realhbase.config import CLUSTERS, HOST, ROOTDIR
from realhbase.jars import Jars, RealHBaseError
from realhbase.roles import Topology


class Cluster:
    """Cluster `name` under `workdir`. `jars` is called when a JVM is to start; `security` is the bed's; `running`
    returns "<cluster>/<role>" -> pid of the bed's live JVMs; `modules` the Thrift IDLs for the probes."""

    def __init__(self, name: str, workdir: Path, jars: Callable[[], Jars], security,
                 running: Callable[[], dict[str, int]], modules: Callable[[], tuple], topology: Topology | None = None,
                 log: Callable[[str], None] = lambda message: None):
        if name not in CLUSTERS:
            raise ValueError(f"unknown cluster {name!r} (known: {', '.join(CLUSTERS)})")
        self.name, self.workdir, self.dir = name, workdir, workdir / name
        self.parent = CLUSTERS[name]
        self._jars, self.security, self._running, self._modules, self._log = jars, security, running, modules, log
        self._topology = topology
        self._spawned: dict[str, object] = {}  # role -> the Popen this process started it with

    # ------------------------------------------------------------------------------------------ state
    def state(self) -> dict:
        return config.load_cluster(self.dir)

    @property
    def topology(self) -> Topology:
        """The topology given, else the one the cluster last started with, else the default."""
        return self._topology or Topology.from_dict(self.state().get("topology"))

    def roles(self) -> list[roles.Role]:
        return roles.roles(self.topology)

    def ports(self) -> dict[str, int]:
        ports = self.state().get("ports")
        if not ports:
            raise RealHBaseError(f"realhbase: cluster {self.name} was never started under {self.workdir}")
        return ports

    @property
    def server_host(self) -> str:
        return self.security.server_host(self.name)

    def log_path(self, role: str) -> Path:
        return self.dir / "logs" / f"{role}.log"

    # ------------------------------------------------------------------------------------------ start
    def configure(self, zk_hosts: str, planned: set[int]) -> dict[str, int]:
        """Plans the ports (the last start's when still free; none of `planned`, which gets them), writes conf/
        (with what security adds) and cluster.json; returns the ports."""
        topology = self.topology
        ports = config.plan_ports(self.state().get("ports", {}), roles.port_names(topology), planned=planned)
        overlay = self.security.prepare_cluster(self.name, self.dir)
        config.write_conf(self.name, self.dir, zk_hosts, ports, overlay, self.server_host,
                          region_servers=topology.region_servers, block=topology.block_size,
                          datanodes=topology.datanodes, wal_roll_size=topology.wal_roll_size)
        self._save(ports, zk_hosts)
        return ports

    def _save(self, ports: dict[str, int], zk_hosts: str) -> None:
        config.save_ports(self.dir, ports, zk_hosts, topology=self.topology.as_dict())

    def spawn(self, r: roles.Role, ports: dict[str, int]):
        """Starts role `r`'s JVM (its class data archive mapped, or dumped by this JVM at exit)."""
        jars = self._jars()
        main, args, props = roles.main_and_args(r, ports, self.dir)
        cds_flags, dump = cds.flags(jars.cds_dir, r.kind)
        classpath = [*jars.classpath, str(jars.launcher_dir / "launcher.jar"), str(jars.launcher_dir),
                     str(self.dir / "conf")]
        command = roles.jvm_command(jars.java, classpath, self.workdir, self.name, self.dir, r.name, r.heap, main,
                                    args, [*self.security.jvm_flags(self.name, self.dir), *cds_flags, *props])
        proc = processes.spawn(command, self.log_path(r.name), f"{self.name}/{r.name}", self.dir)
        self._spawned[r.name] = proc
        if dump:
            cds.dumping(jars.cds_dir, r.kind, proc.pid)
        return proc

    def start(self, ports: dict[str, int]) -> None:
        for r in self.roles():
            self.spawn(r, ports)

    def dead_role(self, names) -> None:
        """Raises naming the first of the roles `names` whose JVM is gone, with its log's tail."""
        running = self._running()
        for name in names:
            # a JVM this process started: its own exit status (a scan of /proc just after the spawn missed a
            # restarted region server and YARN's NodeManager under gVisor, and called them dead); else the scan
            proc = self._spawned.get(name)
            gone = proc.poll() is not None if proc is not None else f"{self.name}/{name}" not in running
            if gone:
                log = self.log_path(name)
                raise RealHBaseError(f"realhbase: {self.name}/{name} exited while starting; tail of {log}:\n"
                                     f"{processes.tail(log)}")

    def probes(self, zk_hosts: str) -> roles.Probes:
        """The bed's probes of this cluster, as its security authenticates them."""
        name, security = self.name, self.security
        return roles.Probes(
            server_host=self.server_host, http_answers=lambda url: security.http_answers(name, url),
            http_json=lambda url: security.http_json(name, url, timeout=3),
            thrift_answers=lambda port, kind: security.thrift_answers(name, HOST, port, kind, self._modules()),
            registered=lambda port: probes.newest_on_port(probes.registered(zk_hosts, self.parent), port) is not None)

    def checks(self, zk_hosts: str, which: list[roles.Role] | None = None) -> list[roles.Check]:
        ports, p = self.ports(), self.probes(zk_hosts)
        return [c for r in (which or self.roles()) for c in roles.checks(r, ports, p)]

    def wait_ready(self, zk_hosts: str, deadline: float, timeout: float, which: list[roles.Role] | None = None) -> None:
        """Polls every check of the roles (`which`, default all) until all pass; raises on a dead JVM, a lost
        ZooKeeper or the deadline."""
        which = which or self.roles()
        pending = self.checks(zk_hosts, which)
        while pending:
            self.dead_role([r.name for r in which])
            if not probes.zk_ruok(zk_hosts):
                raise RealHBaseError(f"realhbase: ZooKeeper {zk_hosts} stopped answering while {self.name} started")
            while pending and pending[0].ready():
                pending.pop(0)
            if not pending:
                break
            if time.monotonic() >= deadline:
                log = self.log_path(pending[0].role)
                raise RealHBaseError(f"realhbase: {self.name} not ready within {timeout:.0f}s: still waiting for "
                                     f"{', '.join(c.label for c in pending)}; tail of {log}:\n{processes.tail(log)}")
            time.sleep(0.5)
        self._log(f"{self.name} ready")

    # ------------------------------------------------------------------------------------------ region servers
    def registered(self, zk_hosts: str) -> list[str]:
        return probes.registered(zk_hosts, self.parent)

    def servername(self, zk_hosts: str, slot: int, registered: list[str] | None = None) -> str | None:
        """The slot's live servername (host,port,startcode) in ZooKeeper: the newest one on its port."""
        names = self.registered(zk_hosts) if registered is None else registered
        return probes.newest_on_port(names, self.ports()[f"rs{slot}"])

    def slot(self, server) -> int:
        """A region server's slot from its index or its servername."""
        count = self.topology.region_servers
        if isinstance(server, int) or (isinstance(server, str) and server.isdigit()):
            slot = int(server)
            if not 0 <= slot < count:
                raise ValueError(f"region server index {slot} out of range 0..{count - 1}")
            return slot
        ports = self.ports()
        for slot in range(count):
            if str(server).split(",")[1:2] == [str(ports[f"rs{slot}"])]:
                return slot
        raise ValueError(f"unknown region server {server!r} of {self.name}")

    def kill_role(self, name: str, settle) -> int:
        """SIGKILL one role's JVM (a crash: nothing flushed); returns its pid."""
        roles.role(name, self.topology)  # a role of this cluster, or ValueError naming them
        role = f"{self.name}/{name}"
        pid = self._running().get(role)
        if pid is None:
            raise RealHBaseError(f"realhbase: {role} is not running")
        processes.send(pid, signal.SIGKILL)
        if processes.wait_gone([pid], 10):
            raise RealHBaseError(f"realhbase: {role} (pid {pid}) survived SIGKILL")
        settle({pid})  # a JVM that was to dump its classes at exit did not
        return pid

    def start_region_server(self, zk_hosts: str, slot: int, timeout: float) -> str:
        """Starts the region server of that slot again (same ports when free); returns its new servername once it
        has registered in ZooKeeper."""
        name = f"rs{slot}"
        if f"{self.name}/{name}" in self._running():
            raise RealHBaseError(f"realhbase: region server {self.name}/{name} is running")
        ports = self.ports()
        for key in (name, f"{name}_info"):
            if not config.port_free(ports[key]):
                ports[key] = config.listening_port(set(ports.values()))
        self._save(ports, zk_hosts)
        before = self.servername(zk_hosts, slot)
        self.spawn(roles.role(name, self.topology), ports)
        deadline = time.monotonic() + timeout
        while True:
            self.dead_role([name])
            current = self.servername(zk_hosts, slot)
            if current is not None and current != before:
                return current
            if time.monotonic() >= deadline:
                log = self.log_path(name)
                raise RealHBaseError(f"realhbase: {self.name}/{name} did not register within {timeout:.0f}s; tail "
                                     f"of {log}:\n{processes.tail(log)}")
            time.sleep(0.3)

    def signal_role(self, name: str, sig: int) -> int:
        """`sig` to one role's JVM (SIGSTOP: it hangs, its sockets open and silent; SIGCONT: it goes on)."""
        roles.role(name, self.topology)  # a role of this cluster, or ValueError naming them
        pid = self._running().get(f"{self.name}/{name}")
        if pid is None:
            raise RealHBaseError(f"realhbase: {self.name}/{name} is not running")
        processes.send(pid, sig)
        return pid

    def start_role(self, zk_hosts: str, name: str, timeout: float) -> int:
        """Starts one role's JVM again on its ports (the gateways' and masters' addresses stay the same); returns
        its pid once its readiness checks pass."""
        r = roles.role(name, self.topology)
        if f"{self.name}/{name}" in self._running():
            raise RealHBaseError(f"realhbase: {self.name}/{name} is running")
        proc = self.spawn(r, self.ports())
        self.wait_ready(zk_hosts, time.monotonic() + timeout, timeout, [r])
        return proc.pid

    def kill(self, settle) -> dict[str, int]:
        """SIGKILL every JVM of the cluster at once (its HDFS too): its datacenter lost, nothing flushed or closed.
        Returns role -> pid killed."""
        victims = {role: pid for role, pid in self._running().items() if role.startswith(f"{self.name}/")}
        if not victims:
            raise RealHBaseError(f"realhbase: no JVM of {self.name} is running")
        for pid in victims.values():
            processes.send(pid, signal.SIGKILL)
        left = processes.wait_gone(victims.values(), 10)
        if left:
            raise RealHBaseError(f"realhbase: {self.name}'s JVMs {sorted(left)} survived SIGKILL")
        settle(set(victims.values()))
        return victims

    # ------------------------------------------------------------------------------------------ endpoints
    def shell_command(self) -> list[str]:
        import sys

        return [sys.executable, "-m", "realhbase", "shell", "-n", "--cluster", self.name, "--workdir",
                str(self.workdir)]

    def cluster_id(self, zk_hosts: str) -> str | None:
        return probes.cluster_id(zk_hosts, self.parent)

    def endpoints(self, running: dict[str, int], versions: dict) -> dict:
        """The cluster's entry of `endpoints --json`, from its state, the live JVMs and ZooKeeper."""
        state = self.state()
        ports, zk_hosts = state["ports"], state["zookeeper"]
        topology = self.topology
        registered = self.registered(zk_hosts) if probes.zk_ruok(zk_hosts) else []
        rs = [{"slot": i, "servername": probes.newest_on_port(registered, ports[f"rs{i}"]), "port": ports[f"rs{i}"],
               "info_port": ports[f"rs{i}_info"], "jvm_alive": f"{self.name}/rs{i}" in running,
               "pid": running.get(f"{self.name}/rs{i}")} for i in range(topology.region_servers)]
        gateways = [{"index": i, "role": f"gw{i}", "alive": f"{self.name}/gw{i}" in running,
                     "pid": running.get(f"{self.name}/gw{i}"),
                     **{kind + ("_info" if info else ""): ports[roles.gateway_port(i, kind, info)]
                        for kind in roles.GATEWAY_KINDS for info in (False, True)}}
                    for i in range(topology.gateways)]
        active = probes.active_master_port(zk_hosts, self.parent) if registered else None
        masters = []
        for r in self.roles():
            if r.kind in ("master", "hmaster"):
                port, info = roles.master_ports(r.slot)
                masters.append({"slot": r.slot, "role": r.name, "port": ports[port], "info_port": ports[info],
                                "alive": f"{self.name}/{r.name}" in running, "active": ports[port] == active,
                                "pid": running.get(f"{self.name}/{r.name}")})
        datanodes = [{"slot": r.slot, "role": r.name, "alive": f"{self.name}/{r.name}" in running,
                      "pid": running.get(f"{self.name}/{r.name}")}
                     for r in self.roles() if r.kind in ("datanode", "master")]
        secured = self.security.secure
        return endpoints.cluster_entry(
            name=self.name, host=HOST, server_host=self.server_host, parent=self.parent, zk_hosts=zk_hosts,
            ports=ports, versions=versions, cluster_id=self.cluster_id(zk_hosts) if registered else None,
            masters=masters, region_servers=rs, gateways=gateways, datanodes=datanodes, rootdir=ROOTDIR,
            workdir=str(self.workdir), conf_dir=str(self.dir / "conf"), logs_dir=str(self.dir / "logs"),
            shell_command=self.shell_command(), webhdfs_user=_user(), hdfs_superuser=self.security.hdfs_superuser(),
            topology=topology.as_dict(), security=self.security.describe(self.name),
            security_extras=self.security.connection_extras(self.name) if secured else None)


def _user() -> str:
    import getpass

    return getpass.getuser()

