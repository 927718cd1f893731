"""The cut-over's write freeze on real HBase (realhbase: HBase 2.6.4, two clusters on real HDFS), with a live
writer that switches clusters when told (demo/switching_writer.py: 4 threads, unique rows spread over every
region, every acknowledgement timed).

Setup: 3 tables of `--regions` regions each (HexStringSplit) on both clusters, REPLICATION_SCOPE 1, a forward
peer dc1 -> dc2 ENABLED from the start (the tables are created empty, so no copy is needed: the copy is not what
is measured here), the writer on dc1.

Default: `--runs` cut-overs (5), back and forth (dc1 -> dc2, dc2 -> dc1, ...; each cut-over's reverse peer is the
next one's forward peer), each as `hbase_cutover` runs them, through the same library functions its tasks call:
a full verification (every version of every table, both sides, the bounded check's compare from time 0 with a
re-compare: the verify job's merge-join), the reverse peer created DISABLED (`cutover.add_reverse_peer`), the
window (`cutover_window.run_window`: sessions, lag gate, live pass, READONLY fence, WAL roll and drain, bounded
check, switch of the writer, reverse peer enabled, source unfrozen), a full verification after the switch, the
forward peer retired. Per cut-over: the writer's freeze (last write the old side accepted -> first the new side
accepted), the toolkit's (fence start -> switch done) with each fenced step's share, writes accepted by the old
side after the new side's first. At the end every acknowledged write is looked for on both clusters (the last
reverse peer keeps the old side current).

`--baseline`: first, one cut-over the way `hbase_cutover` ran before issue 28 (freeze_source: the shell's alter
per table in one shell call; final_drain with the /jmx drain decision, 5 s polls, idle window 30 s; final_verify:
every version; reverse_peer: WAL roll and add_peer, two shell calls; then the switch; a person's approval and
Airflow's scheduling between the tasks not counted: a lower bound).
`--readonly-cost`: READONLY's cost per table and per region: `alter` in a warm shell session for tables of 1, 10
and 50 regions, and the three tables at once (the window's statement).

`--rollback`: after each cut-over (dc1 -> dc2, always), its rollback as `hbase_rollback` runs it: the forward
peer re-created DISABLED after a WAL roll (`cutover.add_reverse_peer` with the roles swapped), the window with the
roles swapped (`run_window(..., roles=ROLLBACK_ROLES)`: the target fenced, the reverse peer drained, the bounded
check from the cut-over's verification after the switch, the writer switched back, the target unfrozen, the
forward peer enabled), a full verification after the switch, the reverse peer removed; the next cut-over reuses
the re-created forward peer (no new migration). Its freezes are measured like the cut-over's.

`--freeze-method acl`: the same window with the ACL fence instead of READONLY, on a bed started with HBase's
AccessController and a writer of its own as a user without superuser rights (bench/bench_acl_freeze.py).

Printed, never asserted. The last line is one JSON object naming `hbase_version`: `write_freeze_s` (the median
over the runs; with `--rollback` also `rollback_write_freeze_s`), `bounded_check_s` (the bounded check's seconds
inside the freeze, median; `rollback_bounded_check_s`), `acknowledged_writes_lost`,
`writes_accepted_by_both` (both directions), and the details.

    .venv/bin/python bench/bench_cutover.py [--testbed DIR] [--runs 5] [--regions 50] [--rate 40] [--baseline]
                                            [--readonly-cost] [--prefix cb] [--freeze-method acl] [--rollback]
                                            [--tables 3]
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

log = logging.getLogger("bench_cutover")


def say(*args) -> None:
    print(*args, flush=True)


def clusters_of(bed):
    from hbase_migration.data.jobargs import cluster_from_text

    eps = bed.endpoints()
    return eps, {name: cluster_from_text(name, json.dumps(eps[name]["connection"])) for name in ("dc1", "dc2")}


def create_tables(clusters, tables, regions):
    from hbase_migration.clusters import channels

    split = "" if regions <= 1 else f", {{NUMREGIONS => {regions}, SPLITALGO => 'HexStringSplit'}}"
    for cluster in clusters.values():
        channels.shell(cluster, [f"create '{t}', {{NAME => 'f', REPLICATION_SCOPE => 1}}{split}" for t in tables],
                       timeout_s=1800)


def full_compare(source, target, tables, live: bool):
    """Every version of every table on both sides (time range from 0), differing rows re-read after 2 s."""
    from hbase_migration.migration.bounded_check import bounded_check

    return bounded_check(source, target, tables, 0, kept_since_ms=None, live=live, recompare_sleep_s=2.0)


def readonly_cost(clusters, prefix):
    from hbase_migration.clusters import channels
    from hbase_migration.migration import freeze

    source = clusters["dc1"]
    sizes = {f"{prefix}_ro1": 1, f"{prefix}_ro10": 10, f"{prefix}_ro50a": 50, f"{prefix}_ro50b": 50,
             f"{prefix}_ro50c": 50}
    out = {"alter": [], "parallel_3x50": []}
    with channels.shell_session(source) as s:
        for table, n in sizes.items():
            split = "" if n == 1 else f", {{NUMREGIONS => {n}, SPLITALGO => 'HexStringSplit'}}"
            s.run([f"create '{table}', 'f'{split}"], timeout_s=900)
        for table in (f"{prefix}_ro1", f"{prefix}_ro10", f"{prefix}_ro50a"):
            for ro in (True, False):
                took = s.run([freeze.readonly_statement(table, ro)], timeout_s=900).seconds
                out["alter"].append({"table": table, "regions": sizes[table], "readonly": ro,
                                     "seconds": round(took, 2)})
                say(f"alter {table} ({sizes[table]} regions) READONLY={ro}: {took:.2f} s")
        s.run(freeze.jruby_admin_statements())
        three = [f"{prefix}_ro50a", f"{prefix}_ro50b", f"{prefix}_ro50c"]
        took = s.run([freeze.readonly_statement(t, True) for t in three], timeout_s=900).seconds
        out["sequential_3x50_s"] = round(took, 2)
        s.run([freeze.readonly_statement(t, False) for t in three], timeout_s=900)
        say(f"alter 3 x 50 regions one after the other (the shell's alter): {took:.2f} s")
        for ro in (True, False):
            took = s.run([freeze.readonly_parallel_statement(three, ro)], timeout_s=900).seconds
            out["parallel_3x50"].append({"readonly": ro, "seconds": round(took, 2)})
            say(f"3 x 50 regions at once (modifyTableAsync, futures) READONLY={ro}: {took:.2f} s")
        s.run([f"disable '{t}'" for t in sizes] + [f"drop '{t}'" for t in sizes], timeout_s=900)
    one = [a for a in out["alter"] if a["readonly"]]
    by_regions = {a["regions"]: a["seconds"] for a in one}
    if 1 in by_regions and 50 in by_regions:
        out["per_region_s"] = round((by_regions[50] - by_regions[1]) / 49, 3)
        out["per_table_s"] = by_regions[1]
    say(f"READONLY: {out.get('per_table_s')} s for a 1-region table, + {out.get('per_region_s')} s per region")
    return out


def baseline(eps, clusters, tables, writer, source_name, target_name, fwd, rev):
    """One cut-over as before issue 28 (see the module doc); the writer switches after the last step."""
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer, drain_check
    from hbase_migration.migration.freeze import set_readonly
    from hbase_migration.replication import lag

    source, target = clusters[source_name], clusters[target_name]
    plan = SwitchPlan("cutover", "baseline", "baseline", eps[source_name]["cluster_key"],
                      eps[target_name]["cluster_key"], fwd, rev, tuple(tables), tuple(tables))
    steps = {}
    started = time.time()
    t = time.time()
    set_readonly(source, tables, True)
    steps["freeze_source"] = time.time() - t
    t = time.time()
    poll = drain_check(source, fwd, lag.thresholds_from({"max_lag_ms": 30_000, "stable_samples": 3,
                                                         "caught_up_queue_size": 1, "idle_window_s": 30.0}),
                       interval_s=5.0, timeout_s=900)
    steps["final_drain"] = time.time() - t
    t = time.time()
    verified = full_compare(source, target, tables, live=False)
    steps["final_verify"] = time.time() - t
    t = time.time()
    add_reverse_peer(target, source, plan, enabled=True)
    steps["reverse_peer"] = time.time() - t
    t = time.time()
    writer.switch_to(target_name)
    steps["switch"] = time.time() - t
    total = time.time() - started
    t = time.time()
    set_readonly(source, tables, False)
    after = time.time() - t
    out = {"toolkit_freeze_s": round(total, 2), "steps": {k: round(v, 2) for k, v in steps.items()},
           "shares": {k: round(v / total, 3) for k, v in steps.items()}, "drained": poll.decision.drained,
           "verify_ok": verified["ok"], "unfreeze_after_s": round(after, 2), "switched_at": started + total}
    say(f"baseline cut-over: freeze {total:.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()))
    return out, plan


def one_cutover(eps, clusters, tables, writer, source_name, target_name, fwd, rev, k, options):
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer, retire_forward_peer
    from hbase_migration.migration.cutover_window import run_window

    source, target = clusters[source_name], clusters[target_name]
    plan = SwitchPlan("cutover", f"bench{k}", f"bench{k}", eps[source_name]["cluster_key"],
                      eps[target_name]["cluster_key"], fwd, rev, tuple(tables), tuple(tables))
    out = {"from": source_name, "to": target_name, "forward_peer": fwd, "reverse_peer": rev}
    verify_started = int(time.time() * 1000)
    pre = full_compare(source, target, tables, live=True)
    out["pre_verify"] = {k2: pre[k2] for k2 in ("ok", "counts", "source_cells", "target_cells", "seconds")}
    if not pre["ok"]:
        raise RuntimeError(f"the full verification before cut-over {k} found differences: {pre['reasons']}")
    t = time.time()
    kept_since = int(time.time() * 1000)
    add_reverse_peer(target, source, plan, enabled=False)
    out["reverse_peer_s"] = round(time.time() - t, 2)

    def switch(phase):
        writer.switch_to(target_name if phase == "switch" else source_name)

    result = run_window(source, target, plan, options, verify_started_ms={t2: verify_started for t2 in tables},
                        kept_since_ms=kept_since, switch=switch)
    out["window"] = {k2: result.get(k2) for k2 in ("steps", "freeze_s", "freeze_shares")}
    out["bounded_check"] = {k2: result["bounded_check"][k2] for k2 in ("counts", "source_cells", "target_cells",
                                                                        "seconds")}
    out["switched_at"] = result["switched_at"]
    out["post_verify_started_ms"] = int(time.time() * 1000)
    post = full_compare(source, target, tables, live=True)
    out["post_verify"] = {k2: post[k2] for k2 in ("ok", "counts", "source_cells", "target_cells", "seconds")}
    retire = retire_forward_peer(source, plan)
    out["retire"] = retire.get("outcome")
    return out


def one_rollback(eps, clusters, tables, writer, cut, k, options):
    """The rollback of cut-over `cut` (its `from` -> `to`): the cut-over's window with the roles swapped."""
    from hbase_migration.migration.cutover import (
        SwitchPlan,
        add_reverse_peer,
        remove_reverse_peer,
        rollback_window_plan,
    )
    from hbase_migration.migration.cutover_plan import ROLLBACK_ROLES
    from hbase_migration.migration.cutover_window import run_window

    source_name, target_name = cut["from"], cut["to"]  # the migration's: the clients go back to the source
    source, target = clusters[source_name], clusters[target_name]
    plan = SwitchPlan("rollback", f"bench{k}", f"bench{k}", eps[source_name]["cluster_key"],
                      eps[target_name]["cluster_key"], cut["forward_peer"], cut["reverse_peer"], tuple(tables),
                      tuple(tables))
    mirrored = rollback_window_plan(plan)
    out = {"from": target_name, "to": source_name}
    t = time.time()
    kept_since = int(time.time() * 1000)
    add_reverse_peer(source, target, mirrored, enabled=False)  # the forward peer again, DISABLED
    out["forward_peer_s"] = round(time.time() - t, 2)

    def switch(phase):
        writer.switch_to(source_name if phase == "switch" else target_name)

    result = run_window(target, source, mirrored, options,
                        verify_started_ms={t2: cut["post_verify_started_ms"] for t2 in tables},
                        kept_since_ms=kept_since, switch=switch, roles=ROLLBACK_ROLES)
    out["window"] = {k2: result.get(k2) for k2 in ("steps", "freeze_s", "freeze_shares")}
    out["bounded_check"] = {k2: result["bounded_check"][k2] for k2 in ("counts", "source_cells", "target_cells",
                                                                        "seconds")}
    post = full_compare(source, target, tables, live=True)
    out["post_verify"] = {k2: post[k2] for k2 in ("ok", "counts", "source_cells", "target_cells", "seconds")}
    out["remove_reverse_peer"] = remove_reverse_peer(target, plan).get("outcome")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testbed", help="a running realhbase workdir to use (default: start one, stop it after)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--regions", type=int, default=50)
    parser.add_argument("--tables", type=int, default=3, help="how many tables of --regions regions each")
    parser.add_argument("--rate", type=float, default=40.0, help="the writer's writes per second (4 threads)")
    parser.add_argument("--prefix", default="cb")
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--readonly-cost", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the tables and peers (default: dropped)")
    parser.add_argument("--rollback", action="store_true",
                        help="roll each cut-over back (the window with the roles swapped); every cut-over is then "
                             "dc1 -> dc2 with the same two peers")
    parser.add_argument("--freeze-method", choices=("readonly", "acl"), default="readonly",
                        help="acl: the window with the ACL fence, on a bed of its own with HBase's AccessController "
                             "(bench/bench_acl_freeze.py; --runs, --regions, --tables, --rollback, --prefix, and "
                             "--testbed as its --workdir, left running)")
    args = parser.parse_args(argv)
    if args.freeze_method == "acl":
        from bench.bench_acl_freeze import main as acl_bench

        return acl_bench(["--runs", str(args.runs), "--regions", str(args.regions), "--tables", str(args.tables),
                          "--prefix", "acl" if args.prefix == "cb" else args.prefix]
                         + (["--rollback"] if args.rollback else [])
                         + (["--workdir", args.testbed, "--keep-bed"] if args.testbed else []))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from demo.switching_writer import SwitchingWriter, freeze_figures, lost_writes_on
    from demo.workload import Thrift2
    from hbase_migration.migration.cutover_plan import AbortConditions, WindowOptions
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig
    from realhbase.testbed import RealHBase

    own = args.testbed is None
    bed = RealHBase(Path(args.testbed) if args.testbed else Path(tempfile.mkdtemp(prefix="bench-cutover-")))
    summary: dict = {"regions_per_table": args.regions, "tables": args.tables, "writer_ops_per_s": args.rate}
    writer = None
    try:
        started = time.time()
        bed.up()
        say(f"realhbase up in {time.time() - started:.0f} s ({bed.workdir})")
        eps, clusters = clusters_of(bed)
        summary["hbase_version"] = eps["dc1"]["hbase_version"]
        if args.readonly_cost:
            summary["readonly_cost"] = readonly_cost(clusters, args.prefix)
        tables = ([f"{args.prefix}_{x}" for x in ("a", "b", "c")] if args.tables == 3
                  else [f"{args.prefix}_{i:04d}" for i in range(args.tables)])
        t = time.time()
        create_tables(clusters, tables, args.regions)
        say(f"tables {', '.join(tables)} ({args.regions} regions each) on both clusters in {time.time() - t:.0f} s")
        peers = [f"{args.prefix}p{i}" for i in range(args.runs + 2)]
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(peers[0], PeerConfig(cluster_key=eps["dc2"]["cluster_key"],
                                                table_cfs={t2: [] for t2 in tables}), enabled=True)
        writer = SwitchingWriter(lambda name: Thrift2(eps[name]), ("dc1", "dc2"), tables, threads=4,
                                 ops_per_second=args.rate).start()
        time.sleep(20)  # some data before the first cut-over
        options = WindowOptions(conditions=AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300,
                                                           skew_margin_ms=2_000, recompare_sleep_s=2.0))
        side = ["dc1", "dc2"]
        peer_index = 0
        if args.baseline:
            base, _ = baseline(eps, clusters, tables, writer, side[0], side[1], peers[0], peers[1])
            time.sleep(5)
            base.update(freeze_figures(writer.log, side[0], side[1], since=base["switched_at"] - 600))
            from hbase_migration.migration.cutover import retire_forward_peer, SwitchPlan  # noqa: I001

            retire_forward_peer(clusters[side[0]], SwitchPlan("cutover", "b", "b", "", "", peers[0], peers[1],
                                                              tuple(tables), tuple(tables)))
            summary["baseline"] = base
            say(f"baseline: writer's freeze {base['write_freeze_s']} s, accepted by both "
                f"{base['writes_accepted_by_both']}")
            side.reverse()
            peer_index = 1
            peers.append(f"{args.prefix}p{len(peers)}")
        if args.rollback and args.baseline:
            parser.error("--rollback with --baseline: run them separately")
        runs, rollbacks = [], []
        for k in range(args.runs):
            source_name, target_name = side
            fwd, rev = peers[peer_index], peers[peer_index + 1]
            def measured(what, old, new, run):
                mark = time.time()
                out = run()
                time.sleep(3)
                out.update(freeze_figures(writer.log, old, new, since=mark))
                shares = ", ".join(f"{s} {v:.0%}" for s, v in out["window"]["freeze_shares"].items())
                say(f"{what} {k + 1} {old} -> {new}: writer's freeze {out['write_freeze_s']} s, toolkit's "
                    f"{out['window']['freeze_s']} s ({shares}); accepted by both {out['writes_accepted_by_both']}; "
                    "steps " + ", ".join(f"{st['step']} {st['seconds']:.1f} s" for st in out["window"]["steps"]))
                return out

            out = measured("cut-over", source_name, target_name, lambda: one_cutover(
                eps, clusters, tables, writer, source_name, target_name, fwd, rev, k, options))
            runs.append(out)
            if args.rollback:
                rollbacks.append(measured("rollback", target_name, source_name, lambda: one_rollback(
                    eps, clusters, tables, writer, out, k, options)))
                continue  # the same side and peers again: the rollback re-created the forward peer
            side.reverse()
            peer_index += 1
        time.sleep(5)
        log_ = writer.stop()
        writer = None
        # every acknowledged write on both clusters (the last reverse peer ships the last side's writes back)
        lost = {}
        for name in ("dc1", "dc2"):
            lost[name] = len(lost_writes_on(clusters[name], log_))
        freezes = [r["write_freeze_s"] for r in runs if r["write_freeze_s"] is not None]
        summary.update({
            "runs": runs,
            "write_freezes_s": freezes,
            "toolkit_freezes_s": [r["window"]["freeze_s"] for r in runs],
            "acks": len(log_.acks), "refusals": len(log_.refusals), "retried_errors": len(log_.errors),
            "lost_per_cluster": lost,
            "write_freeze_s": statistics.median(freezes) if freezes else None,
            "bounded_check_s": statistics.median(r["bounded_check"]["seconds"] for r in runs),
            "acknowledged_writes_lost": max(lost.values()),
            "writes_accepted_by_both": sum(r["writes_accepted_by_both"] for r in runs + rollbacks),
        })
        if args.rollback:
            back_freezes = [r["write_freeze_s"] for r in rollbacks if r["write_freeze_s"] is not None]
            summary.update({
                "rollbacks": rollbacks,
                "rollback_write_freezes_s": back_freezes,
                "rollback_toolkit_freezes_s": [r["window"]["freeze_s"] for r in rollbacks],
                "rollback_write_freeze_s": statistics.median(back_freezes) if back_freezes else None,
                "rollback_bounded_check_s": statistics.median(r["bounded_check"]["seconds"] for r in rollbacks),
                "rollback_writes_accepted_by_both": sum(r["writes_accepted_by_both"] for r in rollbacks),
            })
        if not args.keep:
            with peer_admin(clusters[side[0]]) as admin:
                for p in peers:
                    if admin.get_peer(p) is not None:
                        admin.remove_peer(p)
            with peer_admin(clusters[side[1]]) as admin:
                for p in peers:
                    if admin.get_peer(p) is not None:
                        admin.remove_peer(p)
            from hbase_migration.clusters import channels

            for cluster in clusters.values():
                channels.shell(cluster, [f"disable '{t2}'" for t2 in tables] + [f"drop '{t2}'" for t2 in tables],
                               timeout_s=1800)
    finally:
        if writer is not None:
            writer.stop()
        if own:
            bed.down()
    say(json.dumps(summary, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
