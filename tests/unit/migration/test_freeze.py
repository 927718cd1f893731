"""READONLY through the shell: the exact statements, and `describe` output (HBase 2.x and 1.x shapes) parsed."""
from __future__ import annotations

import pytest

from hbase_migration.migration.freeze import (
    FreezeError,
    parse_readonly,
    readonly_statement,
    split_describes,
    wal_roll_statement,
)

FAMILY = ("{NAME => 'd', VERSIONS => '1', EVICT_BLOCKS_ON_CLOSE => 'false', KEEP_DELETED_CELLS => 'FALSE', "
          "REPLICATION_SCOPE => '1', READONLY_NOTE => 'x'}")
FROZEN_2X = f"""Table users is ENABLED
users, {{TABLE_ATTRIBUTES => {{READONLY => 'true'}}}}
COLUMN FAMILIES DESCRIPTION
{FAMILY}

1 row(s)
Quota is disabled
Took 0.0320 seconds
"""
NEVER_SET_2X = FROZEN_2X.replace("users, {TABLE_ATTRIBUTES => {READONLY => 'true'}}", "users")
UNFROZEN_2X = FROZEN_2X.replace("'true'", "'false'")
WITH_METADATA_2X = FROZEN_2X.replace(
    "{READONLY => 'true'}", "{READONLY => 'true', METADATA => {'hbase.store.file-tracker.impl' => 'DEFAULT'}}")
NAMESPACED_1X = """Table ns:orders is ENABLED
'ns:orders', {TABLE_ATTRIBUTES => {READONLY => 'true'}
COLUMN FAMILIES DESCRIPTION
{NAME => 'd', BLOOMFILTER => 'ROW', VERSIONS => '1', REPLICATION_SCOPE => '1'}
1 row(s) in 0.0300 seconds
"""


def test_statements():
    assert readonly_statement("users", True) == """alter "users", READONLY => 'true'"""
    assert readonly_statement("ns:orders", False) == """alter "ns:orders", READONLY => 'false'"""
    assert readonly_statement('we"ird#', True) == """alter "we\\"ird\\#", READONLY => 'true'"""
    assert wal_roll_statement("rs1.example.com,16020,1700000000000") == \
        'wal_roll "rs1.example.com,16020,1700000000000"'
    with pytest.raises(TypeError):
        readonly_statement("users", "true")


@pytest.mark.parametrize("output, table, readonly", [
    (FROZEN_2X, "users", True),
    (NEVER_SET_2X, "users", False),
    (UNFROZEN_2X, "users", False),
    (WITH_METADATA_2X, "users", True),
    (NAMESPACED_1X, "ns:orders", True),
])
def test_describe_shows_readonly(output, table, readonly):
    assert parse_readonly(output, table) is readonly


def test_a_family_attribute_is_not_the_tables():
    # READONLY_NOTE in a family line must not be read as the table attribute
    assert parse_readonly(NEVER_SET_2X, "users") is False


def test_describe_of_another_table_is_refused():
    with pytest.raises(FreezeError, match="`describe` output for table 'orders' not found"):
        parse_readonly(FROZEN_2X, "orders")


def test_one_session_of_several_describes_splits_per_table():
    parts = split_describes("Took 0.1 seconds\n" + FROZEN_2X + NAMESPACED_1X)
    assert list(parts) == ["users", "ns:orders"]
    assert parse_readonly(parts["users"], "users") is True
    assert parse_readonly(parts["ns:orders"], "ns:orders") is True
    assert parts["users"].splitlines()[0] == "Table users is ENABLED"
