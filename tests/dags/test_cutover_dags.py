"""The cut-over and rollback DAGs' structure: forms from the run spec, every task reading the validated spec (never
the raw form), Airflow's own ApprovalOperator in the right place (the cut-over's before anything changes), and the
paths a rejection and a failure take."""
from pathlib import Path

import pytest

from hbase_migration.migration.runspec import CUTOVER, ROLLBACK, form_schema

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"


def load(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / f"{dag_id}.py"))
    assert bag.import_errors == {}
    return bag.dags[dag_id]


@pytest.mark.parametrize("dag_id, kind, order, approval, after", [
    ("hbase_cutover", CUTOVER, ["open_run", "check", "approve_cutover", "approved", "pre_verify", "reverse_peer",
                                "window", "post_verify", "retire_forward_peer", "report"],
     "approve_cutover", "approved"),
    ("hbase_rollback", ROLLBACK, ["open_run", "check", "approve_rollback", "approved", "unfreeze_source",
                                  "forward_peer", "window", "final_verify", "remove_reverse_peer", "report"],
     "approve_rollback", "approved"),
])
def test_structure(dag_id, kind, order, approval, after):
    from airflow.providers.standard.operators.hitl import ApprovalOperator
    from airflow.sdk import TriggerRule

    dag = load(dag_id)
    assert list(dag.params.keys()) == list(form_schema(kind))
    for upstream, downstream in zip(order, order[1:]):
        assert downstream in dag.get_task(upstream).downstream_task_ids, (upstream, downstream)
    gate = dag.get_task(approval)
    assert isinstance(gate, ApprovalOperator) and gate.options == ["Approve", "Reject"]
    # A rejection skips the approval's direct downstream; `rejected` runs only when that step is skipped.
    assert dag.get_task("rejected").upstream_task_ids == {after}
    assert dag.get_task("rejected").trigger_rule == TriggerRule.ALL_SKIPPED
    failure = dag.get_task("state_left_behind")
    assert failure.trigger_rule == TriggerRule.ONE_FAILED and failure.upstream_task_ids == set(order[:-1])
    for task in dag.tasks:
        for name in getattr(task, "template_fields", ()):
            value = getattr(task, name, None)
            assert "params." not in str(value), f"{task.task_id}.{name} reads the raw form: {value}"
    # No person after the plan's approval; the window in one task, never retried, the same for both kinds.
    window = dag.get_task("window")
    assert window.retries == 0 and "s.switch_command | tojson" in window.switch_command and window.kind == kind
    assert "switch_command" in dag.get_task(approval).body
    if kind == ROLLBACK:
        assert dag.get_task("forward_peer").enabled is False
        assert "freeze_method == 'readonly'" in dag.get_task("unfreeze_source").apply
        verify = dag.get_task("final_verify")
        assert verify.partial_kwargs["repair"] is False and verify.partial_kwargs["ledger_phase"] == "verify"
        return
    assert dag.get_task("reverse_peer").enabled is False
    for task_id, phase in (("pre_verify", "verify"), ("post_verify", "post_verify")):
        verify = dag.get_task(task_id)
        assert verify.partial_kwargs["repair"] is False and verify.partial_kwargs["ledger_phase"] == phase
