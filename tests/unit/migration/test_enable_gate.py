"""The enable gate's pure parts: the shell's `list` read, which peer tables are absent, what a refusal says."""
from types import SimpleNamespace

import pytest

from hbase_migration.migration.enable_gate import Gate, TableListUnreadable, absent, parse_table_list, peer_tables

LIST = """TABLE
default:users
ns1:orders
t.v2
3 row(s)
Took 0.0311 seconds
=> ["users", "ns1:orders", "t.v2"]
"""


def test_the_shells_list_is_read_up_to_its_row_count():
    assert parse_table_list(LIST) == {"users", "ns1:orders", "t.v2"}
    assert parse_table_list("TABLE\n0 row(s)\nTook 0.0100 seconds\n") == set()
    with pytest.raises(TableListUnreadable, match="no TABLE header"):
        parse_table_list("ERROR: org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient permissions")


@pytest.mark.parametrize("tables, listed, missing", [
    (["users", "ns1:orders"], {"users", "ns1:orders"}, []),
    (["default:users", "ns1:orders", "ns2:orders"], {"users", "ns1:orders"}, ["ns2:orders"]),
    (["b", "a", "b"], set(), ["b", "a"]),  # in the peer's order, once each
])
def test_absent_compares_names_as_hbase_does(tables, listed, missing):
    assert absent(tables, listed) == missing


def test_a_refusal_names_the_tables_or_why_they_are_unknown():
    assert Gate("p1", "dc2", ("a", "b")).ok and Gate("p1", "dc2", ("a",)).refusal() == ""
    missing = Gate("p1", "dc2", ("a", "b"), ("b",))
    assert not missing.ok and missing.refusal().startswith("peer p1 not enabled: its table(s) b are absent on dc2 "
                                                           "(an enabled peer would stall every table on its queues")
    unknown = Gate("p1", "dc2", ("a",), error="`list` on dc2 failed: TimeoutError")
    assert not unknown.ok and unknown.refusal() == ("peer p1 not enabled: whether its tables exist on dc2 is unknown "
                                                    "(`list` on dc2 failed: TimeoutError)")
    assert missing.to_dict() == {"peer_id": "p1", "target": "dc2", "tables": ["a", "b"], "missing": ["b"],
                                 "error": None}


def test_the_peers_tables_come_from_its_table_cfs_else_the_runs():
    def admin(peer):
        return SimpleNamespace(get_peer=lambda _peer_id: peer)

    scoped = SimpleNamespace(config=SimpleNamespace(table_cfs={"default:a": [], "ns:b": ["d"]}))
    assert peer_tables(admin(scoped), "p1", ["other"]) == ("a", "ns:b")
    assert peer_tables(admin(None), "p1", ["x", "default:y"]) == ("x", "y")
