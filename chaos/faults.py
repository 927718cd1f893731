"""The nemesis's hands: how each fault kind is injected, lifted and judged recovered, on the deployment
(`deploy.Deployment`) and the clusters (chaos/beds.py: real HBase's processes and the fault proxies in front of
them, or the stand-in's control API).

Every kind is a class with `inject()` (returns what it did, for the summary), `heal()` (after the hold: restart
what was killed, lift what was set) and `recovered()` (polled after `heal()` until true; what it checks is
`schedule.KINDS[kind].recovered`, in words). The kinds themselves are listed in `chaos.schedule.KINDS`.
"""
from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from chaos import zksessions

# --------------------------------------------------------------------------------------------- the world


@dataclass
class World:
    """What the faults act on: the deployment, the clusters (`bed`, chaos/beds.py, and their `endpoints --json`),
    the migrated tables, the run being attacked and a log."""
    dep: Any
    clusters: dict[str, dict]
    tables: list[str]
    dag_id: str
    log: Callable[[str], None] = print
    run_id: str | None = None
    zk_proxy: Any = None  # chaos.zkproxy.ZkProxy in front of the source's ZooKeeper (the toolkit's connection)
    bed: Any = None       # chaos.beds.RealBed or MiniBed
    # Services the nemesis holds down: the supervisor leaves them alone.
    held_down: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def zk(self) -> tuple[str, int]:
        z = self.clusters["dc1"]["zookeeper"]
        return z["quorum"].split(",")[0], int(z["port"])

    @property
    def zk_hosts(self) -> str:
        host, port = self.zk
        return f"{host}:{port}"

    def client(self) -> Any:
        """A REST client of its own (a thread must not share a requests.Session)."""
        from deploy.airflow import ADMIN
        from deploy.rest import AirflowClient

        return AirflowClient(self.dep.airflow.api_url, ADMIN, self.dep.airflow.admin_password, timeout=15)

    def toolkit_pids(self) -> list[int]:
        """Every process of the deployment's Airflow services: the services and what they run (task
        supervisors and task processes, whose titles Airflow rewrites; spark-submit and its Python driver).
        The clusters and this harness are not among them."""
        from deploy.processes import recorded_sessions, session_members

        return [pid for sid, name in recorded_sessions(self.dep.workdir) if name.startswith("airflow-")
                for pid in session_members(sid)]


def describe_process(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid} (gone)"
    text = " ".join(a.rsplit("/", 1)[-1] if i == 0 else a for i, a in enumerate(args))
    return f"pid {pid}: {text[:160]}"


def _heartbeat_after(value: str | None, instant: float) -> bool:
    if not value:
        return False
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() > instant


def _thrift2_call(gateway: dict, timeout_ms: int = 5000) -> float:
    """One Thrift2 call (getThriftServerType) through `gateway` ({host, port}); its duration in seconds."""
    from thriftpy2.rpc import make_client

    from demo.workload import idl

    started = time.monotonic()
    client = make_client(idl().THBaseService, gateway["host"], gateway["port"], timeout=timeout_ms)
    try:
        client.getThriftServerType()
    finally:
        client.close()
    return time.monotonic() - started


# --------------------------------------------------------------------------------------------- the kinds


class Fault:
    """One injected fault. `target` is the schedule's (e.g. "dc1:rs:2", "celery-worker-1")."""

    def __init__(self, world: World, target: str, settings: dict[str, Any]) -> None:
        self.world = world
        self.target = target
        self.settings = settings
        self.injected_at = 0.0
        self.healed_at = 0.0

    @property
    def lock_key(self) -> str:
        return self.target

    def inject(self) -> dict[str, Any]:
        raise NotImplementedError

    def heal(self) -> dict[str, Any]:
        return {}

    def recovered(self) -> bool:
        raise NotImplementedError


class RegionServerKill(Fault):
    def _where(self) -> tuple[str, int]:
        dc, _, slot = self.target.split(":")
        return dc, int(slot)

    def inject(self) -> dict[str, Any]:
        return {"servername": self.world.bed.kill_rs(*self._where())}

    def heal(self) -> dict[str, Any]:
        return {"restarted_as": self.world.bed.start_rs(*self._where())}

    def recovered(self) -> bool:
        dc, slot = self._where()
        return self.world.bed.region_server_up(dc, slot) and _every_region_reads(self.world.clusters[dc],
                                                                                  self.world.tables)


def _every_region_reads(endpoint: dict, tables: list[str]) -> bool:
    """A get of each region's start key through a live Thrift2 gateway answers (no IOError)."""
    from thriftpy2.rpc import make_client

    from demo.workload import idl

    T = idl()
    for gateway in endpoint["thrift2_gateways"]:
        try:
            client = make_client(T.THBaseService, gateway["host"], gateway["port"], timeout=10_000)
        except Exception:
            continue
        try:
            for table in tables:
                for loc in client.getAllRegionLocations(table.encode()):
                    client.get(table.encode(), T.TGet(row=loc.regionInfo.startKey or b"\x00"))
            return True
        except Exception:
            return False
        finally:
            client.close()
    return False


class GatewayFault(Fault):
    def _where(self) -> tuple[str, str, int]:
        dc, kind, index = self.target.split(":")
        return dc, kind, int(index)

    def _gateway(self) -> dict:
        """Where the toolkit reaches it (on real HBase: its fault proxy)."""
        dc, kind, index = self._where()
        return self.world.bed.gateway_address(dc, index, kind)


class GatewayKill(GatewayFault):
    def inject(self) -> dict[str, Any]:
        dc, _, index = self._where()
        return self.world.bed.kill_gateway(dc, index)

    def heal(self) -> dict[str, Any]:
        dc, _, index = self._where()
        self.world.bed.start_gateway(dc, index)
        return {}

    def recovered(self) -> bool:
        _thrift2_call(self._gateway())
        return True


class GatewayLatency(GatewayFault):
    def inject(self) -> dict[str, Any]:
        dc, kind, index = self._where()
        return {"fault": self.world.bed.gateway_fault(dc, index, kind, latency_ms=self.settings["latency_ms"])}

    def heal(self) -> dict[str, Any]:
        dc, kind, index = self._where()
        self.world.bed.gateway_fault(dc, index, kind, latency_ms=0)
        return {}

    def recovered(self) -> bool:
        return _thrift2_call(self._gateway()) < 1.0


class GatewayReset(GatewayFault):
    def inject(self) -> dict[str, Any]:
        dc, kind, index = self._where()
        return {"fault": self.world.bed.gateway_fault(dc, index, kind, reset_now=True,
                                                      reset_probability=self.settings["reset_probability"])}

    def heal(self) -> dict[str, Any]:
        dc, kind, index = self._where()
        return {"fault": self.world.bed.gateway_fault(dc, index, kind, reset_probability=0)}

    def recovered(self) -> bool:
        _thrift2_call(self._gateway())
        return True


# --------------------------------------------------------------------------------------------- real HBase only


def _role(world: World, target: str) -> tuple[str, str]:
    """(cluster, role) of a target: "dc1:rs:1" -> rs1, "dc1:master" -> the active master's role, "dc2:thrift2:0"
    -> gw0 (the gateway host), "dc1:dn:1" -> dn1."""
    dc, what, *index = target.split(":")
    if what == "master":
        role = world.bed.active_master(dc)
        if role is None:
            raise NoTarget(f"{dc} has no active master right now (another fault holds it)")
        return dc, role
    return dc, {"rs": "rs", "thrift2": "gw", "dn": "dn"}[what] + index[0]


class ProcessFault(Fault):
    """A real HBase or HDFS process struck: SIGKILL (`kill`), or SIGSTOP for the hold (`pause`: it hangs with its
    sockets open, as in a long GC pause or on a frozen host). After the hold a killed process is started again; a
    paused one is continued, and started again if it ended meanwhile (a region server or master that finds its
    ZooKeeper session expired aborts, as HBase's do)."""

    mode = "kill"

    @property
    def lock_key(self) -> str:
        """One master and one DataNode of a cluster at a time (both DataNodes gone would leave HDFS no replica to
        write to: every region server would abort, a datacenter lost rather than a process)."""
        dc, what, *_ = self.target.split(":")
        return f"{dc}:{what}" if what in ("master", "dn") else self.target

    def inject(self) -> dict[str, Any]:
        self.dc, self.role = _role(self.world, self.target)
        if self.mode == "kill":
            pid = self.world.bed.kill(self.dc, self.role)
        else:
            pid = self.world.bed.pause(self.dc, self.role)
        return {"role": f"{self.dc}/{self.role}", "pid": pid, "signal": "SIGKILL" if self.mode == "kill" else "SIGSTOP"}

    def heal(self) -> dict[str, Any]:
        bed = self.world.bed
        out: dict[str, Any] = {}
        if self.mode == "pause":
            bed.resume(self.dc, self.role)
            time.sleep(5)  # a process that learns it was declared dead ends within seconds
            if bed.running(self.dc, self.role):
                return {"continued": True}
            out["ended_while_paused"] = True
        if self.role.startswith("rs"):
            out["restarted_as"] = bed.start_rs(self.dc, int(self.role[2:]))
        else:
            out["restarted_pid"] = bed.start(self.dc, self.role)
        return out

    def recovered(self) -> bool:
        bed, dc, role = self.world.bed, self.dc, self.role
        if role.startswith("rs"):
            return bed.region_server_up(dc, int(role[2:])) and _every_region_reads(self.world.clusters[dc],
                                                                                    self.world.tables)
        if not bed.running(dc, role):
            return False
        if role.startswith("master"):
            return bed.active_master(dc) is not None and _master_answers(self.world.clusters[dc])
        if role.startswith("gw"):
            _thrift2_call(bed.gateway_address(dc, int(role[2:])))
            return True
        return bed.live_datanodes(dc) == len(self.world.clusters[dc]["datanodes"]) and _every_region_reads(
            self.world.clusters[dc], self.world.tables)


class ProcessPause(ProcessFault):
    mode = "pause"


def _master_answers(endpoint: dict) -> bool:
    """A call only the active master answers (Thrift2 getTableNamesByPattern: the Admin's listTableNames)."""
    from thriftpy2.rpc import make_client

    from demo.workload import idl

    for gateway in endpoint["thrift2_gateways"]:
        try:
            client = make_client(idl().THBaseService, gateway["host"], gateway["port"], timeout=10_000)
        except Exception:
            continue
        try:
            client.getTableNamesByPattern(".*", False)
            return True
        except Exception:
            return False
        finally:
            client.close()
    return False


class NetFault(Fault):
    """Latency or a partition on the toolkit's way to an endpoint: a gateway or a WebHDFS through its fault proxy
    (chaos/netproxy.py), the source's ZooKeeper through chaos/zkproxy.py."""

    def _proxy(self):
        dc, what, *index = self.target.split(":")
        if what == "zookeeper":
            return self.world.zk_proxy
        return self.world.bed.proxies[self.target]

    def inject(self) -> dict[str, Any]:
        proxy = self._proxy()
        if "latency_ms" in self.settings:
            proxy.set(latency_ms=self.settings["latency_ms"])
        else:
            proxy.set(partitioned=True)
        return {"proxy": f"127.0.0.1:{proxy.port}", **({"latency_ms": self.settings["latency_ms"]}
                                                          if "latency_ms" in self.settings else {"partitioned": True})}

    def heal(self) -> dict[str, Any]:
        proxy = self._proxy()
        proxy.clear()
        return {"resets": proxy.counts.resets} if hasattr(proxy, "counts") else {}

    def recovered(self) -> bool:
        dc, what, *index = self.target.split(":")
        started = time.monotonic()
        if what == "zookeeper":
            from kazoo.client import KazooClient

            client = KazooClient(hosts=f"127.0.0.1:{self.world.zk_proxy.port}", timeout=10)
            try:
                client.start(timeout=10)
                client.get_children("/")
            finally:
                client.stop()
                client.close()
        elif what == "webhdfs":
            url = f"http://127.0.0.1:{self._proxy().port}/webhdfs/v1/?op=GETFILESTATUS&user.name=nobody"
            with urllib.request.urlopen(url, timeout=10) as r:
                r.read()
        else:
            _thrift2_call({"host": "127.0.0.1", "port": self._proxy().port})
        return "latency_ms" not in self.settings or time.monotonic() - started < 1.0


class CeleryWorkerKill(Fault):
    def inject(self) -> dict[str, Any]:
        client = self.world.client()
        self.lost = []
        if self.world.run_id:
            try:
                # Running on it, or queued (taken by some worker, which one the API does not say).
                self.lost = [(t["task_id"], t["map_index"], t["try_number"], t["state"])
                             for t in client.task_instances(self.world.dag_id, self.world.run_id)
                             if (t.get("hostname") == self.target and t["state"] == "running")
                             or (not t.get("hostname") and t["state"] == "queued")]
            except Exception as e:  # the API may be down (a PostgreSQL restart at the same time)
                self.world.log(f"worker_kill: task instances not read before the kill: {e}")
        with self.world.lock:
            self.world.held_down.add(self.target)
        pids = self.world.dep.airflow.kill_service(self.target)
        return {"killed_pids": len(pids),
                "task_instances_at_risk": [f"{t}[{m}] try {n} {state}" for t, m, n, state in self.lost]}

    def heal(self) -> dict[str, Any]:
        self.world.dep.airflow.start_service(self.target)
        with self.world.lock:
            self.world.held_down.discard(self.target)
        return {}

    def recovered(self) -> bool:
        log = self.world.dep.airflow.log_path(self.target)
        if not log.exists() or " ready." not in log.read_text(errors="replace"):
            return False
        if not self.lost or not self.world.run_id:
            return True
        client = self.world.client()
        if client.dag_run(self.world.dag_id, self.world.run_id)["state"] in ("success", "failed"):
            return True
        now = {(t["task_id"], t["map_index"]): t for t in client.task_instances(self.world.dag_id, self.world.run_id)}
        for task_id, map_index, try_number, state in self.lost:
            ti = now.get((task_id, map_index))
            if ti is None:
                continue
            retried = ti["try_number"] > try_number and ti["state"] in ("running", "deferred", "success", "failed")
            taken = state == "queued" and ti["state"] in ("running", "deferred")  # a live worker took it
            if not (retried or taken or ti["state"] in ("success", "failed", "upstream_failed")):
                return False
        return True


class ServiceKill(Fault):
    """The scheduler or the triggerer."""

    HEARTBEAT = {"scheduler": ("scheduler", "latest_scheduler_heartbeat"),
                 "triggerer": ("triggerer", "latest_triggerer_heartbeat")}

    def inject(self) -> dict[str, Any]:
        with self.world.lock:
            self.world.held_down.add(self.target)
        pids = self.world.dep.airflow.kill_service(self.target)
        return {"killed_pids": len(pids)}

    def heal(self) -> dict[str, Any]:
        self.world.dep.airflow.start_service(self.target)
        with self.world.lock:
            self.world.held_down.discard(self.target)
        return {}

    def recovered(self) -> bool:
        section, key = self.HEARTBEAT[self.target]
        info = self.world.dep.airflow.health().get(section) or {}
        return info.get("status") == "healthy" and _heartbeat_after(info.get(key), self.healed_at)


class SparkWorkerKill(Fault):
    def _index(self) -> int:
        return int(self.target.rsplit("-", 1)[1])

    def inject(self) -> dict[str, Any]:
        spark = self.world.dep.spark
        self.before = {w["id"] for w in spark.state().get("workers", [])}
        with self.world.lock:
            self.world.held_down.add(self.target)
        pids = spark.kill_worker(self._index())
        return {"killed_pids": len(pids)}

    def heal(self) -> dict[str, Any]:
        self.world.dep.spark.start_worker(self._index())
        with self.world.lock:
            self.world.held_down.discard(self.target)
        return {}

    def recovered(self) -> bool:
        spark = self.world.dep.spark
        port = spark.worker_ui_ports[self._index() - 1]
        return any(w.get("state") == "ALIVE" and w["id"] not in self.before
                   and str(w.get("webuiaddress", "")).rstrip("/").endswith(f":{port}")
                   for w in spark.state().get("workers", []))


class ZkExpire(Fault):
    """Arms the ZooKeeper proxy in front of the source (chaos/zkproxy.py): the next toolkit session that sends a
    request through it is expired on the server before the request goes on. Waits up to `search_s` for one."""

    search_s = 90.0

    def _owner(self, session: Any) -> str:
        session.pid = zksessions.client_pid(self.world.zk_proxy.port, session.client_port, self.world.toolkit_pids())
        return describe_process(session.pid) if session.pid else f"an unknown process (port {session.client_port})"

    def inject(self) -> dict[str, Any]:
        proxy = self.world.zk_proxy
        started = time.monotonic()
        armed = proxy.arm(lambda s: zksessions.expire(self.world.zk_hosts, s.session_id, s.password), self._owner)
        if not armed.done.wait(self.search_s):
            proxy.disarm()
            raise NoTarget(f"no toolkit process used a ZooKeeper session in {self.search_s:.0f}s")
        strike = armed.strike
        self.victim = strike.session
        self.injected_at = strike.expired_at  # the expiry itself, after the wait
        proxy.on_session = lambda s: self._owner(s)  # who opens the next sessions: the recovery's evidence
        return {"session": hex(strike.session.session_id), "holder": strike.holder,
                "waited_s": round(time.monotonic() - started, 1)}

    def recovered(self) -> bool:
        later = [s for s in self.world.zk_proxy.sessions_since(self.injected_at)
                 if s.session_id != self.victim.session_id]
        if self.victim.pid and _alive(self.victim.pid):
            later = [s for s in later if s.pid == self.victim.pid]
        if later:
            self.world.zk_proxy.on_session = None
        return bool(later)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


class PostgresRestart(Fault):
    def inject(self) -> dict[str, Any]:
        with self.world.lock:
            self.world.held_down.add("postgres")
        self.world.dep.postgres.crash()
        return {}

    def heal(self) -> dict[str, Any]:
        from deploy.processes import record_session

        pg = self.world.dep.postgres
        pg.resume()
        record_session(self.world.dep.workdir, pg.pid, "postgres")  # a new postmaster, a new session
        with self.world.lock:
            self.world.held_down.discard("postgres")
        return {"postmaster_pid": pg.pid}

    def recovered(self) -> bool:
        if not self.world.dep.postgres.accepts_connections():
            return False
        return (self.world.dep.airflow.health().get("metadatabase") or {}).get("status") == "healthy"


class NoTarget(RuntimeError):
    """The fault found nothing to act on (recorded, not retried)."""


KIND_CLASSES: dict[str, type[Fault]] = {
    "rs_kill": RegionServerKill,
    "gateway_kill": GatewayKill,
    "gateway_latency": GatewayLatency,
    "gateway_reset": GatewayReset,
    "worker_kill": CeleryWorkerKill,
    "scheduler_kill": ServiceKill,
    "triggerer_kill": ServiceKill,
    "spark_worker_kill": SparkWorkerKill,
    "zk_expire": ZkExpire,
    "postgres_restart": PostgresRestart,
    "rs_pause": ProcessPause,
    "master_kill": ProcessFault,
    "master_pause": ProcessPause,
    "gateway_pause": ProcessPause,
    "datanode_kill": ProcessFault,
    "datanode_pause": ProcessPause,
    "net_partition": NetFault,
    "net_latency": NetFault,
}
