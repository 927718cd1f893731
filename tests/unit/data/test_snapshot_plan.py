"""The snapshot export's pure parts: files balanced over tasks (ExportSnapshot's getBalancedSplits), bandwidth per
task, HDFS checksums compared, the snapshot's name and shell statements, who owns what is copied, what a stopped
export says it left, the progress line, the job's argv, and the driver's progress sink."""
from __future__ import annotations

import pytest

from hbase_migration.clusters.hdfs import (
    DIFFERENT,
    EQUAL,
    INCOMPARABLE,
    FileChecksum,
    WebHdfsError,
    compare_checksums,
    parse_file_checksum,
)
from hbase_migration.data.snapshot_copy import (
    COPIED,
    FAILED,
    MATCHED,
    CopySettings,
    FileResult,
    balanced_groups,
    task_rate,
)
from hbase_migration.data.snapshot_export import (
    ExportOptions,
    ExportRefused,
    ProgressSink,
    clone_statements,
    delete_statement,
    job_args,
    left_behind,
    ownership,
    progress_line,
    resume_plan,
    snapshot_name,
    take_statement,
)


def test_balanced_groups_deal_the_largest_first_back_and_forth():
    sizes = [10, 90, 40, 70, 20, 60, 30, 80, 50, 100]
    groups = balanced_groups(sizes, 3, size=lambda s: s)
    # 100 -> g0, 90 -> g1, 80 -> g2, 70 -> g2, 60 -> g1, 50 -> g0, 40 -> g0, 30 -> g1, 20 -> g2, 10 -> g2
    assert groups == [[100, 50, 40], [90, 60, 30], [80, 70, 20, 10]]
    assert [sum(g) for g in groups] == [190, 180, 180]


def test_balanced_groups_are_the_same_every_time_and_never_empty():
    files = [("b", 5), ("a", 5), ("c", 5)]
    assert balanced_groups(files, 2, size=lambda f: f[1], key=lambda f: f[0]) == [[("a", 5)], [("b", 5), ("c", 5)]]
    assert balanced_groups(files, 10, size=lambda f: f[1], key=lambda f: f[0]) == [[("a", 5)], [("b", 5)], [("c", 5)]]
    assert balanced_groups([], 4, size=lambda f: 0) == []
    with pytest.raises(ValueError, match="groups must be >= 1"):
        balanced_groups(files, 0, size=lambda f: f[1])


@pytest.mark.parametrize("per_task, total, at_once, expected", [
    (None, None, 4, None),
    (10e6, None, 4, 10e6),
    (None, 40e6, 4, 10e6),
    (5e6, 40e6, 4, 5e6),  # the task's own limit is lower than its share
    (50e6, 40e6, 2, 20e6),
    (0, 0, 3, None),
])
def test_task_rate(per_task, total, at_once, expected):
    assert task_rate(per_task, total, at_once) == expected


def test_task_rate_needs_a_task():
    with pytest.raises(ValueError):
        task_rate(1, 1, 0)


def _sum(algorithm="MD5-of-0MD5-of-512CRC32C", value="00ab"):
    return FileChecksum(algorithm, value, 28)


def test_checksums_compare_only_under_one_algorithm():
    assert compare_checksums(_sum(), _sum()) == EQUAL
    assert compare_checksums(_sum(), _sum(value="00ac")) == DIFFERENT
    assert compare_checksums(_sum(), _sum("MD5-of-0MD5-of-1024CRC32C")) == INCOMPARABLE  # bytes-per-checksum
    assert compare_checksums(_sum(), _sum("MD5-of-0MD5-of-512CRC32")) == INCOMPARABLE  # CRC type
    assert compare_checksums(None, _sum()) == INCOMPARABLE


def test_a_real_getfilechecksum_answer():
    # what realhbase's DataNode answered for an HFile (HDFS 3.4.2)
    body = {"FileChecksum": {"algorithm": "MD5-of-0MD5-of-512CRC32C",
                             "bytes": "000002000000000000000000F1141EDCB5F1D9D985FA60B81390887D00000000", "length": 28}}
    assert parse_file_checksum(body) == FileChecksum(
        "MD5-of-0MD5-of-512CRC32C", "000002000000000000000000f1141edcb5f1d9d985fa60b81390887d00000000", 28)
    with pytest.raises(WebHdfsError, match="GETFILECHECKSUM"):
        parse_file_checksum({"FileChecksum": {"algorithm": 1}})


def test_snapshot_names_are_readable_unique_and_legal():
    a = snapshot_name("manual__2026-11-26T02:00:00+00:00", "ns1:orders")
    b = snapshot_name("manual__2026-11-26T02:00:01+00:00", "ns1:orders")
    assert a.startswith("hbase_migration-ns1.orders-") and a != b
    assert a == snapshot_name("manual__2026-11-26T02:00:00+00:00", "ns1:orders")
    assert snapshot_name("r", "users").startswith("hbase_migration-users-")
    assert ExportOptions("ns1:orders", "manual__x").name == snapshot_name("manual__x", "ns1:orders")


def test_shell_statements():
    assert take_statement("ns1:orders", "s1") == 'snapshot "ns1:orders", "s1"'
    assert clone_statements("ns1:orders", "s1") == ['clone_snapshot "s1", "ns1:orders"', 'delete_snapshot "s1"']
    assert clone_statements("t", "s1", keep_snapshot=True) == ['clone_snapshot "s1", "t"']
    assert delete_statement("s1") == 'delete_snapshot "s1"'


def test_ownership_goes_to_hbases_user_only_when_the_export_runs_as_another():
    assert ownership("hbase", "hbase", "hadoop") == (None, None)
    assert ownership("migrator", "hbase", "hadoop") == ("hbase", "hadoop")
    assert ownership("migrator", "hbase", "") == ("hbase", None)


@pytest.mark.parametrize("kwargs, message", [
    ({"table": ""}, "table: a table name is required"),
    ({"copy_id": " "}, "copy_id: required"),
    ({"checksum": "crc"}, "checksum must be one of auto, hdfs, md5"),
    ({"bytes_per_s": -1}, "bytes_per_s must be a positive number"),
    ({"tasks": 0}, "tasks must be an integer >= 1"),
    ({"chunk_bytes": 100}, "chunk_bytes must be within 4 KiB..64 MiB"),
    ({"snapshot": "bad name"}, "snapshot: snapshot name must be"),
])
def test_export_options_refuse_bad_input(kwargs, message):
    values = {"table": "t", "copy_id": "c", **kwargs}
    with pytest.raises(ExportRefused, match=message):
        ExportOptions(**values)


def test_copy_settings_refuse_bad_input():
    with pytest.raises(ValueError, match="checksum must be one of hdfs, md5"):
        CopySettings("/hbase", "/hbase", checksum="auto")
    with pytest.raises(ValueError, match="chunk_bytes"):
        CopySettings("/hbase", "/hbase", chunk_bytes=10)


def test_what_a_stopped_export_left():
    text = left_behind(source="dc1", target="dc2", table="ns1:t", name="s1", source_snapshot=True,
                       manifest="/hbase/.hbase-migration-staging/s1/snapshot", files_done=3, files_total=10,
                       bytes_done=3 << 20, archive_dir="/hbase/archive/data/ns1/t",
                       staging_dir="/hbase/.hbase-migration-staging/s1", cloned=False)
    assert text.startswith("Left: source snapshot 's1' on dc1 (kept; `delete_snapshot \"s1\"` there to drop it); its "
                           "manifest in /hbase/.hbase-migration-staging/s1/snapshot on dc2; 3 of 10 files (3.0 MiB) "
                           "verified, in /hbase/.hbase-migration-staging/s1 (staged) or /hbase/archive/data/ns1/t on "
                           "dc2 (a re-run skips them); table ns1:t not cloned on dc2. Re-run to resume")
    assert "`hdfs dfs -rm -r` /hbase/.hbase-migration-staging/s1 and the manifest directory" in text
    gone = left_behind(source="dc1", target="dc2", table="t", name="s1", source_snapshot=False, manifest=None,
                       files_done=0, files_total=None, bytes_done=0, archive_dir="/a", staging_dir="/s",
                       cloned=False)
    assert "no source snapshot 's1' on dc1 (gone: a re-run takes it again)" in gone
    assert "0 of ? files (0 B) verified, in /s (staged) or /a on dc2;" in gone
    unknown = left_behind(source="dc1", target="dc2", table="t", name="s1", source_snapshot=None, manifest=None,
                          files_done=0, files_total=1, bytes_done=0, archive_dir="/a", staging_dir="/s",
                          cloned=True)
    assert "state unknown" in unknown and "table t cloned on dc2" in unknown


def test_progress_line_rate_and_eta():
    line, speed, eta = progress_line(3, 10, 300 << 20, 1000 << 20, 60.0, 300 << 20)
    assert line == "3/10 files, 300.0 MiB of 1000.0 MiB (30.0%) in 1m00s, 5.0 MiB/s, ETA 2m20s"
    assert speed == 5 << 20 and eta == pytest.approx(140.0)
    assert progress_line(0, 0, 0, 0, 0.0, 0)[0] == "0/0 files, 0 B of 0 B (100.0%) in 0s, 0 B/s, ETA ?"
    # a resumed export: what this run moved sets the rate, what is left the ETA
    _, speed, eta = progress_line(9, 10, 900, 1000, 10.0, 100)
    assert speed == 10.0 and eta == pytest.approx(10.0)


def test_the_jobs_argv():
    assert job_args("SRC", "DST", "ns1:t", copy_id="run-1", ledger_url_file="ledger-url") == [
        "--source", "SRC", "--target", "DST", "--table", "ns1:t", "--copy-id", "run-1", "--ledger-url-file",
        "ledger-url"]
    assert job_args("S", "D", "t", copy_id="c", ledger_url_file="u", snapshot="s1", tasks=4, task_bytes_per_s=1e6,
                    bytes_per_s=None, checksum="md5", max_load="queueSize=10", critical_load=None,
                    max_pause_s=600, summary_file="/tmp/s.json")[9:] == [
        "u", "--snapshot", "s1", "--tasks", "4", "--task-bytes-per-s", "1000000.0", "--checksum", "md5",
        "--max-load", "queueSize=10", "--max-pause-s", "600", "--summary-file", "/tmp/s.json"]
    assert job_args("S", "D", "t", copy_id="c", ledger_url_file="u", same_master_key=True)[-1] == "--same-master-key"
    from hbase_migration.data.snapshot_export import parser

    ns = parser("snapshot_export.py", job=True).parse_args(job_args("S", "D", "t", copy_id="c", ledger_url_file="u",
                                                                     same_master_key=True))
    assert ns.same_master_key is True


def _result(relative="data/default/t/r/f/a", status=COPIED, task=0, attempts=1, seconds=1.0, size=100):
    return FileResult(relative, size, status, bytes_copied=size, seconds=seconds, attempts=attempts, task=task)


def test_the_progress_sink_counts_each_file_once_and_carries_the_abort():
    recorded = []
    sink = ProgressSink(recorded.append)
    assert sink.take({"task": 0, "file": "data/default/t/r/f/a", "bytes": 40}) == {"abort": None}
    assert sink.bytes_moving() == 40
    r = _result()
    sink.take({"task": 0, "result": r.to_dict()})
    sink.result(r)  # the same result again, from the task's own return: acted on once
    assert sink.bytes_moving() == 0 and (sink.finished_files, sink.finished_bytes) == (1, 100)
    assert [x.relative for x in recorded] == ["data/default/t/r/f/a"]
    # a retried task finds the file already there: recorded again (an upsert), counted once, not copied twice
    sink.result(_result(status=MATCHED, task=0, attempts=1, seconds=0.2))
    assert (sink.finished_files, len(recorded), sink.copies) == (1, 2, {"data/default/t/r/f/a": 1})
    sink.result(_result(relative="data/default/t/r/f/b", status=FAILED))
    assert sink.finished_files == 1 and len(recorded) == 2  # a failure is not recorded as finished
    sink.abort("the source snapshot is gone")
    sink.abort("a second reason")
    assert sink.take({"task": 1, "file": "x", "bytes": 1}) == {"abort": "the source snapshot is gone"}


def test_file_results_cross_as_dicts():
    r = _result()
    assert FileResult.from_dict(r.to_dict()) == r


def test_a_resume_plan_is_linear_in_the_files(monkeypatch):
    """A resume over 20,000 files: done = recorded in the ledger and on the target with its size, the rest to do,
    both in the manifest's order. The plan looks files up by path, never compares two files: with the list
    membership it replaced (`f not in done`) this run made about 10**8 comparisons (caught here by counting them,
    not by timing)."""
    from hbase_migration.data.snapshot_manifest import ExportFile

    files = [ExportFile("t", f"{i % 97:032x}", "f", f"hfile{i:06d}", 100 + i % 7) for i in range(20_000)]
    recorded = {f.relative: {} for f in files[::2]}  # every other file finished earlier
    present = {f.relative: f.size for f in files}
    present[files[0].relative] = 1  # ...but this one is on the target with another length: copied again
    del present[files[2].relative]  # ...and this one is gone from the target (its cleaner): copied again
    compared = []
    real_eq = ExportFile.__eq__
    monkeypatch.setattr(ExportFile, "__eq__", lambda a, b: compared.append(1) or real_eq(a, b))
    done, todo = resume_plan(files, recorded, present)
    assert compared == []
    assert len(done) == 10_000 - 2 and len(todo) == 10_000 + 2
    assert done[0] is files[4] and todo[:3] == [files[0], files[1], files[2]]
    assert {f.relative for f in done}.isdisjoint(f.relative for f in todo)
    assert sorted(done + todo) == sorted(files)


def test_a_cluster_away_is_waited_for_not_counted_as_an_attempt():
    """outage() tells a cluster away (unreachable, starting, recovering a file's lease) from a fact about the file;
    OutageWait waits until both clusters answer, within the task's budget (a fake clock: pure logic)."""
    from hbase_migration.clusters import hdfs
    from hbase_migration.data.snapshot_copy import OutageWait, outage

    assert outage(hdfs.WebHdfsUnreachable("connection refused"))
    assert outage(hdfs.WebHdfsRemoteError("x", exception="SafeModeException"))
    assert outage(hdfs.WebHdfsRemoteError("x", exception="RecoveryInProgressException"))
    # what a restarted NameNode answered on the bed before its DataNode registered
    assert outage(hdfs.WebHdfsRemoteError("WebHDFS http://nn: CREATE /x: IOException: Failed to find datanode, "
                                          "suggest to check cluster health. excludeDatanodes=null",
                                          exception="IOException"))
    assert not outage(hdfs.WebHdfsRemoteError("x: IOException: Filesystem closed", exception="IOException"))
    assert not outage(hdfs.WebHdfsRemoteError("x", exception="AccessControlException"))
    assert not outage(OSError("copied bytes differ"))

    now = [0.0]

    class Client:
        def __init__(self, away_until):
            self.away_until = away_until

        def status_or_none(self, path):
            if now[0] < self.away_until:
                raise hdfs.WebHdfsUnreachable("refused")

    def sleep(s):
        now[0] += s

    settings = CopySettings("/hbase", "/hbase", outage_s=120.0)
    away = OutageWait((Client(0.0), Client(40.0)), settings, sleep=sleep, clock=lambda: now[0])
    assert away.wait("f", hdfs.WebHdfsUnreachable("refused")) and 40.0 <= now[0] < 60.0
    spent = now[0]
    assert away.left == pytest.approx(120.0 - spent)
    # the rest of the budget is not enough for an outage of five minutes: the wait gives up, at the budget
    never = OutageWait((Client(1e9), Client(0.0)), CopySettings("/hbase", "/hbase", outage_s=30.0), sleep=sleep,
                       clock=lambda: now[0])
    started = now[0]
    assert not never.wait("f", hdfs.WebHdfsUnreachable("refused")) and now[0] - started == pytest.approx(30.0)
    assert never.left == 0.0 and not never.wait("f", hdfs.WebHdfsUnreachable("refused"))


def test_the_tasks_write_into_the_staging_directory():
    from hbase_migration.data.snapshot_manifest import STAGING_DIR, ExportFile, staging_dir

    f = ExportFile("ns1:t", "r" * 32, "d", "h" * 32, 10)
    staging = staging_dir("/hbase", "s1")
    assert staging == f"/hbase/{STAGING_DIR}/s1" == "/hbase/.hbase-migration-staging/s1"
    assert CopySettings("/src", "/hbase", staging).target_of(f) == f"{staging}/archive/data/ns1/t/{'r' * 32}/d/" \
                                                                    f"{'h' * 32}"
    assert CopySettings("/src", "/hbase").target_of(f) == f.target_path("/hbase")
    with pytest.raises(ValueError, match="snapshot name"):
        staging_dir("/hbase", "../x")


def test_the_progress_endpoint_takes_only_posts_signed_with_the_exports_key(caplog):
    """A real endpoint on loopback and real posts: a result recorded there makes a re-run skip the file, so an
    unsigned or wrongly signed post is refused (401) and changes nothing; a signed result of a file outside the plan
    too (400). The key is in no log line and not in the settings' repr (what a task's log could show)."""
    import logging

    import requests

    from hbase_migration.data.snapshot_copy import SIGNATURE_HEADER, Reporter, sign

    recorded = []
    sink = ProgressSink(recorded.append, files=["data/default/t/r/f/a"]).start()
    caplog.set_level(logging.DEBUG)
    try:
        result = {"task": 0, "result": _result().to_dict()}
        body = __import__("json").dumps(result).encode()
        assert requests.post(sink.url, data=body, timeout=5).status_code == 401
        assert requests.post(sink.url, data=body, headers={SIGNATURE_HEADER: sign("0" * 64, body)},
                             timeout=5).status_code == 401
        assert requests.post(sink.url, data=b"", headers={SIGNATURE_HEADER: sign(sink.key, b"")},
                             timeout=5).status_code == 401
        assert recorded == [] and sink.finished_files == 0 and sink.refused == 3
        outside = __import__("json").dumps({"task": 0, "result": _result("data/default/t/r/f/zz").to_dict()}).encode()
        assert requests.post(sink.url, data=outside, headers={SIGNATURE_HEADER: sign(sink.key, outside)},
                             timeout=5).status_code == 400
        assert recorded == []
        # a task's reporter signs with the key its settings carry: taken
        reporter = Reporter(sink.url, 0, key=sink.key)
        reporter.bytes("data/default/t/r/f/a", 40, force=True)
        assert sink.bytes_moving() == 40
        reporter.result(_result())
        assert [r.relative for r in recorded] == ["data/default/t/r/f/a"] and sink.finished_files == 1
        # ...and one without the key is refused: its result reaches the driver only with the task's own return
        Reporter(sink.url, 1).result(_result(task=1, seconds=2.0))
        assert len(recorded) == 1 and sink.refused == 4
    finally:
        sink.stop()
    settings = CopySettings("/a", "/b", progress_url=sink.url, progress_key=sink.key)
    assert sink.key not in repr(settings) and len(sink.key) == 64
    assert ProgressSink(recorded.append).key != sink.key  # one per export
    assert all(sink.key not in r.getMessage() for r in caplog.records)
    assert any("refused an unsigned or wrongly signed post" in r.getMessage() for r in caplog.records)
