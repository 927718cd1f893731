"""Run the toolkit as production does: Airflow with the CeleryExecutor (Redis broker, PostgreSQL metadata
database; API server, scheduler, DAG processor, triggerer and Celery workers as separate processes) and a Spark
standalone cluster, on loopback ports, started on demand and stopped afterwards.

    from deploy import Deployment
    dep = Deployment.start(".state/deploy", spark_workers=2, celery_workers=2)
    ...
    dep.stop()

CLI: `python -m deploy up|down|status --workdir DIR` (see `python -m deploy --help`).
"""
from deploy.deployment import Deployment, stop_workdir

__all__ = ["Deployment", "stop_workdir"]
