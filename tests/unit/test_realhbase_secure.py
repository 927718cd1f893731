"""realhbase's secured bed (realhbase/secure.py): the site files, krb5.conf and JVM flags each cluster gets, written
exactly; the plain bed's files are unchanged by it."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from realhbase import config, secure

PORTS = {name: 41000 + i for i, name in enumerate(config.PORT_NAMES)}


def _props(path) -> dict[str, str]:
    return {p.findtext("name"): p.findtext("value") for p in ET.parse(path).getroot().iter("property")}


def test_merged_replaces_in_place_and_appends():
    base = [("a", "1", ""), ("b", "2", "why b")]
    assert config.merged(base, [("b", "3", "secured"), ("c", "4", "")]) == [
        ("a", "1", ""), ("b", "3", "secured"), ("c", "4", "")]
    assert config.merged(base, []) == base


def test_the_plain_bed_is_unchanged(tmp_path):
    conf = config.write_conf("dc2", tmp_path / "dc2", "127.0.0.1:2181", PORTS)
    site = _props(conf / "hbase-site.xml")
    assert "hbase.security.authentication" not in site
    assert site["hbase.regionserver.ipc.address"] == site["hbase.master.info.bindAddress"] == "127.0.0.1"
    assert "hadoop.security.authentication" not in _props(conf / "core-site.xml")


def test_each_clusters_secured_site_files(tmp_path):
    workdir = tmp_path
    for name, realm, host in (("dc1", "DC1.TEST", "localhost"), ("dc2", "DC2.TEST", "127.0.0.3")):
        d = workdir / name
        conf = config.write_conf(name, d, "127.0.0.2:2181", PORTS, secure.site_overlay(name, workdir, d),
                                 secure.server_host(name))
        hbase, core, hdfs = (_props(conf / f) for f in ("hbase-site.xml", "core-site.xml", "hdfs-site.xml"))
        keytab = str(workdir / "keytabs" / f"hbase_{host}-at-{realm}.keytab")
        assert (hbase["hbase.security.authentication"], hbase["hbase.security.authorization"],
                hbase["hbase.security.authentication.ui"]) == ("kerberos", "true", "kerberos")
        assert hbase["hbase.superuser"] == "hbase,hbase-migration"
        assert "AccessController" in hbase["hbase.coprocessor.master.classes"]
        assert hbase["hbase.master.kerberos.principal"] == hbase["hbase.regionserver.kerberos.principal"] == \
            hdfs["dfs.namenode.kerberos.principal"] == hdfs["dfs.datanode.kerberos.principal"] == \
            f"hbase/{host}@{realm}"
        assert hbase["hbase.regionserver.keytab.file"] == hdfs["dfs.namenode.keytab.file"] == keytab
        assert hbase["hbase.security.authentication.spnego.kerberos.principal"] == f"HTTP/{host}@{realm}"
        assert hdfs["dfs.web.authentication.kerberos.principal"] == f"HTTP/localhost@{realm}"
        assert core["hadoop.http.authentication.kerberos.principal"] == f"HTTP/localhost@{realm}"
        assert (hdfs["dfs.block.access.token.enable"], hdfs["ignore.secure.ports.for.testing"]) == ("true", "true")
        assert core["hadoop.user.group.static.mapping.overrides"] == "dr.who=;hbase-migration=supergroup"
        assert core["hadoop.security.authentication"] == "kerberos"
        other = "DC2" if realm == "DC1.TEST" else "DC1"
        assert core["hadoop.security.auth_to_local"] == (
            rf"RULE:[1:$1@$0](.*@{other}\.TEST)s/@.*// RULE:[2:$1@$0](.*@{other}\.TEST)s/@.*// DEFAULT")
        assert hbase["hbase.regionserver.ipc.address"] == secure.server_host(name)
    dc1 = _props(workdir / "dc1" / "conf" / "hbase-site.xml")
    assert dc1["hbase.thrift.security.qop"] == "auth-conf" and "hbase.regionserver.thrift.http" not in dc1
    assert "hbase.regionserver.hostname" not in dc1
    dc2 = _props(workdir / "dc2" / "conf" / "hbase-site.xml")
    assert (dc2["hbase.regionserver.thrift.http"], dc2["hbase.thrift.ssl.enabled"]) == ("true", "true")
    assert dc2["hbase.thrift.spnego.principal"] == "HTTP/localhost@DC2.TEST" and "hbase.thrift.security.qop" not in dc2
    assert dc2["hbase.master.hostname"] == dc2["hbase.regionserver.hostname"] == "127.0.0.3"


def test_krb5_conf_maps_the_other_datacenters_hosts(tmp_path):
    secure.write_files("dc1", tmp_path, tmp_path / "dc1", 8888, None)  # dc1: no TLS gateway, no keystore
    text = (tmp_path / "dc1" / "conf" / "krb5.conf").read_text()
    assert "default_realm = DC1.TEST" in text and "kdc = 127.0.0.1:8888" in text
    assert text.endswith("[domain_realm]\n  127.0.0.2 = DC1.TEST\n  127.0.0.3 = DC2.TEST\n")
    jaas = (tmp_path / "dc1" / "conf" / "jaas.conf").read_text()
    assert 'principal="hbase/localhost@DC1.TEST"' in jaas and "useKeyTab=true" in jaas
    assert secure.jvm_flags("dc1", tmp_path / "dc1") == [
        f"-Djava.security.krb5.conf={tmp_path / 'dc1' / 'conf' / 'krb5.conf'}",
        f"-Djava.security.auth.login.config={tmp_path / 'dc1' / 'conf' / 'jaas.conf'}"]
    assert secure.jvm_flags("dc1", tmp_path / "dc1", client=True)[1].endswith("jaas-client.conf")
