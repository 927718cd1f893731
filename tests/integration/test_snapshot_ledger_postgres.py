"""The snapshot export's ledger statements (schema 6) on a real PostgreSQL: the first decision of a table's initial
copy stands, the export's states keep their first instants, finished files are upserts, the totals are integers
(PostgreSQL's SUM of BIGINT is NUMERIC)."""
from __future__ import annotations

import uuid

import pytest

from hbase_migration.ledger.store import Ledger

pytestmark = pytest.mark.integration


@pytest.fixture
def pg_url(postgres):
    return postgres.create_database("snapledger_" + uuid.uuid4().hex[:8])


def test_the_snapshot_export_statements_on_postgresql(pg_url):
    with Ledger.open(pg_url) as ledger:
        ledger.start_run("run-1", "d", "p", "zk:2181:/hbase", "zkb:2181:/hbase", "mig1", ["ns:t"], started_ms=1)
        assert ledger.initial_copy("run-1", "ns:t", "snapshot", "asked", decided_ms=2) == "snapshot"
        assert ledger.initial_copy("run-1", "ns:t", "scan", "asked again", decided_ms=3) == "snapshot"
        assert ledger.initial_copies("run-1") == {"ns:t": {"method": "snapshot", "reason": "asked", "decided_ms": 2}}
        row = ledger.snapshot_export_start("run-1", "ns:t", "snap1", "zk:2181:/hbase", "zkb:2181:/hbase", now=10)
        assert (row["state"], row["files_done"], row["started_ms"]) == ("started", 0, 10)
        ledger.snapshot_export_state("run-1", "ns:t", "snapshot_taken", now=11)
        ledger.snapshot_export_state("run-1", "ns:t", "snapshot_taken", now=12)  # a repeated step keeps 11
        ledger.snapshot_export_state("run-1", "ns:t", "failed", {"reason": "x"}, now=13)
        ledger.snapshot_export_state("run-1", "ns:t", "cloned", now=14)
        ledger.snapshot_export_progress("run-1", "ns:t", files_total=3, bytes_total=300, files_done=2,
                                        bytes_done=200, bytes_per_s=50.5, eta_s=2.0, now=15)
        for path, size in (("data/ns/t/r1/f/a", 100), ("data/ns/t/r2/f/b", 100)):
            ledger.snapshot_file_done("run-1", "ns:t", "snap1", path, size, "copied", found_in="archive",
                                      checksum={"algorithm": "MD5-of-0MD5-of-512CRC32C", "bytes": "00"},
                                      finished_ms=16)
        ledger.snapshot_file_done("run-1", "ns:t", "snap1", "data/ns/t/r1/f/a", 100, "matched", finished_ms=17)
        export = ledger.snapshot_exports("run-1")["ns:t"]
        files = ledger.snapshot_files("run-1", "ns:t")
    assert (export["state"], export["snapshot_taken_ms"], export["cloned_ms"], export["updated_ms"]) == (
        "cloned", 11, 14, 15)
    assert export["detail"] == {"reason": "x"}  # a state without detail keeps the last one
    assert (export["bytes_done"], export["bytes_per_s"], export["eta_s"]) == (200, 50.5, 2.0)
    assert export["files"] == {"files": 2, "bytes": 200, "found_in_archive": 1, "first_ms": 16, "last_ms": 17}
    assert type(export["files"]["bytes"]) is int
    assert files["data/ns/t/r1/f/a"]["status"] == "matched" and files["data/ns/t/r1/f/a"]["checksum"] is None
    assert files["data/ns/t/r2/f/b"]["checksum"] == {"algorithm": "MD5-of-0MD5-of-512CRC32C", "bytes": "00"}
