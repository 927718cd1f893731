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
