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
accepted after the new side's first, and the fence's own cost. Then the fence is lifted (WRITE given back) and
the clients switched back by hand for the next run (no reverse cut-over: the figure is the freeze). At the end
every acknowledged write is looked for on dc2 (`acknowledged_writes_lost`): those dc1 acknowledged reach it
through the forward peer, ENABLED throughout.

Printed, never asserted; the last line is one JSON object.

    .venv/bin/python bench/bench_acl_freeze.py [--runs 3] [--regions 50] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import getpass
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ACL_PROPERTIES = [
    ("hbase.security.authorization", "true", "bench_acl_freeze: HBase's permission checks on"),
    ("hbase.coprocessor.master.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
    ("hbase.coprocessor.region.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
    ("hbase.coprocessor.regionserver.classes", "org.apache.hadoop.hbase.security.access.AccessController", ""),
]

def say(*args) -> None:
    print(*args, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--regions", type=int, default=50)
    parser.add_argument("--workdir")
    args = parser.parse_args(argv)

    import realhbase.config as config
    from realhbase.testbed import RealHBase

    plain = config.hbase_site
    config.hbase_site = lambda *a: plain(*a) + ACL_PROPERTIES  # written by `up` into each cluster's hbase-site.xml

    from demo.shell_writer import ShellWriter
    from demo.switching_writer import lost_writes
    from hbase_migration.clusters import channels
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.migration import freeze
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer
    from hbase_migration.migration.cutover_plan import AbortConditions, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-acl-"))
    bed = RealHBase(workdir)
    summary: dict = {"regions_per_table": args.regions, "tables": 3}
    writer = None
    try:
        t0 = time.time()
        bed.up()
        say(f"realhbase with AccessController up in {time.time() - t0:.0f} s ({workdir})")
        eps = bed.endpoints()
        clusters = {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}
        tables = ["acl_a", "acl_b", "acl_c"]
        for cluster in clusters.values():
            channels.shell(cluster, [f"create '{t}', {{NAME => 'f', REPLICATION_SCOPE => 1}}, {{NUMREGIONS => "
                                     f"{args.regions}, SPLITALGO => 'HexStringSplit'}}" for t in tables]
                           + [f"grant 'app', 'RW', '{t}'" for t in tables], timeout_s=1800)
        with channels.shell_session(clusters["dc1"]) as s:
            read = [freeze.parse_user_permission(s.run([st]).stdout) for st in freeze.acl_read_statements(tables)]
        summary["user_permission_parsed"] = [[g.__dict__ for g in grants] for grants in read]
        say("user_permission as parsed:", summary["user_permission_parsed"])
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer("aclf", PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                           enabled=True)
        switch_file = workdir / "active"
        switch_file.write_text("dc1")
        # the clients: demo/shell_writer.py's loop in a shell JVM, as user `app` (no superuser rights)
        writer = ShellWriter(bed.shell_java_command("dc1", ["-n"]), config.CLUSTERS, tables, switch_file,
                             user="app").start()
        lines = writer.lines
        say("writer (user app) writing:", next((x for x in lines if x.startswith("ACK")), lines[-5:]))
        # The bed's HBase runs as this process's user, its superuser: real HBase grants it RWXCA globally and on
        # every table it creates, a superuser bypasses every permission check anyway, and the replication sink
        # writes as it. The operator exempts it, as docs/cutover.md says.
        superuser = getpass.getuser()
        conditions = AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300, skew_margin_ms=2_000)
        options = WindowOptions("acl", freeze_exempt=(superuser,), conditions=conditions)
        runs = []
        for k in range(args.runs):
            rev = f"aclr{k}"
            plan = SwitchPlan("cutover", f"acl{k}", f"acl{k}", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"],
                              "aclf", rev, tuple(tables), tuple(tables), freeze_method="acl")
            verified = int(time.time() * 1000) - 120_000
            kept = int(time.time() * 1000)
            add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
            mark = time.time()
            result = run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=kept,
                                verify_started_ms={t: verified for t in tables},
                                switch=lambda phase: switch_file.write_text("dc2" if phase == "switch" else "dc1"))
            time.sleep(3)
            acks = [x.split() for x in lines if x.startswith("ACK ")]
            acks = [(a[1], int(a[2]) / 1000) for a in acks if int(a[2]) / 1000 >= mark]
            first_new = min(t for c, t in acks if c == "dc2")
            last_old = max(t for c, t in acks if c == "dc1" and t <= first_new)
            both = sum(1 for c, t in acks if c == "dc1" and t > first_new)
            refusals = [x for x in lines if x.startswith("REFUSED dc1") and int(x.split()[2]) / 1000 >= mark]
            out = {"write_freeze_s": round(first_new - last_old, 3), "writes_accepted_by_both": both,
                   "toolkit_freeze_s": result["freeze_s"], "freeze_shares": result["freeze_shares"],
                   "fence_s": result["details"]["fence"]["seconds"], "steps": result["steps"],
                   "refusal": refusals[0] if refusals else None, "fenced": result.get("acl_fenced")}
            runs.append(out)
            say(f"ACL cut-over {k + 1}: writer's freeze {out['write_freeze_s']} s, toolkit's {out['toolkit_freeze_s']} "
                f"s (fence {out['fence_s']} s); accepted by both {both}; first refusal: {out['refusal']}")
            # back for the next run: WRITE given back on dc1, the clients to dc1, the reverse peer removed
            channels.shell(clusters["dc1"], freeze.jruby_admin_statements() + result["unfence_statements"])
            switch_file.write_text("dc1")
            with peer_admin(clusters["dc2"]) as admin:
                admin.remove_peer(rev)
            time.sleep(5)
        acked = writer.stop()
        writer = None
        # every acknowledged write looked for on dc2: dc1's acks shipped by the forward peer (ENABLED throughout),
        # dc2's written there; waited for until replication has shipped the last of dc1's
        deadline = time.time() + 180
        while True:
            with open_data_path(clusters["dc2"]) as path:
                missing = lost_writes(acked, lambda t, keys: set(path.get_rows(t, keys).keys()))
            if not missing or time.time() > deadline:
                break
            time.sleep(5)
        freezes = [r["write_freeze_s"] for r in runs]
        summary.update(runs=runs, write_freezes_s=freezes, write_freeze_s=statistics.median(freezes),
                       acks=len(acked.acks), acknowledged_writes_lost=len(missing),
                       lost_examples=[f"{t}/{k.decode()}" for t, k in missing[:5]],
                       writes_accepted_by_both=sum(r["writes_accepted_by_both"] for r in runs),
                       fence_s=[r["fence_s"] for r in runs])
    finally:
        if writer is not None:
            writer.stop(timeout_s=30)
        survivors = bed.down()
        summary["survivors"] = survivors
    say(json.dumps(summary, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
