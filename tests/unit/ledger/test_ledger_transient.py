"""Which database errors a ledger write may wait out (a restart or failover), and the bounded retry of the
copy's partition records (regression: the chaos harness's postgres_restart, seed 3, failed a whole copy job)."""
from __future__ import annotations

import sqlite3

import psycopg
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from hbase_migration.data.progress import LedgerStore, retry_transient
from hbase_migration.ledger.store import is_transient


def _wrapped(cls, orig, invalidated=False):
    return cls("INSERT ...", {}, orig, connection_invalidated=invalidated)


@pytest.mark.parametrize("error, transient", [
    (_wrapped(OperationalError, psycopg.OperationalError("connection failed: Connection refused")), True),
    (_wrapped(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")), True),
    (_wrapped(OperationalError, psycopg.InterfaceError("the connection is closed")), True),
    (_wrapped(ProgrammingError, psycopg.errors.UndefinedTable("relation \"copy_partitions\" does not exist")), False),
    (_wrapped(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")), False),
    (_wrapped(ProgrammingError, psycopg.errors.UndefinedTable("x"), invalidated=True), True),
    (_wrapped(OperationalError, sqlite3.OperationalError("database is locked")), True),
    (_wrapped(OperationalError, sqlite3.OperationalError("no such table: copy_partitions")), False),
    (ConnectionError("not a database error"), False),
    (ValueError("bad input"), False),
])
def test_only_lost_connections_and_busy_files_are_transient(error, transient):
    assert is_transient(error) is transient


class FakeTime:
    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s

    def clock(self):
        return self.now


def refused():
    """A new error each raise: one shared instance would carry every earlier raise's traceback along."""
    return _wrapped(OperationalError, psycopg.OperationalError("connection failed: Connection refused"))


def test_a_transient_error_is_retried_with_growing_waits_until_it_succeeds():
    t, calls = FakeTime(), []

    def fn():
        calls.append(t.now)
        if len(calls) < 6:
            raise refused()
        return "recorded"

    assert retry_transient(fn, "recording p1", 120, sleep=t.sleep, clock=t.clock) == "recorded"
    assert t.sleeps == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_past_its_bound_or_for_another_error_the_retry_raises():
    t = FakeTime()

    def down():
        raise refused()

    with pytest.raises(OperationalError):
        retry_transient(down, "recording p1", 20, sleep=t.sleep, clock=t.clock)
    assert t.sleeps == [1.0, 2.0, 4.0, 8.0]  # a 10 s wait would pass the 20 s bound: raised instead
    t2 = FakeTime()
    with pytest.raises(ValueError):
        retry_transient(lambda: (_ for _ in ()).throw(ValueError("bad row")), "x", 120, sleep=t2.sleep,
                        clock=t2.clock)
    assert t2.sleeps == []


def test_the_ledger_store_retries_each_partition_record():
    recorded, failures, waits = [], [refused(), refused()], []

    class FlakyLedger:
        def done_partitions(self, copy_id, table):
            return set()

        def partition_done(self, copy_id, table, pid, start, stop, rows, cells, nbytes, fingerprint=None):
            if failures:
                raise failures.pop()
            recorded.append(pid)

    # the store's own waits, faked: patching time.sleep would also catch every other thread's sleeps (py4j's)
    LedgerStore(FlakyLedger(), retry_s=30, sleep=waits.append).partitions_done("c", "t", [
        {"partition_id": "p1", "start_row": b"", "stop_row": b"m", "rows": 1, "cells": 1, "bytes": 1},
        {"partition_id": "p2", "start_row": b"m", "stop_row": b"", "rows": 1, "cells": 1, "bytes": 1}])
    assert recorded == ["p1", "p2"] and waits == [1.0, 2.0]


def test_the_ledger_stores_reads_and_plan_wait_too():
    failures, waits = {"finished_ranges": [refused()], "done_partitions": [refused()], "copy_plan": [refused()]}, []

    class FlakyLedger:
        def _maybe_fail(self, name):
            if failures[name]:
                raise failures[name].pop()

        def done_partitions(self, copy_id, table):
            self._maybe_fail("done_partitions")
            return {"p1"}

        def finished_ranges(self, copy_id, table):
            self._maybe_fail("finished_ranges")
            return [{"partition_id": "p1", "start_row": b"", "stop_row": b"m", "fingerprint": "f"}]

        def partition_done(self, *args, **kwargs):
            pass

        def copy_plan(self, copy_id, table, partitions, est_rows=None):
            self._maybe_fail("copy_plan")

    store = LedgerStore(FlakyLedger(), retry_s=30, sleep=waits.append)
    assert store.done_partitions("c", "t") == {"p1"}
    assert [r.partition_id for r in store.finished_ranges("c", "t")] == ["p1"]
    store.copy_plan("c", "t", 4)
    assert waits == [1.0, 1.0, 1.0] and not any(failures.values())
