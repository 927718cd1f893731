"""Target tables created on real HBase (the session's realhbase bed, dc1 -> dc2): many at once, each exactly like
the source's. The shell's `create` waits about a second for each table; the toolkit submits a batch's creates at
once and waits for them together (hbase_migration/migration/create_at_once.py), which only HBase's own shell and
master can show works: the very descriptor and split keys the shell built, every region online.
"""
from __future__ import annotations

import json
import uuid

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow]

FAMILIES = ("{NAME => 'd', VERSIONS => 5, MIN_VERSIONS => 1, TTL => 8640000, KEEP_DELETED_CELLS => 'TTL', "
            "COMPRESSION => 'GZ', DATA_BLOCK_ENCODING => 'FAST_DIFF', BLOOMFILTER => 'ROWCOL', BLOCKSIZE => 32768, "
            "IN_MEMORY => 'true', REPLICATION_SCOPE => 1, "
            "CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '30'}}, "
            "{NAME => 'm', IS_MOB => true, MOB_THRESHOLD => 204800, BLOCKCACHE => false, REPLICATION_SCOPE => 1}")


@pytest.fixture
def clusters(realhbase, monkeypatch):
    endpoints = realhbase.endpoints()
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(endpoints["dc1"]["connection"]))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", json.dumps(endpoints["dc2"]["connection"]))
    from hbase_migration.operators.hooks import HBaseClusterHook

    return HBaseClusterHook("hbase_source").get_cluster(), HBaseClusterHook("hbase_target").get_cluster()


def test_a_batch_of_tables_is_created_at_once_each_exactly_like_the_sources(clusters):
    """Ten tables (a new namespace with its quota, families with most attributes, a MOB family, table
    attributes, split keys, one table in `default`) created in one call: every create submitted at once, each
    table described back equal to the source's (create_missing_tables compares them), its regions at the source's
    split keys and online (a write and a read through the data path), and a second call leaves them alone."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.channels import one_shell_per_cluster
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.migration.tables import create_missing_tables

    source, target = clusters
    tag = uuid.uuid4().hex[:6]
    namespace = f"many{tag}"
    tables = [f"{namespace}:t{i}" for i in range(9)] + [f"plain_{tag}"]
    statements = [f"create_namespace '{namespace}', {{'hbase.namespace.quota.maxtables' => '20'}}"]
    for i, table in enumerate(tables):
        splits = ", ".join(f"'{k}'" for k in ["g", "p"][: i % 3])
        statements.append(f"create '{table}', {FAMILIES}, {{MAX_FILESIZE => 21474836480, DURABILITY => 'ASYNC_WAL', "
                          f"METADATA => {{'team' => 't{i}'}}, SPLITS => [{splits}]}}" if splits else
                          f"create '{table}', {FAMILIES}, {{METADATA => {{'team' => 't{i}'}}}}")
    channels.shell(source, statements, timeout_s=600)

    with one_shell_per_cluster():
        done = create_missing_tables(source, target, tables)
        again = create_missing_tables(source, target, tables)
    assert [(d["table"], d["outcome"], d["submitted"]) for d in done] == [(t, "created", "at_once") for t in tables]
    assert done[0]["namespace_statement"] == \
        f'create_namespace "{namespace}", {{"hbase.namespace.quota.maxtables" => "20"}}'
    assert [d["outcome"] for d in again] == ["exists"] * len(tables)

    with open_data_path(source) as src, open_data_path(target) as tgt:
        for table in tables:
            wanted = [(r.start_key, r.end_key) for r in src.regions(table)]
            assert [(r.start_key, r.end_key) for r in tgt.regions(table)] == wanted, table
    out = channels.shell(target, [f"put '{t}', 'r{i}', 'd:q', 'v{i}'" for i, t in enumerate(tables)]
                         + [f"get '{t}', 'r{i}'" for i, t in enumerate(tables)]).stdout
    assert all(f"value=v{i}" in out for i in range(len(tables))), out[-3000:]
