"""Airflow DAG `hbase_replication_watch`: every 10 minutes, the replication health of each configured source
cluster: its peers and how long a disabled one has pinned WALs, lag per peer, oldWALs usage against its quota
and the projected time to exhaustion. A task fails (so Airflow alerts) when a threshold is crossed; every
sample goes to the run ledger."""
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, Param, task

with DAG(
    dag_id="hbase_replication_watch",
    schedule=timedelta(minutes=10),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hbase", "replication", "watch"],
    doc_md=__doc__,
    params={
        "clusters": Param(["hbase_source"], type="array", items={"type": "string"}, minItems=1,
                          title="Source clusters to watch (connection ids)"),
        "max_disabled_s": Param(3600, type="number", minimum=0, title="Fail when a peer is disabled longer (s)"),
        "max_lag_ms": Param(300_000, type="integer", minimum=0, title="Fail when an enabled peer lags more (ms)"),
        "quota_mark": Param(0.8, type="number", exclusiveMinimum=0, maximum=1,
                            title="Fail when oldWALs' quota is this full"),
        "min_exhaustion_s": Param(86_400, type="number", minimum=0,
                                  title="Fail when the quota is projected to run out sooner (s)"),
        "quota_sample_gap_s": Param(5, type="number", minimum=0, title="Gap between two oldWALs readings (s)"),
    },
) as dag:

    @task(task_id="clusters")
    def clusters(**context) -> list[str]:
        return list(context["params"]["clusters"])

    @task(task_id="check_cluster", retries=1, retry_delay=timedelta(seconds=30))
    def check_cluster(conn_id: str, **context) -> dict:
        from operators.watch import check_cluster_health

        return check_cluster_health(conn_id, context["params"], context["run_id"], context["dag"].dag_id)

    check_cluster.expand(conn_id=clusters())
