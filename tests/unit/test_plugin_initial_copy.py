"""The dashboard's initial copy section: each table's method, and a snapshot export's files and bytes done, rate, ETA
and what it left (views.export_rows, pure), on the run page and in the JSON API (a ledger written as the export
writes it)."""
from __future__ import annotations

from urllib.parse import quote

from hbase_migration.ledger.store import Ledger
from hbase_migration.plugins.hbase_migration_ui.views import export_rows
from tests.unit.test_plugin_dashboard import mounted, text_of

GIB = 1 << 30


def _ledger(path) -> str:
    url = f"sqlite:///{path}"
    with Ledger.open(url) as ledger:
        ledger.start_run("run-s", "hbase_table_migration", "manual", "zk:2181:/hbase", "zkb:2181:/hbase", "p1",
                         ["big", "small", "gone"], started_ms=1)
        for table, method, reason in (("big", "snapshot", "auto: 12.0 GiB of store files (sizing) >= ..."),
                                      ("small", "scan", "auto: 3.0 MiB of store files (sizing) < ..."),
                                      ("gone", "snapshot", "initial_copy snapshot")):
            ledger.initial_copy("run-s", table, method, reason, decided_ms=2)
        ledger.snapshot_export_start("run-s", "big", "hbase_migration-big-0a", "a", "b", now=3)
        ledger.snapshot_export_state("run-s", "big", "manifest_copied", now=4)
        ledger.snapshot_export_progress("run-s", "big", files_total=40, bytes_total=12 * GIB, files_done=10,
                                        bytes_done=3 * GIB, bytes_per_s=100 << 20, eta_s=92.16, now=5)
        ledger.snapshot_file_done("run-s", "big", "hbase_migration-big-0a", "data/default/big/r/f/1", GIB, "copied",
                                  found_in="archive", finished_ms=5)
        ledger.snapshot_export_start("run-s", "gone", "hbase_migration-gone-0b", "a", "b", now=3)
        ledger.snapshot_export_state("run-s", "gone", "failed", {"reason": "the source snapshot was deleted",
                                                                 "left": "Left: no source snapshot ..."}, now=6)
    return url


def test_export_rows(tmp_path):
    with Ledger.open(_ledger(tmp_path / "l.db")) as ledger:
        rows = export_rows(ledger.initial_copy_summary("run-s"), ["big", "small", "gone", "undecided"])
    big, small, gone = rows
    assert (big.method, big.state, big.level, big.running, big.files_done, big.files_total) == (
        "snapshot", "manifest_copied", "warn", True, 10, 40)
    assert (big.bytes_done, big.bytes_total, big.percent, big.eta_ms, big.found_in_archive) == (
        3 * GIB, 12 * GIB, 25.0, 92160, 1)
    assert (small.method, small.state, small.snapshot) == ("scan", None, None)
    assert (gone.state, gone.level, gone.left, gone.running, gone.bytes_per_s) == (
        "failed", "bad", "Left: no source snapshot ...", False, None)


def test_the_run_page_and_the_api_show_it(tmp_path):
    with mounted(_ledger(tmp_path / "l.db")) as client:
        page = client.get(f"/hbase-migration/runs/{quote('run-s', safe='')}")
        api = client.get("/hbase-migration/api/initial-copy/run-s").json()
    assert page.status_code == 200
    shown = text_of(page.text)
    assert ("Initial copy Table Method Snapshot State Files Done Bytes Rate ETA Found in archive/ big snapshot "
            "hbase_migration-big-0a manifest_copied 10 of 40 25% 3.0 GiB of 12.0 GiB 100.0 MiB/s 1m32s 1") in shown
    assert "small scan" in shown and "Left: no source snapshot ..." in shown
    assert api["methods"]["big"]["method"] == "snapshot" and api["exports"]["big"]["bytes_done"] == 3 * GIB
