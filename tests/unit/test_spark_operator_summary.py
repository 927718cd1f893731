"""The Spark operators' two channels to a driver that may run in any container (issue 30): the job's summary comes
back through the ledger under a key the task chose, and the job's code goes with it as one zip (--py-files). The
spark-submit itself is replaced here by a stand-in "driver" that does what the job's last lines do."""
from __future__ import annotations

import json
import zipfile

import pytest

# data_path named: `auto` would probe zk1's region servers (hbase_migration.operators.spark `_clusters`): I/O no
# unit test makes
CLUSTER = {"conn_type": "hbase", "host": "thrift.dc1", "port": 9090,
           "extra": {"zookeeper_quorum": "zk1", "zookeeper_port": 2181, "znode_parent": "/hbase",
                     "data_path": "thrift1"}}


@pytest.fixture
def connections(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(CLUSTER))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps({**CLUSTER, "host": "thrift.dc2"}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", url)
    return url


def fake_driver(monkeypatch, summary: dict | None, seen: dict, container=None) -> None:
    """spark-submit replaced: the shipped files put in the driver's working directory (a YARN container's, in
    `container`), the job's argv parsed as the job does, the summary kept where it is told to."""
    import os
    import shutil

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.data import jobargs
    from hbase_migration.data.progress import write_summary

    def execute(self, context):
        seen.update(py_files=self.py_files, env_vars=dict(self.env_vars or {}), argv=list(self.application_args),
                    files=self.files, jars=self.jars)
        with zipfile.ZipFile(self.py_files.split(",")[0]) as zf:
            seen["zip"] = set(zf.namelist())
        for f in (self.files or "").split(","):
            shutil.copy(f, container / os.path.basename(f))
        monkeypatch.chdir(container)
        ns = jobargs.verify_parser().parse_args(self.application_args)
        jobargs.summary_args_check(ns)
        jobargs.ledger_args(ns)
        seen["summary_ledger_url"] = ns.summary_ledger_url
        if summary is not None:
            assert write_summary(ns, "verify", json.dumps(summary), "verify_table") is None

    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)


def test_a_cluster_mode_driver_s_summary_reaches_the_task_through_the_ledger(connections, monkeypatch, tmp_path):
    from hbase_migration.data.jobargs import LEDGER_URL_FILE
    from hbase_migration.ledger.store import Ledger
    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    seen: dict = {}
    summary = {"identical": True, "level": "content", "spark": {"application_id": "application_1_0001",
                                                                 "deploy_mode": "cluster"}}
    fake_driver(monkeypatch, summary, seen, tmp_path)
    op = HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id="spark_yarn", py_files="extra.zip")
    assert op.execute({}) == summary
    argv = seen["argv"]
    key = argv[argv.index("--summary-key") + 1]
    assert key.startswith("verify/t/verify/") and argv[argv.index("--summary-ledger-url-file") + 1] == LEDGER_URL_FILE
    assert seen["summary_ledger_url"] == connections  # read from the file shipped with --files
    assert "--summary-file" not in argv  # no local path: the driver may be in a container on another host
    with Ledger.open(connections) as ledger:
        assert ledger.take_job_summary(key) is None  # taken by the task
    # the code goes with the job, the operator's own py_files after it; on YARN nothing of this checkout's path
    shipped, given = seen["py_files"].split(",")
    assert "hbase_migration" in shipped.rsplit("/", 1)[1] and given == "extra.zip"
    assert {"hbase_migration/jobs/copy_table.py", "hbase_migration/jobs/spark_job.py", "hbase_migration/data/runner.py",
            "hbase_migration/sql/queries.sql"} <= seen["zip"]
    assert not any(n.startswith("hbase_migration/operators/") for n in seen["zip"])  # Airflow's layer stays
    assert seen["env_vars"] == {"PYTHONPATH": ""}


def test_elsewhere_the_worker_s_interpreter_stays_the_job_s(connections, monkeypatch, tmp_path):
    """Its installed package with it: nothing of a checkout is put on the job's PYTHONPATH."""
    import sys

    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    seen: dict = {}
    fake_driver(monkeypatch, {"identical": True}, seen, tmp_path)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_local").execute({}) == {
        "identical": True}
    assert seen["env_vars"] == {"PYSPARK_PYTHON": sys.executable}


def test_a_job_that_kept_no_summary_fails_the_task(connections, monkeypatch, tmp_path):
    from airflow.sdk.exceptions import AirflowException

    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    fake_driver(monkeypatch, None, {}, tmp_path)
    with pytest.raises(AirflowException, match="verify of t failed"):
        HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_yarn").execute({})


SECRET = "s3cr3t-Pw"
PG_URL = f"postgresql+psycopg://migrator:{SECRET}@db.dc1.example:5432/ledger"


@pytest.mark.parametrize("kind", ["copy", "verify"])
def test_the_spark_submit_command_holds_no_password_the_url_goes_in_a_private_shipped_file(
        kind, connections, monkeypatch):
    """The house rule "no secret on a command line": `ps`, Spark's UI and YARN's application page show
    spark-submit's command; the ledger's URL (a PostgreSQL one with its password) goes with --files instead."""
    import os
    import stat

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.data.jobargs import LEDGER_URL_FILE
    from hbase_migration.operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", PG_URL)
    seen: dict = {}

    def execute(self, context):  # the command the provider's hook would run, and the file while the job runs
        seen["cmd"] = self._get_hook()._build_spark_submit_command(self.application)
        shipped = [f for f in self.files.split(",") if os.path.basename(f) == LEDGER_URL_FILE]
        assert len(shipped) == 1
        seen["path"], st = shipped[0], os.stat(shipped[0])
        seen["mode"], seen["owner"] = stat.S_IMODE(st.st_mode), st.st_uid
        seen["text"] = open(shipped[0], encoding="utf-8").read().strip()

    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)
    monkeypatch.setattr("hbase_migration.operators.spark._HBaseJobOperator._take_summary",
                        lambda self, url, key: {"identical": True, "failed_partitions": 0})
    if kind == "copy":
        op = HBaseCopyTableOperator(task_id="copy", table="t", copy_id="run-1", hold_switches=False,
                                    spark_conn_id="spark_local", files="/etc/other.conf")
    else:
        op = HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id="spark_local")
    op.execute({})
    cmd = seen["cmd"]
    assert not any(SECRET in part for part in cmd), cmd
    assert not any(part.startswith("postgresql") for part in cmd)
    assert cmd[cmd.index("--files") + 1].split(",")[-1] == seen["path"]
    assert cmd[cmd.index("--summary-ledger-url-file") + 1] == LEDGER_URL_FILE
    if kind == "copy":
        assert cmd[cmd.index("--ledger-url-file") + 1] == LEDGER_URL_FILE
        assert cmd[cmd.index("--files") + 1].startswith("/etc/other.conf,")  # the operator's own files stay
    assert (seen["mode"], seen["owner"], seen["text"]) == (0o600, os.getuid(), PG_URL)
    assert not os.path.exists(seen["path"]) and not os.path.exists(os.path.dirname(seen["path"]))  # removed after
    assert not any(SECRET in str(getattr(op, field, "")) for field in op.template_fields)  # the rendered fields


def test_the_snapshot_export_s_argv_names_the_file_not_the_url(connections):
    from hbase_migration.data.jobargs import LEDGER_URL_FILE
    from hbase_migration.operators.snapshot import HBaseSnapshotExportOperator

    op = HBaseSnapshotExportOperator(task_id="export", table="t", ledger_run_id="run-1")
    argv = op._prepare({"summary_ledger_url_file": LEDGER_URL_FILE, "summary_key": "k"})
    assert argv[argv.index("--ledger-url-file") + 1] == argv[argv.index("--summary-ledger-url-file") + 1] == (
        LEDGER_URL_FILE)
    assert "--ledger-url" not in argv and "--summary-ledger-url" not in argv


@pytest.mark.parametrize("kind, conn_id, given, attempts", [
    ("verify", "spark_yarn", None, "1"),  # a verdict (exit 1: rows differ) must not start a second verification
    ("verify", "spark_yarn", {"spark.yarn.maxAppAttempts": "3"}, "3"),  # the operator's own conf wins
    ("verify", "spark_local", None, None),  # not YARN: nothing to say
    ("copy", "spark_yarn", None, None),  # YARN's attempts: a second one resumes from the ledger
])
def test_on_yarn_a_verification_gets_one_application_attempt(kind, conn_id, given, attempts, connections,
                                                             monkeypatch):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

    seen: dict = {}
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: seen.update(conf=dict(self.conf or {})))
    monkeypatch.setattr("hbase_migration.operators.spark._HBaseJobOperator._take_summary",
                        lambda self, url, key: {"identical": True, "failed_partitions": 0})
    if kind == "copy":
        op = HBaseCopyTableOperator(task_id="copy", table="t", copy_id="run-1", hold_switches=False,
                                    spark_conn_id=conn_id, conf=given)
    else:
        op = HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id=conn_id, conf=given)
    op.execute({})
    assert seen["conf"].get("spark.yarn.maxAppAttempts") == attempts, seen["conf"]


def _kerberized_yarn(monkeypatch, tmp_path, extra: dict, keytab_path: bool = False) -> str:
    """Both clusters Kerberized with one keytab (the toolkit's), a Spark connection to a Kerberized YARN."""
    from tests.unit.clusters.test_security import keytab_bytes

    keytab = tmp_path / "keytabs" / "hbase-migration.keytab"
    keytab.parent.mkdir()
    keytab.write_bytes(keytab_bytes([("hbase-migration", "DC1.TEST", 2, 18)]))
    krb5 = tmp_path / "krb5.conf"
    krb5.write_text("[libdefaults]\n  default_realm = DC1.TEST\n")
    security = {"principal": "hbase-migration@DC1.TEST", "keytab": str(keytab), "krb5_conf": str(krb5),
                "hbase_principal": "hbase/_HOST@DC1.TEST"}
    for conn_id, host in (("HBASE_SOURCE", "thrift.dc1"), ("HBASE_TARGET", "thrift.dc2")):
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id}", json.dumps(
            {**CLUSTER, "host": host, "extra": {**CLUSTER["extra"], **security}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps({"conn_type": "spark", "host": "yarn", "extra": {
        "deploy-mode": "client", **extra, **({"keytab_path": str(keytab)} if keytab_path else {})}}))
    return str(keytab)


def test_on_a_kerberized_yarn_spark_submit_gets_principal_and_keytab_under_a_second_name(
        connections, monkeypatch, tmp_path):
    """The Spark connection's `principal` and `keytab_path` become --principal/--keytab. The same keytab also goes
    with --files (the jobs log in to HBase from it in the containers) and Spark refuses one file twice (a symbolic
    link too): --keytab names a hard link of another name in the task's private folder, removed after the job."""
    import os

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    keytab = _kerberized_yarn(monkeypatch, tmp_path, {"principal": "hbase-migration@DC1.TEST"}, keytab_path=True)
    seen: dict = {}

    def execute(self, context):
        seen["cmd"] = self._get_hook()._build_spark_submit_command(self.application)
        given = seen["cmd"][seen["cmd"].index("--keytab") + 1]
        seen["given"], seen["same_file"] = given, os.path.samefile(given, keytab) and not os.path.islink(given)

    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)
    monkeypatch.setattr("hbase_migration.operators.spark._HBaseJobOperator._take_summary",
                        lambda self, url, key: {"identical": True, "failed_partitions": 0})
    op = HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id="spark_yarn")
    op.execute({})
    cmd = seen["cmd"]
    assert cmd[cmd.index("--principal") + 1] == "hbase-migration@DC1.TEST"
    assert keytab in cmd[cmd.index("--files") + 1].split(",")
    assert os.path.basename(seen["given"]) == "spark-submit-hbase-migration.keytab" and seen["same_file"], seen
    assert not os.path.exists(seen["given"])  # removed with the task's folder
    assert (op.principal, op.keytab) == (None, None)  # the operator's own again: a second execute starts afresh
    op.execute({})
    assert seen["same_file"] and seen["given"] != cmd[cmd.index("--keytab") + 1], seen


@pytest.mark.parametrize("case", ["wrong keytab", "no keytab"])
def test_a_kerberized_yarn_s_bad_credentials_are_refused_before_spark_submit(case, connections, monkeypatch,
                                                                               tmp_path):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.operators.spark import HBaseVerifyTableOperator
    from tests.unit.clusters.test_security import keytab_bytes

    wrong = tmp_path / "other.keytab"
    wrong.write_bytes(keytab_bytes([("hbase/localhost", "DC1.TEST", 2, 18)]))
    _kerberized_yarn(monkeypatch, tmp_path, {"principal": "hbase-migration@DC1.TEST",
                                             **({"keytab_path": str(wrong)} if case == "wrong keytab" else {})})
    submitted = []
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.append(self))
    with pytest.raises(AirflowFailException) as refused:
        HBaseVerifyTableOperator(task_id="verify", table="t", spark_conn_id="spark_yarn").execute({})
    message = str(refused.value)
    if case == "wrong keytab":
        assert f"keytab {wrong} does not hold hbase-migration@DC1.TEST (it holds: hbase/localhost@DC1.TEST)" in (
            message), message
        assert "ktadd" in message
    else:
        assert "both a principal and a keytab are needed" in message and "keytab_path" in message, message
    assert "spark_yarn" in message and not submitted


def test_a_hash_verification_with_a_spark_connection_per_side_submits_a_job_beside_each_cluster(
        connections, monkeypatch, tmp_path):
    """verify_method hash and a Spark connection per side: two submissions, the source's side to its Spark, the
    target's to its, with one exchange key and one start, the source as the target's datacenter reaches it given to
    the target's; the task's result is the target's verdict. (spark-submit replaced by drivers that keep a summary.)"""
    import threading

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hbase_migration.data import jobargs
    from hbase_migration.data.progress import write_summary
    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE_WAN", json.dumps({**CLUSTER, "host": "wan-proxy.dc2"}))
    seen: dict[str, dict] = {}
    lock = threading.Lock()

    def execute(self, context):
        for f in (self.files or "").split(","):
            if f.endswith(jobargs.LEDGER_URL_FILE):
                monkeypatch.setattr(jobargs, "read_ledger_url_file", lambda flag, name: connections)
        ns = jobargs.verify_parser().parse_args(self.application_args)
        jobargs.hash_side_check(ns)
        ns.summary_ledger_url = connections
        with lock:
            seen[ns.hash_side] = {"conn_id": self._conn_id, "ns": ns}
        summary = ({"job": "verify", "hash_side": "source", "leaves": 3} if ns.hash_side == "source" else
                   {"job": "verify", "method": "hash", "identical": True, "level": "content", "source_rows": 1,
                    "target_rows": 1, "matching": 1, "content_different": 0, "only_in_source": 0,
                    "only_in_target": 0, "start_time_ms": None, "end_time_ms": 5})
        assert write_summary(ns, "verify", json.dumps(summary), "verify_table") is None

    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)
    op = HBaseVerifyTableOperator(task_id="verify", table="t", verify_method="hash", spark_conn_id="spark_local",
                                  spark_source_conn_id="spark_yarn", spark_target_conn_id="spark_local",
                                  source_remote_conn_id="hbase_source_wan", hash_leaf_bytes=4096)
    result = op.execute({})
    assert result["identical"] is True and result["method"] == "hash"
    src, tgt = seen["source"], seen["target"]
    assert (src["conn_id"], tgt["conn_id"]) == ("spark_yarn", "spark_local")
    assert src["ns"].exchange_key == tgt["ns"].exchange_key and src["ns"].started_ms == tgt["ns"].started_ms
    assert src["ns"].method == tgt["ns"].method == "hash" and src["ns"].hash_leaf_bytes == 4096
    assert src["ns"].source_remote is None and json.loads(tgt["ns"].source_remote)["thrift_host"] == "wan-proxy.dc2"


def test_the_native_data_path_s_jars_go_with_the_job(connections, monkeypatch, tmp_path):
    """Either cluster on the native path: its jars go with spark-submit --jars (a driver in a YARN container has no
    checkout), the operator's own jars after them; on the Thrift paths no jar is added."""
    from hbase_migration.data.datapath import native
    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    jars = [tmp_path / "hbase-migration-jvm.jar", tmp_path / "hbase-client.jar"]
    for jar in jars:
        jar.write_bytes(b"PK")
    monkeypatch.setenv(native.CLASSPATH_ENV, ":".join(map(str, jars)))
    seen: dict = {}
    fake_driver(monkeypatch, {"identical": True}, seen, tmp_path)
    HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_local").execute({})
    assert seen["jars"] is None
    for name in ("HBASE_SOURCE", "HBASE_TARGET"):
        conn = json.loads(__import__("os").environ[f"AIRFLOW_CONN_{name}"])
        conn["extra"]["data_path"] = "native"
        monkeypatch.setenv(f"AIRFLOW_CONN_{name}", json.dumps(conn))
    HBaseVerifyTableOperator(task_id="v", table="t", spark_conn_id="spark_yarn", jars="mine.jar").execute({})
    assert seen["jars"] == f"{jars[0]},{jars[1]},mine.jar"
