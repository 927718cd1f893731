"""Pure pieces of minihbase's replication and shell, with exact expectations: znode bytes (reference §1),
queue ids, peer filtering semantics, the Ruby statement parser, and the shell's output formats."""
from __future__ import annotations

import pytest

from minihbase.replication import codec, parse_cluster_key
from minihbase.replication.source import Throttler
from minihbase.shell_format import human_ttl, list_peers_row, table_cfs_string
from minihbase.shell_lang import RubySyntaxError, incomplete, statements
from minihbase.znodes import with_metadata


def test_peer_state_and_position_bytes_are_hbase_bytes():
    assert codec.state_bytes(True) == bytes.fromhex("504255460800")
    assert codec.state_bytes(False) == bytes.fromhex("504255460801")
    assert codec.peer_enabled(with_metadata(codec.state_bytes(True), ident="x")) is True
    assert codec.peer_enabled(b"ENABLED") is False  # byte-for-byte compare, as isPeerEnabled
    assert codec.encode_position(0) == bytes.fromhex("504255460800")
    assert codec.encode_position(254) == bytes.fromhex("50425546 08fe01")
    assert codec.decode_position(b"") == 0
    assert codec.decode_position((254).to_bytes(8, "big")) == 254  # legacy pre-PB long
    assert codec.decode_position(with_metadata(codec.encode_position(1 << 40), ident="rs")) == 1 << 40


def test_peer_payload_matches_the_reference_example():
    data = codec.encode_peer(codec.PeerConfig(cluster_key="zk1:2181:/hbase"))
    assert data == b"PBUF" + b"\x0a\x0fzk1:2181:/hbase" + bytes.fromhex("3800 4001 5800")
    config = codec.PeerConfig(cluster_key="h:1:/p", configuration={"owner": "me"}, data={b"k": b"v"},
                              table_cfs={"t1": [], "ns:t2": ["cf"]}, replicate_all=False, bandwidth=10,
                              serial=True, namespaces=["ns3"])
    assert codec.decode_peer(with_metadata(codec.encode_peer(config), ident="shell")) == config
    assert codec.decode_peer(b"zk:2181:/legacy").cluster_key == "zk:2181:/legacy"
    with pytest.raises(codec.CodecError):
        codec.decode_peer(b"")


def test_queue_ids_and_cluster_keys():
    q = codec.parse_queue_id("2-rs-a.example,16020,1-rs-b,16020,2")
    assert (q.peer_id, q.dead_servers, q.recovered) == ("2", ("rs-a.example,16020,1", "rs-b,16020,2"), True)
    assert codec.parse_queue_id("2").recovered is False
    assert parse_cluster_key("zk1,zk2:2181:/hbase") == ("zk1:2181,zk2:2181", "/hbase")
    with pytest.raises(ValueError, match="Invalid cluster key"):
        parse_cluster_key("zk1:/hbase")


@pytest.mark.parametrize("config,table,family,expected", [
    (codec.PeerConfig(), "t", "cf", True),
    (codec.PeerConfig(), "hbase:meta", "info", False),
    (codec.PeerConfig(exclude_namespaces=["ns"]), "ns:t", "cf", False),
    (codec.PeerConfig(exclude_table_cfs={"t": ["a"]}), "t", "a", False),
    (codec.PeerConfig(exclude_table_cfs={"t": ["a"]}), "t", "b", True),
    (codec.PeerConfig(exclude_table_cfs={"t": []}), "default:t", "b", False),
    (codec.PeerConfig(replicate_all=False, table_cfs={"t": []}), "t", "any", True),
    (codec.PeerConfig(replicate_all=False, table_cfs={"t": ["a"]}), "t", "b", False),
    (codec.PeerConfig(replicate_all=False, table_cfs={"t": ["a"]}), "u", "a", False),
    (codec.PeerConfig(replicate_all=False, namespaces=["ns"]), "ns:u", "a", True),
])
def test_what_a_peer_replicates(config, table, family, expected):
    assert config.replicates(table, family) is expected


def test_ruby_statements():
    text = ('create "t", {NAME => \'cf\', VERSIONS => "3"}, SPLITS => ["\\x00\\xff", \'a\\\'b\']\n'
            'add_peer "1", CLUSTER_KEY => "k:1:/p",\n  TABLE_CFS => {"t1" => [], "t2" => ["cf"]}, SERIAL => true\n'
            "list; status 'replication'  # trailing comment\n")
    parsed = list(statements(text))
    assert [s.command for s in parsed] == ["create", "add_peer", "list", "status"]
    create, add = parsed[0], parsed[1]
    assert create.args[:2] == ["t", {"NAME": "cf", "VERSIONS": "3"}]
    assert [s.raw for s in create.args[2]["SPLITS"]] == [b"\x00\xff", b"a'b"]
    assert add.args == ["1", {"CLUSTER_KEY": "k:1:/p", "TABLE_CFS": {"t1": [], "t2": ["cf"]}, "SERIAL": True}]
    assert parsed[3].args == ["replication"]
    assert list(statements('x "\\u00e9\\#{no}"'))[0].args[0].raw == "é#{no}".encode()
    with pytest.raises(RubySyntaxError):
        list(statements('describe "t#{1}"'))
    with pytest.raises(RubySyntaxError):
        list(statements("create 't', {NAME => 'cf'"))


def test_a_shell_reading_line_by_line_waits_for_a_statement_to_end():
    """What minihbase's shell runs as soon as it arrives (HBase's shell reads its input statement by statement)."""
    for whole in ("list\n", "describe 't'\n", "create 't', {NAME => 'cf'}\n", "puts \"a\" + \"b\"\n", "\n",
                  "# a comment\n", "describe 't\n'x\n", "create 't', :\n"):  # the last: an error, run to fail
        assert not incomplete(whole), whole
    for part in ("create 't', {NAME => 'cf',\n", "add_peer '1',\n", "x 'a' =>\n", "puts \"a\" +\n",
                 "describe 'unterminated\n", "list \\\n", "scan 't', [\n"):
        assert incomplete(part), part
    [joined] = statements('puts "__mark" + "er_1__"\n')
    assert joined.command == "puts" and joined.args == ["__marker_1__"]
    assert list(statements("x 1 + 2"))[0].args == [3]
    with pytest.raises(RubySyntaxError, match="joins two strings"):
        list(statements("x 'a' + 1"))
    # numbered as lines of the whole input, which a chunk read later starts in the middle of
    with pytest.raises(RubySyntaxError, match="line 7"):
        list(statements("list\nx 'a' + 1\n", first_line=6))
    assert [s.text for s in statements("list\ndescribe 't'\n", first_line=40)] == ["list", "describe 't'"]


def test_shell_formats():
    assert human_ttl(2147483647) == "FOREVER"
    assert human_ttl(1) == "1 SECOND" and human_ttl(59) == "59 SECONDS"
    assert human_ttl(86400) == "86400 SECONDS (1 DAY)"
    assert human_ttl(90061) == "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)"
    assert table_cfs_string({"t1": [], "ns:t2": ["a", "b"]}) == "default.t1;ns.t2:a,b"
    row = list_peers_row("1", codec.PeerConfig(cluster_key="cdp01:2181:/hbase"), False)
    assert row == " 1 cdp01:2181:/hbase  DISABLED true   0 false"  # the reference's captured 2.x row
    excl = codec.PeerConfig(cluster_key="k:1:/p", exclude_namespaces=["b", "a"], exclude_table_cfs={"t": []})
    assert list_peers_row("2", excl, True) == " 2 k:1:/p  ENABLED true !a;b !default.t 0 false"


def test_throttler_holds_a_cycle_to_its_share():
    t = Throttler()
    t.cycle_start -= 1  # a fresh cycle
    t.wait(10_000, 1_000, lambda: False)  # the first push of a cycle always goes
    assert t.pushed == 1_000
    t.wait(0, 10**9, lambda: False)  # unlimited
    assert t.pushed == 1_000
