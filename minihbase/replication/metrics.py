"""Replication metrics as HBase 2.x publishes them on `/jmx` (reference §3), gauge-era naming.

One bean per region server, `Hadoop:service=HBase,name=RegionServer,sub=Replication`, holding
- global keys `source.<name>` (counters summed over every source this server ever ran; `sizeOfLogQueue` the
  sum over running sources; `ageOfLastShippedOp` the last value any source set, as the shared global gauge);
- per queue keys `source.<queueId>.<name>` (queueId = peer id, or `<peer>-<dead server>` for a recovered
  queue), removed when the queue finishes or its peer is removed;
- sink keys `sink.<name>`.

Semantics kept: `sizeOfLogQueue` counts the WAL being written (a caught-up 2.x source shows 1); the age is
set after each shipped batch (now - write time of its last entry), set to 0 when a read advanced over only
filtered entries, refreshed while shipping retries, and otherwise keeps its last value (sticky when idle).
"""
from __future__ import annotations

import threading
import time

COUNTERS = ("shippedBatches", "failedBatches", "shippedOps", "shippedBytes", "logReadInBytes", "logEditsRead",
            "logEditsFiltered", "shippedHFiles", "completedLogs", "completedRecoverQueues",
            "uncleanlyClosedLogs", "restartedLogReading", "repeatedLogFileBytes",
            "closedLogsWithUnknownFileLength", "ignoredUncleanlyClosedLogContentsInBytes")


def now_ms() -> int:
    return int(time.time() * 1000)


class SourceMetrics:
    """One source (queue). Updated by its reader/shipper thread, read by `/jmx` and `status 'replication'`."""

    def __init__(self, queue_id: str, peer_id: str, recovered: bool, global_metrics: "GlobalSourceMetrics"):
        self.queue_id = queue_id
        self.peer_id = peer_id
        self.recovered = recovered
        self.glob = global_metrics
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.size_of_log_queue = 0
        self.age_of_last_shipped_op = 0
        self.timestamp_of_last_shipped_op = 0  # write time of the last shipped entry
        self.timestamp_next_to_replicate = 0  # write time of the last entry read
        self.oldest_wal_created_ms = 0
        self.running = False
        self.started_ms = now_ms()
        self.lock = threading.Lock()

    def incr(self, name: str, by: int = 1) -> None:
        with self.lock:
            self.counters[name] += by
        self.glob.incr(name, by)

    def set_age(self, write_time_ms: int, now: int | None = None) -> None:
        """`setAgeOfLastShippedOp`: age = now - write time; the write time is remembered for refreshes."""
        now = now_ms() if now is None else now
        self.timestamp_of_last_shipped_op = write_time_ms
        self.age_of_last_shipped_op = max(0, now - write_time_ms)
        self.glob.age_of_last_shipped_op = self.age_of_last_shipped_op

    def refresh_age(self) -> None:
        """While shipping fails, the age grows (`refreshAgeOfLastShippedOp`)."""
        if self.timestamp_of_last_shipped_op:
            self.age_of_last_shipped_op = max(0, now_ms() - self.timestamp_of_last_shipped_op)
            self.glob.age_of_last_shipped_op = self.age_of_last_shipped_op

    @property
    def replication_lag(self) -> int:
        """`MetricsSource.getReplicationDelay` (2.2+)."""
        if self.timestamp_of_last_shipped_op >= self.timestamp_next_to_replicate:
            return 0
        return now_ms() - self.timestamp_next_to_replicate

    def oldest_wal_age(self) -> int:
        return max(0, now_ms() - self.oldest_wal_created_ms) if self.oldest_wal_created_ms else 0

    def jmx(self) -> dict:
        p = f"source.{self.queue_id}."
        with self.lock:
            out = {p + k: v for k, v in self.counters.items()}
        out[p + "shippedKBs"] = out[p + "shippedBytes"] // 1024
        out[p + "sizeOfLogQueue"] = self.size_of_log_queue
        out[p + "ageOfLastShippedOp"] = self.age_of_last_shipped_op
        out[p + "oldestWalAge"] = self.oldest_wal_age()
        out[p + "sizeOfHFileRefsQueue"] = 0
        out[p + "isInitializing"] = 0 if self.running else 1
        return out

    def load(self) -> dict:
        """What the region server reports to the master (ReplicationLoadSource), for `status 'replication'`."""
        with self.lock:
            edits_read = self.counters["logEditsRead"]
            shipped = self.counters["shippedOps"]
        return {
            "peer_id": self.peer_id, "queue_id": self.queue_id, "recovered": self.recovered,
            "running": self.running, "age_of_last_shipped_op": self.age_of_last_shipped_op,
            "timestamp_of_last_shipped_op": self.timestamp_of_last_shipped_op,
            "size_of_log_queue": self.size_of_log_queue, "edits_read": edits_read, "ops_shipped": shipped,
            "timestamp_next_to_replicate": self.timestamp_next_to_replicate,
            "edits_since_restart": self.timestamp_next_to_replicate > 0,
            "replication_lag": self.replication_lag,
        }


class GlobalSourceMetrics:
    def __init__(self):
        self.counters = dict.fromkeys(COUNTERS + ("failedRecoverQueues",), 0)
        self.age_of_last_shipped_op = 0
        self.lock = threading.Lock()

    def incr(self, name: str, by: int = 1) -> None:
        with self.lock:
            self.counters[name] += by

    def jmx(self, sources: list[SourceMetrics]) -> dict:
        with self.lock:
            out = {f"source.{k}": v for k, v in self.counters.items()}
        out["source.shippedKBs"] = out["source.shippedBytes"] // 1024
        out["source.sizeOfLogQueue"] = sum(s.size_of_log_queue for s in sources)
        out["source.ageOfLastShippedOp"] = self.age_of_last_shipped_op
        out["source.sizeOfHFileRefsQueue"] = 0
        # HBase 2.6's global key (`numInitializing`; per queue `isInitializing`); no global `oldestWalAge`
        out["source.numInitializing"] = sum(1 for s in sources if not s.running)
        out["source.walReaderEditsBufferUsage"] = 0
        return out


class SinkMetrics:
    def __init__(self):
        self.started_ms = now_ms()
        self.applied_batches = 0
        self.applied_ops = 0
        self.age_of_last_applied_op = 0
        self.timestamp_of_last_applied_op = self.started_ms  # HBase starts it at the sink's start
        self.lock = threading.Lock()

    def applied(self, batches: int, ops: int, last_write_time_ms: int) -> None:
        now = now_ms()
        with self.lock:
            self.applied_batches += batches
            self.applied_ops += ops
            self.age_of_last_applied_op = max(0, now - last_write_time_ms)
            self.timestamp_of_last_applied_op = now

    def jmx(self) -> dict:
        with self.lock:
            return {"sink.ageOfLastAppliedOp": self.age_of_last_applied_op,
                    "sink.appliedBatches": self.applied_batches, "sink.appliedOps": self.applied_ops,
                    "sink.appliedHFiles": 0, "sink.failedBatches": 0}

    def load(self) -> dict:
        with self.lock:
            return {"timestamp_started": self.started_ms, "age_of_last_applied_op": self.age_of_last_applied_op,
                    "timestamps_of_last_applied_op": self.timestamp_of_last_applied_op}
