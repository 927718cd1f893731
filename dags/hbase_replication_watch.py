"""Airflow DAG `hbase_replication_watch`: every 10 minutes, the replication health of each configured source
cluster (peers, lag, oldWALs against its quota); a task fails on a breach, every sample goes to the run ledger."""
from hbase_migration.operators.factory import build_watch_dag

dag = build_watch_dag("hbase_replication_watch")
