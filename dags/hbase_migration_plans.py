"""Airflow DAGs from migration plans: one DAG per `dags/plans/*.toml` (see that folder's example).

Parsing is cheap (TOML files, no connection). A bad plan does not break the others: every valid plan still
gets its DAG, and the invalid ones surface as one import error naming each file and field.
"""
from pathlib import Path

from airflow.sdk import DAG

from hbase_migration.migration.plans import load_plans
from operators.factory import build_migration_dag

PLANS_DIR = Path(__file__).resolve().parent / "plans"

plans, errors = load_plans(PLANS_DIR)
for plan in plans:
    globals()[plan.dag_id] = build_migration_dag(
        plan.dag_id, schedule=plan.schedule, plan=plan.name, defaults=plan.params,
        spark_conn_id=plan.spark_conn_id, tags=["plan"], doc_md=None)


class _InvalidPlans(DAG):
    """Stands for the invalid plans: Airflow reports its validation error as this file's import error,
    while the valid plans' DAGs above load as usual."""

    def validate(self):
        raise ValueError("invalid migration plan(s): " + " | ".join(str(e) for e in errors))


if errors:
    invalid_plans = _InvalidPlans(dag_id="hbase_migration__invalid_plans", schedule=None)
