"""A load generator for tests and benchmarks: K threads doing stock happybase puts (and gets) against one Thrift
gateway until stopped, each timing its operations as a client sees them. It puts a cluster's region servers
under real load (their `/jmx` `sub=IPC` queues and `sub=Server` latencies follow it), for whatever reads those
metrics, e.g. a load-aware throttle.

    with LoadGenerator(cluster.thrift_host, cluster.thrift_port, "t", threads=16) as load:
        ...                       # the load runs
    print(load.report())          # ops, errors, ops/s, client-side latency percentiles

    python -m minihbase.loadgen HOST PORT TABLE [--threads 16] [--seconds 10] [--read-fraction 0.2] [--rows-per-op 1]

happybase is imported when the threads start (minihbase itself does not need it). Every operation writes or
reads rows `<prefix><8 digits>` (uniform over `row_space` keys) in `column`: a get (`read_fraction` of them), or
a put of `rows_per_op` rows, through happybase's `put`/`batch` (Thrift1 mutateRows: HBase's Table.put(List), a
PutBatch on the region server) or, with `single_puts`, one Thrift1 mutateRow per row (Table.put(Put): a Put).
A failed operation is counted, its message kept (`last_error`), and the thread goes on after `error_pause_s`.
"""
from __future__ import annotations

import argparse
import json
import random
import threading
import time
from dataclasses import asdict, dataclass

from minihbase.metrics import nearest_rank

MAX_LATENCIES = 200_000  # per generator; beyond it a uniform sample is kept


@dataclass
class LoadReport:
    threads: int
    ops: int          # operations that succeeded (a put of `rows_per_op` rows is one)
    puts: int
    gets: int
    errors: int
    seconds: float
    ops_per_s: float
    latency_ms: dict  # client-observed, successful operations: p50, p90, p99, max
    last_error: str | None


class LoadGenerator:
    def __init__(self, host: str, port: int, table: str | bytes, threads: int = 8, value_size: int = 100,
                 read_fraction: float = 0.0, rows_per_op: int = 1, row_space: int = 10_000,
                 column: bytes = b"cf:q", prefix: bytes = b"load-", timeout_ms: int = 120_000,
                 error_pause_s: float = 0.01, single_puts: bool = False, seed: int = 0):
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if not 0.0 <= read_fraction <= 1.0:
            raise ValueError(f"read_fraction must be between 0 and 1, got {read_fraction!r}")
        if not isinstance(rows_per_op, int) or rows_per_op < 1:
            raise ValueError(f"rows_per_op must be a positive integer, got {rows_per_op!r}")
        if not isinstance(row_space, int) or row_space < 1:
            raise ValueError(f"row_space must be a positive integer, got {row_space!r}")
        if b":" not in column:
            raise ValueError(f"column must be 'family:qualifier', got {column!r}")
        self.host, self.port = host, port
        self.table = table.encode() if isinstance(table, str) else table
        self.threads = threads
        self.value = b"v" * value_size
        self.read_fraction = read_fraction
        self.rows_per_op = rows_per_op
        self.row_space = row_space
        self.column = column
        self.prefix = prefix
        self.timeout_ms = timeout_ms
        self.error_pause_s = error_pause_s
        self.single_puts = single_puts
        self.seed = seed
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._latencies: list[float] = []
        self._recorded = 0
        self._sampler = random.Random(seed)
        self.puts = self.gets = self.errors = 0
        self.last_error: str | None = None
        self._started = self._stopped = 0.0

    # ------------------------------------------------------------------------------------------ control
    def start(self) -> "LoadGenerator":
        if self._threads:
            raise RuntimeError("the load generator is already started")
        self._started = time.monotonic()
        ready = threading.Barrier(self.threads + 1)
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i, ready), name=f"loadgen-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        ready.wait(timeout=60)  # every thread has its connection: the load is on
        return self

    def stop(self, timeout: float = 60.0) -> LoadReport:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if not self._stopped:
            self._stopped = time.monotonic()
        return self.report()

    def __enter__(self) -> "LoadGenerator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def report(self) -> LoadReport:
        with self._lock:
            ordered = sorted(self._latencies)
            puts, gets, errors, last_error = self.puts, self.gets, self.errors, self.last_error
        end = self._stopped or time.monotonic()
        seconds = max(end - self._started, 1e-9) if self._started else 0.0
        ops = puts + gets
        latency = {"p50": nearest_rank(ordered, 500), "p90": nearest_rank(ordered, 900),
                   "p99": nearest_rank(ordered, 990), "max": ordered[-1] if ordered else 0.0}
        return LoadReport(self.threads, ops, puts, gets, errors, round(seconds, 3),
                          round(ops / seconds, 1) if seconds else 0.0,
                          {k: round(v, 3) for k, v in latency.items()}, last_error)

    # ------------------------------------------------------------------------------------------ threads
    def _record(self, ms: float, kind: str) -> None:
        with self._lock:
            if kind == "put":
                self.puts += 1
            else:
                self.gets += 1
            self._recorded += 1
            if len(self._latencies) < MAX_LATENCIES:
                self._latencies.append(ms)
            else:
                j = self._sampler.randrange(self._recorded)
                if j < MAX_LATENCIES:
                    self._latencies[j] = ms

    def _run(self, index: int, ready: threading.Barrier) -> None:
        import happybase
        from Hbase_thrift import Mutation  # the IDL module happybase loads

        rng = random.Random(self.seed * 1_000_003 + index)
        try:
            conn = happybase.Connection(self.host, self.port, timeout=self.timeout_ms)
            table = conn.table(self.table)
        except Exception:
            ready.abort()  # start() fails instead of waiting
            raise
        try:
            ready.wait(timeout=60)
        except threading.BrokenBarrierError:
            conn.close()
            return
        try:
            while not self._stop.is_set():
                read = self.read_fraction > 0 and rng.random() < self.read_fraction
                rows = [self.prefix + b"%08d" % rng.randrange(self.row_space) for _ in range(self.rows_per_op)]
                started = time.perf_counter()
                try:
                    if read:
                        table.row(rows[0], columns=[self.column])
                    elif self.single_puts:  # Thrift1 mutateRow: one Put (happybase's put is a mutateRows batch)
                        for row in rows:
                            conn.client.mutateRow(self.table, row, [Mutation(column=self.column, value=self.value)],
                                                  {})
                    elif len(rows) == 1:
                        table.put(rows[0], {self.column: self.value})
                    else:
                        with table.batch() as batch:
                            for row in rows:
                                batch.put(row, {self.column: self.value})
                except Exception as e:  # counted; the load goes on (a fresh connection after transport errors)
                    with self._lock:
                        self.errors += 1
                        self.last_error = f"{type(e).__name__}: {getattr(e, 'message', None) or e}"
                    if not isinstance(getattr(e, "message", None), (str, bytes)):
                        conn.close()
                        conn = happybase.Connection(self.host, self.port, timeout=self.timeout_ms)
                        table = conn.table(self.table)
                    self._stop.wait(self.error_pause_s)
                    continue
                self._record((time.perf_counter() - started) * 1000.0, "get" if read else "put")
        finally:
            conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minihbase.loadgen", description=__doc__.split("\n")[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("table")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--read-fraction", type=float, default=0.0)
    parser.add_argument("--rows-per-op", type=int, default=1)
    parser.add_argument("--column", default="cf:q")
    args = parser.parse_args(argv)
    load = LoadGenerator(args.host, args.port, args.table, threads=args.threads, read_fraction=args.read_fraction,
                         rows_per_op=args.rows_per_op, column=args.column.encode())
    load.start()
    try:
        time.sleep(args.seconds)
    finally:
        report = load.stop()
    print(json.dumps(asdict(report), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
