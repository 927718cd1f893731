"""DAG parse time: each file in dags/ parsed by a fresh DagBag, against a baseline DAG file with one task.

Each file is parsed in a fresh subprocess (as Airflow's DAG processor does), so imports are not cached between
measurements. Prints seconds per parse (median of N) and the ratio to the baseline measured in the same run.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))

PROBE = textwrap.dedent("""
    import sys, time
    import airflow.sdk  # noqa: F401  (the interpreter and Airflow itself are not what is measured)
    from airflow.dag_processing.dagbag import DagBag
    t = time.perf_counter()
    bag = DagBag(dag_folder=sys.argv[1])
    elapsed = time.perf_counter() - t
    assert not bag.import_errors, bag.import_errors
    print("RESULT", elapsed, len(bag.dags))
""")

BASELINE = textwrap.dedent('''
    """Airflow DAG: the baseline, one task."""
    from airflow.sdk import DAG
    from airflow.providers.standard.operators.empty import EmptyOperator

    with DAG(dag_id="baseline", schedule=None):
        EmptyOperator(task_id="noop")
''')


def parse_seconds(path: Path) -> tuple[float, int]:
    env = {**os.environ, "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO)}
    times, dags = [], 0
    for _ in range(RUNS):
        stdout = subprocess.run([sys.executable, "-c", PROBE, str(path)], env=env, capture_output=True, text=True,
                                check=True).stdout
        _, seconds, count = next(line for line in stdout.splitlines() if line.startswith("RESULT ")).split()
        times.append(float(seconds))
        dags = int(count)
    return statistics.median(times), dags


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        baseline_file = Path(tmp) / "baseline_dag.py"
        baseline_file.write_text(BASELINE)
        base, _ = parse_seconds(baseline_file)
    print(f"{'file':40s} {'dags':>4s} {'parse s':>9s} {'x baseline':>10s}")
    print(f"{'(baseline: 1 DAG, 1 EmptyOperator)':40s} {1:4d} {base:9.3f} {1.0:10.2f}")
    for path in sorted((REPO / "dags").glob("*.py")):
        seconds, dags = parse_seconds(path)
        print(f"{path.name:40s} {dags:4d} {seconds:9.3f} {seconds / base:10.2f}")


if __name__ == "__main__":
    main()
