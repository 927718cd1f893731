"""A client fleet that switches clusters when told: threads putting unique rows through Thrift2 to the active
cluster, every acknowledged write recorded with the instant HBase accepted it. What a cut-over's write freeze is
measured with (bench/bench_cutover.py, the cut-over tests): the last write the old cluster accepted, the first the
new one accepted, writes lost (acknowledged, then not on the cluster the clients ended on) and writes accepted by
both sides after the switch.

A refused write (`region is read only`, `Insufficient permissions`, a sync peer's `... in STANDBY state`: the
cut-over's fence) is not retried on the same cluster: the thread waits to be switched and writes it there, as a
client that was told "writes are frozen" would. Any other failure is retried where it was (a region moving).
`switch_to(name)` returns at once; each thread takes the new cluster at its next write. A switch file
(`switch_file`) does the same from another process: its content names the cluster (what a cut-over's
`switch_command` writes).
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

FENCE_ERRORS = ("region is read only", "insufficient permissions", "accessdeniedexception",
                "in standby state")  # the last: a synchronous-replication peer's STANDBY cluster (HBase 3.x)


@dataclass
class Ack:
    cluster: str
    table: str
    row: bytes
    started: float  # when the write was sent (epoch s)
    accepted: float  # when HBase acknowledged it


@dataclass
class WriterLog:
    acks: list[Ack] = field(default_factory=list)
    refusals: list[tuple[str, float, str]] = field(default_factory=list)  # (cluster, when, error)
    errors: list[tuple[str, float, str]] = field(default_factory=list)  # other failures (retried)
    switches: list[tuple[str, float]] = field(default_factory=list)  # (cluster, when told)
    unacknowledged: int = 0  # writes in flight when stopped


def row_key(thread: int, seq: int) -> bytes:
    """Spread over a HexStringSplit table's regions, unique per thread and sequence."""
    return hashlib.md5(f"{thread}/{seq}".encode()).hexdigest()[:8].encode() + f"-{thread}-{seq:08d}".encode()


class SwitchingWriter:
    def __init__(self, connect: Callable[[str], Any], clusters: tuple[str, str], tables: list[str], *,
                 active: str | None = None, threads: int = 4, ops_per_second: float = 50.0,
                 family: bytes | dict[str, bytes] = b"f",
                 switch_file: str | Path | None = None, clock: Callable[[], float] = time.time):
        self.connect = connect  # cluster name -> a client with put(table, [(row, {col: value}, ts)])
        self.clusters = clusters
        self.tables = tables
        self.active = active or clusters[0]
        self.threads = threads
        self.interval = threads / ops_per_second if ops_per_second > 0 else 0.0
        # the column written: `family:v`, one family for every table or one per table
        self.columns = {t: (family[t] if isinstance(family, dict) else family) + b":v" for t in tables}
        self.switch_file = Path(switch_file) if switch_file else None
        self.clock = clock
        self.log = WriterLog()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._switched = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._file_seen: str | None = None

    # ---------------------------------------------------------------------------------------------- control
    def start(self) -> "SwitchingWriter":
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i,), daemon=True, name=f"switching-writer-{i}")
            t.start()
            self._workers.append(t)
        return self

    def switch_to(self, cluster: str) -> None:
        if cluster not in self.clusters:
            raise ValueError(f"unknown cluster {cluster!r}")
        with self._switched:
            self.active = cluster
            self.log.switches.append((cluster, self.clock()))
            self._switched.notify_all()

    def _poll_file(self) -> None:
        if self.switch_file is None:
            return
        try:
            text = self.switch_file.read_text().strip()
        except OSError:
            return
        if text and text != self._file_seen and text in self.clusters:
            self._file_seen = text
            if text != self.active:
                self.switch_to(text)

    def stop(self, timeout_s: float = 60.0) -> WriterLog:
        self._stop.set()
        with self._switched:
            self._switched.notify_all()
        for t in self._workers:
            t.join(timeout_s)
        return self.log

    # ---------------------------------------------------------------------------------------------- work
    def _run(self, index: int) -> None:
        clients: dict[str, Any] = {}
        seq = 0
        try:
            while not self._stop.is_set():
                seq += 1
                table = self.tables[seq % len(self.tables)]
                row = row_key(index, seq)
                self._write_until_acked(clients, table, row)
                if self.interval:
                    self._stop.wait(self.interval)
        finally:
            for client in clients.values():
                try:
                    client.close()
                except Exception:
                    pass

    def _write_until_acked(self, clients: dict[str, Any], table: str, row: bytes) -> None:
        refused_on: str | None = None
        while not self._stop.is_set():
            self._poll_file()
            cluster = self.active
            if refused_on == cluster:  # fenced here: wait to be switched
                with self._switched:
                    self._switched.wait(0.05)
                continue
            try:
                client = clients.get(cluster)
                if client is None:
                    client = clients[cluster] = self.connect(cluster)
                started = self.clock()
                client.put(table, [(row, {self.columns[table]: f"{cluster}@{started:.3f}".encode()}, None)])
                accepted = self.clock()
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                text = f"{type(e).__name__}: {e}"
                when = self.clock()
                if any(marker in text.lower() for marker in FENCE_ERRORS):
                    with self._lock:
                        self.log.refusals.append((cluster, when, text[:300]))
                    refused_on = cluster
                else:
                    with self._lock:
                        self.log.errors.append((cluster, when, text[:300]))
                    clients.pop(cluster, None)
                    self._stop.wait(0.05)
                continue
            with self._lock:
                self.log.acks.append(Ack(cluster, table, row, started, accepted))
            return
        with self._lock:
            self.log.unacknowledged += 1


def freeze_figures(log: WriterLog, old: str, new: str, since: float = 0.0) -> dict[str, Any]:
    """For a switch from `old` to `new` (acks after `since`): the last write `old` accepted before the first `new`
    accepted, the write freeze between them, and the writes `old` accepted after `new`'s first (both sides)."""
    acks = [a for a in log.acks if a.accepted >= since]
    first_new = min((a.accepted for a in acks if a.cluster == new), default=None)
    if first_new is None:
        return {"write_freeze_s": None, "first_new_accept": None, "last_old_accept": None,
                "writes_accepted_by_both": 0}
    last_old = max((a.accepted for a in acks if a.cluster == old and a.accepted <= first_new), default=None)
    both = sum(1 for a in acks if a.cluster == old and a.accepted > first_new)
    return {"write_freeze_s": None if last_old is None else round(first_new - last_old, 3),
            "first_new_accept": first_new, "last_old_accept": last_old, "writes_accepted_by_both": both}


def lost_writes(log: WriterLog, read_rows: Callable[[str, list[bytes]], set[bytes]],
                accepted_before: float | None = None) -> list[tuple[str, bytes]]:
    """Acknowledged writes absent from a cluster: `read_rows(table, keys)` gives the keys present there. With
    `accepted_before`, only the writes acknowledged before that instant: a writer still running keeps adding acks
    that replication has not shipped yet, so "every write so far" must be a fixed set to be waited for."""
    by_table: dict[str, list[bytes]] = {}
    acks = list(log.acks)  # the writer's threads append while this reads
    for a in acks:
        if accepted_before is not None and a.accepted >= accepted_before:
            continue
        by_table.setdefault(a.table, []).append(a.row)
    lost = []
    for table, keys in by_table.items():
        present = set()
        for i in range(0, len(keys), 1000):
            present |= read_rows(table, keys[i:i + 1000])
        lost += [(table, k) for k in keys if k not in present]
    return lost


def lost_writes_on(cluster, log: WriterLog, timeout_s: float = 180.0) -> list[tuple[str, bytes]]:
    """`lost_writes` on `cluster` read through the toolkit's data path, read again every 5 s until none is missing
    or `timeout_s` passed (replication ships the last writes a moment after they were acknowledged)."""
    from hbase_migration.data.datapath import open_data_path

    deadline = time.time() + timeout_s
    while True:
        with open_data_path(cluster) as path:
            missing = lost_writes(log, lambda t, keys: set(path.get_rows(t, keys).keys()))
        if not missing or time.time() > deadline:
            return missing
        time.sleep(5)
