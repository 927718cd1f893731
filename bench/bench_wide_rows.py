"""Wide rows in flat memory: a row of 1,000,000 cells copied and verified, against a narrow table with as many cells.

On minihbase dc1 -> dc2 (Thrift2 data path, default options): table `wide` holds one row of `--cells` cells (one
family, one version, 10-byte values); table `narrow` holds the same number of cells as rows of 10 cells each.
Each task runs in a process of its own (as a Spark executor's Python worker would): `copy_partition` of the whole
table, then `verify_partition` of it (every cell compared, clean). The figure is each task's peak RSS (VmHWM) on
the wide table as a ratio to the same task on the narrow one (the goal: <= 1.2); also its seconds. For reference,
the same tasks on the wide table without slicing (`scan_batch_cells` larger than the row: the row whole in one
result, as every scan was before TScan.batchSize was set).

Printed, never asserted; the last line is one JSON object.

    .venv/bin/python bench/bench_wide_rows.py [--cells 1000000]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from bench.harness import thrift2  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402

NARROW_CELLS = 10  # cells per row of the narrow table
TS = 1_600_000_000_000

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from hbase_migration.data.copy import CopyOptions, copy_partition
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.partitions import Partition
from hbase_migration.data.verify import VerifyOptions, verify_partition
source, target = cluster_from_text("source", sys.argv[2]), cluster_from_text("target", sys.argv[3])
task, table, extra = sys.argv[4], sys.argv[5], json.loads(sys.argv[6])
partition = Partition(table, 0, b"", b"", "whole table", "p0")
started = time.perf_counter()
if task == "copy":
    result = copy_partition(source, target, partition, CopyOptions(table, **extra))
    figures = {"rows": result.rows, "cells": result.cells}
else:
    verdict = verify_partition(source, target, partition, VerifyOptions(table, **extra))
    assert verdict.source_rows == verdict.counts["matching"], verdict
    figures = {"rows": verdict.source_rows, "cells": verdict.source_cells, "wide_rows": verdict.wide_rows}
hwm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
figures.update(seconds=round(time.perf_counter() - started, 2), peak_rss_mib=round(hwm_kib / 1024, 1))
print(json.dumps(figures))
"""


def task(source: MiniCluster, target: MiniCluster, kind: str, table: str, options: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(REPO), source.connection_json, target.connection_json,
                          kind, table, json.dumps(options or {})], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def load(cluster: MiniCluster, table: str, cells: int, per_row: int) -> None:
    """`cells` cells of 10-byte values, `per_row` per row (one row of all of them when per_row >= cells)."""
    cluster.create_table(table, {"f": {"max_versions": 1}})
    client = thrift2(cluster)
    try:
        batch: list = []
        for start in range(0, cells, 1000):
            row_of = {}
            for i in range(start, min(cells, start + 1000)):
                row = b"row-%08d" % (i // per_row)
                row_of.setdefault(row, {})[b"f:q%08d" % i] = b"v%09d" % i
            batch.extend((row, columns, TS) for row, columns in row_of.items())
            if sum(len(c) for _, c, _ in batch) >= 20_000:
                client.put(table, batch)
                batch = []
        if batch:
            client.put(table, batch)
    finally:
        client.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", type=int, default=1_000_000)
    args = p.parse_args(argv)
    figures: dict = {"cells": args.cells, "narrow_cells_per_row": NARROW_CELLS}
    with tempfile.TemporaryDirectory(prefix="bench-wide-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zookeeper").start()
        try:
            dc1 = MiniCluster.start(zk.hosts, Path(tmp), "dc1")
            dc2 = MiniCluster.start(zk.hosts, Path(tmp), "dc2")
            try:
                for table, per_row in (("narrow", NARROW_CELLS), ("wide", args.cells)):
                    started = time.perf_counter()
                    load(dc1, table, args.cells, per_row)
                    dc2.create_table(table, {"f": {"max_versions": 1}})
                    figures[f"{table}_load_s"] = round(time.perf_counter() - started, 1)
                    figures[f"{table}_copy"] = task(dc1, dc2, "copy", table)
                    figures[f"{table}_verify"] = task(dc1, dc2, "verify", table)
                whole = {"scan_batch_cells": args.cells + 1}
                figures["unsliced_wide_copy"] = task(dc1, dc2, "copy", "wide", whole)
                figures["unsliced_wide_verify"] = task(dc1, dc2, "verify", "wide", whole)
            finally:
                dc2.stop()
                dc1.stop()
        finally:
            zk.stop()
    for kind in ("copy", "verify"):
        wide, narrow = figures[f"wide_{kind}"], figures[f"narrow_{kind}"]
        figures[f"{kind}_rss_wide_vs_narrow"] = round(wide["peak_rss_mib"] / narrow["peak_rss_mib"], 2)
        print(f"{kind}: one row of {wide['cells']} cells: peak RSS {wide['peak_rss_mib']} MiB in {wide['seconds']} s; "
              f"{narrow['rows']} rows of {NARROW_CELLS} cells: {narrow['peak_rss_mib']} MiB in {narrow['seconds']} s "
              f"= x{figures[f'{kind}_rss_wide_vs_narrow']}; the wide row unsliced: "
              f"{figures[f'unsliced_wide_{kind}']['peak_rss_mib']} MiB")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
