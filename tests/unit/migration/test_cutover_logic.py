"""Cut-over and rollback decisions, pure: plans from a run's ledger summary, and the evaluation of gathered facts,
each refusal exact."""
from __future__ import annotations

import json

import pytest

from hbase_migration.migration.cutover import (
    SwitchFacts,
    SwitchPlan,
    SwitchRefused,
    default_reverse_peer_id,
    evaluate_cutover,
    evaluate_rollback,
    expected_reverse_config,
    plan_cutover,
    plan_rollback,
    retire_action,
    rollback_verified_ms,
    rollback_window_plan,
    target_fence_left,
)
from hbase_migration.replication.model import DEFAULT_OWNER, Peer, PeerConfig

SRC, DST = "zk1.dc1:2181:/hbase", "zk1.dc2:2181:/hbase"


def verification(table: str, clean: bool, verified_ms: int, diff: int = 0) -> dict:
    return {"window_start_ms": 0, "window_end_ms": verified_ms, "verified_ms": verified_ms, "clean": clean,
            "content_different": diff, "only_in_source": 0, "only_in_target": 0, "source_rows": 10,
            "target_rows": 10, "matching": 10 - diff, "sample_keys": []}


def summary(status="success", dag="hbase_table_migration", peer="mig1", tables=("a", "ns:b"), verified=None,
            params=None) -> dict:
    if verified is None:
        verified = {t: [verification(t, True, 1000)] for t in tables}
    return {"run": {"run_id": "manual__1", "dag_id": dag, "status": status, "peer_id": peer, "tables": list(tables),
                    "source_key": SRC, "target_key": DST,
                    "params": params if params is not None else {"versions": None, "start_time_ms": None,
                                                                 "end_time_ms": None}},
            "verification": verified}


def test_a_finished_clean_run_is_planned_whole():
    plan = plan_cutover(summary())
    assert plan == SwitchPlan("cutover", "manual__1", "manual__1", SRC, DST, "mig1", "mig1_rev", ("a", "ns:b"),
                              ("a", "ns:b"), bulk_loads="unrecorded")  # a run from before bulk_loads
    for bulk in ("none", "replicated"):  # the migration run's, shown at the cut-over's approval
        assert plan_cutover(summary(params={"versions": None, "bulk_loads": bulk})).bulk_loads == bulk
    assert plan_cutover(summary(), ["default:a"], "back1").tables == ("a",)
    assert plan_cutover(summary(), None, "back1").reverse_peer_id == "back1"
    assert default_reverse_peer_id("x" * 64) == "x" * 60 + "_rev"


@pytest.mark.parametrize("kwargs, only, reverse, reasons", [
    (dict(status="failed"), None, None,
     ["migration run 'manual__1' is 'failed': only a run that finished (report succeeded) can be cut over; resume "
      "it first"]),
    (dict(status="running"), None, None,
     ["migration run 'manual__1' is 'running': only a run that finished (report succeeded) can be cut over; "
      "resume it first"]),
    (dict(dag="hbase_backfill", peer="-"), None, None,
     ["run 'manual__1' is not a migration run (dag 'hbase_backfill', peer '-'): give the run id of an "
      "hbase_table_migration (or plan) run"]),
    (dict(dag="hbase_cutover"), None, None,
     ["run 'manual__1' is not a migration run (dag 'hbase_cutover', peer 'mig1'): give the run id of an "
      "hbase_table_migration (or plan) run"]),
    ({}, ["a", "c", "zz"], None, ["table(s) c, zz are not part of migration run 'manual__1' (its tables: a, ns:b)"]),
    (dict(verified={"a": [verification("a", True, 1000)]}), None, None,
     ["table ns:b: no verification recorded for run 'manual__1'"]),
    # the latest verification decides: an old failure repaired later is fine, a newer failure is not
    (dict(verified={"a": [verification("a", False, 1000, 3), verification("a", True, 2000)],
                    "ns:b": [verification("ns:b", True, 1000), verification("ns:b", False, 2000, 2)]}), None, None,
     ["table ns:b: the latest verification of run 'manual__1' is not clean (2 rows differ in content, 0 only in "
      "the source, 0 only in the target): verify (and repair) until clean first"]),
    ({}, None, "a-b", ["reverse_peer_id: peer id 'a-b' contains '-': HBase names recovered queues '<peer>-<dead "
                       "server>' and could not tell them apart (HBASE-11394)"]),
    ({}, None, "mig1", ["reverse_peer_id 'mig1' is the forward peer's id"]),
])
def test_refusals_name_every_reason(kwargs, only, reverse, reasons):
    with pytest.raises(SwitchRefused) as e:
        plan_cutover(summary(**kwargs), only, reverse)
    assert e.value.reasons == reasons
    assert str(e.value).startswith("cut-over of run 'manual__1' refused, nothing was changed: ")


def test_a_rollback_plan_comes_from_the_cutover_runs_params():
    plan = plan_cutover(summary(), ["a"])
    cut = summary(dag="hbase_cutover", params={"switch_plan": plan.to_dict()})
    cut["run"]["run_id"] = "manual__2"
    assert plan_rollback(cut) == SwitchPlan("rollback", "manual__2", "manual__1", SRC, DST, "mig1", "mig1_rev",
                                            ("a",), ("a", "ns:b"))
    # ACL: the window's record of how to give the source its WRITE back, and take it away again on an abort
    acl = summary(dag="hbase_cutover", params={"switch_plan": {**plan.to_dict(), "freeze_method": "acl"}})
    acl["phases"] = {"*": {"window": {"status": "success", "detail": json.dumps(
        {"unfence_statements": ["give"], "refence_statements": ["take"]})}}}
    rb = plan_rollback(acl)
    assert (rb.freeze_method, rb.unfence_statements, rb.refence_statements) == ("acl", ("give",), ("take",))
    assert SwitchPlan.from_dict(rb.to_dict()) == rb
    with pytest.raises(SwitchRefused) as e:
        plan_rollback(summary())
    assert e.value.reasons == ["run 'manual__1' is not a cut-over run (dag 'hbase_table_migration'): give the run "
                               "id of an hbase_cutover run"]


# ------------------------------------------------------------------------------------------------ facts

PLAN = plan_cutover(summary(), ["a"])


def peer(pid, key, tables, enabled=True, owner=DEFAULT_OWNER) -> Peer:
    config = PeerConfig(cluster_key=key, table_cfs={t: [] for t in tables})
    return Peer(pid, config.with_owner(owner) if owner else config, enabled)


def facts(**changes) -> SwitchFacts:
    values = dict(source_key=SRC, target_key=DST, forward_peer=peer("mig1", DST, ["a", "ns:b"]), reverse_peer=None,
                  target_scopes={"a": {"d": 1, "e": 1}}, drained=True)
    values.update(changes)
    return SwitchFacts(**values)


def test_a_healthy_cutover_passes_and_so_does_its_own_reverse_peer_on_a_rerun():
    assert evaluate_cutover(PLAN, facts()) == []
    own_reverse = peer("mig1_rev", SRC, ["a"])
    assert own_reverse.config == expected_reverse_config(SRC, ["a"]).with_owner(DEFAULT_OWNER)
    assert evaluate_cutover(PLAN, facts(reverse_peer=own_reverse)) == []


@pytest.mark.parametrize("changes, reasons", [
    (dict(forward_peer=None),
     ["forward peer mig1 does not exist on the source: nothing replicates the source's edits to the target (was the "
      "cut-over already done, or the peer removed by hand?)"]),
    (dict(forward_peer=peer("mig1", DST, ["a", "ns:b"], enabled=False)),
     ["forward peer mig1 is DISABLED: enable it and let it drain before a cut-over"]),
    (dict(forward_peer=peer("mig1", DST, ["a"], owner=None)),
     ["peer mig1 on the source was not created by this toolkit (owner mark None)"]),
    (dict(forward_peer=peer("mig1", "zk9:2181:/hbase", ["a"])),
     ["forward peer mig1 ships to zk9:2181:/hbase, not to the target zk1.dc2:2181:/hbase"]),
    (dict(forward_peer=peer("mig1", DST, ["ns:b"])),
     ["forward peer mig1 does not replicate a (its TABLE_CFS: ns:b)"]),
    (dict(drained=False, drain_reasons=("rs1 queue mig1: sizeOfLogQueue=4 WAL(s), caught up is <= 1",)),
     ["forward peer mig1 has not drained: rs1 queue mig1: sizeOfLogQueue=4 WAL(s), caught up is <= 1"]),
    (dict(reverse_peer=peer("mig1_rev", SRC, ["a", "ns:b"])),
     ["reverse peer id mig1_rev is already taken on the target by another config (table_cfs: {'a': [], 'ns:b': []} "
      "!= {'a': []}): choose another reverse_peer_id, or remove that peer if it is a leftover"]),
    (dict(reverse_peer=peer("mig1_rev", SRC, ["a"], owner="someone")),
     ["reverse peer id mig1_rev is already taken on the target by a peer this toolkit did not create (owner mark "
      "'someone', ships to zk1.dc1:2181:/hbase): choose another reverse_peer_id"]),
    (dict(target_scopes={"a": {"d": 1, "e": 0}}),
     ["table a on the target: REPLICATION_SCOPE is not 1 for family e: the reverse peer would not ship the target's "
      "edits back, a rollback would lose them (alter it to 1 on the target first)"]),
    (dict(target_scopes={}), ["table a does not exist on the target"]),
    (dict(source_key="zk7:2181:/hbase"),
     ["the source connection points at zk7:2181:/hbase, but migration run 'manual__1' migrated from "
      "zk1.dc1:2181:/hbase"]),
])
def test_cutover_refusals(changes, reasons):
    assert evaluate_cutover(PLAN, facts(**changes)) == reasons


ROLLBACK = SwitchPlan("rollback", "manual__2", "manual__1", SRC, DST, "mig1", "mig1_rev", ("a",), ("a", "ns:b"))


def test_rollback_needs_its_reverse_peer_enabled():
    ok = facts(forward_peer=None, reverse_peer=peer("mig1_rev", SRC, ["a"]), target_scopes={})
    assert evaluate_rollback(ROLLBACK, ok) == []
    assert evaluate_rollback(ROLLBACK, facts(forward_peer=None, reverse_peer=None)) == [
        "no reverse peer mig1_rev on the target: nothing has kept the source current since the cut-over, a rollback "
        "would lose every write made on the target since (was the cut-over rejected, or already rolled back?)"]
    disabled = facts(forward_peer=None, reverse_peer=peer("mig1_rev", SRC, ["a"], enabled=False))
    assert evaluate_rollback(ROLLBACK, disabled) == [
        "reverse peer mig1_rev is DISABLED: enable it (python -m hbase_migration peer enable --source <target conn> "
        "--peer-id ...) so its backlog ships, then roll back"]


def test_a_rollback_re_creates_the_forward_peer_only_where_the_cut_over_retired_it():
    rev = peer("mig1_rev", SRC, ["a"])
    # A re-run finds the forward peer it re-created (ours, to the target, the tables rolled back), DISABLED or not.
    for again in (peer("mig1", DST, ["a"], enabled=False), peer("mig1", DST, ["a"])):
        assert evaluate_rollback(ROLLBACK, facts(forward_peer=again, reverse_peer=rev)) == []
    # A cut-over of only_tables narrowed it to the others (their migration goes on through it): refused.
    narrowed = facts(forward_peer=peer("mig1", DST, ["ns:b"]), reverse_peer=rev)
    assert evaluate_rollback(ROLLBACK, narrowed) == [
        "forward peer mig1 is still on the source (ours, ENABLED, TABLE_CFS ns:b, to zk1.dc2:2181:/hbase): the "
        "rollback re-creates it DISABLED for the tables rolled back and cannot while it replicates other tables (a "
        "cut-over of only_tables narrowed it); finish or cut over those tables first, or remove it"]
    foreign = facts(forward_peer=peer("mig1", DST, ["a"], owner=None), reverse_peer=rev)
    assert evaluate_rollback(ROLLBACK, foreign)[0].startswith("forward peer mig1 is still on the source (not ours, ")


def test_the_rollback_window_is_the_cut_overs_with_the_roles_swapped():
    mirrored = rollback_window_plan(ROLLBACK)
    assert (mirrored.source_key, mirrored.target_key, mirrored.peer_id, mirrored.reverse_peer_id) == (
        DST, SRC, "mig1_rev", "mig1")
    assert (mirrored.tables, mirrored.kind, mirrored.from_run_id) == (ROLLBACK.tables, "rollback", "manual__2")
    assert rollback_window_plan(mirrored) == ROLLBACK
    # The peer the window keeps (its reverse peer) is the forward peer as the migration made it.
    assert expected_reverse_config(mirrored.source_key, mirrored.tables) == PeerConfig(
        cluster_key=DST, table_cfs={"a": []})


def test_the_rollbacks_bounded_checks_start_at_the_cut_overs_last_clean_verification():
    def phase(status, started):
        return {"status": status, "started_ms": started}

    cut = {"phases": {"a": {"verify": phase("success", 100), "post_verify": phase("success", 900)},
                      "b": {"verify": phase("success", 200), "post_verify": phase("failed", 950)},
                      "c": {"verify": phase("failed", 300)},
                      "*": {"window": phase("success", 500)}}}
    assert rollback_verified_ms(cut, ["a", "b", "c", "d"]) == {"a": 900, "b": 200, "c": None, "d": None}


def test_a_cut_over_after_a_rollback_fenced_by_acl_gives_the_target_its_write_back():
    def run(dag, method, switched, unfence=(), inherited=()):
        plan = {**ROLLBACK.to_dict(), "freeze_method": method, "unfence_statements": list(inherited[:1]),
                "refence_statements": list(inherited[1:])}
        phases = {"window": {"status": "success", "detail": {"unfence_statements": list(unfence[:1]),
                                                             "refence_statements": list(unfence[1:])}}}
        if switched is not None:
            phases["switch"] = {"status": "success" if switched else "failed"}
        return {"run": {"dag_id": dag, "params": {"switch_plan": plan}}, "phases": {"*": phases}}

    grant, fence = ("hm_grant('app', 'a', 'RW')",), ("hm_grant('app', 'a', 'R')",)
    none = ((), ())
    assert target_fence_left(run("hbase_rollback", "acl", True, grant + fence)) == (grant, fence)
    # The rollback did not switch (its window lifted the target's fence), or fenced by READONLY (unfrozen or
    # left READONLY, not by ACL), or there is no earlier run: nothing to lift.
    assert target_fence_left(run("hbase_rollback", "acl", False, grant + fence)) == none
    assert target_fence_left(run("hbase_rollback", "readonly", True)) == none
    assert target_fence_left(None) == none and target_fence_left(run("hbase_table_migration", "acl", None)) == none
    # A cut-over attempt after it that did not switch passes the statements on; one that switched lifted them.
    assert target_fence_left(run("hbase_cutover", "acl", False, inherited=grant + fence)) == (grant, fence)
    assert target_fence_left(run("hbase_cutover", "acl", True, inherited=grant + fence)) == none
    # A rollback recorded before refence_statements: the WRITE given back, nothing to take it away again with
    # (the window then gives it back after its switch, as before).
    assert target_fence_left(run("hbase_rollback", "acl", True, grant)) == (grant, ())


def test_the_forward_peer_is_removed_or_narrowed():
    assert retire_action(["a", "ns:b"], ["a", "ns:b"]) == ("remove", {})
    assert retire_action(["a", "ns:b"], ["a"]) == ("narrow", {"ns:b": []})


def test_a_cross_realm_reverse_peer_is_the_same_reverse_peer_with_its_principal_setting():
    """The reverse peer towards a source in another realm carries the source's principal (security.
    peer_principal_config); checks that know only the plan still recognise it, and still refuse another config."""
    from hbase_migration.migration.cutover import same_reverse_peer

    wanted = expected_reverse_config(SRC, ["a"])
    cross_realm = expected_reverse_config(SRC, ["a"], {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC1.X"})
    assert cross_realm.configuration == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC1.X"}
    assert same_reverse_peer(cross_realm.with_owner(DEFAULT_OWNER), wanted.with_owner(DEFAULT_OWNER))
    assert not same_reverse_peer(expected_reverse_config(SRC, ["a", "b"]), wanted)
    assert not same_reverse_peer(cross_realm.replace(configuration={"other": "x"}), wanted)


def test_a_writer_the_fence_stops_who_cannot_write_on_the_target_refuses_the_cutover():
    """Issue 39 (Build 3): the cut-over refuses, before any freeze, naming each principal the fence stops on the
    source that holds no WRITE on the target (table, namespace or global, after the principal map); the approval
    shows the metadata's differences."""
    from hbase_migration.migration.freeze import Grant
    from hbase_migration.migration.metadata import CutoverMetadata, Metadata, Quota, cutover_metadata, fenced_writers

    source = Metadata((Grant("app/h@DC1", "default", "a", actions="RW"), Grant("tool@DC1", "default", "a",
                                                                                 actions="RW"),
                       Grant("reader@DC1", "default", "a", actions="R"), Grant("ops@DC1", "", "", actions="RWXCA")),
                      (Quota("", "a", "", "", "SPACE", "1073741824 NO_INSERTS"),), None)
    target = Metadata((Grant("app", "default", "a", actions="RW"), Grant("ops", "", "", actions="RWXCA"),
                       Grant("reader", "default", "a", actions="R")), (), None)
    # READONLY stops every writer; ACL all but freeze_exempt
    assert [g.principal for g in fenced_writers(source.grants, ["a"], "readonly", ["tool@DC1"])] == [
        "app/h@DC1", "tool@DC1", "ops@DC1"]
    assert [g.principal for g in fenced_writers(source.grants, ["a"], "acl", ["tool@DC1"])] == ["app/h@DC1",
                                                                                                  "ops@DC1"]
    found = cutover_metadata(source, target, ["a"], "readonly")
    assert found.unwritable == (
        "tool@DC1 writes a on the source (the fence stops it) but tool holds no WRITE for it on the target (globally, "
        "on namespace default or on the table): after the switch it could write nowhere; run `python -m "
        "hbase_migration metadata --apply` (or grant it), or map it (principal_map)",)
    assert found.to_dict()["text"] == ("2 difference(s): grant tool on a: source RW, target -; quota table a: space: "
                                       "source 1073741824 NO_INSERTS, target -")
    assert evaluate_cutover(PLAN, facts(metadata=found)) == list(found.unwritable)
    # exempt from an ACL fence, or mapped to a principal who writes there: the cut-over goes on
    assert cutover_metadata(source, target, ["a"], "acl", ["tool@DC1"]).unwritable == ()
    mapped = cutover_metadata(source, target, ["a"], "readonly", mapping={"tool@DC1": "app"})
    assert mapped.unwritable == () and evaluate_cutover(PLAN, facts(metadata=mapped)) == []
    # no AccessController on either side: nothing to show, nothing refused
    none = cutover_metadata(Metadata(None, None, None), Metadata(None, None, None), ["a"], "readonly")
    assert none == CutoverMetadata((), ()) and none.to_dict()["text"].startswith("none")
