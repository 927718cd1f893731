"""What security costs the copy: rows/s on secured clusters against plain ones, in the same run.

The same table (~150-byte rows, two families, 8 regions) is copied by the toolkit's copy (the CLI's in-process
runner: the partitions on 2 threads, the Thrift2 data path, as a Spark task runs them) between
1. plain clusters (the baseline);
2. secured clusters in two realms (source DC1.TEST, target DC2.TEST through the cross-realm trust), the gateways
   in binary mode with SASL GSSAPI at QOP `auth` (authentication only), `auth-int` (every frame signed) and
   `auth-conf` (every frame encrypted: the figure asked for);
3. secured clusters whose gateways run HBase's HTTP mode with SPNEGO on every call, over TLS.
Each mode is copied `--repeat` times into fresh target tables; the best rate counts (the first run of a mode also
pays for the logins). Printed as rows/s and as the ratio to plain; never asserted.

With `--backend realhbase` the clusters are real HBase (realhbase/): first a plain bed, then `up --secure`'s bed,
one after the other. A real gateway's QOP is a server setting and the secured bed runs dc1's gateways on SASL
`auth-conf` and dc2's in HTTP mode with SPNEGO over TLS (as production does), so the modes are the three copies
that bed offers, each against the plain bed's copy of the same shape: dc1 -> dc1 (SASL auth-conf both ends),
dc2 -> dc2 (HTTP + SPNEGO + TLS both ends) and dc1 -> dc2 (across the realms: the migration's own path).

    .venv/bin/python bench/bench_secure.py [--rows 20000] [--repeat 2] [--backend realhbase]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPLITS = [b"%02x" % b for b in (0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0)]
MODES = {  # name -> cluster choices (None: a plain pair)
    "plain": None,
    "sasl auth": {"thrift_qop": "auth"},
    "sasl auth-int": {"thrift_qop": "auth-int"},
    "sasl auth-conf": {"thrift_qop": "auth-conf"},
    "http+spnego+tls": {"thrift_http": True, "thrift_ssl": True},
}


def key(i: int) -> bytes:
    return b"%02x-%07d" % ((i * 2654435761) % 256, i)


@contextmanager
def pair(workdir: Path, mode: str, stack, zookeeper) -> Iterator[tuple]:
    from minihbase.testing import MiniCluster

    choices = MODES[mode]
    tag = mode.replace(" ", "-").replace("+", "-")
    if choices is None:
        src = MiniCluster.start(zookeeper.hosts, workdir, name="src", znode_parent=f"/bench-{tag}-src",
                                region_servers=2)
        dst = MiniCluster.start(zookeeper.hosts, workdir, name="dst", znode_parent=f"/bench-{tag}-dst",
                                region_servers=2)
    else:
        src = MiniCluster.start_secure(stack, workdir, "src", "DC1.TEST", region_servers=2,
                                       znode_parent=f"/bench-{tag}-src", **choices)
        dst = MiniCluster.start_secure(stack, workdir, "dst", "DC2.TEST", region_servers=2,
                                       znode_parent=f"/bench-{tag}-dst", **choices)
    try:
        yield src, dst
    finally:
        dst.stop()
        src.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def load(src, rows: int) -> None:
    """The source table, loaded through the toolkit's own Thrift2 session (set-up, not measured)."""
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.data.datapath.thrift2 import Thrift2Session
    from hbase_migration.data.jobargs import cluster_from_text

    T = hbase2()
    src.create_table("bench", {"a": {"max_versions": 1}, "b": {"max_versions": 1}}, SPLITS)
    with Thrift2Session(cluster_from_text("src", src.connection_json), timeout_s=60) as session:
        for start in range(0, rows, 2000):
            session.call("putMultiple", b"bench", [T.TPut(row=key(i), columnValues=[
                T.TColumnValue(family=b"a", qualifier=b"x", value=b"x%d" % i + b"." * 60, timestamp=1_600_000_000_000),
                T.TColumnValue(family=b"b", qualifier=b"y", value=b"y" * 64, timestamp=1_600_000_000_000 + i)])
                for i in range(start, min(rows, start + 2000))])


def copy_rate(src, dst, target_table: str, workdir: Path) -> float:
    from hbase_migration.data.executors import LocalExecutor
    from hbase_migration.data.runner import job_main

    dst.create_table(target_table, {"a": {"max_versions": 1}, "b": {"max_versions": 1}}, SPLITS)
    out = workdir / f"{target_table}.json"
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the job's own summary line; ours is printed at the end
        rc = job_main("copy", ["--source", src.connection_json, "--target", dst.connection_json, "--table", "bench",
                               "--target-table", target_table, "--summary-file", str(out), "--log-level", "WARNING"],
                      lambda _name, _ns: LocalExecutor(2))
    elapsed = time.perf_counter() - started
    summary = json.loads(out.read_text())
    if rc != 0:
        raise SystemExit(f"copy failed ({rc}): {summary}")  # a failed copy makes every figure meaningless
    return summary["rows"] / elapsed


# realhbase: mode -> (source cluster, target cluster); each measured on the plain bed and on the secured one.
REAL_MODES = {
    "sasl auth-conf": ("dc1", "dc1"),
    "http+spnego+tls": ("dc2", "dc2"),
    "sasl auth-conf -> http+spnego+tls": ("dc1", "dc2"),
}


def real_rates(workdir: Path, secure: bool, rows: int, repeat: int) -> dict[str, float]:
    """Each REAL_MODES copy's best rows/s on one realhbase bed (plain, or `up --secure`'s), started and stopped."""
    from bench.harness import RealCluster
    from realhbase.testbed import RealHBase, processes

    bed = RealHBase(workdir / ("secure" if secure else "plain"), secure=secure, timeout=600)
    rates: dict[str, float] = {}
    try:
        bed.up()
        clusters = {name: RealCluster(bed, name) for name in ("dc1", "dc2")}
        for cluster in clusters.values():
            load(cluster, rows)
        for mode, (source, target) in REAL_MODES.items():
            runs = [copy_rate(clusters[source], clusters[target], f"{source}_{target}_{i}", workdir)
                    for i in range(repeat)]
            rates[mode] = max(runs)
            shape = f"{source} -> {target}, " + (mode if secure else "plain")
            print(f"{shape:45s} {rates[mode]:9.0f} rows/s (runs: {', '.join(f'{r:.0f}' for r in runs)})",
                  file=sys.stderr, flush=True)
    finally:
        survivors = bed.down()
        if survivors or processes(bed.workdir):
            print(f"left running: {survivors or processes(bed.workdir)}", file=sys.stderr)
    return rates


def main_realhbase(rows: int, repeat: int) -> int:
    from bench.harness import exit_on_sigterm
    from hbase_migration.clusters import kerberos

    exit_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix="bench-secure-real-"))
    try:
        plain = real_rates(workdir, False, rows, repeat)
        kerberos.forget_krb5_conf()
        secured = real_rates(workdir, True, rows, repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    from realhbase.jars import hbase_version

    result = {"backend": "realhbase", "hbase_version": hbase_version(), "rows": rows,
              "rows_per_s": {"plain": {m: round(r) for m, r in plain.items()},
                             "secured": {m: round(r) for m, r in secured.items()}},
              "ratio_to_plain": {m: round(secured[m] / plain[m], 2) for m in REAL_MODES}}
    print(json.dumps(result, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    p.add_argument("--backend", choices=("minihbase", "realhbase"), default="minihbase")
    args = p.parse_args(argv)
    if args.backend == "realhbase":
        return main_realhbase(args.rows, args.repeat)
    from bedkit.security.stack import SecureStack
    from bedkit.zookeeper import ZooKeeperServer
    from hbase_migration.clusters import kerberos

    workdir = Path(tempfile.mkdtemp(prefix="bench-secure-"))
    zookeeper = ZooKeeperServer(workdir / "zk")
    zookeeper.start()
    stack = SecureStack(workdir / "stack").start()
    kerberos.forget_krb5_conf()
    figures: dict[str, float] = {}
    try:
        for mode in args.modes.split(","):
            with pair(workdir / mode.replace(" ", "_"), mode, stack, zookeeper) as (src, dst):
                load(src, args.rows)
                rates = [copy_rate(src, dst, f"copy{i}", workdir) for i in range(args.repeat)]
                figures[mode] = max(rates)
                print(f"{mode:18s} {figures[mode]:9.0f} rows/s (runs: {', '.join(f'{r:.0f}' for r in rates)})",
                      file=sys.stderr, flush=True)
    finally:
        stack.stop()
        zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    base = figures.get("plain")
    result = {"rows": args.rows, "rows_per_s": {m: round(r) for m, r in figures.items()},
              "ratio_to_plain": {m: round(r / base, 2) for m, r in figures.items()} if base else None}
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    sys.exit(main())
