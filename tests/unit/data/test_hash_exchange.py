"""Where the two sides of a hash verification meet (hbase_migration/data/hashverify.py): in one process, and in the
run ledger (a real SQLite one); and the verdict they make (pure)."""
from __future__ import annotations

import threading

import pytest

from hbase_migration.data import leafhash as lh
from hbase_migration.data.hashverify import ExchangeError, LedgerExchange, LocalExchange, hash_verdict
from hbase_migration.data.verify import PartitionVerdict, VerifyOptions


def test_local_exchange_hands_each_message_once_and_counts_the_bytes_each_side_sent():
    ex = LocalExchange(timeout_s=5)
    threading.Timer(0.05, lambda: ex.put("plan", {"plan": [1, 2]}, "source")).start()
    assert ex.take("plan", "the plan") == {"plan": [1, 2]}  # waited for it
    ex.put("request/1", {"done": True}, "target")
    assert ex.sent == {"source": len(b'{"plan":[1,2]}'), "target": len(b'{"done":true}')}
    ex.timeout_s = 0.01
    with pytest.raises(ExchangeError, match="no the plan"):
        ex.take("plan", "the plan")  # taken already


def test_ledger_exchange_meets_in_the_ledger(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    source = LedgerExchange(url, "hash-exchange/k", "source", timeout_s=5, poll_s=0.01)
    target = LedgerExchange(url, "hash-exchange/k", "target", timeout_s=5, poll_s=0.01)
    source.put("plan", {"bound": 7}, "source")
    assert target.take("plan", "the plan") == {"bound": 7}
    assert target.sent["source"] == len(b'{"bound":7}')  # what the other side sent, counted where it arrived
    target.timeout_s = 0.05
    with pytest.raises(ExchangeError, match="no the plan"):
        target.take("plan", "the plan")
    LedgerExchange(url, "hash-exchange/k", "operator").abort("the source's side job failed: boom")
    with pytest.raises(ExchangeError, match="boom"):
        source.take("request/1", "a request")


def _digests(part, rows):
    return lh.hash_rows(part, rows)


def test_hash_verdict_counts_rows_from_the_hashes_and_differences_from_the_cells():
    opts = VerifyOptions(table="t", method="hash", sample_limit=10)
    bounded = VerifyOptions(table="t", method="hash", end_time_ms=95_000, count_bytes=True)
    plan = [lh.HashPartition(0, b"", b"", (b"m",), 0)]
    src = [_digests(plan[0], [(b"a", [(b"f:q", 1, b"x")]), (b"z", [(b"f:q", 1, b"y")])])]
    tgt = [_digests(plan[0], [(b"a", [(b"f:q", 1, b"x")]), (b"z", [(b"f:q", 1, b"CHANGED")])])]
    verdict = PartitionVerdict("p", 0, b"m", b"", counts={"matching": 0, "content_different": 1,
                                                           "only_in_source": 0, "only_in_target": 0},
                               source_rows=1, target_rows=1, source_bytes=11, target_bytes=17,
                               versions=[(b"z", b"f:q", 1, "value_differs")])
    result = hash_verdict(opts, bounded, 100_000, plan, src, tgt, [1], [1], 0, [], [], [(b"m", b"", (1,))],
                          [verdict], {"source": 300, "target": 20},
                          {"elapsed_s": 2.0, "source_hash_s": 1.0, "target_hash_s": 0.5}, "puts", "puts")
    assert result["identical"] is False and result["method"] == "hash"
    assert (result["source_rows"], result["target_rows"], result["matching"]) == (2, 2, 1)
    assert result["content_different"] == 1 and result["time_bound_ms"] == 95_000
    assert result["differences"] == [{"row": "z", "family": "f", "qualifier": "q", "timestamp": 1, "type": "Put",
                                      "kind": "value_differs"}]
    assert result["hash"]["leaves"] == 2 and result["hash"]["differing_leaves"] == 1
    assert result["hash"]["source"]["leaves"] == 2 and result["hash"]["source"]["hash_s"] == 1.0
    assert result["link_bytes"] == {"source_side_messages": 300, "target_side_messages": 20, "source_cells": 11,
                                    "total": 331}
    assert result["bytes_read"]["source"] == sum(src[0].nbytes) + 11
    failed = [lh.LeafDigests(0, 0, status="failed", error="gone")]
    result = hash_verdict(opts, bounded, 100_000, plan, src, failed, [0, 1], [], 0, [], [], [], [], {},
                          {"elapsed_s": 1.0}, "", "")
    assert result["identical"] is False and result["failed_partitions"] == 1
    assert result["failures"] == [{"side": "target", "index": 0, "error": "gone"}]
