"""Concurrent ledger writers as Spark tasks are: separate processes that each open (and schema-check) the
ledger and record partitions and a phase at the same time. Used on SQLite and on PostgreSQL."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONCURRENT_COPY = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from hbase_migration.ledger.store import Ledger

    worker = int(sys.argv[3])
    with Ledger.open(sys.argv[1]) as ledger:
        for i in range(40):
            ledger.partition_done("copy-1", "t", f"w{worker}-p{i}", b"", b"", i, 2 * i, 3 * i)
            # Reads the run, then writes: the pattern where two lazy SQLite transactions collide.
            ledger.set_phase("run-1", f"t{worker}", "copy", "running", at_ms=i)
""")


def run_concurrent_copies(url: str, workers: int = 4) -> list[tuple[int, str]]:
    """Start `workers` writers at once against `url` (a run "run-1" must exist); (exit code, stderr) each.
    Worker w records partitions w<w>-p0..p39 of copy "copy-1" and phase `copy` of table t<w>."""
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_COPY, url, str(REPO), str(w)],
                              stderr=subprocess.PIPE, text=True) for w in range(workers)]
    results = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        results.append((proc.returncode, err))
    return results
