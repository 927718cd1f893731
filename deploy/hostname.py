"""`[core] hostname_callable` of the deployment: each Celery worker reports its own name (several run on one
machine here, where socket.getfqdn() would give them all the same), so a task instance's `hostname` says which
worker ran it. Other processes report the machine's name, as Airflow's default does."""
from __future__ import annotations

import os
import socket

ENV_VAR = "HBASE_MIGRATION_WORKER_HOSTNAME"


def get_hostname() -> str:
    return os.environ.get(ENV_VAR) or socket.getfqdn()
