"""Sample data, a live writer and an independent comparison for the demo and the end-to-end tests.

Deliberately independent of the toolkit: it talks to both clusters through a plain thriftpy2 client of HBase's
Thrift2 IDL (the test beds' copy of it, `bedkit/hbase2.thrift`, not the toolkit's), so a bug in the toolkit's
copy or verification cannot hide itself here. Thrift2 is what lets it write cells at chosen timestamps, delete
exactly one version, and read every version of every column back.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

IDL = Path(__file__).resolve().parents[1] / "bedkit" / "hbase2.thrift"
ALL_VERSIONS = (1 << 31) - 1
_T: Any = None


def idl() -> Any:
    global _T
    if _T is None:
        import thriftpy2

        _T = thriftpy2.load(str(IDL), module_name="demo_hbase2_thrift")
    return _T


class Thrift2:
    """One connection to a cluster's Thrift2 gateway (`endpoint` as `minihbase endpoints --json` gives it)."""

    def __init__(self, endpoint: dict, timeout_ms: int = 60_000, login: tuple[str, str] | None = None):
        """`login`: (principal, keytab) on a secured cluster, whose connection extras say how its gateways
        authenticate (demo/secure.py, no toolkit code)."""
        host, port = endpoint["thrift2"]["host"], endpoint["thrift2"]["port"]
        extra = (endpoint.get("connection") or {}).get("extra") or {}
        if login is None or not (extra.get("thrift_qop") or extra.get("thrift_http")):
            from thriftpy2.rpc import make_client

            self.client = make_client(idl().THBaseService, host, port, timeout=timeout_ms)
            return
        from thriftpy2.protocol.binary import TBinaryProtocol
        from thriftpy2.thrift import TClient

        from demo import secure

        transport = secure.thrift_transport(host, port, extra, secure.credentials(*login), login[0], timeout_ms)
        self.client = TClient(idl().THBaseService, TBinaryProtocol(transport))

    def close(self) -> None:
        self.client.close()

    def put(self, table: str, rows: list[tuple[bytes, dict[bytes, bytes], int | None]]) -> None:
        """(row, {b"fam:qual": value}, timestamp or None for the server's clock) each."""
        T = idl()
        puts = []
        for row, cells, ts in rows:
            values = [T.TColumnValue(family=c.partition(b":")[0], qualifier=c.partition(b":")[2], value=v,
                                     timestamp=ts) for c, v in cells.items()]
            puts.append(T.TPut(row=row, columnValues=values))
        self.client.putMultiple(table.encode(), puts)

    def delete(self, table: str, row: bytes, column: bytes | None = None, ts: int | None = None) -> None:
        """The whole row; or every version of a column; or, with `ts`, exactly that version (DELETE_COLUMN)."""
        T = idl()
        if column is None:
            tdel = T.TDelete(row=row)
        else:
            family, _, qualifier = column.partition(b":")
            kind = T.TDeleteType.DELETE_COLUMN if ts is not None else T.TDeleteType.DELETE_COLUMNS
            tdel = T.TDelete(row=row, columns=[T.TColumn(family=family, qualifier=qualifier, timestamp=ts)],
                             deleteType=kind)
        self.client.deleteMultiple(table.encode(), [tdel])

    def versions(self, table: str, row: bytes) -> dict[bytes, list[tuple[int, bytes]]]:
        T = idl()
        result = self.client.get(table.encode(), T.TGet(row=row, maxVersions=ALL_VERSIONS))
        return _columns(result)

    def scan(self, table: str, batch: int = 1000) -> Iterator[tuple[bytes, dict]]:
        """Every row with every version of every column: {b"fam:qual": [(ts, value), ...newest first]}."""
        T = idl()
        sid = self.client.openScanner(table.encode(), T.TScan(caching=batch, maxVersions=ALL_VERSIONS))
        try:
            while True:
                results = self.client.getScannerRows(sid, batch)
                if not results:
                    return
                for r in results:
                    yield r.row, _columns(r)
        finally:
            self.client.closeScanner(sid)


def _columns(result: Any) -> dict[bytes, list[tuple[int, bytes]]]:
    out: dict[bytes, list[tuple[int, bytes]]] = {}
    for cv in result.columnValues or ():
        out.setdefault(cv.family + b":" + cv.qualifier, []).append((cv.timestamp, cv.value))
    for versions in out.values():
        versions.sort(reverse=True)
    return out


@dataclass(frozen=True)
class SampleTable:
    name: str
    families: dict[str, dict]  # family -> options (max_versions = HBase VERSIONS)
    split_keys: tuple[bytes, ...]
    rows: int

    def row_key(self, i: int) -> bytes:
        # Keys spread over every region: a hex prefix from a hash of i.
        return b"%02x-%08d" % ((i * 2654435761) % 256, i)

    def multi_version(self) -> list[str]:
        return [f for f, o in self.families.items() if o.get("max_versions", 1) > 1]


def sample_tables(total_rows: int = 100_000, prefix: str = "") -> list[SampleTable]:
    """Several multi-region tables, about `total_rows` rows in all; families keeping 1, 2 and 3 versions. `prefix`
    keeps tables apart on clusters other runs share (a test session's realhbase)."""
    splits = tuple(b"%02x" % b for b in (0x40, 0x80, 0xC0))
    return [
        SampleTable(f"{prefix}users", {"profile": {"max_versions": 1}, "activity": {"max_versions": 3}}, splits,
                    total_rows * 4 // 10),
        SampleTable(f"{prefix}orders", {"d": {"max_versions": 3}, "h": {"max_versions": 2}}, splits,
                    total_rows * 4 // 10),
        SampleTable(f"{prefix}events", {"e": {"max_versions": 1}}, splits[:2], total_rows * 2 // 10),
    ]


SAMPLE_NAMES = ("users", "orders", "events")


def table_names(text: str) -> list[str]:
    """A --tables argument: some of sample_tables' tables, by name, comma-separated (argparse's type)."""
    import argparse

    names = [n for n in text.split(",") if n]
    unknown = sorted(set(names) - set(SAMPLE_NAMES))
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"unknown table(s) {', '.join(unknown) or text!r}: "
                                         f"name some of {', '.join(SAMPLE_NAMES)}, comma-separated")
    return names


def chosen_tables(total_rows: int, prefix: str = "", names: list[str] | None = None) -> list[SampleTable]:
    """sample_tables, only those `names` (None: all)."""
    return [t for t in sample_tables(total_rows, prefix) if not names or t.name[len(prefix):] in names]


def _cells(table: SampleTable, i: int, version: int = 0) -> dict[bytes, bytes]:
    out = {}
    for fam in table.families:
        out[f"{fam}:a".encode()] = b"%s-%d-v%d" % (fam.encode(), i, version)
        if i % 3 == 0:
            out[f"{fam}:b".encode()] = b"x" * (16 + i % 48)
    return out


def load(client: Thrift2, table: SampleTable, batch_size: int = 2000, base_ts: int | None = None) -> int:
    """Write the table's rows: every row at its own old explicit timestamp, and in the families that keep
    history 1 to 3 puts per column at older timestamps (some older than the family keeps: HBase drops them)."""
    base_ts = base_ts or int(time.time() * 1000) - 100 * table.rows
    rng = random.Random(table.name)
    pending: list = []
    for i in range(table.rows):
        ts = base_ts + 50 * i  # a per-row timestamp: the copy must keep it, not stamp its own
        pending.append((table.row_key(i), _cells(table, i), ts))
        for fam in table.multi_version():
            for v in range(rng.randint(0, 2)):  # 1 to 3 puts per column in all
                pending.append((table.row_key(i), {f"{fam}:a".encode(): b"%s-%d-old%d" % (fam.encode(), i, v)},
                                ts - 10 * (v + 1)))
        if len(pending) >= batch_size:
            client.put(table.name, pending)
            pending = []
    if pending:
        client.put(table.name, pending)
    return table.rows


@dataclass
class WriterStats:
    puts: int = 0
    overwrites: int = 0
    old_puts: int = 0
    deletes: int = 0
    column_deletes: int = 0
    version_deletes: int = 0
    masked_puts: int = 0  # puts older than a delete made before T0 on their row (masked there)
    errors: int = 0
    last_error: str | None = None

    def as_dict(self) -> dict:
        return {"puts": self.puts, "overwrites": self.overwrites, "old_puts": self.old_puts, "deletes": self.deletes,
                "column_deletes": self.column_deletes, "version_deletes": self.version_deletes,
                "masked_puts": self.masked_puts, "errors": self.errors}


def delete_rows(client: Thrift2, tables: list[SampleTable], per_table: int,
                seed: int = 11) -> list[tuple[str, bytes, str, int]]:
    """Delete `per_table` loaded rows of each table (before T0: the copy finds their delete markers); (table, row,
    one of its families, a time just before the delete) each, for `LiveWriter(deleted_before=...)`."""
    rng = random.Random(seed)
    out = []
    for table in tables:
        for i in rng.sample(range(table.rows), min(per_table, table.rows)):
            before = int(time.time() * 1000) - 1
            client.delete(table.name, table.row_key(i))
            out.append((table.name, table.row_key(i), rng.choice(sorted(table.families)), before))
    return out


class LiveWriter:
    """Edits on the source until stopped, as production traffic would: new rows, new versions of existing
    columns, puts at old explicit timestamps (some older than the versions a family keeps), row deletes,
    column deletes (every version) and single-version deletes (exactly one older version)."""

    def __init__(self, connect, tables: list[SampleTable], ops_per_second: float = 200.0, seed: int = 7,
                 deleted_before: list[tuple[str, bytes, str, int]] = ()):
        """`deleted_before`: (table, row, a family, ms) of rows deleted before T0 (`delete_rows`); one edit in ten
        is then a put to one of them at a timestamp older than its delete: masked on the source, and on the target
        only if the copy carried the delete marker (docs/data-path.md)."""
        self._connect = connect
        self.deleted_before = list(deleted_before)
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

    def _one(self, client: Thrift2) -> None:
        if self.deleted_before and self.random.random() < 0.1:
            name, row, family, deleted_ms = self.random.choice(self.deleted_before)
            client.put(name, [(row, {f"{family}:a".encode(): b"masked"}, deleted_ms - self.random.randrange(1, 1000))])
            self.stats.masked_puts += 1
            return
        table = self.random.choice(self.tables)
        roll = self.random.random()
        i = self.random.randrange(self._next_new[table.name])
        row = table.row_key(i)
        if roll < 0.30:
            i = self._next_new[table.name]
            self._next_new[table.name] += 1
            client.put(table.name, [(table.row_key(i), _cells(table, i), None)])
            self.stats.puts += 1
        elif roll < 0.60:
            client.put(table.name, [(row, _cells(table, i, version=self.random.randrange(2, 1000)), None)])
            self.stats.overwrites += 1
        elif roll < 0.70:
            past = int(time.time() * 1000) - self.random.randrange(1, 100 * table.rows + 10)
            client.put(table.name, [(row, _cells(table, i, version=self.random.randrange(2, 1000)), past)])
            self.stats.old_puts += 1
        elif roll < 0.78:
            client.delete(table.name, row)
            self.stats.deletes += 1
        elif roll < 0.86:
            fam = self.random.choice(list(table.families))
            client.delete(table.name, row, f"{fam}:a".encode())
            self.stats.column_deletes += 1
        else:
            self._delete_one_version(client, table, row)

    def _delete_one_version(self, client: Thrift2, table: SampleTable, row: bytes) -> None:
        versions = {c: v for c, v in client.versions(table.name, row).items() if len(v) > 1}
        if not versions:
            return
        column = self.random.choice(sorted(versions))
        ts = self.random.choice(versions[column][1:])[0]  # an older version: the newest stays
        client.delete(table.name, row, column, ts)
        self.stats.version_deletes += 1

    def _run(self) -> None:
        client = None
        while not self._stop.is_set():
            try:
                if client is None:
                    client = self._connect()
                self._one(client)
            except Exception as e:  # the writer keeps going through transient failures, and counts them
                self.stats.errors += 1
                self.stats.last_error = repr(e)
                client = None
            self._stop.wait(self.interval)
        if client is not None:
            client.close()


@dataclass
class Comparison:
    table: str
    source_rows: int = 0
    target_rows: int = 0
    source_cells: int = 0
    target_cells: int = 0
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
                "source_cells": self.source_cells, "target_cells": self.target_cells,
                "matching_rows": self.matching_rows, "content_different": self.content_different,
                "only_in_source": self.only_in_source, "only_in_target": self.only_in_target,
                "differences": self.differences, "sample": self.sample}


def _count(row: tuple | None) -> int:
    return sum(len(v) for v in row[1].values()) if row else 0


def compare(source: Thrift2, target: Thrift2, table: str, target_table: str | None = None,
            sample: int = 10) -> Comparison:
    """Every row's every version of every column (value and timestamp) on both sides, merge-joined by row."""
    result = Comparison(table)
    src = source.scan(table)
    dst = target.scan(target_table or table)
    a, b = next(src, None), next(dst, None)

    def note(kind: str, key: bytes) -> None:
        if len(result.sample) < sample:
            result.sample.append({"row": key.decode("latin-1"), "kind": kind})

    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            result.source_rows += 1
            result.source_cells += _count(a)
            result.only_in_source += 1
            note("only_in_source", a[0])
            a = next(src, None)
        elif a is None or b[0] < a[0]:
            result.target_rows += 1
            result.target_cells += _count(b)
            result.only_in_target += 1
            note("only_in_target", b[0])
            b = next(dst, None)
        else:
            result.source_rows += 1
            result.target_rows += 1
            result.source_cells += _count(a)
            result.target_cells += _count(b)
            if a[1] == b[1]:
                result.matching_rows += 1
            else:
                result.content_different += 1
                note("content_different", a[0])
            a, b = next(src, None), next(dst, None)
    return result
