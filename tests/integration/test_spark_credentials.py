"""Spark executors log in from the keytab shipped with the job (spark-submit --files / SparkContext.addFile),
also where the connection's path does not exist on the executor's host: a real KDC, Spark local[2]."""
from __future__ import annotations

import os

import pytest

from bedkit.kdc import Kdc

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/krb5kdc"), reason="needs Debian's krb5-kdc")


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    kdc = Kdc(tmp_path_factory.mktemp("kdc")).start()
    yield kdc
    kdc.stop()


def executor_login(absent_keytab: str, absent_krb5_conf: str) -> dict:
    """Runs on an executor: the connection names paths that do not exist there."""
    from hbase_migration.clusters import kerberos
    from hbase_migration.clusters.security import Security

    kerberos.forget_krb5_conf()
    security = Security(principal="shipped@DC1.TEST", keytab=absent_keytab, krb5_conf=absent_krb5_conf)
    login = kerberos.login(security, "dc2")
    login.service_ticket("hbase/localhost@DC2.TEST", "dc2's region servers")
    return {"keytab": login.keytab, "krb5_conf": kerberos.krb5_conf_in_use(), "pid": os.getpid()}


def test_executors_find_the_shipped_keytab_and_krb5_conf_and_get_tickets_across_realms(kdc, spark, tmp_path):
    shipped_dir = tmp_path / "on-the-airflow-worker"
    keytab = kdc.keytab(["shipped@DC1.TEST"], shipped_dir / "dc1-migration.keytab")
    kdc.add_principal("hbase/localhost@DC2.TEST")
    conf = shipped_dir / "dc-krb5.conf"
    conf.write_text(kdc.krb5_conf.read_text())
    sc = spark.sparkContext
    sc.addFile(str(keytab))  # what --files / spark.files do for a submitted job
    sc.addFile(str(conf))
    absent = "/etc/security/keytabs-not-on-this-host"
    found = sc.parallelize([0, 1], 2).map(
        lambda _: executor_login(f"{absent}/dc1-migration.keytab", f"{absent}/dc-krb5.conf")).collect()
    for result in found:
        assert result["pid"] != os.getpid()  # ran in a Python worker, not the driver
        assert result["keytab"].endswith("/dc1-migration.keytab") and not result["keytab"].startswith(absent)
        assert result["keytab"] != str(keytab)  # Spark's copy, not the original
        assert result["krb5_conf"].endswith("/dc-krb5.conf") and result["krb5_conf"] != str(conf)
