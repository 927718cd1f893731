import json

import pytest

from hbase_migration.clusters.cluster import ClusterConfigError
from hbase_migration.clusters.connections import ConnectionNotFound, parse_connection, resolve_cluster

EXTRA = {"zookeeper_quorum": "127.0.0.1", "zookeeper_port": 2181, "znode_parent": "/hbase-dc1"}


def test_json_form():
    text = json.dumps({"conn_type": "hbase", "host": "127.0.0.1", "port": 9090, "extra": EXTRA})
    assert parse_connection(text) == {"conn_type": "hbase", "host": "127.0.0.1", "port": 9090, "extra": EXTRA}


def test_json_form_with_extra_as_string():
    text = json.dumps({"conn_type": "hbase", "host": "h", "port": 1, "extra": json.dumps(EXTRA)})
    assert parse_connection(text)["extra"] == EXTRA


def test_uri_form_query_params_are_extras():
    fields = parse_connection("hbase://thrift.dc1:9090/?zookeeper_quorum=zk1%2Czk2&znode_parent=%2Fhbase")
    assert fields == {
        "conn_type": "hbase",
        "host": "thrift.dc1",
        "port": 9090,
        "extra": {"zookeeper_quorum": "zk1,zk2", "znode_parent": "/hbase"},
    }


def test_uri_form_with_json_extra():
    from urllib.parse import quote

    fields = parse_connection("hbase://h:9090/?__extra__=" + quote(json.dumps(EXTRA)))
    assert fields["extra"] == EXTRA


def test_resolve_from_environment_by_airflow_naming():
    env = {"AIRFLOW_CONN_HBASE_SOURCE": json.dumps({"host": "h", "port": 9090, "extra": EXTRA})}
    cluster = resolve_cluster("hbase_source", environ=env, airflow_cli=False)
    assert cluster.name == "hbase_source"
    assert str(cluster.cluster_key) == "127.0.0.1:2181:/hbase-dc1"


def test_missing_connection_names_the_variable():
    with pytest.raises(ConnectionNotFound, match="AIRFLOW_CONN_NOPE"):
        resolve_cluster("nope", environ={}, airflow_cli=False)


def test_malformed_values_are_clear_errors():
    with pytest.raises(ClusterConfigError, match="malformed"):
        parse_connection("{not json")
    with pytest.raises(ClusterConfigError, match="no scheme"):
        parse_connection("just-a-host")


def test_cli_json_skips_what_airflow_prints_before_the_document():
    from hbase_migration.clusters.connections import cli_json

    out = ('[2026-11-23T19:00:00] {configuration.py:123} WARNING - option is deprecated\n'
           '[{"conn_id": "hbase_source", "host": "t", "extra_dejson": {"zookeeper_quorum": "zk"}}]\n')
    assert cli_json(out) == [{"conn_id": "hbase_source", "host": "t", "extra_dejson": {"zookeeper_quorum": "zk"}}]
    assert cli_json('{"a": 1}') == {"a": 1}
    with pytest.raises(ClusterConfigError, match="no JSON in the output"):
        cli_json("WARNING only\n")
