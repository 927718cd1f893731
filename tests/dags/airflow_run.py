"""Run a DAG the way an operator would, `airflow dags test`, in a subprocess with the clusters' connections."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def connections_env(source, target, ledger_path: Path) -> dict[str, str]:
    """Connections for two minihbase clusters (`MiniCluster`), local Spark and a ledger of the test's own."""
    return {
        "AIRFLOW_CONN_HBASE_SOURCE": source.connection_json,
        "AIRFLOW_CONN_HBASE_TARGET": target.connection_json,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{ledger_path}",
        # A retried step waits 2 s, not its production default (30 s, a minute): what a test checks is that it
        # retries, not how long it waits.
        "AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S": "2",
    }


def airflow_env(source, target, ledger_path: Path) -> dict[str, str]:
    """This environment with the repository as AIRFLOW_HOME and `connections_env`."""
    return {
        **os.environ,
        "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        **connections_env(source, target, ledger_path),
    }


def dags_test(dag_id: str, conf: dict, env: dict[str, str], log_path: Path, timeout_s: float = 900,
              logical_date: str | None = None) -> int:
    """`airflow dags test DAG [DATE] -c CONF`; its output goes to `log_path`. Returns the exit code."""
    cmd = [str(Path(sys.executable).parent / "airflow"), "dags", "test", dag_id]
    if logical_date:
        cmd.append(logical_date)
    cmd += ["-c", json.dumps(conf)]
    with open(log_path, "w") as out:
        return subprocess.run(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout_s).returncode
