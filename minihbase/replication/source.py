"""A replication source: one queue of one region server (HBase's ReplicationSource with its WAL reader and
shipper), as one thread.

The queue holds WAL names, oldest first; the head WAL is read from its position. A reader follows the WAL as it
is written and finds it wherever it is (`WALs/<server>/`, `WALs/<server>-splitting/`, `oldWALs/`, as HBase's
WALEntryStream does). A WAL is done when the reader is at its end and a newer WAL exists (normal queue), or at
its end (recovered queue: its server is dead, every WAL is closed). Entries are filtered (family scope, the
peer's table-CFs / namespaces / replicate_all, and cluster ids: an edit that already passed through the peer's
cluster is not sent back), batched by count and size, and shipped to a random live region server of the peer
cluster, retried there and then elsewhere. The position in ZooKeeper moves only after the sink acknowledged.
A disabled peer reads and ships nothing: its queue only grows.
"""
from __future__ import annotations

import http.client
import json
import logging
import os
import posixpath
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minihbase.replication import sink as sink_wire
from minihbase.replication.metrics import SourceMetrics, now_ms
from minihbase.wal import WAL_MAGIC, WALEntry, decode_records, parse_wal_name

if TYPE_CHECKING:
    from minihbase.replication.manager import ReplicationManager

log = logging.getLogger(__name__)
_RECORD_HEAD = 8  # u32 length + u32 crc
MISSING_WAL_ATTEMPTS = 40


class ShipFailed(Exception):
    pass


@dataclass
class Batch:
    wal: str
    start: int
    end: int
    eof: bool
    records: list[bytes] = field(default_factory=list)
    entries: int = 0
    last_write_time: int = 0
    bytes: int = 0


class Throttler:
    """HBase's ReplicationThrottler: at most bandwidth/10 bytes per 100 ms cycle (0 = unlimited)."""

    CYCLE_S = 0.1

    def __init__(self):
        self.cycle_start = time.monotonic()
        self.pushed = 0

    def wait(self, bandwidth: int, size: int, stopped) -> None:
        if bandwidth <= 0:
            return
        limit = bandwidth * self.CYCLE_S
        now = time.monotonic()
        if now - self.cycle_start >= self.CYCLE_S:
            self.cycle_start, self.pushed = now, 0
        if self.pushed > 0 and self.pushed + size > limit:
            # Sleep out this cycle, and as many more as the excess needs.
            cycles = max(1.0, (self.pushed + size - limit) / limit)
            end = self.cycle_start + self.CYCLE_S * cycles
            while not stopped() and time.monotonic() < end:
                time.sleep(min(0.05, max(0.0, end - time.monotonic())))
            self.cycle_start, self.pushed = time.monotonic(), 0
        self.pushed += size


class ReplicationSource:
    def __init__(self, manager: "ReplicationManager", queue_id: str, peer_id: str, wals: list[str],
                 positions: dict[str, int] | None = None, recovered: bool = False):
        self.manager = manager
        self.rs = manager.rs
        self.config = manager.rs.config
        self.queue_id = queue_id
        self.peer_id = peer_id
        self.recovered = recovered
        self.queue: deque[str] = deque(sorted(wals, key=_wal_order) if recovered else wals)
        self.positions = dict(positions or {})
        self.position = self.positions.get(self.queue[0], 0) if self.queue else 0
        self.metrics = SourceMetrics(queue_id, peer_id, recovered, manager.global_metrics)
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = False
        self.finished = False
        self._file = None
        self._file_wal: str | None = None
        self._missing = 0
        self._sink: tuple[str, int] | None = None
        self._conn: http.client.HTTPConnection | None = None
        self._throttle = Throttler()
        self._thread = threading.Thread(target=self._run, name=f"rs{self.rs.slot}-source-{queue_id}"[:60],
                                        daemon=True)
        self._update_queue_metrics()

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> "ReplicationSource":
        self._thread.start()
        return self

    def stop(self, join: bool = True) -> None:
        self.stopped = True
        self.wake.set()
        if join and self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(10)
        self._close_file()
        self._close_conn()

    def enqueue(self, wal: str) -> None:
        with self.lock:
            self.queue.append(wal)
            self._update_queue_metrics()
        self.wake.set()

    def _update_queue_metrics(self) -> None:
        self.metrics.size_of_log_queue = len(self.queue)
        self.metrics.oldest_wal_created_ms = _wal_order(self.queue[0])[0] if self.queue else 0

    def _sleep(self, seconds: float | None = None) -> None:
        self.wake.wait(self.config.replication_sleep_s if seconds is None else seconds)
        self.wake.clear()

    # ------------------------------------------------------------------------------------------ main loop
    def _run(self) -> None:
        self.metrics.running = True
        try:
            while not self.stopped and self.rs.online:
                peer = self.manager.peer(self.peer_id)
                if peer is None:
                    return  # removed: the manager terminates this source
                if not peer.enabled:
                    self._sleep(0.2)
                    continue
                try:
                    batch = self._read_batch(peer)
                except OSError as e:
                    log.warning("source %s on %s: reading %s failed: %s", self.queue_id, self.rs.servername,
                                self._file_wal, e)
                    self._close_file()
                    self._sleep(0.5)
                    continue
                if batch is None:
                    if self.recovered and not self.queue:
                        self._finish_recovered()
                        return
                    self._sleep()
                    continue
                if batch.records:
                    if not self._ship(batch):
                        continue  # stopped, peer removed or disabled: the batch is read again later
                    self.metrics.set_age(batch.last_write_time)
                elif batch.end > batch.start:
                    self.metrics.set_age(now_ms())  # only filtered entries: we are current
                self._commit(batch)
        except Exception:
            if not self.stopped and self.rs.online:
                log.exception("replication source %s on %s died", self.queue_id, self.rs.servername)
        finally:
            self.metrics.running = False

    # ------------------------------------------------------------------------------------------ reading
    def _locations(self, wal: str) -> list[str]:
        root = self.config.rootdir
        server, _ = parse_wal_name(wal)
        return [posixpath.join(root, "WALs", server, wal), posixpath.join(root, "WALs", server + "-splitting", wal),
                posixpath.join(root, "oldWALs", wal)]

    def _open(self, wal: str):
        if self._file is not None and self._file_wal == wal:
            return self._file
        self._close_file()
        fs = self.rs.cluster.fs
        for path in self._locations(wal):
            try:
                self._file = open(fs.local(path), "rb")
                self._file_wal = wal
                return self._file
            except FileNotFoundError:
                continue
        return None

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
        self._file, self._file_wal = None, None

    def _read_batch(self, peer) -> Batch | None:
        """The next batch from the head WAL, or None when there is nothing new yet."""
        with self.lock:
            if not self.queue:
                return None
            wal = self.queue[0]
            final = self.recovered or len(self.queue) > 1  # observed before reading: the WAL is closed
        f = self._open(wal)
        if f is None:
            self._missing += 1
            if self._missing < MISSING_WAL_ATTEMPTS:
                self._sleep(0.05)
                return None
            log.error("source %s on %s: WAL %s is in the queue but in none of WALs/, WALs/*-splitting/, oldWALs/;"
                      " skipping it", self.queue_id, self.rs.servername, wal)
            self._missing = 0
            return Batch(wal, self.position, self.position, eof=True)
        self._missing = 0
        start = max(self.position, len(WAL_MAGIC))
        size = os.fstat(f.fileno()).st_size
        if size <= start:
            if final:
                return Batch(wal, self.position, start, eof=True)
            return None
        cfg = self.config
        max_bytes = cfg.replication_batch_bytes
        if peer.config.bandwidth > 0:
            max_bytes = max(1, min(max_bytes, int(peer.config.bandwidth * Throttler.CYCLE_S)))
        f.seek(start)
        chunk = f.read(min(size - start, max_bytes))
        records, end = decode_records(chunk, start)
        if not records and len(chunk) >= _RECORD_HEAD:
            need = _RECORD_HEAD + int.from_bytes(chunk[:4], "big")
            if need > len(chunk) and start + need <= size:  # one record larger than the batch size
                f.seek(start)
                chunk = f.read(need)
                records, end = decode_records(chunk, start)
        if len(records) > cfg.replication_batch_entries:
            records = records[:cfg.replication_batch_entries]
            end = records[-1][2]
        if not records:
            if final:  # a torn tail of a closed WAL (a crash mid-write): the rest is unreadable
                if start < size:
                    self.metrics.incr("uncleanlyClosedLogs")
                return Batch(wal, self.position, start, eof=True)
            return None
        batch = Batch(wal, start, end, eof=final and end >= size)
        self._filter(peer, chunk, start, records, batch)
        return batch

    def _filter(self, peer, chunk: bytes, base: int, records, batch: Batch) -> None:
        metrics = self.metrics
        local_id = self.rs.cluster.cluster_id
        peer_id_of_cluster = self.manager.peer_cluster_id(peer)
        scopes_of = self.manager.scopes
        config = peer.config
        read_bytes = filtered = 0
        offset = 0
        for entry, size, _end in records:
            raw = chunk[offset:offset + size]
            offset += size
            read_bytes += size
            metrics.timestamp_next_to_replicate = entry.write_time
            if peer_id_of_cluster is not None and peer_id_of_cluster in entry.cluster_ids:
                filtered += 1
                continue
            table = entry.table.decode("latin-1")
            scopes = scopes_of(entry.table)
            if scopes is None or not config.replicates_table(table):
                filtered += 1
                continue
            cells = [c for c in entry.cells if scopes.get(c.family) == 1
                     and config.replicates(table, c.family.decode("latin-1"))]
            if not cells:
                filtered += 1
                continue
            ids = entry.cluster_ids if local_id in entry.cluster_ids else entry.cluster_ids + [local_id]
            if len(cells) != len(entry.cells) or ids is not entry.cluster_ids:
                raw = WALEntry(entry.seq_id, entry.write_time, entry.table, entry.encoded_region, ids,
                               cells).encode()
            batch.records.append(raw)
            batch.entries += 1
            batch.bytes += len(raw)
            batch.last_write_time = entry.write_time
        metrics.incr("logEditsRead", len(records))
        metrics.incr("logReadInBytes", read_bytes)
        if filtered:
            metrics.incr("logEditsFiltered", filtered)

    # ------------------------------------------------------------------------------------------ shipping
    def _ship(self, batch: Batch) -> bool:
        body = sink_wire.encode_batch(batch.records)
        attempt = 0
        while not self.stopped and self.rs.online:
            peer = self.manager.peer(self.peer_id)
            if peer is None or not peer.enabled:
                return False
            self._throttle.wait(peer.config.bandwidth, len(body), lambda: self.stopped)
            try:
                self._post(peer, body)
            except ShipFailed as e:
                attempt += 1
                self.metrics.incr("failedBatches")
                self.metrics.refresh_age()
                if attempt == 1 or attempt % 20 == 0:
                    log.warning("source %s on %s: shipping %d entries to peer %s failed (attempt %d): %s",
                                self.queue_id, self.rs.servername, batch.entries, self.peer_id, attempt, e)
                if attempt % 3 == 0:
                    self._sink = None  # HBase retries a sink a few times, then picks another
                self._close_conn()
                self._sleep(min(self.config.replication_sleep_s * attempt, 1.0))
                continue
            self.metrics.incr("shippedBatches")
            self.metrics.incr("shippedOps", batch.entries)
            self.metrics.incr("shippedBytes", batch.bytes)
            return True
        return False

    def _post(self, peer, body: bytes) -> None:
        if self._sink is None:
            sinks = self.manager.peer_sinks(peer)
            if not sinks:
                raise ShipFailed(f"no live region server in peer cluster {peer.config.cluster_key}")
            self._sink = random.choice(sinks)
            self._close_conn()
        host, port = self._sink
        try:  # a secured cluster presents its hbase principal's ticket for the sink's principal
            headers = {"Content-Type": "application/octet-stream", **self.manager.sink_auth(peer, host)}
        except Exception as e:
            self._sink = None
            raise ShipFailed(f"sink {host}:{port}: {e}") from None
        try:
            if self._conn is None:
                self._conn = http.client.HTTPConnection(host, port, timeout=self.config.replication_rpc_timeout_s)
            self._conn.request("POST", sink_wire.PATH, body, headers)
            response = self._conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as e:
            self._sink = None
            raise ShipFailed(f"sink {host}:{port}: {type(e).__name__}: {e}") from None
        if response.status != 200:
            try:
                reason = json.loads(payload).get("error")
            except ValueError:
                reason = payload[:200]
            if response.status in (404, 503):
                self._sink = None
            if response.status in (401, 403):  # a secured sink refused us: say which ticket it was shown
                reason = f"{reason}; {self.manager.sink_auth_note(peer, host)}"
            raise ShipFailed(f"sink {host}:{port} answered {response.status}: {reason}")

    def _close_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    # ------------------------------------------------------------------------------------------ positions
    def _commit(self, batch: Batch) -> None:
        """After the sink acknowledged (or nothing needed shipping): record progress in ZooKeeper."""
        storage = self.manager.queue_storage
        me = self.rs.servername
        if batch.eof:
            storage.remove_wal(me, self.queue_id, batch.wal)
            with self.lock:
                if self.queue and self.queue[0] == batch.wal:
                    self.queue.popleft()
                self.position = self.positions.get(self.queue[0], 0) if self.queue else 0
                self._update_queue_metrics()
            self._close_file()
            self.metrics.incr("completedLogs")
            return
        if batch.end != self.position:
            storage.set_position(me, self.queue_id, batch.wal, batch.end)
            self.position = batch.end

    def _finish_recovered(self) -> None:
        """A recovered queue shipped to its end: its znode goes, its metrics go (HBase's clear())."""
        self.manager.queue_storage.remove_queue(self.rs.servername, self.queue_id)
        self.metrics.incr("completedRecoverQueues")
        self.finished = True
        log.info("recovered queue %s on %s finished", self.queue_id, self.rs.servername)
        self.manager.source_finished(self)


def _wal_order(wal: str) -> tuple[int, str]:
    try:
        return parse_wal_name(wal)[1], wal
    except ValueError:
        return 0, wal
