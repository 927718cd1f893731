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


def test_cluster_from_a_connection_id_in_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(CONN))
    assert cluster_from_text("source", "hbase_source").thrift_host == "thrift.dc1"
    monkeypatch.delenv("AIRFLOW_CONN_HBASE_SOURCE")
    # no `airflow` on PATH: the fallback to Airflow's database is test_cli_airflow_connections' (here it costs a
    # minute of CLI start under make test's load, to find nothing)
    monkeypatch.setenv("PATH", str(tmp_path))
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
    # what executors import: the library alone, none of the rooms the distribution maps under it but its SQL
    assert not any(n.startswith(("jobs/", "hbase_migration/jobs/", "hbase_migration/operators/",
                                 "hbase_migration/plugins/", "sql/")) for n in names)
    assert {"hbase_migration/sql/queries.sql", "hbase_migration/sql/schema/001_initial.sql",
            "hbase_migration/sql/schema/007_job_summaries.sql"} <= names
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


def test_summary_args_round_trip_and_go_together(tmp_path):
    url_file = job_args.write_ledger_url_file("sqlite:////l.db", tmp_path)
    argv = job_args.verify_job_args("s", "t", "tbl", summary_ledger_url_file=url_file, summary_key="verify/t/1")
    assert argv[-4:] == ["--summary-ledger-url-file", url_file, "--summary-key", "verify/t/1"]
    ns = job_args.verify_parser().parse_args(argv)
    job_args.summary_args_check(ns)
    job_args.ledger_args(ns)
    assert (ns.summary_ledger_url, ns.summary_key, ns.summary_file) == ("sqlite:////l.db", "verify/t/1", None)
    argv = job_args.copy_job_args("s", "t", "tbl", copy_id="c", summary_file="/tmp/s.json",
                                  summary_ledger_url_file="url", summary_key="k")
    assert argv[-8:] == ["--copy-id", "c", "--summary-file", "/tmp/s.json", "--summary-ledger-url-file", "url",
                         "--summary-key", "k"]
    lone = job_args.copy_parser().parse_args(["--source", "s", "--target", "t", "--table", "x", "--summary-key", "k"])
    with pytest.raises(UsageError, match="--summary-ledger-url and --summary-key go together"):
        job_args.summary_args_check(lone)
    plain = job_args.verify_parser().parse_args(["--source", "s", "--target", "t", "--table", "x",
                                                 "--summary-ledger-url", "sqlite:////l.db", "--summary-key", "k"])
    job_args.summary_args_check(plain)
    job_args.ledger_args(plain)  # a URL without a password may still be given as such (the CLI)
    assert plain.summary_ledger_url == "sqlite:////l.db"


SECRET = "s3cr3t-Pw"
PG_URL = f"postgresql+psycopg://migrator:{SECRET}@db.dc1.example:5432/ledger?sslmode=require"


def test_no_argv_holds_the_ledger_s_password_only_the_name_of_the_file_that_holds_it(tmp_path):
    import os
    import stat

    path = job_args.write_ledger_url_file(PG_URL, tmp_path)
    name = os.path.basename(path)
    assert name == job_args.LEDGER_URL_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # whatever the umask
    assert open(path, encoding="utf-8").read() == PG_URL + "\n"
    with pytest.raises(FileExistsError):  # never written through an existing file or link
        job_args.write_ledger_url_file("other", tmp_path)
    from hbase_migration.data.snapshot_export import job_args as snapshot_job_args

    for argv in (
        job_args.copy_job_args("s", "t", "tbl", copy_id="c", ledger_url_file=name, summary_ledger_url_file=name,
                               summary_key="k"),
        job_args.verify_job_args("s", "t", "tbl", summary_ledger_url_file=name, summary_key="k"),
        snapshot_job_args("s", "t", "tbl", copy_id="c", ledger_url_file=name, summary_ledger_url_file=name,
                          summary_key="k"),
    ):
        assert not any(SECRET in arg for arg in argv), argv
        assert argv[argv.index("--summary-ledger-url-file") + 1] == name
    copy = job_args.copy_job_args("s", "t", "tbl", copy_id="c", ledger_url_file=name)
    assert copy[-4:] == ["--copy-id", "c", "--ledger-url-file", name]


def test_the_job_reads_the_url_back_from_a_path_or_the_name_spark_localized(tmp_path, monkeypatch):
    path = job_args.write_ledger_url_file(PG_URL, tmp_path)
    argv = ["--source", "s", "--target", "t", "--table", "x", "--copy-id", "c"]
    ns = job_args.copy_parser().parse_args([*argv, "--ledger-url-file", path, "--summary-ledger-url-file", path,
                                            "--summary-key", "k"])
    job_args.ledger_args(ns)  # a path (the CLI, a driver on the submitting host given the path)
    assert ns.ledger_url == ns.summary_ledger_url == PG_URL
    monkeypatch.chdir(tmp_path)  # a YARN container: spark-submit's --files are in the working directory
    ns = job_args.copy_parser().parse_args([*argv, "--ledger-url-file", job_args.LEDGER_URL_FILE])
    job_args.ledger_args(ns)
    assert ns.ledger_url == PG_URL
    monkeypatch.chdir(tmp_path.parent)
    ns = job_args.copy_parser().parse_args([*argv, "--ledger-url-file", job_args.LEDGER_URL_FILE])
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    with pytest.raises(UsageError, match=f"--ledger-url-file: no file '{job_args.LEDGER_URL_FILE}' on this host, "
                                         "nor shipped with the Spark job — "):
        job_args.ledger_args(ns)
    (tmp_path / "empty").write_text("\n")
    ns = job_args.copy_parser().parse_args([*argv, "--ledger-url-file", str(tmp_path / "empty")])
    with pytest.raises(UsageError, match="must hold the ledger's SQLAlchemy URL on one line"):
        job_args.ledger_args(ns)


@pytest.mark.parametrize("flag", ["--ledger-url", "--summary-ledger-url"])
def test_a_url_with_a_password_on_the_command_line_is_refused_without_echoing_it(flag, capsys):
    from hbase_migration.data.runner import job_main

    argv = ["--source", "s", "--target", "t", "--table", "x", flag, PG_URL]
    argv += ["--summary-key", "k"] if flag == "--summary-ledger-url" else []
    assert job_main("copy", argv, lambda *a: pytest.fail("no executor for bad input")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"copy_table: error: {flag}: the URL holds a password, which a command line shows to every "
                       f"user of this host — put the URL in a file only you can read (chmod 600) and give "
                       f"{flag}-file, or leave the password out (libpq reads ~/.pgpass)")
    assert not any(SECRET in line for line in err)
    both = ["--source", "s", "--target", "t", "--table", "x", flag, "sqlite:////l.db", f"{flag}-file", "f"]
    with pytest.raises(UsageError, match=f"argument {flag}-file: not allowed with argument {flag}"):
        job_args.copy_parser().parse_args(both)


def test_the_summary_reaches_the_ledger_under_its_key(tmp_path, capsys):
    import argparse

    from hbase_migration.data.progress import write_summary
    from hbase_migration.ledger.store import Ledger

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ns = argparse.Namespace(summary_file=str(tmp_path / "s.json"), summary_ledger_url=url, summary_key="copy/t/1")
    assert write_summary(ns, "copy", '{"job": "copy", "rows": 3}', "copy_table") is None
    assert json.loads((tmp_path / "s.json").read_text()) == {"job": "copy", "rows": 3}
    with Ledger.open(url) as ledger:
        assert ledger.take_job_summary("copy/t/1") == {"job": "copy", "rows": 3}
        assert ledger.take_job_summary("copy/t/1") is None  # taken once
    # a ledger that cannot be opened: said on stderr, and the job is to exit 1 (the task would not know)
    ns = argparse.Namespace(summary_file=None, summary_ledger_url=f"sqlite:///{tmp_path / 'no' / 'l.db'}",
                            summary_key="k")
    error = write_summary(ns, "verify", "{}", "verify_table", retry_s=0)
    assert "the summary could not be kept in the ledger under 'k'" in error
    # its own line (the ledger's log lines may come before it when an earlier test configured logging)
    assert any(line.startswith("verify_table: error: the summary could not be kept")
               for line in capsys.readouterr().err.splitlines())


def test_the_operators_zip_runs_a_job_script_with_no_checkout_on_the_path(tmp_path):
    """What a driver in a YARN container has (cluster mode): the job script spark-submit localized, and the zip
    on PYTHONPATH. `jobs/copy_table.py` imports `hbase_migration.jobs`, and the ledger reads its SQL from the zip."""
    import os
    import shutil
    import subprocess
    import sys

    from hbase_migration.data.executors import package_zip

    path = package_zip(("hbase_migration", "hbase_migration.jobs"), dest_dir=str(tmp_path))
    with zipfile.ZipFile(path) as zf:
        assert {f"hbase_migration/{name}" for name in (
            "jobs/__init__.py", "jobs/spark_job.py", "jobs/copy_table.py", "jobs/verify_table.py",
            "jobs/snapshot_export.py", "sql/queries.sql")} <= set(zf.namelist())
    container = tmp_path / "container"
    container.mkdir()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    for script in ("copy_table.py", "verify_table.py"):
        shutil.copy(os.path.join(repo, "jobs", script), container / script)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = path
    for script in ("copy_table.py", "verify_table.py"):
        proc = subprocess.run([sys.executable, script, "--table", "t"], capture_output=True, text=True,
                              cwd=str(container), env=env)
        # before the fix: ModuleNotFoundError: No module named 'jobs'
        assert proc.returncode == 2, proc.stderr
        assert "error: the following arguments are required: --source, --target" in proc.stderr
    code = ("import hbase_migration.ledger.store as s, hbase_migration.jobs.spark_job as j; "
            f"ledger = s.Ledger.open('sqlite:///{container / 'l.db'}'); ledger.put_job_summary('k', 'copy', '{{}}'); "
            "print(type(s.SQL_DIR).__module__, j.__file__, ledger.take_job_summary('k'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(container),
                         env=env, check=True).stdout.split()
    assert out == ["zipfile", f"{path}/hbase_migration/jobs/spark_job.pyc", "{}"]


def test_the_snapshot_export_and_the_switches_command_refuse_it_too(capsys):
    from hbase_migration.__main__ import main
    from hbase_migration.data.snapshot_export import export_main

    argv = ["--source", "s", "--target", "t", "--table", "x", "--ledger-url", PG_URL]
    assert export_main(argv, lambda *a: pytest.fail("no executor"), prog="snapshot_export.py", job=True) == 2
    assert main(["switches", "--source", "s", "--ledger-url", PG_URL]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith("snapshot_export.py: error: --ledger-url: the URL holds a password")
    assert err[-1].startswith("error: --ledger-url: the URL holds a password")
    assert "give it in HBASE_MIGRATION_LEDGER_URL" in err[-1]
    assert not any(SECRET in line for line in err)
