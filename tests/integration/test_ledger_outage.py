"""A copy's partition records outlive a restart of the ledger's PostgreSQL (regression: the chaos harness's
postgres_restart during a copy, seed 3, failed the whole copy job at the first partition that finished while
the server was down, and the work of every partition in flight went to the task's retry)."""
from __future__ import annotations

import threading
import time

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture
def own_postgres():
    """A PostgreSQL of this test's own: it is crashed and started again (the session's one is shared)."""
    from deploy.postgres import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


def _record(pid: str) -> dict:
    return {"partition_id": pid, "start_row": b"", "stop_row": b"", "rows": 3, "cells": 5, "bytes": 70}


def test_partition_records_wait_for_the_ledgers_database_to_come_back(own_postgres):
    from hbase_migration.data.progress import LedgerStore
    from hbase_migration.ledger.store import Ledger

    url = own_postgres.create_database("ledger")
    ledger = Ledger.open(url)
    try:
        ledger.start_run("r1", "hbase_table_migration", "manual", "zk:2181:/a", "zk:2181:/b", "p", ["t"])
        store = LedgerStore(ledger, retry_s=60)
        store.partitions_done("r1", "t", [_record("p1")])  # a pooled connection, soon dead

        own_postgres.crash()  # every connection dropped, the port refuses
        back = threading.Timer(4.0, own_postgres.resume)
        back.start()
        started = time.monotonic()
        store.partitions_done("r1", "t", [_record("p2"), _record("p3")])
        waited = time.monotonic() - started
        back.join()
        assert waited >= 3.0  # it waited for the server (the first attempt failed at once)
        assert ledger.done_partitions("r1", "t") == {"p1", "p2", "p3"}

        own_postgres.crash()  # down longer than the bound: the record fails, naming the database error
        short = LedgerStore(ledger, retry_s=3)
        from sqlalchemy.exc import OperationalError

        with pytest.raises(OperationalError):
            short.partitions_done("r1", "t", [_record("p4")])
        own_postgres.resume()
    finally:
        ledger.close()
