"""Verification across a WAN: by hashes beside each cluster against every cell read from one side, on real HBase.

The realhbase bed (dc1 -> dc2) with a WAN link between the datacenters (realhbase/wan.py, `--wan-mbps`, default
160 megabits/s = 20 MB/s each way). A table of `--mb` MiB of cells (default 1024; 8 regions) is written identically
to both clusters and flushed. Then, in this order, each a process of its own as an operator or a Spark driver
runs it (threads, `--workers` each):
1. a plain scan of the source (every version, the data path's reads, nothing done with the cells): MB/s of
   cells, the baseline of the hash's throughput;
2. the hash verification as two jobs, one beside each cluster (`verify --method hash --hash-side source|target`,
   meeting in a SQLite ledger), the target's reading the source through the link for the differing leaves:
   its time, and the bytes that crossed the link (the proxy's count, plus the messages the two sides exchanged,
   which go through the ledger here);
3. the cell verification beside the target (`verify --method cells`), reading the whole source through the link;
4. a planted set of differences on the target (a changed value, an extra older version, a version the source
   deleted, a row only on the target, one cell of a 100k-cell row, a cell in a leaf's first row) and the hash
   verification again: each planted difference found and named exactly?

Figures (printed, never asserted; the last line is JSON): `wan_bytes_ratio` (bytes across the link during the hash
verification / the table's bytes of cells; wanted <= 0.01), `vs_cell_verify` (cell verification's time / the hash
verification's; wanted >= 5), `planted` and `planted_found`, and per side the hash's MB/s of cells against the plain
scan's (`hash_vs_plain_scan_source`, `..._target`).

`--data-path native`: both verification jobs on the native data path (HBase's own client in Spark's JVMs: `HashTask`
over raw range reads, delete markers hashed; the differing leaves compared raw), the connections given to them
carrying `data_path: native`; the table is still loaded, planted and plainly scanned through Thrift2 (the plain
scan stays the Thrift2 baseline, named so in the JSON). HBase's client connects to the region servers that
`hbase:meta` names, past any proxy, so the link is then the kernel's too (realhbase/rpclink.py: an HTB qdisc on the
loopback, root only, removed on exit): the source as the target's datacenter reaches it (`--source-remote`) has
`client_bind_address` 127.41.0.2, and every packet from or to it crosses a shaped, counted class of `--wan-mbps`
each way. `wan_bytes_kernel` and `wan_bytes_proxy` are the two links' counts (the kernel's: IP packets, headers
included), `wan_bytes_hash` and `wan_bytes_cells` their sums. `--cells-also-mbps M` (native only) then runs the cell
verification once more with the kernel's link at M megabits/s (`cell_verify_s_at_also`, `vs_cell_verify_at_also`:
against the first hash verification's time, which reads nothing across the link), after printing the JSON line
once without it.

    .venv/bin/python bench/bench_verify_wan.py [--mb 1024] [--wan-mbps 160] [--workers 2] [--testbed DIR]
                                               [--data-path thrift2|native]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

VALUE = 4000  # bytes of a row's big value: few cells a GiB, as tables of documents or blobs have
HOUR_AGO = int(time.time() * 1000) - 3_600_000
SPLITS = [b"%x" % i for i in range(2, 16, 2)]  # 8 regions over the hex-prefixed keys

PLAIN_SCAN = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from hbase_migration.data.datapath import open_data_path
from hbase_migration.data.datapath.base import prefetch
from hbase_migration.data.executors import LocalExecutor
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.partitions import plan_partitions
from hbase_migration.data.verify import Side, VerifyOptions
cluster = cluster_from_text("source", sys.argv[2])
options = VerifyOptions(table=sys.argv[3], count_bytes=True)
with open_data_path(cluster) as path:
    parts = plan_partitions(path.regions(options.table), options, gateways=cluster.gateways)
def scan(part):
    with open_data_path(cluster, gateway=part.gateway or None) as path:
        side = Side("source", path, options.table, options, True)
        for _batch in prefetch(side.batches(part.start_row, part.stop_row), 2):
            pass
        return side.nbytes
started = time.perf_counter()
total = sum(LocalExecutor(int(sys.argv[4])).run(parts, scan))
print(json.dumps({"bytes": total, "seconds": round(time.perf_counter() - started, 3)}))
"""


def log(message: str) -> None:
    print(f"[bench_verify_wan {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(argv: list[str], timeout: float = 7200) -> tuple[int, dict, str, float]:
    """A process of the toolkit: (exit status, its last JSON line, the tail of its stderr, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)
    seconds = time.perf_counter() - started
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
    return proc.returncode, json.loads(last) if last.startswith("{") else {}, proc.stderr[-3000:], seconds


def load(cluster, table: str, mb: int) -> int:
    """`mb` MiB of cells into `table`: rows of a 4 KB value and a small one (two versions), keys spread over the
    regions; the bytes of cells written."""
    from hbase_migration.data.datapath import open_data_path

    total, i = 0, 0
    rows_wanted = (mb << 20) // (VALUE + 100)
    with open_data_path(cluster) as path:
        writer = path.writer(table, writers=2)
        try:
            batch = []
            for i in range(rows_wanted):
                row = b"%x-%09d" % (i % 16, i)
                value = (b"%09d" % i) * (VALUE // 9)
                cells = [(b"d:a", HOUR_AGO, value), (b"d:b", HOUR_AGO, b"small-%d" % i),
                         (b"d:b", HOUR_AGO - 1000, b"older-%d" % i)]
                total += sum(len(row) + len(c) + len(v) + 9 for c, _ts, v in cells)
                batch.append((row, cells))
                if len(batch) >= 200:
                    writer.put(batch)
                    batch = []
            writer.put(batch)
        finally:
            writer.close()
    return total


def shell_ok(bed, name: str, statements: list[str]) -> None:
    proc = bed.shell(name, "".join(s + "\n" for s in statements))
    if proc.returncode != 0:
        raise RuntimeError(f"shell on {name} failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")


def link_bytes(workdir: Path, kernel: bool) -> tuple[int, int]:
    """Bytes across the link so far: (the proxy's, the kernel's: 0 without it)."""
    from realhbase import rpclink, wan

    return sum(wan.stats(workdir)["bytes"].values()), sum(rpclink.stats().values()) if kernel else 0


def hash_verify(common: list[str], ledger: str, workers: int) -> tuple[dict, dict, float]:
    """Both sides at once, each a process of its own meeting in `ledger`: (source's figures, the verdict, wall
    seconds until both ended)."""
    key = uuid.uuid4().hex[:8]
    args = common + ["--method", "hash", "--exchange-key", key, "--started-ms", str(int(time.time() * 1000)),
                     "--summary-ledger-url", ledger, "--workers", str(workers), "--sample-limit", "100"]
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        src = pool.submit(run, args + ["--hash-side", "source", "--summary-key", f"s-{key}"])
        tgt = pool.submit(run, args + ["--hash-side", "target", "--summary-key", f"t-{key}"])
        (rc_s, sum_s, err_s, _), (rc_t, sum_t, err_t, _) = src.result(), tgt.result()
    seconds = time.perf_counter() - started
    if rc_s != 0 or rc_t not in (0, 1) or "hash" not in sum_t:
        raise RuntimeError(f"hash verification failed: source side {rc_s}: {err_s}\ntarget side {rc_t}: {err_t}")
    return sum_s, sum_t, seconds


def on_path(connection: dict, data_path: str, bind: str | None = None) -> str:
    """A connection's JSON for the verification jobs, on `data_path` (named even for thrift2: `auto` would pick
    native on real HBase), its HBase client leaving from `bind` (the native path: the kernel's link)."""
    extra = {**connection.get("extra", {}), "data_path": data_path}
    if bind:
        extra["client_bind_address"] = bind
    return json.dumps({**connection, "extra": extra})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/bench_verify_wan.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=1024, help="MiB of cells in the table (default 1024)")
    p.add_argument("--wan-mbps", type=float, default=160.0, help="the link, megabits/s each way (default 160)")
    p.add_argument("--workers", type=int, default=2, help="threads of each process (default 2)")
    p.add_argument("--leaf-kib", type=int, default=1024, help="hash_leaf_bytes in KiB (default 1024)")
    p.add_argument("--testbed", help="the workdir of a realhbase test bed that is up: use it, do not stop it")
    p.add_argument("--data-path", choices=("thrift2", "native"), default="thrift2",
                   help="the verification jobs' data path (default thrift2; native: HBase's client in Spark's JVMs)")
    p.add_argument("--cells-also-mbps", type=float,
                   help="native: the cell verification again with the kernel's link at this rate (megabits/s)")
    args = p.parse_args(argv)
    if args.cells_also_mbps and args.data_path != "native":
        p.error("--cells-also-mbps needs --data-path native (the kernel's link)")

    from bench.harness import exit_on_sigterm
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.migration.region_metrics import table_region_bytes
    from realhbase import rpclink, wan
    from realhbase.testbed import RealHBase

    exit_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix="bench-verify-wan-"))
    bed = RealHBase(Path(args.testbed).resolve() if args.testbed else workdir / "realhbase")
    if not args.testbed:
        log(f"starting realhbase in {bed.workdir}")
        bed.up()
    for name in ("dc1", "dc2"):  # the bed's quota on /hbase is for its quota tests, not a GiB-sized table
        bed.set_quota(name, "/hbase", space_bytes=-1)
    kernel = args.data_path == "native"
    try:
        wan.start(bed.workdir, bed.endpoints(), args.wan_mbps)
        if kernel:
            rpclink.install(args.wan_mbps)
            log(f"the kernel's link on lo: {args.wan_mbps:g} megabits/s each way for the HBase RPC of jobs "
                f"reaching the other datacenter (from {rpclink.client_address('dc2')} in dc2)")
        endpoints = bed.endpoints()
        dc1, dc2 = (json.dumps(endpoints[n]["connection"]) for n in ("dc1", "dc2"))
        source, target = cluster_from_text("source", dc1), cluster_from_text("target", dc2)
        jobs = {n: on_path(endpoints[n]["connection"], args.data_path) for n in ("dc1", "dc2")}
        remote = on_path(endpoints["dc1"]["remote"]["connection"], args.data_path,
                         rpclink.client_address("dc2") if kernel else None)
        table = f"bench_vw_{uuid.uuid4().hex[:6]}"
        splits = ", ".join(f"'{s.decode()}'" for s in SPLITS)
        create = (f"create '{table}', {{NAME => 'd', VERSIONS => 3}}, SPLITS => [{splits}], "
                  f"MAX_FILESIZE => '{64 << 30}'")  # the bed splits past 8 MiB; a production table keeps its 8
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda n: shell_ok(bed, n, [create]), ("dc1", "dc2")))
        log(f"loading {args.mb} MiB of cells into {table} on both clusters")
        started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            table_bytes = list(pool.map(lambda c: load(c, table, args.mb), (source, target)))[0]
        log(f"loaded {table_bytes / 1e6:.0f} MB of cells on each side in {time.perf_counter() - started:.0f} s; "
            "flushing")
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda n: shell_ok(bed, n, [f"flush '{table}'"]), ("dc1", "dc2")))
        deadline = time.monotonic() + 300  # HBase refreshes its region figures every 45 s
        while time.monotonic() < deadline and sum((table_region_bytes(source, table) or {}).values()) \
                < table_bytes * 0.8:
            time.sleep(5)
        store_bytes = sum((table_region_bytes(source, table) or {}).values())
        log(f"store files of the source table: {store_bytes / 1e6:.0f} MB (/jmx)")

        log("1. plain scan of the source")
        rc, plain, err, _ = run(["-c", PLAIN_SCAN, str(REPO), dc1, table, str(args.workers)])
        if rc != 0:
            raise RuntimeError(f"plain scan failed: {err}")
        plain_mb_s = plain["bytes"] / 1e6 / plain["seconds"]
        log(f"   {plain['bytes'] / 1e6:.0f} MB in {plain['seconds']:.1f} s: {plain_mb_s:.1f} MB/s")

        ledger = f"sqlite:///{workdir / 'ledger.db'}"
        common = ["-m", "hbase_migration", "verify", "--source", jobs["dc1"], "--target", jobs["dc2"],
                  "--source-remote", remote,
                  "--table", table, "--hash-leaf-bytes", str(args.leaf_kib << 10), "--recompare-sleep-s", "2"]
        log("2. hash verification, a job beside each cluster")
        before = link_bytes(bed.workdir, kernel)
        src_fig, verdict, hash_s = hash_verify(common, ledger, args.workers)
        proxy, kernel_bytes = (b - a for a, b in zip(before, link_bytes(bed.workdir, kernel)))
        messages = verdict["link_bytes"]["source_side_messages"] + verdict["link_bytes"]["target_side_messages"]
        hash_link = proxy + kernel_bytes + messages
        h = verdict["hash"]
        log(f"   {hash_s:.1f} s, identical {verdict['identical']}, {h['leaves']} leaves, {h['differing_leaves']} "
            f"differing; link {proxy} B through the proxy + {kernel_bytes} B through the kernel's + {messages} B "
            f"of messages; source side {h['source']['mb_per_s']} MB/s, target side {h['target']['mb_per_s']} MB/s")

        log("3. cell verification beside the target, the source through the link")
        before = link_bytes(bed.workdir, kernel)
        rc, cells, err, cells_s = run(common + ["--method", "cells", "--workers", str(args.workers)])
        cells_proxy, cells_kernel = (b - a for a, b in zip(before, link_bytes(bed.workdir, kernel)))
        cells_link = cells_proxy + cells_kernel
        if rc not in (0, 1):
            raise RuntimeError(f"cell verification failed: {err}")
        log(f"   {cells_s:.1f} s, identical {cells.get('identical')}, link {cells_link / 1e6:.0f} MB "
            f"({cells_kernel / 1e6:.0f} MB through the kernel's)")

        log("4. planted differences, hash verification again")
        with open_data_path(source) as path:
            regions = path.regions(table)
        wide = (b"8-wide", [(b"d:q%06d" % q, HOUR_AGO, b"v%d" % q) for q in range(100_000)])
        from hbase_migration.data.executors import LocalExecutor
        from hbase_migration.data.hashverify import plan_hash
        from hbase_migration.data.verify import VerifyOptions

        for cluster in (source, target):
            with open_data_path(cluster) as path:
                w = path.writer(table, writers=2)
                for i in range(0, 100_000, 5000):
                    w.put([(wide[0], wide[1][i:i + 5000])])
                w.close()
        options = VerifyOptions(table=table, hash_leaf_bytes=args.leaf_kib << 10, method="hash")
        plan = plan_hash(source, options, regions, LocalExecutor(args.workers), store_bytes or None)
        boundary = next(p for p in plan if len(p.bounds) > 2).bounds[2]
        row = b"%x-%09d"
        planted = {
            (row % (1, 17), "d", "a", HOUR_AGO, "value_differs"),
            (row % (2, 34), "d", "b", HOUR_AGO - 5000, "only_on_target"),
            (row % (3, 51), "d", "b", HOUR_AGO - 1000, "only_on_target"),
            (b"f-only-on-target", "d", "a", HOUR_AGO, "only_on_target"),
            (b"8-wide", "d", "q054321", HOUR_AGO, "value_differs"),
            (boundary, "d", "b", HOUR_AGO, "value_differs"),
        }
        with open_data_path(target) as path:
            w = path.writer(table, writers=1)
            w.put([(row % (1, 17), [(b"d:a", HOUR_AGO, b"changed")]),
                   (row % (2, 34), [(b"d:b", HOUR_AGO - 5000, b"an extra older version")]),
                   (b"f-only-on-target", [(b"d:a", HOUR_AGO, b"x")]),
                   (b"8-wide", [(b"d:q054321", HOUR_AGO, b"changed")]),
                   (boundary, [(b"d:b", HOUR_AGO, b"changed")])])
            w.close()
        with open_data_path(source) as path:  # the target still shows the version the source deleted
            path.delete(table, row % (3, 51), [(b"d:b", HOUR_AGO - 1000)])
        _src2, verdict2, hash2_s = hash_verify(common, ledger, args.workers)
        found = {(d["row"].encode(), d["family"], d["qualifier"], d["timestamp"], d["kind"])
                 for d in verdict2["differences"]}
        planted_found = len(planted & found)
        log(f"   {hash2_s:.1f} s: {planted_found} of {len(planted)} planted found; reported {len(found)}: "
            f"{sorted(found)}")
        loadavg = os.getloadavg()
        result = {
            "table_mb": round(table_bytes / 1e6, 1), "store_file_mb": round(store_bytes / 1e6, 1),
            "wan_mbps": args.wan_mbps, "leaf_kib": args.leaf_kib, "workers": args.workers,
            "data_path": args.data_path, "plain_scan_data_path": "thrift2",
            "hbase_version": endpoints["dc1"].get("hbase_version"),
            "hash_verify_s": round(hash_s, 1), "cell_verify_s": round(cells_s, 1),
            "vs_cell_verify": round(cells_s / hash_s, 2),
            "link": "kernel (HTB on lo) + proxy" if kernel else "proxy",
            "wan_bytes_hash": hash_link, "wan_bytes_proxy": proxy, "wan_bytes_kernel": kernel_bytes,
            "wan_bytes_messages": messages, "wan_bytes_cells": cells_link,
            "wan_bytes_cells_proxy": cells_proxy, "wan_bytes_cells_kernel": cells_kernel,
            "wan_bytes_ratio": round(hash_link / table_bytes, 5),
            "cells_link_floor_s": round(cells_link / (args.wan_mbps * 1e6 / 8), 1),
            "hash_identical": verdict["identical"], "cells_identical": cells.get("identical"),
            "leaves": h["leaves"], "differing_leaves": h["differing_leaves"],
            "plain_scan_mb_s": round(plain_mb_s, 2),
            "hash_mb_s_source": h["source"]["mb_per_s"], "hash_mb_s_target": h["target"]["mb_per_s"],
            "hash_vs_plain_scan_source": round(h["source"]["mb_per_s"] / plain_mb_s, 2),
            "hash_vs_plain_scan_target": round(h["target"]["mb_per_s"] / plain_mb_s, 2),
            "planted": len(planted), "planted_found": planted_found,
            "planted_reported": len(found), "planted_hash_s": round(hash2_s, 1),
            "source_side_plan_s": src_fig.get("elapsed_s"), "times_s": verdict["times_s"],
            "load_average": [round(x, 1) for x in loadavg],
        }
        print(json.dumps(result), flush=True)
        if args.cells_also_mbps:
            log(f"5. cell verification again, the kernel's link at {args.cells_also_mbps:g} megabits/s")
            rpclink.set_rate(args.cells_also_mbps)
            before = link_bytes(bed.workdir, kernel)
            rc, again, err, again_s = run(common + ["--method", "cells", "--workers", str(args.workers)])
            again_link = sum(b - a for a, b in zip(before, link_bytes(bed.workdir, kernel)))
            if rc not in (0, 1):
                raise RuntimeError(f"cell verification at {args.cells_also_mbps:g} megabits/s failed: {err}")
            log(f"   {again_s:.1f} s, link {again_link / 1e6:.0f} MB")
            result.update({"cells_also_mbps": args.cells_also_mbps, "cell_verify_s_at_also": round(again_s, 1),
                           "wan_bytes_cells_at_also": again_link,
                           "cells_link_floor_s_at_also": round(again_link / (args.cells_also_mbps * 1e6 / 8), 1),
                           "vs_cell_verify_at_also": round(again_s / hash_s, 2),
                           "planted_identical_at_also": again.get("identical")})
            print(json.dumps(result), flush=True)
    finally:
        if kernel:
            rpclink.remove()
        wan.stop(bed.workdir)
        if not args.testbed:
            bed.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
