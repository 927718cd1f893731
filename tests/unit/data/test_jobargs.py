"""hbase_migration/data/jobargs.py: cluster descriptions, options from the command line, argv builders for Airflow."""
from __future__ import annotations

import json
import zipfile

import pytest

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.data import jobargs as job_args
from hbase_migration.data.jobargs import UsageError, cluster_from_text

CONN = {"conn_type": "hbase", "host": "thrift.dc1", "port": 9091,
        "extra": {"zookeeper_quorum": "zk1,zk2", "zookeeper_port": 2182, "znode_parent": "/hbase-dc1"}}


def test_cluster_from_airflow_connection_json_uri_and_cluster_fields():
    c = cluster_from_text("source", json.dumps(CONN))
    assert (c.name, c.thrift_host, c.thrift_port, c.zk_quorum, c.zk_port, c.znode_parent) == (
        "source", "thrift.dc1", 9091, ("zk1", "zk2"), 2182, "/hbase-dc1")
    extra_as_text = dict(CONN, extra=json.dumps(CONN["extra"]))
    assert cluster_from_text("source", json.dumps(extra_as_text)) == c
    uri = cluster_from_text("target", "hbase://thrift.dc2:9090?zookeeper_quorum=zkb&znode_parent=%2Fhbase")
    assert (uri.thrift_host, uri.thrift_port, uri.zk_quorum, uri.znode_parent) == (
        "thrift.dc2", 9090, ("zkb",), "/hbase")
    fields = cluster_from_text("x", json.dumps({"thrift_host": "h", "thrift_port": 1234, "zk_quorum": "a,b"}))
    assert (fields.name, fields.thrift_port, fields.zk_quorum) == ("x", 1234, ("a", "b"))
    # the wire form the operators pass is the same cluster on the other side
    assert cluster_from_text("source", json.dumps(c.to_dict())) == c
    assert Cluster.from_dict(json.loads(json.dumps(uri.to_dict()))) == uri


def test_cluster_from_a_connection_id_in_the_environment(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(CONN))
    assert cluster_from_text("source", "hbase_source").thrift_host == "thrift.dc1"
    monkeypatch.delenv("AIRFLOW_CONN_HBASE_SOURCE")
    with pytest.raises(UsageError, match="--source: connection 'hbase_source' not found"):
        cluster_from_text("source", "hbase_source")


@pytest.mark.parametrize("text, message", [
    ("", "--source: a cluster description is required"),
    ("{bad json", "--source: not valid JSON"),
    ("[1]", "--source: expected a JSON object"),
    (json.dumps({"host": "h", "extra": {}}), "--source: .*zookeeper_quorum' is required"),
    (json.dumps({"thrift_host": "h", "zk_quorum": "z", "colour": 1}), "--source: unknown cluster field\\(s\\) colour"),
    (json.dumps({"thrift_host": "h", "zk_quorum": "z", "thrift_port": 0}), "--source: .*port must be within"),
])
def test_bad_cluster_descriptions_name_the_argument(text, message):
    with pytest.raises(UsageError, match=message):
        cluster_from_text("source", text)


def parse_copy(*argv):
    return job_args.copy_parser().parse_args(["--source", "s", "--target", "t", "--table", "tbl", *argv])


def test_copy_options_from_the_command_line():
    ns = parse_copy("--target-table", "tbl2", "--start-row", "a\\x00", "--stop-row", "z", "--start-time-ms", "10",
                    "--end-time-ms", "20", "--families", "cf1", "src:dst", "--versions", "3", "--writers", "6",
                    "--rows-per-s", "100.5", "--options-json", '{"pipeline": 3, "scan_batch_rows": 50}')
    o = job_args.copy_options(ns)
    assert (o.table, o.target_table, o.start_row, o.stop_row, o.start_time_ms, o.end_time_ms) == (
        "tbl", "tbl2", b"a\x00", b"z", 10, 20)
    assert o.families == ((b"cf1", b"cf1"), (b"src", b"dst"))
    assert (o.versions, o.writers, o.rows_per_s, o.pipeline, o.scan_batch_rows) == (3, 6, 100.5, 3, 50)


@pytest.mark.parametrize("argv, message", [
    (["--start-time-ms", "20", "--end-time-ms", "10"], "start_time_ms 20 must be < end_time_ms 10"),
    (["--options-json", "[1]"], "--options-json: expected a JSON object"),
    (["--options-json", "{x"], "--options-json: not valid JSON"),
    (["--options-json", '{"speed": 1}'], "unknown option\\(s\\) speed"),
    (["--families", "a:"], "empty target family"),
    (["--writers", "0"], "writers must be a positive integer"),
])
def test_bad_copy_options_are_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message):
        job_args.copy_options(parse_copy(*argv))


def test_malformed_command_line_exits_2(capsys):
    from hbase_migration.data.runner import job_main

    with pytest.raises(job_args.UsageError, match="--source"):
        job_args.copy_parser().parse_args(["--table", "t"])
    assert job_main("copy", ["--table", "t"], make_executor=None) == 2
    err = capsys.readouterr().err
    assert err.startswith("copy_table: error: the following arguments are required: --source, --target — ")
    assert len(err.splitlines()) == 1


def test_verify_options_compare_every_timestamp_without_an_end_time():
    ns = job_args.verify_parser().parse_args(["--source", "s", "--target", "t", "--table", "tbl", "--repair",
                                              "--recompare-sleep-s", "2.5", "--level", "content"])
    o = job_args.verify_options(ns)
    # no cutoff at the job's start: cells with future timestamps are compared too
    assert (o.end_time_ms, o.repair, o.recompare_sleep_s, o.level) == (None, True, 2.5, "content")
    ns = job_args.verify_parser().parse_args(["--source", "s", "--target", "t", "--table", "tbl",
                                              "--end-time-ms", "5"])
    assert job_args.verify_options(ns).end_time_ms == 5


def test_spark_conf_pairs():
    assert job_args.spark_conf(["a.b=1", "c= x=y"]) == {"a.b": "1", "c": " x=y"}
    with pytest.raises(UsageError, match="--conf: expected KEY=VALUE, got 'novalue'"):
        job_args.spark_conf(["novalue"])


def test_copy_job_args_round_trip_through_the_parser():
    argv = job_args.copy_job_args("src", "tgt", "tbl", target_table="tbl2", start_time_ms=5,
                                  end_time_ms=7, families=["a", "b:c"], versions=2, rows_per_s=50,
                                  rows_per_partition=1000, copy_id="run-1", savepoint="/tmp/sp.json",
                                  options={"writers": 8})
    assert argv == ["--source", "src", "--target", "tgt", "--table", "tbl", "--target-table", "tbl2",
                    "--start-time-ms", "5", "--end-time-ms", "7", "--families", "a,b:c",
                    "--versions", "2", "--rows-per-partition", "1000", "--options-json", '{"writers": 8}',
                    "--rows-per-s", "50", "--copy-id", "run-1", "--savepoint", "/tmp/sp.json"]
    ns = job_args.copy_parser().parse_args(argv)
    o = job_args.copy_options(ns)
    assert (o.target_table, o.families, o.versions, o.writers, o.rows_per_partition, o.rows_per_s) == (
        "tbl2", ((b"a", b"a"), (b"b", b"c")), 2, 8, 1000, 50)


def test_verify_job_args():
    assert job_args.verify_job_args("s", "t", "tbl", end_time_ms=9, recompare_sleep_s=5, repair=True,
                                    level="content", sample_limit=3) == [
        "--source", "s", "--target", "t", "--table", "tbl", "--end-time-ms", "9", "--recompare-sleep-s", "5",
        "--sample-limit", "3", "--repair"]
    assert job_args.verify_job_args("s", "t", "tbl", level="rows")[-2:] == ["--level", "rows"]


def test_package_zip_holds_the_library(tmp_path):
    from hbase_migration.data.executors import package_zip

    with zipfile.ZipFile(package_zip(dest_dir=str(tmp_path))) as zf:
        names = set(zf.namelist())
    assert {"hbase_migration/__init__.py", "hbase_migration/data/copy.py", "hbase_migration/data/verify.py",
            "hbase_migration/data/datapath/__init__.py", "hbase_migration/data/datapath/thrift1.py",
            "hbase_migration/data/runner.py"} <= names
    assert not any(n.startswith("jobs/") for n in names)
    assert not any("__pycache__" in n for n in names)
    # each module compiled beside its source (zipimport prefers name.pyc): executors import without compiling
    assert {n + "c" for n in names if n.endswith(".py")} <= names


def test_a_package_imports_from_its_zip_through_the_compiled_modules(tmp_path):
    import subprocess
    import sys

    from hbase_migration.data.executors import package_zip

    path = package_zip(dest_dir=str(tmp_path))
    code = (f"import sys; sys.path.insert(0, {path!r}); import hbase_migration.data.rowdiff as m, "
            "hbase_migration.clusters.idl as t; t.hbase2(); print(m.__file__)")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(tmp_path)).stdout.strip()
    assert out == f"{path}/hbase_migration/data/rowdiff.pyc"  # and the IDL loads from the zip too
