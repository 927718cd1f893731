"""The copy and verify Spark jobs on a Kerberized YARN (issue 30 part 4), client and cluster mode, against the
secured real clusters: `python -m realhbase up --secure --yarn` (HBase and HDFS Kerberized in DC1.TEST and DC2.TEST,
a ResourceManager and a NodeManager beside dc2 logged in as yarn/127.0.0.3@DC2.TEST, their web UIs and REST API
behind SPNEGO; realhbase/yarn.py).

The Airflow operators submit through SparkSubmitOperator with the `spark_yarn` (cluster) or `spark_yarn_client`
(client) connection `endpoints --json` gives: its extras name the principal (`--principal`) and the keytab's PATH
(`keytab_path`, which the toolkit's operators pass as `--keytab`). spark-submit logs in as hbase-migration@DC1.TEST
and obtains the HDFS delegation tokens of dc2's NameNode (across the trust) that the application's containers use;
the jobs themselves log in to HBase from the keytab shipped with `--files`: on the native path (`data_path: auto`
picks it), HBase's own client in the containers' JVMs, logged in from that keytab with the connection's krb5.conf
(not the node's, which the containers' JVMs are given). In cluster mode the operator defers once YARN has the
application, and its trigger polls the ResourceManager through SPNEGO. The submitting machine has what an
operator's has: HADOOP_CONF_DIR (dc2's Kerberized core-site and hdfs-site, the secured yarn-site), SPARK_CONF_DIR
(the bed's spark-defaults.conf) and a krb5.conf for spark-submit's JVM (SPARK_SUBMIT_OPTS here; /etc/krb5.conf on
a real host).

Verdicts: the summary names the YARN application and its containers; YARN's REST API, asked through SPNEGO as dc2's
hbase principal (not the toolkit's), says the application SUCCEEDED in one attempt, and answers 401 without
credentials; every version of every cell read back as each cluster's hbase principal through realhbase's own Thrift
client (no toolkit code) is the same on both sides. And a refusal: a keytab that does not hold the principal is
refused before anything reaches YARN.

A secured bed of its own (eight JVMs, a KDC, a SASL ZooKeeper, YARN) and four spark-submits of a minute or more:
`full`, run by `make test-yarn`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from deploy import spark_jvm
from tests.integration.test_realhbase_secure import _admin_thrift2, _every_version  # the admin's reads
from tests.integration.test_spark_yarn_realhbase import APPLICATION, CONNECTIONS
from tests.snapshot_bed import unique

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.full, pytest.mark.slow,
              pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
ROWS = 600
SPLITS = [b"r0150", b"r0300", b"r0450"]


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    from realhbase.testbed import RealHBase, processes

    bed = RealHBase(tmp_path_factory.mktemp("realhbase-secure-yarn"), secure=True, yarn=True, timeout=600)
    started = time.monotonic()
    try:
        bed.up()
    except BaseException:
        bed.down()
        raise
    print(f"\nup --secure --yarn in {time.monotonic() - started:.0f} s")
    yield bed
    survivors = bed.down()
    left = processes(bed.workdir)
    assert not survivors and not left, f"the secured YARN bed outlived its tests: {survivors or left}"


@pytest.fixture(scope="module")
def endpoints(bed):
    proc = subprocess.run([sys.executable, "-m", "realhbase", "endpoints", "--json", "--workdir", str(bed.workdir)],
                          capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def yarn_env(bed, endpoints, tmp_path, monkeypatch):
    """What an Airflow worker submitting to this YARN has (the plain YARN test's, plus spark-submit's krb5.conf)."""
    from hbase_migration.clusters import kerberos

    yarn = endpoints["yarn"]
    assert yarn and yarn["resourcemanager"]["alive"] and yarn["nodemanager"]["alive"], yarn
    monkeypatch.setenv("HADOOP_CONF_DIR", yarn["hadoop_conf_dir"])
    monkeypatch.setenv("SPARK_CONF_DIR", yarn["spark_conf_dir"])
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", " ".join(
        [*spark_jvm.FLAGS, "-Xmx256m", f"-Djava.security.krb5.conf={yarn['security']['krb5_conf']}"]))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("KRB5CCNAME", raising=False)  # spark-submit logs in from the keytab, no ticket cache
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(endpoints["clusters"]["dc1"]["connection"]))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps(endpoints["clusters"]["dc2"]["connection"]))
    for conn_id, conn in yarn["connections"].items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    kerberos.forget_krb5_conf()
    return yarn


# ------------------------------------------------------------------------------------------ the bed's own clients
def _create_and_load(bed, table: str) -> None:
    """The table on both clusters (4 regions on dc1, two families), ROWS rows of 3 versions with old explicit
    timestamps in `d` and one cell in `k` on dc1."""
    from realhbase.testbed import _thrift_modules

    _, T = _thrift_modules()
    for name in ("dc1", "dc2"):
        with _admin_thrift2(bed, name) as admin:
            admin.createTable(T.TTableDescriptor(
                tableName=T.TTableName(ns=b"default", qualifier=table.encode()),
                columns=[T.TColumnFamilyDescriptor(name=b"d", maxVersions=3),
                         T.TColumnFamilyDescriptor(name=b"k", maxVersions=1)]), SPLITS)
    with _admin_thrift2(bed, "dc1") as admin:
        for start in range(0, ROWS, 150):
            admin.putMultiple(table.encode(), [T.TPut(row=b"r%04d" % i, columnValues=[
                *(T.TColumnValue(family=b"d", qualifier=b"q", value=b"v%d-%d" % (i, ts), timestamp=ts)
                  for ts in (1000, 2000, 3000)),
                T.TColumnValue(family=b"k", qualifier=b"n", value=str(i).encode(), timestamp=5000)])
                for i in range(start, start + 150)])


def _rm(bed, yarn: dict, path: str) -> dict:
    """The ResourceManager's REST API through SPNEGO, as dc2's hbase service principal (realhbase's client)."""
    from realhbase import secure

    return secure.http(bed.workdir, "dc2", f"{yarn['resourcemanager']['web_ui']}/ws/v1/cluster/{path}", timeout=30)


def _execute(op) -> dict:
    """The operator's try as Airflow runs it: in cluster mode it defers once YARN has the application, and the
    trigger (here in this process, as the triggerer would run it) polls the Kerberized ResourceManager through
    SPNEGO until the application ends; then `execute_complete` reads the job's summary."""
    import asyncio

    from airflow.sdk.exceptions import TaskDeferred

    # without a task instance the summary's key is random each call: both halves of the try need the same one
    key = op.summary_key({})
    op.summary_key = lambda context: key
    context: dict = {}
    try:
        return op.execute(context)
    except TaskDeferred as deferred:
        trigger, resume = deferred.trigger, getattr(op, deferred.method_name)

    async def first_event():
        async for event in trigger.run():
            return event.payload

    event = asyncio.run(first_event())
    assert event["status"] == "SUCCEEDED", event
    return resume(context, event)


def _assert_ran_on_kerberized_yarn(bed, yarn: dict, summary: dict, mode: str) -> dict:
    """The job ran as a YARN application of the Kerberos user hbase-migration that YARN says SUCCEEDED (asked
    through SPNEGO), its executors (and in cluster mode its driver) in its containers."""
    spark = summary["spark"]
    assert spark and spark["master"] == "yarn" and spark["deploy_mode"] == mode, spark
    app_id = spark["application_id"]
    assert APPLICATION.match(app_id), spark
    suffix = app_id.split("_", 1)[1]
    assert spark["executors"], spark
    for executor in spark["executors"]:
        assert executor["container"].startswith(f"container_{suffix}_"), spark
        assert executor["code"].startswith(yarn["containers_dir"]), spark
    if mode == "cluster":
        assert spark["driver"]["container"].startswith(f"container_{suffix}_"), spark
    else:
        assert spark["driver"]["container"] is None, spark
    app = _rm(bed, yarn, f"apps/{app_id}")["app"]
    assert (app["applicationType"], app["finalStatus"], app["user"]) == ("SPARK", "SUCCEEDED", "hbase-migration"), app
    attempts = sorted((_rm(bed, yarn, f"apps/{app_id}/appattempts").get("appAttempts") or {}).get("appAttempt")
                      or [], key=lambda a: int(a["id"]))
    # YARN's attempts: a verification gets one; the copy keeps YARN's two (a first attempt lost under load is
    # resumed by the second). The summary is the last attempt's: in cluster mode its driver ran in that AM.
    assert 1 <= len(attempts) <= (1 if summary["job"] == "verify" else 2), attempts
    if mode == "cluster":
        assert spark["driver"]["container"] == attempts[-1]["containerId"], (spark, attempts)
    app["attempts"] = len(attempts)
    return app


# ------------------------------------------------------------------------------------------ tests
def test_endpoints_give_the_secured_yarn_in_the_plain_schema(bed, endpoints):
    yarn = endpoints["yarn"]
    assert set(yarn) >= {"cluster", "resourcemanager", "nodemanager", "hadoop_conf_dir", "spark_conf_dir",
                         "containers_dir", "container_logs_dir", "spark_conf", "connections", "security"}
    sec = yarn["security"]
    assert sec["principal"] == "hbase-migration@DC1.TEST" and Path(sec["keytab"]).is_file(), sec
    assert sec["resourcemanager_principal"] == "yarn/_HOST@DC2.TEST", sec
    assert sec["nodemanager_principal"] == "yarn/127.0.0.3@DC2.TEST", sec
    assert yarn["resourcemanager"]["web_ui"].startswith("http://127.0.0.3:"), yarn
    for conn_id, mode in (("spark_yarn", "cluster"), ("spark_yarn_client", "client")):
        extra = yarn["connections"][conn_id]["extra"]
        assert extra["deploy-mode"] == mode and extra["principal"] == sec["principal"], extra
        assert extra["keytab_path"] == sec["keytab"] and "keytab" not in extra, extra  # a path, never the key
    keytab_bytes = Path(sec["keytab"]).read_bytes()
    assert keytab_bytes[:1] == b"\x05"  # an MIT keytab, named by path only:
    text = json.dumps(endpoints)
    assert keytab_bytes.hex() not in text and keytab_bytes.decode("latin-1") not in text
    site = (Path(yarn["hadoop_conf_dir"]) / "yarn-site.xml").read_text()
    for key in ("yarn.resourcemanager.principal", "yarn.resourcemanager.keytab", "yarn.nodemanager.principal",
                "yarn.nodemanager.keytab", "yarn.resourcemanager.webapp.spnego-principal"):
        assert f"<name>{key}</name>" in site, key
    core = (Path(yarn["hadoop_conf_dir"]) / "core-site.xml").read_text()
    assert "<name>hadoop.security.authentication</name><value>kerberos</value>" in core
    # the REST API answers SPNEGO (the bed's hbase principal) and refuses the anonymous
    nodes = _rm(bed, yarn, "nodes?states=RUNNING")["nodes"]["node"]
    assert len(nodes) == 1, nodes
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{yarn['resourcemanager']['web_ui']}/ws/v1/cluster/apps", timeout=30)
    assert refused.value.code == 401, refused.value


@pytest.mark.parametrize("mode", ["client", "cluster"])
def test_copy_and_verify_on_kerberized_yarn(bed, endpoints, yarn_env, mode):
    from hbase_migration.operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

    yarn = yarn_env
    table = unique(f"kyarn_{mode}_")
    _create_and_load(bed, table)
    conn_id = CONNECTIONS[mode]
    started = time.monotonic()
    copy = HBaseCopyTableOperator(task_id=f"copy_{mode}", table=table, spark_conn_id=conn_id,
                                  copy_id=unique("kyarncopy-"), hold_switches=False)
    summary = _execute(copy)
    copy_s = time.monotonic() - started
    assert summary["failed_partitions"] == 0 and summary["copied_partitions"] == summary["partitions"] == 4, summary
    assert summary["rows"] == ROWS and summary["versions"] == "all", summary
    assert summary["data_path"] == "native", summary  # `auto`: the region servers answer HBase's RPC preamble
    copy_app = _assert_ran_on_kerberized_yarn(bed, yarn, summary, mode)

    started = time.monotonic()
    verify = HBaseVerifyTableOperator(task_id=f"verify_{mode}", table=table, spark_conn_id=conn_id,
                                      recompare_sleep_s=0)
    result = _execute(verify)
    verify_s = time.monotonic() - started
    assert result["identical"] is True, result
    assert (result["content_different"], result["only_in_source"], result["only_in_target"]) == (0, 0, 0), result
    assert result["source_rows"] == result["target_rows"] == ROWS, result
    assert result["data_path"] == "native", result
    verify_app = _assert_ran_on_kerberized_yarn(bed, yarn, result, mode)
    assert verify_app["id"] != copy_app["id"]

    source, target = sorted(_every_version(bed, "dc1", table)), sorted(_every_version(bed, "dc2", table))
    assert len(source) == ROWS * 4
    differences = len(set(source) ^ set(target))
    assert differences == 0 and target == source
    print(f"\n{mode} mode: copy {copy_app['id']} {copy_s:.0f} s ({copy_app['attempts']} attempt(s)), verify "
          f"{verify_app['id']} {verify_s:.0f} s, "
          f"{len(source)} cells each side, {differences} differences")


def test_a_keytab_without_the_principal_is_refused_before_yarn(bed, endpoints, yarn_env):
    """The Spark connection's principal with a keytab that does not hold it (dc1's hbase service keytab): the
    operator refuses before spark-submit, naming the keytab, the principal and the fix; YARN gets no application."""
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.operators.spark import HBaseVerifyTableOperator
    from realhbase import secure

    yarn = yarn_env
    before = (_rm(bed, yarn, "apps").get("apps") or {}).get("app") or []
    wrong = secure.keytab(bed.workdir, secure.hbase_principal("dc1"))
    verify = HBaseVerifyTableOperator(task_id="verify_wrong_keytab", table="kyarn_none", spark_conn_id="spark_yarn",
                                      keytab=wrong, recompare_sleep_s=0)
    with pytest.raises(AirflowFailException) as refused:
        verify.execute({})
    message = str(refused.value)
    assert f"keytab {wrong} does not hold hbase-migration@DC1.TEST" in message, message
    assert "spark_yarn" in message and "Fix:" in message and "ktadd" in message, message
    after = (_rm(bed, yarn, "apps").get("apps") or {}).get("app") or []
    assert len(after) == len(before), after
