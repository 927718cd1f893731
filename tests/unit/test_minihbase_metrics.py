"""minihbase's histograms, JMX snapshot period and call queues (pure logic, exact expectations)."""
from __future__ import annotations

import threading

import pytest

from minihbase.config import ClusterConfig, ConfigError
from minihbase.ipc import CALL_OVERHEAD, CallQueue, RpcScheduler
from minihbase.metrics import Histogram, PeriodicSnapshot, nearest_rank

PERCENTILE_KEYS = ("_25th_percentile", "_median", "_75th_percentile", "_90th_percentile", "_95th_percentile",
                   "_98th_percentile", "_99th_percentile", "_99.9th_percentile")


def test_a_time_histogram_snapshot_has_hbase_names_and_values():
    h = Histogram.time("queueCallTime")
    for v in range(1, 101):
        h.add(v)
    snap = h.snapshot()
    assert list(snap)[:12] == ["QueueCallTime_num_ops", "QueueCallTime_min", "QueueCallTime_max",
                               "QueueCallTime_mean"] + ["QueueCallTime" + k for k in PERCENTILE_KEYS]
    assert snap == {
        "QueueCallTime_num_ops": 100, "QueueCallTime_min": 1, "QueueCallTime_max": 100, "QueueCallTime_mean": 50,
        "QueueCallTime_25th_percentile": 25, "QueueCallTime_median": 50, "QueueCallTime_75th_percentile": 75,
        "QueueCallTime_90th_percentile": 90, "QueueCallTime_95th_percentile": 95,
        "QueueCallTime_98th_percentile": 98, "QueueCallTime_99th_percentile": 99,
        "QueueCallTime_99.9th_percentile": 100,
        # (low, high] ranges of MutableTimeHistogram, only the non-empty ones
        "QueueCallTime_TimeRangeCount_0-1": 1, "QueueCallTime_TimeRangeCount_1-3": 2,
        "QueueCallTime_TimeRangeCount_3-10": 7, "QueueCallTime_TimeRangeCount_10-30": 20,
        "QueueCallTime_TimeRangeCount_30-100": 70,
    }


def test_the_period_resets_everything_but_num_ops():
    h = Histogram.time("put")
    for v in (5, 7, 700000):
        h.add(v)
    first = h.snapshot()
    assert (first["Put_min"], first["Put_max"], first["Put_mean"], first["Put_median"]) == (5, 700000, 233337, 7)
    assert first["Put_TimeRangeCount_600000-inf"] == 1 and first["Put_TimeRangeCount_3-10"] == 2
    empty = h.snapshot()
    assert empty == {"Put_num_ops": 3, "Put_min": 0, "Put_max": 0, "Put_mean": 0,
                     **{"Put" + k: 0 for k in PERCENTILE_KEYS}}
    h.add(0)
    assert h.snapshot()["Put_num_ops"] == 4


def test_a_size_histogram_counts_bytes_ranges():
    h = Histogram.size("scanSize")
    for v in (10, 11, 100, 5000, 10 ** 9):
        h.add(v)
    snap = h.snapshot()
    assert {k: v for k, v in snap.items() if "RangeCount" in k} == {
        "ScanSize_SizeRangeCount_0-10": 1, "ScanSize_SizeRangeCount_10-100": 2,
        "ScanSize_SizeRangeCount_1000-10000": 1, "ScanSize_SizeRangeCount_100000000-inf": 1}


def test_nearest_rank_quantiles():
    values = list(range(1, 31))
    assert [nearest_rank(values, p) for p in (250, 500, 900, 999)] == [8, 15, 27, 30]
    assert nearest_rank([], 500) == 0
    assert nearest_rank([4], 999) == 4


def test_past_max_samples_count_min_max_mean_stay_exact():
    h = Histogram("x", max_samples=10)
    for v in range(1000):
        h.add(v)
    snap = h.snapshot()
    assert (snap["X_num_ops"], snap["X_min"], snap["X_max"], snap["X_mean"]) == (1000, 0, 999, 499)
    assert 0 <= snap["X_median"] <= 999


def test_periodic_snapshot_takes_a_new_one_only_when_the_period_passed():
    now = [100.0]
    taken = []

    def take():
        taken.append(now[0])
        return {"n": len(taken)}

    cache = PeriodicSnapshot(2.0, take, clock=lambda: now[0])
    assert cache.get() == {"n": 1}
    now[0] = 101.9
    assert cache.get() == {"n": 1}
    now[0] = 102.0
    assert cache.get() == {"n": 2}
    now[0] = 150.0
    assert cache.get() == {"n": 3} and taken == [100.0, 102.0, 150.0]


def test_a_call_queue_never_runs_more_than_its_handlers_and_serves_in_arrival_order():
    queue = CallQueue("general", 2)
    queue.enter()
    queue.enter()
    assert (queue.active, queue.queued) == (2, 0)
    order = []
    waiters = []
    for i in range(3):
        entered = threading.Event()

        def wait(i=i, entered=entered):
            queue.enter()
            order.append(i)
            entered.set()
        t = threading.Thread(target=wait, daemon=True)
        t.start()
        waiters.append((t, entered))
        while queue.queued != i + 1:  # each waiter is queued before the next starts
            threading.Event().wait(0.001)
    assert (queue.active, queue.queued) == (2, 3)
    for i in range(3):
        queue.leave()  # a call ends: its handler goes straight to the oldest waiting call
        assert waiters[i][1].wait(5)
        assert (queue.active, queue.queued) == (2, 2 - i)
    assert order == [0, 1, 2]
    queue.leave()
    queue.leave()
    assert (queue.active, queue.queued) == (0, 0)


def test_a_scheduler_call_feeds_the_ipc_and_server_beans():
    scheduler = RpcScheduler(handlers=2, replication_handlers=1, period_s=0.0)
    assert scheduler.call(scheduler.general, lambda: [b"x" * 50], op="scanTime", request_size=10,
                          response_size=lambda r: len(r[0]), client="c") == [b"x" * 50]
    ipc = scheduler.ipc_bean()
    assert ipc["queueSize"] == 0 and ipc["numCallsInGeneralQueue"] == 0 and ipc["numActiveHandler"] == 0
    assert ipc["numOpenConnections"] == 1 and ipc["receivedBytes"] == 10 + CALL_OVERHEAD
    assert ipc["ProcessCallTime_num_ops"] == 1 and ipc["RequestSize_max"] == 10 + CALL_OVERHEAD
    server = scheduler.server_bean()
    assert server["totalRequestCount"] == 1 and server["ScanTime_num_ops"] == 1 and server["ScanSize_max"] == 50
    assert server["Get_num_ops"] == 0 and server["slowGetCount"] == 0

    with pytest.raises(KeyError):
        scheduler.call(scheduler.general, lambda: {}["missing"], op="get")
    ipc = scheduler.ipc_bean()
    assert ipc["exceptions"] == 1 and ipc["exceptions.otherExceptions"] == 1 and ipc["queueSize"] == 0
    assert ipc["ProcessCallTime_num_ops"] == 1  # RpcServer.call records times of answered calls only
    assert scheduler.server_bean()["Get_num_ops"] == 0


@pytest.mark.parametrize("key, value", [("handler_count", 0), ("replication_handler_count", True),
                                        ("metrics_period_s", 0), ("handler_count", 2.5)])
def test_handler_settings_are_validated(key, value):
    with pytest.raises(ConfigError, match=key):
        ClusterConfig(name="dc1", znode_parent="/hbase-dc1", **{key: value})
