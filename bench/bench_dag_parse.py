"""DAG parse time: each file in dags/ parsed by a fresh DagBag, against a baseline DAG file with one task; and the
whole DAG folder with 50 migration plan files in dags/plans (50 plan DAGs besides the others), in total.

Each parse runs in a fresh subprocess (as Airflow's DAG processor does), so imports are not cached between
measurements. Prints seconds per parse (median of N) and the ratio to the baseline measured in the same run;
the last line is one JSON object (the folder's total is the figure the goal of <= 1 s is about).
"""
from __future__ import annotations

import json
import os
import shutil
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


PLANS = 50


def folder_with_plans(tmp: Path, plans: int = PLANS) -> Path:
    """A copy of dags/ whose plans/ holds `plans` plan files (the example's fields, each its own name and peer)."""
    folder = tmp / "dags"
    shutil.copytree(REPO / "dags", folder, ignore=shutil.ignore_patterns("__pycache__"))
    example = (REPO / "dags" / "plans" / "example_orders.toml").read_text()
    for i in range(plans):
        (folder / "plans" / f"plan_{i:02d}.toml").write_text(
            example.replace('name = "example_orders"', f'name = "plan_{i:02d}"')
                   .replace('peer_id = "example_orders"', f'peer_id = "plan_{i:02d}"'))
    (folder / "plans" / "example_orders.toml").unlink()
    return folder


def main() -> None:
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        baseline_file = Path(tmp) / "baseline_dag.py"
        baseline_file.write_text(BASELINE)
        base, _ = parse_seconds(baseline_file)
        folder = folder_with_plans(Path(tmp))
        folder_s, folder_dags = parse_seconds(folder)
    print(f"{'file':40s} {'dags':>4s} {'parse s':>9s} {'x baseline':>10s}")
    print(f"{'(baseline: 1 DAG, 1 EmptyOperator)':40s} {1:4d} {base:9.3f} {1.0:10.2f}")
    for path in sorted((REPO / "dags").glob("*.py")):
        seconds, dags = parse_seconds(path)
        figures[path.name] = round(seconds, 3)
        print(f"{path.name:40s} {dags:4d} {seconds:9.3f} {seconds / base:10.2f}")
    print(f"{f'dags/ with {PLANS} plan files, in total':40s} {folder_dags:4d} {folder_s:9.3f} {folder_s / base:10.2f}")
    figures.update(baseline_s=round(base, 3), folder_with_plans_s=round(folder_s, 3), folder_dags=folder_dags,
                   plans=PLANS)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
