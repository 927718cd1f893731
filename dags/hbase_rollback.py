"""Airflow DAG `hbase_rollback`: bring the clients of a cut-over back to the source (freeze the target, drain the
reverse peer, a person's approval, the reverse peer removed). Trigger it with the cut-over's run id; it refuses
when no reverse peer exists. See docs/cutover.md."""
from hbase_migration.operators.cutover_factory import build_rollback_dag

dag = build_rollback_dag("hbase_rollback")
