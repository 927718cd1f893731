"""Settings every test shares, made before Airflow or Spark is imported (so a bare `pytest` works too)."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("AIRFLOW_HOME", str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
