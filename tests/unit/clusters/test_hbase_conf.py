"""The `/conf` servlet's two forms read exactly, and the bulk-load decision as a truth table."""
import pytest

from hbase_migration.clusters.hbase_conf import ServerConf, bulkload_findings, parse_conf_json, parse_conf_xml

XML = b"""<?xml version="1.0" encoding="UTF-8" standalone="no"?><configuration>
<property><name>hbase.replication.bulkload.enabled</name><value>true</value><final>false</final><source>hbase-site.xml</source></property>
<property><name>hbase.replication.cluster.id</name><value>dc1</value><final>false</final><source>hbase-site.xml</source></property>
<property><name>empty</name><value></value><final>false</final><source>x</source></property>
</configuration>
"""


def test_both_forms():
    assert parse_conf_xml(XML) == {"hbase.replication.bulkload.enabled": "true",
                                   "hbase.replication.cluster.id": "dc1", "empty": ""}
    assert parse_conf_json({"properties": [{"key": "a", "value": "1", "isFinal": False, "resource": "r"},
                                           {"key": "b", "value": None}]}) == {"a": "1", "b": ""}
    with pytest.raises(ValueError, match="not a /conf JSON document"):
        parse_conf_json({"beans": []})
    with pytest.raises(ValueError, match="not a /conf XML document"):
        parse_conf_xml(b"<html>login</html>")


ON = {"hbase.replication.bulkload.enabled": "true", "hbase.replication.cluster.id": "dc1"}


@pytest.mark.parametrize("confs, verdict, fragment", [
    ([ServerConf("rs1", ON), ServerConf("rs2", ON)], True, "cluster.id=dc1 on all 2 server(s)"),
    ([ServerConf("rs1", {})], False, "rs1: hbase.replication.bulkload.enabled=false (unset)"),
    ([ServerConf("rs1", {**ON, "hbase.replication.bulkload.enabled": "FALSE"})], False, "enabled=FALSE"),
    ([ServerConf("rs1", {"hbase.replication.bulkload.enabled": "true"})], False, "cluster.id is unset"),
    ([ServerConf("rs1", ON), ServerConf("rs2", error="HTTP 401")], None, "rs2: HTTP 401"),
    ([ServerConf("rs1", {}), ServerConf("rs2", error="HTTP 401")], False, "rs1:"),
    ([], None, "no live region server"),
])
def test_bulkload_findings(confs, verdict, fragment):
    ok, reason = bulkload_findings(confs)
    assert ok is verdict and fragment in reason
