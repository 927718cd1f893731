"""`describe` both ways, with exact strings: minihbase prints a descriptor as HBase 2.5 does, the toolkit reads
what HBase prints, and a table goes around (minihbase prints -> the toolkit parses and builds `create` ->
minihbase's shell takes it -> minihbase prints the same again).

The expected strings are real HBase 2.5 output (the reference's 9.1 example; the default family and
`hbase:meta` as a 2.5 shell prints them), not minihbase's own: the family values' order is Java's HashMap
order, which minihbase simulates and these strings check.
"""
from __future__ import annotations

import pytest

from hbase_migration.migration.schema import (
    canonical,
    create_statement,
    parse_describe,
    parse_namespace,
    parse_namespaces,
)
from minihbase.descriptor_text import family_text, human_bytes, human_ttl, table_attributes_text
from minihbase.schema import FamilyDescriptor
from minihbase.shell_lang import statements
from minihbase.table_attributes import family_settings, table_settings

# The reference's family line (hbase-behaviour.md 9.1), byte for byte.
REFERENCE_FAMILY = (
    "{NAME => 'a', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '4', KEEP_DELETED_CELLS => 'FALSE', "
    "DATA_BLOCK_ENCODING => 'FAST_DIFF', TTL => '8640000 SECONDS (100 DAYS)', MIN_VERSIONS => '0', "
    "REPLICATION_SCOPE => '1', BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', COMPRESSION => 'GZ', "
    "BLOCKCACHE => 'true', BLOCKSIZE => '32768 B (32KB)'}")
# Its table line as HBase 2.5 prints it: TABLE_ATTRIBUTES' reserved keys are a TreeSet (sorted), MAX_FILESIZE in
# PrettyPrinter's BYTE unit (HBASE-25439). The reference's `MAX_FILESIZE => '21474836480', DURABILITY => ...` is
# the pre-2.5 value in an order HBase never prints.
REFERENCE_TABLE = ("ns1:t1, {TABLE_ATTRIBUTES => {DURABILITY => 'ASYNC_WAL', MAX_FILESIZE => '21474836480 B (20GB)', "
                   "METADATA => {'hbase.store.file-tracker.impl' => 'DEFAULT'}}}")
# A family created with defaults, as a 2.5 shell prints it (seen in real output).
DEFAULT_FAMILY = (
    "{NAME => 'C1', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '1', KEEP_DELETED_CELLS => 'FALSE', "
    "DATA_BLOCK_ENCODING => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', "
    "BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', "
    "BLOCKSIZE => '65536 B (64KB)'}")
# `describe 'hbase:meta'` on 2.5: a coprocessor attribute sorts after IS_META (uppercase before lowercase).
META_TABLE = ("hbase:meta, {TABLE_ATTRIBUTES => {IS_META => 'true', coprocessor$1 => "
              "'|org.apache.hadoop.hbase.coprocessor.MultiRowMutationEndpoint|536870911|', "
              "METADATA => {'hbase.store.file-tracker.impl' => 'DEFAULT'}}}")
META_INFO_FAMILY = (
    "{NAME => 'info', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '3', KEEP_DELETED_CELLS => 'FALSE', "
    "DATA_BLOCK_ENCODING => 'ROW_INDEX_V1', TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '0', "
    "BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', COMPRESSION => 'NONE', BLOCKCACHE => 'true', "
    "BLOCKSIZE => '8192 B (8KB)'}")


def minihbase_family(name: str, **shell_attrs) -> str:
    """What minihbase prints for a family created with these shell attributes."""
    settings, ignored = family_settings(shell_attrs)
    assert not ignored
    fam = FamilyDescriptor(name.encode(), **{"max_versions": 1, **settings})
    return family_text(name, fam.hbase_values(), fam.configuration)


def test_minihbase_prints_families_as_hbase_25_does():
    assert minihbase_family("a", VERSIONS=4, TTL=8640000, COMPRESSION="GZ", DATA_BLOCK_ENCODING="FAST_DIFF",
                            BLOOMFILTER="ROWCOL", IN_MEMORY="true", BLOCKSIZE=32768,
                            REPLICATION_SCOPE=1) == REFERENCE_FAMILY
    assert minihbase_family("C1") == DEFAULT_FAMILY
    assert minihbase_family("info", VERSIONS=3, DATA_BLOCK_ENCODING="ROW_INDEX_V1", BLOOMFILTER="ROWCOL",
                            IN_MEMORY=True, BLOCKSIZE=8192) == META_INFO_FAMILY


def test_minihbase_prints_table_attributes_as_hbase_25_does():
    settings, coprocessors, _ = table_settings({"MAX_FILESIZE": 21474836480, "DURABILITY": "async_wal",
                                                "METADATA": {"hbase.store.file-tracker.impl": "DEFAULT"}})
    assert "ns1:t1" + table_attributes_text(settings["values"]) == REFERENCE_TABLE
    meta = {"IS_META": "true", "coprocessor$1": "|org.apache.hadoop.hbase.coprocessor.MultiRowMutationEndpoint|"
            "536870911|", "hbase.store.file-tracker.impl": "DEFAULT"}
    assert "hbase:meta" + table_attributes_text(meta) == META_TABLE
    assert table_attributes_text({"IS_META": "false"}) == ""  # IS_META only when true
    assert table_attributes_text({}) == ""


@pytest.mark.parametrize("seconds, text", [
    (2147483647, "FOREVER"), (1, "1 SECOND"), (59, "59 SECONDS"), (86400, "86400 SECONDS (1 DAY)"),
    (8640000, "8640000 SECONDS (100 DAYS)"), (90061, "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)"),
    # PrettyPrinter's own quirk: the seconds' plural follows the minutes.
    (3601, "3601 SECONDS (1 HOUR 1 SECONDS)"), (3721, "3721 SECONDS (1 HOUR 2 MINUTES 1 SECONDS)"),
])
def test_ttl_units(seconds, text):
    assert human_ttl(seconds) == text
    assert canonical("TTL", text) == str(seconds)


@pytest.mark.parametrize("size, text", [
    (512, "512 B"), (65536, "65536 B (64KB)"), (10737942528, "10737942528 B (10GB 512KB)"),
    (21474836480, "21474836480 B (20GB)"), (1099511628801, "1099511628801 B (1TB 1KB 1B)"),
])
def test_byte_units(size, text):
    assert human_bytes(size) == text
    assert canonical("BLOCKSIZE", text) == canonical("MAX_FILESIZE", text) == str(size)


def test_the_toolkit_reads_the_reference_example_exactly():
    out = "\n".join(["Table ns1:t1 is ENABLED", REFERENCE_TABLE, "COLUMN FAMILIES DESCRIPTION", REFERENCE_FAMILY,
                     "", "1 row(s)", "Quota is disabled", "Took 0.0312 seconds"])
    schema = parse_describe(out, "ns1:t1")
    assert (schema.name, schema.enabled, schema.namespace) == ("ns1:t1", True, "ns1")
    assert schema.attributes == {"DURABILITY": "ASYNC_WAL", "MAX_FILESIZE": "21474836480 B (20GB)"}
    assert schema.metadata == {"hbase.store.file-tracker.impl": "DEFAULT"}
    (a,) = schema.families
    assert a.attributes == {
        "INDEX_BLOCK_ENCODING": "NONE", "VERSIONS": "4", "KEEP_DELETED_CELLS": "FALSE",
        "DATA_BLOCK_ENCODING": "FAST_DIFF", "TTL": "8640000 SECONDS (100 DAYS)", "MIN_VERSIONS": "0",
        "REPLICATION_SCOPE": "1", "BLOOMFILTER": "ROWCOL", "IN_MEMORY": "true", "COMPRESSION": "GZ",
        "BLOCKCACHE": "true", "BLOCKSIZE": "32768 B (32KB)"}
    assert (a.ttl_seconds, a.value("BLOCKSIZE"), a.value("VERSIONS"), a.replication_scope) == (8640000, "32768", "4",
                                                                                               1)
    assert create_statement(schema, [b"m"]) == (
        'create "ns1:t1", {NAME => "a", VERSIONS => 4, KEEP_DELETED_CELLS => "FALSE", DATA_BLOCK_ENCODING => '
        '"FAST_DIFF", TTL => 8640000, MIN_VERSIONS => 0, REPLICATION_SCOPE => 1, BLOOMFILTER => "ROWCOL", '
        'IN_MEMORY => "true", COMPRESSION => "GZ", BLOCKSIZE => 32768}, DURABILITY => "ASYNC_WAL", '
        'MAX_FILESIZE => 21474836480, METADATA => {"hbase.store.file-tracker.impl" => "DEFAULT"}, SPLITS => ["m"]')


def test_the_toolkit_reads_hbase_meta_and_a_line_wrapped_by_the_terminal():
    out = "\n".join(["Table hbase:meta is ENABLED", META_TABLE, "COLUMN FAMILIES DESCRIPTION"]) + "\n"
    wrapped = "\n".join(META_INFO_FAMILY[i:i + 100] for i in range(0, len(META_INFO_FAMILY), 100))
    schema = parse_describe(out + wrapped + "\n\n1 row(s)\n", "hbase:meta")
    assert schema.coprocessors() == {
        "coprocessor$1": "|org.apache.hadoop.hbase.coprocessor.MultiRowMutationEndpoint|536870911|"}
    assert schema.families[0].attributes["BLOCKSIZE"] == "8192 B (8KB)"
    assert schema.families[0].value("DATA_BLOCK_ENCODING") == "ROW_INDEX_V1"


def test_round_trip_minihbase_print_toolkit_parse_create_minihbase_again():
    """Every kind of value (reserved, METADATA, CONFIGURATION, units, MOB, compaction codec) survives."""
    source_settings, _ = family_settings({
        "VERSIONS": 3, "MIN_VERSIONS": 1, "TTL": 604800, "KEEP_DELETED_CELLS": "TTL", "IS_MOB": True,
        "MOB_THRESHOLD": 102400, "COMPRESSION": "SNAPPY", "COMPRESSION_COMPACT": "SNAPPY", "BLOCKSIZE": 16384,
        "NEW_VERSION_BEHAVIOR": True, "REPLICATION_SCOPE": 1,
        "CONFIGURATION": {"hbase.hstore.blockingStoreFiles": "20"}})
    source = FamilyDescriptor(b"b", **source_settings)
    table_values = table_settings({"MAX_FILESIZE": 21474836480, "NORMALIZATION_ENABLED": True,
                                   "SPLIT_POLICY": "org.apache.hadoop.hbase.regionserver.SteppingSplitPolicy"})[0]
    printed_table = "t" + table_attributes_text(table_values["values"])
    printed_family = family_text("b", source.hbase_values(), source.configuration)
    out = "\n".join(["Table t is ENABLED", printed_table, "COLUMN FAMILIES DESCRIPTION", printed_family, ""])

    statement = create_statement(parse_describe(out, "t"), [], name="t", codec_map={"SNAPPY": "ZSTD"})
    (parsed,) = statements(statement)
    assert parsed.command == "create" and parsed.args[0] == "t"
    family_arg = dict(parsed.args[1])
    name = family_arg.pop("NAME")
    settings, ignored = family_settings(family_arg)
    assert ignored == []
    again = FamilyDescriptor(name.encode(), **{"max_versions": 1, **settings})
    expected = printed_family.replace("'SNAPPY'", "'ZSTD'")  # the codec map, on COMPRESSION and compaction
    assert family_text(name, again.hbase_values(), again.configuration) == expected
    table_again = table_settings(parsed.args[2])[0]["values"]
    assert "t" + table_attributes_text(table_again) == printed_table


def test_namespace_outputs():
    assert parse_namespace("DESCRIPTION\n{NAME => 'ns1', a.b => 'c', owner => 'x'}\nQuota is disabled\n",
                           "ns1") == {"a.b": "c", "owner": "x"}
    assert parse_namespaces("NAMESPACE\ndefault\nhbase\nns1\n3 row(s)\nTook 0.01 seconds\n") == \
        ["default", "hbase", "ns1"]
