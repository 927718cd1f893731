"""The CLI's input rules without a cluster: bad arguments are refused in one line `error: <what> — <how to fix>`
with exit 2 before any connection is read; the pure decisions behind the refusals (a copy onto itself, a
connection that does not describe a cluster, a check that could not be made) give exact answers."""
import argparse
import json
import logging
import re

import pytest

from hbase_migration.__main__ import main, usage_line
from hbase_migration.clusters.cluster import Cluster, ClusterConfigError
from hbase_migration.clusters.connections import parse_connection, resolve_cluster
from hbase_migration.data import jobargs
from hbase_migration.data.runner import onto_itself
from hbase_migration.data.scope import CopyConfigError, TableScope
from hbase_migration.migration.preflight import ClusterFacts, Facts, evaluate
from hbase_migration.migration.schema import FamilySchema, TableSchema

EXTRA = {"zookeeper_quorum": "zk1", "zookeeper_port": 2181, "znode_parent": "/hbase-dc1"}


def run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------------------------------------------ arguments
# Refused while parsing: no connection is resolved (none exists here), so these need no cluster.

@pytest.mark.parametrize("argv, fragment", [
    (["quota", "--source", "s", "--quota-mark", "5"],
     "argument --quota-mark: must be a fraction in (0, 1], got '5' — e.g. --quota-mark 0.8"),
    (["quota", "--source", "s", "--sample-gap-s", "-1"], "argument --sample-gap-s: must be a number of seconds"),
    (["lag", "--source", "s", "--peer-id", "p", "--max-lag-ms", "-5"], "argument --max-lag-ms: must be an integer"),
    (["lag", "--source", "s", "--peer-id", "p", "--stable-samples", "1"], "argument --stable-samples"),
    (["lag", "--source", "s", "--peer-id", "p", "--caught-up-queue-size", "17"], "one per WAL group"),
    (["lag", "--source", "s", "--peer-id", "p", "--interval-s", "nan"], "argument --interval-s"),
    (["lag", "--source", "s", "--peer-id", "mig-1"], "argument --peer-id: peer id 'mig-1' contains '-'"),
    (["peer", "remove", "--source", "s", "--peer-id", "lock"], "'lock' is reserved"),
    (["peer", "remove", "--source", "s"], "peer remove needs --peer-id — e.g. --peer-id mig1"),
    (["peer", "add", "--source", "s", "--peer-id", "p1"], "peer add needs --target and --tables"),
    (["freeze", "--source", "s", "--tables", "bad table!"], "argument --tables: table name 'bad table!'"),
    (["create-tables", "--source", "s", "--target", "t", "--tables", ","], "at least one table is required"),
    (["cluster", "--source", "a b"], "argument --source: 'a b' is not an Airflow connection id"),
    (["preflight", "--source", "s", "--target", "t", "--tables", "t1", "--peer-id", "p",
      "--expected-copy-s", "0"], "argument --expected-copy-s"),
    (["preflight", "--source", "s", "--target", "t", "--tables", "t1", "--peer-id", "p",
      "--safety-factor", "0.5"], "argument --safety-factor: must be a factor >= 1"),
    (["preflight", "--source", "s", "--target", "t", "--tables", "t1", "--peer-id", "p",
      "--bulk-loads", "never"], "argument --bulk-loads: must be 'replicated' or 'none', got 'never' — e.g. "
                                "--bulk-loads none"),
    (["metadata", "--source", "s", "--target", "t", "--tables", "t1", "--principal-map", "svc"],
     "argument --principal-map: 'svc' is not SOURCE=TARGET"),
    (["metadata", "--source", "s", "--tables", "t1"], "the following arguments are required: --target"),
    (["quota"], "the following arguments are required: --source"),
    (["lag", "--source", "s", "--peer-id", "p", "--nosuch"], "unrecognized arguments: --nosuch"),
    (["--log-level", "LOUD", "cluster", "--source", "s"], "argument --log-level"),
    (["copy", "--source", "s", "--target", "t", "--table", "w", "--workers", "0"],
     "argument --workers: must be a number of partitions at once >= 1, got '0' — e.g. --workers 4"),
    (["copy", "--source", "s", "--target", "t", "--table", "w", "--rows-per-s", "1e400"],
     "argument --rows-per-s: '1e400' is not a finite number"),
    (["verify", "--source", "s", "--target", "t", "--table", "w", "--start-time-ms", "2024-05-01T00:00"],
     "argument --start-time-ms: '2024-05-01T00:00' has no UTC offset"),
    (["copy", "--source", "s", "--target", "t"], "the following arguments are required: --table"),
])
def test_bad_arguments_are_one_line_usage_errors(argv, fragment, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no `airflow` to ask: nothing may be resolved at all
    rc, out, err = run(argv, capsys)
    assert rc == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " — " in lines[0], err
    assert fragment in lines[0], err
    assert "Traceback" not in err and not re.search(r"\w+(Error|Exception):", lines[0]), err  # no Python names


def test_a_message_without_its_fix_gets_one_and_stays_on_one_line():
    assert usage_line(ValueError("a\nb"), "copy") == "error: a b — see `python -m hbase_migration copy --help`"
    assert usage_line(ValueError("x — do y"), "copy") == "error: x — do y"


def test_job_parser_errors_are_usage_errors_naming_the_argument():
    with pytest.raises(jobargs.UsageError, match=r"argument --writers: invalid int value: 'x' — see `copy_table.py"):
        jobargs.copy_parser().parse_args(["--source", "s", "--target", "t", "--table", "w", "--writers", "x"])
    ns = jobargs.verify_parser().parse_args(["--source", "s", "--target", "t", "--table", "w", "--start-time-ms",
                                             "2024-05-01T00:00:00Z", "--end-time-ms", "1714608000000"])
    assert (ns.start_time_ms, ns.end_time_ms) == (1714521600000, 1714608000000)


# ------------------------------------------------------------------------------------------------ onto itself

def cluster(name, key_parent="/hbase-dc1", quorum="zk1", thrift=("t1", 9090), thrift2=()):
    return Cluster(name=name, thrift_host=thrift[0], thrift_port=thrift[1], zk_quorum=(quorum,),
                   znode_parent=key_parent, thrift2_servers=thrift2)


@pytest.mark.parametrize("case, target, scope, expected", [
    ("same cluster, same table", cluster("b"), dict(table="w"), True),
    ("same key spelled otherwise", cluster("b", "/hbase-dc1/", quorum="ZK1:2181"), dict(table="w"), True),
    ("default namespace spelled out", cluster("b"), dict(table="w", target_table="default:w"), True),
    ("another table (CopyTable --new.name)", cluster("b"), dict(table="w", target_table="w2"), False),
    ("every family renamed", cluster("b"), dict(table="w", families="d:e"), False),
    ("one family kept", cluster("b"), dict(table="w", families="d:e,f"), True),
    ("another cluster", cluster("b", "/hbase-dc2", thrift=("t2", 9090)), dict(table="w"), False),
    ("another key, same gateway", cluster("b", "/hbase-other"), dict(table="w"), True),
])
def test_a_copy_onto_itself_is_the_same_cluster_and_table(case, target, scope, expected):
    assert onto_itself(cluster("a"), target, TableScope(**scope)) is expected, case


def test_table_names_hbase_cannot_hold_are_refused_before_any_request():
    with pytest.raises(CopyConfigError, match="^table: table name 'bad table!' is not a valid HBase table name"):
        TableScope(table="bad table!")
    with pytest.raises(CopyConfigError, match="^target_table: "):
        TableScope(table="w", target_table="-w")


# ------------------------------------------------------------------------------------------------ connections

@pytest.mark.parametrize("text, fragment", [
    (json.dumps({"host": "h", "port": 9090, "extra": "{bad"}),
     "extra is not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
    (json.dumps({"host": "h", "port": 9090, "extra": "[1]"}), "extra must be a JSON object"),
    ('{"host": "h",', "connection JSON is malformed (Expecting property name"),
    ("[1]", "connection JSON must be an object, got list"),
    ("hbase://h:port/?zookeeper_quorum=zk", "connection URI's port is not a number: 'h:port'"),
    ("hbase://h:9090/?__extra__=%7Bbad", "the URI's __extra__ is not valid JSON"),
    (json.dumps({"host": "h", "port": 9090, "extra": {**EXTRA, "zookeeper_port": "abc"}}),
     "zookeeper_port must be an integer port, got 'abc'"),
])
def test_a_connection_that_is_no_cluster_names_itself_the_field_and_the_fix(text, fragment):
    with pytest.raises(ClusterConfigError) as e:
        resolve_cluster("src", environ={"AIRFLOW_CONN_SRC": text}, airflow_cli=False)
    message = str(e.value)
    assert message.startswith("connection 'src' (AIRFLOW_CONN_SRC): "), message
    assert fragment in message and message.endswith(" — fix it in AIRFLOW_CONN_SRC"), message
    assert "\n" not in message and "cluster 'src'" not in message


def test_parse_connection_keeps_its_forms():
    assert parse_connection(json.dumps({"host": "h", "port": 1, "extra": json.dumps(EXTRA)}))["extra"] == EXTRA
    assert parse_connection(json.dumps({"host": "h", "port": 1, "extra": ""}))["extra"] == {}


# ------------------------------------------------------------------------------------------------ preflight

def test_checks_over_a_table_absent_on_the_source_say_skip_and_why():
    fam = TableSchema("t1", True, (FamilySchema("d", {"REPLICATION_SCOPE": "1"}),))
    base = dict(target=ClusterFacts("t", "zk:2181:/b", "id-2", {}), peer_id="p", wanted_peer=None, bulk_loads="none")
    report = evaluate(Facts(source=ClusterFacts("s", "zk:2181:/a", "id-1", {"nosuch": None}), tables=("nosuch",),
                            **base), same_key=False)
    by_name = {r.name: r for r in report.results}
    for name in ("target_tables", "replication_scope"):
        assert by_name[name].severity == "skipped" and not by_name[name].ok
        assert by_name[name].reason == "not checked: nosuch not found on the source"
        assert f"[skip] {name}: not checked: nosuch not found on the source" in report.text()
    assert [r.name for r in report.failures] == ["source_tables"]  # skips neither pass nor fail

    partly = evaluate(Facts(source=ClusterFacts("s", "zk:2181:/a", "id-1", {"t1": fam, "nosuch": None}),
                            tables=("t1", "nosuch"), **base), same_key=False)
    scope = next(r for r in partly.results if r.name == "replication_scope")
    assert scope.ok and scope.reason.endswith("(not checked: nosuch, not found on the source)")


# ------------------------------------------------------------------------------------------------ a failed run

def test_only_a_disabled_peer_left_behind_is_an_error():
    from hbase_migration.operators.steps import peer_left

    assert peer_left("DISABLED", "src", "mig1")[0] == logging.ERROR
    assert "peer remove --source src --peer-id mig1" in peer_left("DISABLED", "src", "mig1")[1]
    assert peer_left("ENABLED", "src", "mig1")[0] == logging.WARNING
    assert peer_left("ABSENT", "src", "mig1") == (logging.INFO, "no peer is left behind")


def test_argparse_type_error_is_what_the_parser_reports():
    from hbase_migration.__main__ import PEER_ID

    with pytest.raises(argparse.ArgumentTypeError, match="— e.g. --peer-id mig1$"):
        PEER_ID("a.b")
