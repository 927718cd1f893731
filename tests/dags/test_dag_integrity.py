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
