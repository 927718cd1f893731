"""The distribution installed the way a shop adds it to its Airflow (docs/install.md, issue 44), on real HBase.

The wheel is built from the repository's packaging (pyproject.toml) and installed into a fresh virtual environment
outside the checkout together with Airflow (uv, the pinned set of constraints.txt, uv's cache); AIRFLOW_HOME and a
DAGs folder outside the checkout hold the one DAG file docs/install.md shows, read out of the doc. From there, with
no PYTHONPATH, the checkout's folders off PATH and the working directory outside the checkout: Airflow lists the
provider, finds no import error, the console script answers, and the migration DAG runs end to end (`airflow dags
test`) on the session's real HBase bed, dc1 -> dc2, one small table, with an independent comparison of every
version on both sides (demo/workload.py's Thrift2 client) finding no difference.

The bed's `hbase shell` is a program of the bed (`python -m realhbase shell`, from this checkout), as `hbase shell`
is a program of an HBase installation: the connection runs it with its own PYTHONPATH; the toolkit's processes
never see it."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.snapshot_bed import compare_sides, shell_ok, unique

pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.slow, pytest.mark.realhbase]

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
# What the wheel is built from: the packaging and the folders it maps (nothing else of the checkout goes in).
SOURCES = ("pyproject.toml", "README.md", "hbase_migration", "operators", "jobs", "plugins", "sql")
BASE_TS = 1_700_000_000_000


def dag_file_of_the_doc() -> str:
    """The first Python block under docs/install.md's "A DAG file" heading."""
    doc = (REPO / "docs" / "install.md").read_text()
    section = doc.split("\n## A DAG file\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def build_wheel(tmp: Path) -> Path:
    """The wheel from a copy of what the distribution holds: a build in the checkout would leave its egg-info
    there, where PYTHONPATH finds it (and every entry point would register twice)."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(REPO / name, src / name)
    subprocess.run([str(UV), "build", "--wheel", "--quiet", "--out-dir", str(tmp / "dist"), str(src)], check=True,
                   cwd=tmp, env=_uv_env(), capture_output=True, timeout=600)
    [wheel] = (tmp / "dist").glob("hbase_migration-*.whl")
    return wheel


def _uv_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "UV_HTTP_TIMEOUT": "180"}


def install(wheel: Path, venv: Path) -> Path:
    """A fresh venv with the wheel and Airflow, the tested set (constraints.txt), from uv's cache when it has it."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([str(UV), "venv", "--quiet", "--python", str(base), str(venv)], check=True, env=_uv_env(),
                   capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(UV), "pip", "install", "--quiet", "--native-tls", "--python", str(python), str(wheel),
                           "-c", str(REPO / "constraints.txt")], env=_uv_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


def outside_env(venv: Path, home: Path, source: dict, target: dict, ledger: Path) -> dict[str, str]:
    """What a shop's Airflow has: its own AIRFLOW_HOME and DAGs folder, the venv's bin on PATH, no PYTHONPATH."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(REPO))]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV", "PYSPARK", "SPARK_HOME", "HBASE_MIGRATION"))}
    env.update({
        "PATH": os.pathsep.join([str(venv / "bin"), *path]), "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"), "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}", "SPARK_LOCAL_IP": "127.0.0.1",
        "AIRFLOW_CONN_HBASE_SOURCE": json.dumps(source), "AIRFLOW_CONN_HBASE_TARGET": json.dumps(target),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": f"sqlite:///{ledger}",
        "AIRFLOW__HBASE_MIGRATION__RETRY_DELAY_S": "2",
    })
    return env


def bed_connection(endpoint: dict) -> dict:
    """The bed's connection, its shell run with the bed's own code on its PYTHONPATH (see the module docstring)."""
    conn = json.loads(json.dumps(endpoint["connection"]))
    extra = conn["extra"] if isinstance(conn["extra"], dict) else json.loads(conn["extra"])
    extra["shell_command"] = shlex.join(["env", f"PYTHONPATH={REPO}", *shlex.split(extra["shell_command"])])
    conn["extra"] = extra if isinstance(conn["extra"], dict) else json.dumps(extra)
    return conn


def last_json(stdout: str):
    """An Airflow command's `--output json`: its last line, after any warning Airflow logs first."""
    return json.loads(stdout.strip().splitlines()[-1])


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def check_outside(python: Path, venv: Path, env: dict[str, str], cwd: Path) -> None:
    """What a shop checks after `pip install`, each command on its own (side by side: each is an Airflow start)."""
    bin_ = venv / "bin"
    commands = {
        # Nothing of the checkout: the package is the venv's, and the checkout is on no path.
        "where": [str(python), "-c", "import json, sys, hbase_migration.operators.factory as f, hbase_migration as h; "
                                     "print(json.dumps([h.__file__, f.__file__, sys.path]))"],
        "providers": [str(bin_ / "airflow"), "providers", "list", "--output", "json"],
        # --local: the DAGs folder parsed here and now (no dag processor has filled the database)
        "dags": [str(bin_ / "airflow"), "dags", "list", "--local", "--output", "json"],
        "errors": [str(bin_ / "airflow"), "dags", "list-import-errors", "--local", "--output", "json"],
        "plugins": [str(bin_ / "airflow"), "plugins", "--output", "json"],
        "help": [str(bin_ / "hbase-migration"), "--help"],
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        done = dict(zip(commands, pool.map(lambda cmd: run(cmd, env, cwd), commands.values())))
    for name, proc in done.items():
        assert proc.returncode == 0, (name, proc.stdout[-2000:], proc.stderr[-3000:])
    package, factory, path = json.loads(done["where"].stdout)
    assert package.startswith(str(venv)) and factory.startswith(str(venv)), (package, factory)
    assert not [p for p in path if p.startswith(str(REPO))], path
    listed = last_json(done["providers"].stdout)
    assert "hbase-migration" in [p["package_name"] for p in listed], listed
    assert [d["dag_id"] for d in last_json(done["dags"].stdout)] == ["hbase_table_migration"], done["dags"].stdout
    assert last_json(done["errors"].stdout) == [], done["errors"].stdout
    # the dashboard once, by its entry point (a copy in the plugins folder would be a second, refused)
    assert [p["name"] for p in last_json(done["plugins"].stdout)] == ["hbase_migration"], done["plugins"].stdout
    assert done["help"].stdout.startswith("usage: hbase-migration"), done["help"].stdout[:500]


@pytest.mark.timeout(1800)
def test_the_wheel_installed_outside_the_checkout_migrates_a_table(realhbase, tmp_path, request):
    from demo.workload import Thrift2

    started = time.monotonic()
    # Outside the checkout (make test's basetemp is inside it), and removed afterwards.
    outside = Path(tempfile.mkdtemp(prefix="hbase-migration-shop-"))
    request.addfinalizer(lambda: shutil.rmtree(outside, ignore_errors=True))
    home, venv = outside / "airflow", outside / "venv"
    (home / "dags").mkdir(parents=True)
    (home / "plugins").mkdir()
    (home / "dags" / "hbase_table_migration.py").write_text(dag_file_of_the_doc())
    shutil.copy(REPO / ".airflow" / "airflow.db", home / "airflow.db")  # migrated by make bootstrap, same Airflow
    dc1, dc2 = realhbase.endpoints()["dc1"], realhbase.endpoints()["dc2"]
    env = outside_env(venv, home, bed_connection(dc1), bed_connection(dc2), outside / "ledger.db")
    table = peer = unique("pkg")
    try:
        with ThreadPoolExecutor(1) as pool:  # the wheel and its venv while the bed's shell makes the table
            installed = pool.submit(lambda: install(build_wheel(tmp_path), venv))
            shell_ok(realhbase, "dc1", [f"create '{table}', {{NAME => 'd', VERSIONS => 3, REPLICATION_SCOPE => 1}}, "
                                        "SPLITS => ['r00100']"])
            client = Thrift2(dc1)
            try:  # one small table, two versions a row at old timestamps
                client.put(table, [(b"r%05d" % i, {b"d:v": b"old %d" % i}, BASE_TS + i) for i in range(200)])
                client.put(table, [(b"r%05d" % i, {b"d:v": b"new %d" % i}, BASE_TS + 10_000 + i)
                                   for i in range(200)])
            finally:
                client.close()
            python = installed.result()
        installed_s = time.monotonic() - started
        check_outside(python, venv, env, outside)
        checked_s = time.monotonic() - started - installed_s

        # The migration DAG of the doc's file, end to end on the bed.
        conf = {"tables": [table], "peer_id": peer, "sizing": False, "bulk_loads": "none", "recompare_sleep_s": 2,
                "stable_samples": 2, "expected_copy_s": 600}
        dag_started = time.monotonic()
        dag = run([str(venv / "bin" / "airflow"), "dags", "test", "hbase_table_migration", "-c", json.dumps(conf)],
                  env, outside, timeout=1500)
        dag_s = time.monotonic() - dag_started
        log = dag.stdout + dag.stderr
        (tmp_path / "dags-test.log").write_text(log)
        assert dag.returncode == 0, log[-4000:]
        comparison = compare_sides(dc1, dc2, table)
    finally:  # the bed is the session's: its peer would pin dc1's WALs for the rest of it
        realhbase.shell("dc1", f"remove_peer '{peer}'\ndisable '{table}'\ndrop '{table}'\n", args=())
        realhbase.shell("dc2", f"disable '{table}'\ndrop '{table}'\n", args=())
    assert comparison["differences"] == 0 and comparison["source_rows"] == 200, comparison
    assert comparison["source_cells"] == comparison["target_cells"] == 400, comparison
    # The tasks ran the venv's package: no module of the checkout in any traceback or log line.
    for room in ("hbase_migration", "operators", "jobs", "plugins"):
        assert f"{REPO / room}/" not in log, room
    jobs = venv / "lib" / "python3.11" / "site-packages" / "hbase_migration" / "jobs"
    assert f"{jobs}/copy_tables.py" in log and f"{jobs}/verify_tables.py" in log  # spark-submit's targets
    print(f"install test: wheel built and installed {installed_s:.0f} s (beside the table's creation), checks "
          f"{checked_s:.0f} s, DAG {dag_s:.0f} s, total {time.monotonic() - started:.0f} s")
