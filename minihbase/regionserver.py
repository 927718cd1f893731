"""A region server: its own ZooKeeper session and `rs/` znode, RPC and info ports, WAL, regions and chores.

Write path (as HBase's): sequence ids are assigned per region, the edits are appended to this server's WAL,
then applied to the memstore. A WAL append, roll or archive that fails (an HDFS quota) aborts the server: its
znode disappears (the session is closed), its regions stop answering and the master recovers them from the WAL.

Every call to a region server (gets, mutations, scanner chunks, replicateWALEntry) runs through `ipc` (HBase's
RpcServer call queues and handlers, `minihbase.ipc`), which feeds the `/jmx` beans `sub=IPC` and `sub=Server`.
A region of a READONLY table refuses every mutation before it is logged (`Region.check_read_only`).

Hooks for part 2: `wal.roll_listeners` / `wal.archive_listeners`, `abort_listeners` (`fn(rs, reason)`),
`rpc.route(...)` for endpoints such as `POST /replicateWALEntry`, `jmx.register(...)` for metrics, and
`apply_replicated(table, row_cells, cluster_ids)` to write edits that came from another cluster.
"""
from __future__ import annotations

import logging
import posixpath
import threading
import time
from typing import TYPE_CHECKING, Callable

from minihbase import conf_servlet, znodes
from minihbase.cells import DELETE, LATEST_TIMESTAMP, Cell
from minihbase.errors import (
    DoNotRetryIOException,
    NotServingRegion,
    RegionServerAborted,
    WALAppendFailed,
)
from minihbase.hdfs import HDFSError
from minihbase.httpserver import HttpServer, Request, Response
from minihbase.ipc import IPC_BEAN, RpcScheduler
from minihbase.jmx import REPLICATION_BEAN, JmxRegistry
from minihbase.region import Region, new_store_file_name, now_ms, parse_store_file, store_file_bytes
from minihbase.wal import WAL, WALEntry

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)

_new_tuple = tuple.__new__  # builds a Cell without namedtuple's slower Python-level constructor
COMPACTION_THRESHOLD = 6  # store files per family before a compaction rewrites them into one
_startcode_lock = threading.Lock()
_last_startcode = 0


REGIONS_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Regions"


def _new_startcode() -> int:
    global _last_startcode
    with _startcode_lock:
        _last_startcode = max(int(time.time() * 1000), _last_startcode + 1)
        return _last_startcode


def region_dir(rootdir: str, table: bytes, encoded: str) -> str:
    ns, _, qualifier = table.partition(b":")
    if not _:
        ns, qualifier = b"default", table
    return posixpath.join(rootdir, "data", ns.decode("latin-1"), qualifier.decode("latin-1"), encoded)


class RegionServer:
    def __init__(self, cluster: "MiniHBaseCluster", slot: int, rpc_port: int = 0, info_port: int = 0):
        self.cluster = cluster
        self.config = cluster.config
        self.slot = slot
        self.host = self.config.host
        self.rpc = HttpServer(self.host, rpc_port, f"rs{slot}-rpc", before=self._inject_latency)
        self.info = HttpServer(self.host, info_port, f"rs{slot}-info")
        self.startcode = _new_startcode()
        self.servername = f"{self.host},{self.rpc.port},{self.startcode}"
        self.regions: dict[str, Region] = {}
        self.wal = WAL(cluster.fs, self.config.rootdir, self.servername, self.config.wal_roll_size_bytes)
        self.state = "new"
        self.abort_reason: str | None = None
        self.abort_listeners: list[Callable[["RegionServer", str], None]] = []
        # Called once the server is online (its ZooKeeper session and znode exist) / when a graceful stop begins.
        self.start_listeners: list[Callable[["RegionServer"], None]] = []
        self.stop_listeners: list[Callable[["RegionServer"], None]] = []
        self.jmx = JmxRegistry()
        self.zk = None
        self._wake = threading.Event()
        self._roll_requested = False
        self._chore: threading.Thread | None = None
        self._last_flush: dict[str, float] = {}
        self.read_requests = 0
        self.write_requests = 0
        self.flushes = 0
        # The RPC handlers and call queues every call to this server goes through (HBase's RpcServer +
        # SimpleRpcScheduler), with the `sub=IPC` metrics and the operation histograms of `sub=Server`.
        self.ipc = RpcScheduler(self.config.handler_count, self.config.replication_handler_count,
                                self.config.metrics_period_s, latency_ms=self.handler_latency_ms,
                                open_connections=lambda: self.rpc.open_connections)
        self._register_http()

    # ------------------------------------------------------------------------------------------ lifecycle
    @property
    def online(self) -> bool:
        return self.state == "online"

    @property
    def info_port(self) -> int:
        return self.info.port

    @property
    def port(self) -> int:
        return self.rpc.port

    @property
    def znode(self) -> str:
        return f"{self.config.znode_parent}/rs/{self.servername}"

    def start(self) -> "RegionServer":
        for hook in list(self.cluster.rs_init_hooks):
            hook(self)
        self.wal.open()
        self.rpc.start()
        self.info.start()
        self.zk = self.cluster.new_zk_client(self.config.zk_session_timeout_s)
        self.zk.start(timeout=30)
        self.zk.add_listener(self._zk_state)
        self.zk.create(self.znode, znodes.with_metadata(znodes.region_server_info(self.info_port),
                                                        ident=self.cluster.master.zk_ident),
                       ephemeral=True, makepath=True)
        self.state = "online"
        self._chore = threading.Thread(target=self._chore_loop, name=f"rs{self.slot}-chore", daemon=True)
        self._chore.start()
        for listener in list(self.start_listeners):
            listener(self)
        log.info("region server %s online (info port %d)", self.servername, self.info_port)
        return self

    def _zk_state(self, state) -> bool:
        from kazoo.client import KazooState

        if state == KazooState.LOST and self.online:
            # As HBase: a region server whose session expired must not keep serving.
            threading.Thread(target=self.abort, args=("ZooKeeper session expired",), daemon=True).start()
            return True
        return False

    def abort(self, reason: str) -> None:
        """Stop serving at once, without flushing: the master recovers the regions from the WAL."""
        with self.cluster.lock:
            if self.state not in ("online", "new"):
                return
            self.state = "aborted"
            self.abort_reason = reason
        log.error("ABORTING region server %s: %s", self.servername, reason)
        for region in list(self.regions.values()):
            region.server = None
        self.regions.clear()
        self.wal.close()
        self._close_session()
        self._stop_http()
        self._wake.set()
        for listener in list(self.abort_listeners) + list(self.cluster.rs_abort_listeners):
            try:
                listener(self, reason)
            except Exception:
                log.exception("abort listener failed")

    def kill(self) -> None:
        self.abort("killed (minihbase kill-rs)")

    def stop(self) -> None:
        """Graceful stop: flush every region, archive the WALs, leave ZooKeeper."""
        if not self.online:
            return
        self.state = "stopping"
        if self.zk is not None and not self.zk.connected:
            # The replication manager's loop may be waiting on the dead quorum while it holds the lock its stop
            # listener needs: failing that call lets it go. The listener goes first: a closed session is LOST,
            # which would abort this server (no flush) instead of stopping it.
            log.warning("region server %s stopping: ZooKeeper does not answer; closing its session first",
                        self.servername)
            self.zk.remove_listener(self._zk_state)
            self.zk.stop()
        for listener in list(self.stop_listeners):
            try:
                listener(self)
            except Exception:
                log.exception("stop listener failed")
        self._wake.set()
        if self._chore is not None:
            self._chore.join(10)
        failed = False
        for region in list(self.regions.values()):
            try:
                self._flush(region)
            except Exception as e:
                log.error("flush of %s failed during stop: %s", region, e)
                failed = True
        for region in list(self.regions.values()):
            region.server = None
        self.regions.clear()
        self.wal.close()
        if not failed:
            try:
                for path in list(self.wal.files):
                    self.wal.archive(path)
                self.cluster.fs.delete(self.wal.dir, recursive=True)
            except HDFSError as e:
                log.error("archiving WALs of %s failed: %s", self.servername, e)
        self._close_session()
        self._stop_http()
        self.state = "stopped"
        log.info("region server %s stopped", self.servername)

    def _close_session(self) -> None:
        if self.zk is not None:
            try:
                self.zk.remove_listener(self._zk_state)
                self.zk.stop()
                self.zk.close()
            except Exception:
                log.exception("closing the ZooKeeper session of %s", self.servername)

    def _stop_http(self) -> None:
        for server in (self.rpc, self.info):
            try:
                server.stop()
            except Exception:
                pass

    # ------------------------------------------------------------------------------------------ regions
    def add_region(self, region: Region) -> None:
        region.server = self
        self.regions[region.encoded_name] = region
        self._last_flush[region.encoded_name] = time.monotonic()

    def remove_region(self, region: Region) -> None:
        self.regions.pop(region.encoded_name, None)
        if region.server is self:
            region.server = None

    def flushed_seq(self, encoded: str) -> int | None:
        region = self.regions.get(encoded)
        return None if region is None else region.flushed_seq

    def _check(self, region: Region) -> None:
        if not self.online:
            raise RegionServerAborted(f"Server {self.servername} aborting" if self.state == "aborted"
                                      else f"Server {self.servername} not running")
        if region.server is not self:
            raise NotServingRegion(
                f"Region {region.info.region_name.decode('latin-1')} is not online on {self.servername}")

    # ------------------------------------------------------------------------------------------ writes
    def mutate(self, region: Region, rows: list[list[Cell]], cluster_ids: list[str],
               durable: bool = True) -> None:
        """Log then apply one entry per row. Timestamps of LATEST_TIMESTAMP become the server's now."""
        with region.lock:
            self._check(region)
            region.check_read_only()  # before anything is logged: a refused mutation leaves no WAL entry
            now = now_ms()
            entries = []
            for cells in rows:
                resolved = []
                for c in cells:
                    if c[3] == LATEST_TIMESTAMP:
                        ts = now
                        if c[4] == DELETE:  # "delete the latest version"
                            newest = region.newest(c[0], c[1] + b":" + c[2], now)
                            if newest is None:
                                continue
                            ts = newest[0]
                        c = _new_tuple(Cell, (c[0], c[1], c[2], ts, c[4], c[5]))
                    resolved.append(c)
                if not resolved:
                    continue
                region.max_seq += 1
                entries.append(WALEntry(region.max_seq, now, region.info.table, region.encoded_name,
                                        list(cluster_ids), resolved))
            if not entries:
                return
            if durable:
                self._append(entries)
            for e in entries:
                region.apply(e.cells, e.seq_id)
            region.write_requests += len(entries)
            self.write_requests += len(entries)
        if region.memstore_size >= self.config.memstore_flush_size_bytes:
            self._wake.set()

    def _append(self, entries: list[WALEntry]) -> None:
        try:
            if self.wal.append(entries):
                self._roll_requested = True
                self._wake.set()
        except (HDFSError, OSError) as e:
            if not self.online:  # killed or aborted meanwhile: nothing was logged, the client retries elsewhere
                raise RegionServerAborted(f"Server {self.servername} aborting") from None
            detail = e.java_text() if isinstance(e, HDFSError) else str(e)
            self.abort(f"WAL append failed: {detail}")
            raise WALAppendFailed(
                f"Append sequenceId={entries[0].seq_id} to WAL of {self.servername} failed, "
                f"server aborting: {detail}"
            ) from None

    def apply_replicated(self, table: bytes, rows: list[list[Cell]], cluster_ids: list[str]) -> None:
        """Write edits received from another cluster, keeping the cluster ids they passed through, through the
        normal client path (HBase's replication sink uses a connection to its own cluster), as a batch."""
        self.cluster.client.mutate(table, rows, cluster_ids=cluster_ids, batch=True)

    def increment(self, region: Region, row: bytes, family: bytes, qualifier: bytes, amount: int) -> int:
        with region.lock:
            self._check(region)
            region.check_read_only()
            now = now_ms()
            current = region.newest(row, family + b":" + qualifier, now)
            value = 0
            ts = now
            if current is not None:
                if len(current[1]) != 8:
                    raise DoNotRetryIOException(f"Field is not a long, it's {len(current[1])} bytes wide")
                value = int.from_bytes(current[1], "big", signed=True)
                ts = max(now, current[0] + 1)
            value += amount
            self.mutate(region, [[Cell(row, family, qualifier, ts, 4, value.to_bytes(8, "big", signed=True))]],
                        [self.cluster.cluster_id])
            return value

    # ------------------------------------------------------------------------------------------ flush
    def flush(self, region: Region) -> None:
        self._flush(region)
        self._archive_flushed()

    def _flush(self, region: Region) -> None:
        with region.lock:
            cells, max_seq = region.take_flush_snapshot()
            by_family: dict[bytes, list[Cell]] = {}
            if cells:
                for c in cells:
                    by_family.setdefault(c.family, []).append(c)
                base = region_dir(self.config.rootdir, region.info.table, region.encoded_name)
                written = []
                try:
                    for family, fcells in by_family.items():
                        path = posixpath.join(base, family.decode("latin-1"), new_store_file_name())
                        self.cluster.fs.write_file(path, store_file_bytes(fcells, max_seq))
                        written.append(path)
                except HDFSError as e:
                    for path in written:
                        self.cluster.fs.delete(path)
                    region.restore_flush_snapshot(cells)
                    if self.online:
                        self.abort(f"memstore flush of {region} failed: {e.java_text()}")
                    raise
                self.flushes += 1
            region.flushed_seq = max_seq
            for family in by_family:
                self._maybe_compact(region, family)
            self._last_flush[region.encoded_name] = time.monotonic()

    def _maybe_compact(self, region: Region, family: bytes) -> None:
        fs = self.cluster.fs
        fdir = posixpath.join(region_dir(self.config.rootdir, region.info.table, region.encoded_name),
                              family.decode("latin-1"))
        files = fs.list_dir(fdir)
        if len(files) < COMPACTION_THRESHOLD:
            return
        compact_store(fs, fdir, region, family)

    def _archive_flushed(self) -> None:
        try:
            for path in self.wal.archivable(self.flushed_seq):
                self.wal.archive(path)
        except HDFSError as e:
            self.abort(f"WAL archive failed: {e.java_text()}")
            raise

    def roll_wal(self, force: bool = True) -> str:
        """Roll the WAL; an unforced roll (size or period) of an empty WAL is skipped (see `WAL.roll`)."""
        try:
            path = self.wal.roll(force)
        except (HDFSError, OSError) as e:
            detail = e.java_text() if isinstance(e, HDFSError) else str(e)
            self.abort(f"WAL roll failed: {detail}")
            raise
        self._archive_flushed()
        return path

    # ------------------------------------------------------------------------------------------ chores
    def _chore_loop(self) -> None:
        while self.online:
            self._wake.wait(0.5)
            self._wake.clear()
            if not self.online:
                return
            try:
                self._chore_once()
            except (HDFSError, OSError):
                pass  # already turned into an abort where it happened
            except Exception:
                log.exception("region server %s chore failed", self.servername)

    def _chore_once(self) -> None:
        cfg = self.config
        period_due = (time.monotonic() - self.wal.rolled_at >= cfg.wal_roll_period_s
                      and self.wal.current_entries > 0)
        if self._roll_requested or period_due:
            self._roll_requested = False
            self.roll_wal(force=False)
        if self.wal.closed_file_count() > cfg.max_logs:
            # Too many WALs: flush the regions pinning the oldest, so it can be archived.
            for encoded in self.wal.oldest_pinning():
                region = self.regions.get(encoded)
                if region is not None:
                    self._flush(region)
        now = time.monotonic()
        for region in list(self.regions.values()):
            idle = now - self._last_flush.get(region.encoded_name, now)
            if region.memstore_size >= cfg.memstore_flush_size_bytes or (
                    region.memstore and idle >= cfg.flush_interval_s):
                self._flush(region)
        self._archive_flushed()
        for region in list(self.regions.values()):
            if region.data_size >= cfg.region_split_size_bytes and region.server is self:
                self.cluster.master.request_split(region)

    # ------------------------------------------------------------------------------------------ http
    def _inject_latency(self, request: Request) -> None:
        """The link's latency for a request arriving on the RPC port (a peer cluster's replication source)."""
        delay = self.cluster.latency_ms
        if delay > 0:
            time.sleep(delay / 1000.0)

    def handler_latency_ms(self) -> float:
        """Injected latency every call sleeps while it holds a handler (slow storage): the cluster's
        `handler_latency_ms` when set, else its `latency_ms`."""
        handler = getattr(self.cluster, "handler_latency_ms", None)
        return self.cluster.latency_ms if handler is None else handler

    def region_store_files(self, region: Region) -> tuple[int, int, int]:
        """(stores, store files, their bytes) of one region."""
        fs = self.cluster.fs
        stores = files = size = 0
        base = region_dir(self.config.rootdir, region.info.table, region.encoded_name)
        for family in region.table.families:
            stores += 1
            fdir = posixpath.join(base, family.decode("latin-1"))
            try:
                statuses = fs.list_status(fdir) if fs.exists(fdir) else []
            except (HDFSError, OSError):
                continue
            files += len(statuses)
            size += sum(st.get("length", 0) for st in statuses)
        return stores, files, size

    def store_files(self) -> tuple[int, int, int]:
        """(stores, store files, their bytes) of the regions this server holds."""
        totals = [self.region_store_files(r) for r in list(self.regions.values())]
        return tuple(sum(t[i] for t in totals) for i in range(3))  # type: ignore[return-value]

    def _regions_bean(self, base: dict) -> dict:
        """`sub=Regions` (MetricsRegionAggregateSourceImpl + one MetricsRegionSourceImpl per region): every
        region's figures under `Namespace_<ns>_table_<qualifier>_region_<encoded name>_metric_<name>`, then
        `numRegions`. HBase refreshes the sizes every 45 s (MetricsRegionWrapperImpl.PERIOD); they are live here."""
        out: dict = {"modelerType": "RegionServer,sub=Regions", **base}
        regions = list(self.regions.values())
        for region in regions:
            table = region.info.table.decode("latin-1")
            namespace, _, qualifier = table.rpartition(":")
            prefix = f"Namespace_{namespace or 'default'}_table_{qualifier}_region_{region.encoded_name}_metric_"
            stores, files, size = self.region_store_files(region)
            out.update({prefix + "storeCount": stores, prefix + "storeFileCount": files,
                        prefix + "memStoreSize": region.memstore_size, prefix + "storeFileSize": size,
                        prefix + "readRequestCount": region.read_requests, prefix + "cpRequestCount": 0,
                        prefix + "filteredReadRequestCount": 0, prefix + "writeRequestCount": region.write_requests,
                        prefix + "replicaid": 0})
        out["numRegions"] = len(regions)
        return out

    def _server_bean(self, base: dict) -> dict:
        stores, files, size = self.store_files()
        return {
            "modelerType": "RegionServer,sub=Server", **base,
            "tag.serverName": self.servername, "tag.clusterId": self.cluster.cluster_id,
            "tag.zookeeperQuorum": self.cluster.zk_hosts, "regionCount": len(self.regions),
            "storeCount": stores, "storeFileCount": files, "storeFileSize": size,
            "memStoreSize": sum(r.memstore_size for r in self.regions.values()),
            "totalRowActionRequestCount": self.read_requests + self.write_requests,
            "readRequestCount": self.read_requests, "writeRequestCount": self.write_requests,
            "flushedCellsCount": self.flushes, "walFileCount": len(self.wal.files),
            **self.ipc.server_bean(),
        }

    def _register_http(self) -> None:
        self.rpc.route("GET", "/", lambda r: Response(200, self.status()))
        self.info.route("GET", "/jmx", self.jmx.handle)
        self.info.route("GET", "/conf", conf_servlet.handler(self.cluster, self.info_port, "regionserver"))
        self.info.route("GET", "/rs-status", lambda r: Response(200, self.status()))
        base = {"tag.Context": "regionserver", "tag.Hostname": self.host}
        self.jmx.register("Hadoop:service=HBase,name=RegionServer,sub=Server", lambda: self._server_bean(base))
        self.jmx.register(REGIONS_BEAN, lambda: self._regions_bean(base))
        self.jmx.register(IPC_BEAN, lambda: {"modelerType": "RegionServer,sub=IPC", **base, **self.ipc.ipc_bean()})
        self.jmx.register("Hadoop:service=HBase,name=RegionServer,sub=WAL", lambda: {
            "modelerType": "RegionServer,sub=WAL", **base, "rollRequest": self.wal.rolls,
            "appendCount": self.wal.appended_entries, "writtenBytes": self.wal.appended_bytes,
        })
        # Present, without values: part 2 (replication) fills it.
        self.jmx.register(REPLICATION_BEAN, lambda: {"modelerType": "RegionServer,sub=Replication", **base})

    def status(self) -> dict:
        return {
            "servername": self.servername, "host": self.host, "port": self.port, "info_port": self.info_port,
            "startcode": self.startcode, "state": self.state, "abort_reason": self.abort_reason,
            "regions": sorted(self.regions), "wal": self.wal.current_path,
        }


def load_region(fs, rootdir: str, region: Region) -> int:
    """Load a region's store files (oldest first); returns the highest sequence id they hold."""
    base = region_dir(rootdir, region.info.table, region.encoded_name)
    max_seq = 0
    if not fs.exists(base):
        return 0
    for family in region.table.families:
        fdir = posixpath.join(base, family.decode("latin-1"))
        if not fs.exists(fdir):
            continue
        files = []
        for name in fs.list_dir(fdir):
            seq, cells = parse_store_file(fs.read_file(posixpath.join(fdir, name)))
            files.append((seq, name, cells))
        for seq, _, cells in sorted(files, key=lambda f: (f[0], f[1])):
            region.apply(cells, seq, log=False)
            max_seq = max(max_seq, seq)
    region.max_seq = region.flushed_seq = max_seq
    return max_seq


def compact_store(fs, fdir: str, region: Region, family: bytes, major: bool = False) -> None:
    """Rewrite a family's store files as one (call with the region lock held, memstore flushed). A minor
    compaction keeps delete markers; a major one drops them, as HBase does. A failure leaves the old files."""
    old = fs.list_dir(fdir)
    if major:
        region.drop_delete_markers(family)
    new_path = posixpath.join(fdir, new_store_file_name())
    fs.write_file(new_path, store_file_bytes(region.snapshot_by_family().get(family, []), region.max_seq))
    for name in old:
        fs.delete(posixpath.join(fdir, name))
    region.compact_in_memory()
