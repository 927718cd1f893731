"""The snapshot export under what goes wrong, on real HBase and HDFS (realhbase), through the CLI
(`python -m hbase_migration snapshot-export`, a subprocess with its own Spark):

- a Spark task killed mid-file (its Python worker SIGKILLed): Spark runs it again, and the retry re-copies no file
  that was finished (the files staged then keep their modification time into archive/; no file is copied twice);
- a major compaction of the source table started during the export: its files move to archive/, where the copier
  finds them (HBASE-22877), and the export succeeds;
- a target without the space (a space quota on its archive/): refused before the snapshot is taken, nothing changed;
- the source snapshot deleted by hand mid-export: a clear failure naming what is left where;
- the target's master restarted mid-export (on this bed with its NameNode and DataNode: one JVM, so the whole
  target cluster): HBase's start-up removes every working directory of `.hbase-snapshot/.tmp` (resetTempDir), where
  ExportSnapshot would have staged the manifest; the export's staged files survive, its tasks wait for the target
  to answer again, and the export finishes without copying a finished file again.

Each takes minutes (a snapshot, a Spark job, a clone: real JVMs on two shared cores): `full`. Every test has its
own table and snapshot names. The verdicts read the clusters without toolkit code (tests/snapshot_bed.py).
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from tests.snapshot_bed import (
    BedTable,
    compare_sides,
    exists,
    listing,
    load,
    mkdirs,
    shell_ok,
    snapshot_cli,
    spark_python_workers,
    summary_of,
    unique,
    wait_ledger,
    webhdfs,
)

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow]

SPLITS = tuple(b"%02x" % b for b in range(0x20, 0x100, 0x20))  # 8 regions


def _table(bed, rows: int = 4000, value_bytes: int = 2000) -> tuple[BedTable, dict, dict]:
    """A table of its own on dc1, ~8 MB over 8 regions (a file per region and family once flushed)."""
    endpoints = bed.endpoints()
    dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
    table = BedTable(unique("snapx_"), SPLITS)
    shell_ok(bed, "dc1", table.create_statements())
    load(dc1, table, rows, value_bytes=value_bytes)
    return table, dc1, dc2


def _files_done(ledger, copy_id: str, table: str) -> dict:
    return ledger.snapshot_files(copy_id, table)


def _archive(table: str) -> str:
    return f"/hbase/archive/data/default/{table}"


@pytest.mark.full
def test_a_spark_task_killed_mid_file_re_copies_no_finished_file(realhbase, tmp_path):
    table, dc1, dc2 = _table(realhbase)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("kill-")
    # local[2,4]: two task slots, a task tried up to 4 times; slow enough (256 KiB/s per task) to be killed mid-file
    proc = snapshot_cli(dc1, dc2, table.name, ledger_url, "--copy-id", copy_id, "--master", "local[2,4]",
                        "--tasks", "2", "--task-bytes-per-s", str(256 << 10), wait=False, log=tmp_path / "cli.log")
    try:
        def two_done(led):  # the finished files themselves (the ones that must not be copied again)
            files = _files_done(led, copy_id, table.name)
            return files if len(files) >= 2 else None

        done = wait_ledger(ledger_url, two_done, 900, "two files finished", proc)
        forked, tree = spark_python_workers(proc.pid)
        assert forked, f"no PySpark worker to kill among {tree}"
        from hbase_migration.data.snapshot_export import snapshot_name

        staged = f"/hbase/.hbase-migration-staging/{snapshot_name(copy_id, table.name)}/archive"
        staged_files = listing(dc2, f"{staged}/data/default/{table.name}")
        before = {path: staged_files.get(f"{staged}/{path}", {}).get("modificationTime") for path in done}
        for pid in forked:
            os.kill(pid, signal.SIGKILL)  # the processes this test started: the CLI's own Spark workers
        stdout, _ = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-4000:]
    summary = summary_of(stdout)
    assert summary["cloned"] and summary["copied_twice"] == [], summary
    after = listing(dc2, _archive(table.name))
    for path, mtime in before.items():
        assert mtime is not None and after[f"/hbase/archive/{path}"]["modificationTime"] == mtime, path
    assert "Python worker exited unexpectedly" in log or "crashed" in log or "Lost task" in log, log[-3000:]
    cmp = compare_sides(dc1, dc2, table.name)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, cmp


@pytest.mark.full
def test_a_major_compaction_during_the_export_still_succeeds(realhbase, tmp_path):
    table, dc1, dc2 = _table(realhbase)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("compact-")
    # slow enough (~8.7 MiB at 40 KiB/s: ~3.7 minutes) to outlast the compaction: its files leave data/ for archive/
    # only when the region server's CompactedHFilesDischarger chore next runs (every 2 minutes by default); at 96
    # KiB/s an idle machine's export once ended first
    proc = snapshot_cli(dc1, dc2, table.name, ledger_url, "--copy-id", copy_id, "--workers", "1",
                        "--bytes-per-s", str(40 << 10), wait=False, log=tmp_path / "cli.log")
    try:
        wait_ledger(ledger_url, lambda led: len(_files_done(led, copy_id, table.name)) >= 1, 900,
                    "a first file finished", proc)
        shell_ok(realhbase, "dc1", [f"major_compact '{table.name}'"])
        # the compaction ends when the snapshot's files have left data/ for archive/ (the snapshot keeps them there)
        deadline = time.monotonic() + 600
        while not listing(dc1, _archive(table.name)) and time.monotonic() < deadline:
            time.sleep(2)
        archived = listing(dc1, _archive(table.name))
        assert archived, "the major compaction moved nothing to archive/ within 10 minutes"
        from hbase_migration.ledger.store import Ledger

        with Ledger.open(ledger_url) as ledger:
            finished = len(_files_done(ledger, copy_id, table.name))
            total = (ledger.snapshot_export(copy_id, table.name) or {}).get("files_total")
        assert total and finished < total, (f"the export finished ({finished} of {total}) before the compaction "
                                            "moved its files: slow it down (--bytes-per-s)")
        stdout, _ = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-4000:]
    summary = summary_of(stdout)
    assert summary["cloned"] and summary["found_in_archive"] >= 1, summary
    cmp = compare_sides(dc1, dc2, table.name)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, cmp


@pytest.mark.full
def test_a_target_without_the_space_is_refused_before_the_snapshot_is_taken(realhbase, tmp_path):
    table, dc1, dc2 = _table(realhbase, rows=2000)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("space-")
    shell_ok(realhbase, "dc1", [f"flush '{table.name}'"])
    # the target's archive/ with a space quota 1 MiB above what it holds: too small for the table's files. (Not a
    # directory of the test's own below it: the target's cleaner chore deletes empty directories under archive/.)
    quota_dir = "/hbase/archive"
    held = webhdfs(dc2, quota_dir, "GETCONTENTSUMMARY")["ContentSummary"]["spaceConsumed"]
    realhbase.set_quota("dc2", quota_dir, space_bytes=held + (1 << 20))
    try:
        done = snapshot_cli(dc1, dc2, table.name, ledger_url, "--copy-id", copy_id, log=tmp_path / "cli.log")
    finally:
        realhbase.set_quota("dc2", quota_dir, space_bytes=-1)
    err = (tmp_path / "cli.log").read_text(errors="replace")
    assert done.returncode == 2, err[-3000:]
    line = next(x for x in err.splitlines() if x.startswith("python -m hbase_migration snapshot-export: error:"))
    assert "refused before the snapshot is taken, nothing changed: snapshot_space: not enough room on the target" \
        in line, line
    assert f"the space quota on {quota_dir} leaves" in line and "hdfs dfsadmin -setSpaceQuota" in line, line
    from hbase_migration.data.snapshot_export import snapshot_name

    assert not exists(dc1, f"/hbase/.hbase-snapshot/{snapshot_name(copy_id, table.name)}")  # nothing taken
    assert not listing(dc2, _archive(table.name))  # nothing copied


@pytest.mark.full
def test_the_source_snapshot_deleted_mid_export_fails_naming_what_is_left_where(realhbase, tmp_path):
    from hbase_migration.data.snapshot_export import snapshot_name

    table, dc1, dc2 = _table(realhbase)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("gone-")
    name = snapshot_name(copy_id, table.name)
    proc = snapshot_cli(dc1, dc2, table.name, ledger_url, "--copy-id", copy_id, "--workers", "1",
                        "--bytes-per-s", str(64 << 10), wait=False, log=tmp_path / "cli.log")
    try:
        wait_ledger(ledger_url, lambda led: len(_files_done(led, copy_id, table.name)) >= 1, 900,
                    "a first file finished", proc)
        shell_ok(realhbase, "dc1", [f"delete_snapshot '{name}'"])
        stdout, _ = proc.communicate(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "cli.log").read_text(errors="replace")
    assert proc.returncode == 1, err[-4000:]
    line = next(x for x in err.splitlines() if x.startswith("python -m hbase_migration snapshot-export: error:"))
    assert f"the source snapshot {name!r} was deleted from source during the export" in line, line
    assert f"Left: no source snapshot {name!r} on source (gone: a re-run takes it again)" in line, line
    staging = f"/hbase/.hbase-migration-staging/{name}"
    assert f"its manifest in {staging}/snapshot on target" in line, line
    assert (f"verified, in {staging} (staged) or /hbase/archive/data/default/{table.name} on target (a re-run skips "
            "them)") in line, line
    assert f"table {table.name} not cloned on target" in line, line
    summary = summary_of(stdout)
    assert summary["left"] in line and summary["error"], summary
    assert exists(dc2, f"{staging}/snapshot/data.manifest")  # the state said is the state there
    assert not exists(dc2, f"/hbase/data/default/{table.name}")


def _wait_ports_free(bed, cluster: str, timeout: float = 240.0) -> None:
    """Until every port the killed cluster listened on can be bound again: the export still holds connections to
    its dead NameNode, whose server side lingers in FIN_WAIT2 up to a minute (tcp_fin_timeout) and keeps the port
    from being bound. A NameNode that restarts keeps its address; so must this one, for the export to find it."""
    import json

    from realhbase.config import port_free

    ports = json.loads((bed.cluster_dir(cluster) / "cluster.json").read_text())["ports"]
    deadline = time.monotonic() + timeout
    while not all(port_free(p) for p in ports.values()):
        assert time.monotonic() < deadline, f"{cluster}'s ports still taken after {timeout:.0f}s"
        time.sleep(2)


@pytest.mark.full
@pytest.mark.timeout(3600)  # a whole cluster restarted on a loaded 2-core machine: minutes
def test_a_target_master_restart_mid_export_loses_and_recopies_no_finished_file(realhbase, tmp_path):
    from hbase_migration.data.snapshot_export import snapshot_name

    table, dc1, dc2 = _table(realhbase)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("restart-")
    staged = f"/hbase/.hbase-migration-staging/{snapshot_name(copy_id, table.name)}"
    # one task at 64 KiB/s: ~2.3 minutes of copying, most of it still ahead when the target goes down
    proc = snapshot_cli(dc1, dc2, table.name, ledger_url, "--copy-id", copy_id, "--workers", "1",
                        "--bytes-per-s", str(64 << 10), wait=False, log=tmp_path / "cli.log")
    try:
        done = wait_ledger(ledger_url, lambda led: (lambda f: f if len(f) >= 2 else None)(
            _files_done(led, copy_id, table.name)), 900, "two files finished", proc)
        files = listing(dc2, f"{staged}/archive/data/default/{table.name}")
        before = {path: files[f"{staged}/archive/{path}"]["modificationTime"] for path in done}
        # a working directory no snapshot procedure owns, where ExportSnapshot stages its manifest: the
        # restarted master must remove it (the proof that its start-up ran SnapshotManager.resetTempDir)
        sentinel = f"/hbase/.hbase-snapshot/.tmp/{unique('sentinel-')}"
        mkdirs(dc2, sentinel)
        killed = realhbase.kill_cluster("dc2")
        assert "dc2/master" in killed
        _wait_ports_free(realhbase, "dc2")
        restarted = realhbase.start_cluster("dc2")
        assert restarted["webhdfs_url"] == dc2["webhdfs_url"] and restarted["thrift2"] == dc2["thrift2"], (
            "dc2 came back on other ports: the export's connection no longer reaches it")
        deadline = time.monotonic() + 300  # the master removes it as it initializes, after it answers
        while exists(dc2, sentinel) and time.monotonic() < deadline:
            time.sleep(2)
        assert not exists(dc2, sentinel), "the restarted master left .hbase-snapshot/.tmp as it was"
        assert proc.poll() is None, "the export ended while the target was down"
        stdout, _ = proc.communicate(timeout=2400)
    finally:
        if proc.poll() is None:
            proc.kill()
        if not any(role.startswith("dc2/") for role in realhbase.running()):
            realhbase.start_cluster("dc2")  # the session's other tests need it
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-4000:]
    assert "a cluster is away" in log and "the clusters answer again" in log, log[-4000:]
    summary = summary_of(stdout)
    assert summary["cloned"] and summary["copied_twice"] == [] and summary["files_failed"] == 0, summary
    after = listing(dc2, _archive(table.name))
    for path, mtime in before.items():  # moved into archive/ as staged: the same file, not a second copy
        assert after[f"/hbase/archive/{path}"]["modificationTime"] == mtime, path
    assert not exists(dc2, staged)
    cmp = compare_sides(dc1, dc2, table.name)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, cmp


def test_bad_input_is_one_line_exit_2_and_changes_nothing(tmp_path):
    """No cluster is needed to refuse these (no realhbase)."""
    import json
    import subprocess
    import sys

    conn = {"conn_type": "hbase", "host": "127.0.0.1", "port": 9090,
            "extra": {"zookeeper_quorum": "127.0.0.1", "zookeeper_port": 1, "webhdfs_url": "http://127.0.0.1:9"}}
    bare = {**conn, "extra": {"zookeeper_quorum": "127.0.0.1", "zookeeper_port": 1}}
    ledger = ["--ledger-url", f"sqlite:///{tmp_path / 'l.db'}"]
    for extra, message in (
            (["--source", json.dumps(bare), "--target", json.dumps(conn), "--table", "t"],
             "source: cluster 'source' has no webhdfs_url"),
            (["--source", json.dumps(conn), "--target", json.dumps(conn), "--table", "t", "--checksum", "crc"],
             "argument --checksum: invalid choice"),
            (["--source", json.dumps(conn), "--target", json.dumps(conn), "--table", "t", "--snapshot=.bad"],
             "snapshot: snapshot name must be"),
            (["--source", json.dumps(conn), "--target", json.dumps(conn), "--table", "t", "--bytes-per-s", "nan"],
             "'nan' is not a finite number")):
        base = [sys.executable, "-m", "hbase_migration", "snapshot-export", *ledger]
        proc = subprocess.run(base + extra, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (extra, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (extra, proc.stderr)
        assert proc.stdout == ""
