"""Airflow DAGs from migration plans: one DAG per `dags/plans/*.toml` (see that folder's example); an invalid plan
is this file's import error, naming each file and field, while the valid plans' DAGs still load."""
from pathlib import Path

from hbase_migration.operators.factory import build_plan_dags

globals().update(build_plan_dags(Path(__file__).resolve().parent / "plans"))
