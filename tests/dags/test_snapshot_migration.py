"""The migration DAG with `initial_copy=snapshot` end to end on real HBase (realhbase), a live writer on the source
throughout: the peer added DISABLED, a FLUSH snapshot exported over WebHDFS by Spark tasks and cloned on the target
(into a namespace the target lacked), the backlog replayed, every version of every row compared independently
afterwards (demo/workload.py's plain Thrift2 client), and a KEEP_DELETED_CELLS family whose cells deleted before the
copy are still there on the target, hidden from reads and shown by the real shell's raw scan."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.snapshot_bed import (
    BedTable,
    connection,
    delete_kept_cells,
    exists,
    load,
    raw_scan,
    shell_ok,
    unique,
)

# make test-full: make test's migration on real HBase (tests/dags/test_migration_end_to_end.py) copies one of its
# tables by snapshot in the same run; this one adds a namespace the target lacks and a KEEP_DELETED_CELLS family.
pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase, pytest.mark.full]

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def airflow_env(dc1: dict, dc2: dict, ledger_path: Path) -> dict[str, str]:
    return {**os.environ, "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_CONN_HBASE_SOURCE": connection(dc1), "AIRFLOW_CONN_HBASE_TARGET": connection(dc2),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{ledger_path}"}


def _writer_class():
    from demo.workload import LiveWriter

    class Writer(LiveWriter):
        """demo/workload.py's writer, but its single-version deletes stay out of the family that keeps deleted cells:
        there, with more versions written than VERSIONS keeps, what a read shows after such a delete depends on
        when each cluster flushed and compacted (HBASE-15968; NEW_VERSION_BEHAVIOR makes it deterministic), so the
        two sides may legitimately show different old versions, whatever copied them. Row and column deletes, new
        versions and old-timestamp puts still go to both families."""

        def _delete_one_version(self, client, table, row):
            versions = {c: v for c, v in client.versions(table.name, row).items() if len(v) > 1
                        and not c.startswith(b"k:")}
            if not versions:
                return
            column = self.random.choice(sorted(versions))
            client.delete(table.name, row, column, self.random.choice(versions[column][1:])[0])
            self.stats.version_deletes += 1

    return Writer


def run_snapshot_migration(bed, workdir: Path, rows: int = 3000, write_rate: float = 20.0,
                           timeout_s: float = 2400) -> dict:
    """The scenario (also runnable against a test bed that is up already); returns what the assertions read."""
    from demo.run import wait_for_catch_up
    from demo.workload import Thrift2, compare
    from hbase_migration.ledger.store import Ledger

    workdir.mkdir(parents=True, exist_ok=True)
    endpoints = bed.endpoints()
    dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
    table = BedTable(f"{unique('snapns')}:events")
    peer = unique("snappeer")
    shell_ok(bed, "dc1", table.create_statements())
    load(dc1, table, rows)
    deleted = delete_kept_cells(dc1, table)
    ledger_path = workdir / "ledger.db"
    env = airflow_env(dc1, dc2, ledger_path)
    conf = {"tables": [table.name], "peer_id": peer, "initial_copy": "snapshot", "sizing": False, "bulk_loads": "none",
            "expected_copy_s": 600, "recompare_sleep_s": 5, "stable_samples": 3, "max_lag_ms": 30_000,
            # HBase's version retention can leave an extra old version on the target when edits race (docs/
            # data-path.md "Versions"): verify names it and repairs exactly that version, as the demo asks.
            "repair": True}
    writer = _writer_class()(lambda: Thrift2(dc1), [table.sample(rows)], ops_per_second=write_rate).start()
    dag_log = workdir / "dags-test.log"
    try:
        with open(dag_log, "w") as out:
            dag = subprocess.Popen([str(Path(PY).parent / "airflow"), "dags", "test", "hbase_table_migration", "-c",
                                    json.dumps(conf)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
            caught_up = wait_for_catch_up(f"sqlite:///{ledger_path}", "manual__", timeout_s, dag)
            stats = writer.stop()
            rc = dag.wait(timeout=timeout_s)
        if rc == 0:  # the writer's last edits ship before the comparison
            subprocess.run([PY, "-m", "hbase_migration", "lag", "--source", "hbase_source", "--peer-id", peer,
                            "--watch", "--interval-s", "2", "--watch-timeout-s", "300", "--json"], env=env, cwd=REPO,
                           capture_output=True, timeout=400)
        src, dst = Thrift2(dc1), Thrift2(dc2)
        try:
            comparison = compare(src, dst, table.name)
        finally:
            src.close()
            dst.close()
        raw_target = raw_scan(bed, "dc2", table.name, start="kept-", stop="kept.")
        with Ledger.open(f"sqlite:///{ledger_path}") as ledger:
            run_id = next(r["run_id"] for r in ledger.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
            summary = ledger.run_summary(run_id)
            initial = ledger.initial_copy_summary(run_id)
        export = initial["exports"].get(table.name, {})
        snapshot = export.get("snapshot_name")
        return {"rc": rc, "caught_up": caught_up, "writer": stats.as_dict(), "table": table.name, "peer": peer,
                "comparison": comparison.as_dict(), "deleted_values": deleted, "raw_target": raw_target,
                "summary": summary, "initial": initial, "snapshot": snapshot,
                "snapshot_left": {name: exists(ep, f"/hbase/.hbase-snapshot/{snapshot}")
                                  for name, ep in (("dc1", dc1), ("dc2", dc2))} if snapshot else None,
                "dag_log": str(dag_log)}
    finally:
        writer.stop()
        # the peer would pin the shared source's WALs for the rest of the session
        subprocess.run([PY, "-m", "hbase_migration", "peer", "remove", "--source", "hbase_source", "--peer-id", peer],
                       env=env, cwd=REPO, capture_output=True, timeout=600)


@pytest.mark.timeout(1800)  # make test's two workers share two cores: several times its quiet-machine time
def test_migration_by_snapshot_with_a_live_writer(realhbase, tmp_path):
    started = time.monotonic()
    r = run_snapshot_migration(realhbase, tmp_path)
    log_tail = Path(r["dag_log"]).read_text(errors="replace")[-3000:]
    assert r["rc"] == 0 and r["summary"]["run"]["status"] == "success", (r["rc"], r["summary"]["run"], log_tail)
    assert r["caught_up"] is not None
    writer = r["writer"]
    for kind in ("puts", "overwrites", "old_puts", "deletes", "column_deletes", "version_deletes"):
        assert writer[kind] > 0, (kind, writer)  # the writer ran during the export and the catch-up
    assert writer["errors"] == 0, writer
    # the table went by snapshot, cloned, and both snapshots are gone
    assert r["initial"]["methods"][r["table"]]["method"] == "snapshot", r["initial"]
    export = r["initial"]["exports"][r["table"]]
    assert export["state"] == "cleaned" and export["cloned_ms"], export
    assert export["files"]["files"] == export["files_total"] > 0, export
    assert r["snapshot_left"] == {"dc1": False, "dc2": False}, r["snapshot_left"]
    copy_detail = json.loads(r["summary"]["phases"][r["table"]]["copy"]["detail"])
    assert copy_detail["method"] == "snapshot" and copy_detail["cloned"] is True, copy_detail
    # every version of every row, compared independently: no difference
    cmp = r["comparison"]
    assert cmp["differences"] == 0, cmp
    assert cmp["source_rows"] == cmp["target_rows"] > 0 and cmp["source_cells"] == cmp["target_cells"], cmp
    # the family keeping deleted cells: the cells deleted before the copy are on the target, hidden from a read
    # (the comparison above, which matched the source's reads) and shown by a raw scan with their markers
    raw = "\n".join(r["raw_target"])
    missing = [v.decode() for v in r["deleted_values"] if f"value={v.decode()}" not in raw]
    assert not missing, (missing, raw[:3000])
    markers = [line for line in r["raw_target"] if "column=k:gone" in line and "type=Delete" in line]
    assert len(markers) >= len(r["deleted_values"]), raw[:3000]
    verified = r["summary"]["verification"][r["table"]]
    assert verified and verified[-1]["clean"], verified
    print(f"snapshot migration of {r['table']}: {time.monotonic() - started:.0f}s, export {export}")
