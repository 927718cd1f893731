"""The bed: ZooKeeper (Debian's, unless one is given), both real clusters (dc1, dc2: realhbase/cluster.py), YARN
beside dc2 when asked (realhbase/yarn.py), secured or not (realhbase/security.py); started, found, stopped, broken.

    bed = RealHBase(workdir, zookeeper_hosts=None)   # None: start Debian's ZooKeeper in the workdir
    bed.up(); bed.endpoints()["dc1"]; bed.shell("dc1", "list\\n"); bed.kill_rs("dc2", 1); bed.start_rs("dc2", 1)
    bed.down()                                       # returns the survivors (normally [])

The rooms: processes.py (spawn, markers, signals), roles.py (each JVM's main, heap, ports, readiness), cluster.py
(one cluster), clients.py (the shell, DFSAdmin), endpoints.py (the `endpoints --json` schema), security.py (plain or
Kerberos, as one object), yarn.py; the ZooKeeper, KDC, ports and IDLs are bedkit's (shared with the stand-in).
"""
from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from realhbase import cds, config, endpoints, security, yarn
from realhbase import processes as _processes
from realhbase.clients import SHELL_COMPAT, Clients
from realhbase.cluster import Cluster
from realhbase.config import CLUSTERS, HOST
from realhbase.jars import Jars, RealHBaseError, resolve
from realhbase.probes import strip_zk_metadata, zk_ruok
from realhbase.processes import pid_alive, tail
from realhbase.roles import Topology

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORKDIR = REPO / ".state" / "realhbase"

# Older names (tests and benchmarks import them from here)
__all__ = ["RealHBase", "RealHBaseError", "DEFAULT_WORKDIR", "HOST", "SHELL_COMPAT", "Topology", "pid_alive",
           "processes", "strip_zk_metadata", "tail", "zk_ruok"]


def processes(workdir: Path) -> dict[int, str]:
    """pid -> "<cluster>/<role>" (or "zookeeper", "kdc", "dc2/container") of every live process this workdir's bed
    started."""
    return _processes.find(Path(workdir), yarn.containers_dir(Path(workdir)), f"{yarn.CLUSTER}/container")



def _thrift_modules():
    """The Thrift IDLs the bed's probes and the tests' plain clients use (bedkit's)."""
    from bedkit.idl import thrift_modules

    return thrift_modules("realhbase")


class RealHBase:
    """Both clusters of one workdir. Start-once-per-session friendly: `up()` returns at once when all runs.

        bed = RealHBase(tmp / "realhbase", zookeeper_hosts="127.0.0.1:2181")
        bed.up(); bed.endpoints()["dc1"]["thrift"]; bed.shell("dc1", "list").stdout
        bed.kill_rs("dc1", 0); bed.start_rs("dc1", 0); bed.down()
    """

    def __init__(self, workdir: Path | str = DEFAULT_WORKDIR, zookeeper_hosts: str | None = None,
                 timeout: float = 300.0, progress: bool = True, yarn: bool = False, secure: bool = False,
                 topology: Topology | None = None):
        self.workdir = Path(workdir).resolve()
        self.zookeeper_hosts = zookeeper_hosts
        self.timeout = timeout
        self.progress = progress
        self.yarn = yarn
        self._secure = secure  # up --secure (realhbase/secure.py); a workdir started so stays so
        self._topology = topology  # None: what each cluster last started with (cluster.json), else the default
        self._jars: Jars | None = None

    # ------------------------------------------------------------------------------------------ parts
    @property
    def jars(self) -> Jars:
        if self._jars is None:
            self._jars = resolve(progress=self.progress)
        return self._jars

    @property
    def secure(self) -> bool:
        """Kerberized (`up --secure`, or a workdir an earlier `up --secure` started)."""
        return self._secure or bool(self._instance().get("secure"))

    @property
    def security(self) -> security.Plain:
        if getattr(self, "_security", None) is None or self._security.secure != self.secure:
            self._security = security.for_bed(self.workdir, self.secure)
        return self._security

    def cluster(self, name: str) -> Cluster:
        return Cluster(name, self.workdir, lambda: self.jars, self.security, self.running, _thrift_modules,
                       self._topology, self._log)

    @property
    def clients(self) -> Clients:
        return Clients(self.workdir, lambda: self.jars, self.security)

    @property
    def yarn_daemons(self) -> yarn.Yarn:
        return yarn.Yarn(self.workdir, lambda: self.jars, self.security, self.running, self.progress, self._log)

    def cluster_dir(self, name: str) -> Path:
        return self.workdir / name

    def server_host(self, name: str) -> str:
        """The address the cluster's master and region servers listen on and are named by (servernames):
        127.0.0.1, except the secured dc2's (realhbase/secure.py SERVER_HOSTS)."""
        return self.security.server_host(name)

    def _instance(self) -> dict:
        try:
            return json.loads((self.workdir / "instance.json").read_text())
        except (OSError, ValueError):
            return {}

    def _write_instance(self, **changes) -> None:
        (self.workdir / "instance.json").write_text(json.dumps({**self._instance(), **changes}, indent=1))

    def _zk_hosts(self) -> str:
        hosts = self.zookeeper_hosts or self._instance().get("zookeeper")
        if not hosts:
            raise RealHBaseError(f"realhbase: no test bed under {self.workdir}")
        self.zookeeper_hosts = hosts
        return hosts

    def _log(self, message: str) -> None:
        if self.progress:
            print(f"realhbase: {message}", file=sys.stderr, flush=True)

    def _settle_cds(self, killed: set[int] = frozenset()) -> None:
        """Class data archives of JVMs that have ended (see realhbase/cds.py); `up` settles what a `down` in
        another process left."""
        if self._jars is not None:
            cds.settle(self._jars.cds_dir, killed)

    def _ports(self, name: str) -> dict[str, int]:
        return self.cluster(name).ports()

    # ------------------------------------------------------------------------------------------ up / down
    def running(self) -> dict[str, int]:
        """"<cluster>/<role>" -> pid of every live JVM of the clusters (ZooKeeper and the KDC not included)."""
        return {role: pid for pid, role in processes(self.workdir).items() if role not in ("zookeeper", "kdc")}

    def up(self) -> dict[str, dict]:
        """Starts ZooKeeper (unless given) and both clusters; returns once every role answers. Already up:
        returns at once. A failure stops everything this call started and raises, naming the process and
        showing the tail of its log."""
        running = self.running()
        if running:
            expected = {f"{n}/{r.name}" for n in CLUSTERS for r in self.cluster(n).roles()}
            if set(running) >= expected and self._instance():
                zk = self._instance()["zookeeper"]
                if self.zookeeper_hosts and self.zookeeper_hosts != zk:
                    raise RealHBaseError(f"realhbase: the clusters under {self.workdir} already run on ZooKeeper "
                                         f"{zk}, not {self.zookeeper_hosts}")
                self.zookeeper_hosts = zk
                if self.yarn:  # the clusters run; YARN is added to them (or runs already)
                    self.start_yarn()
                return self.endpoints()
            raise RealHBaseError(f"realhbase: part of a test bed runs under {self.workdir} "
                                 f"({', '.join(sorted(running))}); run `python -m realhbase down --workdir "
                                 f"{self.workdir}` first")
        if self._secure and self.zookeeper_hosts:
            raise RealHBaseError("realhbase: --zookeeper cannot be used with --secure (the secured clusters need "
                                 "the SASL ZooKeeper `up --secure` starts, zookeeper/localhost@DC1.TEST)")
        if not self._secure and self._instance().get("secure"):
            self._secure = True  # a workdir first started secured keeps its keytabs and Kerberized HDFS
        self.workdir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        jars = self.jars  # resolves (and reports) before anything starts
        self._settle_cds()
        self._log(f"jars ready after {time.monotonic() - started:.1f} s")
        zk_owned = self.zookeeper_hosts is None
        try:
            if zk_owned:  # a secured bed's is the SASL ZooKeeper of its stack (KDC, keytabs, TLS files)
                port = self._instance().get("zookeeper_port")
                hosts, port, recorded = self.security.start_zookeeper(
                    port if port and config.port_free(port) else config.listening_port(set()))
                self._write_instance(zookeeper=hosts, zookeeper_owned=True, zookeeper_port=port, **recorded)
                self.zookeeper_hosts = hosts
            elif not zk_ruok(self.zookeeper_hosts):
                raise RealHBaseError(f"realhbase: ZooKeeper {self.zookeeper_hosts} does not answer (ruok)")
            self.security.ensure_parents(self.zookeeper_hosts, CLUSTERS.values())
            config.ensure_master_key(self.workdir, jars.java)
            clusters = [self.cluster(name) for name in CLUSTERS]
            planned: set[int] = set()  # both clusters' ports, before any JVM binds one
            for cluster in clusters:
                cluster.start(cluster.configure(self.zookeeper_hosts, planned))
            self._log(f"started {sum(len(c.roles()) for c in clusters)} JVMs (HBase {jars.versions['hbase']}, "
                      f"Hadoop {jars.versions['hadoop']}); waiting for them to answer")
            deadline = time.monotonic() + self.timeout
            for cluster in clusters:
                cluster.wait_ready(self.zookeeper_hosts, deadline, self.timeout)
            if self.yarn:
                self.start_yarn()
        except BaseException:
            self._stop_everything(stop_zookeeper=zk_owned)
            if zk_owned:
                self.zookeeper_hosts = None
            raise
        # the port of a ZooKeeper `up` started stays recorded: the next `up` takes it again
        self._write_instance(zookeeper=self.zookeeper_hosts, zookeeper_owned=zk_owned, clusters=sorted(CLUSTERS),
                             versions=jars.versions, up_seconds=round(time.monotonic() - started, 1),
                             **({"secure": True} if self._secure else {}))
        self._log(f"up in {time.monotonic() - started:.1f} s")
        return self.endpoints()

    def down(self) -> list[str]:
        """Stops every process of this workdir (the clusters gracefully, then SIGKILL at a deadline) and the
        ZooKeeper `up` started; returns the survivors ("dc1/rs0 (pid 123)"), normally none."""
        from realhbase import wan

        wan.stop(self.workdir)  # the link's proxy (realhbase/wan.py), if one runs
        owned = self._instance().get("zookeeper_owned", False)
        survivors = self._stop_everything(stop_zookeeper=owned or self.secure)
        for name in CLUSTERS:
            (self.cluster_dir(name) / "ready").unlink(missing_ok=True)
        return [f"{role} (pid {pid})" for pid, role in sorted(survivors.items())]

    def _stop_role(self, role: str) -> dict[int, str]:
        """SIGTERM this bed's `role` processes (zookeeper, kdc), SIGKILL what is left after 15 s, remove its pid
        file; the survivors of both."""
        pids = [p for p, r in processes(self.workdir).items() if r == role]
        _, left = _processes.terminate(pids, 15)
        (self.workdir / role / f"{role}.pid").unlink(missing_ok=True)
        return {pid: role for pid in left}

    def _stop_everything(self, stop_zookeeper: bool) -> dict[int, str]:
        """YARN first (its containers still write to dc2's HDFS); then the masters and gateways (an active master's
        hook shuts its cluster down: region servers close their regions, flush and exit), the region servers that
        are left, HDFS's own JVMs last; SIGKILL at each step's deadline; ZooKeeper, then a secured bed's KDC."""
        survivors = self.yarn_daemons.stop()
        procs = {pid: role for pid, role in processes(self.workdir).items() if role not in ("zookeeper", "kdc")}
        for pid in procs:
            _processes.send(pid, signal.SIGCONT)  # a paused JVM (a fault) would not see SIGTERM

        def kind(role: str) -> str:
            name = role.split("/")[-1]
            return ("hdfs" if name == "namenode" or name.startswith("dn") else
                    "master" if name.startswith(("master", "gw")) else "rs")

        killed: set[int] = set()
        for step, grace in (("master", 90), ("rs", 30), ("hdfs", 30)):
            pids = [p for p, r in procs.items() if kind(r) == step]
            k, left = _processes.terminate(pids, grace)
            killed |= k
            survivors.update({pid: procs[pid] for pid in left})
        self._settle_cds(killed)
        if stop_zookeeper:
            survivors.update(self._stop_role("zookeeper"))
        # a secured bed's KDC last: the clusters authenticate their shutdown with it
        survivors.update(self._stop_role("kdc"))
        return survivors

    # ------------------------------------------------------------------------------------------ YARN
    def yarn_running(self) -> dict[str, int]:
        """"dc2/resourcemanager" / "dc2/nodemanager" -> pid of YARN's live daemons."""
        return self.yarn_daemons.running_daemons()

    def start_yarn(self, timeout: float | None = None) -> dict:
        """A ResourceManager and a NodeManager on dc2 (realhbase/yarn.py); returns once the node is RUNNING in the
        ResourceManager. Already running: returns at once. A failure stops both and raises with the log's tail."""
        return self.yarn_daemons.start(timeout or self.timeout)

    def yarn_endpoints(self) -> dict | None:
        """The `yarn` entry of `endpoints --json` (None: YARN was never started under this workdir)."""
        return self.yarn_daemons.endpoints()

    # ------------------------------------------------------------------------------------------ faults
    def kill_rs(self, name: str, server) -> str:
        """SIGKILL one region server's JVM (a crash: nothing flushed); returns its servername."""
        cluster = self.cluster(name)
        slot = cluster.slot(server)
        if f"{name}/rs{slot}" not in self.running():
            raise RealHBaseError(f"realhbase: region server {name}/rs{slot} is not running")
        servername = cluster.servername(self._zk_hosts(), slot)
        pid = cluster.kill_role(f"rs{slot}", self._settle_cds)
        return servername or f"{name}/rs{slot} (pid {pid})"

    def kill_role(self, name: str, role: str) -> int:
        """SIGKILL one JVM of a cluster by its role ("master", "master1", "gw1", "dn0", "rs2"...): a crash, nothing
        flushed; returns its pid."""
        return self.cluster(name).kill_role(role, self._settle_cds)

    def pause_role(self, name: str, role: str) -> int:
        """SIGSTOP one JVM: it hangs with its sockets open (what a long GC pause or a frozen host looks like)."""
        return self.cluster(name).signal_role(role, signal.SIGSTOP)

    def resume_role(self, name: str, role: str) -> int:
        """SIGCONT a paused JVM (which may then find itself declared dead: a region server aborts)."""
        return self.cluster(name).signal_role(role, signal.SIGCONT)

    def start_role(self, name: str, role: str, timeout: float | None = None) -> int:
        """Starts one JVM again on its ports; returns its pid once it answers."""
        return self.cluster(name).start_role(self._zk_hosts(), role, timeout or self.timeout)

    def start_rs(self, name: str, server, timeout: float = 120.0) -> str:
        """Starts the region server of that slot again (same ports when free); returns its new servername once
        it has registered in ZooKeeper."""
        cluster = self.cluster(name)
        return cluster.start_region_server(self._zk_hosts(), cluster.slot(server), timeout)

    def kill_cluster(self, name: str) -> dict[str, int]:
        """SIGKILL every JVM of the cluster at once (the master with its NameNode and DataNode, the region
        servers, the gateways): its datacenter lost, nothing flushed or closed. Returns role -> pid killed."""
        return self.cluster(name).kill(self._settle_cds)

    def start_cluster(self, name: str) -> dict:
        """Starts every JVM of a cluster `kill_cluster` took down, on its ports again when free (its HDFS and
        HBase recover their state, as `up` on a stopped workdir); returns its endpoints once it answers."""
        cluster = self.cluster(name)
        if self.secure:
            raise RealHBaseError("realhbase: start_cluster is for a plain bed (a secured one: down, then up)")
        if any(role.startswith(f"{name}/") for role in self.running()):
            raise RealHBaseError(f"realhbase: part of {name} is running; kill_cluster it first")
        zk_hosts = self._zk_hosts()
        others = {p for other in CLUSTERS if other != name for p in self._ports(other).values()}
        cluster.start(cluster.configure(zk_hosts, others))
        cluster.wait_ready(zk_hosts, time.monotonic() + self.timeout, self.timeout)
        return self.endpoints()[name]

    # ------------------------------------------------------------------------------------------ addresses
    def _registered(self, name: str) -> list[str]:
        return self.cluster(name).registered(self._zk_hosts())

    def cluster_id(self, name: str) -> str | None:
        """The cluster id from <parent>/hbaseid."""
        return self.cluster(name).cluster_id(self._zk_hosts())

    def shell_command(self, name: str) -> list[str]:
        return self.cluster(name).shell_command()

    def endpoints(self) -> dict[str, dict]:
        """Each cluster's entry of `endpoints --json` (realhbase/endpoints.py's schema)."""
        instance = self._instance()
        self.zookeeper_hosts = self.zookeeper_hosts or instance.get("zookeeper")
        running = self.running()
        versions = instance.get("versions") or None
        out = {name: self.cluster(name).endpoints(running, versions or self.jars.versions) for name in CLUSTERS
               if (self.cluster_dir(name) / "cluster.json").exists()}
        from realhbase import wan

        return wan.annotate(self.workdir, out)  # each cluster as the other datacenter reaches it, with a WAN link

    def endpoints_document(self, cluster: str | None = None) -> dict:
        """The whole `endpoints --json` document (`cluster`: only that cluster, and YARN only with dc2)."""
        clusters = {n: ep for n, ep in self.endpoints().items() if not cluster or n == cluster}
        yarn_entry = self.yarn_endpoints() if not cluster or cluster == yarn.CLUSTER else None
        return endpoints.document(clusters, yarn_entry, self.security.summary())

    # ------------------------------------------------------------------------------------------ clients
    def shell_java_command(self, name: str, args: list[str], cds_flags: list[str] = ()) -> tuple[list[str], dict]:
        return self.clients.shell_java_command(name, args, cds_flags)

    def shell(self, name: str, script: str | None, args: list[str] = ("-n",), timeout: float | None = 300.0,
              capture: bool = True):
        """`hbase shell -n` with `script` on standard input (exit status: 0, or non-zero on the first error).
        `script=None, capture=False`: the shell reads and writes this process's standard streams."""
        return self.clients.shell(name, script, args, timeout, capture)

    def set_quota(self, name: str, path: str, space_bytes: int | None = None,
                  namespace: int | None = None) -> None:
        """HDFS quotas on `path` through DFSAdmin (-1 clears one)."""
        self.clients.check_cluster(name)
        ops = []
        if space_bytes is not None:
            ops.append(["-clrSpaceQuota", path] if space_bytes < 0 else ["-setSpaceQuota", str(space_bytes), path])
        if namespace is not None:
            ops.append(["-clrQuota", path] if namespace < 0 else ["-setQuota", str(namespace), path])
        for op in ops:
            proc = self.clients.dfsadmin(name, self._ports(name)["namenode"], op)
            if proc.returncode != 0:
                raise RealHBaseError(f"realhbase: DFSAdmin {' '.join(op)} on {name} failed: "
                                     f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")

    def roll_wals(self, name: str) -> list[str]:
        """Every live region server's WAL rolled (the shell's wal_roll); returns their servernames."""
        self.clients.check_cluster(name)
        servers = self._registered(name)
        if not servers:
            raise RealHBaseError(f"realhbase: {name} has no live region server")
        proc = self.shell(name, "".join(f"wal_roll '{s}'\n" for s in servers))
        if proc.returncode != 0:
            raise RealHBaseError(f"realhbase: wal_roll on {name} failed: {proc.stdout.strip()[-500:]}")
        return servers

