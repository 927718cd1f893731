"""Two real Apache HBase clusters (dc1, dc2), each on its own HDFS, on one machine: start, find, stop, break.

Per cluster, four JVMs (`<workdir>/<cluster>/logs/<role>.log` each):
    master    NameNode + DataNode + HMaster (RealHBaseLauncher master)
    rs0, rs1  one HRegionServer each: replication metrics are one set per JVM, as in production
    thrift    the Thrift1 and Thrift2 gateways (RealHBaseLauncher thrift)
plus Debian's ZooKeeper, shared by both clusters (znode parents /hbase-dc1, /hbase-dc2), unless one is given.
With `yarn=True` (`up --yarn`), dc2 also runs YARN: a ResourceManager and a NodeManager, each in its own JVM
(realhbase/yarn.py), whose containers (Spark's drivers and executors) `down` stops too.

Every JVM carries `-Drealhbase.workdir=<workdir> -Drealhbase.role=<cluster>/<role>` on its command line: `down`
and the checks for survivors find them in /proc, pid files or not.
"""
from __future__ import annotations

import getpass
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

from realhbase import cds, config, yarn
from realhbase.config import CLUSTERS, HOST, REGION_SERVERS, ROOTDIR
from realhbase.jars import Jars, RealHBaseError, resolve, resolve_yarn

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORKDIR = REPO / ".state" / "realhbase"
ROLES = ["master", *[f"rs{i}" for i in range(REGION_SERVERS)], "thrift"]
LAUNCHER = "RealHBaseLauncher"
REGION_SERVER_MAIN = "org.apache.hadoop.hbase.regionserver.HRegionServer"

__all__ = ["RealHBase", "RealHBaseError", "DEFAULT_WORKDIR"]


# ---------------------------------------------------------------------------------------------- processes
def _cmdline(pid: int) -> list[str]:
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


def processes(workdir: Path) -> dict[int, str]:
    """pid -> "<cluster>/<role>" (or "zookeeper") of every live process this workdir's test bed started."""
    marker = f"-Drealhbase.workdir={workdir}"
    zoo_cfg = str(workdir / "zookeeper" / "zoo.cfg")
    kdc_pid_file = str(workdir / "kdc" / "kdc.pid")
    containers = str(yarn.yarn_dir(workdir) / "local") + os.sep
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        argv = _cmdline(int(entry.name))
        if marker in argv:
            role = next((a.split("=", 1)[1] for a in argv if a.startswith("-Drealhbase.role=")), "?")
        elif any(containers in a for a in argv):  # a YARN container's process (a Spark driver, executor, worker)
            role = f"{yarn.CLUSTER}/container"
        elif "org.apache.zookeeper.server.ZooKeeperServerMain" in argv and zoo_cfg in argv:
            role = "zookeeper"
        elif argv and argv[0].endswith("krb5kdc") and kdc_pid_file in argv:  # a secured bed's KDC (up --secure)
            role = "kdc"
        else:
            continue
        if pid_alive(int(entry.name)):
            found[int(entry.name)] = role
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids, timeout: float) -> set[int]:
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


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log, for an error message."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join("    " + line[:400] for line in text[-lines:])


# ---------------------------------------------------------------------------------------------- probes
def _http_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def _answers(url: str) -> bool:
    try:
        _http_json(url, timeout=3)
        return True
    except (OSError, ValueError):
        return False


def zk_ruok(hosts: str, timeout: float = 2.0) -> bool:
    import socket

    for part in hosts.split(","):
        host, _, port = part.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout) as s:
                s.sendall(b"ruok")
                if s.recv(16) == b"imok":
                    return True
        except (OSError, ValueError):
            continue
    return False


def strip_zk_metadata(data: bytes) -> bytes:
    """HBase's znode payload without RecoverableZooKeeper's header (0xFF, int32 id length, id+salt)."""
    if data[:1] == b"\xff":
        id_len = int.from_bytes(data[1:5], "big")
        return data[5 + id_len:]
    return data


def _thrift_modules():
    import thriftpy2

    idl = REPO / "minihbase"
    return (thriftpy2.load(str(idl / "Hbase.thrift"), module_name="realhbase_Hbase_thrift"),
            thriftpy2.load(str(idl / "hbase2.thrift"), module_name="realhbase_hbase2_thrift"))


def thrift_answers(port: int, kind: str) -> bool:
    """Thrift1 getTableNames / Thrift2 getTableNamesByPattern answer: gateway, master and hbase:meta all up."""
    from thriftpy2.rpc import make_client

    hbase1, hbase2 = _thrift_modules()
    try:
        if kind == "thrift":
            client = make_client(hbase1.Hbase, HOST, port, timeout=3000)
            try:
                client.getTableNames()
            finally:
                client.close()
        else:
            client = make_client(hbase2.THBaseService, HOST, port, timeout=3000)
            try:
                client.getTableNamesByPattern(".*", True)  # HBase 3.x's Admin refuses a null pattern
            finally:
                client.close()
        return True
    except Exception:  # refused, reset, or HBase's TIOError while the master initializes
        return False


# ---------------------------------------------------------------------------------------------- the test bed
SHELL_COMPAT = Path(__file__).resolve().parent / "ruby" / "shell_compat.rb"


class RealHBase:
    """Both clusters of one workdir. Start-once-per-session friendly: `up()` returns at once when all runs.

        bed = RealHBase(tmp / "realhbase", zookeeper_hosts="127.0.0.1:2181")
        bed.up(); bed.endpoints()["dc1"]["thrift"]; bed.shell("dc1", "list").stdout
        bed.kill_rs("dc1", 0); bed.start_rs("dc1", 0); bed.down()
    """

    def __init__(self, workdir: Path | str = DEFAULT_WORKDIR, zookeeper_hosts: str | None = None,
                 timeout: float = 300.0, progress: bool = True, yarn: bool = False, secure: bool = False):
        self.workdir = Path(workdir).resolve()
        self.zookeeper_hosts = zookeeper_hosts
        self.timeout = timeout
        self.progress = progress
        self.yarn = yarn
        self._secure = secure  # up --secure (realhbase/secure.py); a workdir started so stays so
        self._jars: Jars | None = None

    # ------------------------------------------------------------------------------------------ helpers
    @property
    def jars(self) -> Jars:
        if self._jars is None:
            self._jars = resolve(progress=self.progress)
        return self._jars

    def cluster_dir(self, name: str) -> Path:
        return self.workdir / name

    @property
    def secure(self) -> bool:
        """Kerberized (`up --secure`, or a workdir an earlier `up --secure` started)."""
        return self._secure or bool(self._instance().get("secure"))

    def server_host(self, name: str) -> str:
        """The address the cluster's master and region servers listen on and are named by (servernames):
        127.0.0.1, except the secured dc2's (realhbase/secure.py SERVER_HOSTS)."""
        if not self.secure:
            return HOST
        from realhbase import secure

        return secure.server_host(name)

    def _security_flags(self, name: str, role: str) -> list[str]:
        if not self.secure:
            return []
        from realhbase import secure

        return secure.jvm_flags(name, self.cluster_dir(name), client=role == "client")

    def _instance(self) -> dict:
        try:
            return json.loads((self.workdir / "instance.json").read_text())
        except (OSError, ValueError):
            return {}

    def _check_cluster(self, name: str) -> None:
        if name not in CLUSTERS:
            raise ValueError(f"unknown cluster {name!r} (known: {', '.join(CLUSTERS)})")

    def _log(self, message: str) -> None:
        if self.progress:
            print(f"realhbase: {message}", file=sys.stderr, flush=True)

    def java_command(self, name: str, role: str, heap: str, main: str, args: list[str],
                     extra: list[str] = (), log_config: str = "log4j2.properties",
                     classpath_tail: list[str] = ()) -> list[str]:
        jars = self.jars
        d = self.cluster_dir(name)
        # jars first, in the same order for every JVM of a kind, directories last: what a class data sharing
        # archive requires (no jar holds a *-site.xml, so conf/ last still wins)
        classpath = os.pathsep.join([*jars.classpath, *classpath_tail, str(jars.launcher_dir / "launcher.jar"),
                                     str(jars.launcher_dir), str(d / "conf")])
        return [jars.java, f"-Xmx{heap}", *config.JVM_FLAGS, *config.JDK17_FLAGS,
                # a client (shell, DFSAdmin) is no part of the test bed: `down` and `running()` leave it alone
                f"-Drealhbase.{'client.' if role == 'client' else ''}workdir={self.workdir}",
                f"-Drealhbase.role={name}/{role}",
                f"-Dlog4j2.configurationFile={d / 'conf' / log_config}", f"-Djava.io.tmpdir={d / 'tmp'}",
                *self._security_flags(name, role), *extra, "-cp", classpath, main, *args]

    def _role_command(self, name: str, role: str, ports: dict[str, int], cds_flags: list[str] = ()) -> list[str]:
        if role == "master":
            ns, space = config.ROOT_QUOTA
            return self.java_command(name, role, config.HEAP["master"], LAUNCHER, ["master"],
                                     [*cds_flags, f"-Drealhbase.quota={ROOTDIR}:{ns}:{space}"])
        if role == "thrift":
            def side(kind):
                return ["-b", HOST, "-p", str(ports[kind]), "--infoport", str(ports[f"{kind}_info"]),
                        "-threadpool", "start"]
            return self.java_command(name, role, config.HEAP["thrift"], LAUNCHER,
                                     ["thrift", *side("thrift"), "--", *side("thrift2")], cds_flags)
        return self.java_command(name, role, config.HEAP["rs"], REGION_SERVER_MAIN,
                                 [f"-Dhbase.regionserver.port={ports[role]}",
                                  f"-Dhbase.regionserver.info.port={ports[role + '_info']}", "start"], cds_flags)

    def _spawn(self, name: str, role: str, ports: dict[str, int]) -> subprocess.Popen:
        log = self.cluster_dir(name) / "logs" / f"{role}.log"
        with open(log, "ab") as out:
            out.write(f"\n==== realhbase: starting {name}/{role} at {time.strftime('%F %T')}\n".encode())
            out.flush()
            kind = "rs" if role.startswith("rs") else role
            cds_flags, dump = cds.flags(self.jars.cds_dir, kind)
            proc = subprocess.Popen(self._role_command(name, role, ports, cds_flags), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=str(self.cluster_dir(name)))
        if dump:
            cds.dumping(self.jars.cds_dir, kind, proc.pid)
        return proc

    def _run_client(self, kind: str, command, env=None, script: str | None = None, capture: bool = True,
                    timeout: float | None = None) -> subprocess.CompletedProcess:
        """A client JVM (shell, DFSAdmin) to its end; `command(cds_flags)` builds its command line. Without
        `capture` it shares this process's standard input and output (the CLI's `shell`)."""
        cds_flags, dump = cds.flags(self.jars.cds_dir, kind)
        pipe = subprocess.PIPE if capture else None
        started = time.monotonic()
        proc = subprocess.Popen(command(cds_flags), env=env, text=True, stdout=pipe, stderr=pipe,
                                stdin=subprocess.PIPE if script is not None else None)
        if dump:
            cds.dumping(self.jars.cds_dir, kind, proc.pid)
        try:
            out, err = proc.communicate(script, timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            cds.settle(self.jars.cds_dir, {proc.pid})
            self._log_client(kind, started, "killed", script, proc.args)
            raise
        cds.settle(self.jars.cds_dir)
        self._log_client(kind, started, proc.returncode, script, proc.args)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def _log_client(self, kind: str, started: float, status, script: str | None, args) -> None:
        """One line per client JVM in <workdir>/clients.log (when, kind, seconds, exit status, what it ran: a
        script's first statement or the tool's arguments): each costs a JVM's start-up, which is what makes a
        real-HBase test slow, and this says which."""
        what = (script or "").strip().splitlines()[:1] or [" ".join(str(a) for a in list(args)[-3:])]
        line = f"{time.strftime('%FT%T')}\t{kind}\t{time.monotonic() - started:.1f}\t{status}\t{what[0][:160]}\n"
        try:
            with open(self.workdir / "clients.log", "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass  # the record is for people; a workdir being removed must not fail the client's call

    def _settle_cds(self, killed: set[int] = frozenset()) -> None:
        """Class data archives of JVMs that have ended (see realhbase/cds.py); `up` settles what a `down` in
        another process left."""
        if self._jars is not None:
            cds.settle(self._jars.cds_dir, killed)

    def _ports(self, name: str) -> dict[str, int]:
        ports = config.load_cluster(self.cluster_dir(name)).get("ports")
        if not ports:
            raise RealHBaseError(f"realhbase: cluster {name} was never started under {self.workdir}")
        return ports

    # ------------------------------------------------------------------------------------------ up / down
    def running(self) -> dict[str, int]:
        """"<cluster>/<role>" -> pid of every live JVM of the clusters (ZooKeeper not included)."""
        return {role: pid for pid, role in processes(self.workdir).items() if role not in ("zookeeper", "kdc")}

    def up(self) -> dict[str, dict]:
        """Starts ZooKeeper (unless given) and both clusters; returns once every role answers. Already up:
        returns at once. A failure stops everything this call started and raises, naming the process and
        showing the tail of its log."""
        expected = {f"{n}/{r}" for n in CLUSTERS for r in ROLES}
        running = self.running()
        if running:
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
        stack = None
        try:
            if self._secure:
                stack = self._start_secure_stack()
                self.zookeeper_hosts = stack.zookeeper.hosts
            elif zk_owned:
                self.zookeeper_hosts = self._start_zookeeper()
            elif not zk_ruok(self.zookeeper_hosts):
                raise RealHBaseError(f"realhbase: ZooKeeper {self.zookeeper_hosts} does not answer (ruok)")
            self._ensure_parents()
            config.ensure_master_key(self.workdir, jars.java)
            procs = {}
            planned: set[int] = set()  # both clusters' ports, before any JVM binds one
            for name in CLUSTERS:
                d = self.cluster_dir(name)
                ports = config.plan_ports(config.load_cluster(d).get("ports", {}), planned=planned)
                overlay = None
                if stack is not None:
                    from realhbase import secure

                    overlay = secure.site_overlay(name, self.workdir, d)
                    secure.write_files(name, self.workdir, d, stack.kdc.port, stack.tls)
                config.write_conf(name, d, self.zookeeper_hosts, ports, overlay, self.server_host(name))
                config.save_ports(d, ports, self.zookeeper_hosts)
                for role in ROLES:
                    procs[f"{name}/{role}"] = self._spawn(name, role, ports)
            self._log(f"started {len(procs)} JVMs (HBase {jars.versions['hbase']}, Hadoop "
                      f"{jars.versions['hadoop']}); waiting for them to answer")
            deadline = time.monotonic() + self.timeout
            for name in CLUSTERS:
                self._wait_ready(name, deadline)
            if self.yarn:
                self.start_yarn()
        except BaseException:
            self._stop_everything(stop_zookeeper=zk_owned)
            if zk_owned:
                self.zookeeper_hosts = None
            raise
        (self.workdir / "instance.json").write_text(json.dumps({
            **self._instance(),  # the port of a ZooKeeper `up` started: the next `up` takes it again
            "zookeeper": self.zookeeper_hosts, "zookeeper_owned": zk_owned, "clusters": sorted(CLUSTERS),
            "versions": jars.versions, "up_seconds": round(time.monotonic() - started, 1),
            **({"secure": True} if self._secure else {})}, indent=1))
        self._log(f"up in {time.monotonic() - started:.1f} s")
        return self.endpoints()

    def _start_zookeeper(self) -> str:
        from minihbase.zookeeper import ZooKeeperServer

        zk_dir = self.workdir / "zookeeper"
        port = self._instance().get("zookeeper_port")
        server = ZooKeeperServer(zk_dir, port=port if port and config.port_free(port)
                                 else config.listening_port(set()))
        try:
            server.start()
        except RuntimeError as e:
            raise RealHBaseError(f"realhbase: ZooKeeper did not start: {e}\n{tail(zk_dir / 'zookeeper.log')}")
        instance = self._instance()
        instance.update(zookeeper=server.hosts, zookeeper_owned=True, zookeeper_port=server.port)
        (self.workdir / "instance.json").write_text(json.dumps(instance, indent=1))
        return server.hosts

    def _start_secure_stack(self):
        """The KDC (realms DC1.TEST and DC2.TEST, trust both ways), every keytab, the TLS files and the SASL
        ZooKeeper (minihbase's SecureStack, its files under the workdir); recorded in instance.json and
        security.json (`endpoints --json`'s `security`)."""
        from minihbase.kdc import KdcError
        from realhbase import secure

        port = self._instance().get("zookeeper_port")
        stack = secure.stack(self.workdir, zookeeper_port=port if port and config.port_free(port) else None)
        try:
            stack.start()
        except (KdcError, RuntimeError, OSError) as e:
            raise RealHBaseError(f"realhbase: the secure stack (KDC, keytabs, SASL ZooKeeper) did not start: {e}"
                                 f"\n{tail(self.workdir / 'zookeeper' / 'zookeeper.log')}") from None
        instance = self._instance()
        instance.update(zookeeper=stack.zookeeper.hosts, zookeeper_owned=True, zookeeper_port=stack.zookeeper.port,
                        secure=True, kdc_pid=stack.kdc.process.pid)
        (self.workdir / "instance.json").write_text(json.dumps(instance, indent=1))
        (self.workdir / "security.json").write_text(json.dumps(stack.describe(), indent=1, sort_keys=True))
        return stack

    def _dead_role(self, name: str, roles) -> None:
        """Raises naming the first of `roles` whose JVM is gone, with its log's tail."""
        running = self.running()
        for role in roles:
            if f"{name}/{role}" not in running:
                log = self.cluster_dir(name) / "logs" / f"{role}.log"
                raise RealHBaseError(f"realhbase: {name}/{role} exited while starting; tail of {log}:\n{tail(log)}")

    def _wait_ready(self, name: str, deadline: float, roles=ROLES) -> None:
        """Polls every check of `roles` until all pass; raises on a dead JVM, a lost ZooKeeper or the deadline."""
        ports = self._ports(name)
        checks = self._readiness_checks(name, ports, roles)
        pending = list(checks)
        while pending:
            self._dead_role(name, roles)
            if not zk_ruok(self.zookeeper_hosts):
                raise RealHBaseError(f"realhbase: ZooKeeper {self.zookeeper_hosts} stopped answering while "
                                     f"{name} started")
            # in order, up to the first that fails: a Thrift probe before the master runs only piles retries
            # up in the gateway
            while pending and checks[pending[0]]():
                pending.pop(0)
            if not pending:
                break
            if time.monotonic() >= deadline:
                role = pending[0].split()[0] if pending[0].startswith("rs") else (
                    "thrift" if pending[0].startswith("Thrift") else "master")
                log = self.cluster_dir(name) / "logs" / f"{role}.log"
                raise RealHBaseError(f"realhbase: {name} not ready within {self.timeout:.0f}s: still waiting for "
                                     f"{', '.join(pending)}; tail of {log}:\n{tail(log)}")
            time.sleep(0.5)
        self._log(f"{name} ready")

    def _readiness_checks(self, name: str, ports: dict[str, int], roles) -> dict:
        if self.secure:
            return self._secure_readiness_checks(name, ports, roles)
        checks = {}
        if "master" in roles:
            checks["WebHDFS"] = lambda: _answers(
                f"http://{HOST}:{ports['namenode_http']}/webhdfs/v1/?op=GETFILESTATUS")
            checks["master info server"] = lambda: _answers(f"http://{HOST}:{ports['master_info']}/jmx?qry=x:y=z")
        for role in roles:
            if role.startswith("rs"):
                checks[f"{role} info server"] = (
                    lambda p=ports[f"{role}_info"]: _answers(f"http://{HOST}:{p}/jmx?qry=x:y=z"))
                checks[f"{role} in ZooKeeper"] = lambda r=role: self._servername(name, r, ports) is not None
        if "thrift" in roles:
            checks["Thrift1 (master initialized)"] = lambda: thrift_answers(ports["thrift"], "thrift")
            checks["Thrift2"] = lambda: thrift_answers(ports["thrift2"], "thrift2")
        return checks

    def _secure_readiness_checks(self, name: str, ports: dict[str, int], roles) -> dict:
        """The same checks, each authenticated as the cluster's hbase service principal (SPNEGO, Thrift SASL or
        HTTP mode): an answer also shows that the server accepts Kerberos."""
        from realhbase import secure

        def answers(host, port, path):
            return lambda: secure.http_answers(self.workdir, name, f"http://{host}:{port}{path}")

        server = self.server_host(name)
        checks = {}
        if "master" in roles:
            checks["WebHDFS"] = answers(HOST, ports["namenode_http"], "/webhdfs/v1/?op=GETFILESTATUS")
            checks["master info server"] = answers(server, ports["master_info"], "/jmx?qry=x:y=z")
        for role in roles:
            if role.startswith("rs"):
                checks[f"{role} info server"] = answers(server, ports[f"{role}_info"], "/jmx?qry=x:y=z")
                checks[f"{role} in ZooKeeper"] = lambda r=role: self._servername(name, r, ports) is not None
        if "thrift" in roles:
            for kind, label in (("thrift", "Thrift1 (master initialized)"), ("thrift2", "Thrift2")):
                checks[label] = lambda k=kind: secure.thrift_answers(self.workdir, name, HOST, ports[k], k,
                                                                     _thrift_modules())
        return checks

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
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        left = _wait_gone(pids, 15)
        for pid in left:
            _signal(pid, signal.SIGKILL)
        survivors = {pid: role for pid in _wait_gone(left, 10)}
        (self.workdir / role / f"{role}.pid").unlink(missing_ok=True)
        return survivors

    def _stop_everything(self, stop_zookeeper: bool) -> dict[int, str]:
        survivors = self._stop_yarn()  # YARN first: its containers still write to dc2's HDFS
        procs = {pid: role for pid, role in processes(self.workdir).items() if role != "zookeeper"}
        gateways = [p for p, r in procs.items() if r.endswith("/thrift")]
        masters = [p for p, r in procs.items() if r.endswith("/master")]
        for pid in gateways + masters:
            _signal(pid, signal.SIGTERM)  # a master's hook shuts its cluster down: region servers flush and exit
        _wait_gone(masters, 90)
        left = _wait_gone(procs, 0)
        for pid in left:  # region servers of a cluster that shut down are exiting; others (master dead) not
            _signal(pid, signal.SIGTERM)
        left = _wait_gone(left, 30)
        for pid in left:
            _signal(pid, signal.SIGKILL)
        killed = set(left)
        left = _wait_gone(left, 10)
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
        return {r: p for r, p in self.running().items() if r.split("/")[-1] in yarn.ROLES}

    def _yarn_command(self, role: str, classpath: list[str]) -> list[str]:
        conf = yarn.conf_dir(self.workdir)
        logs = self.cluster_dir(yarn.CLUSTER) / "logs"
        return [self.jars.java, f"-Xmx{yarn.HEAP[role]}", *config.JVM_FLAGS, *config.JDK17_FLAGS,
                f"-Drealhbase.workdir={self.workdir}", f"-Drealhbase.role={yarn.CLUSTER}/{role}",
                f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}",
                f"-Djava.io.tmpdir={yarn.yarn_dir(self.workdir) / 'tmp'}", f"-Dyarn.log.dir={logs}",
                f"-Dhadoop.log.dir={logs}", *self._security_flags(yarn.CLUSTER, role),
                "-cp", os.pathsep.join([*classpath, str(conf)]), yarn.MAIN[role]]

    def start_yarn(self, timeout: float | None = None) -> dict:
        """A ResourceManager and a NodeManager on dc2 (realhbase/yarn.py); returns once the node is RUNNING in the
        ResourceManager. Already running: returns at once. A failure stops both and raises with the log's tail."""
        if set(self.yarn_running()) >= {f"{yarn.CLUSTER}/{r}" for r in yarn.ROLES}:
            return self.yarn_endpoints()
        if f"{yarn.CLUSTER}/master" not in self.running():
            raise RealHBaseError(f"realhbase: YARN runs beside {yarn.CLUSTER}'s HDFS, which does not run under "
                                 f"{self.workdir}: `up` first")
        self._stop_yarn()  # half a YARN (one daemon died): start both again
        started = time.monotonic()
        classpath = resolve_yarn(self.jars.versions["hadoop"], progress=self.progress)
        state_file = yarn.yarn_dir(self.workdir) / "yarn.json"
        try:
            saved = json.loads(state_file.read_text()).get("ports", {})
        except (OSError, ValueError):
            saved = {}
        ports = yarn.plan_ports(saved)
        secure = self.secure
        conf = yarn.write_conf(self.workdir, ports, secure)
        host = yarn.host(secure)
        state_file.write_text(json.dumps({"ports": ports, "host": host, "secure": secure}, indent=1))
        env = {**os.environ, "JAVA_HOME": yarn.java_home(self.jars.java), "HADOOP_CONF_DIR": str(conf),
               "SPARK_LOCAL_IP": HOST}
        env.pop("PYTHONPATH", None)  # containers get what their application ships, not this process's path
        logs = self.cluster_dir(yarn.CLUSTER) / "logs"
        try:
            for role in yarn.ROLES:
                with open(logs / f"{role}.log", "ab") as out:
                    out.write(f"\n==== realhbase: starting {yarn.CLUSTER}/{role} at {time.strftime('%F %T')}\n"
                              .encode())
                    out.flush()
                    subprocess.Popen(self._yarn_command(role, classpath), stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                                     cwd=str(yarn.yarn_dir(self.workdir)))
            deadline = time.monotonic() + (timeout or self.timeout)
            nodes = f"http://{host}:{ports['rm_web']}/ws/v1/cluster/nodes?states=RUNNING"
            if secure:  # the REST API behind SPNEGO: asked as dc2's hbase service principal
                from realhbase import secure as sec

                def nodes_json():
                    return sec.http(self.workdir, yarn.CLUSTER, nodes, timeout=3)
            else:
                def nodes_json():
                    return _http_json(nodes, timeout=3)
            while True:
                running = self.yarn_running()
                for role in yarn.ROLES:
                    if f"{yarn.CLUSTER}/{role}" not in running:
                        log = logs / f"{role}.log"
                        raise RealHBaseError(f"realhbase: {yarn.CLUSTER}/{role} exited while starting; tail of "
                                             f"{log}:\n{tail(log)}")
                try:
                    if ((nodes_json().get("nodes") or {}).get("node") or []):
                        break
                except Exception:  # noqa: BLE001 - not answering yet (a refused connection, SPNEGO before its login)
                    pass
                if time.monotonic() >= deadline:
                    log = logs / "nodemanager.log"
                    raise RealHBaseError(f"realhbase: YARN's node not RUNNING in the ResourceManager within "
                                         f"{timeout or self.timeout:.0f}s; tail of {log}:\n{tail(log)}")
                time.sleep(0.5)
        except BaseException:
            self._stop_yarn()
            raise
        self._log(f"YARN ready in {time.monotonic() - started:.1f} s (ResourceManager {host}:{ports['rm']}, "
                  f"web UI http://{host}:{ports['rm_web']}{', Kerberos' if secure else ''}, HADOOP_CONF_DIR {conf})")
        return self.yarn_endpoints()

    def _stop_yarn(self) -> dict[int, str]:
        """SIGTERM to the NodeManager, the ResourceManager and every container process; SIGKILL after 30 s.
        Returns the survivors."""
        procs = {p: r for p, r in processes(self.workdir).items()
                 if r.split("/")[-1] in (*yarn.ROLES, "container")}
        if not procs:
            return {}
        for pid in procs:
            _signal(pid, signal.SIGTERM)
        left = _wait_gone(procs, 30)
        for pid in left:
            _signal(pid, signal.SIGKILL)
        left = _wait_gone(left, 10)
        return {pid: procs[pid] for pid in left}

    def yarn_endpoints(self) -> dict | None:
        """The `yarn` entry of `endpoints --json` (None: YARN was never started under this workdir)."""
        try:
            state = json.loads((yarn.yarn_dir(self.workdir) / "yarn.json").read_text())
            ports = state["ports"]
        except (OSError, ValueError, KeyError):
            return None
        running = self.yarn_running()
        conf = str(yarn.conf_dir(self.workdir))
        secure = bool(state.get("secure"))
        HOST = state.get("host") or config.HOST  # noqa: N806 (dc2's server address on a secured bed)
        security, kerberos_extra = None, {}
        if secure:
            from minihbase.security.stack import TOOLKIT
            from realhbase import secure as sec

            # What spark-submit needs: the submitting principal and the PATH of its keytab (never its content),
            # the YARN daemons' principals, dc2's krb5.conf for the JVMs and the REST API's SPNEGO principal
            security = {
                "principal": TOOLKIT, "keytab": sec.keytab(self.workdir, TOOLKIT),
                "krb5_conf": str(yarn.conf_dir(self.workdir) / "krb5.conf"),
                "resourcemanager_principal": f"yarn/_HOST@{sec.realm(yarn.CLUSTER)}",
                "nodemanager_principal": sec.yarn_principal(yarn.CLUSTER),
                "spnego_principal": f"HTTP/_HOST@{sec.realm(yarn.CLUSTER)}",
            }
            # the provider reads `principal` (--principal); `keytab` there is a keytab's base64 CONTENT, so the
            # path goes under `keytab_path`, which the toolkit's Spark operators pass as --keytab
            kerberos_extra = {"principal": TOOLKIT, "keytab_path": security["keytab"],
                              "yarn_spnego_principal": security["spnego_principal"]}
        return {
            "cluster": yarn.CLUSTER,
            "resourcemanager": {"address": f"{HOST}:{ports['rm']}", "scheduler": f"{HOST}:{ports['rm_scheduler']}",
                                "web_ui": f"http://{HOST}:{ports['rm_web']}",
                                "alive": f"{yarn.CLUSTER}/resourcemanager" in running},
            "nodemanager": {"address": f"{HOST}:{ports['nm']}", "web_ui": f"http://{HOST}:{ports['nm_web']}",
                            "memory_mb": yarn.NODE_MEMORY_MB, "vcores": yarn.NODE_VCORES,
                            "alive": f"{yarn.CLUSTER}/nodemanager" in running},
            "hadoop_conf_dir": conf,
            "spark_conf_dir": str(yarn.spark_conf_dir(self.workdir)),
            "containers_dir": str(yarn.yarn_dir(self.workdir) / "local"),
            "container_logs_dir": str(yarn.yarn_dir(self.workdir) / "logs"),
            # what spark-defaults.conf holds for this YARN (export HADOOP_CONF_DIR for spark-submit too)
            "spark_conf": yarn.spark_conf(self.workdir, sys.executable, secure),
            "security": security,
            # Airflow's Spark connections; the ResourceManager's web address lets the provider follow a
            # cluster-mode application through the REST API (yarn_track_via_rm_api, its durable mode)
            "connections": {
                name: {"conn_type": "spark", "host": "yarn",
                       "extra": {"deploy-mode": mode,
                                 "yarn_resourcemanager_webapp_address": f"{HOST}:{ports['rm_web']}",
                                 **kerberos_extra}}
                for name, mode in (("spark_yarn", "cluster"), ("spark_yarn_client", "client"))},
        }

    # ------------------------------------------------------------------------------------------ region servers
    def _slot(self, name: str, server) -> int:
        self._check_cluster(name)
        if isinstance(server, int) or (isinstance(server, str) and server.isdigit()):
            slot = int(server)
            if not 0 <= slot < REGION_SERVERS:
                raise ValueError(f"region server index {slot} out of range 0..{REGION_SERVERS - 1}")
            return slot
        ports = self._ports(name)
        for slot in range(REGION_SERVERS):
            if str(server).split(",")[1:2] == [str(ports[f"rs{slot}"])]:
                return slot
        raise ValueError(f"unknown region server {server!r} of {name}")

    def kill_rs(self, name: str, server) -> str:
        """SIGKILL one region server's JVM (a crash: nothing flushed); returns its servername."""
        slot = self._slot(name, server)
        role = f"{name}/rs{slot}"
        pid = self.running().get(role)
        if pid is None:
            raise RealHBaseError(f"realhbase: region server {role} is not running")
        servername = self._servername(name, f"rs{slot}", self._ports(name))
        _signal(pid, signal.SIGKILL)
        if _wait_gone([pid], 10):
            raise RealHBaseError(f"realhbase: {role} (pid {pid}) survived SIGKILL")
        self._settle_cds({pid})  # a JVM that was to dump its classes at exit did not
        return servername or f"{role} (pid {pid})"

    def kill_cluster(self, name: str) -> dict[str, int]:
        """SIGKILL every JVM of the cluster at once (the master with its NameNode and DataNode, the region
        servers, the gateways): its datacenter lost, nothing flushed or closed. Returns role -> pid killed."""
        self._check_cluster(name)
        victims = {role: pid for role, pid in self.running().items() if role.startswith(f"{name}/")}
        if not victims:
            raise RealHBaseError(f"realhbase: no JVM of {name} is running")
        for pid in victims.values():
            _signal(pid, signal.SIGKILL)
        left = _wait_gone(victims.values(), 10)
        if left:
            raise RealHBaseError(f"realhbase: {name}'s JVMs {sorted(left)} survived SIGKILL")
        self._settle_cds(set(victims.values()))
        return victims

    def start_cluster(self, name: str) -> dict:
        """Starts every JVM of a cluster `kill_cluster` took down, on its ports again when free (its HDFS and
        HBase recover their state, as `up` on a stopped workdir); returns its endpoints once it answers."""
        self._check_cluster(name)
        if self.secure:
            raise RealHBaseError("realhbase: start_cluster is for a plain bed (a secured one: down, then up)")
        if any(role.startswith(f"{name}/") for role in self.running()):
            raise RealHBaseError(f"realhbase: part of {name} is running; kill_cluster it first")
        self.zookeeper_hosts = self.zookeeper_hosts or self._instance().get("zookeeper")
        d = self.cluster_dir(name)
        others = {p for other in CLUSTERS if other != name for p in self._ports(other).values()}
        ports = config.plan_ports(self._ports(name), planned=others)
        config.write_conf(name, d, self.zookeeper_hosts, ports, None, self.server_host(name))
        config.save_ports(d, ports, self.zookeeper_hosts)
        for role in ROLES:
            self._spawn(name, role, ports)
        self._wait_ready(name, time.monotonic() + self.timeout)
        return self.endpoints()[name]

    def start_rs(self, name: str, server, timeout: float = 120.0) -> str:
        """Starts the region server of that slot again (same ports when free); returns its new servername once
        it has registered in ZooKeeper."""
        slot = self._slot(name, server)
        role = f"rs{slot}"
        if f"{name}/{role}" in self.running():
            raise RealHBaseError(f"realhbase: region server {name}/{role} is running")
        ports = self._ports(name)
        self.zookeeper_hosts = self.zookeeper_hosts or self._instance().get("zookeeper")
        for key in (role, f"{role}_info"):
            if not config.port_free(ports[key]):
                ports[key] = config.listening_port(set(ports.values()))
        config.save_ports(self.cluster_dir(name), ports, self.zookeeper_hosts)
        before = self._servername(name, role, ports)
        self._spawn(name, role, ports)
        deadline = time.monotonic() + timeout
        while True:
            self._dead_role(name, [role])
            current = self._servername(name, role, ports)
            if current is not None and current != before:
                return current
            if time.monotonic() >= deadline:
                log = self.cluster_dir(name) / "logs" / f"{role}.log"
                raise RealHBaseError(f"realhbase: {name}/{role} did not register within {timeout:.0f}s; tail "
                                     f"of {log}:\n{tail(log)}")
            time.sleep(0.3)

    # ------------------------------------------------------------------------------------------ addresses
    def _zk(self):
        import logging

        from kazoo.client import KazooClient

        logging.getLogger("kazoo.client").setLevel(logging.ERROR)  # "Connection dropped" while a server starts

        hosts = self.zookeeper_hosts or self._instance().get("zookeeper")
        if not hosts:
            raise RealHBaseError(f"realhbase: no test bed under {self.workdir}")
        client = KazooClient(hosts=hosts, timeout=10)
        client.start(timeout=60)  # a ZooKeeper just started on a machine at load 50 took more than 10 s to answer
        return client

    def _registered(self, name: str) -> list[str]:
        """Servernames under <parent>/rs (the live region servers), as ZooKeeper lists them; none when
        ZooKeeper does not answer in time."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            client = self._zk()
        except KazooTimeoutError:
            return []
        try:
            return client.get_children(f"{CLUSTERS[name]}/rs")
        except (NoNodeError, KazooException):
            return []
        finally:
            client.stop()
            client.close()

    def _ensure_parents(self) -> None:
        """Each cluster's znode parent, created before its JVMs start: a region server that starts before its
        master has created it retries with an error per second until it has. Secured: as dc1's hbase service
        principal (SASL), with the ACL secure HBase gives its base znode."""
        if self.secure:
            from minihbase.security import zk as secure_zk
            from realhbase import secure

            for name, parent in CLUSTERS.items():
                principal = secure.hbase_principal("dc1")
                client = secure_zk.secure_client(self.zookeeper_hosts, 10, parent, ["hbase-migration"],
                                                 "zookeeper/_HOST@DC1.TEST", principal,
                                                 secure.keytab(self.workdir, principal))
                client.start(timeout=15)
                try:
                    client.ensure_path(parent)
                finally:
                    client.stop()
                    client.close()
            return
        client = self._zk()
        try:
            for parent in CLUSTERS.values():
                client.ensure_path(parent)
        finally:
            client.stop()
            client.close()

    def _servername(self, name: str, role: str, ports: dict[str, int], registered=None) -> str | None:
        """The slot's live servername (host,port,startcode) in ZooKeeper: the newest one on its port."""
        names = self._registered(name) if registered is None else registered
        mine = [s for s in names if s.split(",")[1:2] == [str(ports[role])]]
        return max(mine, key=lambda s: int(s.rsplit(",", 1)[1])) if mine else None

    def cluster_id(self, name: str) -> str | None:
        """The cluster id from <parent>/hbaseid (ZooKeeper metadata header, "PBUF", ClusterId{1: string})."""
        from kazoo.exceptions import NoNodeError

        client = self._zk()
        try:
            data, _ = client.get(f"{CLUSTERS[name]}/hbaseid")
        except NoNodeError:
            return None
        finally:
            client.stop()
            client.close()
        payload = strip_zk_metadata(data)
        if payload.startswith(b"PBUF") and payload[4:5] == b"\x0a":
            return payload[6:6 + payload[5]].decode()
        return payload.decode(errors="replace")

    def shell_command(self, name: str) -> list[str]:
        return [sys.executable, "-m", "realhbase", "shell", "-n", "--cluster", name, "--workdir", str(self.workdir)]

    def endpoints(self) -> dict[str, dict]:
        """Each cluster's entry of `endpoints --json`, in minihbase's schema (plus backend, hbase_version)."""
        instance = self._instance()
        self.zookeeper_hosts = self.zookeeper_hosts or instance.get("zookeeper")
        running = self.running()
        out = {}
        for name in CLUSTERS:
            if not (self.cluster_dir(name) / "cluster.json").exists():
                continue
            out[name] = self._cluster_endpoints(name, running, instance.get("versions")
                                                or self.jars.versions)
        from realhbase import wan

        return wan.annotate(self.workdir, out)  # each cluster as the other datacenter reaches it, with a WAN link

    def _cluster_endpoints(self, name: str, running: dict[str, int], versions: dict) -> dict:
        state = config.load_cluster(self.cluster_dir(name))
        ports, zk_hosts = state["ports"], state["zookeeper"]
        quorum, zk_port = config.split_zk_hosts(zk_hosts)
        parent = CLUSTERS[name]
        registered = self._registered(name) if zk_ruok(zk_hosts) else []
        webhdfs_url = f"http://{HOST}:{ports['namenode_http']}"
        shell_command = self.shell_command(name)
        thrift_alive = f"{name}/thrift" in running
        gateways = {kind: [{"index": 0, "host": HOST, "port": ports[kind], "info_port": ports[f"{kind}_info"],
                            "alive": thrift_alive}] for kind in ("thrift", "thrift2")}
        extra = {"zookeeper_quorum": quorum, "zookeeper_port": zk_port, "znode_parent": parent,
                 # the daemons' user: anonymous WebHDFS (dr.who) may not sum up the root (HBase makes staging 711)
                 "webhdfs_url": webhdfs_url, "webhdfs_user": getpass.getuser(), "rootdir": ROOTDIR,
                 "peer_admin": "shell",
                 "shell_command": shlex.join(shell_command), "thrift2_servers": f"{HOST}:{ports['thrift2']}"}
        security = None
        if self.secure:  # minihbase's secured schema: the connection's security extras, the cluster's `security`
            from realhbase import secure

            extra.pop("webhdfs_user")  # Kerberos: WebHDFS ignores user.name, the SPNEGO principal is the user
            extra.update(secure.connection_extras(name, self.workdir))
            security = secure.describe(name, self.workdir)
        region_servers = []
        for slot in range(REGION_SERVERS):
            role = f"rs{slot}"
            servername = self._servername(name, role, ports, registered)
            alive = f"{name}/{role}" in running
            state_word = ("online" if servername and alive else "starting" if alive else "aborted")
            region_servers.append({"slot": slot, "servername": servername, "host": self.server_host(name),
                                   "port": ports[role],
                                   "info_port": ports[f"{role}_info"], "alive": bool(servername and alive),
                                   "state": state_word, "pid": running.get(f"{name}/{role}")})
        connection = {"conn_type": "hbase", "host": HOST, "port": ports["thrift"], "extra": extra}
        return {
            "name": name,
            "backend": "realhbase",
            "hbase_version": versions["hbase"],
            "versions": versions,
            "thrift": {"host": HOST, "port": ports["thrift"]},
            "thrift2": {"host": HOST, "port": ports["thrift2"]},
            "thrift_gateways": gateways["thrift"],
            "thrift2_gateways": gateways["thrift2"],
            "zookeeper": {"quorum": quorum, "port": zk_port, "znode_parent": parent, "hosts": zk_hosts},
            "cluster_key": f"{quorum}:{zk_port}:{parent}",
            "cluster_id": self.cluster_id(name) if registered else None,
            "master": {"host": self.server_host(name), "port": ports["master"], "info_port": ports["master_info"],
                       "alive": f"{name}/master" in running},
            "region_servers": region_servers,
            "namenode": {"host": HOST, "port": ports["namenode"], "http_port": ports["namenode_http"]},
            "webhdfs_url": webhdfs_url,
            "rootdir": ROOTDIR,
            # HDFS checks permissions: the daemons' user is its superuser (WebHDFS `user.name`); anonymous calls
            # are `dr.who`, refused a summary of the whole rootdir (HBase makes /hbase/staging 711)
            "hdfs_superuser": "hbase" if security else getpass.getuser(),
            "workdir": str(self.workdir),
            "conf_dir": str(self.cluster_dir(name) / "conf"),
            "logs_dir": str(self.cluster_dir(name) / "logs"),
            "shell_command": shell_command,
            "connection": connection,
            "connection_uri": f"hbase://{HOST}:{ports['thrift']}/?__extra__="
                              + quote(json.dumps(extra, sort_keys=True), safe=""),
            **({"security": security} if security else {}),
        }

    # ------------------------------------------------------------------------------------------ tools
    def _client_command(self, name: str, main: str, args: list[str], heap: str = config.HEAP["tool"],
                        classpath_tail: list[str] = (), cds_flags: list[str] = ()) -> list[str]:
        self._check_cluster(name)
        if not (self.cluster_dir(name) / "conf" / "hbase-site.xml").exists():
            raise RealHBaseError(f"realhbase: cluster {name} has no configuration under {self.workdir} "
                                 f"(run `python -m realhbase up --workdir {self.workdir}`)")
        return self.java_command(name, "client", heap, main, args, cds_flags, log_config="log4j2-client.properties",
                                 classpath_tail=classpath_tail)

    def shell_java_command(self, name: str, args: list[str], cds_flags: list[str] = ()) -> tuple[list[str], dict]:
        """The real `hbase shell` as bin/hbase runs it: JarBootstrapMain (jar-bootstrap.rb in hbase-shell's jar),
        JRUBY_OPTS=-X+O; the cluster's conf/ on the class path. IRBRC=ruby/shell_compat.rb: the 2.4 shell's Ruby on
        HBase 2.6's JRuby (see the file)."""
        cmd = self._client_command(name, "org.jruby.JarBootstrapMain", args, heap=config.HEAP["shell"],
                                   classpath_tail=self.jars.shell_extra, cds_flags=cds_flags)
        env = {**os.environ, "JRUBY_OPTS": "-X+O", "IRBRC": str(SHELL_COMPAT)}
        return cmd, env

    def shell(self, name: str, script: str | None, args: list[str] = ("-n",), timeout: float | None = 300.0,
              capture: bool = True) -> subprocess.CompletedProcess:
        """`hbase shell -n` with `script` on standard input (exit status: 0, or non-zero on the first error).
        `script=None, capture=False`: the shell reads and writes this process's standard streams."""
        _, env = self.shell_java_command(name, list(args))  # checks the cluster before anything runs
        env.update(self._client_env(name))
        return self._run_client("shell", lambda flags: self.shell_java_command(name, list(args), flags)[0], env=env,
                                script=script, capture=capture, timeout=timeout)

    def _client_env(self, name: str, own_ticket_cache: bool = True) -> dict[str, str]:
        """A secured cluster's client JVM acts as the caller's ticket cache says (KRB5CCNAME, as `hbase shell` does:
        the toolkit's shell backend fills one of its own), else as the cluster's admin (hbase@<realm>, a superuser
        of HBase and HDFS) from a ticket cache `kinit` fills; nothing for a plain bed."""
        if not self.secure or (own_ticket_cache and os.environ.get("KRB5CCNAME")):
            return {}
        from realhbase import secure

        return secure.kinit_env(self.workdir, name, self.cluster_dir(name))

    def set_quota(self, name: str, path: str, space_bytes: int | None = None,
                  namespace: int | None = None) -> None:
        """HDFS quotas on `path` through DFSAdmin (-1 clears one)."""
        fs = f"-Dfs.defaultFS=hdfs://{HOST}:{self._ports(name)['namenode']}"
        ops = []
        if space_bytes is not None:
            ops.append(["-clrSpaceQuota", path] if space_bytes < 0 else ["-setSpaceQuota", str(space_bytes), path])
        if namespace is not None:
            ops.append(["-clrQuota", path] if namespace < 0 else ["-setQuota", str(namespace), path])
        for op in ops:
            proc = self._run_client("tool", lambda flags, op=op: self._client_command(
                name, "org.apache.hadoop.hdfs.tools.DFSAdmin", [fs, *op], cds_flags=flags), timeout=120,
                env={**os.environ, **self._client_env(name, own_ticket_cache=False)})
            if proc.returncode != 0:
                raise RealHBaseError(f"realhbase: DFSAdmin {' '.join(op)} on {name} failed: "
                                     f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")

    def roll_wals(self, name: str) -> list[str]:
        """Every live region server's WAL rolled (the shell's wal_roll); returns their servernames."""
        servers = self._registered(name)
        if not servers:
            raise RealHBaseError(f"realhbase: {name} has no live region server")
        proc = self.shell(name, "".join(f"wal_roll '{s}'\n" for s in servers))
        if proc.returncode != 0:
            raise RealHBaseError(f"realhbase: wal_roll on {name} failed: {proc.stdout.strip()[-500:]}")
        return servers
