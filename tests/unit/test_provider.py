"""The `hbase` connection type, registered the provider way: the entry point's provider info is valid for
Airflow, its form fields are exactly the extras the toolkit reads, and Airflow (the installed distribution,
`make bootstrap`) lists the type, its hook and its fields."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import jsonschema
import pytest

import hbase_migration.operators.provider as provider
from hbase_migration.clusters.cluster import EXTRAS, Cluster
from hbase_migration.clusters.connections import cli_json
from hbase_migration.operators.hooks import HBaseClusterHook

REPO = Path(__file__).resolve().parents[2]


def test_provider_info_is_valid_for_airflow():
    import airflow

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = provider.get_provider_info()
    jsonschema.validate(info, schema)
    [conn_type] = info["connection-types"]
    assert (conn_type["connection-type"], conn_type["hook-class-name"]) == (
        "hbase", "hbase_migration.operators.hooks.HBaseClusterHook")
    assert conn_type["hook-name"] == HBaseClusterHook.hook_name and HBaseClusterHook.conn_type == "hbase"
    version = next(line.split('"')[1] for line in (REPO / "pyproject.toml").read_text().splitlines()
                   if line.startswith("version = "))
    assert info["versions"] == [version]


def test_form_fields_are_exactly_the_extras_the_toolkit_reads():
    fields = provider.CONN_FIELDS
    assert set(fields) == set(EXTRAS)
    # The form's defaults are the toolkit's own, so a connection saved with them reads as the defaults.
    defaults = {name: f["schema"]["default"] for name, f in fields.items() if "default" in f["schema"]}
    built = Cluster.from_connection("c", "thrift", 9090, {**defaults, "zookeeper_quorum": "zk1"})
    assert built == Cluster.from_connection("c", "thrift", 9090, {"zookeeper_quorum": "zk1"})
    # What the form stores for fields left empty (null) is ignored, not refused.
    empty = {name: None for name in fields}
    assert Cluster.from_connection("c", "thrift", None, {**empty, "zookeeper_quorum": "zk1"}).zk_port == 2181
    assert HBaseClusterHook.get_ui_field_behaviour()["hidden_fields"] == ["schema", "login", "password"]


def test_the_entry_point_is_installed():
    found = [ep for ep in entry_points(group="apache_airflow_provider") if ep.dist.name == "hbase-migration"]
    if not found:
        pytest.fail("the hbase-migration provider is not installed: run `make bootstrap`")
    assert found[0].value == "hbase_migration.operators.provider:get_provider_info"


def airflow_json(*args: str):
    env = {**os.environ, "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO)}
    done = subprocess.run([str(Path(sys.executable).parent / "airflow"), *args, "-o", "json"], capture_output=True,
                          text=True, timeout=120, env=env, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    return cli_json(done.stdout)


def test_airflow_lists_the_connection_type_its_hook_and_its_fields():
    hooks = [h for h in airflow_json("providers", "hooks") if h["connection_type"] == "hbase"]
    assert hooks == [{"connection_type": "hbase", "class": "hbase_migration.operators.hooks.HBaseClusterHook",
                      "conn_id_attribute_name": "hbase_conn_id", "package_name": "hbase-migration",
                      "hook_name": "HBase cluster (migration toolkit)"}]
    widgets = {w["connection_parameter_name"]: w["field_type"] for w in airflow_json("providers", "widgets")
               if w["package_name"] == "hbase-migration"}
    assert widgets == {f"extra__hbase__{name}": f["schema"]["type"] for name, f in provider.CONN_FIELDS.items()}
    assert {"field_behaviours": "hbase"} in airflow_json("providers", "behaviours")
