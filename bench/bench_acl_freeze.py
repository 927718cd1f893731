"""The ACL freeze on real HBase: the cut-over's window with `freeze_method=acl` on two realhbase clusters started
with HBase's AccessController (hbase.security.authorization=true, the AccessController coprocessor on master,
region servers and regions; simple authentication, so a client names its user with HADOOP_USER_NAME). Not the
test bed's secure mode (Kerberos: another change adds `realhbase up --secure`); the permission checks are HBase's
own, the identities are not authenticated.

The clients: a JRuby loop in a shell JVM running as user `app` (HADOOP_USER_NAME=app; the Thrift gateways run as
the HBase superuser and would bypass every permission), writing unique rows to the cluster a switch file names,
printing each acknowledgement and refusal with its instant; `app` holds READ and WRITE on the tables on both
clusters. Per run: the window (sessions, lag gate, live pass, the ACL fence: `app` given READ only through
`Admin.grant(..., mergeExistingPermissions=false)`, WAL roll and drain, bounded check, the switch file rewritten),
then the writer's freeze (last write the old side accepted -> first the new side accepted), writes the old side
accepted after the new side's first, the fence's own cost and the bounded check's time inside the freeze. Then the
fence is lifted (WRITE given back) and the clients switched back by hand for the next run (the figure is the
freeze).

`--rollback`: instead, each cut-over is followed by its rollback as `hbase_rollback` runs it: the forward peer
retired after the cut-over, re-created DISABLED on dc1 after a WAL roll, the window with the roles swapped
(`run_window(..., roles=ROLLBACK_ROLES)`: dc2 fenced by ACL, the reverse peer drained, the bounded check, the
writer switched back; dc1's WRITE given back just before the switch from the cut-over's recorded grants), the
reverse peer removed; the next cut-over gives dc2 its WRITE back just before its switch from the rollback's record.
Its freezes are measured like the cut-over's (`rollback_write_freeze_s`).

`--tables N --regions R`: N tables of R regions each (created all at once through the Admin API, and granted in
one shell call per cluster). After the runs, with the writer still on, the bounded check as it runs in the
freeze (every version written in the last minute, both sides) timed the way it was before issue 39's Build 7
(`compare_window_before`: one key range per table when there are more tables than threads, 8 threads, two new
connections per range, the regions read inside) and as it is now (one range per region up to 4 per thread, a
pool of `parallel_checks` threads with one connection per side each, the regions read beforehand), alternately, three
times each: `bounded_check_before_s`, `bounded_check_after_s`, their ratio.

At the end every acknowledged write is looked for on dc2, and with `--rollback` on dc1 too
(`acknowledged_writes_lost`: the most missing on either): those dc1 acknowledged reach dc2 through the forward
peer, dc2's reach dc1 through the reverse peer while it exists.

Printed, never asserted; the last line is one JSON object naming `hbase_version`.

    .venv/bin/python bench/bench_acl_freeze.py [--runs 3] [--regions 50] [--tables 3] [--rollback] [--workdir DIR]
                                               [--keep-bed] [--prefix acl]
"""
from __future__ import annotations

import argparse
import getpass
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ACL_PROPERTIES = [
    ("hbase.security.authorization", "true", "bench_acl_freeze: HBase's permission checks on"),
    ("hbase.coprocessor.master.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
    ("hbase.coprocessor.region.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
    ("hbase.coprocessor.regionserver.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
    # --tables 300: the bed's region servers have 512 MB heaps, and MSLAB gives every store written to a 2 MB chunk
    # (150 regions per server: 300 MB); off here, which changes nothing the bench measures
    ("hbase.hregion.memstore.mslab.enabled", "false", "bench_acl_freeze: hundreds of written regions per 512 MB heap"),
]

def say(*args) -> None:
    print(*args, flush=True)


def create_tables(cluster, tables, regions) -> None:
    """`tables` (family `f`, REPLICATION_SCOPE 1; `regions` regions each, cut like HexStringSplit) created at once
    through the shell's Admin (createTableAsync, every future waited for), then RW granted to `app` on each (one
    batch, `freeze.acl_batch_statement`)."""
    from hbase_migration.clusters import channels
    from hbase_migration.migration import freeze

    keys = [f"{(0x100000000 * i) // regions:08x}" for i in range(1, regions)]
    splits = (f"hm_sp = Java::byte[][{len(keys)}].new; {json.dumps(keys)}.each_with_index {{ |k, i| hm_sp[i] = "
              "k.to_java_bytes }; nil")
    names = "[" + ", ".join(f"'{t}'" for t in tables) + "]"
    create = (f"hm_f = {names}.map {{ |t| hm_admin.createTableAsync(org.apache.hadoop.hbase.client."
              "TableDescriptorBuilder.newBuilder(org.apache.hadoop.hbase.TableName.valueOf(t)).setColumnFamily("
              "org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder.newBuilder('f'.to_java_bytes)"
              f".setScope(1).build).build{', hm_sp' if keys else ''}) }}; hm_f.each {{ |f| f.get(1800, "
              "java.util.concurrent.TimeUnit::SECONDS) }; nil")
    grant = freeze.acl_batch_statement([(g, "RW") for g in freeze.canary_grants("app", tables)], timeout_s=1800)
    out = channels.shell(cluster, freeze.jruby_admin_statements() + [splits, create, grant], timeout_s=3600).stdout
    _changed, failed = freeze.parse_acl_batch(out)
    if failed:
        raise RuntimeError(f"RW to app not granted on {cluster.name}: {failed[:3]}")


def compare_window_before(source, target, tables, since, parallel=8, timeout_s=None):
    """The bounded check's compare as it was before issue 39's Build 7 (the baseline, kept here only to be
    measured against): `parallel // len(tables)` key ranges per table (one when there are more tables than
    threads), the regions read inside, every range compared by a pool of `parallel` threads with two new
    connections of its own."""
    from concurrent.futures import ThreadPoolExecutor

    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.migration.bounded_check import CheckRange, _compare_range

    with open_data_path(source, timeout_s) as path:
        per_table = max(1, parallel // max(1, len(tables)))
        work = []
        for t in tables:
            regions = path.regions(t)
            parts = max(1, min(per_table, len(regions)))
            step = len(regions) / parts
            cuts = [regions[int(i * step)].start_key for i in range(parts)] + [b""]
            work += [CheckRange(t, cuts[i], cuts[i + 1]) for i in range(parts)]

    def one(item):
        with open_data_path(source, timeout_s) as src, open_data_path(target, timeout_s) as tgt:
            return _compare_range(src, tgt, item, since)

    differences, cells = [], 0
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(work))), thread_name_prefix="before") as pool:
        for found, stats in pool.map(one, work):
            differences.extend(found)
            cells += stats.get("source_cells", 0)
    return differences, {"ranges": len(work), "source_cells": cells}


def check_before_after(source, target, tables, options, rounds=3):
    """The bounded check's compare of the last minute's versions, before and after Build 7, alternately."""
    from hbase_migration.migration.bounded_check import compare_window

    before, after, detail = [], [], {}
    for _ in range(rounds):
        since = int(time.time() * 1000) - 60_000
        t = time.monotonic()
        diffs, stats = compare_window_before(source, target, tables, since)
        before.append(round(time.monotonic() - t, 3))
        detail["before"] = {**stats, "differing_rows": len(diffs)}
        t = time.monotonic()
        diffs, stats = compare_window(source, target, tables, since, parallel=options.parallel_checks)
        after.append(round(time.monotonic() - t, 3))
        detail["after"] = {**stats, "differing_rows": len(diffs)}
        say(f"bounded check of the last minute: before {before[-1]} s ({detail['before']['ranges']} ranges), "
            f"after {after[-1]} s ({detail['after']['ranges']} ranges, {detail['after']['parallel']} threads)")
    b, a = statistics.median(before), statistics.median(after)
    return {"bounded_check_before_s": b, "bounded_check_after_s": a,
            "bounded_check_speedup": round(b / a, 2) if a > 0 else None, "bounded_check_before_runs_s": before,
            "bounded_check_after_runs_s": after, "bounded_check_compare": detail}


def window_figures(result, writer, old, new, mark):
    from demo.switching_writer import freeze_figures

    figures = freeze_figures(writer.log(), old, new, since=mark)
    refusals = [x for x in writer.lines if x.startswith(f"REFUSED {old}") and int(x.split()[2]) / 1000 >= mark]
    check = result["details"]["bounded_check"]
    fence = result["details"]["fence"]
    return {"write_freeze_s": figures["write_freeze_s"], "writes_accepted_by_both": figures["writes_accepted_by_both"],
            "toolkit_freeze_s": result["freeze_s"], "freeze_shares": result["freeze_shares"],
            "fence_s": fence["seconds"], "fence_batch_s": fence.get("batch_s"),
            "fence_proof_s": fence["proof"]["ms"] / 1000, "fence_proof_pairs": fence["proof"]["pairs"],
            "fence_proof_polls": fence["proof"]["polls"], "bounded_check_s": check["seconds"],
            "bounded_check_ranges": check.get("ranges"), "bounded_check_cells": check.get("source_cells"),
            "regions_read_s": result["details"]["live_pass"].get("regions_read_s"), "steps": result["steps"],
            "refusal": refusals[0] if refusals else None, "fenced": len(result.get("acl_fenced") or ())}


def fence_split(out: dict) -> str:
    return (f"batch {out['fence_batch_s']} s, proof {out['fence_proof_s']} s over {out['fence_proof_pairs']} "
            f"(table, server) pairs in {out['fence_proof_polls']} poll(s)")


def median_of(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--regions", type=int, default=50)
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--rollback", action="store_true", help="each cut-over followed by its rollback")
    parser.add_argument("--workdir", help="the bed's workdir (a running bed there is used as it is)")
    parser.add_argument("--keep-bed", action="store_true", help="leave the bed running (default: stopped)")
    parser.add_argument("--prefix", default="acl", help="the tables' and peers' names start with it")
    args = parser.parse_args(argv)
    if args.tables < 1 or args.regions < 1 or args.runs < 1:
        parser.error("--tables, --regions and --runs must be at least 1")

    import realhbase.config as config
    from realhbase.testbed import RealHBase

    plain = config.hbase_site
    config.hbase_site = lambda *a: plain(*a) + ACL_PROPERTIES  # written by `up` into each cluster's hbase-site.xml

    from demo.shell_writer import ShellWriter
    from demo.switching_writer import lost_writes_on
    from hbase_migration.clusters import channels
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.migration import freeze
    from hbase_migration.migration.cutover import (
        SwitchPlan,
        add_reverse_peer,
        remove_reverse_peer,
        retire_forward_peer,
        rollback_window_plan,
    )
    from hbase_migration.migration.cutover_plan import ROLLBACK_ROLES, AbortConditions, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-acl-"))
    bed = RealHBase(workdir)
    summary: dict = {"regions_per_table": args.regions, "tables": args.tables, "rollback": args.rollback}
    writer = None
    p = args.prefix
    try:
        t0 = time.time()
        bed.up()
        say(f"realhbase with AccessController up in {time.time() - t0:.0f} s ({workdir})")
        eps = bed.endpoints()
        summary["hbase_version"] = eps["dc1"]["hbase_version"]
        clusters = {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}
        tables = ([f"{p}_a", f"{p}_b", f"{p}_c"] if args.tables == 3 else
                  [f"{p}_{i:04d}" for i in range(args.tables)])
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda c: create_tables(c, tables, args.regions), clusters.values()))
        summary["create_tables_s"] = round(time.time() - t0, 1)
        say(f"{len(tables)} tables of {args.regions} region(s) on both clusters, RW to app, in "
            f"{time.time() - t0:.0f} s")
        with channels.shell_session(clusters["dc1"]) as s:
            read = [freeze.parse_user_permission(s.run([st]).stdout) for st in freeze.acl_read_statements(tables[:3])]
        summary["user_permission_parsed"] = [[g.__dict__ for g in grants] for grants in read]
        say("user_permission as parsed (first tables):", summary["user_permission_parsed"])
        fwd = f"{p}f"
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(fwd, PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                           enabled=True)
        switch_file = workdir / f"{p}-active"
        switch_file.write_text("dc1")
        # the clients: demo/shell_writer.py's loop in a shell JVM, as user `app` (no superuser rights)
        # with --rollback it tries a refusing cluster again every 0.2 s: a region server may apply the hbase:acl
        # change that gives the side the clients are switched to its WRITE back (lift_joined_fence, just before the
        # switch) a moment after the switch, and HBase's clients do not retry an AccessDeniedException
        writer = ShellWriter(bed.shell_java_command("dc1", ["-n"]), config.CLUSTERS, tables, switch_file,
                             user="app", retry_refused_s=0.2 if args.rollback else None).start()
        say("writer (user app) writing:", next((x for x in writer.lines if x.startswith("ACK")), writer.lines[-5:]))
        # The bed's HBase runs as this process's user, its superuser: real HBase grants it RWXCA globally and on
        # every table it creates, a superuser bypasses every permission check anyway, and the replication sink
        # writes as it. The operator exempts it, as docs/cutover.md says; hbase.superuser is not set on this bed
        # (/conf shows nothing), which the run spec's `superusers: []` attests.
        superuser = getpass.getuser()
        conditions = AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300, skew_margin_ms=2_000)
        options = WindowOptions("acl", freeze_exempt=(superuser,), superusers=(), conditions=conditions)
        runs, rollbacks = [], []
        give_back: tuple[str, ...] = ()  # dc2's WRITE, fenced by the last rollback: given back before the switch
        take_again: tuple[str, ...] = ()  # and taken away again should that window abort
        for k in range(args.runs):
            rev = f"{p}r{k}"
            plan = SwitchPlan("cutover", f"{p}{k}", f"{p}{k}", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"],
                              fwd, rev, tuple(tables), tuple(tables), freeze_method="acl")
            verified = int(time.time() * 1000) - 120_000
            kept = int(time.time() * 1000)
            add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
            mark = time.time()
            result = run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=kept,
                                verify_started_ms={t: verified for t in tables}, unfence_joined=give_back,
                                refence_joined=take_again,
                                switch=lambda phase: switch_file.write_text("dc2" if phase == "switch" else "dc1"))
            switched_ms = int(result["switched_at"] * 1000)
            time.sleep(3)
            out = window_figures(result, writer, "dc1", "dc2", mark)
            runs.append(out)
            say(f"ACL cut-over {k + 1}: writer's freeze {out['write_freeze_s']} s, toolkit's {out['toolkit_freeze_s']} "
                f"s (fence {out['fence_s']} s: {fence_split(out)}; bounded check {out['bounded_check_s']} s over "
                f"{out['bounded_check_ranges']} ranges); accepted by both {out['writes_accepted_by_both']}; first "
                f"refusal: {out['refusal']}")
            if not args.rollback:
                # back for the next run: WRITE given back on dc1, the clients to dc1, the reverse peer removed
                channels.shell(clusters["dc1"], freeze.jruby_admin_statements() + result["unfence_statements"])
                switch_file.write_text("dc1")
                with peer_admin(clusters["dc2"]) as admin:
                    admin.remove_peer(rev)
                time.sleep(5)
                continue
            # the rollback, as hbase_rollback runs it once the cut-over retired its forward peer
            retire_forward_peer(clusters["dc1"], plan)
            mirrored = rollback_window_plan(plan)
            kept = int(time.time() * 1000)
            add_reverse_peer(clusters["dc1"], clusters["dc2"], mirrored, enabled=False)  # the forward peer, DISABLED
            mark = time.time()
            back = run_window(clusters["dc2"], clusters["dc1"], mirrored, options, kept_since_ms=kept,
                              verify_started_ms={t: switched_ms - 120_000 for t in tables}, roles=ROLLBACK_ROLES,
                              unfence_joined=tuple(result["unfence_statements"]),
                              refence_joined=tuple(result["refence_statements"]),
                              switch=lambda phase: switch_file.write_text("dc1" if phase == "switch" else "dc2"))
            time.sleep(3)
            out = window_figures(back, writer, "dc2", "dc1", mark)
            out["remove_reverse_peer"] = remove_reverse_peer(clusters["dc2"], plan).get("outcome")
            rollbacks.append(out)
            give_back, take_again = tuple(back["unfence_statements"]), tuple(back["refence_statements"])
            say(f"ACL rollback {k + 1}: writer's freeze {out['write_freeze_s']} s, toolkit's {out['toolkit_freeze_s']} "
                f"s (fence {out['fence_s']} s: {fence_split(out)}; bounded check {out['bounded_check_s']} s); "
                f"accepted by both "
                f"{out['writes_accepted_by_both']}; steps " + ", ".join(f"{st['step']} {st['seconds']:.1f} s"
                                                                         for st in out["steps"]))
            time.sleep(5)
        summary.update(check_before_after(clusters["dc1"], clusters["dc2"], tables, options))
        acked = writer.stop()
        writer = None
        # every acknowledged write looked for on dc2 (and dc1 after rollbacks), waited for until replication has
        # shipped the last of them
        lost = {}
        for name in ("dc2", "dc1") if args.rollback else ("dc2",):
            lost[name] = lost_writes_on(clusters[name], acked)
        freezes = [r["write_freeze_s"] for r in runs]
        summary.update(runs=runs, write_freezes_s=freezes, write_freeze_s=median_of(runs, "write_freeze_s"),
                       toolkit_freeze_s=median_of(runs, "toolkit_freeze_s"),
                       bounded_check_s=median_of(runs, "bounded_check_s"),
                       fence_batch_s=median_of(runs, "fence_batch_s"), fence_proof_s=median_of(runs, "fence_proof_s"),
                       acks=len(acked.acks), lost_per_cluster={n: len(m) for n, m in lost.items()},
                       acknowledged_writes_lost=max(len(m) for m in lost.values()),
                       lost_examples=[f"{t}/{k.decode()}" for m in lost.values() for t, k in m[:5]],
                       writes_accepted_by_both=sum(r["writes_accepted_by_both"] for r in runs + rollbacks),
                       fence_s=[r["fence_s"] for r in runs])
        if args.rollback:
            summary.update(rollbacks=rollbacks, rollback_write_freezes_s=[r["write_freeze_s"] for r in rollbacks],
                           rollback_write_freeze_s=median_of(rollbacks, "write_freeze_s"),
                           rollback_toolkit_freeze_s=median_of(rollbacks, "toolkit_freeze_s"),
                           rollback_bounded_check_s=median_of(rollbacks, "bounded_check_s"),
                           rollback_fence_s=[r["fence_s"] for r in rollbacks])
    finally:
        if writer is not None:
            writer.stop(timeout_s=30)
        if not args.keep_bed:
            summary["survivors"] = bed.down()
    say(json.dumps(summary, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
