"""`python -m minihbase shell -n --cluster NAME [--workdir W]`: an `hbase shell -n` lookalike (HBase 2.x syntax
and output) for a running minihbase cluster.

Statements come from stdin (and an optional script file first), one per line, in the shell's Ruby syntax
(`minihbase.shell_lang`). Each prints what HBase 2.x prints, then `Took N.NNNN seconds`. With `-n` the first
error prints `ERROR: ...` and exits 1, as `hbase shell -n` does; at the end of input it exits 0.

It acts as a client of the cluster (found through `<workdir>/<cluster>/endpoints.json`):
- peers are written to ZooKeeper in HBase's formats the 1.x way (ReplicationAdmin): the region servers react
  through their watches;
- table DDL goes to the cluster's control endpoint (HBase's Admin calls);
- `status 'replication'` reads the replication load of every live region server.
"""
from __future__ import annotations

import argparse
import inspect
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from minihbase import process
from minihbase.replication import parse_cluster_key
from minihbase.replication.codec import PeerConfig, split_table, table_text
from minihbase.replication.storage import PeerError, PeerStorage
from minihbase.shell_admin import ADMIN_COMMANDS
from minihbase.shell_errors import ArgumentError, ShellError, table_name
from minihbase.shell_format import (
    LIST_PEERS_HEADER,
    list_peers_row,
    peer_config_rows,
    status_replication,
    table_cfs_string,
)
from minihbase.shell_lang import RubySyntaxError, Statement, incomplete, statements
from minihbase.shell_tables import TABLE_COMMANDS

_table_name = table_name


def _int(value: Any, what: str) -> int:
    """`JInteger.valueOf(x)`: integers or their decimal strings."""
    if isinstance(value, bool):
        raise ArgumentError(f"{what} must be an integer, got {value}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ShellError(f"java.lang.NumberFormatException: For input string: \"{value}\" ({what})")


def _bool(value: Any, what: str) -> bool:
    """`JBoolean.valueOf(x)`: true/false or their strings (anything else is false, as in Java)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"
    raise ArgumentError(f"{what} must be true or false, got {value!r}")


class Shell:
    def __init__(self, workdir: Path, cluster: str, out=sys.stdout):
        self.workdir = Path(workdir)
        self.cluster_name = cluster
        self.out = out
        self._endpoints: dict | None = None
        self._zk = None

    # ------------------------------------------------------------------------------------------ plumbing
    def print(self, *lines: str) -> None:
        for line in lines:
            self.out.write(line + "\n")

    @property
    def endpoints(self) -> dict:
        if self._endpoints is None:
            path = self.workdir / self.cluster_name / "endpoints.json"
            try:
                self._endpoints = json.loads(path.read_text())
            except (OSError, ValueError):
                raise ShellError(f"org.apache.hadoop.hbase.MasterNotRunningException: cluster {self.cluster_name} "
                                 f"is not running under {self.workdir} (no {path})") from None
        return self._endpoints

    def control(self, path: str, body: dict | None = None) -> dict:
        try:
            return process.control(self.endpoints["control_url"], path, body, timeout=120)
        except process.MiniHBaseError as e:
            message = str(e).partition(": ")[2] or str(e)
            raise ShellError(message) from None

    @property
    def zk(self):
        if self._zk is None:
            from kazoo.client import KazooClient

            client = KazooClient(hosts=self.endpoints["zookeeper"]["hosts"], timeout=15)
            try:
                client.start(timeout=15)
            except Exception as e:
                raise ShellError(f"org.apache.hadoop.hbase.ZooKeeperConnectionException: cannot reach ZooKeeper "
                                 f"{self.endpoints['zookeeper']['hosts']}: {e}") from None
            self._zk = client
        return self._zk

    @property
    def peers(self) -> PeerStorage:
        return PeerStorage(self.zk, self.endpoints["zookeeper"]["znode_parent"])

    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()

    def tables(self) -> dict[str, dict]:
        return {t["name"]: t for t in self.control("/control/tables")["tables"]}

    def table(self, name: str) -> dict:
        found = self.tables().get(table_text(*split_table(name)))
        if found is None:
            raise ShellError(f"Unknown table {name}!")
        return found

    # ------------------------------------------------------------------------------------------ running
    def execute(self, statement: Statement) -> None:
        handler = COMMANDS.get(statement.command)
        if handler is None:
            raise ShellError(f"NameError: undefined local variable or method `{statement.command}' for main:Object")
        try:
            inspect.signature(handler).bind(self, *statement.args)
        except TypeError:
            raise ArgumentError(f"wrong number of arguments ({len(statement.args)}) for "
                                f"{statement.command}") from None
        if statement.command == "puts":  # Ruby's own, not a shell command: HBase's shell times none of it
            handler(self, *statement.args)
            return
        started = time.monotonic()
        try:
            handler(self, *statement.args)
        finally:
            self.print(f"Took {time.monotonic() - started:.4f} seconds")


# ---------------------------------------------------------------------------------------------- DDL
# create, describe and alter: minihbase.shell_tables (in COMMANDS below).


def cmd_disable(sh: Shell, table: Any = None) -> None:
    name = _table_name(table)
    t = sh.table(name)
    if not t["enabled"]:
        raise ShellError(f"Table {name} is disabled!")
    sh.control("/control/disable-table", {"table": t["name"]})


def cmd_enable(sh: Shell, table: Any = None) -> None:
    name = _table_name(table)
    t = sh.table(name)
    if t["enabled"]:
        return  # HBase's shell: enabling an enabled table is a no-op
    sh.control("/control/enable-table", {"table": t["name"]})


def cmd_drop(sh: Shell, table: Any = None) -> None:
    name = _table_name(table)
    t = sh.table(name)
    if t["enabled"]:
        raise ShellError(f"Table {name} is enabled. Disable it first.")
    sh.control("/control/delete-table", {"table": t["name"]})


def _truncate(sh: Shell, table: Any, preserve: bool) -> None:
    name = _table_name(table)
    t = sh.table(name)
    sh.print(f"Truncating '{name}' table (it may take a while):")
    if t["enabled"]:
        sh.print("Disabling table...")
        sh.control("/control/disable-table", {"table": t["name"]})
    sh.print("Truncating table...")
    sh.control("/control/truncate-table", {"table": t["name"], "preserve_splits": preserve})


def cmd_truncate(sh: Shell, table: Any = None) -> None:
    _truncate(sh, table, False)


def cmd_truncate_preserve(sh: Shell, table: Any = None) -> None:
    _truncate(sh, table, True)


def cmd_list(sh: Shell, pattern: Any = None) -> None:
    import re

    names = sorted(sh.tables())
    if pattern is not None:
        regex = re.compile(str(pattern))
        names = [n for n in names if regex.fullmatch(n)]
    sh.print("TABLE", *names, f"{len(names)} row(s)")


def cmd_exists(sh: Shell, table: Any = None) -> None:
    name = _table_name(table)
    present = table_text(*split_table(name)) in sh.tables()
    sh.print(f"Table {name} does {'' if present else 'not '}exist")


def cmd_count(sh: Shell, table: Any = None, *_options: Any) -> None:
    name = _table_name(table)
    t = sh.table(name)
    if not t["enabled"]:
        raise ShellError(f"Table {name} is disabled!")
    rows = sh.control("/control/count", {"table": t["name"]})["rows"]
    sh.print(f"{rows} row(s)")


def cmd_wal_roll(sh: Shell, server: Any = None) -> None:
    if not isinstance(server, str):
        raise ArgumentError("wal_roll takes a server name ('host,port,startcode')")
    live = {rs["servername"] for rs in sh.control("/control/endpoints")["region_servers"] if rs["alive"]}
    if str(server) not in live:
        raise ShellError(f"org.apache.hadoop.hbase.ipc.ServerNotRunningYetException: Server {server} is not "
                         "running")
    sh.control("/control/roll-wals", {"server": str(server)})


def cmd_status(sh: Shell, format_: Any = "summary", kind: Any = "both") -> None:
    fmt = str(format_).lower()
    if fmt == "replication":
        kind = str(kind).lower()
        if kind not in ("both", "source", "sink"):
            raise ArgumentError(f"unknown replication status type {kind!r} (source, sink)")
        sh.print(*status_replication(sh.control("/control/replication-status"), kind))
        return
    status = sh.control("/control/status")
    live = [rs for rs in status["region_servers"] if rs["state"] == "online"]
    dead = [rs for rs in status["region_servers"] if rs["state"] != "online"]
    regions = sum(len(rs["regions"]) for rs in live)
    average = regions / len(live) if live else 0.0
    sh.print(f"1 active master, 0 backup masters, {len(live)} servers, {len(dead)} dead, {average:.4f} average load")


# ---------------------------------------------------------------------------------------------- peers
def _peer_id(value: Any) -> str:
    if not isinstance(value, str) or not str(value):
        raise ArgumentError(f"peer id must be a String, got {value!r}")
    return str(value)


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(f"{what} must be an Array of Strings, got {value!r}")
    return [str(v) for v in value]


def _table_cfs(value: Any, what: str = "TABLE_CFS") -> dict[str, list[str]]:
    """`{"ns:t1" => [], "t2" => ["cf1"]}` (nil or [] = every family) -> {table: families}."""
    if not isinstance(value, dict):
        raise ArgumentError(f"{what} must be a Hash of table => [families], got {value!r}")
    out: dict[str, list[str]] = {}
    for table, families in value.items():
        name = table_text(*split_table(_table_name(table, f"{what} table name")))
        fams = [] if families is None else _strings(families, f"{what} families of {name}")
        out[name] = list(dict.fromkeys(fams))
    return out


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ArgumentError(f"{what} must be a Hash")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def check_peer_config(config: PeerConfig) -> None:
    """ReplicationPeerManager.checkPeerConfig (2.x), with HBase's messages."""
    try:
        parse_cluster_key(config.cluster_key)
    except ValueError:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Invalid cluster key: "
                         f"{config.cluster_key}") from None
    if config.replicate_all:
        if config.namespaces or config.table_cfs:
            raise ShellError("org.apache.hadoop.hbase.DoNotRetryIOException: Need clean namespaces or table-cfs "
                             "config firstly when you want replicate all cluster")
        namespaces, table_cfs = config.exclude_namespaces, config.exclude_table_cfs
    else:
        if config.exclude_namespaces or config.exclude_table_cfs:
            raise ShellError("org.apache.hadoop.hbase.DoNotRetryIOException: Need clean exclude-namespaces or "
                             "exclude-table-cfs config firstly when replicate_all flag is false")
        namespaces, table_cfs = config.namespaces, config.table_cfs
    for table in table_cfs or {}:
        ns = split_table(table)[0]
        if namespaces and ns in namespaces:
            raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Table-cfs {table} is conflict with "
                             f"namespaces {ns} in peer config")
    if config.bandwidth < 0:
        raise ShellError(f"java.lang.IllegalArgumentException: bandwidth must be >= 0, got {config.bandwidth}")


ADD_PEER_KEYS = ("CLUSTER_KEY", "ENDPOINT_CLASSNAME", "STATE", "TABLE_CFS", "NAMESPACES", "CONFIG", "DATA",
                 "SERIAL", "BANDWIDTH", "EXCLUDE_NAMESPACES", "EXCLUDE_TABLECFS")


def cmd_add_peer(sh: Shell, peer_id: Any = None, args: Any = None, *extra: Any) -> None:
    pid = _peer_id(peer_id)
    if not isinstance(args, dict) or extra:
        raise ArgumentError("args must be a Hash")
    unknown = [k for k in args if k not in ADD_PEER_KEYS]
    if unknown:
        raise ArgumentError(f"add_peer: unknown argument(s) {', '.join(map(str, unknown))} "
                            f"(known: {', '.join(ADD_PEER_KEYS)})")
    if "-" in pid:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Found invalid peer name: {pid}")
    cluster_key = args.get("CLUSTER_KEY")
    endpoint = args.get("ENDPOINT_CLASSNAME")
    if cluster_key is None and endpoint is None:
        raise ArgumentError("Either ENDPOINT_CLASSNAME or CLUSTER_KEY must be specified.")
    if endpoint is not None:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Can not instantiate configured "
                         f"replication endpoint class={endpoint} (minihbase ships to HBase sinks only)")
    config = PeerConfig(cluster_key=str(cluster_key))
    if "CONFIG" in args:
        config.configuration = _string_map(args["CONFIG"], "CONFIG")
    if "DATA" in args:
        config.data = {k.encode(): v.encode() for k, v in _string_map(args["DATA"], "DATA").items()}
    if "NAMESPACES" in args:
        config.namespaces = _strings(args["NAMESPACES"], "NAMESPACES") or None
        config.replicate_all = False
    if "TABLE_CFS" in args:
        config.table_cfs = _table_cfs(args["TABLE_CFS"]) or None
        config.replicate_all = False
    if "EXCLUDE_NAMESPACES" in args:
        config.exclude_namespaces = _strings(args["EXCLUDE_NAMESPACES"], "EXCLUDE_NAMESPACES") or None
    if "EXCLUDE_TABLECFS" in args:
        config.exclude_table_cfs = _table_cfs(args["EXCLUDE_TABLECFS"], "EXCLUDE_TABLECFS") or None
    if "SERIAL" in args:
        config.serial = _bool(args["SERIAL"], "SERIAL")
    if "BANDWIDTH" in args:
        config.bandwidth = _int(args["BANDWIDTH"], "BANDWIDTH")
    enabled = str(args.get("STATE", "ENABLED")) != "DISABLED"  # only the exact string disables
    check_peer_config(config)
    storage = sh.peers
    if storage.get(pid) is not None:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Replication peer {pid} already exists")
    _check_queues_deleted(sh, pid)
    _run_peer_op(lambda: storage.add(pid, config, enabled))


def _check_queues_deleted(sh: Shell, pid: str) -> None:
    """ReplicationPeerManager.checkQueuesDeleted: a former peer's queues must be gone first."""
    from minihbase.replication.codec import parse_queue_id
    from minihbase.replication.storage import QueueStorage

    queues = QueueStorage(sh.zk, sh.endpoints["zookeeper"]["znode_parent"])
    for server in queues.replicators():
        for queue_id in queues.queues(server):
            if parse_queue_id(queue_id).peer_id == pid:
                raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: undeleted queue for peerId: "
                                 f"{pid}, replicator: {server}, queueId: {queue_id}")


def _run_peer_op(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except PeerError as e:
        raise ShellError(e.java_text()) from None


def _existing(sh: Shell, peer_id: Any):
    pid = _peer_id(peer_id)
    return pid, _run_peer_op(lambda: sh.peers.require(pid))


def cmd_remove_peer(sh: Shell, peer_id: Any = None) -> None:
    pid, _ = _existing(sh, peer_id)
    sh.peers.remove(pid)


def cmd_enable_peer(sh: Shell, peer_id: Any = None) -> None:
    pid, peer = _existing(sh, peer_id)
    if peer.enabled:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Replication peer {pid} has already "
                         "been enabled")
    sh.peers.set_state(pid, True)


def cmd_disable_peer(sh: Shell, peer_id: Any = None) -> None:
    pid, peer = _existing(sh, peer_id)
    if not peer.enabled:
        raise ShellError(f"org.apache.hadoop.hbase.DoNotRetryIOException: Replication peer {pid} has already "
                         "been disabled")
    sh.peers.set_state(pid, False)


def _update(sh: Shell, peer_id: Any, change: Callable[[PeerConfig], None]) -> None:
    pid, peer = _existing(sh, peer_id)
    config = peer.config
    change(config)
    check_peer_config(config)
    sh.peers.update(pid, config)


def cmd_set_peer_tableCFs(sh: Shell, peer_id: Any = None, table_cfs: Any = None) -> None:  # noqa: N802
    value = None if table_cfs is None else _table_cfs(table_cfs)

    def change(c: PeerConfig) -> None:
        c.table_cfs = value or None
    _update(sh, peer_id, change)


def cmd_append_peer_tableCFs(sh: Shell, peer_id: Any = None, table_cfs: Any = None) -> None:  # noqa: N802
    """`appendTableCFsToReplicationPeerConfig`: appending [] (or to a whole-table entry) means the whole table."""
    add = _table_cfs(table_cfs)

    def change(c: PeerConfig) -> None:
        current = dict(c.table_cfs or {})
        for table, fams in add.items():
            if table in current:
                current[table] = [] if not current[table] or not fams else sorted(set(current[table]) | set(fams))
            else:
                current[table] = list(fams)
        c.table_cfs = current or None
    _update(sh, peer_id, change)


def cmd_remove_peer_tableCFs(sh: Shell, peer_id: Any = None, table_cfs: Any = None) -> None:  # noqa: N802
    """`removeTableCFsFromReplicationPeerConfig`, with HBase's refusals."""
    pid = _peer_id(peer_id)
    remove = _table_cfs(table_cfs)

    def change(c: PeerConfig) -> None:
        if c.table_cfs is None:
            raise ShellError(f"org.apache.hadoop.hbase.replication.ReplicationException: Table-Cfs for peer: {pid} "
                             "is null")
        current = dict(c.table_cfs)
        for table, fams in remove.items():
            if table not in current:
                raise ShellError(f"org.apache.hadoop.hbase.replication.ReplicationException: No table: {table} in "
                                 f"table-cfs config of peer: {pid}")
            have = current[table]
            if not have and not fams:
                del current[table]
            elif have and fams:
                left = [f for f in have if f not in fams]
                if left:
                    current[table] = left
                else:
                    del current[table]
            elif not have:
                raise ShellError(f"org.apache.hadoop.hbase.replication.ReplicationException: Cannot remove cf of "
                                 f"table: {table} which doesn't specify cfs from table-cfs config in peer: {pid}")
            else:
                raise ShellError(f"org.apache.hadoop.hbase.replication.ReplicationException: Cannot remove table: "
                                 f"{table} which has specified cfs from table-cfs config in peer: {pid}")
        c.table_cfs = current or None
    _update(sh, pid, change)


def cmd_show_peer_tableCFs(sh: Shell, peer_id: Any = None) -> None:  # noqa: N802
    _, peer = _existing(sh, peer_id)
    sh.print(table_cfs_string(peer.config.table_cfs) or "")


def cmd_set_peer_bandwidth(sh: Shell, peer_id: Any = None, bandwidth: Any = 0) -> None:
    value = _int(bandwidth if bandwidth is not None else 0, "bandwidth")

    def change(c: PeerConfig) -> None:
        c.bandwidth = value
    _update(sh, peer_id, change)


def cmd_set_peer_replicate_all(sh: Shell, peer_id: Any = None, value: Any = None) -> None:
    if not isinstance(value, bool):
        raise ArgumentError("replicate_all must be true or false")

    def change(c: PeerConfig) -> None:
        c.replicate_all = value
    _update(sh, peer_id, change)


def cmd_set_peer_serial(sh: Shell, peer_id: Any = None, value: Any = None) -> None:
    if not isinstance(value, bool):
        raise ArgumentError("serial must be true or false")

    def change(c: PeerConfig) -> None:
        c.serial = value
    _update(sh, peer_id, change)


def _namespaces_setter(attr: str, mode: str):
    def command(sh: Shell, peer_id: Any = None, namespaces: Any = None) -> None:
        values = _strings(namespaces, "namespaces")

        def change(c: PeerConfig) -> None:
            current = list(getattr(c, attr) or [])
            if mode == "set":
                current = values
            elif mode == "append":
                current += [v for v in values if v not in current]
            else:
                current = [v for v in current if v not in values]
            setattr(c, attr, current or None)
        _update(sh, peer_id, change)
    return command


def cmd_set_peer_exclude_tableCFs(sh: Shell, peer_id: Any = None, table_cfs: Any = None) -> None:  # noqa: N802
    value = None if table_cfs is None else _table_cfs(table_cfs, "exclude table-cfs")

    def change(c: PeerConfig) -> None:
        c.exclude_table_cfs = value or None
    _update(sh, peer_id, change)


def cmd_list_peers(sh: Shell) -> None:
    peers = sh.peers.list()
    sh.print(LIST_PEERS_HEADER, *(list_peers_row(p.peer_id, p.config, p.enabled) for p in peers),
             f"{len(peers)} row(s)")


def cmd_get_peer_config(sh: Shell, peer_id: Any = None) -> None:
    _, peer = _existing(sh, peer_id)
    sh.print(*peer_config_rows(peer.config))


def cmd_list_peer_configs(sh: Shell) -> None:
    for peer in sh.peers.list():
        sh.print(f" PeerId {peer.peer_id}", *peer_config_rows(peer.config), "  ")


def cmd_puts(sh: Shell, *values: Any) -> None:
    """Ruby's `puts`: each value on a line of its own (what a caller keeping the shell open prints as a marker)."""
    sh.print(*([""] if not values else ["" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                                        for v in values]))


def cmd_exit(sh: Shell, code: Any = 0) -> None:
    raise SystemExit(code if isinstance(code, int) else 0)


COMMANDS: dict[str, Callable[..., None]] = {
    **TABLE_COMMANDS, **ADMIN_COMMANDS,  # create/describe/alter (shell_tables); namespaces, switches (shell_admin)
    "disable": cmd_disable, "enable": cmd_enable, "drop": cmd_drop, "truncate": cmd_truncate,
    "truncate_preserve": cmd_truncate_preserve, "list": cmd_list, "exists": cmd_exists, "count": cmd_count,
    "wal_roll": cmd_wal_roll, "hlog_roll": cmd_wal_roll, "status": cmd_status,
    "add_peer": cmd_add_peer, "remove_peer": cmd_remove_peer, "enable_peer": cmd_enable_peer,
    "disable_peer": cmd_disable_peer, "list_peers": cmd_list_peers, "set_peer_tableCFs": cmd_set_peer_tableCFs,
    "append_peer_tableCFs": cmd_append_peer_tableCFs, "remove_peer_tableCFs": cmd_remove_peer_tableCFs,
    "show_peer_tableCFs": cmd_show_peer_tableCFs, "set_peer_bandwidth": cmd_set_peer_bandwidth,
    "set_peer_replicate_all": cmd_set_peer_replicate_all, "set_peer_serial": cmd_set_peer_serial,
    "set_peer_namespaces": _namespaces_setter("namespaces", "set"),
    "append_peer_namespaces": _namespaces_setter("namespaces", "append"),
    "remove_peer_namespaces": _namespaces_setter("namespaces", "remove"),
    "set_peer_exclude_namespaces": _namespaces_setter("exclude_namespaces", "set"),
    "append_peer_exclude_namespaces": _namespaces_setter("exclude_namespaces", "append"),
    "remove_peer_exclude_namespaces": _namespaces_setter("exclude_namespaces", "remove"),
    "set_peer_exclude_tableCFs": cmd_set_peer_exclude_tableCFs,
    "get_peer_config": cmd_get_peer_config, "list_peer_configs": cmd_list_peer_configs,
    "exit": cmd_exit, "quit": cmd_exit, "puts": cmd_puts,
}
from minihbase.shell_data import DATA_COMMANDS  # noqa: E402  (put, get, scan, deleteall; imports this module)

COMMANDS.update(DATA_COMMANDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minihbase shell",
                                     description="hbase shell lookalike for a running minihbase cluster")
    parser.add_argument("-n", "--noninteractive", action="store_true",
                        help="exit with status 1 on the first error (as `hbase shell -n`)")
    parser.add_argument("--cluster", default="dc1")
    parser.add_argument("--workdir", type=lambda s: Path(s).resolve(), default=process.DEFAULT_WORKDIR)
    parser.add_argument("script", nargs="?", help="a script file evaluated before stdin")
    args = parser.parse_args(argv)
    from minihbase.shell_secure import open_shell  # a secured cluster: the ticket cache's principal

    shell = open_shell(args.workdir, args.cluster)
    texts = []
    if args.script:
        try:
            texts.append(Path(args.script).read_text())
        except OSError as e:
            print(f"ERROR: cannot read script {args.script}: {e}", flush=True)
            return 1
    failed = False
    try:
        # The script file whole, then standard input statement by statement as HBase's shell reads it: each
        # statement runs (and its output is flushed) as soon as its last line arrives, so a caller can keep one
        # shell open and feed it statements (clusters.shell.ShellSession).
        for text, first_line in itertools.chain([(t, 1) for t in texts], _chunks(sys.stdin)):
            try:
                for statement in statements(text, first_line):
                    try:
                        shell.execute(statement)
                    except ShellError as e:
                        shell.print(f"ERROR: {e}")
                        failed = True
                        if args.noninteractive:
                            return 1
                    finally:
                        sys.stdout.flush()
            except RubySyntaxError as e:
                shell.print(f"ERROR: SyntaxError: (hbase):{e}")
                failed = True
                if args.noninteractive:
                    return 1
    except SystemExit as e:
        return int(e.code or 0)
    finally:
        sys.stdout.flush()
        shell.close()
    return 1 if failed and args.noninteractive else 0


def _chunks(stream) -> Iterator[tuple[str, int]]:
    """Complete statements from `stream` as its lines arrive, with the number of their first line."""
    buffer, first, number = "", 1, 0
    for line in stream:
        number += 1
        buffer += line
        if not incomplete(buffer):
            yield buffer, first
            buffer, first = "", number + 1
    if buffer.strip():
        yield buffer, first
