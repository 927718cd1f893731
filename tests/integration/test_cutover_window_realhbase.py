"""The cut-over's window on real HBase (the session's realhbase test bed, dc1 -> dc2), with clients that switch
clusters when told (demo/switching_writer.py) writing all along:

* an abort after the fence: a source write the forward peer cannot carry (a family with REPLICATION_SCOPE 0,
  written once the live pass is done) is found by the bounded check in the freeze; the fence is lifted, the
  clients stay on the source and write again, the reverse peer stays DISABLED;
* the cut-over itself: READONLY on every table at once, WAL roll and drain, bounded check, the writer switched;
  every acknowledged write on the target and, through the reverse peer, back on the source; none accepted by the
  source after the target's first; the source writable again;
* what real HBase 2.6.4 says about the other options: an ACL freeze is refused with the shell's own error (no
  AccessController on the test bed; the fence's Admin statements are still run against HBase 2.6.4's own
  UserPermission and Permission classes, through a stand-in admin), and synchronous replication is refused from
  the region servers' versions and the 2.4 shell's missing command.

Each test has its own tables and peer ids. Timings are reported, never asserted.
"""
from __future__ import annotations

import json
import time
import uuid

import pytest

from demo.switching_writer import SwitchingWriter, freeze_figures, lost_writes
from tests.polling import wait_for

# test-full: make test's cut-over on real HBase is the DAG end to end (tests/dags/test_cutover_end_to_end_realhbase.py),
# whose window task runs the same steps; these are its abort, ACL and early-write cases.
pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow, pytest.mark.full]


@pytest.fixture(scope="module")
def bed(realhbase):
    from hbase_migration.data.jobargs import cluster_from_text

    eps = realhbase.endpoints()
    return eps, {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}


def create_tables(clusters, tables, regions=4):
    from hbase_migration.clusters import channels

    for cluster in clusters.values():
        # one region: no split options (the shell wants NUMREGIONS > 1 with a SPLITALGO)
        split = f", {{NUMREGIONS => {regions}, SPLITALGO => 'HexStringSplit'}}" if regions > 1 else ""
        channels.shell(cluster, [f"create '{t}', {{NAME => 'f', REPLICATION_SCOPE => 1}}, {{NAME => 'g'}}{split}"
                                 for t in tables], timeout_s=900)


def drop(clusters, tables, peers):
    from hbase_migration.clusters import channels
    from hbase_migration.replication import peer_admin

    for cluster in clusters.values():
        with peer_admin(cluster) as admin:
            for p in peers:
                if admin.get_peer(p) is not None:
                    admin.remove_peer(p, force=True)
        channels.shell(cluster, [f"disable '{t}'" for t in tables] + [f"drop '{t}'" for t in tables], timeout_s=900)


def present(cluster, log):
    from hbase_migration.data.datapath import open_data_path

    with open_data_path(cluster) as path:
        return lost_writes(log, lambda t, keys: set(path.get_rows(t, keys).keys()))


def test_window_aborts_cleanly_then_cuts_over_losing_nothing(bed):
    from demo.workload import Thrift2
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.migration.bounded_check import bounded_check
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer
    from hbase_migration.migration.cutover_plan import AbortConditions, CutoverAborted, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.migration.freeze import readonly_states
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig

    eps, clusters = bed
    tag = uuid.uuid4().hex[:5]
    tables = [f"cw{tag}_{x}" for x in "abc"]
    fwd, rev = f"cw{tag}f", f"cw{tag}r"
    create_tables(clusters, tables)
    writer = None
    try:
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(fwd, PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                           enabled=True)
        writer = SwitchingWriter(lambda n: Thrift2(eps[n]), ("dc1", "dc2"), tables, threads=4,
                                 ops_per_second=20).start()
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                          tuple(tables), tuple(tables))
        verified = int(time.time() * 1000)
        full = bounded_check(clusters["dc1"], clusters["dc2"], tables, 0, kept_since_ms=None, live=True)
        assert full["ok"], full
        kept_since = int(time.time() * 1000)
        assert add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)["outcome"] == "created"
        with peer_admin(clusters["dc2"]) as admin:
            assert admin.get_peer(rev).enabled is False
        options = WindowOptions(conditions=AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300,
                                                           skew_margin_ms=2_000, recompare_sleep_s=2.0))
        moves = []

        def switch(phase):
            moves.append(phase)
            writer.switch_to("dc2" if phase == "switch" else "dc1")

        # 1. An abort in the freeze: a source write nothing replicates (family g, scope 0) after the live pass.
        unreplicated = b"zz-not-replicated-" + tag.encode()

        def inject(name, status, _detail):
            if name == "live_pass" and status == "success":
                Thrift2(eps["dc1"]).put(tables[0], [(unreplicated, {b"g:x": b"source only"}, None)])

        with pytest.raises(CutoverAborted) as aborted:
            run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=kept_since,
                       verify_started_ms={t: verified for t in tables}, switch=switch, on_step=inject)
        state = aborted.value.state
        assert aborted.value.condition == "verification", aborted.value
        assert "1 source version(s) written since the last verification are not on the target" in str(aborted.value)
        assert state["fence"] == "fence lifted" and state["changed"] is True, state
        assert moves == [], "the switch never ran"
        assert readonly_states(clusters["dc1"], tables) == {t: False for t in tables}
        with peer_admin(clusters["dc2"]) as admin:
            assert admin.get_peer(rev).enabled is False  # still keeping any early target write
        after_abort = time.time()
        wait_for(lambda: any(a.cluster == "dc1" and a.accepted > after_abort for a in writer.log.acks), 120,
                 "the clients writing to the source again after the abort", interval=1)
        with open_data_path(clusters["dc1"]) as path:
            path.delete(tables[0], unreplicated, [(b"g:x", 2**62)])

        # 2. The cut-over.
        result = run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=kept_since,
                            verify_started_ms={t: verified for t in tables}, switch=switch)
        assert moves == ["switch"]
        fenced = [s["step"] for s in result["steps"]]
        assert fenced[:4] == ["sessions", "prepare_fence", "lag_gate", "live_pass"], fenced
        assert fenced[4:9] == ["fence", "wal_roll", "drain", "bounded_check", "switch"], fenced
        assert fenced[9:] == ["unfreeze_source", "enable_reverse_peer", "reverse_lag_gate"], fenced
        assert result["bounded_check"]["ok"] and result["details"]["drain"]["drained"], result
        print("window:", json.dumps({k: result[k] for k in ("steps", "freeze_s", "freeze_shares")}))
        switched = result["switched_at"]
        wait_for(lambda: any(a.cluster == "dc2" for a in writer.log.acks), 120, "the clients on the target",
                 interval=1)
        time.sleep(5)
        log = writer.stop()
        writer = None
        figures = freeze_figures(log, "dc1", "dc2", since=switched - 600)
        print("writer:", figures, "refusals", len(log.refusals), "acks", len(log.acks))
        assert figures["writes_accepted_by_both"] == 0, figures
        assert any("region is read only" in r[2] for r in log.refusals), log.refusals[:3]
        assert readonly_states(clusters["dc1"], tables) == {t: False for t in tables}
        with peer_admin(clusters["dc2"]) as admin:
            assert admin.get_peer(rev).enabled is True
        assert present(clusters["dc2"], log) == []
        wait_for(lambda: present(clusters["dc1"], log) == [], 240,
                 "every acknowledged write back on the source through the reverse peer", interval=3)
    finally:
        if writer is not None:
            writer.stop()
        drop(clusters, tables, [fwd, rev])


def test_acl_freeze_and_synchronous_replication_as_real_hbase_2_6_answers(bed):
    """The shared bed has no AccessController (the secured bed has: tests/integration/test_acl_fence_realhbase.py):
    the ACL freeze is refused from its /conf before anything changes. The fence statements themselves are evaluated
    by HBase 2.6.4's JRuby and classes against a stand-in async Admin that prints what it is given. Synchronous
    replication: refused."""
    from hbase_migration.clusters import channels
    from hbase_migration.migration import freeze
    from hbase_migration.migration.cutover import SwitchPlan
    from hbase_migration.migration.cutover_plan import CutoverAborted, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.replication.sync_replication import check_support

    eps, clusters = bed
    tag = uuid.uuid4().hex[:5]
    tables = [f"acl{tag}"]
    create_tables(clusters, tables, regions=1)
    try:
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], f"acl{tag}f",
                          f"acl{tag}r", tuple(tables), tuple(tables), freeze_method="acl")
        with pytest.raises(CutoverAborted) as aborted:
            run_window(clusters["dc1"], clusters["dc2"], plan, WindowOptions("acl"), kept_since_ms=None,
                       verify_started_ms={tables[0]: int(time.time() * 1000)}, switch=lambda phase: None)
        assert aborted.value.condition == "acl" and aborted.value.state == {"fence": "not applied", "changed": False}
        assert "an ACL freeze needs HBase's AccessController" in str(aborted.value)
        print("ACL freeze on the test bed:", aborted.value)

        grants = [freeze.Grant("app", "default", tables[0], actions="RW"),
                  freeze.Grant("@etl", "default", tables[0], "f", "q", actions="W")]
        fence = freeze.acl_fence_plan(tables, grants)
        done = "java.util.concurrent.CompletableFuture.completedFuture(nil)"  # what the async Admin returns
        # hm_aadmin first: the helpers' lambdas see it only if it is a local variable when they are parsed
        stand_in = ['hm_aadmin = Object.new',
                    'def hm_aadmin.grant(up, merge); puts "GRANT " + up.toString + " merge=" + merge.to_s; '
                    f'{done}; end',
                    f'def hm_aadmin.revoke(up); puts "REVOKE " + up.toString; {done}; end', *freeze.ACL_HELPERS]
        with channels.shell_session(clusters["dc1"]) as session:
            out = session.run(stand_in + list(fence.fence) + list(fence.unfence)).stdout
        said = [line for line in out.splitlines() if line.startswith(("GRANT ", "REVOKE "))]
        print("\n".join(said))
        assert len(said) == 4, out
        assert said[0].startswith("GRANT ") and "user=app" in said[0] and f"{tables[0]}" in said[0]
        assert "actions=READ" in said[0] and "WRITE" not in said[0] and said[0].endswith("merge=false")
        assert said[1].startswith("REVOKE ") and "user=@etl" in said[1] and "actions=WRITE" in said[1]
        assert "actions=READ,WRITE" in said[2] and said[2].endswith("merge=false")

        support = check_support(clusters["dc1"], clusters["dc2"], ask_shells=True)
        assert not support.supported
        assert any("run HBase < 3.0" in r and "2.6.4" in r for r in support.reasons), support.reasons
        assert any("has no transit_peer_sync_replication_state" in r for r in support.reasons), support.reasons
    finally:
        drop(clusters, tables, [])


@pytest.mark.full
def test_a_client_writing_to_the_target_too_early_loses_nothing_and_the_rollback_stays_exact(bed):
    """A misconfigured client writes to the target after the reverse peer exists (DISABLED) and before the switch:
    the bounded check counts its versions as early writes kept by the reverse peer (not a difference), the
    cut-over goes on, the reverse peer ships them to the source at the switch; a rollback (the target frozen, the
    reverse peer drained) then finds both sides equal, every version."""
    from demo.workload import Thrift2
    from hbase_migration.clusters import zk
    from hbase_migration.migration.bounded_check import bounded_check
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer
    from hbase_migration.migration.cutover_plan import AbortConditions, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.migration.freeze import roll_wals, set_readonly
    from hbase_migration.replication import peer_admin, wal_drain
    from hbase_migration.replication.model import PeerConfig

    eps, clusters = bed
    tag = uuid.uuid4().hex[:5]
    tables = [f"ew{tag}_{x}" for x in "ab"]
    fwd, rev = f"ew{tag}f", f"ew{tag}r"
    create_tables(clusters, tables)
    writer = None
    try:
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(fwd, PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                           enabled=True)
        writer = SwitchingWriter(lambda n: Thrift2(eps[n]), ("dc1", "dc2"), tables, threads=2,
                                 ops_per_second=10).start()
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                          tuple(tables), tuple(tables))
        verified = int(time.time() * 1000)
        assert bounded_check(clusters["dc1"], clusters["dc2"], tables, 0, kept_since_ms=None, live=True)["ok"]
        kept_since = int(time.time() * 1000)
        add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
        time.sleep(3)  # past the skew margin (2 s): the early writes are stamped after the reverse peer existed
        early = [b"early-%s-%03d" % (tag.encode(), i) for i in range(20)]
        Thrift2(eps["dc2"]).put(tables[0], [(k, {b"f:v": b"written on the target too early"}, None) for k in early])
        options = WindowOptions(conditions=AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300,
                                                           skew_margin_ms=2_000, recompare_sleep_s=2.0))
        result = run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=kept_since,
                            verify_started_ms={t: verified for t in tables},
                            switch=lambda phase: writer.switch_to("dc2" if phase == "switch" else "dc1"))
        assert result["live_pass"]["counts"]["early_write"] == 20, result["live_pass"]
        assert result["bounded_check"]["ok"] and result["bounded_check"]["counts"]["early_write"] >= 20
        wait_for(lambda: len(Thrift2(eps["dc1"]).versions(tables[0], early[-1])) > 0, 240,
                 "the early target writes on the source through the reverse peer", interval=2)
        time.sleep(3)
        log = writer.stop()
        writer = None
        # The rollback's checks: the target frozen, the reverse peer drained (WAL roll, then its queues let go of
        # the WALs from before it), every version of both sides equal.
        set_readonly(clusters["dc2"], tables, True)
        with zk.connect(clusters["dc2"], timeout=30) as client:
            marked = wal_drain.mark(wal_drain.read_queues(client, clusters["dc2"].znode_parent, rev))
            roll_wals(clusters["dc2"], client)
            drained = wal_drain.wait_drained(clusters["dc2"], client, rev, marked, deadline=time.monotonic() + 300)
        assert drained.drained, drained
        equal = bounded_check(clusters["dc2"], clusters["dc1"], tables, 0, kept_since_ms=None, live=False)
        assert equal["ok"] and equal["rows"] == 0, equal
        assert present(clusters["dc1"], log) == [] and present(clusters["dc2"], log) == []
    finally:
        if writer is not None:
            writer.stop()
        set_readonly(clusters["dc2"], tables, False)
        drop(clusters, tables, [fwd, rev])
