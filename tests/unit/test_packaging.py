"""The distribution's shape (pyproject.toml, docs/install.md): one top-level name, every package folder listed (a
new subpackage left out of the list would be missing from the wheel, not from the checkout), the entry points
Airflow reads, and the import names everything uses (scripts/rename-imports has nothing left to rewrite)."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_every_package_folder_is_in_the_distribution_under_one_top_level_name():
    mapping = {"hbase_migration": "hbase_migration", **SETUPTOOLS["package-dir"]}
    found = set()
    for name, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                found.add(".".join([name, *init.parent.relative_to(REPO / folder).parts]))
    listed = set(SETUPTOOLS["packages"])
    assert found - listed == set()
    assert listed - found == {"hbase_migration.sql"}  # data only: the ledger's SQL, found by path
    assert {name.split(".")[0] for name in listed} == {"hbase_migration"}
    assert set(SETUPTOOLS["package-dir"]) == {"hbase_migration.jobs", "hbase_migration.operators",
                                              "hbase_migration.plugins", "hbase_migration.sql"}


def test_entry_points_name_what_exists():
    import importlib

    project = PYPROJECT["project"]
    targets = [*project["entry-points"]["apache_airflow_provider"].values(),
               *project["entry-points"]["airflow.plugins"].values(), *project["scripts"].values()]
    for target in targets:
        module, attr = target.split(":")
        assert callable(getattr(importlib.import_module(module), attr)), target


def test_no_import_of_the_old_top_level_names_is_left():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "rename-imports"), "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "")


def test_the_rename_rewrites_module_paths_and_leaves_variables_alone():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import importlib.machinery
        import importlib.util

        loader = importlib.machinery.SourceFileLoader("rename_imports", str(REPO / "scripts" / "rename-imports"))
        spec = importlib.util.spec_from_loader("rename_imports", loader)
        rename = importlib.util.module_from_spec(spec)
        loader.exec_module(rename)
    finally:
        sys.path.pop(0)
    text = ("from operators.spark import X\nimport hbase_migration_provider as p\nfrom jobs import spark_job\n"
            "jobs.append(1)\nsetattr('operators.spark._Op.x')\npath = 'jobs/copy_table.py'\nnative_jobs.uses_native\n")
    assert rename.rewrite(text, rename.rules()) == (
        "from hbase_migration.operators.spark import X\nimport hbase_migration.operators.provider as p\n"
        "from hbase_migration.jobs import spark_job\njobs.append(1)\nsetattr('hbase_migration.operators.spark._Op.x')\n"
        "path = 'jobs/copy_table.py'\nnative_jobs.uses_native\n")
