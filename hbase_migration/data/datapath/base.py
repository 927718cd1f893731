"""The data path's interface and what every implementation shares: regions, scan positions, call sizes, the
threaded writer (the package's docstring says what a data path promises)."""
from __future__ import annotations

import abc
import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from hbase_migration.data.scope import Cell, Row, cell_order, to_string_binary

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

FIRST_KEY_ONLY = "FirstKeyOnlyFilter() AND KeyOnlyFilter()"  # RowCounter's filter pair: one cell per row
KEY_ONLY = "KeyOnlyFilter()"

class PartitionFailed(RuntimeError):
    """A scan or a write could not be completed after its retries."""


@dataclass(frozen=True)
class Region:
    """One region of a table (b"" = open end), and the host of the region server holding it."""

    start_key: bytes
    end_key: bytes
    name: bytes = b""
    host: str = ""


class Writer(abc.ABC):
    """Writes rows of cells, each at its own timestamp; `close()` returns once every write is acknowledged and
    raises the first failure. `calls` and `retried` count the server calls and the retried ones."""

    calls: int = 0
    retried: int = 0

    @abc.abstractmethod
    def put(self, rows: Sequence[Row]) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...


def check_in_range(first: bytes, last: bytes, next_start: bytes, stop_row: bytes, table: str) -> None:
    """A scan's rows must come in order inside what is left of its range; anything else means a scanner that is
    not this scan's, and the partition must fail rather than copy or skip the wrong rows."""
    if first < next_start or last < first or (stop_row and last >= stop_row):
        raise PartitionFailed(f"scan of {table!r} got rows [{to_string_binary(first)}, {to_string_binary(last)}] "
                              f"outside [{to_string_binary(next_start)}, {to_string_binary(stop_row) or '<end>'})")


class ScanPosition:
    """Where a scan stands, so that a lost scanner re-opens where it left off, also in the middle of a wide row.

    The last piece yielded may be a slice of its row, so a re-opened scanner starts *at* that row and the cells of
    it already yielded (up to the last one, in HBase's order) are dropped from what comes back: what HBase's own
    client does after a retry (`BatchScanResultCache` with `ConnectionUtils.filterCells`). Nothing is yielded
    twice and nothing is skipped, except a cell written meanwhile before that point (an edit in flight, which
    replication carries and verify's re-compare sees)."""

    def __init__(self, start_row: bytes):
        self.start = start_row  # where the next scanner opens
        self.last_row: bytes | None = None
        self.last_key: tuple | None = None
        self.trimming = False

    def reopen(self) -> None:
        """A new scanner is about to be opened at `start`."""
        self.trimming = self.last_key is not None

    def yielded(self, pieces: Sequence[Row]) -> None:
        row, cells = pieces[-1]
        self.start, self.last_row, self.last_key = row, row, cell_order(cells[-1])

    def trim(self, pieces: list[Row]) -> list[Row]:
        """The pieces without the cells a scanner before this one yielded already."""
        if not self.trimming:
            return pieces
        for i, (row, cells) in enumerate(pieces):
            if row != self.last_row:
                self.trimming = False
                return pieces[i:]
            last = self.last_key
            keep = next((j for j, c in enumerate(cells) if cell_order(c) > last), None)
            if keep is not None:
                self.trimming = False
                return [(row, cells[keep:])] + pieces[i + 1:]
        return []


class CallSize:
    """How many results the next scanner call asks for: `batch_rows`, or fewer once the rows turn out wide, so that
    one call carries about `call_cells` cells. The first call of a scan that slices rows (`batch_cells`) asks for
    no more than `call_cells / batch_cells` results, so a scan that starts in a wide row does not take
    `batch_rows` slices at once."""

    def __init__(self, batch_rows: int, batch_cells: int | None, call_cells: int | None):
        self.max = batch_rows
        self.call_cells = call_cells
        self.next = batch_rows if not (batch_cells and call_cells) else max(1, min(batch_rows,
                                                                                    call_cells // batch_cells))

    def observe(self, results: int, cells: int) -> None:
        if results and self.call_cells:
            self.next = max(1, min(self.max, self.call_cells * results // max(cells, 1)))


def rows_in(pieces: Iterable[Row], last: bytes | None = None) -> tuple[int, bytes | None]:
    """(rows, last row key) of consecutive pieces: a row cut in pieces counts once, also across calls when the
    previous call's last row key is given."""
    n = 0
    for row, _cells in pieces:
        if row != last:
            n += 1
            last = row
    return n, last


class ThreadedWriter(Writer):
    """The writing machinery both data paths share: `writers` threads, each with its own connection, take
    encoded calls from a bounded queue and send them `pipeline` at a time (back to back, then every answer
    read). On a transient error the window is re-sent on a fresh connection (re-writing a cell with its
    timestamp changes nothing). Memory is bounded by the queue (`writers * pipeline * 2` calls). `close()`
    returns once every call is acknowledged, and raises the first failure.

    Subclasses say how rows become calls (`encode`) and how a window of calls goes out (`send`).
    """

    _STOP = object()

    def __init__(self, cluster: "Cluster", open_session: Callable[[], Any], writers: int = 16, pipeline: int = 1,
                 retries: int = 8, wait_cap: float = 20.0, what: str = "write"):
        self.cluster = cluster
        self.pipeline = pipeline
        self.retries = retries
        self.wait_cap = wait_cap
        self.what = what
        self.calls = 0
        self.retried = 0
        self._queue: queue.Queue = queue.Queue(maxsize=max(2, writers * pipeline * 2))
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        # Open every connection up front so an unreachable target fails here, loudly.
        sessions = [open_session() for _ in range(writers)]
        self._threads = [threading.Thread(target=self._run, args=(s,), daemon=True, name=f"hbase-writer-{i}")
                         for i, s in enumerate(sessions)]
        for t in self._threads:
            t.start()

    @abc.abstractmethod
    def encode(self, rows: Sequence[Row]) -> Iterable[Any]:
        """The calls that write `rows`."""

    @abc.abstractmethod
    def send(self, session: Any, window: list[Any]) -> None:
        """Send a window of calls on `session` and read every answer."""

    def put(self, rows: Sequence[Row]) -> None:
        for item in self.encode(rows):
            while True:
                if self._error is not None:
                    self._raise()
                try:
                    self._queue.put(item, timeout=0.5)
                    break
                except queue.Full:
                    continue

    def _run(self, session: Any) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is self._STOP:
                    return
                window = [first]
                stop = False
                while len(window) < self.pipeline:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is self._STOP:
                        stop = True
                        break
                    window.append(nxt)
                self._send(session, window)
                if stop:
                    return
        except BaseException as e:  # recorded and re-raised by put()/close() on the caller's thread
            with self._lock:
                if self._error is None:
                    self._error = e
            # keep draining so a producer blocked on a full queue sees the error
            while True:
                try:
                    if self._queue.get(timeout=0.5) is self._STOP:
                        return
                except queue.Empty:
                    if self._error is not None and self._queue.empty():
                        return
        finally:
            session.close()

    def _send(self, session: Any, window: list[Any]) -> None:
        from hbase_migration.clusters.thrift import retrying

        def count_retry(_e: BaseException) -> None:
            with self._lock:
                self.retried += 1

        retrying(session, lambda: self.send(session, window), self.retries, self.wait_cap,
                 f"{self.what} x{len(window)}", count_retry)
        with self._lock:
            self.calls += len(window)

    def close(self) -> None:
        # One STOP per thread, whichever thread takes it (a thread that exits early took someone's STOP).
        for _ in self._threads:
            while any(t.is_alive() for t in self._threads):
                try:
                    self._queue.put(self._STOP, timeout=0.5)
                    break
                except queue.Full:
                    continue
        for t in self._threads:
            t.join()
        if self._error is not None:
            self._raise()

    def _raise(self) -> None:
        raise PartitionFailed(f"writing to {self.cluster.name!r} failed: {self._error}") from self._error


class DataPath(abc.ABC):
    """One cluster's cells through one connection (re-opened after a transport error).

    `versions` is how many versions per column a read returns: N, or None for every version each family
    keeps (its VERSIONS). `start_ms`/`end_ms` bound the cells' timestamps, `[start, end)`, None = open.
    """

    kind = ""
    exact_deletes = False  # can delete exactly one version of a column
    default_writers = 4  # writer connections a copy partition opens when its options do not say

    def __init__(self, cluster: "Cluster", session: Any, timeout_s: float, retries: int = 8,
                 wait_cap_s: float = 20.0):
        self.cluster = cluster
        self.session = session  # the connection reads go through (re-opened after a transport error)
        self.timeout_s = timeout_s
        self.retries = retries
        self.wait_cap_s = wait_cap_s
        self._families: dict[str, dict[bytes, int]] = {}

    def __enter__(self) -> "DataPath":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def reconnects(self) -> int:
        return self.session.reconnects

    def close(self) -> None:
        self.session.close()

    def families(self, table: str) -> dict[bytes, int]:
        """family -> VERSIONS of a table; {} when the table does not exist (asked once per table)."""
        if table not in self._families:
            found = self.read_families(table)
            if not found:
                return {}
            self._families[table] = found
        return self._families[table]

    @abc.abstractmethod
    def read_families(self, table: str) -> dict[bytes, int]:
        """The table's families and their VERSIONS from the cluster; {} when the table does not exist."""

    @abc.abstractmethod
    def regions(self, table: str) -> list[Region]:
        """The table's regions sorted by start key; [] when the table does not exist."""

    @abc.abstractmethod
    def scan(self, table: str, start_row: bytes, stop_row: bytes, *, columns: Sequence[bytes] | None = None,
             start_ms: int | None = None, end_ms: int | None = None, versions: int | None = 1,
             batch_rows: int = 500, batch_cells: int | None = None, call_cells: int | None = None,
             keys_only: bool = False, first_key_only: bool = False,
             stats: dict[str, int] | None = None) -> Iterator[list[Row]]:
        """Rows of `[start_row, stop_row)` (b"" stop: to the end), one server batch at a time; rows with no cell
        in the time range are left out. With `batch_cells`, a row with more cells comes as consecutive pieces
        of at most that many (the same row key); `call_cells` bounds the cells one call brings (`CallSize`).
        `keys_only`: values empty; `first_key_only`: one cell per row, one piece per row (a row count). A lost
        connection or scanner re-opens the scan where it stopped (`ScanPosition`), also inside a wide row."""

    def region_server(self, table: str, row: bytes) -> str:
        """The region server holding `row` now, as HBase names it (`host,port,startcode`, or `host,port` where
        the API gives no start code): located afresh, for a report that names it."""
        raise NotImplementedError(f"the {self.kind} data path cannot locate a row's region server")

    @abc.abstractmethod
    def get_rows(self, table: str, keys: Sequence[bytes], *, columns: Sequence[bytes] | None = None,
                 start_ms: int | None = None, end_ms: int | None = None,
                 versions: int | None = 1) -> dict[bytes, list[Cell]]:
        """The rows of `keys` that have a cell in range, like `scan`'s rows."""

    @abc.abstractmethod
    def writer(self, table: str, *, writers: int = 4, pipeline: int = 1, batch_cells: int = 5000,
               batch_bytes: int = 4 << 20) -> Writer:
        """A writer to `table` (its own connections; opened now, so an unreachable cluster fails here)."""

    @abc.abstractmethod
    def delete(self, table: str, row: bytes, cells: Sequence[tuple[bytes, int]]) -> None:
        """Delete `(column, timestamp)` versions of one row: exactly those versions when `exact_deletes`,
        else every version of the column at or below the timestamp."""


def prefetch(iterable: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """Iterate `iterable` in a background thread, `depth` items ahead.

    The next scan batch is fetched while the current one is being written or hashed. Errors are raised in the
    consumer; closing the consumer stops the producer.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in iterable:
                while not stop.is_set():
                    try:
                        q.put(("item", item), timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            q.put(("end", done))
        except BaseException as e:
            q.put(("error", e))
        finally:
            close = getattr(iterable, "close", None)
            if callable(close) and stop.is_set():
                try:
                    close()
                except Exception:
                    pass

    thread = threading.Thread(target=produce, daemon=True, name="hbase-scan-prefetch")
    thread.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.2)
            except queue.Empty:
                pass
        thread.join()
