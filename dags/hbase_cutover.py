"""Airflow DAG `hbase_cutover`: cut the tables of a finished migration over to the target (freeze the source,
final drain and verification, reverse peer, a person's approval, the forward peer retired). Trigger it with the
migration's run id; see docs/cutover.md."""
from hbase_migration.operators.cutover_factory import build_cutover_dag

dag = build_cutover_dag("hbase_cutover")
