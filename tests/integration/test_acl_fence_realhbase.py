"""The cut-over's ACL fence on real HBase (the session's realhbase bed runs HBase's AccessController with simple
authentication and `hbase.superuser=@hm_admins`, realhbase/config.py): it fails closed.

* plan time (`cutover.acl_precheck`, the `check` task's, before the approval): a superuser group (`@hm_admins`,
  read from every server's /conf) is refused by name until it is in `freeze_exempt`; a `user_permission` line
  the parser does not understand (a principal with a space, which HBase takes) is refused, naming it; nothing
  changed either time (no grant, no canary);
* (`full`) the window with a writer of its own as user `app` (WRITE on one table and on a namespace whose tables are
  all cut over): the namespace fenced at namespace level, every change in one batch, the fence proven by the
  canary's refused write on every region server holding the tables' regions; the writer refused by HBase's
  AccessDeniedException, switched, nothing lost, nothing accepted by both; the canary's grants gone afterwards.

Each test has its own tables, namespace and peers. Timings are printed, never asserted.
"""
from __future__ import annotations

import getpass
import json
import time
import uuid

import pytest

from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow]


@pytest.fixture(scope="module")
def bed(realhbase):
    from hbase_migration.data.jobargs import cluster_from_text

    eps = realhbase.endpoints()
    return realhbase, eps, {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}


def permissions(cluster, tables):
    from hbase_migration.clusters import channels
    from hbase_migration.migration import freeze

    return channels.shell(cluster, freeze.acl_read_statements(tables)).stdout


def window(clusters, eps, tables, exempt, *, fwd="nofwd", rev="norev", switch=lambda phase: None, **conditions):
    from hbase_migration.migration.cutover import SwitchPlan
    from hbase_migration.migration.cutover_plan import AbortConditions, WindowOptions
    from hbase_migration.migration.cutover_window import run_window

    plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                      tuple(tables), tuple(tables), freeze_method="acl")
    options = WindowOptions("acl", freeze_exempt=tuple(exempt), conditions=AbortConditions(**conditions))
    return run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=int(time.time() * 1000),
                      verify_started_ms={t: int(time.time() * 1000) - 60_000 for t in tables}, switch=switch)


def test_the_acl_fence_refuses_a_superuser_group_and_a_permission_it_cannot_read(bed):
    from hbase_migration.clusters import channels
    from hbase_migration.migration.cutover import acl_precheck
    from realhbase.config import SUPERUSER_GROUP

    _realhbase, eps, clusters = bed
    table = f"aclr{uuid.uuid4().hex[:5]}"
    channels.shell(clusters["dc1"], [f"create '{table}', 'f'", f"grant 'app', 'RW', '{table}'"], timeout_s=600)
    try:
        before = permissions(clusters["dc1"], [table])
        refused = acl_precheck(clusters["dc1"], [table], [getpass.getuser()])
        print("superuser group:", refused.refusals)
        servers = sorted(s.servername for s in realhbase_servers(clusters["dc1"]))
        assert refused.refusals == (f"{SUPERUSER_GROUP} is in hbase.superuser (/conf of {', '.join(servers)}): a "
                                    "superuser passes every permission check, so an ACL fence cannot stop it; put "
                                    f"{SUPERUSER_GROUP} in freeze_exempt if it writes to none of these tables (a "
                                    "group: none of its members), or freeze with READONLY",)

        channels.shell(clusters["dc1"], [f"grant 'bad user', 'RW', '{table}'"])
        unread = acl_precheck(clusters["dc1"], [table], [getpass.getuser(), SUPERUSER_GROUP])
        print("unreadable line:", unread.refusals)
        assert len(unread.refusals) == 1 and "1 line(s) of user_permission not understood" in unread.refusals[0]
        assert f"'bad user default,{table},,: [Permission: actions=READ,WRITE]'" in unread.refusals[0]
        channels.shell(clusters["dc1"], [f"revoke 'bad user', '{table}'"])
        ok = acl_precheck(clusters["dc1"], [table], [getpass.getuser(), SUPERUSER_GROUP])
        assert ok.refusals == () and [g.describe() for g in ok.fenced] == [f"app RW on {table}"]
        after = [x for x in permissions(clusters["dc1"], [table]).splitlines() if x.startswith(" ")]
        assert after == [x for x in before.splitlines() if x.startswith(" ")], "nothing changed"
    finally:
        channels.shell(clusters["dc1"], [f"disable '{table}'", f"drop '{table}'"], timeout_s=600)


@pytest.mark.full  # the second ACL cut-over of make test's kind: the DAG test's cut-over, rollback, cut-over runs it
@pytest.mark.timeout(1800)
def test_the_acl_fence_is_proven_by_the_canary_and_stops_a_real_writer(bed, tmp_path):
    from demo.shell_writer import ShellWriter
    from demo.switching_writer import freeze_figures, lost_writes
    from hbase_migration.clusters import channels
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig
    from realhbase.config import CLUSTERS, SUPERUSER_GROUP

    realhbase, eps, clusters = bed
    tag = uuid.uuid4().hex[:5]
    ns = f"aclns{tag}"
    tables = [f"acla{tag}", f"{ns}:b"]
    fwd, rev = f"acl{tag}f", f"acl{tag}r"
    create = [f"create_namespace '{ns}'"] + [
        f"create '{t}', {{NAME => 'f', REPLICATION_SCOPE => 1}}, {{NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}}"
        for t in tables] + [f"grant 'app', 'RW', '{tables[0]}'", f"grant 'app', 'RW', '@{ns}'"]
    for cluster in clusters.values():
        channels.shell(cluster, create, timeout_s=900)
    switch_file = tmp_path / "active"
    switch_file.write_text("dc1")
    writer = None
    try:
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(fwd, PeerConfig(cluster_key=eps["dc2"]["cluster_key"], table_cfs={t: [] for t in tables}),
                           enabled=True)
        writer = ShellWriter(realhbase.shell_java_command("dc1", ["-n"]), CLUSTERS, tables, switch_file).start()
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                          tuple(tables), tuple(tables), freeze_method="acl")
        add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
        before = permissions(clusters["dc1"], tables)
        result = window(clusters, eps, tables, [getpass.getuser(), SUPERUSER_GROUP], fwd=fwd, rev=rev,
                        switch=lambda phase: switch_file.write_text("dc2" if phase == "switch" else "dc1"),
                        max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300, skew_margin_ms=2_000)
        details = result["details"]
        print("window:", json.dumps({k: result[k] for k in ("steps", "freeze_s", "freeze_shares")}))
        print("fence:", json.dumps(details["fence"]), "prepared:", json.dumps(details["prepare_fence"]))
        assert details["prepare_fence"]["namespaces_fenced"] == [ns]
        assert sorted(details["prepare_fence"]["fenced"]) == [f"app RW on namespace {ns}", f"app RW on {tables[0]}"]
        proof = details["fence"]["proof"]
        servers = {s.servername for s in realhbase_servers(clusters["dc1"])}
        assert set(proof["servers"]) == servers, (proof, servers)  # 4 regions a table: both region servers
        assert details["fence"]["changes"] == 2 + 3  # app's two grants and the canary's three, in one batch
        wait_for(lambda: any(a.cluster == "dc2" for a in writer.log().acks), 120, "the writer on dc2", interval=1)
        time.sleep(3)
        log = writer.stop()
        writer = None
        figures = freeze_figures(log, "dc1", "dc2", since=result["fence_started"] - 60)
        print("writer:", figures, "acks", len(log.acks), "first refusal", log.refusals[:1])
        assert figures["writes_accepted_by_both"] == 0, figures
        assert any(c == "dc1" and "AccessDeniedException" in text for c, _, text in log.refusals), log.refusals[:3]
        with open_data_path(clusters["dc2"]) as path:
            assert lost_writes(log, lambda t, keys: set(path.get_rows(t, keys).keys())) == []
        after = permissions(clusters["dc1"], tables)
        assert "hbase_migration_canary" not in after, after  # the canary's grants revoked
        assert f" app {ns},,,: [Permission: actions=READ]" in after  # the fence stays after the switch
        assert " app default," + tables[0] + ",,: [Permission: actions=READ,WRITE]" in before
    finally:
        if writer is not None:
            writer.stop()
        for cluster in clusters.values():
            with peer_admin(cluster) as admin:
                for p in (fwd, rev):
                    if admin.get_peer(p) is not None:
                        admin.remove_peer(p, force=True)
            channels.shell(cluster, [f"disable '{t}'" for t in tables] + [f"drop '{t}'" for t in tables]
                           + [f"drop_namespace '{ns}'"], timeout_s=900)


def realhbase_servers(cluster):
    from hbase_migration.clusters import zk

    with zk.connect(cluster, timeout=30) as client:
        return zk.live_region_servers(client, cluster.znode_parent)
