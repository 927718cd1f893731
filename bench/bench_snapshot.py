"""The snapshot export's speed and memory, on real HBase and HDFS (realhbase dc1 -> dc2), one run.

1. A table of `--mb` MiB (8 regions, wide values), flushed. Its FLUSH snapshot exported by the toolkit (Spark
   local[2], the session warmed up first: its Python workers started with the library imported; the file copy
   phase timed: manifest, files, verification) against a
   plain WebHDFS copy of the same files made just before (the same two streams at once: OPEN -> CREATE, no check,
   no ledger), the kernel's page cache dropped before each (as root) so both read from disk:
   `vs_webhdfs_copy` = export bytes/s / plain bytes/s (the goal: >= 0.8), over the medians of `--repeat` pairs
   (plain then export, a new snapshot each; the other runs' files removed).
2. The scan copy of the same table (the Thrift copy, Spark local[2]) into another target table: `vs_scan_copy` =
   export bytes/s / scan bytes/s, both over the table's store file bytes (the goal: >= 5).
3. One task copying a `--big-mb` MiB file (1 GiB) against one copying a 10 MiB file, each in a process of its own
   (as a Spark executor's Python worker): `rss_ratio` = peak RSS (VmHWM) of the first / the second (goal: <= 1.2).

The fixed costs of the snapshot path (taking the snapshot, publishing, the clone: shell sessions) are printed
apart. Printed, never asserted; the last line is one JSON object.

    .venv/bin/python bench/bench_snapshot.py [--mb 256] [--big-mb 1024] [--compact] [--block-mb 128] [--repeat 3]
                                             [--testbed DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.snapshot_copy import CopySettings, Reporter, copy_file, webhdfs_of
from hbase_migration.data.snapshot_manifest import ExportFile
source, target = cluster_from_text("source", sys.argv[2]), cluster_from_text("target", sys.argv[3])
f = ExportFile.from_dict(json.loads(sys.argv[4]))
settings = CopySettings("/bench-src", "/bench-dst")
started = time.perf_counter()
result = copy_file(webhdfs_of(source), webhdfs_of(target), f, settings, reporter=Reporter(None, 0))
assert result.status == "copied", result
hwm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"bytes": result.bytes_copied, "seconds": round(time.perf_counter() - started, 2),
                  "peak_rss_mib": round(hwm_kib / 1024, 1), "verified_by": result.verified_by}))
"""


def log(message: str) -> None:
    print(f"[bench_snapshot {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def plain_copy(src_cluster, dst_cluster, pairs: list[tuple[str, str]], streams: int) -> float:
    """Seconds to copy `pairs` (source path, target path) OPEN -> CREATE, `streams` at once, nothing else."""
    from hbase_migration.data.snapshot_copy import webhdfs_of

    def one(pair: tuple[str, str]) -> None:
        src, dst = webhdfs_of(src_cluster), webhdfs_of(dst_cluster)
        with src.open(pair[0], 1 << 20) as chunks:
            dst.create(pair[1], chunks, overwrite=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        list(pool.map(one, pairs))
    return time.perf_counter() - started


def drop_page_cache() -> bool:
    """The kernel's page cache emptied (root only), so the next copy reads the source's block files from disk;
    False where it could not be."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


def write_file(cluster, path: str, size: int) -> None:
    from hbase_migration.data.snapshot_copy import webhdfs_of

    chunk = os.urandom(1 << 20)

    def chunks():
        left = size
        while left > 0:
            yield chunk[:min(left, len(chunk))]
            left -= len(chunk)

    webhdfs_of(cluster).create(path, chunks(), overwrite=True)


def rss_task(src_conn: str, dst_conn: str, name: str, size: int) -> dict:
    from hbase_migration.data.snapshot_manifest import ExportFile

    f = ExportFile("default:bench", "r0", "f", name, size)
    out = subprocess.run([sys.executable, "-c", WORKER, str(REPO), src_conn, dst_conn, json.dumps(f.to_dict())],
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def compact(bed, source, table: str, timeout_s: float = 1800) -> None:
    """Major-compact `table` and wait until each of its stores holds one file, as a production table's (the test
    bed flushes at 4 MiB, so a loaded table is made of ~3 MiB files). `major_compact` only queues the request, and
    `compaction_state` says NONE until a compaction starts: the store directories are what tell."""
    from hbase_migration.clusters import hdfs
    from hbase_migration.data.snapshot_copy import webhdfs_of
    from tests.snapshot_bed import shell_ok

    client = webhdfs_of(source)
    root = f"/hbase/data/default/{table}"

    def files_per_store() -> list[int]:
        counts = []
        for region in client.list_status(root):
            if region.type != "DIRECTORY" or region.path_suffix.startswith("."):
                continue
            for family in client.list_status(f"{root}/{region.path_suffix}"):
                if family.type == "DIRECTORY" and not family.path_suffix.startswith((".", "recovered.edits")):
                    files = [f for f in client.list_status(f"{root}/{region.path_suffix}/{family.path_suffix}")
                             if f.type == "FILE"]
                    if files:
                        counts.append(len(files))
        return counts

    started = time.perf_counter()
    shell_ok(bed, "dc1", [f"major_compact '{table}'"])
    while time.perf_counter() - started < timeout_s:
        try:
            counts = files_per_store()
        except hdfs.HdfsPathNotFound:  # a region split or merged away while listed (the bed's regions are small)
            counts = []
        if counts and max(counts) == 1:
            log(f"major compaction done in {time.perf_counter() - started:.0f}s: {len(counts)} stores, one file each")
            return
        time.sleep(5)
    raise SystemExit(f"the major compaction of {table} did not end within {timeout_s:.0f}s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/bench_snapshot.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=256, help="MiB loaded into the table (default 256)")
    p.add_argument("--big-mb", type=int, default=1024, help="the large file of the memory test, MiB (default 1024)")
    p.add_argument("--testbed", help="the workdir of a realhbase test bed that is up: use it, do not stop it")
    p.add_argument("--repeat", type=int, default=3,
                   help="plain copy and export, one after the other, this many times (a new snapshot each): the "
                        "medians are compared (default 3; a shared machine's noise is larger than the difference)")
    p.add_argument("--compact", action="store_true",
                   help="major-compact the table before the export: one file per region, --mb/8 MiB each")
    p.add_argument("--block-mb", type=int, default=128,
                   help="the bed's dfs.blocksize, MiB (default 128, HDFS's; the test bed's own is 1): a file's "
                        "every block costs the copies NameNode and DataNode round trips, and its checksum one "
                        "DataNode call per block. Ignored with --testbed")
    args = p.parse_args(argv)

    from bench.harness import exit_on_sigterm
    from demo.workload import Thrift2
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.data import executors
    from hbase_migration.data.copy import CopyOptions
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.data.runner import run_copy
    from hbase_migration.data.snapshot_copy import webhdfs_of
    from hbase_migration.data.snapshot_export import ExportOptions, SnapshotExport
    from hbase_migration.data.snapshot_manifest import export_files, parse_data_manifest
    from hbase_migration.ledger.store import Ledger
    from realhbase.testbed import RealHBase
    from tests.snapshot_bed import BedTable, connection, shell_ok, unique

    exit_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    bed = RealHBase(Path(args.testbed) if args.testbed else workdir / "realhbase")
    if not args.testbed:
        os.environ["REALHBASE_DFS_BLOCKSIZE"] = str(args.block_mb << 20)  # realhbase/config.py
        log(f"starting realhbase in {bed.workdir} (dfs.blocksize {args.block_mb} MiB)")
        bed.up()
        for name in ("dc1", "dc2"):  # the bed's 4 GiB quota on /hbase is for its quota tests, not a GiB-sized table
            bed.set_quota(name, "/hbase", space_bytes=-1)
    spark = None
    try:
        endpoints = bed.endpoints()
        dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
        source: Cluster = cluster_from_text("source", connection(dc1))
        target: Cluster = cluster_from_text("target", connection(dc2))
        table = BedTable(unique("bench_snap_"), tuple(b"%02x" % b for b in range(0x20, 0x100, 0x20)))
        scan_table = table.name + "_scan"
        shell_ok(bed, "dc1", table.create_statements())
        if args.compact:  # the bed splits regions past 8 MiB; a production-shaped table keeps its 8 regions
            shell_ok(bed, "dc1", [f"alter '{table.name}', MAX_FILESIZE => '{64 << 30}'"])
        families = ("{NAME => 'd', VERSIONS => 3, REPLICATION_SCOPE => 1}, "
                    "{NAME => 'k', VERSIONS => 5, KEEP_DELETED_CELLS => 'true', REPLICATION_SCOPE => 1}")
        splits = ", ".join(f"'{s.decode()}'" for s in table.splits)
        shell_ok(bed, "dc2", [f"create '{scan_table}', {families}, SPLITS => [{splits}]"])
        value = 8192
        rows = args.mb * (1 << 20) // value
        log(f"loading {rows} rows of {value} B into {table.name} ({args.mb} MiB)")
        client = Thrift2(dc1)
        started = time.perf_counter()
        batch = []
        for i in range(rows):
            key = b"%02x-%08d" % ((i * 2654435761) % 256, i)
            batch.append((key, {b"d:v": os.urandom(value)}, 1_600_000_000_000 + i))
            if len(batch) >= 64:
                client.put(table.name, batch)
                batch = []
        if batch:
            client.put(table.name, batch)
        client.close()
        log(f"loaded in {time.perf_counter() - started:.0f}s; flushing")
        shell_ok(bed, "dc1", [f"flush '{table.name}'"])
        if args.compact:
            compact(bed, source, table.name)

        spark, _ = executors.spark_session("bench-snapshot", "local[2]")
        executor = executors.SparkExecutor("bench-snapshot", "local[2]")
        # warm-up: the Python workers started and the shipped library imported in them, as a long-running
        # application's are after its first job (the first export of a session paid 5 to 8 s more for it here)
        spark.sparkContext.parallelize(range(2), 2).map(
            lambda _: __import__("hbase_migration.data.snapshot_export").__name__).count()

        ledger = Ledger.open(f"sqlite:///{workdir / 'ledger.db'}")
        src, dst = webhdfs_of(source), webhdfs_of(target)
        plain_runs, export_runs = [], []
        for k in range(args.repeat):
            export = SnapshotExport(source, target, ExportOptions(table.name, f"bench-{k}-{table.name}"), ledger)
            t0 = time.perf_counter()
            export.take()
            take_s = time.perf_counter() - t0
            log(f"snapshot taken in {take_s:.0f}s")

            # the plain copy of the same files (where the snapshot keeps them on the source), two streams at once,
            # first: each copy reads the files from disk, as a production table's are read (not from the page
            # cache the other copy filled)
            manifest = parse_data_manifest(b"".join(_read(src, f"/hbase/.hbase-snapshot/{export.name}/"
                                                               "data.manifest")))
            pairs = []
            for f in export_files(manifest):
                live, archived = f.source_paths("/hbase")
                path = live if src.status_or_none(live) is not None else archived
                pairs.append((path, f"/bench-plain/{f.region}-{f.family}-{f.name}"))
            block = src.file_status(pairs[0][0]).block_size  # the store files' HDFS block size
            cold = drop_page_cache()
            plain_runs.append(plain_copy(source, target, pairs, 2))
            dst.delete("/bench-plain", recursive=True)

            drop_page_cache()
            log(f"exporting the snapshot's files ({k + 1} of {args.repeat})")
            summary = export.copy(executor)
            export_runs.append(summary["seconds"])
            log(f"plain {plain_runs[-1]:.1f}s, export {export_runs[-1]:.1f}s (load average {os.getloadavg()[0]:.1f})")
            if k + 1 < args.repeat:  # not the last: its files and manifest off the target, its snapshot deleted
                dst.delete(export.target_staging_dir(), recursive=True)
                export.clean()
        plain_s, copy_s = statistics.median(plain_runs), statistics.median(export_runs)
        store_bytes = summary["bytes_total"]
        export_bps = store_bytes / copy_s
        plain_bps = store_bytes / plain_s
        log(f"plain WebHDFS copy of the same files: {plain_s:.1f}s ({plain_bps / 2**20:.1f} MiB/s)")
        log(f"export: {summary['files_total']} files, {store_bytes / 2**20:.1f} MiB in {copy_s:.1f}s "
            f"({export_bps / 2**20:.1f} MiB/s, checksum {summary['checksum']})")
        t0 = time.perf_counter()
        export.publish()  # finish() without its clean(): the source snapshot stays until the end
        export.clone()
        finish_s = time.perf_counter() - t0

        # the scan copy of the same table (Thrift2), Spark local[2]
        scan = run_copy(source, target, CopyOptions(table.name, target_table=scan_table), executor)
        scan_s = scan["elapsed_s"]
        scan_bps = store_bytes / scan_s
        log(f"scan copy: {scan.get('rows')} rows in {scan_s:.1f}s ({scan_bps / 2**20:.1f} MiB/s of store files)")

        # memory: one task copying a big file, one a small one
        big, small = args.big_mb << 20, 10 << 20
        log(f"writing a {args.big_mb} MiB and a 10 MiB file on the source's HDFS")
        write_file(source, "/bench-src/data/default/bench/r0/f/big", big)
        write_file(source, "/bench-src/data/default/bench/r0/f/small", small)
        big_run = rss_task(connection(dc1), connection(dc2), "big", big)
        small_run = rss_task(connection(dc1), connection(dc2), "small", small)
        log(f"task peak RSS: {big_run['peak_rss_mib']} MiB for {args.big_mb} MiB, {small_run['peak_rss_mib']} MiB "
            "for 10 MiB")
        for path in ("/bench-src",):
            webhdfs_of(source).delete(path, recursive=True)
        for path in ("/bench-dst", "/bench-plain"):
            webhdfs_of(target).delete(path, recursive=True)
        export.clean()
        ledger.close()
        result = {
            "bench": "snapshot", "hbase": endpoints["dc1"].get("hbase_version"), "table_mib": round(
                store_bytes / 2**20, 1), "files": summary["files_total"], "compacted": args.compact,
            "export_mib_per_s": round(export_bps / 2**20, 2), "export_copy_s": round(copy_s, 1),
            "plain_webhdfs_mib_per_s": round(plain_bps / 2**20, 2), "scan_copy_mib_per_s": round(scan_bps / 2**20, 2),
            "scan_copy_s": round(scan_s, 1), "snapshot_take_s": round(take_s, 1), "read_cold": cold,
            "block_mib": round(block / 2**20, 1),
            "publish_clone_s": round(finish_s, 1), "checksum": summary["checksum"],
            "vs_webhdfs_copy": round(export_bps / plain_bps, 2), "vs_scan_copy": round(export_bps / scan_bps, 2),
            "plain_copy_runs_s": [round(x, 2) for x in plain_runs],
            "export_copy_runs_s": [round(x, 2) for x in export_runs],
            "vs_webhdfs_copy_runs": [round(p / e, 2) for p, e in zip(plain_runs, export_runs)],
            "big_file": big_run, "small_file": small_run,
            "rss_ratio": round(big_run["peak_rss_mib"] / small_run["peak_rss_mib"], 2),
        }
    finally:
        if spark is not None:
            executors.stop_session(spark)
        if not args.testbed:
            log("stopping realhbase")
            bed.down()
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


def _read(client, path: str):
    with client.open(path) as chunks:
        yield from chunks


if __name__ == "__main__":
    sys.exit(main())
