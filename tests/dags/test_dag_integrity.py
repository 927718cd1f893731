"""Every file in dags/ imports without error and defines at least one DAG (Airflow's best-practices test)."""
from pathlib import Path

import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"
DAG_FILES = sorted(p for p in DAGS_FOLDER.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=[p.name for p in DAG_FILES])
def test_dag_file_imports_without_error(dag_file):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(dag_file))
    assert bag.import_errors == {}, bag.import_errors
    assert bag.dags, f"{dag_file.name} defines no DAG"


def test_a_plan_with_a_reserved_peer_id_is_an_import_error_naming_file_and_field(tmp_path):
    """Regression: the plans' peer-id rule accepted 'lock', which only open_run refused, at run time."""
    import shutil

    from airflow.dag_processing.dagbag import DagBag

    shutil.copy(DAGS_FOLDER / "hbase_migration_plans.py", tmp_path)
    (tmp_path / "plans").mkdir()
    plan = ('[migration]\nname = "{name}"\nsource_conn_id = "a"\ntarget_conn_id = "b"\ntables = ["t"]\n'
            'peer_id = "{peer}"\n')
    (tmp_path / "plans" / "good.toml").write_text(plan.format(name="good", peer="good"))
    (tmp_path / "plans" / "locked.toml").write_text(plan.format(name="locked", peer="lock"))
    bag = DagBag(dag_folder=str(tmp_path))
    assert list(bag.dags) == ["hbase_migration__good"]
    [error] = bag.import_errors.values()
    assert "locked.toml: migration.peer_id: peer id 'lock' is reserved by HBase" in error


def test_every_task_reads_the_validated_spec_not_the_raw_form():
    """Regression: preflight's headroom check ignored the form's quota_mark. Every run parameter a task uses
    now comes from open_run's validated spec."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS_FOLDER / "hbase_table_migration.py")).dags["hbase_table_migration"]
    preflight = dag.get_task("preflight")
    assert "quota_mark" in preflight.template_fields
    assert preflight.quota_mark.endswith("{{ s.quota_mark }}") and "key='spec'" in preflight.quota_mark
    for task in dag.tasks:
        for name in getattr(task, "template_fields", ()):
            value = getattr(task, name, None)
            assert "params." not in str(value), f"{task.task_id}.{name} reads the raw form: {value}"


def test_a_lost_worker_costs_a_retry_in_every_step_and_bad_input_fails_at_once():
    """Regression (the chaos harness, seed 1: a Celery worker SIGKILLed while it ran open_run): open_run and
    preflight had no retries, so a lost worker (or the ledger's database restarting) failed the whole run.
    Every step of the migration is idempotent and now retries; bad input still fails without a retry."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.clusters.cluster import ClusterConfigError
    from hbase_migration.migration.runspec import InvalidRunInput
    from hbase_migration.operators.steps import bad_input_fails_at_once

    bag = DagBag(dag_folder=str(DAGS_FOLDER))
    for dag_id in ("hbase_table_migration", "hbase_backfill"):
        dag = bag.dags[dag_id]
        no_retry = sorted(t.task_id for t in dag.tasks if not t.retries)
        # report closes the run in the ledger, state_left_behind runs after a failure (a re-run of either is
        # a person's decision), a short-circuit decides from XCom. The drain sensor retries too (chaos seed 12:
        # a Celery worker SIGKILLed while it ran wait_drained failed the run); its deadline fails at once, below.
        assert set(no_retry) <= {"report", "state_left_behind", "proceed_unless_dry_run", "verify_requested"}, (
            dag_id, no_retry)
    for dag_id, task_id in (("hbase_table_migration", "batch.wait_drained"), ("hbase_rollback", "forward_peer")):
        assert bag.dags[dag_id].get_task(task_id).retries == 2, (dag_id, task_id)
    sensor = bag.dags["hbase_table_migration"].get_task("batch.wait_drained")
    with pytest.raises(AirflowFailException, match="did not drain before the timeout: lag 9000 ms"):
        type(sensor)(task_id="w", source_conn_id="s", target_conn_id="t", peer_id="p").execute_complete(
            {}, {"status": "timeout", "decision": {"reasons": ["lag 9000 ms"]}})
    for error in (InvalidRunInput("peer_id", "must be letters"), ClusterConfigError("same cluster twice")):
        with pytest.raises(AirflowFailException, match=str(error)):
            with bad_input_fails_at_once():
                raise error
    with pytest.raises(ConnectionError):  # anything else is left to the retries
        with bad_input_fails_at_once():
            raise ConnectionError("ledger database restarting")


def test_one_setting_shortens_every_steps_retry_delay_and_a_bad_one_is_an_import_error(monkeypatch):
    """`[hbase_migration] retry_delay_s` (here through its environment variable) replaces each step's default
    (30 s, a minute); not a number of seconds, the DAG files do not import, naming the setting."""
    from datetime import timedelta

    from airflow.dag_processing.dagbag import DagBag

    def delays() -> set[timedelta]:
        bag = DagBag(dag_folder=str(DAGS_FOLDER / "hbase_table_migration.py"))
        assert bag.import_errors == {}, bag.import_errors
        return {t.retry_delay for t in bag.dags["hbase_table_migration"].tasks if t.retries}

    assert delays() == {timedelta(seconds=30), timedelta(minutes=1)}
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S", "2.5")
    assert delays() == {timedelta(seconds=2.5)}
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S", "soon")
    bag = DagBag(dag_folder=str(DAGS_FOLDER / "hbase_table_migration.py"))
    [error] = bag.import_errors.values()
    assert "[hbase_migration] retry_delay_s = 'soon': give seconds between 0 and 86400" in error


def test_each_batch_is_a_mapped_group_whose_peer_is_added_on_its_turn_and_enabled_after_its_own_copies():
    """Issue 42: the run's tables in batches (a mapped task group over plan_batches), each with its own peer: added
    after the batch's turn came (a slot of batches_at_once), enabled once its own copies are done, its catch-up and
    verification its own; the slot and the switch hold are given up whatever the copies' state; what the run left
    is read once every batch has ended."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import TriggerRule
    from airflow.sdk.definitions.taskgroup import MappedTaskGroup

    dag = DagBag(dag_folder=str(DAGS_FOLDER / "hbase_table_migration.py")).dags["hbase_table_migration"]
    group = dag.task_group_dict["batch"]
    assert isinstance(group, MappedTaskGroup)
    order = ["wait_turn", "add_peer", "copy", "enable_peer", "wait_drained", "verify"]
    for upstream, downstream in zip(order, order[1:]):
        if (upstream, downstream) != ("copy", "enable_peer"):
            assert f"batch.{downstream}" in dag.get_task(f"batch.{upstream}").downstream_task_ids, upstream
    assert dag.get_task("batch.enable_peer").upstream_task_ids == {"batch.copy", "batch.snapshot_export",
                                                                   "plan_batches"}  # its argument: the peer
    assert dag.get_task("batch.copies_done").upstream_task_ids == {"batch.copy", "batch.snapshot_export",
                                                                   "plan_batches"}  # its argument: the batch
    assert dag.get_task("batch.copies_done").trigger_rule == TriggerRule.ALL_DONE
    # issue 39: the batch's grants, quotas and RS groups once its tables exist on the target, before its verification
    assert dag.get_task("batch.metadata").upstream_task_ids == {"batch.copy", "batch.snapshot_export", "plan_batches"}
    assert "batch.verify" in dag.get_task("batch.metadata").downstream_task_ids
    # per batch: a rule that tolerates a skip would wait for every batch and fail them all on one (Airflow 3.3)
    assert dag.get_task("batch.metadata").trigger_rule == TriggerRule.ALL_SUCCESS
    assert dag.get_task("batch.enable_peer").trigger_rule == TriggerRule.ALL_SUCCESS
    assert dag.get_task("batch.wait_turn").mode == "reschedule"  # a waiting batch holds no worker slot
    assert dag.get_task("batch.wait_turn").upstream_task_ids == {"proceed_unless_dry_run", "plan_batches"}
    assert dag.get_task("plan_batches").upstream_task_ids == {"create_target_tables"}
    assert dag.get_task("state_left_behind").trigger_rule == TriggerRule.ALL_DONE
    assert dag.get_task("report").upstream_task_ids == {"batch.verify", "batch.copies_done"}
