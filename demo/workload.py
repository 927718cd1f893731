"""Sample data, a live writer and an independent comparison for the demo and the end-to-end tests.

Deliberately independent of the toolkit: it talks to both clusters through stock happybase only, so a bug in
the toolkit's copy or verification cannot hide itself here.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator


@dataclass(frozen=True)
class SampleTable:
    name: str
    families: dict[str, dict]  # family -> happybase options (max_versions, ...)
    split_keys: tuple[bytes, ...]
    rows: int

    def row_key(self, i: int) -> bytes:
        # Keys spread over every region: a hex prefix from a hash of i.
        return b"%02x-%08d" % ((i * 2654435761) % 256, i)


def sample_tables(total_rows: int = 100_000) -> list[SampleTable]:
    """Several multi-region tables, about `total_rows` rows in all."""
    splits = tuple(b"%02x" % b for b in (0x40, 0x80, 0xC0))
    return [
        SampleTable("users", {"profile": {"max_versions": 1}, "activity": {"max_versions": 3}}, splits,
                    total_rows * 4 // 10),
        SampleTable("orders", {"d": {"max_versions": 3}}, splits, total_rows * 4 // 10),
        SampleTable("events", {"e": {"max_versions": 1}}, splits[:2], total_rows * 2 // 10),
    ]


def _cells(table: SampleTable, i: int, version: int = 0) -> dict[bytes, bytes]:
    out = {}
    for fam in table.families:
        out[f"{fam}:a".encode()] = b"%s-%d-v%d" % (fam.encode(), i, version)
        if i % 3 == 0:
            out[f"{fam}:b".encode()] = b"x" * (16 + i % 48)
    return out


def load(connection, table: SampleTable, batch_size: int = 2000, base_ts: int | None = None) -> int:
    """Write the table's rows, with distinct timestamps per row (older rows get older timestamps)."""
    t = connection.table(table.name)
    base_ts = base_ts or int(time.time() * 1000) - 10 * table.rows
    written = 0
    with t.batch(batch_size=batch_size) as b:
        for i in range(table.rows):
            # A per-row timestamp: the copy must keep it, not stamp its own.
            b.put(table.row_key(i), _cells(table, i))
            written += 1
    # Give a slice of rows an older, explicit timestamp and a second version.
    t2 = connection.table(table.name)
    for i in range(0, table.rows, 97):
        t2.put(table.row_key(i), _cells(table, i, version=1), timestamp=base_ts + i)
    return written


@dataclass
class WriterStats:
    puts: int = 0
    overwrites: int = 0
    deletes: int = 0
    column_deletes: int = 0
    errors: int = 0
    last_error: str | None = None
    touched: set = field(default_factory=set)

    def as_dict(self) -> dict:
        return {"puts": self.puts, "overwrites": self.overwrites, "deletes": self.deletes,
                "column_deletes": self.column_deletes, "errors": self.errors}


class LiveWriter:
    """Puts, overwrites and deletes on the source until stopped, as production traffic would."""

    def __init__(self, connect, tables: list[SampleTable], ops_per_second: float = 200.0, seed: int = 7):
        self._connect = connect
        self.tables = tables
        self.interval = 1.0 / ops_per_second
        self.random = random.Random(seed)
        self.stats = WriterStats()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-writer", daemon=True)
        self._next_new = {t.name: t.rows for t in tables}

    def start(self) -> "LiveWriter":
        self._thread.start()
        return self

    def stop(self) -> WriterStats:
        self._stop.set()
        self._thread.join(30)
        return self.stats

    def _one(self, conn) -> None:
        table = self.random.choice(self.tables)
        t = conn.table(table.name)
        roll = self.random.random()
        if roll < 0.35:
            i = self._next_new[table.name]
            self._next_new[table.name] += 1
            t.put(table.row_key(i), _cells(table, i))
            self.stats.puts += 1
        elif roll < 0.80:
            i = self.random.randrange(self._next_new[table.name])
            t.put(table.row_key(i), _cells(table, i, version=self.random.randrange(2, 1000)))
            self.stats.overwrites += 1
        elif roll < 0.92:
            i = self.random.randrange(self._next_new[table.name])
            t.delete(table.row_key(i))
            self.stats.deletes += 1
        else:
            i = self.random.randrange(self._next_new[table.name])
            fam = self.random.choice(list(table.families))
            t.delete(table.row_key(i), columns=[f"{fam}:a".encode()])
            self.stats.column_deletes += 1

    def _run(self) -> None:
        conn = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = self._connect()
                self._one(conn)
            except Exception as e:  # the writer keeps going through transient failures, and counts them
                self.stats.errors += 1
                self.stats.last_error = repr(e)
                conn = None
            self._stop.wait(self.interval)


def _latest_cells(connection, table: str) -> Iterator[tuple[bytes, dict]]:
    yield from connection.table(table).scan(include_timestamp=True, batch_size=1000)


@dataclass
class Comparison:
    table: str
    source_rows: int = 0
    target_rows: int = 0
    matching_rows: int = 0
    content_different: int = 0
    only_in_source: int = 0
    only_in_target: int = 0
    sample: list = field(default_factory=list)

    @property
    def differences(self) -> int:
        return self.content_different + self.only_in_source + self.only_in_target

    def as_dict(self) -> dict:
        return {"source_rows": self.source_rows, "target_rows": self.target_rows,
                "matching_rows": self.matching_rows, "content_different": self.content_different,
                "only_in_source": self.only_in_source, "only_in_target": self.only_in_target,
                "differences": self.differences, "sample": self.sample}


def compare(source_conn, target_conn, table: str, target_table: str | None = None, sample: int = 10) -> Comparison:
    """Every row's latest cells (value and timestamp, per column) on both sides, merge-joined by row key."""
    result = Comparison(table)
    src = _latest_cells(source_conn, table)
    dst = _latest_cells(target_conn, target_table or table)
    a, b = next(src, None), next(dst, None)

    def note(kind: str, key: bytes) -> None:
        if len(result.sample) < sample:
            result.sample.append({"row": key.decode("latin-1"), "kind": kind})

    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            result.source_rows += 1
            result.only_in_source += 1
            note("only_in_source", a[0])
            a = next(src, None)
        elif a is None or b[0] < a[0]:
            result.target_rows += 1
            result.only_in_target += 1
            note("only_in_target", b[0])
            b = next(dst, None)
        else:
            result.source_rows += 1
            result.target_rows += 1
            if a[1] == b[1]:
                result.matching_rows += 1
            else:
                result.content_different += 1
                note("content_different", a[0])
            a, b = next(src, None), next(dst, None)
    return result
