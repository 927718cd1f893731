"""realhbase's YARN configuration (realhbase/yarn.py): what spark-submit and the daemons read, written exactly."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from realhbase import yarn

PORTS = {name: 40000 + i for i, name in enumerate(yarn.PORT_NAMES)}


def _props(path) -> dict[str, str]:
    return {p.findtext("name"): p.findtext("value") for p in ET.parse(path).getroot().iter("property")}


def test_the_conf_dir_spark_submit_and_the_daemons_read(tmp_path):
    conf = tmp_path / "dc2" / "conf"
    conf.mkdir(parents=True)
    for name in ("core-site.xml", "hdfs-site.xml"):
        (conf / name).write_text(f"<configuration><!-- {name} --></configuration>\n")
    (conf / "log4j2.properties").write_text("status = warn\n")
    written = yarn.write_conf(tmp_path, PORTS)
    assert written == tmp_path / "dc2" / "yarn" / "conf"
    assert sorted(p.name for p in written.iterdir()) == [
        "capacity-scheduler.xml", "core-site.xml", "hdfs-site.xml", "log4j2.properties", "yarn-site.xml"]
    assert (written / "core-site.xml").read_text() == (conf / "core-site.xml").read_text()  # dc2's HDFS
    site = _props(written / "yarn-site.xml")
    assert site["yarn.resourcemanager.address"] == f"127.0.0.1:{PORTS['rm']}"
    assert site["yarn.resourcemanager.webapp.address"] == f"127.0.0.1:{PORTS['rm_web']}"
    assert (site["yarn.nodemanager.resource.memory-mb"], site["yarn.scheduler.minimum-allocation-mb"],
            site["yarn.nodemanager.vmem-check-enabled"]) == ("4096", "256", "false")
    assert site["yarn.nodemanager.local-dirs"] == str(tmp_path / "dc2" / "yarn" / "local")
    # a Spark AM (512 MiB + 384 MiB overhead) fits under the AM share of the one queue
    assert _props(written / "capacity-scheduler.xml")[
        "yarn.scheduler.capacity.maximum-am-resource-percent"] == "0.5"
    defaults = (tmp_path / "dc2" / "yarn" / "spark-conf" / "spark-defaults.conf").read_text().splitlines()
    settings = dict(line.split(" ", 1) for line in defaults if line and not line.startswith("#"))
    assert settings["spark.yarn.jars"].startswith("local:/") and settings["spark.yarn.jars"].endswith("/jars/*")
    assert (settings["spark.driver.memory"], settings["spark.executor.memory"], settings["spark.yarn.am.memory"]) == (
        "512m", "512m", "512m")
    assert "spark.yarn.submit.waitAppCompletion" not in settings  # the provider's durable mode sets it per submit


def test_java_home_is_the_test_beds_java(monkeypatch, tmp_path):
    """The NodeManager starts containers with $JAVA_HOME/bin/java: the JDK behind the test bed's `java` link."""
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_text("")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(tmp_path / "jdk" / "bin" / "java")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert yarn.java_home(str(tmp_path / "bin" / "java")) == str((tmp_path / "jdk").resolve())
    monkeypatch.setenv("JAVA_HOME", "/opt/jdk")
    assert yarn.java_home(str(tmp_path / "bin" / "java")) == "/opt/jdk"


def test_the_secured_conf_dir_kerberizes_the_daemons_and_names_the_krb5_conf(tmp_path):
    """`up --secure --yarn`: on dc2's server address, the daemons' principals and keytabs in DC2.TEST, the web UIs
    behind SPNEGO there, dc2's Kerberized core-site with that SPNEGO principal, dc2's krb5.conf for every JVM."""
    conf = tmp_path / "dc2" / "conf"
    conf.mkdir(parents=True)
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>hadoop.security.authentication</name><value>kerberos</value></property>"
        "<property><name>hadoop.http.authentication.kerberos.principal</name><value>HTTP/localhost@DC2.TEST"
        "</value></property></configuration>\n")
    (conf / "hdfs-site.xml").write_text("<configuration/>\n")
    (conf / "log4j2.properties").write_text("status = warn\n")
    (conf / "krb5.conf").write_text("[libdefaults]\n  default_realm = DC2.TEST\n")
    written = yarn.write_conf(tmp_path, PORTS, secure=True)
    assert (written / "krb5.conf").read_text() == (conf / "krb5.conf").read_text()
    keytabs = tmp_path / "keytabs"
    site = _props(written / "yarn-site.xml")
    assert site["yarn.resourcemanager.address"] == f"127.0.0.3:{PORTS['rm']}"
    assert site["yarn.nodemanager.address"] == f"127.0.0.3:{PORTS['nm']}"
    assert {k: v for k, v in site.items() if "principal" in k or "keytab" in k} == {
        "yarn.resourcemanager.principal": "yarn/_HOST@DC2.TEST",
        "yarn.resourcemanager.keytab": str(keytabs / "yarn_127.0.0.3-at-DC2.TEST.keytab"),
        "yarn.nodemanager.principal": "yarn/127.0.0.3@DC2.TEST",
        "yarn.nodemanager.keytab": str(keytabs / "yarn_127.0.0.3-at-DC2.TEST.keytab"),
        "yarn.resourcemanager.webapp.spnego-principal": "HTTP/127.0.0.3@DC2.TEST",
        "yarn.resourcemanager.webapp.spnego-keytab-file": str(keytabs / "HTTP_127.0.0.3-at-DC2.TEST.keytab"),
        "yarn.nodemanager.webapp.spnego-principal": "HTTP/127.0.0.3@DC2.TEST",
        "yarn.nodemanager.webapp.spnego-keytab-file": str(keytabs / "HTTP_127.0.0.3-at-DC2.TEST.keytab")}
    assert site["yarn.nodemanager.container-executor.class"].endswith(".DefaultContainerExecutor")
    core = _props(written / "core-site.xml")
    assert core["hadoop.security.authentication"] == "kerberos"
    assert core["hadoop.http.authentication.kerberos.principal"] == "HTTP/127.0.0.3@DC2.TEST"
    defaults = (tmp_path / "dc2" / "yarn" / "spark-conf" / "spark-defaults.conf").read_text().splitlines()
    settings = dict(line.split(" ", 1) for line in defaults if line and not line.startswith("#"))
    for key in ("spark.driver.extraJavaOptions", "spark.yarn.am.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert settings[key] == f"-Djava.security.krb5.conf={written / 'krb5.conf'}", key
    assert settings["spark.yarn.am.waitTime"] == "300s"
    assert "spark.kerberos.keytab" not in settings and "spark.kerberos.principal" not in settings  # per submit
