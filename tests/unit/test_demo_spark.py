"""demo.run's `--spark` option (local, or the test bed's YARN in cluster or client mode): what `airflow dags test`
is given for the DAG's Spark connection, and the bad combinations refused before anything is touched."""
from __future__ import annotations

import json

import pytest

from demo import run as demo

YARN = {"resourcemanager": {"web_ui": "http://127.0.0.1:8088", "alive": True}, "nodemanager": {"alive": True},
        "hadoop_conf_dir": "/bed/dc2/yarn/conf", "spark_conf_dir": "/bed/dc2/yarn/spark-conf",
        "connections": {"spark_yarn": {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}},
                        "spark_yarn_client": {"conn_type": "spark", "host": "yarn",
                                              "extra": {"deploy-mode": "client"}}}}


def test_local_spark_is_local_cores():
    env, summary = demo.spark_settings("local", 3, {"clusters": {}})
    assert env == {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[3]"})}
    assert summary == {"mode": "local", "master": "local[3]"}


@pytest.mark.parametrize("spark, conn_id, mode", [("yarn", "spark_yarn", "cluster"),
                                                  ("yarn-client", "spark_yarn_client", "client")])
def test_yarn_takes_the_beds_connection_and_conf_dirs(spark, conn_id, mode):
    env, summary = demo.spark_settings(spark, 2, {"clusters": {}, "yarn": YARN})
    assert env == {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(YARN["connections"][conn_id]),
                   "HADOOP_CONF_DIR": "/bed/dc2/yarn/conf", "SPARK_CONF_DIR": "/bed/dc2/yarn/spark-conf"}
    assert summary == {"mode": "yarn", "deploy_mode": mode, "connection": conn_id,
                       "resourcemanager": "http://127.0.0.1:8088"}


@pytest.mark.parametrize("described", [{"clusters": {}},
                                       {"clusters": {}, "yarn": {**YARN, "nodemanager": {"alive": False}}}])
def test_yarn_on_a_bed_without_it_is_refused(described):
    with pytest.raises(demo.UsageError, match=r"--spark yarn: the test bed runs no YARN .* realhbase up --yarn"):
        demo.spark_settings("yarn", 2, described)


def test_a_kerberized_yarn_names_its_principals_and_goes_with_secure_on_real_hbase():
    secured = {**YARN, "security": {"principal": "hbase-migration@DC1.TEST", "krb5_conf": "/bed/krb5.conf"},
               "connections": {"spark_yarn": {"conn_type": "spark", "host": "yarn", "extra": {
                   "deploy-mode": "cluster", "principal": "hbase-migration@DC1.TEST",
                   "keytab_path": "/bed/keytabs/hbase-migration.keytab",
                   "yarn_spnego_principal": "HTTP/_HOST@DC2.TEST"}}}}
    env, summary = demo.spark_settings("yarn", 2, {"clusters": {}, "yarn": secured})
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == secured["connections"]["spark_yarn"]
    assert summary["kerberos"] == {"principal": "hbase-migration@DC1.TEST",
                                   "yarn_spnego_principal": "HTTP/_HOST@DC2.TEST"}
    for spark in ("yarn", "yarn-client"):
        demo.check_spark(spark, cluster=False, stand_in=False, secure=True)  # realhbase up --secure --yarn


@pytest.mark.parametrize("flags, reason", [(["--cluster"], "standalone"), (["--stand-in"], "minihbase"),
                                           (["--stand-in", "--secure"], "minihbase")])
def test_yarn_with_an_option_it_cannot_go_with_exits_2_in_one_line(tmp_path, capsys, flags, reason):
    workdir = tmp_path / "demo"
    workdir.mkdir()
    (workdir / "kept").write_text("x")
    assert demo.main(["--spark", "yarn", *flags, "--workdir", str(workdir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"demo.run: error: --spark yarn cannot go with {flags[0]}"), err
    assert reason in err[0]
    assert (workdir / "kept").read_text() == "x"  # refused before the workdir was touched
