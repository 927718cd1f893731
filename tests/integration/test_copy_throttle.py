"""The copy's load-aware throttle against minihbase, through Spark (local[2]) as the DAG's copy job runs it: a load
generator on the source (stock happybase clients, `minihbase/loadgen.py`) fills its region server's call queue
past `max_load`; the copy's rate, measured independently on the target (its region server's `writeRequestCount`,
which only the copy moves), falls; when the load stops, the rate recovers. The ledger holds the decisions, in
order: full speed, slowed down to the floor, recovering, full speed again.
"""
from __future__ import annotations

import re
import threading
import time

import pytest
import requests

from minihbase.loadgen import LoadGenerator

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SERVER = "Hadoop:service=HBase,name=RegionServer,sub=Server"


def written(cluster) -> int:
    """Rows the target's region servers have written (the copy is the only writer there)."""
    total = 0
    for rs in cluster.region_servers:
        body = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": SERVER}, timeout=10).json()
        total += body["beans"][0]["writeRequestCount"]
    return total


def rate(series: list[tuple[float, int]], start: float, end: float) -> float:
    """Rows/s between two instants of a (time, cumulative rows) series."""
    inside = [(t, n) for t, n in series if start <= t <= end]
    if len(inside) < 2:
        return 0.0
    (t0, n0), (t1, n1) = inside[0], inside[-1]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0


def test_copy_slows_down_under_source_load_and_recovers(minihbase_factory, spark, tmp_path):
    from hbase_migration.data.copy import CopyOptions
    from hbase_migration.data.executors import SparkExecutor
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.data.progress import LedgerStore
    from hbase_migration.data.runner import run_copy
    from hbase_migration.data.throttle import LoadLimits
    from hbase_migration.ledger.store import Ledger

    dc1 = minihbase_factory("dc1", region_servers=1, handler_count=4, metrics_period_s=1.0)
    dc2 = minihbase_factory("dc2", region_servers=1)
    for c in (dc1, dc2):
        c.create_table("thr", {"d": {"max_versions": 1}}, split_keys=[b"r5"])
    dc1.create_table("load", {"cf": {"max_versions": 1}})
    conn = dc1.connection()
    with conn.table("thr").batch(batch_size=2000) as b:
        for i in range(50_000):
            b.put(b"r%d%06d" % (i % 10, i), {b"d:v": b"x" * 50})
    conn.close()

    ledger = Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    source, target = cluster_from_text("source", dc1.connection_json), cluster_from_text("target", dc2.connection_json)
    # Base cap 800 rows/s per task (two tasks): a steady natural rate to compare with. One sample a second.
    options = CopyOptions(table="thr", rows_per_s=800, scan_batch_rows=200, write_batch_cells=200)
    limits = LoadLimits("numCallsInGeneralQueue=2", "numCallsInGeneralQueue=1000", max_pause_s=120, sample_s=1.0)
    out: dict = {}
    executor = SparkExecutor("throttle-test")  # the module's local[2] session, borrowed (made in this thread)

    def copy() -> None:
        try:
            out["summary"] = run_copy(source, target, options, executor, store=LedgerStore(ledger),
                                      copy_id="copy-thr", load_limits=limits)
        except BaseException as e:  # reported by the main thread
            out["error"] = e

    series: list[tuple[float, int]] = []
    thread = threading.Thread(target=copy, name="copy")
    thread.start()
    load = None
    marks: dict[str, float] = {}
    try:
        # Every phase starts on an event of the copy's, never on the test's clock: the load comes on once the copy
        # has written for 8 s (a first Spark start on a busy machine can take longer than the whole copy's
        # full-speed phase), goes off 14 s later; the 240 s bound is only against a copy that never ends.
        deadline = time.monotonic() + 240
        while thread.is_alive() and time.monotonic() < deadline:
            now, rows = time.monotonic(), written(dc2)
            series.append((now, rows))
            if "first_row" not in marks and rows > 0:
                marks["first_row"] = now
            if "load_on" not in marks and "first_row" in marks and now - marks["first_row"] >= 8:
                dc1.set_handler_latency(5)  # each call holds its handler 5 ms: 16 clients fill the 4 handlers
                load = LoadGenerator(dc1.thrift_host, dc1.thrift_port, "load", threads=16, single_puts=True).start()
                marks["load_on"], marks["load_on_wall"] = time.monotonic(), time.time()
            if "load_off" not in marks and "load_on" in marks and time.monotonic() - marks["load_on"] >= 14:
                report = load.stop()
                dc1.set_handler_latency(None)
                marks["load_off"] = time.monotonic()
                marks["load_report"] = report  # type: ignore[assignment]
            time.sleep(0.5)
    finally:
        if load is not None and "load_off" not in marks:
            load.stop()
            dc1.set_handler_latency(None)
        thread.join(300)
    assert "error" not in out, out.get("error")
    summary = out["summary"]
    assert summary["failed_partitions"] == 0 and summary["rows"] == 50_000, summary
    assert "load_off" in marks, f"the copy ended before the load window closed: {marks}, {summary}"

    # The rates are the copy's own, compared with each other: never an absolute figure (the machine sets those).
    before = rate(series, marks["first_row"] + 2, marks["load_on"])  # both tasks writing at full speed
    loaded = rate(series, marks["load_on"] + 7, marks["load_off"])  # the factor has reached its floor by then
    recovered = rate(series, marks["load_off"] + 12, marks["load_off"] + 18)  # back to full speed (+0.1/s)
    figures = {"before_rows_per_s": round(before), "loaded_rows_per_s": round(loaded),
               "recovered_rows_per_s": round(recovered), "load_report": marks["load_report"].__dict__,
               "load_control": summary["load_control"]}
    print("throttle figures:", figures)
    assert before > 0, figures
    assert loaded < 0.3 * before, figures
    assert recovered > 3 * loaded and recovered > 0.6 * before, figures

    decisions = ledger.throttle_decisions("copy-thr")
    ledger.close()
    assert len(decisions) == summary["load_control"]["samples"], (len(decisions), summary["load_control"])
    # Each decision is the AIMD rule applied to the load sample it read (max_load numCallsInGeneralQueue=2):
    # at or past it, the factor halves down to the floor 0.05; under it, +0.1 up to full speed.
    factor, checked = 1.0, 0
    for d in decisions:
        value = (d["load"].get("numCallsInGeneralQueue") or {}).get("value")
        if value is not None and "unreadable" not in d["reason"]:
            expected = max(0.05, round(factor * 0.5, 4)) if value >= 2 else min(1.0, round(factor + 0.1, 4))
            assert d["factor"] == pytest.approx(expected), (value, factor, d)
            assert d["state"] == ("full" if expected >= 1.0 else "slow"), d
            checked += 1
        factor = d["factor"]
    assert checked >= len(decisions) - 2, [(d["state"], d["factor"], d["reason"]) for d in decisions]
    states = [(d["state"], d["factor"]) for d in decisions]
    assert states[0] == ("full", 1.0)
    floor = states.index(("slow", 0.05))
    assert states[floor - 4:floor + 1] == [("slow", 0.5), ("slow", 0.25), ("slow", 0.125), ("slow", 0.0625),
                                           ("slow", 0.05)]
    assert "past max_load: numCallsInGeneralQueue=" in decisions[floor]["reason"]
    assert decisions[floor]["load"]["numCallsInGeneralQueue"]["value"] >= 2
    # The slowdown began after the load came on, and the recovery after it went off.
    first_slow = states.index(("slow", 0.5))
    assert decisions[first_slow]["decided_ms"] / 1000 >= marks["load_on_wall"] - 1, (decisions[first_slow], marks)
    back = states.index(("full", 1.0), floor)
    assert states[back - 1] == ("slow", 0.95) and all(s == "slow" for s, _ in states[floor:back])
    assert summary["load_control"]["min_factor"] == 0.05 and summary["load_control"]["final_state"] == "full"


@pytest.mark.full  # the throttle's second test (its give-up and resume); make test keeps the slow-down and recovery
def test_a_copy_paused_too_long_gives_up_saying_why_and_resumes(minihbase_factory, tmp_path):
    """Through the CLI's copy (the jobs' arguments, partitions on threads): the source goes past critical_load and
    stays there; after max_pause_s every partition not finished fails with the reason, the finished one stays
    recorded, and a re-run without the load skips it and copies the rest."""
    import json
    import subprocess
    import sys

    from hbase_migration.ledger.store import Ledger
    from tests.polling import wait_for

    dc1 = minihbase_factory("dc1", region_servers=1, handler_count=4, metrics_period_s=1.0)
    dc2 = minihbase_factory("dc2", region_servers=1)
    for c in (dc1, dc2):
        c.create_table("thr", {"d": {"max_versions": 1}}, split_keys=[b"r2", b"r5", b"r7"])
    dc1.create_table("load", {"cf": {"max_versions": 1}})
    conn = dc1.connection()
    with conn.table("thr").batch(batch_size=2000) as b:
        for i in range(40_000):
            b.put(b"r%d%06d" % (i % 10, i), {b"d:v": b"x" * 50})
    conn.close()
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    Ledger.open(url).close()
    argv = [sys.executable, "-m", "hbase_migration", "copy", "--source", dc1.connection_json, "--target",
            dc2.connection_json, "--table", "thr", "--workers", "2", "--rows-per-s", "1000", "--ledger-url", url,
            "--copy-id", "copy-abort", "--options-json", json.dumps({"write_batch_cells": 200,
                                                                    "scan_batch_rows": 200})]
    throttled = argv + ["--max-load", "numCallsInGeneralQueue=1", "--critical-load", "numCallsInGeneralQueue=2",
                        "--max-pause-s", "4", "--load-sample-s", "1"]

    def done() -> set[str]:
        with Ledger.open(url) as ledger:
            return ledger.done_partitions("copy-abort", "thr")

    proc = subprocess.Popen(throttled, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    load = None
    try:
        wait_for(lambda: len(done()) >= 1, 120, "the first partition copied", interval=0.2)
        dc1.set_handler_latency(5)
        load = LoadGenerator(dc1.thrift_host, dc1.thrift_port, "load", threads=16, single_puts=True).start()
        out, err = proc.communicate(timeout=180)
    finally:
        if load is not None:
            load.stop()
        dc1.set_handler_latency(None)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    first = done()
    assert len(first) == summary["copied_partitions"] >= 1 and summary["failed_partitions"] >= 1, summary
    # Gave up after max_pause_s of pause by the samples' own clock: how many samples fit in those 4 s is the
    # machine's business (a busy one reads the region servers' /jmx more slowly), not the throttle's.
    assert summary["load_control"]["aborted"] is True and summary["load_control"]["paused_samples"] >= 2
    paused_for = re.match(r"paused (\d+)s ", summary["load_control"]["reason"])
    assert paused_for and int(paused_for[1]) >= 4, summary["load_control"]
    assert "(max_pause_s 4) and still past critical_load: numCallsInGeneralQueue=" in summary["load_control"]["reason"]
    for failure in summary["failures"]:
        assert failure["error"].startswith("LoadAbort: source overloaded: paused "), failure
        assert failure["error"].endswith("a re-run resumes with the others"), failure
    assert "load throttle (thr): paused" in err and "load throttle (thr): giving up" in err

    again = subprocess.run(throttled, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads(again.stdout.strip().splitlines()[-1])
    assert resumed["skipped_partitions"] == len(first) and resumed["copied_partitions"] == 4 - len(first)
    assert len(done()) == 4
    dst = dc2.connection()
    assert sum(1 for _ in dst.table("thr").scan()) == 40_000
    dst.close()
