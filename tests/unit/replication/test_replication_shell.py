"""Shell statement text (exact) and Ruby escaping."""
from __future__ import annotations

import pytest

from hbase_migration.replication import shell
from hbase_migration.replication.model import OWNER_KEY, InvalidPeerConfig, PeerConfig

KEY = "zk1,zk2,zk3:2181:/hbase"


@pytest.mark.parametrize("value, literal", [
    ("plain", '"plain"'),
    ('say "hi"', r'"say \"hi\""'),
    ("back\\slash", r'"back\\slash"'),
    ("#{`rm -rf /`}", r'"\#{`rm -rf /`}"'),  # no interpolation can run
    ("a\nb\tc\r", r'"a\nb\tc\r"'),
    ("nul\x00bell\x07del\x7f", r'"nul\x00bell\x07del\x7F"'),
    ("héllo ✓", r'"h\u{E9}llo \u{2713}"'),
    ("", '""'),
])
def test_ruby_str(value, literal):
    assert shell.ruby_str(value) == literal


def test_ruby_str_rejects_non_strings():
    with pytest.raises(TypeError):
        shell.ruby_str(1)


def test_add_peer_statement_exact_text():
    config = PeerConfig(cluster_key=KEY, table_cfs={"ns:t1": [], "t2": ["cf2", "cf1"]})
    config = config.with_owner('dag "x"')
    assert shell.add_peer("1", config) == [
        'add_peer "1", CLUSTER_KEY => "zk1,zk2,zk3:2181:/hbase", STATE => "DISABLED", '
        'TABLE_CFS => {"ns:t1" => [], "t2" => ["cf1", "cf2"]}, '
        'CONFIG => {"hbase_migration.owner" => "dag \\"x\\""}'
    ]


def test_add_peer_enabled_omits_state():
    config = PeerConfig(cluster_key=KEY, table_cfs={"t": []})
    assert shell.add_peer("p", config, enabled=True) == [
        'add_peer "p", CLUSTER_KEY => "zk1,zk2,zk3:2181:/hbase", TABLE_CFS => {"t" => []}']


def test_add_peer_with_every_option_serial_in_add_peer_bandwidth_after():
    """SERIAL is an add_peer key (2.1+): the peer is serial from its first instant; BANDWIDTH has no add_peer key
    in every 2.x, so set_peer_bandwidth follows in the same session."""
    config = PeerConfig(cluster_key=KEY, namespaces=["ns1"], bandwidth=1048576, serial=True,
                        data={"k": "v"}, configuration={OWNER_KEY: "o"},
                        endpoint_class="org.example.Endpoint", remote_wal_dir="hdfs://nn/remoteWALs")
    assert shell.add_peer("2", config) == [
        'add_peer "2", CLUSTER_KEY => "zk1,zk2,zk3:2181:/hbase", '
        'ENDPOINT_CLASSNAME => "org.example.Endpoint", STATE => "DISABLED", NAMESPACES => ["ns1"], '
        'CONFIG => {"hbase_migration.owner" => "o"}, '
        'DATA => {"k" => "v"}, REMOTE_WAL_DIR => "hdfs://nn/remoteWALs", SERIAL => true',
        'set_peer_bandwidth "2", 1048576',
    ]


def test_add_peer_non_serial_says_nothing_of_serial():
    """A pre-2.1 shell does not know SERIAL: it is written only for a serial peer."""
    statements = shell.add_peer("p", PeerConfig(cluster_key=KEY, table_cfs={"t": []}))
    assert statements == ['add_peer "p", CLUSTER_KEY => "zk1,zk2,zk3:2181:/hbase", STATE => "DISABLED", '
                          'TABLE_CFS => {"t" => []}']


def test_add_peer_replicate_all_variants():
    nothing = PeerConfig(cluster_key=KEY, replicate_all=False)
    assert shell.add_peer("3", nothing)[1:] == ['set_peer_replicate_all "3", false']
    excluding = PeerConfig(cluster_key=KEY, exclude_namespaces=["tmp"], exclude_table_cfs={"t": ["cf"]})
    assert shell.add_peer("4", excluding)[1:] == [
        'set_peer_exclude_namespaces "4", ["tmp"]',
        'set_peer_exclude_tableCFs "4", {"t" => ["cf"]}',
    ]


def test_other_statements_exact_text():
    assert shell.enable_peer("1") == 'enable_peer "1"'
    assert shell.disable_peer("1") == 'disable_peer "1"'
    assert shell.remove_peer("peer_9") == 'remove_peer "peer_9"'
    assert shell.set_peer_table_cfs("1", {"t1": [], "ns:t2": ["a"]}) == (
        'set_peer_tableCFs "1", {"t1" => [], "ns:t2" => ["a"]}')
    assert shell.list_peers() == "list_peers"
    assert shell.status_replication() == 'status "replication"'


@pytest.mark.parametrize("build", [shell.enable_peer, shell.disable_peer, shell.remove_peer])
def test_statement_builders_validate_the_peer_id(build):
    with pytest.raises(InvalidPeerConfig, match="contains '-'"):
        build("1-2")
