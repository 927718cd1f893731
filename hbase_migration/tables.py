"""Target tables: created with the source's families (scope, versions, TTL) and the source's split keys.

Thrift1's createTable takes no split keys and shows no REPLICATION_SCOPE, so the schema comes from the source
shell's `describe`, the split keys from the source's regions, and the table is created through the target's
shell. A table that already exists is left alone (the preflight checks its families).
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

from hbase_migration.cluster import Cluster
from hbase_migration.schema import create_statement, describe_statement, parse_describe

log = logging.getLogger(__name__)


def split_keys(cluster: Cluster, table: str) -> list[bytes]:
    from hbase_migration.datapath import open_data_path

    with open_data_path(cluster) as path:
        return [r.start_key for r in path.regions(table) if r.start_key]


def create_missing_tables(source: Cluster, target: Cluster, tables: Sequence[str],
                          dry_run: bool = False) -> list[dict[str, Any]]:
    """For each table absent on the target, create it like the source's; returns what was (or would be) done."""
    from hbase_migration import channels
    from hbase_migration.preflight import existing_tables

    present = existing_tables(target, tables)
    done = []
    for table in tables:
        if table in present:
            done.append({"table": table, "outcome": "exists", "statement": None})
            continue
        described = channels.shell(source, [describe_statement(table)], timeout_s=120)
        schema = parse_describe(described.stdout, table)
        keys = split_keys(source, table)
        statement = create_statement(schema, keys)
        if dry_run:
            log.info("would run on %s: %s", target.name, statement)
            done.append({"table": table, "outcome": "would_create", "statement": statement, "splits": len(keys)})
            continue
        log.info("creating %s on %s with %d families and %d split keys: %s", table, target.name,
                 len(schema.families), len(keys), statement)
        channels.shell(target, [statement], timeout_s=300)
        if not existing_tables(target, [table]):
            raise RuntimeError(f"`{statement}` ran on {target.name} but table {table!r} is not listed afterwards")
        done.append({"table": table, "outcome": "created", "statement": statement, "splits": len(keys)})
    return done
