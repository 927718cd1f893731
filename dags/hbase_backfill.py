"""Airflow DAG `hbase_backfill`: copy and verify a time window of tables (the run's data interval, or the
window given on the trigger form). Drive it with the trigger form or `airflow backfill create`."""
from hbase_migration.operators.factory import build_backfill_dag

dag = build_backfill_dag("hbase_backfill")
