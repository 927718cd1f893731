"""A region server's RPC handlers and call queues, and the metrics they produce.

HBase's `RpcServer` with `SimpleRpcScheduler`: every call a region server receives is queued in one of its
`RpcExecutor`s and run by one of that executor's handler threads:
- general (`hbase.regionserver.handler.count`, default 30; minihbase `handler_count`): client reads, writes and
  scanner calls;
- replication (`hbase.regionserver.replication.handler.count`, default 3; `replication_handler_count`):
  `replicateWALEntry` from the sources of other clusters;
- priority (`hbase.regionserver.metahandler.count`, default 20): meta and admin calls; minihbase routes none.

Here a call is a function run by the caller's thread while it holds one handler slot of its queue; a call that
finds every handler of its queue busy waits, in arrival order (`CallQueue`). The injected latency
(`/control/latency`) is slept while holding the handler, as a slow disk would keep it.

Metrics (what the region server's `/jmx` shows):
- `Hadoop:service=HBase,name=RegionServer,sub=IPC` (`MetricsHBaseServerSourceImpl`, values from
  `MetricsHBaseServerWrapperImpl`): `queueSize` (bytes of the calls received and not finished: waiting or
  running, as `RpcServer.callQueueSizeInBytes`), `numCallsInGeneralQueue` / `...ReplicationQueue` /
  `...PriorityQueue` (calls waiting for a handler), `numActiveHandler` (handlers running a call, all queues) and
  per queue `numActiveGeneralHandler` / `...ReplicationHandler` / `...PriorityHandler`, `numOpenConnections`,
  `receivedBytes` / `sentBytes`, `exceptions` and `exceptions.<kind>` (`ExceptionTrackingSource`), and the
  histograms `QueueCallTime`, `ProcessCallTime`, `TotalCallTime` (ms, `RpcServer.call`: receive -> handler,
  handler -> done, receive -> done) and `RequestSize`, `ResponseSize` (bytes);
- `Hadoop:service=HBase,name=RegionServer,sub=Server` (`MetricsRegionServerSourceImpl`): the operation time
  histograms `Get`, `Put`, `PutBatch`, `Delete`, `DeleteBatch`, `Increment`, `Append`, `CheckAndPut`,
  `CheckAndDelete`, `CheckAndMutate`, `Replay`, `ScanTime` (ms, measured in the handler as `RSRpcServices`
  does) and `ScanSize` (bytes per scanner call), the `slow*Count` counters (operations over 1000 ms,
  `MetricsRegionServer`'s slowMetricTime), and `totalRequestCount` (calls answered).

Histograms are published per snapshot (`minihbase.metrics`): gauges and counters are read live.

Sizes are estimates of HBase's serialised sizes: a cell counts as a KeyValue (row, family, qualifier, value and
20 bytes of lengths, timestamp and type); a call adds `CALL_OVERHEAD` bytes (request header, region name).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, TypeVar

from minihbase.errors import NotServingRegion
from minihbase.metrics import Histogram, PeriodicSnapshot

T = TypeVar("T")

PRIORITY_HANDLERS = 20  # hbase.regionserver.metahandler.count
SLOW_MS = 1000  # MetricsRegionServer's slowMetricTime (default 1000 ms)
KEYVALUE_OVERHEAD = 20  # KeyValue: key length 4, value length 4, row length 2, family length 1, ts 8, type 1
CALL_OVERHEAD = 64  # request header + region specifier, roughly

IPC_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=IPC"

# MetricsRegionServerSource keys of the operation histograms (newTimeHistogram) and the size one.
OPS = ("get", "put", "putBatch", "delete", "deleteBatch", "increment", "append", "replay", "checkAndPut",
       "checkAndDelete", "checkAndMutate", "scanTime")
# MetricsRegionServer: which operations count as slow past SLOW_MS, and in which counter.
SLOW = {"put": "slowPutCount", "putBatch": "slowPutCount", "delete": "slowDeleteCount",
        "deleteBatch": "slowDeleteCount", "get": "slowGetCount", "increment": "slowIncrementCount",
        "append": "slowAppendCount"}
SLOW_COUNTERS = ("slowPutCount", "slowGetCount", "slowDeleteCount", "slowIncrementCount", "slowAppendCount")
# ExceptionTrackingSource counters; an exception of another kind counts in otherExceptions.
EXCEPTIONS = ("exceptions.OutOfOrderScannerNextException", "exceptions.RegionTooBusyException",
              "exceptions.UnknownScannerException", "exceptions.ScannerResetException",
              "exceptions.RegionMovedException", "exceptions.NotServingRegionException",
              "exceptions.FailedSanityCheckException", "exceptions.multiResponseTooLarge",
              "exceptions.callQueueTooBig", "exceptions.quotaExceeded", "exceptions.rpcThrottling",
              "exceptions.requestTooBig", "exceptions.otherExceptions")


def cells_size(rows) -> int:
    """Serialised size of the cells of `rows` (each a list of Cell tuples), as KeyValues."""
    return sum(len(c[0]) + len(c[1]) + len(c[2]) + len(c[5]) + KEYVALUE_OVERHEAD for cells in rows for c in cells)


def result_size(row: bytes, cells) -> int:
    """Serialised size of a read result: cells as (family:qualifier, ts, value)."""
    return sum(len(row) + len(col) - 1 + len(value) + KEYVALUE_OVERHEAD for col, _, value in cells)


class CallQueue:
    """One RpcExecutor: `handlers` handlers serving a FIFO queue. `enter()` takes a free handler or waits for
    one in arrival order; `leave()` hands the handler straight to the oldest waiting call, if any."""

    def __init__(self, name: str, handlers: int):
        if handlers < 1:
            raise ValueError(f"{name} call queue needs at least one handler, got {handlers}")
        self.name = name
        self.handlers = handlers
        self.active = 0
        self._waiting: deque[threading.Lock] = deque()
        self._lock = threading.Lock()

    @property
    def queued(self) -> int:
        """Calls waiting for a handler (the executor's queue length)."""
        return len(self._waiting)

    def enter(self) -> None:
        with self._lock:
            if self.active < self.handlers:
                self.active += 1
                return
            gate = threading.Lock()
            gate.acquire()
            self._waiting.append(gate)
        gate.acquire()  # released by leave(): the handler is ours, `active` already counts it

    def leave(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self.active -= 1


class RpcScheduler:
    """The call queues of one region server and the IPC and operation metrics of its calls."""

    def __init__(self, handlers: int, replication_handlers: int, period_s: float,
                 latency_ms: Callable[[], float] = lambda: 0.0, open_connections: Callable[[], int] = lambda: 0):
        self.general = CallQueue("general", handlers)
        self.replication = CallQueue("replication", replication_handlers)
        self.priority = CallQueue("priority", PRIORITY_HANDLERS)
        self._queues = (self.general, self.replication, self.priority)
        self._latency_ms = latency_ms
        self._open_connections = open_connections
        self._lock = threading.Lock()
        self.call_queue_bytes = 0
        self.calls = 0
        self.received_bytes = 0
        self.sent_bytes = 0
        self.exceptions = dict.fromkeys(("exceptions",) + EXCEPTIONS, 0)
        self.slow = dict.fromkeys(SLOW_COUNTERS, 0)
        self.in_process_clients: set[str] = set()
        self._ipc_histograms = (Histogram.time("queueCallTime"), Histogram.time("processCallTime"),
                                Histogram.time("totalCallTime"), Histogram.size("requestSize"),
                                Histogram.size("responseSize"))
        self._ops = {op: Histogram.time(op) for op in OPS}
        self._scan_size = Histogram.size("scanSize")
        self._ipc_snapshot = PeriodicSnapshot(period_s, lambda: self._snapshot(self._ipc_histograms))
        self._server_snapshot = PeriodicSnapshot(
            period_s, lambda: self._snapshot(tuple(self._ops.values()) + (self._scan_size,)))

    # ------------------------------------------------------------------------------------------ calls
    def call(self, queue: CallQueue, fn: Callable[[], T], op: str | tuple[str, ...] | None = None,
             request_size: int = 0, response_size: Callable[[T], int] | None = None,
             client: str | None = None, latency: bool = True) -> T:
        """Run `fn` as one call of `queue`: wait for a handler, sleep the injected latency holding it (unless
        `latency` is false: a call whose work is other calls, which pay it), run. `op` names the operation
        histogram(s) the handler time goes to (a scan's response size also goes to ScanSize); `client` names
        an in-process connection (counted in numOpenConnections)."""
        size = request_size + CALL_OVERHEAD
        received = time.perf_counter()
        with self._lock:
            self.call_queue_bytes += size
            self.received_bytes += size
            if client is not None and client not in self.in_process_clients:
                self.in_process_clients.add(client)
        try:
            queue.enter()
            started = time.perf_counter()
            try:
                delay = self._latency_ms() if latency else 0
                if delay > 0:
                    time.sleep(delay / 1000.0)
                result = fn()
            finally:
                ended = time.perf_counter()
                queue.leave()
        except BaseException as e:
            with self._lock:
                self.call_queue_bytes -= size
                self._count_exception(e)
            raise
        response_bytes = response_size(result) if response_size is not None else 0
        sent = response_bytes + CALL_OVERHEAD // 4
        queued_ms = int((started - received) * 1000)
        process_ms = int((ended - started) * 1000)
        with self._lock:
            self.call_queue_bytes -= size
            self.calls += 1
            self.sent_bytes += sent
            q, p, t, req, resp = self._ipc_histograms
            q.add(queued_ms)
            p.add(process_ms)
            t.add(int((ended - received) * 1000))
            req.add(size)
            resp.add(sent)
            if op is not None:
                for name in (op,) if isinstance(op, str) else op:
                    self._ops[name].add(process_ms)
                    slow = SLOW.get(name)
                    if slow is not None and process_ms > SLOW_MS:
                        self.slow[slow] += 1
                    if name == "scanTime":
                        self._scan_size.add(response_bytes)
        return result

    def _count_exception(self, e: BaseException) -> None:
        """MetricsHBaseServer.exception: the total, then the kind (NotServingRegionException here; others)."""
        self.exceptions["exceptions"] += 1
        if isinstance(e, NotServingRegion):
            self.exceptions["exceptions.NotServingRegionException"] += 1
        else:
            self.exceptions["exceptions.otherExceptions"] += 1

    # ------------------------------------------------------------------------------------------ metrics
    def _snapshot(self, histograms) -> dict:
        with self._lock:
            out: dict = {}
            for h in histograms:
                out.update(h.snapshot())
            return out

    def ipc_bean(self) -> dict:
        """The values of the `sub=IPC` bean (without name, modelerType and tags)."""
        with self._lock:
            queue_bytes = self.call_queue_bytes
            received, sent = self.received_bytes, self.sent_bytes
            exceptions = dict(self.exceptions)
            clients = len(self.in_process_clients)
        general, replication, priority = self._queues
        out = {
            "queueSize": queue_bytes,
            "numCallsInGeneralQueue": general.queued,
            "numCallsInReplicationQueue": replication.queued,
            "numCallsInPriorityQueue": priority.queued,
            "numCallsInMetaPriorityQueue": 0,
            "numOpenConnections": self._open_connections() + clients,
            "numActiveHandler": general.active + replication.active + priority.active,
            "numActiveGeneralHandler": general.active,
            "numActivePriorityHandler": priority.active,
            "numActiveReplicationHandler": replication.active,
            "numGeneralCallsDropped": 0,
            "numLifoModeSwitches": 0,
            # No read/write/scan split of the general queue (hbase.ipc.server.callqueue.read.ratio = 0).
            "numCallsInWriteQueue": 0, "numCallsInReadQueue": 0, "numCallsInScanQueue": 0,
            "numActiveWriteHandler": 0, "numActiveReadHandler": 0, "numActiveScanHandler": 0,
            "receivedBytes": received,
            "sentBytes": sent,
            "authenticationSuccesses": 0, "authenticationFailures": 0, "authenticationFallbacks": 0,
            "authorizationSuccesses": 0, "authorizationFailures": 0,
        }
        out.update(exceptions)
        out.update(self._ipc_snapshot.get())
        return out

    def server_bean(self) -> dict:
        """The operation histograms and counters this scheduler adds to the `sub=Server` bean."""
        with self._lock:
            out = {"totalRequestCount": self.calls, **self.slow}
        out.update(self._server_snapshot.get())
        return out
