"""A run's tables in batches (hbase_migration/migration/batches.py): the plan, the peers' ids. Pure, exact."""
from __future__ import annotations

import pytest

from hbase_migration.migration.batches import (
    Batch,
    failed_batches,
    is_batch_peer,
    parse_listed,
    peer_ids,
    plan,
    sizes_from_sizing,
)
from hbase_migration.replication.model import InvalidPeerConfig

TABLES = ["a", "b", "c", "d", "e"]


def test_a_few_tables_are_one_batch_under_the_runs_own_peer():
    assert plan(TABLES, "mig") == [Batch(0, "b1", "mig", ("a", "b", "c", "d", "e"), 0)]


def test_by_size_largest_first_capped_by_tables_and_bytes():
    sizes = {"a": 10, "b": 50, "c": 30, "d": None, "e": 30}
    assert plan(TABLES, "mig", sizes=sizes, max_tables=2) == [
        Batch(0, "b1", "mig_b1", ("b", "c"), 80), Batch(1, "b2", "mig_b2", ("e", "a"), 40),
        Batch(2, "b3", "mig_b3", ("d",), 0)]
    # a byte cap: a table bigger than it goes alone; ties keep the run's order; a table not sized counts 0
    assert [b.tables for b in plan(TABLES, "mig", sizes=sizes, max_bytes=45)] == [("b",), ("c",), ("e", "a", "d")]
    assert [b.tables for b in plan(TABLES, "mig", sizes=sizes, max_bytes=1000)] == [("b", "c", "e", "a", "d")]


def test_the_defaults_cut_by_bytes_40_tb_in_300_tables_is_about_40_batches():
    tb = 1 << 40
    small = [f"t{k:03d}" for k in range(300)]
    assert len(plan(small, "mig", sizes=dict.fromkeys(small, 5 << 20))) == 1  # 300 tables of 5 MB: one peer
    assert len(plan(small + ["x"], "mig")) == 2  # the 301st table starts a second batch
    big = {t: 40 * tb // 300 for t in small}  # 40 TiB, 300 tables of 147 GB: 7 a batch (an 8th would pass 1 TiB)
    batches = plan(small, "mig", sizes=big)
    assert {len(b.tables) for b in batches[:-1]} == {7} and len(batches) == 43
    assert all(b.bytes <= tb for b in batches)


def test_as_listed_every_table_once():
    listed = parse_listed(["a, c", "b,d,e", " "])
    assert listed == (("a", "c"), ("b", "d", "e"))
    assert [(b.name, b.peer_id, b.tables) for b in plan(TABLES, "mig", listed=listed, max_tables=1)] == [
        ("b1", "mig_b1", ("a", "c")), ("b2", "mig_b2", ("b", "d", "e"))]
    with pytest.raises(ValueError, match="'e' is in no batch: list every table of the run"):
        plan(TABLES, "mig", listed=(("a", "b", "c", "d"),))
    with pytest.raises(ValueError, match="'a' is in batch 1 and batch 2: give each table one batch"):
        plan(TABLES, "mig", listed=(("a", "b"), ("a", "c", "d", "e")))
    with pytest.raises(ValueError, match="batch 1 names 'x', which is not one of the run's tables"):
        plan(TABLES, "mig", listed=(("x",),))
    with pytest.raises(ValueError, match="each batch must be 'table1,table2,...', got 3"):
        parse_listed([3])


def test_the_peers_of_batches():
    assert peer_ids("mig", 1) == ["mig"] and peer_ids("mig", 3) == ["mig_b1", "mig_b2", "mig_b3"]
    assert is_batch_peer("mig_b12", "mig") and is_batch_peer("mig", "mig")
    assert not is_batch_peer("mig_b1x", "mig") and not is_batch_peer("other_b1", "mig")
    with pytest.raises(InvalidPeerConfig):  # the suffix must keep HBase's 64 characters
        plan(TABLES, "p" * 63, max_tables=1)


def test_sizes_and_failed_batches():
    assert sizes_from_sizing({"a": {"figures": {"store_file_bytes": 5, "memstore_bytes": 2}}, "*": {"figures": {}},
                              "b": {"figures": {"store_file_bytes": 0}}}) == {"a": 7, "b": 0}
    assert failed_batches(["preflight", "batch.copy_3", "batch.verify_0", "batch.copy_3", "copy_1"]) == [0, 3]
