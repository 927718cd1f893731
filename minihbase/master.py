"""The master: table metadata (hbase:meta's job), region assignment, crash recovery, splits, balancing, the
oldWALs log cleaner, and the cluster's znodes (`hbaseid`, `master`, `rs/`).

Region transitions (recovery, split, move) run one at a time on the master's procedure thread, so they never
race each other. Crash recovery is HBase's ServerCrashProcedure in small: the dead server's WAL directory is
renamed `-splitting`, its edits are replayed into the regions it held (each reopened from its store files on a
live server and flushed), then the WALs move to oldWALs. A recovery that cannot write (an HDFS quota) leaves
the regions offline and is retried; requests to them answer IOError meanwhile.

Hooks for part 2: `log_cleaner.delegates` (a WAL is deleted only if every delegate agrees; the TTL cleaner is
first), `dead_server_listeners` (`fn(servername)` after a dead server's WALs are split and archived),
`wal_archive_listeners` (`fn(old_path, new_path)` for WALs the master archives after splitting).
"""
from __future__ import annotations

import bisect
import dataclasses
import logging
import posixpath
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from minihbase import znodes
from minihbase.errors import (
    DoNotRetryIOException,
    HBaseError,
    NoSuchColumnFamily,
    TableExists,
    TableNotDisabled,
    TableNotEnabled,
    TableNotFound,
)
from minihbase.hdfs import HDFSError
from minihbase.httpserver import HttpServer
from minihbase.namespaces import Namespaces, Switches
from minihbase.region import Region, new_store_file_name, now_ms, store_file_bytes
from minihbase.regionserver import RegionServer, load_region, region_dir
from minihbase.schema import RegionInfo, TableDescriptor, validate_table_name
from minihbase.table_attributes import check_codecs, next_coprocessor_key, sanity_check
from minihbase.wal import read_entries

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)


def _metadata_id(data: bytes) -> str | None:
    """The id inside a ZKMetadata header (None if the payload has none)."""
    if not data or data[0] != 0xFF or len(data) < 5:
        return None
    length = int.from_bytes(data[1:5], "big")
    return data[5:5 + length - 8].decode("utf-8", "replace")


@dataclass
class TableState:
    desc: TableDescriptor
    regions: list[Region] = field(default_factory=list)  # sorted by start key; replaced, never mutated

    @property
    def starts(self) -> list[bytes]:
        return [r.info.start_key for r in self.regions]


def table_dir(rootdir: str, table: bytes) -> str:
    ns, qualifier = validate_table_name(table)
    return posixpath.join(rootdir, "data", ns.decode("latin-1"), qualifier.decode("latin-1"))


class TimeToLiveLogCleaner:
    """HBase's default: an oldWALs file is deletable once it is older than the TTL (by modification time)."""

    def __init__(self, ttl_s: float):
        self.ttl_ms = ttl_s * 1000

    def is_file_deletable(self, status: dict) -> bool:
        return now_ms() - status["modificationTime"] > self.ttl_ms


class LogCleaner:
    """The master's oldWALs cleaner chore: delete a file only if every delegate says it is deletable."""

    def __init__(self, cluster: "MiniHBaseCluster", ttl_s: float):
        self.cluster = cluster
        self.delegates: list = [TimeToLiveLogCleaner(ttl_s)]
        self.deleted_total = 0

    def run_once(self) -> list[str]:
        fs = self.cluster.fs
        old_dir = posixpath.join(self.cluster.config.rootdir, "oldWALs")
        if not fs.exists(old_dir):
            return []
        for d in self.delegates:
            pre = getattr(d, "pre_clean", None)
            if pre is not None:
                pre()
        deleted = []
        for status in fs.list_status(old_dir):
            if status["type"] != "FILE":
                continue
            status = {**status, "path": posixpath.join(old_dir, status["pathSuffix"]), "name": status["pathSuffix"]}
            if all(d.is_file_deletable(status) for d in self.delegates):
                if fs.delete(status["path"]):
                    deleted.append(status["path"])
        self.deleted_total += len(deleted)
        if deleted:
            log.info("log cleaner deleted %d oldWALs file(s)", len(deleted))
        return deleted


class Master:
    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster
        self.config = cluster.config
        self.tables: dict[bytes, TableState] = {}
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified on every assignment change
        self.rpc = HttpServer(self.config.host, 0, "master-rpc")
        self.startcode = int(time.time() * 1000)
        self.log_cleaner = LogCleaner(cluster, self.config.log_cleaner_ttl_s)
        self.dead_server_listeners: list[Callable[[str], None]] = []
        self.wal_archive_listeners: list[Callable[[str, str], None]] = []
        self.zk = None
        self.namespaces = Namespaces(cluster.fs, self.config.rootdir)
        self.switches = Switches(None, self.config.znode_parent, self.zk_ident)  # its client once ZooKeeper is up
        self.split_requests_refused = 0  # splits the switches stopped (shown by /control/switches)
        self._tasks: queue.Queue = queue.Queue()
        self._queued: set = set()
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self.recovery_error: str | None = None

    # ------------------------------------------------------------------------------------------ lifecycle
    @property
    def zk_ident(self) -> str:
        """The ZKMetadata id of this cluster's znodes: names the cluster directory, so a restart recognises
        its own previous incarnation's znodes and another instance's are never taken over."""
        return f"minihbase:{self.cluster.dir}"

    def start_zookeeper(self) -> None:
        parent = self.config.znode_parent
        self.zk = self.cluster.new_zk_client(self.config.zk_session_timeout_s)
        self.zk.start(timeout=30)
        master_path = f"{parent}/master"
        current = self.zk.exists(master_path)
        if current is not None:
            data, _ = self.zk.get(master_path)
            owner = _metadata_id(data)
            if owner != self.zk_ident:
                self.zk.stop()
                self.zk.close()
                raise RuntimeError(
                    f"znode parent {parent} on ZooKeeper {self.cluster.zk_hosts} is in use by another running "
                    f"cluster ({owner or 'unknown owner'}); give this cluster another znode_parent")
            self.zk.delete(master_path)  # our previous incarnation's, its session not expired yet
        for child in ("rs", "draining", "backup-masters", "splitWAL"):
            self.zk.ensure_path(f"{parent}/{child}")
        for child in self.zk.get_children(f"{parent}/rs"):
            # Region servers of our previous incarnation (a crashed process): their sessions would linger until
            # they expire; they are certainly dead, so their znodes go now.
            data, _ = self.zk.get(f"{parent}/rs/{child}")
            if _metadata_id(data) == self.zk_ident:
                self.zk.delete(f"{parent}/rs/{child}")
        data = znodes.with_metadata(znodes.cluster_id(self.cluster.cluster_id), ident=self.zk_ident)
        if self.zk.exists(f"{parent}/hbaseid"):
            self.zk.set(f"{parent}/hbaseid", data)
        else:
            self.zk.create(f"{parent}/hbaseid", data)
        self.zk.create(master_path, znodes.with_metadata(
            znodes.master(self.config.host, self.rpc.port, self.startcode, self.cluster.control.port),
            ident=self.zk_ident), ephemeral=True)
        self.switches.zk = self.zk

    def publish_meta_location(self, rs: RegionServer) -> None:
        path = f"{self.config.znode_parent}/meta-region-server"
        data = znodes.with_metadata(znodes.meta_region_server(rs.host, rs.port, rs.startcode),
                                    ident=self.zk_ident)
        if self.zk.exists(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data)

    def start(self) -> None:
        self.rpc.start()
        for target, name in ((self._procedure_loop, "master-procedures"), (self._cleaner_loop, "log-cleaner")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stopping = True
        self._tasks.put(None)
        if self.zk is not None and not self.zk.connected:
            # A procedure or the log cleaner may be waiting on the dead quorum: failing its call lets it end.
            log.warning("master of %s stopping: ZooKeeper does not answer; closing its session first",
                        self.config.name)
            self.zk.stop()
        for t in self._threads:
            t.join(10)
        self.rpc.stop()
        if self.zk is not None and self.zk.connected:
            self.zk.stop()
            self.zk.close()

    # ------------------------------------------------------------------------------------------ procedures
    def submit(self, key, fn: Callable[[], None]) -> None:
        with self.lock:
            if key in self._queued:
                return
            self._queued.add(key)
        self._tasks.put((key, fn))

    def _procedure_loop(self) -> None:
        while True:
            item = self._tasks.get()
            if item is None or self._stopping:
                return
            key, fn = item
            with self.lock:
                self._queued.discard(key)
            try:
                fn()
            except Exception:
                log.exception("master procedure %s failed", key)

    def _retry_later(self, key, fn, delay: float = 1.0) -> None:
        def later():
            if not self._stopping:
                self.submit(key, fn)
        timer = threading.Timer(delay, later)
        timer.daemon = True
        timer.start()

    def _cleaner_loop(self) -> None:
        while not self._stopping:
            deadline = time.monotonic() + self.config.log_cleaner_interval_s
            while not self._stopping and time.monotonic() < deadline:
                time.sleep(0.2)
            if self._stopping:
                return
            try:
                self.log_cleaner.run_once()
            except Exception:
                log.exception("log cleaner failed")

    # ------------------------------------------------------------------------------------------ meta
    def load_tables(self) -> None:
        """Read table descriptors and region infos from the rootdir (regions start offline)."""
        fs = self.cluster.fs
        data = posixpath.join(self.config.rootdir, "data")
        if not fs.exists(data):
            return
        for ns in fs.list_dir(data):
            for qualifier in fs.list_dir(posixpath.join(data, ns)):
                tdir = posixpath.join(data, ns, qualifier)
                info_path = posixpath.join(tdir, ".tabledesc", ".tableinfo.0000000001")
                if not fs.exists(info_path):
                    continue
                desc = TableDescriptor.from_bytes(fs.read_file(info_path))
                regions = []
                for name in fs.list_dir(tdir):
                    rinfo = posixpath.join(tdir, name, ".regioninfo")
                    if name.startswith(".") or not fs.exists(rinfo):
                        continue
                    regions.append(Region(RegionInfo.from_bytes(fs.read_file(rinfo)), desc))
                regions.sort(key=lambda r: r.info.start_key)
                self.tables[desc.name] = TableState(desc, regions)
        self.namespaces.load(desc.namespace.decode("latin-1") for desc in (t.desc for t in self.tables.values()))

    def table(self, name: bytes) -> TableState:
        state = self.tables.get(name)
        if state is None:
            raise TableNotFound(name.decode("latin-1"))
        return state

    def enabled_table(self, name: bytes) -> TableState:
        state = self.table(name)
        if not state.desc.enabled:
            raise TableNotEnabled(f"{name.decode('latin-1')} is disabled.")
        return state

    def locate(self, table: bytes, row: bytes) -> Region:
        state = self.enabled_table(table)
        regions = state.regions
        i = bisect.bisect_right([r.info.start_key for r in regions], row) - 1
        return regions[max(i, 0)]

    def region_before(self, table: bytes, region: Region) -> Region | None:
        regions = self.enabled_table(table).regions
        starts = [r.info.start_key for r in regions]
        i = bisect.bisect_left(starts, region.info.start_key) - 1
        return regions[i] if i >= 0 else None

    def region_after(self, table: bytes, region: Region) -> Region | None:
        if not region.info.end_key:
            return None
        return self.locate(table, region.info.end_key)

    def check_families(self, desc: TableDescriptor, families, region: Region | None = None) -> None:
        for family in families:
            if family not in desc.families:
                where = region.info.region_name.decode("latin-1") if region else desc.text
                raise NoSuchColumnFamily(
                    f"Column family {family.decode('latin-1')} does not exist in region {where} "
                    f"in table {desc.describe()}")

    # ------------------------------------------------------------------------------------------ DDL
    def _write_descriptor(self, desc: TableDescriptor) -> None:
        path = posixpath.join(table_dir(self.config.rootdir, desc.name), ".tabledesc", ".tableinfo.0000000001")
        self.cluster.fs.write_file(path, desc.to_bytes(), overwrite=True)

    def sanity_check(self, desc: TableDescriptor) -> None:
        """TableDescriptorChecker: codecs the region servers load, coprocessor and split policy classes, sizes."""
        sanity_check(desc, self.config.compression_codecs, self.config.coprocessor_classes)

    def tables_in_namespace(self, namespace: str) -> int:
        with self.lock:
            return sum(1 for name in self.tables if validate_table_name(name)[0].decode("latin-1") == namespace)

    def create_table(self, desc: TableDescriptor, split_keys: list[bytes] = ()) -> list[Region]:
        validate_table_name(desc.name)
        self.namespaces.require(desc.namespace.decode("latin-1"))  # NamespaceNotFoundException
        if not desc.families:
            raise DoNotRetryIOException("Table should have at least one column family.")
        for fam in desc.families.values():
            fam.validate()
        self.sanity_check(desc)
        splits = sorted(set(split_keys))
        if b"" in splits:
            raise DoNotRetryIOException("Empty split key must not be passed in the split keys.")
        fs = self.cluster.fs
        with self.lock:
            if desc.name in self.tables:
                raise TableExists(desc.text)
            tdir = table_dir(self.config.rootdir, desc.name)
            region_id = now_ms()
            bounds = [b""] + splits + [b""]
            regions = [Region(RegionInfo(desc.name, bounds[i], bounds[i + 1], region_id), desc)
                       for i in range(len(bounds) - 1)]
            try:
                self._write_descriptor(desc)
                for region in regions:
                    fs.write_file(posixpath.join(tdir, region.encoded_name, ".regioninfo"), region.info.to_bytes())
            except HDFSError as e:
                fs.delete(tdir, recursive=True)
                raise HBaseError(f"create of table {desc.text} failed: {e.java_text()}") from None
            self.tables[desc.name] = TableState(desc, regions)
            live = self.live_servers()
            for i, region in enumerate(regions):
                if live:
                    self._least_loaded(live).add_region(region)
            self.changed.notify_all()
        log.info("created table %s with %d region(s)", desc.text, len(regions))
        return regions

    def _least_loaded(self, servers: list[RegionServer]) -> RegionServer:
        return min(servers, key=lambda rs: (len(rs.regions), rs.slot))

    def live_servers(self) -> list[RegionServer]:
        return [rs for rs in self.cluster.region_servers if rs is not None and rs.online]

    def disable_table(self, name: bytes) -> None:
        with self.lock:
            state = self.table(name)
            if not state.desc.enabled:
                raise TableNotEnabled(name.decode("latin-1"))
            for region in state.regions:
                rs = region.server
                if rs is not None:
                    with region.lock:
                        rs.flush(region)
                        rs.remove_region(region)
            state.desc.enabled = False
            self._write_descriptor(state.desc)
            self.changed.notify_all()

    def enable_table(self, name: bytes) -> None:
        with self.lock:
            state = self.table(name)
            if state.desc.enabled:
                raise TableNotDisabled(name.decode("latin-1"))
            fresh = []
            for region in state.regions:
                r = Region(region.info, state.desc)
                load_region(self.cluster.fs, self.config.rootdir, r)
                fresh.append(r)
            state.desc.enabled = True
            self._write_descriptor(state.desc)
            state.regions = fresh
            live = self.live_servers()
            for region in fresh:
                if live:
                    self._least_loaded(live).add_region(region)
            self.changed.notify_all()

    def delete_table(self, name: bytes) -> None:
        with self.lock:
            state = self.table(name)
            if state.desc.enabled:
                raise TableNotDisabled(name.decode("latin-1"))
            self.cluster.fs.delete(table_dir(self.config.rootdir, name), recursive=True)
            del self.tables[name]
            self.changed.notify_all()

    def alter_family(self, name: bytes, family: bytes, **attrs) -> None:
        """Change a family's settings (e.g. replication_scope, max_versions, ttl_s); adds the family if new."""
        from minihbase.schema import FamilyDescriptor

        with self.lock:
            state = self.table(name)
            current = state.desc.families.get(family)
            fam = dataclasses.replace(current) if current else FamilyDescriptor(family)
            for k, v in attrs.items():
                if not hasattr(fam, k) or k == "name":
                    raise DoNotRetryIOException(f"unknown column family attribute {k!r}")
                if k in ("values", "configuration"):
                    # setValue/setConfiguration: merged into what the family holds; an empty value removes.
                    merged = {**getattr(fam, k), **v}
                    v = {key: value for key, value in merged.items() if value != ""}
                setattr(fam, k, v)
            fam.validate()  # on a copy: a refused change changes nothing
            check_codecs([fam], self.config.compression_codecs)
            if current is not None:
                for k in attrs:
                    setattr(current, k, getattr(fam, k))
            else:
                state.desc.families[family] = fam
            self._write_descriptor(state.desc)

    def alter_table(self, name: bytes, readonly: bool | None = None, values: dict[str, str] | None = None,
                    remove: tuple[str, ...] = (), coprocessors: tuple[str, ...] = ()) -> TableDescriptor:
        """Change table attributes (HBase's modifyTable): READONLY, other values (`values`; "" removes one, as
        setValue does), values removed by key (`table_att_unset`), coprocessor specs added (`coprocessor$N`,
        N one past the highest). The new descriptor passes the sanity checks before anything changes; it is
        written first; then every region's in-flight mutation is let finish (HBase reopens the regions), so once
        this returns no region accepts a write it would refuse."""
        if readonly is not None and not isinstance(readonly, bool):
            raise DoNotRetryIOException(f"READONLY must be true or false, got {readonly!r}")
        with self.lock:
            state = self.table(name)
            new_values = dict(state.desc.values)
            for key, value in (values or {}).items():
                if value == "":
                    new_values.pop(key, None)
                else:
                    new_values[key] = value
            for key in remove:
                if key == "READONLY":
                    readonly = False
                    continue
                found = next((k for k in new_values if k.lower() == key.lower()), None)
                if found is None:
                    raise DoNotRetryIOException(f"{key} is not set on table {state.desc.text}")
                del new_values[found]
            for spec in coprocessors:
                new_values[next_coprocessor_key(new_values)] = spec
            changed = new_values != state.desc.values or (readonly is not None and readonly != state.desc.readonly)
            if changed:
                self.sanity_check(dataclasses.replace(state.desc, values=new_values))
                previous = (state.desc.readonly, state.desc.values)
                if readonly is not None:
                    state.desc.readonly = readonly
                state.desc.values = new_values
                try:
                    self._write_descriptor(state.desc)
                except HDFSError as e:
                    state.desc.readonly, state.desc.values = previous
                    raise HBaseError(f"modify of table {state.desc.text} failed: {e.java_text()}") from None
            regions = list(state.regions)
        for region in regions:  # outside the master lock: region locks are taken before it elsewhere
            with region.lock:
                pass
        log.info("altered table %s: READONLY=%s, values %s", state.desc.text, state.desc.readonly, state.desc.values)
        return state.desc

    # ------------------------------------------------------------------------------------------ recovery
    def server_died(self, rs: RegionServer, reason: str) -> None:
        if self._stopping or self.cluster.stopping:
            return
        log.warning("region server %s died (%s): recovering its regions", rs.servername, reason)
        self.submit("recover", self._recover)

    def startup_recovery(self) -> None:
        """At start every region is offline: open them all, replaying WALs left by a previous incarnation."""
        self._recover()

    def _dead_wal_dirs(self) -> list[str]:
        fs = self.cluster.fs
        wals = posixpath.join(self.config.rootdir, "WALs")
        if not fs.exists(wals):
            return []
        live = {rs.servername for rs in self.live_servers()}
        return [posixpath.join(wals, d) for d in fs.list_dir(wals) if d not in live]

    def _recover(self) -> None:
        """Reopen every offline region of an enabled table, replaying the edits in dead servers' WALs."""
        fs = self.cluster.fs
        live = self.live_servers()
        with self.lock:
            offline = [(state, r) for state in self.tables.values() if state.desc.enabled
                       for r in state.regions if r.server is None]
        dead_dirs = self._dead_wal_dirs()
        if not offline and not dead_dirs:
            return
        if not live:
            log.warning("no live region server: %d region(s) stay offline", len(offline))
            self.recovery_error = "no live region server"
            return
        try:
            splitting = []
            for d in dead_dirs:
                if not d.endswith("-splitting"):
                    fs.rename(d, d + "-splitting")
                    d += "-splitting"
                splitting.append(d)
            edits: dict[str, list] = {}
            wal_files = []
            for d in splitting:
                for name in sorted(fs.list_dir(d), key=lambda n: (n.rsplit(".", 1)[-1], n)):
                    path = posixpath.join(d, name)
                    wal_files.append(path)
                    for entry, _ in read_entries(fs.read_file(path)):
                        edits.setdefault(entry.encoded_region, []).append(entry)
        except HDFSError as e:
            self._recovery_failed(f"WAL splitting failed: {e.java_text()}")
            return
        failed = []
        for state, region in offline:
            if region.server is not None or state.desc.name not in self.tables:
                continue
            try:
                self._reopen(state, region, edits.get(region.encoded_name, []), live)
            except HDFSError as e:
                failed.append(f"{region.info.region_name.decode('latin-1')}: {e.java_text()}")
        if failed:
            self._recovery_failed("; ".join(failed))
            return
        try:
            for path in wal_files:
                new = posixpath.join(self.config.rootdir, "oldWALs", posixpath.basename(path))
                fs.mkdirs(posixpath.dirname(new))
                fs.rename(path, new)
                for listener in list(self.wal_archive_listeners):
                    listener(path, new)
            dead = []
            for d in splitting:
                fs.delete(d, recursive=True)
                dead.append(posixpath.basename(d)[:-len("-splitting")])
        except HDFSError as e:
            self._recovery_failed(f"archiving split WALs failed: {e.java_text()}")
            return
        self.recovery_error = None
        for servername in dead:
            for listener in list(self.dead_server_listeners):
                try:
                    listener(servername)
                except Exception:
                    log.exception("dead server listener failed")
        if self.config.balancer:
            self.submit("balance", self.balance)

    def _recovery_failed(self, why: str) -> None:
        self.recovery_error = why
        log.error("region recovery failed, will retry: %s", why)
        self._retry_later("recover", self._recover, 1.0)

    def _reopen(self, state: TableState, old: Region, entries: list, live: list[RegionServer]) -> None:
        region = Region(old.info, state.desc)
        fs = self.cluster.fs
        flushed = load_region(fs, self.config.rootdir, region)
        replay = [e for e in entries if e.seq_id > flushed]
        for e in replay:
            region.apply(e.cells, e.seq_id)
        if replay:
            cells, max_seq = region.take_flush_snapshot()
            base = region_dir(self.config.rootdir, region.info.table, region.encoded_name)
            written = []
            try:
                for family in {c.family for c in cells}:
                    path = posixpath.join(base, family.decode("latin-1"), new_store_file_name())
                    fs.write_file(path, store_file_bytes([c for c in cells if c.family == family], max_seq))
                    written.append(path)
            except HDFSError:
                for path in written:
                    fs.delete(path)
                raise
            region.flushed_seq = max_seq
            log.info("replayed %d WAL edit(s) into %s", len(replay), region)
        with self.lock:
            state.regions = [region if r is old else r for r in state.regions]
            target = self._least_loaded([rs for rs in live if rs.online] or live)
            target.add_region(region)
            self.changed.notify_all()

    # ------------------------------------------------------------------------------------------ split/balance
    def request_split(self, region: Region) -> None:
        """A region grew past the split size. HBase's split switch (`splitormerge_switch 'SPLIT', false`) and the
        table's SPLIT_ENABLED stop it; the request is simply dropped (the next size check asks again)."""
        state = self.tables.get(region.info.table)
        if not self.switches.enabled("split") or (state is not None and not state.desc.split_enabled):
            log.debug("split of %s skipped: split switch or SPLIT_ENABLED is off", region.encoded_name)
            self.split_requests_refused += 1
            return
        self.submit(("split", region.encoded_name), lambda: self._split(region))

    def split_region(self, table: bytes, split_key: bytes | None = None, timeout_s: float = 60.0) -> list[Region]:
        """An operator's split (the shell's `split 't', 'key'`, `Admin.split`): the region holding `split_key`
        splits there (no key: the table's biggest region, at its middle row). As SplitTableRegionProcedure does,
        refused while the split switch or the table's SPLIT_ENABLED is off. Returns the daughters."""
        state = self.enabled_table(table)
        if not self.switches.enabled("split") or not state.desc.split_enabled:
            raise DoNotRetryIOException(f"Split region of {table.decode('latin-1')} failed due to split switch off")
        if split_key:
            region = self.locate(table, split_key)
            if split_key == region.info.start_key:
                raise DoNotRetryIOException(f"Split row is equal to startkey: {split_key!r}")
        else:
            region = max(state.regions, key=lambda r: (r.data_size, r.info.start_key))
        done, out = threading.Event(), {}

        def run() -> None:
            try:
                out["daughters"] = self._split(region, split_key or None)
            finally:
                done.set()

        self.submit(("operator-split", id(done)), run)
        if not done.wait(timeout_s):
            raise DoNotRetryIOException(f"split of {region.encoded_name} did not finish within {timeout_s:g}s")
        if not out.get("daughters"):
            raise DoNotRetryIOException(f"region {region.encoded_name} was not split (too few rows, or it moved)")
        return list(out["daughters"])

    def _split(self, parent: Region, mid: bytes | None = None) -> tuple[Region, Region] | None:
        rs = parent.server
        state = self.tables.get(parent.info.table)
        if rs is None or not rs.online or state is None or parent not in state.regions:
            return None
        if not self.switches.enabled("split") or not state.desc.split_enabled:
            return None  # switched off since the request (SplitTableRegionProcedure checks at prepare)
        fs = self.cluster.fs
        started = time.monotonic()
        with parent.lock:
            if parent.server is not rs:
                return None
            mid = mid or parent.split_point()
            if mid is None or mid <= parent.info.start_key or (parent.info.end_key and mid >= parent.info.end_key):
                return None
            rs._flush(parent)
            region_id = max(now_ms(), parent.info.region_id + 1)
            info = parent.info
            left = Region(RegionInfo(info.table, info.start_key, mid, region_id), state.desc)
            right = Region(RegionInfo(info.table, mid, info.end_key, region_id), state.desc)
            parent.split_into(left, right, mid)
            written = []
            try:
                for d in (left, right):
                    base = region_dir(self.config.rootdir, d.info.table, d.encoded_name)
                    fs.write_file(posixpath.join(base, ".regioninfo"), d.info.to_bytes())
                    written.append(base)
                    for family, cells in d.snapshot_by_family().items():
                        if cells:
                            fs.write_file(posixpath.join(base, family.decode("latin-1"), new_store_file_name()),
                                          store_file_bytes(cells, d.max_seq))
            except HDFSError as e:
                for base in written:
                    fs.delete(base, recursive=True)
                log.error("split of %s failed, parent stays: %s", parent, e.java_text())
                return None
            with self.lock:
                rs.remove_region(parent)
                state.regions = sorted([r for r in state.regions if r is not parent] + [left, right],
                                       key=lambda r: r.info.start_key)
                rs.add_region(left)
                rs.add_region(right)
                self.changed.notify_all()
            fs.delete(region_dir(self.config.rootdir, info.table, parent.encoded_name), recursive=True)
        log.info("split %s at %r into %s and %s in %.2fs", parent, mid, left.encoded_name, right.encoded_name,
                 time.monotonic() - started)
        if self.config.balancer:
            self.submit("balance", self.balance)
        return left, right

    def balance(self) -> int:
        """Move regions from the most to the least loaded live servers until counts differ by at most one."""
        moves = 0
        while True:
            live = self.live_servers()
            if len(live) < 2:
                return moves
            most = max(live, key=lambda rs: (len(rs.regions), -rs.slot))
            least = self._least_loaded(live)
            if len(most.regions) - len(least.regions) <= 1:
                return moves
            region = sorted(most.regions.values(), key=lambda r: (r.info.table, r.info.start_key))[-1]
            if not self.move(region, least):
                return moves
            moves += 1

    def move(self, region: Region, dest: RegionServer) -> bool:
        src = region.server
        if src is None or src is dest or not dest.online:
            return False
        with region.lock:
            if region.server is not src:
                return False
            try:
                src._flush(region)
            except HDFSError:
                return False
            with self.lock:
                src.remove_region(region)
                dest.add_region(region)
                self.changed.notify_all()
        try:
            src._archive_flushed()
        except HDFSError:
            pass  # the source aborted; its recovery takes over
        log.info("moved %s from %s to %s", region.encoded_name, src.servername, dest.servername)
        return True
