"""One short seeded chaos run (`make chaos` with a small table and four faults, one per phase) on a deployment of
its own: the migration, triggered through the REST API with a live writer on the source, either succeeds under
the faults or stops with the exact state it left and succeeds when the harness triggers it again; the
independent comparison of every version finds 0 differences; every fault that fired recovered.

Longer runs and other seeds are `make chaos CHAOS_ARGS=...` (README "Operations under failure").
"""
from __future__ import annotations

import json
from argparse import Namespace

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.deployment, pytest.mark.slow]

SEED, DURATION_S = 6, 60.0
KINDS = ("zk_expire", "rs_kill", "gateway_reset", "scheduler_kill")


@pytest.mark.timeout(1500)  # about 4 minutes here; generous for a busy 2-core machine
def test_a_seeded_chaos_run_ends_with_zero_differences(zookeeper, tmp_path):
    from chaos.run import run
    from chaos.schedule import PHASES, make_schedule

    result = run(Namespace(seed=SEED, duration=DURATION_S, faults=",".join(KINDS), rows=1500, write_rate=10.0,
                           rows_per_s=None, timeout_s=1200.0, workdir=str(tmp_path / "chaos"),
                           zookeeper=zookeeper.hosts, spark_workers=2, celery_workers=2, no_alerts=False))
    print(json.dumps({k: result[k] for k in ("faults", "attempts", "recovery_by_kind", "differences",
                                             "wall_time_s")}, sort_keys=True, default=str))
    # The schedule is the pure function's, one fault per phase.
    planned = make_schedule(SEED, DURATION_S, KINDS)
    assert result["schedule"] == [f.as_dict() for f in planned]
    assert [f["phase"] for f in result["faults"]] == list(PHASES)

    # The verdict: success (after at most one re-trigger), 0 differences, every version compared independently.
    assert result["ok"], result
    assert result["succeeded"] and result["attempts"][-1]["state"] == "success"
    assert result["differences"] == 0
    for table, t in result["tables"].items():
        cmp = t["independent_comparison"]
        assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, (table, cmp)
        assert cmp["source_cells"] == cmp["target_cells"], (table, cmp)
    assert result["verify_unexpected_repairs"] == []
    assert result["writer"]["puts"] > 0 and result["writer"]["deletes"] > 0, result["writer"]

    # A failed first attempt stopped with the exact state it left, said so in its alert, and the re-trigger
    # (no faults) finished the migration.
    for attempt in result["attempts"][:-1]:
        left = attempt["left_behind"]
        assert left["state_exact"], left
        assert left["alert"] and attempt["run_id"] in left["alert"]["subject"], left

    # The faults fired in their phase (or are said missed, with why), and each that fired recovered.
    fired = [f for f in result["faults"] if f["fired"]]
    assert len(fired) >= 3, result["faults"]
    for f in result["faults"]:
        if f["fired"]:
            assert f["phase_at_injection"] == f["phase"], f
            assert f["time_to_recover_s"] is not None and f["time_to_recover_s"] >= 0, f
        else:
            assert f["missed"], f
    by_kind = result["recovery_by_kind"]
    assert sum(k["fired"] for k in by_kind.values()) == len(fired)
    assert all(k["recovered"] == k["fired"] for k in by_kind.values()), by_kind
