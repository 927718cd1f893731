"""progress.py: token bucket and throttle with a fake clock, ETA arithmetic, the savepoint store."""
from __future__ import annotations

import json

import pytest

from hbase_migration.data.progress import (
    LedgerStore,
    ProgressMeter,
    SavepointError,
    SavepointFile,
    Throttle,
    TokenBucket,
    eta_seconds,
    human_bytes,
    human_duration,
    rate,
    record_done,
)
from hbase_migration.data.resume import FinishedRange
from tests.fake_clock import FakeClock


def test_token_bucket_allows_the_burst_then_paces_at_the_rate():
    clock = FakeClock(1000.0)
    bucket = TokenBucket(100, clock=clock, sleep=clock.sleep)  # burst = 100 tokens
    assert bucket.acquire(100) == 0.0
    assert bucket.acquire(50) == pytest.approx(0.5)  # 50 tokens of debt at 100/s
    assert bucket.acquire(100) == pytest.approx(1.0)
    clock.now += 10  # idle: refills only up to the burst
    assert bucket.acquire(100) == 0.0
    assert bucket.acquire(1) == pytest.approx(0.01)
    assert clock.slept == [0.5, 1.0, 0.01]


def test_token_bucket_long_run_rate_never_exceeds_the_limit():
    clock = FakeClock(1000.0)
    bucket = TokenBucket(1000, burst=100, clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(200):
        bucket.acquire(500)  # requests bigger than the burst are allowed, then paid for
    elapsed = clock.now - start
    assert 200 * 500 / elapsed == pytest.approx(1000, rel=0.01)


def test_token_bucket_rejects_bad_settings():
    with pytest.raises(ValueError, match="rate must be > 0, got 0"):
        TokenBucket(0)
    with pytest.raises(ValueError, match="burst must be > 0"):
        TokenBucket(5, burst=-1)


def test_throttle_applies_both_limits_and_can_be_off():
    clock = FakeClock(1000.0)
    throttle = Throttle(rows_per_s=10, bytes_per_s=1000, clock=clock, sleep=clock.sleep)
    assert throttle.enabled
    assert throttle.acquire(10, 1000) == 0.0
    # 5 rows = 0.5 s of row debt; the bytes bucket refills 500 B during that sleep, so
    # 2000 B leave 1500 B of debt: 1.5 s more.
    slept = throttle.acquire(5, 2000)
    assert slept == pytest.approx(0.5 + 1.5)
    off = Throttle()
    assert not off.enabled and off.acquire(10**9, 10**12) == 0.0


def test_rate_and_eta():
    assert rate(100, 4) == 25.0
    assert rate(100, 0) == 0.0
    assert eta_seconds(25, 100, 10) == 30.0
    assert eta_seconds(100, 100, 10) == 0.0
    assert eta_seconds(120, 100, 10) == 0.0
    assert eta_seconds(0, 100, 10) is None
    assert eta_seconds(5, None, 10) is None
    assert eta_seconds(5, 100, 0) is None


def test_human_units():
    assert human_bytes(512) == "512 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    assert human_duration(3725) == "1h02m05s"
    assert human_duration(65) == "1m05s"
    assert human_duration(4.4) == "4s"
    assert human_duration(None) == "?"


def test_progress_meter_eta_by_rows_when_known_else_by_partitions():
    clock = FakeClock(1000.0)
    meter = ProgressMeter(total_partitions=4, total_rows=1000, clock=clock)
    clock.now += 10
    meter.add(rows=250, cells=500, nbytes=10_000, partitions=1)
    snap = meter.snapshot()
    assert snap == {
        "rows": 250, "cells": 500, "bytes": 10_000, "partitions_done": 1, "partitions_total": 4,
        "elapsed_s": 10.0, "rows_per_s": 25.0, "cells_per_s": 50.0, "bytes_per_s": 1000.0, "eta_s": 30.0,
    }
    assert meter.line() == ("1/4 partitions, 250 rows, 500 cells, 9.8 KiB in 10s "
                            "(25 rows/s, 1000 B/s), ETA 30s")
    by_parts = ProgressMeter(total_partitions=4, clock=clock)
    clock.now += 20
    by_parts.add(rows=1, partitions=2)
    assert by_parts.snapshot()["eta_s"] == 20.0


def test_savepoint_records_and_reads_done_partitions(tmp_path):
    sp = SavepointFile(tmp_path / "sub" / "copy.savepoint.json")
    assert sp.done_partitions("c1", "t") == set()
    sp.partition_done("c1", "t", "p1", b"", b"g", 10, 20, 300)
    record_done(sp, "c1", "t", [
        {"partition_id": "p2", "start_row": b"g", "stop_row": b"\xff", "rows": 1, "cells": 2, "bytes": 3,
         "fingerprint": "0123456789abcdef"},
    ])
    sp.partition_done("c2", "t", "p9", b"a", b"b", 0, 0, 0)
    assert sp.done_partitions("c1", "t") == {"p1", "p2"}
    assert sorted(sp.finished_ranges("c1", "t"), key=lambda r: r.partition_id) == [
        FinishedRange("p1", b"", b"g", None), FinishedRange("p2", b"g", b"\xff", "0123456789abcdef")]
    assert sp.done_partitions("c1", "other") == set()
    data = json.loads((tmp_path / "sub" / "copy.savepoint.json").read_text())
    entry = data["copies"]["c1"]["t"]["p2"]
    assert (data["version"], entry["start_row"], entry["stop_row"], entry["rows"], entry["cells"],
            entry["bytes"]) == (1, "67", "ff", 1, 2, 3)
    # no temporary file is left behind
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == [
        "copy.savepoint.json", "copy.savepoint.json.lock",
    ]


def test_savepoint_refuses_a_file_that_is_not_a_savepoint(tmp_path):
    path = tmp_path / "sp.json"
    path.write_text("{not json")
    with pytest.raises(SavepointError, match="is not valid JSON"):
        SavepointFile(path).done_partitions("c", "t")
    path.write_text('{"version": 7, "copies": {}}')
    with pytest.raises(SavepointError, match="is not a version-1 savepoint"):
        SavepointFile(path).partition_done("c", "t", "p", b"", b"", 0, 0, 0)
    assert json.loads(path.read_text()) == {"version": 7, "copies": {}}  # unchanged


def test_ledger_store_forwards_to_the_ledger_api():
    calls = []

    class Ledger:
        def partition_done(self, *args, **kwargs):
            calls.append((args, kwargs))

        def done_partitions(self, copy_id, table):
            return ["p1"]

    store = LedgerStore(Ledger())
    assert store.done_partitions("c", "t") == {"p1"}
    record_done(store, "c", "t", [{"partition_id": "p2", "start_row": b"a", "stop_row": b"b", "rows": 1,
                                   "cells": 2, "bytes": 3, "fingerprint": "f" * 16}])
    assert calls == [(("c", "t", "p2", b"a", b"b", 1, 2, 3), {"fingerprint": "f" * 16})]
    with pytest.raises(TypeError, match="has no partition_done\\(\\) method"):
        LedgerStore(object())


def test_ledger_store_over_the_real_ledger_on_sqlite(tmp_path):
    from hbase_migration.ledger.store import Ledger

    store = LedgerStore(Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}"))
    assert store.done_partitions("copy-1", "t") == set()
    record_done(store, "copy-1", "t", [
        {"partition_id": "p1", "start_row": b"", "stop_row": b"g", "rows": 10, "cells": 20, "bytes": 300},
        {"partition_id": "p2", "start_row": b"g", "stop_row": b"", "rows": 1, "cells": 1, "bytes": 9},
    ])
    record_done(store, "copy-1", "t", [  # a partition re-copied after a crash is recorded again, not twice
        {"partition_id": "p2", "start_row": b"g", "stop_row": b"", "rows": 1, "cells": 1, "bytes": 9}])
    assert store.done_partitions("copy-1", "t") == {"p1", "p2"}
    assert store.done_partitions("copy-1", "other") == set() and store.done_partitions("copy-2", "t") == set()
    assert store.finished_ranges("copy-1", "t") == [FinishedRange("p1", b"", b"g", None),
                                                    FinishedRange("p2", b"g", b"", None)]
