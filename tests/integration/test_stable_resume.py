"""Stable resume against minihbase: the source's split/merge and normalizer switches held off by reference
counting in the ledger and restored to exactly what was found (a killed copy's retry included), and a resume
after a region split that re-copies no finished key range and loses no cell."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from hbase_migration.data.switches import SwitchError, SwitchState, hold, release, source_key
from hbase_migration.ledger.store import Ledger
from tests.hbase_data import SPLITS, cluster_of, connection_json, spread_key
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def switches_of(cluster) -> SwitchState:
    state = cluster.switches()
    return SwitchState(state["split"], state["merge"], state["normalizer"])


def set_all(cluster, state: SwitchState) -> None:
    for name, value in state.to_dict().items():
        cluster.set_switch(name, value)


def test_holds_are_counted_and_the_last_restores_exactly_what_was_found(minihbase_pair, tmp_path):
    dc1, _ = minihbase_pair
    source = cluster_of(dc1, "source")
    original = SwitchState(split=True, merge=False, normalizer=True)
    set_all(dc1, original)
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        first = hold(source, ledger, "copy run-1 a", "run-1")
        assert first["found"] == original.to_dict() and switches_of(dc1) == SwitchState(False, False, False)
        hold(source, ledger, "copy run-1 b", "run-1")
        assert [h["holder"] for h in ledger.switch_holds(source_key(source))] == ["copy run-1 a", "copy run-1 b"]

        assert release(source, ledger, "copy run-1 a")["held_by"] == ["copy run-1 b"]
        assert switches_of(dc1) == SwitchState(False, False, False)  # b still copies
        assert release(source, ledger, "copy run-1 b")["restored"] == original.to_dict()
        assert switches_of(dc1) == original
        assert ledger.switch_guard(source_key(source))["found"] is None and not ledger.switch_holds(source_key(source))

        # A copy killed after its hold (nothing released), then retried: the retry finds its own hold and the
        # ORIGINAL state recorded, turns the switches off again (split was turned on by hand meanwhile), and its
        # release restores the original, not the "off" the first attempt left.
        hold(source, ledger, "copy run-2 a", "run-2")
        dc1.set_switch("split", True)
        retry = hold(source, ledger, "copy run-2 a", "run-2")
        assert retry["found"] == original.to_dict() and switches_of(dc1) == SwitchState(False, False, False)
        assert release(source, ledger, "copy run-2 a")["restored"] == original.to_dict()
        assert switches_of(dc1) == original


def test_copies_holding_at_the_same_time_share_one_recorded_state_and_the_last_restores_it(minihbase_pair,
                                                                                             tmp_path):
    """Four copies (threads, each with its own ledger connection) hold at once: the lease serialises them, one
    state is recorded, the switches stay off until the last one ends, which restores it."""
    dc1, _ = minihbase_pair
    source = cluster_of(dc1, "source")
    original = SwitchState(split=False, merge=True, normalizer=True)
    set_all(dc1, original)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    Ledger.open(url).close()  # the ledger exists before the copies start, as in a run
    all_held = threading.Barrier(5)
    released, errors = [], []

    def copy(i):
        try:
            with Ledger.open(url) as ledger:
                held = hold(source, ledger, f"copy run-5 t{i}", "run-5")
                assert held["found"] == original.to_dict()
                all_held.wait(60)  # the main thread looks now
                all_held.wait(60)
                released.append(release(source, ledger, f"copy run-5 t{i}"))
        except Exception as e:
            errors.append(e)
            all_held.abort()

    threads = [threading.Thread(target=copy, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        all_held.wait(120)
    except threading.BrokenBarrierError:
        for t in threads:
            t.join(120)
        raise AssertionError(f"a copy failed to hold: {errors!r}") from None
    with Ledger.open(url) as ledger:
        assert len(ledger.switch_holds(source_key(source))) == 4
    assert switches_of(dc1) == SwitchState(False, False, False)
    all_held.wait(60)
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(len(r["held_by"]) for r in released) == [0, 1, 2, 3]
    assert [r["restored"] for r in released if not r["held_by"]] == [original.to_dict()]
    assert switches_of(dc1) == original


def test_a_source_whose_shell_cannot_read_the_switches_refuses_the_hold_and_records_nothing(minihbase_pair,
                                                                                             tmp_path):
    dc1, _ = minihbase_pair
    broken = dataclasses.replace(cluster_of(dc1, "source"), shell_command=("false",))
    before = switches_of(dc1)
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        with pytest.raises(SwitchError, match=r"(?s)reading the split/merge and normalizer switches on 'source' "
                                              r"failed: .*set hold_switches off: form/plan \[copy\] hold_switches, "
                                              r"CLI --no-hold-switches"):
            hold(broken, ledger, "copy run-3 t", "run-3")
        assert ledger.switch_holds(source_key(broken)) == []
        assert ledger.switch_guard(source_key(broken))["found"] is None
    assert switches_of(dc1) == before


def test_a_restore_that_fails_keeps_the_hold_and_the_state_found_for_another_try(minihbase_pair, tmp_path):
    dc1, _ = minihbase_pair
    source = cluster_of(dc1, "source")
    original = switches_of(dc1)
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        hold(source, ledger, "copy run-4 t", "run-4")
        broken = dataclasses.replace(source, shell_command=("false",))
        with pytest.raises(SwitchError, match=r"(?s)setting the switches to .* may still be off; the state found .* "
                                              r"stays in the ledger with the hold of 'copy run-4 t': release it again "
                                              r"with `python -m hbase_migration switches --source <conn> --release "
                                              r"'copy run-4 t'`"):
            release(broken, ledger, "copy run-4 t")
        assert [h["holder"] for h in ledger.switch_holds(source_key(source))] == ["copy run-4 t"]
        assert switches_of(dc1) == SwitchState(False, False, False)
        assert release(source, ledger, "copy run-4 t")["restored"] == original.to_dict()
    assert switches_of(dc1) == original


def test_a_cli_copy_whose_shell_cannot_hold_the_switches_copies_nothing_and_says_how_to_go_without(
        minihbase_pair, tmp_path):
    dc1, dc2 = minihbase_pair
    table = "noshell_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1}})
    conn = dc1.connection(timeout=60000)
    conn.table(table).put(b"r1", {b"d:v": b"1"})
    conn.close()
    source = json.loads(connection_json(dc1))
    source["extra"]["shell_command"] = "false"
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    refused = _copy_cli(json.dumps(source), dc2, table, ledger_url)
    out, err = refused.communicate(timeout=300)
    assert refused.returncode == 1, err[-3000:]
    assert "copy_table: error: reading the split/merge and normalizer switches on 'source' failed" in err
    assert "CLI --no-hold-switches" in err and not out.strip()
    assert _cells(dc2, table) == {}  # nothing copied
    without = _copy_cli(json.dumps(source), dc2, table, ledger_url, "--no-hold-switches")
    out, err = without.communicate(timeout=300)
    assert without.returncode == 0, err[-3000:]
    assert "switches" not in json.loads(out.strip().splitlines()[-1]) and _cells(dc2, table) == _cells(dc1, table)


def _copy_cli(dc1, dc2, table, ledger_url, *extra):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                                          f"{os.environ.get('PATH', '')}"}
    source = dc1 if isinstance(dc1, str) else connection_json(dc1)
    return subprocess.Popen(
        [sys.executable, "-m", "hbase_migration", "copy", "--source", source, "--target",
         connection_json(dc2), "--table", table, "--ledger-url", ledger_url, "--copy-id", "resume-1",
         "--scan-batch-rows", "50", *extra],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _cells(cluster, table):
    conn = cluster.connection(timeout=60000)
    try:
        return {row: data for row, data in conn.table(table).scan(include_timestamp=True)}
    finally:
        conn.close()


def test_a_region_split_between_two_attempts_re_copies_no_finished_range(minihbase_pair, tmp_path):
    dc1, dc2 = minihbase_pair
    table = "resume_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=SPLITS)
    conn = dc1.connection(timeout=60000)
    with conn.table(table).batch(batch_size=1000) as b:
        for i in range(2400):
            b.put(spread_key(i), {b"d:v": b"%d" % i, b"d:w": b"x" * 20})
    conn.close()
    original = SwitchState(split=True, merge=True, normalizer=False)
    set_all(dc1, original)
    db = tmp_path / "ledger.db"
    ledger_url = f"sqlite:///{db}"

    # Attempt 1: throttled to ~2 partitions a second, killed (SIGKILL: no cleanup) once two are recorded.
    first = _copy_cli(dc1, dc2, table, ledger_url, "--workers", "1", "--rows-per-s", "600")
    try:
        with Ledger.open(ledger_url) as ledger:
            wait_for(lambda: len(ledger.finished_ranges("resume-1", table)) >= 2, timeout=120, interval=0.02,
                     what="two finished partitions of the first attempt")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    with Ledger.open(ledger_url) as ledger:
        before = ledger.finished_ranges("resume-1", table)
        source = cluster_of(dc1, "source")
        assert ledger.switch_guard(source_key(source))["found"] == original.to_dict()
        assert [h["holder"] for h in ledger.switch_holds(source_key(source))] == [f"copy resume-1 {table}"]
    assert 2 <= len(before) < len(SPLITS) + 1, before
    assert switches_of(dc1) == SwitchState(False, False, False)  # left off by the killed copy

    # Between the attempts an operator turns splits on and splits a finished region and an unfinished one.
    dc1.set_switch("split", True)
    finished = before[0]
    dc1.split(table, (finished["start_row"] or b"0") + b"\x7f")
    unfinished_start = next(k for k in [b""] + SPLITS if k not in {r["start_row"] for r in before})
    dc1.split(table, unfinished_start + b"\x7f")

    # Attempt 2 (the retry): to the end.
    second = _copy_cli(dc1, dc2, table, ledger_url, "--workers", "2")
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["failed_partitions"] == 0
    assert summary["switches"] == {"found": original.to_dict(), "set": {"split": False, "merge": False,
                                                                          "normalizer": False},
                                   "restored": original.to_dict(), "held_by": [], "release_error": None}
    assert switches_of(dc1) == original

    with Ledger.open(ledger_url) as ledger:
        after = ledger.finished_ranges("resume-1", table)
    # Every range of the first attempt is still recorded as it was (not copied again) ...
    old = {r["partition_id"]: r for r in before}
    assert all(r == old[r["partition_id"]] for r in after if r["partition_id"] in old)
    assert old.keys() <= {r["partition_id"] for r in after}
    # ... no range of the second attempt overlaps one of the first, and together they cover the table once.
    new = sorted((r for r in after if r["partition_id"] not in old), key=lambda r: r["start_row"])
    for n in new:
        for o in before:
            assert not (n["start_row"] < (o["stop_row"] or b"\xff" * 8) and o["start_row"] < (n["stop_row"] or
                                                                                               b"\xff" * 8)), (n, o)
    ranges = sorted((r["start_row"], r["stop_row"]) for r in after)
    assert ranges[0][0] == b"" and ranges[-1][1] == b""
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), ranges
    assert summary["rows"] == sum(r["rows"] for r in new)
    assert sum(r["rows"] for r in after) == 2400

    # [,20) was split in two: both halves were finished, so 3 planned partitions were skipped whole.
    assert summary["skipped_partitions"] == len(before) + 1
    # Every cell arrived, with its timestamp.
    assert _cells(dc2, table) == _cells(dc1, table)
