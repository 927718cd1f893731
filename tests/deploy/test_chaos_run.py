"""One short seeded chaos run (`make chaos --fail-first-attempt` with a small table and four faults, one per
phase) on a deployment of its own. The first attempt is forced to fail (the toolkit cut off from the source's
ZooKeeper until preflight has failed after every retry): it must stop with the exact state it left (no peer), say
so in its alert, and the harness's re-trigger, struck by the seeded nemesis, must succeed; the independent
comparison of every version finds 0 differences; every fault that fired recovered. All through it, no secret of the
deployment (PostgreSQL asks for a password, as production's does) is on any process's command line or in a file.

Longer runs and other seeds are `make chaos CHAOS_ARGS=...` (README "Operations under failure").
"""
from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.deployment, pytest.mark.slow]

SEED, DURATION_S = 6, 60.0
KINDS = ("zk_expire", "rs_kill", "gateway_reset", "scheduler_kill")


@pytest.mark.timeout(2400)  # about 7 minutes on a quiet 2-core machine; generous for a busy one
def test_a_seeded_chaos_run_ends_with_zero_differences(zookeeper, tmp_path):
    from chaos.run import run
    from chaos.schedule import PHASES, make_schedule
    from hbase_migration.data.jobargs import LEDGER_URL_FILE
    from tests.secret_watch import CommandLines, deployment_secrets, files_containing

    with CommandLines() as cmdlines:  # every process's command line, read all through the run
        # two of the demo's three tables (families keeping 1, 2 and 3 versions): one copy and one verify fewer
        result = run(Namespace(seed=SEED, duration=DURATION_S, faults=",".join(KINDS), rows=1500, write_rate=10.0,
                               tables=["users", "orders"],
                               rows_per_s=None, timeout_s=1200.0, workdir=str(tmp_path / "chaos"),
                               zookeeper=zookeeper.hosts, spark_workers=2, celery_workers=2, no_alerts=False,
                               fail_first_attempt=True, retry_delay_s=5.0, stand_in=True))
    print(json.dumps({k: result[k] for k in ("faults", "attempts", "recovery_by_kind", "differences",
                                             "wall_time_s")}, sort_keys=True, default=str))
    # No secret of the deployment (PostgreSQL's password in the metadata database's and the ledger's URLs, Redis's,
    # the admin's, the keys) on any command line during the run, nor in any file it wrote outside its secrets but
    # the two made to hold one, readable by their owner only: Redis's own `requirepass` file, and the ledger URL's
    # file spark-submit ships to a job (`--files`), which Spark copies into the executor's work directory.
    secrets_dir = tmp_path / "chaos" / "deploy" / "airflow" / "secrets"
    secrets = deployment_secrets(secrets_dir)
    assert {"password in sql_alchemy_conn", "password in ledger_url", "password in broker_url",
            "password of admin"} <= set(secrets), sorted(secrets)
    jobs = [line for line in cmdlines.seen if "SparkSubmit" in line and "ledger-url-file" in line]
    assert jobs, f"the sampler saw no Spark job ({cmdlines.samples} samples)"  # it watched the copies run
    assert cmdlines.containing(secrets) == []
    held = files_containing(tmp_path / "chaos", secrets, skip=secrets_dir)
    assert [(f, name, oct(mode)) for f, name, mode in held
            if Path(f).name not in ("auth.conf", LEDGER_URL_FILE) or mode & 0o044] == []

    # The schedule is the pure function's, one fault per phase.
    planned = make_schedule(SEED, DURATION_S, KINDS)
    assert result["schedule"] == [f.as_dict() for f in planned]
    assert [f["phase"] for f in result["faults"]] == list(PHASES)

    # The verdict: success after the re-trigger, 0 differences, every version compared independently.
    assert result["ok"] and result["status"] == "success", result
    assert result["succeeded"] and result["retriggered"]
    assert result["differences"] == 0
    for table, t in result["tables"].items():
        cmp = t["independent_comparison"]
        assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] > 0, (table, cmp)
        assert cmp["source_cells"] == cmp["target_cells"], (table, cmp)
    assert result["verify_unexpected_repairs"] == []
    assert result["writer"]["puts"] > 0 and result["writer"]["deletes"] > 0, result["writer"]

    # The failed first attempt: its fault, preflight failed after its retries, the exact state it left (no peer:
    # it never got past preflight), said in its alert; the second attempt, under the nemesis, succeeded.
    first, second = result["attempts"]
    assert (first["state"], first["nemesis"], second["state"], second["nemesis"]) == ("failed", False, "success", True)
    [forced] = first["faults"]
    assert forced["kind"] == "zk_partition" and forced["fired"] and forced["healed_at_s"] >= forced["injected_at_s"]
    assert first["retried_tasks"]["preflight"] == {"tries": 3, "state": "failed"}, first["retried_tasks"]
    left = first["left_behind"]
    assert left["state_exact"] and left["peer_state_read_independently"] == "ABSENT", left
    assert left["state_left_behind"]["state"] == "ABSENT" and "preflight" in left["state_left_behind"]["failed_tasks"]
    assert left["alert"] and first["run_id"] in left["alert"]["subject"], left
    assert [f["kind"] for f in second["faults"]] == [f.kind for f in planned]

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
