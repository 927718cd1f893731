"""Airflow DAG `hbase_table_migration`: the hand-triggered migration, every input on the trigger form."""
from hbase_migration.operators.factory import build_migration_dag

dag = build_migration_dag("hbase_table_migration")
