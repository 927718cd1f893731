"""Write-ahead logs: HBase's file naming and directories, minihbase's own record format, roll and archive.

Files live at `<rootdir>/WALs/<host,port,startcode>/<url-encoded servername>.<creation ms>` and move (rename,
same name) to `<rootdir>/oldWALs/` once every edit in them is flushed to a store file (reference §6.1, §6.3).

A file is `MINIWAL1` followed by records `[u32 length][u32 crc32][payload]`; a torn record at the tail (a
crash mid-write) ends the readable part, as a truncated HBase WAL does. Each entry carries what replication
needs: sequence id, write time (ms), table, encoded region name, the cluster ids the edit has passed through,
and the cells with their key types and timestamps. Positions are byte offsets, like HBase's.
"""
from __future__ import annotations

import posixpath
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterator
from urllib.parse import quote, unquote

from minihbase.cells import Cell, decode_cells, encode_cells
from minihbase.hdfs import HDFSOutputStream, MiniHDFS

WAL_MAGIC = b"MINIWAL1"
_RECORD = struct.Struct(">II")
_ENTRY_HEAD = struct.Struct(">qqHHBI")  # seq, write time, table len, region len, cluster id count, cells
WAL_NAME = re.compile(r"^(.+)\.(\d+)(\.[0-9A-Za-z]+)?$")


@dataclass
class WALEntry:
    seq_id: int
    write_time: int
    table: bytes
    encoded_region: str
    cluster_ids: list[str]
    cells: list[Cell] = field(default_factory=list)

    def encode(self) -> bytes:
        region = self.encoded_region.encode()
        ids = b"".join(c.encode().ljust(36)[:36] for c in self.cluster_ids)
        payload = b"".join((
            _ENTRY_HEAD.pack(self.seq_id, self.write_time, len(self.table), len(region),
                             len(self.cluster_ids), len(self.cells)),
            self.table, region, ids, encode_cells(self.cells),
        ))
        return _RECORD.pack(len(payload), zlib.crc32(payload)) + payload

    @classmethod
    def decode(cls, payload: bytes) -> "WALEntry":
        seq, wtime, tlen, rlen, nids, ncells = _ENTRY_HEAD.unpack_from(payload, 0)
        off = _ENTRY_HEAD.size
        table = payload[off:off + tlen]
        off += tlen
        region = payload[off:off + rlen].decode()
        off += rlen
        ids = [payload[off + 36 * i: off + 36 * (i + 1)].decode().strip() for i in range(nids)]
        off += 36 * nids
        cells, _ = decode_cells(payload, off, ncells)
        return cls(seq, wtime, table, region, ids, cells)


def read_entries(data: bytes, start: int = 0) -> Iterator[tuple[WALEntry, int]]:
    """Entries from a WAL file's bytes, each with the offset just after it. `start` is a position previously
    returned (0 = the beginning). Stops quietly at a torn or corrupt tail."""
    if not data.startswith(WAL_MAGIC):
        if not data:
            return
        raise ValueError("not a minihbase WAL (bad magic)")
    off = max(start, len(WAL_MAGIC))
    while off + _RECORD.size <= len(data):
        length, crc = _RECORD.unpack_from(data, off)
        end = off + _RECORD.size + length
        if end > len(data):
            return
        payload = data[off + _RECORD.size:end]
        if zlib.crc32(payload) != crc:
            return
        yield WALEntry.decode(payload), end
        off = end


def decode_records(chunk: bytes, offset: int) -> tuple[list[tuple[WALEntry, int, int]], int]:
    """Complete records of `chunk`, the bytes of a WAL file from `offset` (a record boundary past the magic):
    [(entry, record size, end offset)] and the offset after the last complete one. A partial or corrupt record
    ends the list (a file being written, or a torn tail), so a tailing reader simply retries later."""
    out = []
    pos = 0
    n = len(chunk)
    while pos + _RECORD.size <= n:
        length, crc = _RECORD.unpack_from(chunk, pos)
        end = pos + _RECORD.size + length
        if end > n:
            break
        payload = chunk[pos + _RECORD.size:end]
        if zlib.crc32(payload) != crc:
            break
        out.append((WALEntry.decode(payload), end - pos, offset + end))
        pos = end
    return out, offset + pos


def encode_servername(servername: str) -> str:
    """Java's `URLEncoder.encode(serverName, "UTF8")`: commas become %2C."""
    return quote(servername, safe=".-*_")


def wal_file_name(servername: str, created_ms: int) -> str:
    return f"{encode_servername(servername)}.{created_ms}"


def parse_wal_name(name: str) -> tuple[str, int]:
    """`host%2Cport%2Cstartcode.1700000123456` -> ("host,port,startcode", 1700000123456)."""
    m = WAL_NAME.match(name)
    if not m:
        raise ValueError(f"not a WAL file name: {name!r}")
    return unquote(m.group(1)), int(m.group(2))


class WAL:
    """One region server's WAL: the current file, the older ones not yet archived, roll and archive.

    Hooks (part 2 uses them for replication): `roll_listeners` are called as `fn(old_path, new_path)` after
    each roll (old_path is None for the first file), `archive_listeners` as `fn(old_path, new_path)` after a
    file moved to oldWALs. Paths are HDFS paths. Listeners run under the WAL's lock: keep them short.
    """

    def __init__(self, fs: MiniHDFS, rootdir: str, servername: str, roll_size: int):
        self.fs = fs
        self.rootdir = rootdir
        self.servername = servername
        self.dir = posixpath.join(rootdir, "WALs", servername)
        self.old_dir = posixpath.join(rootdir, "oldWALs")
        self.roll_size = roll_size
        self.roll_listeners: list[Callable[[str | None, str], None]] = []
        self.archive_listeners: list[Callable[[str, str], None]] = []
        self.lock = threading.RLock()
        self.current_path: str | None = None
        self._stream: HDFSOutputStream | None = None
        self.current_entries = 0
        self.rolled_at = time.monotonic()
        # Files not yet archived (current included), oldest first: path -> {encoded region: highest seq id}.
        self.files: dict[str, dict[str, int]] = {}
        self.closed = False
        self.appended_bytes = 0
        self.appended_entries = 0
        self.rolls = 0

    @property
    def current_size(self) -> int:
        return self._stream.length if self._stream else 0

    def open(self) -> str:
        self.fs.mkdirs(self.dir)
        self.fs.mkdirs(self.old_dir)
        return self.roll()

    def _new_name(self) -> str:
        ts = int(time.time() * 1000)
        while True:
            path = posixpath.join(self.dir, wal_file_name(self.servername, ts))
            if path not in self.files and not self.fs.exists(path):
                return path
            ts += 1

    def roll(self, force: bool = True) -> str:
        """Close the current file and start a new one. Raises (HDFS quota...) if the new file cannot be made.
        An unforced roll of a file with no entry keeps it, as HBase's `rollWriter(force=false)`: a late size
        request must not roll the file that already replaced the full one."""
        with self.lock:
            if self.closed:
                raise IOError(f"WAL of {self.servername} is closed")
            if not force and self.current_path is not None and self.current_entries == 0:
                return self.current_path
            path = self._new_name()
            stream = self.fs.create(path)
            try:
                stream.write(WAL_MAGIC)
            except BaseException:
                stream.close()
                raise
            old = self.current_path
            if self._stream is not None:
                self._stream.close()
            self._stream = stream
            self.current_path = path
            self.current_entries = 0
            self.rolled_at = time.monotonic()
            self.files[path] = {}
            self.rolls += 1
            for listener in list(self.roll_listeners):
                listener(old, path)
            return path

    def append(self, entries: list[WALEntry]) -> bool:
        """Log entries (one write); returns True when the file reached its roll size."""
        data = b"".join(e.encode() for e in entries)
        with self.lock:
            if self.closed or self._stream is None:
                raise IOError(f"WAL of {self.servername} is closed")
            self._stream.write(data)
            regions = self.files[self.current_path]
            for e in entries:
                if regions.get(e.encoded_region, -1) < e.seq_id:
                    regions[e.encoded_region] = e.seq_id
            self.current_entries += len(entries)
            self.appended_bytes += len(data)
            self.appended_entries += len(entries)
            return self._stream.length >= self.roll_size

    def unflushed_regions(self, path: str) -> dict[str, int]:
        with self.lock:
            return dict(self.files.get(path, {}))

    def archivable(self, flushed_seq: Callable[[str], int | None]) -> list[str]:
        """Closed files whose every edit is in a store file. `flushed_seq(region)` is the region's flushed
        sequence id, or None when the region is no longer hosted here (it was flushed when it left)."""
        with self.lock:
            out = []
            for path, regions in self.files.items():
                if path == self.current_path:
                    continue
                if all((flushed_seq(r) is None or flushed_seq(r) >= seq) for r, seq in regions.items()):
                    out.append(path)
            return out

    def archive(self, path: str) -> str:
        with self.lock:
            new = posixpath.join(self.old_dir, posixpath.basename(path))
            if path not in self.files:
                return new  # archived meanwhile by a concurrent caller (the chore and a requested roll)
            self.fs.rename(path, new)
            self.files.pop(path, None)
            for listener in list(self.archive_listeners):
                listener(path, new)
            return new

    def oldest_pinning(self) -> dict[str, int]:
        """Regions with edits in the oldest closed file (the ones a flush must cover to free it)."""
        with self.lock:
            for path, regions in self.files.items():
                if path != self.current_path:
                    return dict(regions)
            return {}

    def closed_file_count(self) -> int:
        with self.lock:
            return sum(1 for p in self.files if p != self.current_path)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            if self._stream is not None:
                self._stream.close()
                self._stream = None
