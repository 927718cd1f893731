import pytest

from hbase_migration.migration.schema import (
    SchemaError,
    alter_scope_statement,
    create_statement,
    parse_describe,
    ruby_string,
)

DESCRIBE_2X = """Table orders is ENABLED
orders
COLUMN FAMILIES DESCRIPTION
{NAME => 'd', VERSIONS => '3', EVICT_BLOCKS_ON_CLOSE => 'false', NEW_VERSION_BEHAVIOR => 'false', \
KEEP_DELETED_CELLS => 'FALSE', CACHE_DATA_ON_WRITE => 'false', DATA_BLOCK_ENCODING => 'NONE', \
TTL => 'FOREVER', MIN_VERSIONS => '0', REPLICATION_SCOPE => '1', BLOOMFILTER => 'ROW', \
CACHE_INDEX_ON_WRITE => 'false', IN_MEMORY => 'false', CACHE_BLOOMS_ON_WRITE => 'false', \
PREFETCH_BLOCKS_ON_OPEN => 'false', COMPRESSION => 'NONE', BLOCKCACHE => 'true', BLOCKSIZE => '65536'}
{NAME => 'meta', VERSIONS => '1', TTL => '86400 SECONDS (1 DAY)', REPLICATION_SCOPE => '0', BLOOMFILTER => 'ROW'}

2 row(s)
Quota is disabled
Took 0.0436 seconds
"""


def test_parse_describe_2x():
    schema = parse_describe(DESCRIBE_2X, "orders")
    assert schema.enabled is True
    assert [f.name for f in schema.families] == ["d", "meta"]
    d, meta = schema.families
    assert d.replication_scope == 1 and d.attributes["VERSIONS"] == "3" and d.ttl_seconds is None
    assert meta.replication_scope == 0 and meta.ttl_seconds == 86400
    assert schema.family("meta") is meta and schema.family("x") is None


def test_parse_describe_disabled_table_and_odd_scope():
    out = "Table t is DISABLED\nt\nCOLUMN FAMILIES DESCRIPTION\n{NAME => 'cf', REPLICATION_SCOPE => '3'}\n"
    schema = parse_describe(out, "t")
    assert schema.enabled is False
    assert schema.families[0].replication_scope == 3


def test_parse_describe_refuses_what_it_cannot_read():
    with pytest.raises(SchemaError, match="could not read the schema of table 'nope'"):
        parse_describe("ERROR: Unknown table nope!\n", "nope")


def test_ruby_string_escapes_binary_and_interpolation():
    assert ruby_string("a\"b") == '"a\\"b"'
    assert ruby_string(b"\x00k#{x}\xff") == '"\\x00k\\#{x}\\xff"'


def test_create_statement_copies_families_and_splits():
    schema = parse_describe(DESCRIBE_2X, "orders")
    stmt = create_statement(schema, [b"", b"m", b"\x01a"], name="orders_copy")
    # HBase 2.0's defaults (EVICT_BLOCKS_ON_CLOSE 'false', ...) are left to the target's, which are the same; what
    # a reader sees is always said, also when an older shell did not print it ('meta').
    assert stmt == (
        'create "orders_copy", '
        '{NAME => "d", VERSIONS => 3, KEEP_DELETED_CELLS => "FALSE", MIN_VERSIONS => 0, REPLICATION_SCOPE => 1}, '
        '{NAME => "meta", VERSIONS => 1, TTL => 86400, REPLICATION_SCOPE => 0, MIN_VERSIONS => 0, '
        'KEEP_DELETED_CELLS => "FALSE"}, '
        'SPLITS => ["\\x01a", "m"]'
    )


def test_alter_scope_statement_only_0_or_1():
    assert alter_scope_statement("t", "cf", 1) == "alter \"t\", {NAME => \"cf\", REPLICATION_SCOPE => \"1\"}"
    with pytest.raises(SchemaError, match="REPLICATION_SCOPE must be 0 or 1, got 2"):
        alter_scope_statement("t", "cf", 2)


def test_table_attributes_carried_through_named_keys_or_metadata_and_what_is_not_carried():
    out = ("Table t is ENABLED\n"
           "t, {TABLE_ATTRIBUTES => {MEMSTORE_FLUSHSIZE => '268435456 B (256MB)', PRIORITY => '5', READONLY => "
           "'true', REGION_REPLICATION => '2', coprocessor$1 => '|org.x.Obs|10|k=v,l=w', METADATA => "
           "{'SPLIT_POLICY' => 'org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy', 'x' => 'a\\x00b'}}}\n"
           "COLUMN FAMILIES DESCRIPTION\n"
           "{NAME => 'cf', VERSIONS => '1', ENCRYPTION => 'AES', ENCRYPTION_KEY => '\\x01\\x02', TTL => 'FOREVER', "
           "FUTURE_KEY => 'z', IN_MEMORY_COMPACTION => 'basic'}\n")
    schema = parse_describe(out, "t")
    # READONLY is the cut-over's business (the copy writes into the table); ENCRYPTION_KEY is wrapped with the
    # source cluster's master key; an attribute the shell has no name for goes through METADATA (setValue);
    # binary values go back as the bytes HBase printed with \xNN.
    assert create_statement(schema, []) == (
        'create "t", {NAME => "cf", VERSIONS => 1, ENCRYPTION => "AES", IN_MEMORY_COMPACTION => "BASIC", '
        'MIN_VERSIONS => 0, KEEP_DELETED_CELLS => "FALSE", REPLICATION_SCOPE => 0, METADATA => {"FUTURE_KEY" => '
        '"z"}}, MEMSTORE_FLUSHSIZE => 268435456, PRIORITY => 5, REGION_REPLICATION => 2, METADATA => '
        '{"SPLIT_POLICY" => "org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy", '
        '"coprocessor$1" => "|org.x.Obs|10|k=v,l=w", "x" => "a\\x00b"}')


def test_alter_family_statement_and_namespace_statement():
    from hbase_migration.migration.schema import alter_family_statement, create_namespace_statement

    assert alter_family_statement("ns:t", "d", {"VERSIONS": "3", "TTL": "86400 SECONDS (1 DAY)",
                                                "KEEP_DELETED_CELLS": "TRUE"}) == \
        'alter "ns:t", {NAME => "d", VERSIONS => 3, TTL => 86400, KEEP_DELETED_CELLS => "TRUE"}'
    assert create_namespace_statement("ns") == 'create_namespace "ns"'
    assert create_namespace_statement("ns", {"hbase.namespace.quota.maxtables": "10"}) == \
        'create_namespace "ns", {"hbase.namespace.quota.maxtables" => "10"}'


@pytest.mark.parametrize("raw", ["'", "}", "{", "', ", "'}", "{'a' => '", "'\\x0A}}\\x00'"])
def test_an_encryption_key_with_quotes_and_braces_in_its_bytes_parses(raw):
    """HBase prints ENCRYPTION_KEY with Bytes.toStringBinary: printable bytes raw, quotes and braces included (a
    real key with a `'` and a `}` failed the snapshot path: "unbalanced braces"). The rest of the family is kept."""
    key = f"B\\x0A\\x03AES\\x10{raw}\\xFB$\\xB1;q\\xA8{raw}c>\\x0D2\\x03MD5"
    output = ("Table t is ENABLED\nt\nCOLUMN FAMILIES DESCRIPTION\n"
              f"{{NAME => 'k', ENCRYPTION => 'AES', VERSIONS => '3', ENCRYPTION_KEY => '{key}', "
              "REPLICATION_SCOPE => '1', BLOCKSIZE => '65536 B (64KB)'}\n\n"
              "{NAME => 'p', VERSIONS => '1', METADATA => {'x' => 'y'}}\n\n2 row(s)\n")
    schema = parse_describe(output, "t")
    assert [f.name for f in schema.families] == ["k", "p"]
    k = schema.family("k")
    assert k.attributes["ENCRYPTION_KEY"] == key
    assert k.attributes["REPLICATION_SCOPE"] == "1" and k.attributes["VERSIONS"] == "3"
    assert schema.family("p").metadata == {"x": "y"}
