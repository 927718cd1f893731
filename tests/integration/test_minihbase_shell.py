"""`python -m minihbase shell -n`: HBase 2.x statements in, HBase 2.x output out, exit 1 on the first error.

Outputs are compared line by line with what HBase prints (reference §2); only the `Took` figures vary.
"""
from __future__ import annotations

import re
import subprocess

import pytest

pytestmark = pytest.mark.integration

TOOK = re.compile(r"^Took \d+\.\d{4} seconds$")
NOWHERE = "127.0.0.1:2181:/hbase-nowhere"


def run(cluster, *statements: str) -> tuple[int, list[str]]:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout.splitlines()


def without_took(lines: list[str]) -> list[str]:
    """The output with every `Took N.NNNN seconds` line checked and replaced by `Took`."""
    return ["Took" if TOOK.match(line) else line for line in lines]


def family(name: str, versions: int = 3, ttl: str = "FOREVER", scope: int = 0) -> str:
    """A family with default attributes as HBase 2.5 prints it (its values' HashMap order, units)."""
    return (f"{{NAME => '{name}', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '{versions}', "
            f"KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', TTL => '{ttl}', MIN_VERSIONS => '0', "
            f"REPLICATION_SCOPE => '{scope}', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', COMPRESSION => 'NONE', "
            "BLOCKCACHE => 'true', BLOCKSIZE => '65536 B (64KB)'}")


def test_create_describe_list_with_binary_splits(minihbase_dc1):
    rc, out = run(minihbase_dc1,
                  "create 'orders', {NAME => 'd', VERSIONS => '3', REPLICATION_SCOPE => '1'}, "
                  "{NAME => 'e', VERSIONS => 1, TTL => 86400}, SPLITS => [\"\\x00\\xff\", 'm']",
                  "describe 'orders'", "list")
    assert rc == 0
    assert without_took(out) == [
        "Created table orders", "Took",
        "Table orders is ENABLED", "orders", "COLUMN FAMILIES DESCRIPTION",
        family("d", scope=1), "", family("e", versions=1, ttl="86400 SECONDS (1 DAY)"), "",
        "2 row(s)", "Quota is disabled", "Took",
        "TABLE", "orders", "1 row(s)", "Took",
    ]
    conn = minihbase_dc1.connection()
    assert [r["start_key"] for r in conn.table("orders").regions()] == [b"", b"\x00\xff", b"m"]
    conn.close()


def test_errors_print_error_and_exit_1_at_the_first_one(minihbase_dc1):
    rc, out = run(minihbase_dc1, "create 'dup', 'cf'", "create 'dup', 'cf'", "list")
    assert rc == 1
    assert without_took(out) == ["Created table dup", "Took", "Took", "ERROR: Table already exists: dup!"]

    rc, out = run(minihbase_dc1, "describe 'nope'")
    assert (rc, out[-1]) == (1, "ERROR: Unknown table nope!")

    rc, out = run(minihbase_dc1, "list_peers(", "list")
    assert rc == 1 and out[-1].startswith("ERROR: SyntaxError")
    rc, out = run(minihbase_dc1, "frobnicate 't'")
    assert (rc, out) == (1, ["ERROR: NameError: undefined local variable or method `frobnicate' for main:Object"])
    rc, out = run(minihbase_dc1, "remove_peer 'absent'")
    assert out[-1] == "ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Replication peer absent does not exist"


def test_replication_scope_other_than_0_or_1_is_refused_and_changes_nothing(minihbase_dc1):
    rc, out = run(minihbase_dc1, "create 'scoped', {NAME => 'cf', REPLICATION_SCOPE => 2}")
    assert rc == 1 and out[-1] == ("ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: REPLICATION_SCOPE of "
                                   "column family 'cf' must be 0 (local) or 1 (global), got 2")
    assert "scoped" not in run(minihbase_dc1, "list")[1]

    assert run(minihbase_dc1, "create 'scoped', 'cf'")[0] == 0
    rc, out = run(minihbase_dc1, "alter 'scoped', {NAME => 'cf', REPLICATION_SCOPE => '5'}")
    assert rc == 1 and "got 5" in out[-1]
    rc, out = run(minihbase_dc1, "alter 'scoped', {NAME => 'cf', REPLICATION_SCOPE => '1'}", "describe 'scoped'")
    assert rc == 0
    assert without_took(out)[:3] == ["Updating all regions with the new schema...", "1/1 regions updated.", "Done."]
    assert family("cf", scope=1) in out


def test_peer_commands_and_list_peers_format(minihbase_dc1):
    rc, out = run(minihbase_dc1,
                  f"add_peer '1', CLUSTER_KEY => \"{NOWHERE}\", STATE => \"DISABLED\"",
                  f"add_peer '2', CLUSTER_KEY => '{NOWHERE}', TABLE_CFS => {{ \"t1\" => [], \"ns:t2\" => "
                  "[\"cf1\", \"cf2\"] }, STATE => 'DISABLED', CONFIG => {\"hbase_migration.owner\" => \"me\"}",
                  "set_peer_bandwidth '2', 1048576",
                  "list_peers", "get_peer_config '2'", "show_peer_tableCFs '2'")
    assert rc == 0
    assert without_took(out) == [
        "Took", "Took", "Took",
        " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH SERIAL",
        f" 1 {NOWHERE}  DISABLED true   0 false",
        f" 2 {NOWHERE}  DISABLED false  default.t1;ns.t2:cf1,cf2 1048576 false",
        "2 row(s)", "Took",
        f" Cluster Key {NOWHERE}", " hbase_migration.owner me", "Took",
        "default.t1;ns.t2:cf1,cf2", "Took",
    ]
    rc, out = run(minihbase_dc1, "remove_peer_tableCFs '2', {'ns:t2' => ['cf1']}",
                  "append_peer_tableCFs '2', {'t3' => []}", "show_peer_tableCFs '2'",
                  "remove_peer_tableCFs '2', {'t1' => ['x']}")
    assert rc == 1
    assert without_took(out)[2:] == ["default.t1;ns.t2:cf2;default.t3", "Took", "Took",
                                     "ERROR: org.apache.hadoop.hbase.replication.ReplicationException: Cannot remove "
                                     "cf of table: t1 which doesn't specify cfs from table-cfs config in peer: 2"]
    rc, out = run(minihbase_dc1, "enable_peer '1'", "enable_peer '1'")
    assert rc == 1 and out[-1].endswith("Replication peer 1 has already been enabled")
    rc, out = run(minihbase_dc1, f"add_peer '1', CLUSTER_KEY => '{NOWHERE}'")
    assert rc == 1 and out[-1].endswith("Replication peer 1 already exists")
    rc, out = run(minihbase_dc1, f"add_peer 'a-b', CLUSTER_KEY => '{NOWHERE}'")
    assert out[-1] == "ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Found invalid peer name: a-b"
    rc, out = run(minihbase_dc1, "add_peer '9', CLUSTER_KEY => 'not-a-key'")
    assert out[-1] == "ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: Invalid cluster key: not-a-key"
    rc, out = run(minihbase_dc1, "add_peer '9', 'zk:2181:/hbase'")
    assert out[-1] == "ERROR: args must be a Hash"
    assert run(minihbase_dc1, "remove_peer '1'", "remove_peer '2'", "list_peers")[1][-3:-1] == [
        " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH SERIAL",
        "0 row(s)"]


def test_status_replication_2_2_format(minihbase_dc1):
    assert run(minihbase_dc1, "create 'st', {NAME => 'cf', REPLICATION_SCOPE => 1}",
               f"add_peer '7', CLUSTER_KEY => '{NOWHERE}', STATE => 'DISABLED'")[0] == 0
    rc, out = run(minihbase_dc1, "status 'replication'")
    assert rc == 0 and out[:2] == ["version 2.5.8", "3 live servers"]
    body = out[2:-1]
    assert len(body) == 3 * 5  # per server: host, SOURCE with the peer, its queue, the queue's figures, SINK
    for i in range(3):
        host, source, queue, figures, sink = body[5 * i:5 * i + 5]
        assert host == "    127.0.0.1:"
        assert source == "       SOURCE: PeerID=7"
        assert queue == "         Normal Queue: 7"
        assert figures == ("           No Ops shipped since last restart, SizeOfLogQueue=1, EditsReadFromLogQueue=0, "
                           "OpsShippedToTarget=0, No edits for this source since it started, Replication Lag=0")
        assert re.fullmatch(r"      SINK: TimeStampStarted=\d+, Waiting for OPs\.\.\. ", sink)
    rc, out = run(minihbase_dc1, "status 'replication', 'sink'", "status")
    assert [line for line in out if line.startswith("       SOURCE")] == []
    assert re.fullmatch(r"1 active master, 0 backup masters, 3 servers, 0 dead, \d+\.\d{4} average load", out[-2])
    assert run(minihbase_dc1, "remove_peer '7'")[0] == 0


def test_table_lifecycle_count_truncate_drop_and_wal_roll(minihbase_dc1):
    assert run(minihbase_dc1, "create 'life', 'cf'")[0] == 0
    conn = minihbase_dc1.connection()
    with conn.table("life").batch() as b:
        for i in range(25):
            b.put(b"r%02d" % i, {b"cf:q": b"v"})
    rc, out = run(minihbase_dc1, "count 'life'", "disable 'life'", "count 'life'")
    assert rc == 1 and without_took(out) == ["25 row(s)", "Took", "Took", "Took", "ERROR: Table life is disabled!"]
    rc, out = run(minihbase_dc1, "enable 'life'", "truncate 'life'", "count 'life'")
    assert rc == 0 and without_took(out) == [
        "Took", "Truncating 'life' table (it may take a while):", "Disabling table...", "Truncating table...", "Took",
        "0 row(s)", "Took"]
    rc, out = run(minihbase_dc1, "drop 'life'")
    assert rc == 1 and out[-1] == "ERROR: Table life is enabled. Disable it first."
    assert run(minihbase_dc1, "disable 'life'", "drop 'life'")[0] == 0
    assert "life" not in run(minihbase_dc1, "list")[1]

    server = minihbase_dc1.region_servers[0]["servername"]
    before = next(r for r in minihbase_dc1.status()["region_servers"] if r["servername"] == server)["wal"]
    assert run(minihbase_dc1, f"wal_roll '{server}'")[0] == 0
    after = next(r for r in minihbase_dc1.status()["region_servers"] if r["servername"] == server)["wal"]
    assert after != before
    rc, out = run(minihbase_dc1, "wal_roll 'nohost,1,1'")
    assert rc == 1 and "ServerNotRunningYetException" in out[-1]
    conn.close()
