"""Airflow DAG `hbase_replication_watch`: every 10 minutes, the replication health of each configured source
cluster: its peers and how long a disabled one has pinned WALs, lag per peer, oldWALs usage against its quota
and the projected time to exhaustion. A task fails (so Airflow alerts) when a threshold is crossed; every
sample goes to the run ledger."""
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from hbase_migration.migration.runspec import WATCH
from operators.factory import form_params, retry_delay

with DAG(
    dag_id="hbase_replication_watch",
    schedule=timedelta(minutes=10),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hbase", "replication", "watch"],
    doc_md=__doc__,
    params=form_params(WATCH),
) as dag:

    @task(task_id="clusters")
    def clusters(**context) -> list[str]:
        from hbase_migration.migration.runspec import RunSpec

        return list(RunSpec.validate(context["params"], WATCH).clusters)

    @task(task_id="check_cluster", retries=1, retry_delay=retry_delay(30), map_index_template="{{ conn_id }}")
    def check_cluster(conn_id: str, **context) -> dict:
        from operators.watch import check_cluster_health

        context["conn_id"] = conn_id  # labels the mapped task in the UI (map_index_template)
        return check_cluster_health(conn_id, context["params"], context["run_id"], context["dag"].dag_id)

    check_cluster.expand(conn_id=clusters())
