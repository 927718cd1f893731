"""One minihbase cluster inside one OS process: master, N region servers, Thrift1 and Thrift2 gateways, WebHDFS
and the control endpoint (on the master's info port), sharing one "HDFS" rootdir under `<workdir>/<name>/hdfs`.

Control API (JSON over HTTP on the master info port; the CLI and `minihbase.testing` use it):
  GET  /control/endpoints   the cluster's entry of `endpoints --json`
  GET  /control/status      liveness of every role, tables, recovery state
  POST /control/kill-rs     {"server": index | servername}   crash one region server (no flush)
  POST /control/start-rs    {"server": index | servername}   start a new region server in that slot
  POST /control/latency     {"ms": 5}                        injected latency per RPC
  POST /control/stop-gateway  {"kind": "thrift"|"thrift2", "index": n}   as if that gateway process died
  POST /control/start-gateway {"kind": "thrift"|"thrift2", "index": n}   listen again on its port
  POST /control/gateway-fault {"kind", "index", "latency_ms", "reset_probability", "reset_now"}   network faults
  POST /control/quota       {"path": "/hbase", "space_bytes": n, "namespace": n}   (-1 clears, absent keeps)
  POST /control/roll-wals   {"server": optional}             roll (and archive what is flushed)
  POST /control/flush       {"table": optional}              flush memstores (lets WALs be archived)
  POST /control/compact     {"table": name, "major": false}
  POST /control/create-table {"table": t, "families": {"cf": {"max_versions": 3, ...}}, "split_keys": [...]}
  POST /control/alter-family {"table": t, "family": f, "replication_scope": 1, ...}
  POST /control/alter-table {"table": t, "readonly": true, "values": {...}, "remove": [...], "coprocessors": [...]}
  GET  /control/namespaces; POST /control/create-namespace, /control/drop-namespace, /control/namespace
  GET  /control/switches; POST /control/switch {"switch": "split"|"merge"|"normalizer", "enabled": bool}
  GET  /conf [?format=json] [&name=key]                        the configuration (also on every RS info port)
  POST /control/balance, /control/run-log-cleaner, /control/shutdown
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import posixpath
import shlex
import sys
import threading
import uuid
from pathlib import Path
from urllib.parse import quote

from minihbase import conf_servlet
from minihbase.client import ClusterClient
from minihbase.config import ClusterConfig, ConfigError
from minihbase.data_api import install as install_data_api
from minihbase.errors import HBaseError, JavaIllegalArgument
from minihbase.hdfs import HDFSError, MiniHDFS
from minihbase.httpserver import BadRequest, HttpServer, Request, Response
from minihbase.jmx import JmxRegistry
from minihbase.master import Master
from minihbase.regionserver import RegionServer, compact_store, region_dir
from minihbase.replication import install as install_replication
from minihbase.schema import FamilyDescriptor, TableDescriptor
from minihbase.security import cluster_security
from minihbase.table_attributes import coprocessor_spec, next_coprocessor_key
from minihbase.thrift2_server import Thrift2Gateway
from minihbase.thrift_gateway import GatewayServer
from minihbase.thrift_server import ThriftGateway
from minihbase.webhdfs import install as install_webhdfs
from minihbase.znodes import PB_MAGIC

log = logging.getLogger(__name__)


def split_zk_hosts(zk_hosts: str) -> tuple[str, int]:
    """"h1:2181,h2:2181" -> ("h1,h2", 2181); hosts keep their own port when ports differ (HBase accepts both)."""
    if not zk_hosts or "/" in zk_hosts:
        raise ConfigError(f"zookeeper must be HOST:PORT[,HOST:PORT...] without a chroot, got {zk_hosts!r} "
                          "(give each cluster its own znode_parent instead)")
    hosts = []
    for part in zk_hosts.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"zookeeper host {part!r} must be HOST:PORT")
        hosts.append((host, int(port)))
    ports = {p for _, p in hosts}
    if len(ports) == 1:
        return ",".join(h for h, _ in hosts), hosts[0][1]
    return ",".join(f"{h}:{p}" for h, p in hosts), hosts[0][1]


class MiniHBaseCluster:
    def __init__(self, config: ClusterConfig, workdir: Path, zk_hosts: str):
        self.config = config
        self.workdir = Path(workdir)
        self.dir = self.workdir / config.name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.zk_hosts = zk_hosts
        self.zk_quorum, self.zk_port = split_zk_hosts(zk_hosts)
        self.fs = MiniHDFS(self.dir / "hdfs", config.replication_factor, config.block_size_bytes,
                           quota_file=self.dir / "hdfs-quotas.json")
        self.lock = threading.RLock()
        self.latency_ms = float(config.latency_ms)
        self.handler_latency_ms: float | None = None  # held in region server handlers; None: latency_ms
        self.rs_init_hooks: list = []
        self.rs_abort_listeners: list = []
        self.region_servers: list[RegionServer | None] = [None] * config.region_servers
        self.past_servernames: dict[str, int] = {}
        self.stopping = False
        self.cluster_id = ""
        saved = self._saved_ports()
        self.control = self._bind_http(config.master_info_port, saved.get("master_info_port", 0), "master-info")
        self.webhdfs = self._bind_http(config.webhdfs_port, saved.get("webhdfs_port", 0), "webhdfs")
        self._saved = saved
        self.security = cluster_security(config)  # None: unsecured
        self.master = Master(self)
        self.client = ClusterClient(self)
        self.thrift_gateways: list[ThriftGateway] = []
        self.thrift2_gateways: list[Thrift2Gateway] = []
        self.jmx = JmxRegistry()
        self.rs_abort_listeners.append(lambda rs, reason: self.master.server_died(rs, reason))
        self.replication = install_replication(self)  # always on, as in HBase 2.x
        self._register_control()
        install_data_api(self)  # the shell's put/get/scan/deleteall
        self.hdfs_capacity_bytes = config.hdfs_capacity_bytes  # changed at runtime by /control/hdfs-capacity
        install_webhdfs(self.webhdfs, self.fs, lambda: self.hdfs_capacity_bytes, config.host)
        if self.security is not None:
            self.security.install(self)

    def new_zk_client(self, timeout: float, hosts: str | None = None):
        """A ZooKeeper session of this cluster's servers (SASL GSSAPI as the hbase principal when secured)."""
        from kazoo.client import KazooClient

        if self.security is None:
            return KazooClient(hosts=hosts or self.zk_hosts, timeout=timeout)
        return self.security.zk_client(hosts or self.zk_hosts, timeout)

    # ------------------------------------------------------------------------------------------ ports
    def _saved_ports(self) -> dict:
        path = self.dir / "ports.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _bind_http(self, configured: int, saved: int, name: str) -> HttpServer:
        if configured:
            return HttpServer(self.config.host, configured, name)
        if saved:
            try:
                return HttpServer(self.config.host, saved, name)
            except OSError:
                log.warning("%s: port %d of the previous run is taken, using a free one", name, saved)
        return HttpServer(self.config.host, 0, name)

    def _slot_ports(self, slot: int) -> tuple[int, int]:
        def pick(key: str) -> int:
            configured = getattr(self.config, key)
            if slot < len(configured) and configured[slot]:
                return configured[slot]
            saved = self._saved.get(key, [])
            return saved[slot] if slot < len(saved) else 0
        return pick("rs_ports"), pick("rs_info_ports")

    def _new_region_server(self, slot: int) -> RegionServer:
        rpc, info = self._slot_ports(slot)
        try:
            return RegionServer(self, slot, rpc, info)
        except OSError:
            if rpc in self.config.rs_ports or info in self.config.rs_info_ports:
                raise
            log.warning("region server slot %d: ports %d/%d taken, using free ones", slot, rpc, info)
            return RegionServer(self, slot, 0, 0)

    @property
    def thrift(self) -> ThriftGateway | None:
        """The first Thrift1 gateway (what `endpoints` calls `thrift`)."""
        return self.thrift_gateways[0] if self.thrift_gateways else None

    def _gateways(self, kind: str) -> list[GatewayServer]:
        if kind == "thrift":
            return self.thrift_gateways
        if kind == "thrift2":
            return self.thrift2_gateways
        raise BadRequest(f"kind must be 'thrift' or 'thrift2', got {kind!r}")

    def _start_gateway_at(self, cls, kind: str, index: int) -> GatewayServer:
        """A new gateway on its configured port (the first of its kind), else the port of the previous run, else
        a free one; a configured port that is taken is an error."""
        configured = (self.config.thrift_port if kind == "thrift" else self.config.thrift2_port) if index == 0 else 0
        saved = self._saved.get(f"{kind}_ports", [])
        port = saved[index] if index < len(saved) else 0
        if kind == "thrift" and index == 0 and not port:
            port = self._saved.get("thrift_port", 0)  # ports.json of an earlier minihbase
        try:
            return cls(self, self.config.host, configured or port, index).start()
        except OSError:
            if configured:
                raise
            log.warning("%s gateway %d: port %d of the previous run is taken, using a free one", kind, index, port)
            return cls(self, self.config.host, 0, index).start()

    def _save_ports(self) -> None:
        ports = {
            "thrift_port": self.thrift.port if self.thrift else 0,
            "thrift_ports": [g.port for g in self.thrift_gateways],
            "thrift2_ports": [g.port for g in self.thrift2_gateways],
            "webhdfs_port": self.webhdfs.port, "master_info_port": self.control.port,
            "rs_ports": [rs.port if rs else 0 for rs in self.region_servers],
            "rs_info_ports": [rs.info_port if rs else 0 for rs in self.region_servers],
        }
        self._saved = ports
        (self.dir / "ports.json").write_text(json.dumps(ports, indent=1))

    # ------------------------------------------------------------------------------------------ lifecycle
    def _load_cluster_id(self) -> str:
        path = posixpath.join(self.config.rootdir, "hbase.id")
        if self.fs.exists(path):
            data = self.fs.read_file(path)
            return data[len(PB_MAGIC) + 2:].decode() if data.startswith(PB_MAGIC) else data.decode()
        from minihbase.znodes import cluster_id as encode_cluster_id

        new = str(uuid.uuid4())
        self.fs.write_file(path, encode_cluster_id(new))
        return new

    def start(self) -> "MiniHBaseCluster":
        cfg = self.config
        self.fs.mkdirs(cfg.rootdir)
        self.cluster_id = self._load_cluster_id()
        for path, q in cfg.quotas.items():
            self.fs.mkdirs(path)
            self.fs.set_quota(path, q.get("namespace", -1), q.get("space_bytes", -1), persist=False)
        self.fs.load_saved_quotas()
        for spec in cfg.extensions:
            module, _, func = spec.partition(":")
            getattr(importlib.import_module(module), func)(self)
        self.control.start()
        self.webhdfs.start()
        self.master.start_zookeeper()
        self.master.load_tables()
        self.master.start()
        for slot in range(cfg.region_servers):
            self.start_region_server(slot, balance=False)
        self.master.startup_recovery()
        self.master.publish_meta_location(self.region_servers[0])
        for index in range(cfg.thrift_gateways):
            self.thrift_gateways.append(self._start_gateway_at(ThriftGateway, "thrift", index))
        for index in range(cfg.thrift2_gateways):
            self.thrift2_gateways.append(self._start_gateway_at(Thrift2Gateway, "thrift2", index))
        self._save_ports()
        log.info("cluster %s up: thrift %s, thrift2 %s, %d region servers, cluster id %s", cfg.name,
                 _servers(self.thrift_gateways) or "-", _servers(self.thrift2_gateways) or "-",
                 cfg.region_servers, self.cluster_id)
        return self

    def start_region_server(self, slot: int, balance: bool = True) -> RegionServer:
        with self.lock:
            current = self.region_servers[slot]
            if current is not None and current.online:
                raise BadRequest(f"region server slot {slot} is running ({current.servername})")
            rs = self._new_region_server(slot)
            self.region_servers[slot] = rs
            self.past_servernames[rs.servername] = slot
        rs.start()
        if self.thrift_gateways:
            self._save_ports()
        if balance:
            self.master.submit("recover", self.master._recover)
            if self.config.balancer:
                self.master.submit("balance", self.master.balance)
        return rs

    def stop(self) -> None:
        """Graceful: Thrift stops taking requests, region servers flush and archive, the master leaves."""
        self.stopping = True
        # With ZooKeeper gone, a kazoo call waits for the quorum to come back, and its caller may hold a lock the
        # stop needs (the replication manager's reconcile loop holds the manager's): the master, each region
        # server and the peer-cluster sessions close a disconnected session first (failing those calls) and
        # stop without ZooKeeper, so SIGTERM ends the process within seconds.
        self.replication.peer_clusters.close_disconnected()
        for gateway in self.thrift_gateways + self.thrift2_gateways:
            gateway.stop()
        self.master.stop()
        for rs in self.region_servers:
            if rs is not None and rs.online:
                rs.stop()
        self.replication.peer_clusters.close()
        for server in (self.control, self.webhdfs):
            try:
                server.stop()
            except Exception:
                pass

    # ------------------------------------------------------------------------------------------ views
    def shell_command(self) -> list[str]:
        return [sys.executable, "-m", "minihbase", "shell", "-n", "--cluster", self.config.name,
                "--workdir", str(self.workdir)]

    def endpoints(self) -> dict:
        cfg = self.config
        webhdfs_url = self.webhdfs.url
        cluster_key = f"{self.zk_quorum}:{self.zk_port}:{cfg.znode_parent}"
        extra = {
            "zookeeper_quorum": self.zk_quorum, "zookeeper_port": self.zk_port, "znode_parent": cfg.znode_parent,
            "webhdfs_url": webhdfs_url, "rootdir": cfg.rootdir, "peer_admin": "shell",
            "shell_command": shlex.join(self.shell_command()),
        }
        if self.thrift2_gateways:
            extra["thrift2_servers"] = _servers(self.thrift2_gateways)
        if len(self.thrift_gateways) > 1:
            extra["thrift_servers"] = _servers(self.thrift_gateways)
        if self.security is not None:
            extra.update(self.security.connection_extras())  # principal, keytab, krb5_conf, thrift_qop, ...
        thrift2 = self.thrift2_gateways[0] if self.thrift2_gateways else None
        connection = {"conn_type": "hbase", "host": cfg.host, "port": self.thrift.port if self.thrift else None,
                      "extra": extra}
        out = {
            "name": cfg.name,
            "thrift": {"host": cfg.host, "port": self.thrift.port if self.thrift else None},
            "thrift2": {"host": thrift2.host, "port": thrift2.port} if thrift2 else None,
            "thrift_gateways": [g.describe() for g in self.thrift_gateways],
            "thrift2_gateways": [g.describe() for g in self.thrift2_gateways],
            "zookeeper": {"quorum": self.zk_quorum, "port": self.zk_port, "znode_parent": cfg.znode_parent,
                          "hosts": self.zk_hosts},
            "cluster_key": cluster_key,
            "cluster_id": self.cluster_id,
            "master": {"host": cfg.host, "port": self.master.rpc.port, "info_port": self.control.port},
            "region_servers": [
                {"slot": slot, "servername": rs.servername, "host": rs.host, "port": rs.port,
                 "info_port": rs.info_port, "alive": rs.online, "state": rs.state}
                for slot, rs in enumerate(self.region_servers) if rs is not None
            ],
            "webhdfs_url": webhdfs_url,
            "rootdir": cfg.rootdir,
            "control_url": self.control.url,
            "workdir": str(self.workdir),
            "shell_command": self.shell_command(),
            "connection": connection,
            "connection_uri": f"hbase://{cfg.host}:{connection['port']}/?__extra__="
                              + quote(json.dumps(extra, sort_keys=True), safe=""),
        }
        if self.security is not None:
            out["security"] = self.security.describe()
        return out

    def status(self) -> dict:
        return {
            "name": self.config.name, "cluster_id": self.cluster_id, "latency_ms": self.latency_ms,
            "master": {"alive": not self.master._stopping, "recovery_error": self.master.recovery_error},
            "region_servers": [rs.status() for rs in self.region_servers if rs is not None],
            "thrift_gateways": [g.describe() for g in self.thrift_gateways],
            "thrift2_gateways": [g.describe() for g in self.thrift2_gateways],
            "tables": {
                name.decode("latin-1"): {
                    "enabled": st.desc.enabled,
                    "regions": [{"name": r.info.region_name.decode("latin-1"),
                                 "server": r.server.servername if r.server else None} for r in st.regions],
                } for name, st in sorted(self.master.tables.items())
            },
            "quotas": self.fs.quotas(),
        }

    # ------------------------------------------------------------------------------------------ operations
    def resolve_slot(self, server) -> int:
        if isinstance(server, bool):
            raise BadRequest(f"server must be a slot index or a servername, got {server!r}")
        if isinstance(server, int) or (isinstance(server, str) and server.isdigit()):
            slot = int(server)
            if not 0 <= slot < len(self.region_servers):
                raise BadRequest(f"region server index {slot} out of range 0..{len(self.region_servers) - 1}")
            return slot
        if isinstance(server, str) and server in self.past_servernames:
            return self.past_servernames[server]
        known = ", ".join(rs.servername for rs in self.region_servers if rs is not None)
        raise BadRequest(f"unknown region server {server!r}; known: {known}")

    def kill_region_server(self, server) -> str:
        slot = self.resolve_slot(server)
        rs = self.region_servers[slot]
        if rs is None or not rs.online:
            raise BadRequest(f"region server slot {slot} is not running")
        rs.kill()
        return rs.servername

    def _gateway(self, kind, index) -> GatewayServer:
        gateways = self._gateways(kind)
        if isinstance(index, bool) or not isinstance(index, int):
            raise BadRequest(f"index must be an integer, got {index!r}")
        if not 0 <= index < len(gateways):
            raise BadRequest(f"{kind} gateway index {index} out of range (the cluster has {len(gateways)})")
        return gateways[index]

    def stop_gateway(self, kind, index) -> dict:
        """As if that gateway's process died: its port refuses connections and its open connections drop."""
        gateway = self._gateway(kind, index)
        if not gateway.alive:
            raise BadRequest(f"{kind} gateway {index} is not running")
        gateway.stop()
        log.info("%s gateway %d (%s:%d) stopped", kind, index, gateway.host, gateway.port)
        return gateway.describe()

    def start_gateway(self, kind, index) -> dict:
        """Listen again on the gateway's own port, with fresh state (as a restarted gateway process)."""
        gateway = self._gateway(kind, index)
        if gateway.alive:
            raise BadRequest(f"{kind} gateway {index} is running ({gateway.host}:{gateway.port})")
        try:
            gateway.start()
        except OSError as e:
            raise HBaseError(f"{kind} gateway {index} cannot listen on {gateway.host}:{gateway.port}: {e}") from None
        log.info("%s gateway %d (%s:%d) started", kind, index, gateway.host, gateway.port)
        return gateway.describe()

    def gateway_fault(self, body: dict) -> dict:
        """One gateway's network faults: its own latency, a per-call reset probability, a reset of every open
        connection now. Checked whole before anything changes."""
        unknown = set(body) - {"kind", "index", "latency_ms", "reset_probability", "reset_now"}
        if unknown:
            raise BadRequest(f"unknown gateway-fault field(s): {', '.join(sorted(unknown))}")
        gateway = self._gateway(_required(body, "kind"), body.get("index", 0))
        latency, p, now = body.get("latency_ms"), body.get("reset_probability"), body.get("reset_now", False)
        if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))
                                    or latency < 0):
            raise BadRequest(f"latency_ms must be a number >= 0, got {latency!r}")
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1):
            raise BadRequest(f"reset_probability must be a number in [0, 1], got {p!r}")
        if not isinstance(now, bool):
            raise BadRequest(f"reset_now must be true or false, got {now!r}")
        described = gateway.set_fault(latency, p, now)
        log.warning("%s gateway %d faults: latency %s ms, reset probability %s%s", gateway.kind, gateway.index,
                    gateway.fault_latency_ms, gateway.reset_probability, ", open connections reset" if now else "")
        return described

    def roll_wals(self, server=None) -> list[str]:
        servers = [self.region_servers[self.resolve_slot(server)]] if server is not None else self.region_servers
        return [rs.roll_wal() for rs in servers if rs is not None and rs.online]

    def _regions(self, table: str | None):
        names = [table.encode("latin-1")] if table else list(self.master.tables)
        for name in names:
            state = self.master.table(name)
            for region in state.regions:
                yield state, region

    def flush(self, table: str | None = None) -> int:
        count = 0
        for _, region in self._regions(table):
            rs = region.server
            if rs is not None and rs.online:
                rs.flush(region)
                count += 1
        return count

    def compact(self, table_or_region: bytes, major: bool = False) -> None:
        name = table_or_region.decode("latin-1")
        targets = [(s, r) for s, r in self._regions(None)
                   if r.info.region_name == table_or_region or r.encoded_name == name] \
            or list(self._regions(name))
        for state, region in targets:
            rs = region.server
            if rs is None or not rs.online:
                continue
            with region.lock:
                rs._flush(region)
                base = region_dir(self.config.rootdir, region.info.table, region.encoded_name)
                for family in state.desc.families:
                    fdir = posixpath.join(base, family.decode("latin-1"))
                    if self.fs.exists(fdir) and self.fs.list_dir(fdir):
                        compact_store(self.fs, fdir, region, family, major)

    # ------------------------------------------------------------------------------------------ control
    def _register_control(self) -> None:
        c = self.control
        c.route("GET", "/jmx", self.jmx.handle)
        self.jmx.register("Hadoop:service=HBase,name=Master,sub=Server", lambda: {
            "modelerType": "Master,sub=Server", "tag.Context": "master", "tag.Hostname": self.config.host,
            "tag.clusterId": self.cluster_id, "tag.isActiveMaster": "true",
            "tag.liveRegionServers": ";".join(rs.servername for rs in self.master.live_servers()),
            "numRegionServers": len(self.master.live_servers()),
            "numDeadRegionServers": sum(1 for rs in self.region_servers if rs is not None and not rs.online),
        })
        c.route("GET", "/control/endpoints", lambda r: Response(200, self.endpoints()))
        c.route("GET", "/control/status", lambda r: Response(200, self.status()))
        c.route("POST", "/control/kill-rs", self._wrap(lambda b: {"killed": self.kill_region_server(b.get("server"))}))
        c.route("POST", "/control/start-rs", self._wrap(
            lambda b: {"started": self.start_region_server(self.resolve_slot(b.get("server"))).servername}))
        c.route("POST", "/control/latency", self._wrap(self._set_latency))
        c.route("POST", "/control/stop-gateway", self._wrap(
            lambda b: {"gateway": self.stop_gateway(_required(b, "kind"), b.get("index"))}))
        c.route("POST", "/control/start-gateway", self._wrap(
            lambda b: {"gateway": self.start_gateway(_required(b, "kind"), b.get("index"))}))
        c.route("POST", "/control/gateway-fault", self._wrap(lambda b: {"gateway": self.gateway_fault(b)}))
        c.route("POST", "/control/quota", self._wrap(self._set_quota))
        c.route("POST", "/control/roll-wals", self._wrap(lambda b: {"wals": self.roll_wals(b.get("server"))}))
        c.route("POST", "/control/flush", self._wrap(lambda b: {"flushed_regions": self.flush(b.get("table"))}))
        c.route("POST", "/control/compact", self._wrap(
            lambda b: self.compact(_required(b, "table").encode("latin-1"), bool(b.get("major"))) or {}))
        c.route("POST", "/control/create-table", self._wrap(self._create_table))
        c.route("POST", "/control/alter-family", self._wrap(self._alter_family))
        c.route("POST", "/control/balance", self._wrap(lambda b: {"moves": self.master.balance()}))
        # Table DDL for the shell lookalike (HBase's Admin calls).
        c.route("GET", "/control/tables", lambda r: Response(200, {"tables": self.table_descriptions()}))
        c.route("POST", "/control/disable-table", self._wrap(
            lambda b: self.master.disable_table(_required(b, "table").encode("latin-1")) or {}))
        c.route("POST", "/control/enable-table", self._wrap(
            lambda b: self.master.enable_table(_required(b, "table").encode("latin-1")) or {}))
        c.route("POST", "/control/delete-table", self._wrap(
            lambda b: self.master.delete_table(_required(b, "table").encode("latin-1")) or {}))
        c.route("POST", "/control/truncate-table", self._wrap(
            lambda b: {"regions": self.truncate_table(_required(b, "table").encode("latin-1"),
                                                      bool(b.get("preserve_splits")))}))
        c.route("POST", "/control/count", self._wrap(
            lambda b: {"rows": self.count_rows(_required(b, "table").encode("latin-1"))}))
        c.route("POST", "/control/alter-table", self._wrap(self._alter_table))
        c.route("GET", "/control/replication-status", lambda r: Response(200, self.replication.status()))
        c.route("GET", "/conf", conf_servlet.handler(self))
        c.route("GET", "/control/namespaces", lambda r: Response(200, {"namespaces": self.master.namespaces.names()}))
        c.route("POST", "/control/namespace", self._wrap(lambda b: {
            "namespace": _required(b, "namespace"),
            "configuration": self.master.namespaces.get(_required(b, "namespace"))}))
        c.route("POST", "/control/create-namespace", self._wrap(self._create_namespace))
        c.route("POST", "/control/drop-namespace", self._wrap(lambda b: self.master.namespaces.drop(
            _required(b, "namespace"), self.master.tables_in_namespace(_required(b, "namespace"))) or {}))
        c.route("GET", "/control/switches", lambda r: Response(200, {
            **self.master.switches.state(), "split_requests_refused": self.master.split_requests_refused}))
        c.route("POST", "/control/switch", self._wrap(self._set_switch))
        c.route("POST", "/control/split", self._wrap(self._split_region))
        c.route("POST", "/control/hdfs-capacity", self._wrap(self._set_hdfs_capacity))
        c.route("POST", "/control/run-log-cleaner", self._wrap(
            lambda b: {"deleted": self.master.log_cleaner.run_once()}))

    def table_descriptions(self) -> list[dict]:
        with self.master.lock:
            states = sorted(self.master.tables.items())
        return [{"name": name.decode("latin-1"), "enabled": st.desc.enabled, "regions": len(st.regions),
                 "split_keys_hex": [r.info.start_key.hex() for r in st.regions[1:]],
                 "families": [{**f.to_json(), "hbase_values": list(f.hbase_values().items())}
                              for f in st.desc.families.values()],
                 "readonly": st.desc.readonly, "attributes": st.desc.attributes()} for name, st in states]

    def truncate_table(self, name: bytes, preserve_splits: bool) -> int:
        """HBase's truncateTable: the table must be disabled; it comes back empty and enabled."""
        state = self.master.table(name)
        if state.desc.enabled:
            from minihbase.errors import TableNotDisabled

            raise TableNotDisabled(name.decode("latin-1"))
        splits = [r.info.start_key for r in state.regions[1:]] if preserve_splits else []
        desc = dataclasses.replace(state.desc, enabled=True)  # attributes (READONLY) kept, as HBase's truncate
        self.master.delete_table(name)
        return len(self.master.create_table(desc, splits))

    def count_rows(self, name: bytes) -> int:
        scanner = self.client.open_scanner(name, filter_string=b"FirstKeyOnlyFilter()")
        count = 0
        while True:
            rows = scanner.next(1000)
            if not rows:
                return count
            count += len(rows)

    def _wrap(self, fn):
        def handler(request: Request) -> Response:
            body = request.json()
            if not isinstance(body, dict):
                raise BadRequest("request body must be a JSON object")
            try:
                return Response(200, fn(body))
            except (HBaseError, HDFSError, JavaIllegalArgument, ConfigError) as e:
                text = e.java_text() if hasattr(e, "java_text") else str(e)
                return Response(409 if isinstance(e, (HBaseError, HDFSError)) else 400, {"error": text})
        return handler

    def _set_latency(self, body: dict) -> dict:
        """`{"ms": L}`: every RPC's latency (Thrift calls and calls arriving on a region server's port, and the
        time each region server call holds its handler); `"handler_ms": H` sets the handler part apart (null:
        back to following `ms`)."""
        ms = body.get("ms", self.latency_ms if "handler_ms" in body else None)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms < 0:
            raise BadRequest(f"ms must be a number >= 0, got {ms!r}")
        handler = body.get("handler_ms", self.handler_latency_ms)
        if handler is not None and (isinstance(handler, bool) or not isinstance(handler, (int, float))
                                    or handler < 0):
            raise BadRequest(f"handler_ms must be a number >= 0 or null, got {handler!r}")
        self.latency_ms = float(ms)
        self.handler_latency_ms = None if handler is None else float(handler)
        return {"latency_ms": self.latency_ms, "handler_latency_ms": self.handler_latency_ms}

    def _set_quota(self, body: dict) -> dict:
        path = _required(body, "path")
        unknown = set(body) - {"path", "space_bytes", "namespace"}
        if unknown:
            raise BadRequest(f"unknown quota field(s): {', '.join(sorted(unknown))}")
        self.fs.set_quota(path, namespace=body.get("namespace"), space=body.get("space_bytes"))
        return {"quotas": self.fs.quotas()}

    def _create_table(self, body: dict) -> dict:
        name = _required(body, "table")
        families = body.get("families")
        if not isinstance(families, dict) or not families:
            raise BadRequest("families must be a non-empty object of family name -> settings")
        fams = {}
        for fname, settings in families.items():
            settings = settings or {}
            allowed = {f.name for f in dataclasses.fields(FamilyDescriptor)} - {"name"}
            if not isinstance(settings, dict) or set(settings) - allowed:
                raise BadRequest(f"family {fname!r}: settings must be an object with keys among {sorted(allowed)}")
            fams[fname.encode("latin-1")] = FamilyDescriptor(fname.encode("latin-1"), **settings)
        splits = [s.encode("latin-1") for s in body.get("split_keys", [])]
        splits += [bytes.fromhex(s) for s in body.get("split_keys_hex", [])]
        readonly = body.get("readonly")
        if readonly is not None and not isinstance(readonly, bool):
            raise BadRequest(f"readonly must be true or false, got {readonly!r}")
        values = _string_map(body.get("values"), "values")
        for spec in _string_list(body.get("coprocessors"), "coprocessors"):
            values[next_coprocessor_key(values)] = coprocessor_spec(spec)
        desc = TableDescriptor(name.encode("latin-1"), fams, readonly=readonly, values=values)
        regions = self.master.create_table(desc, splits)
        return {"regions": [r.info.region_name.decode("latin-1") for r in regions]}

    def _alter_table(self, body: dict) -> dict:
        """Table attributes (HBase's modifyTable): `{"table": t, "readonly": true|false, "values": {key: value}
        ("" removes), "remove": [key, ...], "coprocessors": [spec, ...]}`."""
        table = _required(body, "table")
        unknown = set(body) - {"table", "readonly", "values", "remove", "coprocessors"}
        if unknown:
            raise BadRequest(f"unknown table attribute(s): {', '.join(sorted(unknown))} "
                             "(known: readonly, values, remove, coprocessors)")
        readonly = body.get("readonly")
        if readonly is not None and not isinstance(readonly, bool):
            raise BadRequest(f"readonly must be true or false, got {readonly!r}")
        values = _string_map(body.get("values"), "values")
        specs = tuple(coprocessor_spec(s) for s in _string_list(body.get("coprocessors"), "coprocessors"))
        if readonly is None and not values and not body.get("remove") and not specs:
            raise BadRequest("nothing to alter: give readonly, values, remove or coprocessors")
        desc = self.master.alter_table(table.encode("latin-1"), readonly=readonly, values=values,
                                       remove=tuple(_string_list(body.get("remove"), "remove")), coprocessors=specs)
        return {"table": desc.text, "readonly": desc.readonly, "attributes": desc.attributes()}

    def _create_namespace(self, body: dict) -> dict:
        name = _required(body, "namespace")
        self.master.namespaces.create(name, _string_map(body.get("configuration"), "configuration"))
        return {"namespace": name}

    def _set_switch(self, body: dict) -> dict:
        enabled = body.get("enabled")
        if not isinstance(enabled, bool):
            raise BadRequest(f"enabled must be true or false, got {enabled!r}")
        return {"previous": self.master.switches.set(_required(body, "switch"), enabled)}

    def _set_hdfs_capacity(self, body: dict) -> dict:
        value = body.get("bytes")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadRequest(f"bytes must be a positive integer, got {value!r}")
        self.hdfs_capacity_bytes = value
        return {"capacity_bytes": value}

    def _split_region(self, body: dict) -> dict:
        key = body.get("split_key_hex")
        if key is not None and not isinstance(key, str):
            raise BadRequest(f"split_key_hex must be a hex string, got {key!r}")
        try:
            split_key = bytes.fromhex(key) if key else None
        except ValueError:
            raise BadRequest(f"split_key_hex is not hex: {key!r}") from None
        daughters = self.master.split_region(_required(body, "table").encode("latin-1"), split_key)
        return {"regions": [{"encoded_name": r.encoded_name, "start_key_hex": r.info.start_key.hex(),
                             "end_key_hex": r.info.end_key.hex()} for r in daughters]}

    def _alter_family(self, body: dict) -> dict:
        table, family = _required(body, "table"), _required(body, "family")
        attrs = {k: v for k, v in body.items() if k not in ("table", "family")}
        self.master.alter_family(table.encode("latin-1"), family.encode("latin-1"), **attrs)
        return {"families": {f.name.decode("latin-1"): f.to_json()
                             for f in self.master.table(table.encode("latin-1")).desc.families.values()}}


def _servers(gateways: list[GatewayServer]) -> str:
    """"host:port,host:port" of the gateways, in index order."""
    return ",".join(f"{g.host}:{g.port}" for g in gateways)


def _string_map(value, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequest(f"{what} must be an object of string -> string, got {value!r}")
    return dict(value)


def _string_list(value, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{what} must be a list of strings, got {value!r}")
    return list(value)


def _required(body: dict, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required (a non-empty string)")
    return value
