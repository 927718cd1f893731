"""Every CLI subcommand against each class of bad input, as a table: a missing or unknown connection, a malformed
connection, bad names, bad numbers, bad time windows, endpoints that do not answer, the wrong cluster. Each case
asserts the exit status of the one rule (2: a usage error, one stderr line `error: <what> — <how to fix>`; 1: an
operational failure), that no traceback is printed, and that nothing changed on either cluster (peers, tables
and their families, every version of every cell, READONLY for freeze).

One minihbase pair for the module; the CLI runs in this process (`hbase_migration.__main__.main`), except a few
cases run as a real `python -m hbase_migration` to prove the no-traceback rule end to end."""
import json
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from bedkit.zookeeper import free_port
from hbase_migration.__main__ import main

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TABLE = "mx"  # on both clusters, REPLICATION_SCOPE 1, three versions kept
SCOPE0 = "mx_scope0"  # on the source only, REPLICATION_SCOPE 0
PEER = "mx1"


def with_changes(conn_json: str, **changes) -> str:
    conn = json.loads(conn_json)
    for key, value in changes.items():
        if key in ("host", "port"):
            conn[key] = value
        else:
            conn["extra"][key] = value
    return json.dumps(conn)


@pytest.fixture(scope="module")
def world(minihbase_pair, zookeeper):
    dc1, dc2 = minihbase_pair
    for c in (dc1, dc2):
        c.create_table(TABLE, {"d": {"max_versions": 3, "replication_scope": 1}})
    dc1.create_table(SCOPE0, {"d": {"replication_scope": 0}})
    hb = {name: c.connection() for name, c in (("dc1", dc1), ("dc2", dc2))}
    for ts in (1000, 2000, 3000):  # versions with their own timestamps on the source, one row on the target
        hb["dc1"].table(TABLE).put(b"r1", {b"d:a": b"v%d" % ts}, timestamp=ts)
    hb["dc1"].table(TABLE).put(b"r2", {b"d:b": b"x"})
    hb["dc1"].table(SCOPE0).put(b"r1", {b"d:a": b"s"})
    hb["dc2"].table(TABLE).put(b"t1", {b"d:a": b"y"}, timestamp=5)
    src, dst = dc1.connection_json, dc2.connection_json
    conns = {
        "src": src, "dst": dst,
        "src_alias": src,  # the source cluster under another connection id
        "bad_json": json.dumps({"conn_type": "hbase", "host": "127.0.0.1", "port": 9090, "extra": "{bad"}),
        "bad_uri": "hbase://127.0.0.1:port/?zookeeper_quorum=127.0.0.1",
        "misspelt": with_changes(dst, zookeeper_qourum="127.0.0.1"),
        "bad_port": with_changes(dst, zookeeper_port="abc"),
        "bad_parent": with_changes(dst, znode_parent="hbase-dc2"),
        "dead_zk": with_changes(dst, zookeeper_port=free_port(), timeout_s=0.5),
        "dead_thrift": with_changes(dst, port=free_port(), thrift2_servers=f"127.0.0.1:{free_port()}",
                                    timeout_s=0.5),
        "dead_webhdfs": with_changes(src, webhdfs_url=f"http://127.0.0.1:{free_port()}", timeout_s=0.5),
        "wrong_cluster": with_changes(dst, znode_parent="/hbase-nowhere"),
    }
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    yield {"clusters": {"dc1": dc1, "dc2": dc2}, "hb": hb, "zk": zk, "conns": conns}
    zk.stop()
    zk.close()
    for conn in hb.values():
        conn.close()


def snapshot(world, readonly: bool = False) -> dict:
    """What bad input must not change: peers (znode bytes), tables and families, every version of every cell;
    with `readonly`, whether the source's shell describes the test table READONLY (what freeze changes)."""
    state = {}
    for name, cluster in world["clusters"].items():
        zk, hb = world["zk"], world["hb"][name]
        peers_path = f"{cluster.znode_parent}/replication/peers"
        peers = {}
        for peer in (zk.get_children(peers_path) if zk.exists(peers_path) else []):
            peers[peer] = [zk.get(f"{peers_path}/{peer}{leaf}")[0] for leaf in ("", "/peer-state")
                           if zk.exists(f"{peers_path}/{peer}{leaf}")]
        tables = {}
        for t in sorted(hb.tables()):
            table = hb.table(t)
            cells = {(row, col): table.cells(row, col, versions=10, include_timestamp=True)
                     for row, data in table.scan() for col in data}
            tables[t] = (sorted(table.families()), cells)
        state[name] = {"peers": peers, "tables": tables}
        if readonly and name == "dc1":
            shell = cluster.endpoints["shell_command"]
            out = subprocess.run(shell, input=f"describe '{TABLE}'\n", capture_output=True, text=True,
                                 timeout=120).stdout
            state[name]["readonly"] = "READONLY => 'true'" in out or "READONLY => 'TRUE'" in out
    return state


@pytest.fixture
def cli(world, monkeypatch, capsys):
    """`cli(argv)` -> (exit status, stdout, stderr) of the CLI run in this process, with the module's
    connections as AIRFLOW_CONN_* and no `airflow` command to ask about unknown ones."""
    for key in [k for k in os.environ if k.startswith("AIRFLOW_CONN_")]:
        monkeypatch.delenv(key)
    for conn_id, text in world["conns"].items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", text)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    root = logging.getLogger()

    def run(argv):
        handlers, level = list(root.handlers), root.level
        try:
            rc = main(list(argv))
        finally:  # copy/verify add a stderr handler for their logs: this process runs every case
            root.handlers[:], root.level = handlers, level
        out, err = capsys.readouterr()
        return rc, out, err

    return run


# ------------------------------------------------------------------------------------------------ the table

def args(command, source="src", target="dst", tables=TABLE, peer=PEER, *extra):
    """The command line of `command` against the given connections, table(s) and peer id."""
    forms = {
        "preflight": ["preflight", "--source", source, "--target", target, "--tables", tables, "--peer-id", peer,
                      "--sample-gap-s", "0"],
        "peer list": ["peer", "list", "--source", source],
        "peer add": ["peer", "add", "--source", source, "--target", target, "--tables", tables, "--peer-id", peer],
        "peer enable": ["peer", "enable", "--source", source, "--peer-id", peer],
        "peer disable": ["peer", "disable", "--source", source, "--peer-id", peer],
        "peer remove": ["peer", "remove", "--source", source, "--peer-id", peer],
        "lag": ["lag", "--source", source, "--peer-id", peer],
        "quota": ["quota", "--source", source, "--sample-gap-s", "0"],
        "create-tables": ["create-tables", "--source", source, "--target", target, "--tables", tables],
        "freeze": ["freeze", "--source", source, "--tables", tables],
        "copy": ["copy", "--source", source, "--target", target, "--table", tables, "--workers", "1"],
        "verify": ["verify", "--source", source, "--target", target, "--table", tables, "--workers", "1"],
        "cluster": ["cluster", "--source", source],
    }
    return [*forms[command], *extra]


COMMANDS = ("preflight", "peer list", "peer add", "peer enable", "peer disable", "peer remove", "lag", "quota",
            "create-tables", "freeze", "copy", "verify", "cluster")
TWO_CLUSTERS = ("preflight", "peer add", "create-tables", "copy", "verify")
WITH_TABLES = ("preflight", "peer add", "create-tables", "freeze", "copy", "verify")
WITH_PEER_ID = ("preflight", "peer add", "peer enable", "peer disable", "peer remove", "lag")

CASES = []


def case(kind, command, argv, status, fragment):
    CASES.append(pytest.param(command, argv, status, fragment, id=f"{kind}: {' '.join(argv)}"))


# A missing or unknown connection.
for c in COMMANDS:
    case("unknown connection", c, args(c, source="nowhere"), 2, "connection 'nowhere' not found — set "
                                                                  "AIRFLOW_CONN_NOWHERE")
    case("missing connection", c, [a for a in args(c) if a not in ("--source", "src")], 2,
         "the following arguments are required: --source" if c not in ("copy", "verify")
         else "arguments are required: --source")
for c in TWO_CLUSTERS:
    case("unknown connection", c, args(c, target="nowhere"), 2, "connection 'nowhere' not found")

# A connection that does not describe a cluster.
for conn_id, fragment in (("bad_json", "extra is not valid JSON"), ("bad_uri", "port is not a number"),
                          ("misspelt", "unknown extra 'zookeeper_qourum'"),
                          ("bad_port", "zookeeper_port must be an integer port, got 'abc'"),
                          ("bad_parent", "znode_parent must be an absolute znode path")):
    case("malformed connection", "cluster", args("cluster", source=conn_id), 2,
         f"connection '{conn_id}' (AIRFLOW_CONN_{conn_id.upper()}): ")
    assert fragment  # each is named in the unit tests (tests/unit/test_cli_rules.py); here: every command
for c in COMMANDS:
    for conn_id in ("bad_json", "bad_parent"):
        case("malformed connection", c, args(c, source=conn_id), 2, f"connection '{conn_id}' (AIRFLOW_CONN_")
for c in TWO_CLUSTERS:
    case("malformed connection", c, args(c, target="bad_json"), 2, "extra is not valid JSON")

# Bad names: tables, peer ids, connection ids.
for c in WITH_TABLES:
    case("bad name", c, args(c, tables="bad table!"), 2, "table name 'bad table!' is not a valid HBase table name")
for c in WITH_PEER_ID:
    case("bad name", c, args(c, peer="mig-1"), 2, "peer id 'mig-1' contains '-'")
case("bad name", "peer remove", args("peer remove", peer="lock"), 2, "'lock' is reserved")
for c in COMMANDS:
    case("bad name", c, args(c, source="a b"), 2, "'a b' is not an Airflow connection id")
case("bad name", "copy", args("copy", "src", "dst", TABLE, PEER, "--families", "d/x"), 2,
     "'d/x' is not a valid column family name")
case("bad name", "copy", args("copy", "src", "dst", TABLE, PEER, "--target-table", ".meta"), 2,
     "target_table: table name '.meta'")
case("bad name", "verify", args("verify", "src", "dst", TABLE, PEER, "--families", "nosuch"), 2,
     "'nosuch' is not a family of 'mx' on the source — name one it has: d")
for c in ("copy", "verify"):
    case("bad name", c, args(c, tables="nosuch"), 2, "'nosuch' does not exist on the source 'src'")
for c in ("create-tables", "freeze"):
    case("bad name", c, args(c, tables=f"{TABLE},nosuch"), 2, "table(s) nosuch do not exist on the source 'src'")
case("bad name", "peer add", args("peer add", tables="nosuch"), 2,
     "source_tables: not found on the source: nosuch — fix what failed, or pass --force")

# Bad numbers.
for c, extra, fragment in (
        ("quota", ["--quota-mark", "5"], "argument --quota-mark: must be a fraction in (0, 1], got '5'"),
        ("quota", ["--quota-mark", "nan"], "argument --quota-mark"),
        ("quota", ["--sample-gap-s", "-1"], "argument --sample-gap-s: must be a number of seconds >= 0"),
        ("preflight", ["--quota-mark", "0"], "argument --quota-mark"),
        ("preflight", ["--expected-copy-s", "-1"], "argument --expected-copy-s"),
        ("preflight", ["--safety-factor", "inf"], "argument --safety-factor"),
        ("lag", ["--max-lag-ms", "-1"], "argument --max-lag-ms: must be an integer >= 0, got '-1'"),
        ("lag", ["--stable-samples", "1"], "argument --stable-samples: must be an integer >= 2"),
        ("lag", ["--caught-up-queue-size", "17"], "argument --caught-up-queue-size: must be an integer 0..16"),
        ("lag", ["--interval-s", "0"], "argument --interval-s: must be a number of seconds > 0"),
        ("lag", ["--watch-timeout-s", "x"], "argument --watch-timeout-s"),
        ("copy", ["--workers", "0"], "argument --workers: must be a number of partitions at once >= 1"),
        ("copy", ["--workers", "-2"], "argument --workers"),
        ("copy", ["--rows-per-s", "1e400"], "argument --rows-per-s: '1e400' is not a finite number"),
        ("copy", ["--rows-per-s", "-5"], "rows_per_s must be a positive number, got -5.0"),
        ("copy", ["--writers", "0"], "writers must be a positive integer"),
        ("copy", ["--scan-batch-rows", "two"], "argument --scan-batch-rows: invalid int value: 'two'"),
        ("copy", ["--versions", "0"], "versions must be a positive integer, got '0'"),
        ("copy", ["--max-pause-s", "nan"], "argument --max-pause-s: 'nan' is not a finite number"),
        ("copy", ["--max-load", "numCallsInGeneralQueue=x"], "--max-load/--critical-load"),
        ("verify", ["--versions", "all3"], "versions must be a positive integer"),
        ("verify", ["--recompare-sleep-s", "inf"], "argument --recompare-sleep-s: 'inf' is not a finite number"),
        ("copy", ["--ledger-url", "nosuchdb://x"], "--ledger-url: cannot use ledger url 'nosuchdb://x'"),
        ("copy", ["--options-json", "{"], "--options-json: not valid JSON")):
    if c in ("preflight", "lag", "quota"):
        case("bad number", c, args(c) + extra, 2, fragment)
    else:
        case("bad number", c, args(c, "src", "dst", TABLE, PEER, *extra), 2, fragment)

# Bad time windows.
for c, extra, fragment in (
        ("copy", ["--start-time-ms", "10", "--end-time-ms", "5"], "start_time_ms 10 must be < end_time_ms 5"),
        ("verify", ["--start-time-ms", "7", "--end-time-ms", "7"], "start_time_ms 7 must be < end_time_ms 7"),
        ("copy", ["--start-time-ms", "2024-05-01T00:00"], "'2024-05-01T00:00' has no UTC offset"),
        ("verify", ["--end-time-ms", "-1"], "argument --end-time-ms: must be epoch milliseconds or an ISO 8601 "
                                            "date-time, got '-1'"),
        ("copy", ["--end-time-ms", "99999999999999999999"], "must be within 0..9223372036854775807 ms"),
        ("verify", ["--start-time-ms", "yesterday"], "must be epoch milliseconds or an ISO 8601 date-time")):
    case("bad window", c, args(c, "src", "dst", TABLE, PEER, *extra), 2, fragment)

# Endpoints that do not answer: an operational failure (1), except peer add, whose checks --force can skip (2).
for c in ("peer list", "peer enable", "peer disable", "peer remove", "lag"):
    case("unreachable", c, args(c, source="dead_zk"), 1, "ZooKeeper quorum 127.0.0.1:")
case("unreachable", "preflight", args("preflight", source="dead_zk"), 1, "source_reachable")
case("unreachable", "preflight", args("preflight", target="dead_zk"), 1, "target_reachable")
case("unreachable", "preflight", args("preflight", target="dead_thrift"), 1, "target_reachable")
case("unreachable", "peer add", args("peer add", source="dead_zk"), 2, "source_reachable: dead_zk")
case("unreachable", "peer add", args("peer add", target="dead_zk"), 2,
     "target_reachable: dead_zk (127.0.0.1:")
case("unreachable", "create-tables", args("create-tables", target="dead_thrift"), 1, "cannot reach")
case("unreachable", "copy", args("copy", target="dead_thrift"), 1, "cannot reach the Thrift2 server")
case("unreachable", "verify", args("verify", target="dead_thrift"), 1, "cannot reach the Thrift2 server")
case("unreachable", "quota", args("quota", source="dead_webhdfs"), 1, "127.0.0.1")

# The wrong cluster: a znode parent where no HBase is, or the source cluster as the target.
for c in ("peer list", "peer enable", "peer remove", "lag"):
    case("wrong cluster", c, args(c, source="wrong_cluster"), 2, "/hbase-nowhere/")
case("wrong cluster", "peer add", args("peer add", target="wrong_cluster"), 2,
     "target_reachable: wrong_cluster")
case("wrong cluster", "preflight", args("preflight", target="wrong_cluster"), 1, "target_reachable")
for c in TWO_CLUSTERS:
    for target in ("src", "src_alias"):
        case("wrong cluster", c, args(c, target=target), 2,
             "so every cell would map onto itself" if c in ("copy", "verify") else "the same cluster")
case("wrong cluster", "peer add", args("peer add", tables=SCOPE0), 2,
     f"REPLICATION_SCOPE is 0 on {SCOPE0}:d")


@pytest.mark.parametrize("command, argv, status, fragment", CASES)
def test_bad_input(world, cli, command, argv, status, fragment):
    before = snapshot(world, readonly=command == "freeze")
    rc, out, err = cli(argv)
    assert rc == status, f"exit {rc}\nstdout: {out}\nstderr: {err}"
    assert "Traceback" not in out + err, err
    if status == 2:
        lines = err.splitlines()
        assert len(lines) == 1, err
        line = lines[0]
        assert line.startswith("error: ") and " — " in line and fragment in line, line
        assert not re.match(r"error: \w+(Error|Exception):", line), line  # no Python exception name as the error
    else:
        assert fragment in out + err, out + err
    assert snapshot(world, readonly=command == "freeze") == before, "bad input changed a cluster"


# ------------------------------------------------------------------------------------------------ end to end

@pytest.mark.parametrize("argv, fragment", [
    (["copy", "--source", "src", "--target", "dst", "--table", "bad table!"], "table name 'bad table!'"),
    (["verify", "--source", "src", "--target", "src", "--table", TABLE], "map onto itself"),
    (["copy", "--source", "src", "--target", "dst", "--table", TABLE, "--ledger-url", "nosuchdb://x"],
     "--ledger-url: cannot use ledger url"),
    (["cluster", "--source", "bad_json"], "connection 'bad_json' (AIRFLOW_CONN_BAD_JSON): extra is not valid JSON"),
    (["quota", "--source", "src", "--quota-mark", "5"], "argument --quota-mark: must be a fraction in (0, 1]"),
    (["peer", "add", "--source", "src", "--target", "dead_zk", "--tables", TABLE, "--peer-id", "pz"],
     "target_reachable"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_real_process_prints_one_line_and_no_traceback(world, argv, fragment):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update({f"AIRFLOW_CONN_{k.upper()}": v for k, v in world["conns"].items()}, PYTHONPATH=str(REPO))
    before = snapshot(world)
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", *argv], env=env, capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert snapshot(world) == before, f"{shlex.join(argv)} changed a cluster"


def test_the_snapshot_sees_each_change_a_command_makes(world, cli):
    """The guard above can fail: good input through the same commands changes what the snapshot holds (READONLY,
    peers, cells), and undoing it brings the snapshot back."""
    before = snapshot(world, readonly=True)
    assert cli(args("freeze"))[0] == 0
    assert snapshot(world, readonly=True)["dc1"]["readonly"] is True
    assert cli(args("freeze", "src", "dst", TABLE, PEER, "--unfreeze"))[0] == 0
    assert snapshot(world, readonly=True) == before

    before = snapshot(world)
    rc, out, err = cli(args("peer add"))
    assert rc == 0, out + err
    assert "[ok  ] replication_scope" in out and f"peer {PEER}: created" in out
    assert list(snapshot(world)["dc1"]["peers"]) == [PEER]
    assert cli(args("peer remove"))[0] == 0
    assert snapshot(world) == before

    rc, out, err = cli(args("copy"))
    assert rc == 0, err
    copied = snapshot(world)["dc2"]["tables"][TABLE.encode()][1]
    assert copied[(b"r1", b"d:a")] == [(b"v3000", 3000), (b"v2000", 2000), (b"v1000", 1000)]
    for row in (b"r1", b"r2"):
        world["hb"]["dc2"].table(TABLE).delete(row)
    assert snapshot(world) == before
