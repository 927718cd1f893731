"""The cut-over's ACL fence on real HBase 2.6.4 with the AccessController: the session's SECURED bed
(`realhbase_secure`: Kerberos, `hbase.superuser=hbase,hbase-migration`, realhbase/secure.py); the shared plain bed
has no AccessController. It fails closed.

* plan time (`cutover.acl_precheck`, what the `check` task runs before the approval): HBase 2.6's info servers
  show `hbase.superuser` as `<masked>` on /conf, so the superusers are unknown and the ACL fence is refused until
  the run spec attests them (`superusers`); each attested superuser is then refused by name until it is in
  `freeze_exempt`; a `user_permission` line the parser does not understand (a principal with a space, which HBase
  takes) is refused, naming it; nothing changed each time (no grant, no canary);
* (`full`) the window with a writer of its own as Kerberos principal `app@DC1.TEST` (WRITE on one table and on a
  namespace whose tables are all cut over): the namespace fenced at namespace level, every change in one batch,
  the fence proven by the canary's (`hbase_migration_canary@DC1.TEST`, logged in from its keytab) refused write on
  every region server holding the tables' regions; the writer refused by HBase's AccessDeniedException, switched,
  nothing lost, nothing accepted by both; the canary's grants gone afterwards.
* (`full`) the rollback of an ACL cut-over: the source's principals given their WRITE back inside the freeze,
  before the switch; a rollback whose switch command fails takes it away again before anything else (fails
  closed: the source fenced as before, the target's fence lifted, the clients sent back to the target).

Each test has its own tables, namespace and peers; principals are added to the bed's KDC (and stay: nothing else
uses them). Timings are printed, never asserted.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SUPERUSERS = ("hbase", "hbase-migration")  # realhbase/secure.py's hbase.superuser
CANARY = "hbase_migration_canary@DC1.TEST"


@pytest.fixture(scope="module")
def bed(realhbase_secure):
    from hbase_migration.clusters import kerberos
    from hbase_migration.data.jobargs import cluster_from_text

    proc = subprocess.run([sys.executable, "-m", "realhbase", "endpoints", "--json", "--workdir",
                           str(realhbase_secure.workdir)], capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    eps = json.loads(proc.stdout)["clusters"]
    kerberos.forget_krb5_conf()
    return realhbase_secure, eps, {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}


def keytab_of(bed, principal: str) -> str:
    """A keytab of `principal` (created in the bed's KDC when new) under the bed's workdir."""
    from realhbase import secure

    stack = secure.stack(bed.workdir)
    return str(stack.kdc.keytab([principal], stack.keytab_path(principal)))


@pytest.fixture
def one_shell():
    """The test's shell statements (and the toolkit's it calls) in one `hbase shell` per cluster, not a JVM each."""
    from hbase_migration.clusters import channels

    with channels.one_shell_per_cluster():
        yield


def permissions(cluster, tables):
    from hbase_migration.clusters import channels
    from hbase_migration.migration import freeze

    return channels.shell(cluster, freeze.acl_read_statements(tables)).stdout


def test_the_acl_fence_refuses_unknown_superusers_and_a_permission_it_cannot_read(bed, one_shell):
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.hbase_conf import SUPERUSER, read_server_confs
    from hbase_migration.migration.cutover import acl_precheck

    _bed, _eps, clusters = bed
    dc1 = clusters["dc1"]
    confs = read_server_confs(dc1)
    print("hbase.superuser on /conf:", {s: p.get(SUPERUSER) for s, p in confs.items()})
    table = f"aclr{uuid.uuid4().hex[:5]}"
    channels.shell(dc1, [f"create '{table}', 'f'", f"grant 'app', 'RW', '{table}'"], timeout_s=600)
    try:
        before = permissions(dc1, [table])
        unknown = acl_precheck(dc1, [table], list(SUPERUSERS))
        print("superusers unknown:", unknown.refusals)
        assert len(unknown.refusals) == 1 and unknown.refusals[0].startswith(
            f"hbase.superuser is unreadable on {len(confs)} server(s) (")
        assert "masked (<masked>)" in unknown.refusals[0] and "the run spec's superusers" in unknown.refusals[0]

        attested = acl_precheck(dc1, [table], ["hbase"], superusers=list(SUPERUSERS))
        print("attested, not exempt:", attested.refusals)
        assert attested.refusals == (
            "hbase-migration is in hbase.superuser (the run spec's superusers): a superuser passes every permission "
            "check, so an ACL fence cannot stop it; put hbase-migration in freeze_exempt if it writes to none of these "
            "tables (a group: none of its members), or freeze with READONLY",
            # the bed grants the toolkit's principal every action globally too (realhbase/secure.py)
            "hbase-migration holds WRITE globally (RWXCA): the fence would stop every table of the cluster; revoke it "
            "globally for the cut-over, exempt it (freeze_exempt), or freeze with READONLY")

        channels.shell(dc1, [f"grant 'bad user', 'RW', '{table}'"])
        unread = acl_precheck(dc1, [table], list(SUPERUSERS), superusers=list(SUPERUSERS))
        print("unreadable line:", unread.refusals)
        assert len(unread.refusals) == 1 and "1 line(s) of user_permission not understood" in unread.refusals[0]
        assert f"'bad user default,{table},,: [Permission: actions=READ,WRITE]'" in unread.refusals[0]
        channels.shell(dc1, [f"revoke 'bad user', '{table}'"])
        ok = acl_precheck(dc1, [table], list(SUPERUSERS), superusers=list(SUPERUSERS))
        assert ok.refusals == () and [g.describe() for g in ok.fenced] == [f"app RW on {table}"]
        after = [x for x in permissions(dc1, [table]).splitlines() if x.startswith(" ")]
        assert after == [x for x in before.splitlines() if x.startswith(" ")], "nothing changed"
    finally:
        channels.shell(dc1, [f"disable '{table}'", f"drop '{table}'"], timeout_s=600)


def window(clusters, eps, tables, options, *, fwd, rev, switch):
    from hbase_migration.migration.cutover import SwitchPlan
    from hbase_migration.migration.cutover_window import run_window

    plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                      tuple(tables), tuple(tables), freeze_method="acl")
    return run_window(clusters["dc1"], clusters["dc2"], plan, options, kept_since_ms=int(time.time() * 1000),
                      verify_started_ms={t: int(time.time() * 1000) - 60_000 for t in tables}, switch=switch)


def app_writer(secure_bed, tables, switch_file):
    """demo/shell_writer.py's loop in a shell JVM as `app@DC1.TEST` (a ticket cache of its own, dc1's krb5.conf:
    dc2's servers across the realms' trust)."""
    import os

    from demo.shell_writer import ShellWriter
    from realhbase.config import CLUSTERS

    principal = "app@DC1.TEST"
    cache = secure_bed.workdir / "app-krb5cc"
    krb5 = str(secure_bed.cluster_dir("dc1") / "conf" / "krb5.conf")
    env = {"KRB5CCNAME": f"FILE:{cache}", "KRB5_CONFIG": krb5}
    subprocess.run(["kinit", "-kt", keytab_of(secure_bed, principal), principal], env={**os.environ, **env},
                   check=True, capture_output=True, timeout=60)
    from realhbase import secure

    command, shell_env = secure_bed.shell_java_command("dc1", ["-n"])
    dc2 = {f"hbase.{role}.kerberos.principal": secure.hbase_principal("dc2") for role in ("master", "regionserver")}
    return ShellWriter((command, {**shell_env, **env}), CLUSTERS, tables, switch_file, confs={"dc2": dc2})


@pytest.mark.full  # the ACL window with a writer: a second cut-over of make test's kind (the DAG test runs one)
@pytest.mark.timeout(1800)
def test_the_acl_fence_is_proven_by_the_canary_and_stops_a_real_writer(bed, tmp_path):
    from demo.switching_writer import freeze_figures, lost_writes
    from hbase_migration.clusters import channels
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer
    from hbase_migration.migration.cutover_plan import AbortConditions, WindowOptions
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin

    secure_bed, eps, clusters = bed
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
            admin.add_peer(fwd, migration_peer_config(clusters["dc2"], tables, source=clusters["dc1"]), enabled=True)
        writer = app_writer(secure_bed, tables, switch_file).start()
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                          tuple(tables), tuple(tables), freeze_method="acl")
        add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
        before = permissions(clusters["dc1"], tables)
        options = WindowOptions("acl", freeze_exempt=SUPERUSERS, superusers=SUPERUSERS, canary=CANARY,
                                canary_keytab=keytab_of(secure_bed, CANARY),
                                conditions=AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300,
                                                           skew_margin_ms=2_000))
        result = window(clusters, eps, tables, options, fwd=fwd, rev=rev,
                        switch=lambda phase: switch_file.write_text("dc2" if phase == "switch" else "dc1"))
        details = result["details"]
        print("window:", json.dumps({k: result[k] for k in ("steps", "freeze_s", "freeze_shares")}))
        print("fence:", json.dumps(details["fence"]), "prepared:", json.dumps(details["prepare_fence"]))
        assert details["prepare_fence"]["namespaces_fenced"] == [ns]
        assert sorted(details["prepare_fence"]["fenced"]) == sorted([f"app RW on namespace {ns}",
                                                                     f"app RW on {tables[0]}"])
        proof = details["fence"]["proof"]
        servers = {s.servername for s in region_servers(clusters["dc1"])}
        assert set(proof["servers"]) == servers, (proof, servers)  # 4 regions a table: both region servers
        assert details["fence"]["changes"] == 2 + 3  # app's two grants and the canary's three, in one batch
        wait_for(lambda: any(a.cluster == "dc2" for a in writer.log().acks), 180, "the writer on dc2", interval=1)
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


@pytest.mark.full  # a second window of make test's kind, on the secured bed
@pytest.mark.timeout(1800)
def test_an_acl_rollback_gives_write_back_before_its_switch_and_takes_it_away_again_if_it_aborts(bed):
    from hbase_migration.clusters import channels
    from hbase_migration.migration.cutover import (
        SwitchPlan,
        add_reverse_peer,
        retire_forward_peer,
        rollback_window_plan,
    )
    from hbase_migration.migration.cutover_plan import ROLLBACK_ROLES, AbortConditions, CutoverAborted, WindowOptions
    from hbase_migration.migration.cutover_window import run_window
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin

    secure_bed, eps, clusters = bed
    tag = uuid.uuid4().hex[:5]
    tables = [f"aclrb{tag}"]
    fwd, rev = f"rb{tag}f", f"rb{tag}r"
    create = [f"create '{t}', {{NAME => 'f', REPLICATION_SCOPE => 1}}" for t in tables] + [
        f"grant 'app', 'RW', '{t}'" for t in tables]
    for cluster in clusters.values():
        channels.shell(cluster, create, timeout_s=900)
    app = f" app default,{tables[0]},,: [Permission: actions="
    try:
        with peer_admin(clusters["dc1"]) as admin:
            admin.add_peer(fwd, migration_peer_config(clusters["dc2"], tables, source=clusters["dc1"]), enabled=True)
        options = WindowOptions("acl", freeze_exempt=SUPERUSERS, superusers=SUPERUSERS, canary=CANARY,
                                canary_keytab=keytab_of(secure_bed, CANARY),
                                conditions=AbortConditions(max_lag_ms=30_000, lag_wait_s=300, max_freeze_s=300,
                                                           skew_margin_ms=2_000))
        plan = SwitchPlan("cutover", "t", "t", eps["dc1"]["cluster_key"], eps["dc2"]["cluster_key"], fwd, rev,
                          tuple(tables), tuple(tables), freeze_method="acl")
        add_reverse_peer(clusters["dc2"], clusters["dc1"], plan, enabled=False)
        cut = window(clusters, eps, tables, options, fwd=fwd, rev=rev, switch=lambda phase: None)
        give, take = tuple(cut["unfence_statements"]), tuple(cut["refence_statements"])
        assert give and take and give != take
        assert app + "READ]" in permissions(clusters["dc1"], tables)  # the cut-over's fence stays on the source

        # the rollback as hbase_rollback runs it: the forward peer retired, re-created DISABLED
        retire_forward_peer(clusters["dc1"], plan)
        mirrored = rollback_window_plan(plan)
        add_reverse_peer(clusters["dc1"], clusters["dc2"], mirrored, enabled=False)
        switched = []

        def rollback(switch):
            return run_window(clusters["dc2"], clusters["dc1"], mirrored, options, roles=ROLLBACK_ROLES,
                              kept_since_ms=int(time.time() * 1000), unfence_joined=give, refence_joined=take,
                              verify_started_ms={t: int(time.time() * 1000) - 60_000 for t in tables}, switch=switch)

        def refused(phase):
            switched.append(phase)
            if phase == "switch":
                raise RuntimeError("the switch command's service is down")

        with pytest.raises(CutoverAborted) as aborted:
            rollback(refused)
        state = aborted.value.state
        print("aborted rollback:", json.dumps(state, default=str)[:2000])
        assert aborted.value.condition == "switch" and switched == ["switch", "abort"]
        assert state["joined_fence"] == "the source's WRITE taken away again, as before the window"
        steps = [s["step"] for s in state["timeline"]["steps"]]
        assert steps.index("lift_joined_fence") < steps.index("switch"), steps
        assert app + "READ]" in permissions(clusters["dc1"], tables)  # fenced again: fails closed
        assert app + "READ,WRITE]" in permissions(clusters["dc2"], tables)  # the target's fence lifted

        back = rollback(lambda phase: None)
        steps = [s["step"] for s in back["steps"]]
        print("rollback:", json.dumps({k: back[k] for k in ("steps", "freeze_s", "freeze_shares")}))
        assert steps.index("bounded_check") < steps.index("lift_joined_fence") < steps.index("switch"), steps
        assert "lift_joined_fence" in back["freeze_shares"]
        assert app + "READ,WRITE]" in permissions(clusters["dc1"], tables)  # given back
        assert app + "READ]" in permissions(clusters["dc2"], tables)  # the rollback's fence stays on the target
    finally:
        for cluster in clusters.values():
            with peer_admin(cluster) as admin:
                for p in (fwd, rev):
                    if admin.get_peer(p) is not None:
                        admin.remove_peer(p, force=True)
            channels.shell(cluster, [f"disable '{t}'" for t in tables] + [f"drop '{t}'" for t in tables],
                           timeout_s=900)


def region_servers(cluster):
    from hbase_migration.clusters import zk

    with zk.connect(cluster, timeout=30) as client:
        return zk.live_region_servers(client, cluster.znode_parent)


def test_metadata_lists_the_grants_and_quotas_the_target_lacks_and_applies_them(bed, monkeypatch, capsys,
                                                                                 one_shell):
    """Issue 39 (Build 3): a writer's grants on a table and one of its families, the table's space quota and the
    writer's write throttle on it exist on dc1 only (the secured bed runs the AccessController and
    hbase.quota.enabled, realhbase/secure.py); `python -m hbase_migration metadata` lists each (exit 1), `--apply`
    grants and sets them on dc2 in one session, and then it finds no difference (exit 0). Principals map by short
    name (the bed's superusers are listed globally on both); the bed has no RS groups (read from /conf: not asked)."""
    from hbase_migration.__main__ import main
    from hbase_migration.clusters import channels

    _bed, eps, clusters = bed
    table = f"meta{uuid.uuid4().hex[:5]}"
    for name in ("dc1", "dc2"):
        monkeypatch.setenv(f"AIRFLOW_CONN_META_{name.upper()}", json.dumps(eps[name]["connection"]))
    channels.shell(clusters["dc1"], [f"create '{table}', 'f', 'g'", f"grant 'app', 'RW', '{table}'",
                                     f"grant 'app', 'R', '{table}', 'f'",
                                     f"set_quota TYPE => SPACE, TABLE => '{table}', LIMIT => '1G', "
                                     "POLICY => NO_INSERTS",
                                     f"set_quota TYPE => THROTTLE, USER => 'app', TABLE => '{table}', THROTTLE_TYPE => "
                                     "WRITE, LIMIT => '10M/sec'"], timeout_s=600)
    channels.shell(clusters["dc2"], [f"create '{table}', 'f', 'g'"], timeout_s=600)
    argv = ["metadata", "--source", "meta_dc1", "--target", "meta_dc2", "--tables", table, "--json"]
    try:
        assert main(argv) == 1
        found = json.loads(capsys.readouterr().out)
        assert [(d["kind"], d["subject"], d["source"], d["target"], d["applies"]) for d in found["differences"]] == [
            ("grant", f"app on {table}", "RW", None, True),
            ("grant", f"app on {table} family f", "R", None, True),
            ("quota", f"table {table}: space", "1.00G NO_INSERTS", None, True),
            ("quota", f"user app on table {table}: throttle write size", "10.00M/sec MACHINE", None, True)]

        assert main([*argv, "--apply"]) == 0
        applied = json.loads(capsys.readouterr().out)
        assert applied["applied"] == 4 and applied["apply_failed"] == [] and applied["differences_after"] == []
        assert main(argv) == 0 and json.loads(capsys.readouterr().out)["differences"] == []  # dc2's read again
        on_target = permissions(clusters["dc2"], [table])
        assert f"app default,{table},,: [Permission: actions=READ,WRITE]" in on_target, on_target
    finally:
        for name in ("dc1", "dc2"):
            channels.shell(clusters[name], [
                f"set_quota TYPE => THROTTLE, USER => 'app', TABLE => '{table}', LIMIT => NONE",
                f"set_quota TYPE => SPACE, TABLE => '{table}', LIMIT => NONE",
                f"disable '{table}'", f"drop '{table}'"], timeout_s=600)
