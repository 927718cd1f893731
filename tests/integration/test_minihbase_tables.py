"""minihbase's tables as production holds them, through its `hbase shell -n` lookalike, Thrift2 and `/conf`:
every family and table attribute kept across a restart and described as HBase 2.5 prints it, namespaces, the
master's sanity checks (codecs, coprocessors), the split/merge and normalizer switches (the splitter honours
the split switch), and the configuration servlet.
"""
from __future__ import annotations

import re
import subprocess
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import requests
import thriftpy2
from thriftpy2.rpc import make_client

from minihbase.testing import MiniCluster
from tests.polling import wait_for

pytestmark = pytest.mark.integration

TOOK = re.compile(r"^Took \d+\.\d{4} seconds$")
OBSERVER = "com.example.hbase.AuditObserver"
T2 = thriftpy2.load(str(Path(__file__).resolve().parents[2] / "bedkit" / "hbase2.thrift"),
                    module_name="test_tables_hbase2_thrift")


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    """One region server; an observer class "installed"; bulk-load replication configured."""
    c = MiniCluster.start(zookeeper.hosts, tmp_path_factory.mktemp("minihbase"), name="dc1",
                          znode_parent=f"/hbase-tables-{uuid.uuid4().hex[:8]}", region_servers=1,
                          coprocessor_classes=[OBSERVER], replication_bulkload_enabled=True,
                          replication_cluster_id="dc1-bulk")
    yield c
    c.stop()


def shell(cluster, *statements: str, rc: int = 0) -> list[str]:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if not TOOK.match(line)]


def describe(cluster, table: str) -> list[str]:
    """`describe` without its framing: the table line, then the families."""
    out = shell(cluster, f"describe '{table}'")
    return [line for line in out[1:] if line and line != "COLUMN FAMILIES DESCRIPTION"
            and not line.endswith("row(s)") and line != "Quota is disabled"]


# The reference's example (hbase-behaviour.md 9.1), as HBase 2.5 prints it: its family line byte for byte; the
# table attributes sorted (a TreeSet) with MAX_FILESIZE in PrettyPrinter's BYTE unit (HBASE-25439).
FAMILY_A = ("{NAME => 'a', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '4', KEEP_DELETED_CELLS => 'FALSE', "
            "DATA_BLOCK_ENCODING => 'FAST_DIFF', TTL => '8640000 SECONDS (100 DAYS)', MIN_VERSIONS => '0', "
            "REPLICATION_SCOPE => '1', BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', COMPRESSION => 'GZ', "
            "BLOCKCACHE => 'true', BLOCKSIZE => '32768 B (32KB)'}")


def test_every_attribute_is_kept_and_described_as_hbase_prints_it(cluster):
    shell(cluster, "create_namespace 'ns1'",
          "create 'ns1:t1', {NAME => 'a', VERSIONS => 4, TTL => 8640000, COMPRESSION => 'GZ', "
          "DATA_BLOCK_ENCODING => 'FAST_DIFF', BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', BLOCKSIZE => 32768, "
          "REPLICATION_SCOPE => 1}, "
          "{NAME => 'b', VERSIONS => 3, MIN_VERSIONS => 1, KEEP_DELETED_CELLS => 'TRUE', IS_MOB => true, "
          "MOB_THRESHOLD => 102400, COMPRESSION => 'ZSTD', COMPRESSION_COMPACT => 'LZ4', "
          "NEW_VERSION_BEHAVIOR => 'true', CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '20'}}, "
          "{MAX_FILESIZE => 21474836480, DURABILITY => 'ASYNC_WAL', MEMSTORE_FLUSHSIZE => 268435456, "
          "REGION_REPLICATION => 1, NORMALIZATION_ENABLED => true, "
          "SPLIT_POLICY => 'org.apache.hadoop.hbase.regionserver.SteppingSplitPolicy', "
          "METADATA => {'hbase.store.file-tracker.impl' => 'DEFAULT'}}",
          f"alter 'ns1:t1', METHOD => 'table_att', 'coprocessor' => '|{OBSERVER}|1001|mode=strict'")
    expected = [
        "ns1:t1, {TABLE_ATTRIBUTES => {DURABILITY => 'ASYNC_WAL', MAX_FILESIZE => '21474836480 B (20GB)', "
        "MEMSTORE_FLUSHSIZE => '268435456 B (256MB)', REGION_REPLICATION => '1', "
        f"coprocessor$1 => '|{OBSERVER}|1001|mode=strict', METADATA => {{'NORMALIZATION_ENABLED' => 'true', "
        "'SPLIT_POLICY' => 'org.apache.hadoop.hbase.regionserver.SteppingSplitPolicy', "
        "'hbase.store.file-tracker.impl' => 'DEFAULT'}}}",
        FAMILY_A,
        # Reserved keys first in the values HashMap's order (IS_MOB and MOB_THRESHOLD are reserved: bucket 25, and
        # bucket 2 after INDEX_BLOCK_ENCODING), then METADATA for the others, then CONFIGURATION.
        "{NAME => 'b', INDEX_BLOCK_ENCODING => 'NONE', MOB_THRESHOLD => '102400', VERSIONS => '3', "
        "KEEP_DELETED_CELLS => 'TRUE', DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '1', "
        "REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', IS_MOB => 'true', "
        "COMPRESSION => 'ZSTD', BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)', "
        "METADATA => {'COMPRESSION_COMPACT' => 'LZ4', 'NEW_VERSION_BEHAVIOR' => 'true'}, "
        "CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '20'}}",
    ]
    assert describe(cluster, "ns1:t1") == expected
    cluster.restart()  # kept in .tableinfo: the same after a restart
    assert describe(cluster, "ns1:t1") == expected
    # Thrift2 carries every value too (TTableDescriptor.attributes, TColumnFamilyDescriptor.attributes).
    client = make_client(T2.THBaseService, cluster.thrift2_host, cluster.thrift2_port, timeout=30_000)
    try:
        desc = client.getTableDescriptor(T2.TTableName(ns=b"ns1", qualifier=b"t1"))
    finally:
        client.close()
    assert desc.durability == T2.TDurability.ASYNC_WAL
    assert desc.attributes[b"coprocessor$1"] == f"|{OBSERVER}|1001|mode=strict".encode()
    b = next(f for f in desc.columns if f.name == b"b")
    assert (b.attributes[b"IS_MOB"], b.attributes[b"COMPRESSION_COMPACT"], b.configuration) == (
        b"true", b"LZ4", {"hbase.hstore.blockingStoreFiles": "20"})


def test_namespaces(cluster):
    out = shell(cluster, "create_namespace 'sales', {'owner' => 'team-a', 'a.b' => 'c'}", "describe_namespace 'sales'",
                "list_namespace")
    assert out[:3] == ["DESCRIPTION", "{NAME => 'sales', a.b => 'c', owner => 'team-a'}", "Quota is disabled"]
    assert "sales" in out[out.index("NAMESPACE"):] and {"default", "hbase"} <= set(out)
    assert shell(cluster, "create 'nowhere:t', 'cf'", rc=1)[-1] == "ERROR: Unknown namespace nowhere!"
    assert shell(cluster, "describe_namespace 'nowhere'", rc=1)[-1] == "ERROR: Unknown namespace nowhere!"
    assert shell(cluster, "create_namespace 'sales'", rc=1)[-1] == \
        "ERROR: org.apache.hadoop.hbase.NamespaceExistException: sales"
    shell(cluster, "create 'sales:orders', 'cf'")
    assert shell(cluster, "drop_namespace 'sales'", rc=1)[-1] == (
        "ERROR: org.apache.hadoop.hbase.constraint.ConstraintException: Only empty namespaces can be removed. "
        "Namespace sales has 1 tables")
    assert shell(cluster, "drop_namespace 'default'", rc=1)[-1] == (
        "ERROR: org.apache.hadoop.hbase.constraint.ConstraintException: Reserved namespace default cannot be "
        "removed.")
    shell(cluster, "disable 'sales:orders'", "drop 'sales:orders'", "drop_namespace 'sales'")
    assert "sales" not in shell(cluster, "list_namespace")
    cluster.restart()  # an empty namespace created and dropped leaves nothing; ns1 (a table's) stays
    assert shell(cluster, "list_namespace 'ns.*'") == ["NAMESPACE", "ns1", "1 row(s)"]


def test_sanity_checks_refuse_codecs_and_coprocessors_the_servers_cannot_load(cluster):
    suffix = " Set hbase.table.sanity.checks to false at conf or table descriptor if you want to bypass sanity checks"
    out = shell(cluster, "create 'lzo_t', {NAME => 'cf', COMPRESSION => 'LZO'}", rc=1)
    assert out[-1] == "ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Compression algorithm 'lzo' " \
                      "previously failed test." + suffix
    assert "lzo_t" not in shell(cluster, "list")
    out = shell(cluster, "create 'cp_t', 'cf', {METADATA => {'coprocessor$1' => '|com.example.Missing|100|'}}", rc=1)
    assert out[-1] == "ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Class com.example.Missing cannot be " \
                      "loaded" + suffix
    shell(cluster, "create 'cp_t', 'cf'")
    out = shell(cluster, "alter 'cp_t', {NAME => 'cf', COMPRESSION_COMPACT => 'LZO'}", rc=1)
    assert "Compression algorithm 'lzo' previously failed test." in out[-1]
    out = shell(cluster, "alter 'cp_t', 'coprocessor' => 'not a spec'", rc=1)
    assert out[-1].startswith("ERROR: java.lang.IllegalArgumentException: Format does not match")
    shell(cluster, f"alter 'cp_t', 'coprocessor' => '|{OBSERVER}|1|'",
          f"alter 'cp_t', 'COPROCESSOR' => 'hdfs:///cp/audit.jar|{OBSERVER}|2|'",
          "alter 'cp_t', METHOD => 'table_att_unset', NAME => 'coprocessor$1'")
    assert describe(cluster, "cp_t")[0] == \
        f"cp_t, {{TABLE_ATTRIBUTES => {{coprocessor$2 => 'hdfs:///cp/audit.jar|{OBSERVER}|2|'}}}}"


def test_switches_and_the_splitter(zookeeper, tmp_path):
    c = MiniCluster.start(zookeeper.hosts, tmp_path, name="dc1", znode_parent=f"/hbase-sw-{uuid.uuid4().hex[:8]}",
                          region_servers=1, region_split_size_bytes=64 << 10, memstore_flush_size_bytes=16 << 10)
    try:
        assert shell(c, "splitormerge_enabled 'SPLIT'", "normalizer_enabled") == ["true", "true"]
        assert shell(c, "splitormerge_switch 'SPLIT', false", "splitormerge_switch 'MERGE', false",
                     "normalizer_switch false", "splitormerge_switch 'SPLIT', false") == \
            ["true", "true", "true", "false"]
        assert shell(c, "splitormerge_switch 'BOTH', true", rc=1)[-1] == "ERROR: only SPLIT or MERGE accepted for type!"
        c.create_table("grows", {"cf": {"max_versions": 1}})
        table = c.connection().table("grows")
        for i in range(600):  # ~600 KB: far past the split size
            table.put(f"r{i:05d}".encode(), {b"cf:q": b"x" * 1000})
        c.flush("grows")
        # The region server asked for the split (its size check runs every 0.5 s) and the master refused it.
        wait_for(lambda: c.switches()["split_requests_refused"] >= 2, 30, "a refused split")
        assert len(c.status()["tables"]["grows"]["regions"]) == 1
        c.restart()  # the switches live in ZooKeeper, as HBase's
        assert shell(c, "splitormerge_enabled 'SPLIT'", "splitormerge_enabled 'MERGE'", "normalizer_enabled") == \
            ["false", "false", "false"]
        assert c.set_switch("split", True) is False
        table = c.connection().table("grows")
        table.put(b"r99999", {b"cf:q": b"x" * 1000})
        c.flush("grows")
        wait_for(lambda: len(c.status()["tables"]["grows"]["regions"]) > 1, 60, "the region to split once on")
    finally:
        c.stop()


def _conf(url: str, **params) -> requests.Response:
    return requests.get(url + "/conf", params=params, timeout=10)


def test_conf_servlet_on_the_master_and_every_region_server(cluster):
    endpoints = cluster.endpoints
    master = f"http://127.0.0.1:{endpoints['master']['info_port']}"
    rs = f"http://127.0.0.1:{endpoints['region_servers'][0]['info_port']}"
    for url in (master, rs):
        props = {p["key"]: p for p in _conf(url, format="json").json()["properties"]}
        assert props["hbase.replication.bulkload.enabled"] == {
            "key": "hbase.replication.bulkload.enabled", "value": "true", "isFinal": False,
            "resource": "hbase-site.xml"}
        assert props["hbase.replication.cluster.id"]["value"] == "dc1-bulk"
        assert props["zookeeper.znode.parent"]["value"] == cluster.config.znode_parent
        root = ET.fromstring(_conf(url).content)
        assert root.tag == "configuration"
        xml = {p.findtext("name"): p.findtext("value") for p in root.iter("property")}
        assert xml["hbase.replication.cluster.id"] == "dc1-bulk"
    one = _conf(rs, format="json", name="hbase.regionserver.info.port").json()["properties"]
    assert one == [{"key": "hbase.regionserver.info.port", "value": str(endpoints["region_servers"][0]["info_port"]),
                    "isFinal": False, "resource": "hbase-site.xml"}]
    assert _conf(master, name="no.such.key").status_code == 404
    assert _conf(master, format="yaml").status_code == 400


def test_conf_servlet_without_bulk_load_replication(minihbase_dc1):
    props = {p["key"]: p for p in _conf(f"http://127.0.0.1:{minihbase_dc1.endpoints['master']['info_port']}",
                                        format="json").json()["properties"]}
    assert props["hbase.replication.bulkload.enabled"]["value"] == "false"
    assert props["hbase.replication.bulkload.enabled"]["resource"] == "hbase-default.xml"
    assert "hbase.replication.cluster.id" not in props  # unset in HBase: absent


def test_thrift2_create_table_takes_attributes_as_raw_values(cluster):
    """ThriftUtilities.tableDescriptorFromThrift: table and family `attributes` are setValue, `configuration` is
    the family's CONFIGURATION, `durability` the DURABILITY value; the sanity checks apply as to the shell."""
    client = make_client(T2.THBaseService, cluster.thrift2_host, cluster.thrift2_port, timeout=30_000)
    try:
        family = T2.TColumnFamilyDescriptor(name=b"cf", maxVersions=2, attributes={b"IS_MOB": b"true",
                                                                                   b"MOB_THRESHOLD": b"4096"},
                                            configuration={"hbase.hstore.compaction.min": "4"})
        attributes = {b"MAX_FILESIZE": b"4194304", b"coprocessor$1": f"|{OBSERVER}|5|".encode()}
        desc = T2.TTableDescriptor(tableName=T2.TTableName(qualifier=b"t2_attrs"), columns=[family],
                                   attributes=attributes, durability=T2.TDurability.SKIP_WAL)
        client.createTable(desc, [])
        bad = T2.TTableDescriptor(tableName=T2.TTableName(qualifier=b"t2_lzo"),
                                  columns=[T2.TColumnFamilyDescriptor(name=b"cf", compressionType=0)])  # LZO
        with pytest.raises(T2.TIOError, match="Compression algorithm 'lzo' previously failed test"):
            client.createTable(bad, [])
    finally:
        client.close()
    table_line, family_line = describe(cluster, "t2_attrs")
    assert table_line == ("t2_attrs, {TABLE_ATTRIBUTES => {DURABILITY => 'SKIP_WAL', MAX_FILESIZE => "
                          f"'4194304 B (4MB)', coprocessor$1 => '|{OBSERVER}|5|'}}}}")
    assert "VERSIONS => '2'" in family_line and "IS_MOB => 'true'" in family_line
    assert "MOB_THRESHOLD => '4096'" in family_line
    assert family_line.endswith("CONFIGURATION => {'hbase.hstore.compaction.min' => '4'}}")
