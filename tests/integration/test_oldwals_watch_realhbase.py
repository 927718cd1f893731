"""The oldWALs watchdogs of a run leave the NameNode alone (issue 42), shown on real HDFS by its own audit log.

Ten processes, each running the watchdog as a copy task does (tests/watchdog_task.py: the run's ledger, the run's
id, the source cluster), watch dc1 at once. The NameNode's audit log (turned on for the test through the HBase
master's /logLevel: the NameNode runs in the master's JVM on the bed) records every WebHDFS call it answers: the
whole namespace above oldWALs is summed up once for the run (discovery), and after that each interval costs one
reading, oldWALs' own content summary and the GETQUOTAUSAGE of the one ancestor with a quota (/hbase on the bed),
not ten.
"""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.polling import wait_for

# full: make test runs the watchdog in every copy of its DAG runs; this one counts the NameNode's calls of ten at once
pytestmark = [pytest.mark.integration, pytest.mark.full]

REPO = Path(__file__).resolve().parents[2]
AUDIT_LOGGER = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit"
AUDIT_LINE = re.compile(r"FSNamesystem\.audit: allowed=(\w+)\tugi=[^\t]*\tip=[^\t]*\tcmd=(\w+)\tsrc=([^\t]*)\t.*"
                        r"proto=webhdfs")


def _log_level(endpoint: dict, level: str) -> None:
    master = endpoint["master"]
    url = f"http://{master['host']}:{master['info_port']}/logLevel?log={AUDIT_LOGGER}&level={level}"
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.status == 200


@contextlib.contextmanager
def namenode_audit(endpoint: dict):
    """The NameNode's WebHDFS calls while the block runs: yields a function returning [(cmd, src)] so far."""
    log = Path(endpoint["logs_dir"]) / "master.log"
    start = log.stat().st_size
    _log_level(endpoint, "INFO")

    def calls() -> list[tuple[str, str]]:
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", "replace")
        return [(m.group(2), m.group(3)) for m in AUDIT_LINE.finditer(text) if m.group(1) == "true"]

    try:
        yield calls
    finally:
        _log_level(endpoint, "WARN")


def test_ten_tasks_watchdogs_make_one_reading_per_interval(realhbase, tmp_path):
    from hbase_migration.ledger.store import Ledger

    endpoint = realhbase.endpoints()["dc1"]
    interval, tasks = 2.0, 10
    run_id = f"nn-{uuid.uuid4().hex[:8]}"
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(ledger_url) as ledger:
        ledger.start_run(run_id, "hbase_table_migration", "manual", endpoint["cluster_key"], "dc2", "p", ["t"], {})
    # The bed's /hbase bears quotas (realhbase's ROOT_QUOTA, as a production rootdir may); `/` has only HDFS's
    # default namespace quota (Long.MAX_VALUE), which is none.
    stop = tmp_path / "stop"
    procs = []
    try:
        with namenode_audit(endpoint) as audit:
            for i in range(tasks):
                argv = [sys.executable, str(REPO / "tests" / "watchdog_task.py"), json.dumps(endpoint["connection"]),
                        ledger_url, run_id, "", str(interval), str(stop), str(tmp_path / f"task{i}.json")]
                procs.append(subprocess.Popen(argv, cwd=str(REPO), stdout=subprocess.DEVNULL,
                                              stderr=open(tmp_path / f"task{i}.log", "wb")))

            def readings() -> int:
                with Ledger.open(ledger_url) as ledger:
                    rows = ledger.watches(run_id)
                return rows[0]["readings"] if rows else 0

            wait_for(lambda: all((tmp_path / f"task{i}.json").exists() for i in range(tasks)), timeout=300,
                     what="ten watchdogs running", interval=0.5)
            with_all = readings()
            wait_for(lambda: readings() >= with_all + 5, timeout=300, what="five readings with ten tasks running",
                     interval=0.5)
            stop.touch()
            for p in procs:
                assert p.wait(timeout=120) == 0, (tmp_path / f"task{procs.index(p)}.log").read_text()[-3000:]
            calls = audit()
    finally:
        stop.touch()
        for p in procs:
            if p.poll() is None:
                p.kill()

    with Ledger.open(ledger_url) as ledger:
        [watch] = ledger.watches(run_id)
        instants = sorted({row["sampled_ms"] for row in ledger.chart_series(run_id)["quota"]})
    per_task = [json.loads((tmp_path / f"task{i}.json").read_text()) for i in range(tasks)]
    counted = Counter(calls)
    # The namespace above oldWALs was summed up once for the run, by whichever watchdog came first.
    assert counted[("contentSummary", "/")] == 1 and counted[("contentSummary", "/hbase")] == 1, counted
    # Every reading after that: oldWALs' own summary and the one quota-bearing ancestor's GETQUOTAUSAGE.
    assert watch["plan"]["bearing"] == ["/hbase"] and watch["plan"]["quota_usage_op"] is True, watch["plan"]
    assert counted[("contentSummary", "/hbase/oldWALs")] == watch["readings"], (counted, watch)
    assert counted[("quotaUsage", "/hbase")] == watch["readings"] - 1, (counted, watch)
    assert set(counted) == {("contentSummary", p) for p in ("/", "/hbase", "/hbase/oldWALs")} | {
        ("quotaUsage", "/hbase")}, counted
    assert sum(counted.values()) == watch["namenode_calls"] == sum(t["calls"] for t in per_task), (counted, per_task)
    # One reading per interval for the run, whatever the number of tasks: each recorded once, never two closer
    # than the interval (5% slack for a holder waking early), and each task took some or acted on the others'.
    assert sum(t["samples"] for t in per_task) == watch["readings"] == len(instants), (per_task, watch, instants)
    gaps = [b - a for a, b in zip(instants, instants[1:])]
    assert gaps and min(gaps) >= interval * 1000 * 0.95, gaps
    assert all(t["seen"] >= 1 for t in per_task), per_task
