"""`hbase shell -n` statements for peers and replication status (pure).

Statements are Ruby, so every string goes through `ruby_str`, which writes a
double-quoted literal with `\\`, `"` and `#` escaped (no `#{}` interpolation
can sneak in) and control or non-ASCII characters as escapes.

They run through `channels.shell` (`clusters/shell.py` is the runner); the shell's
output parsers live in `shell_parsers`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from hbase_migration.replication.model import PeerConfig, validate_peer_id

_ESCAPES = {"\\": "\\\\", '"': '\\"', "#": "\\#", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def ruby_str(value: str) -> str:
    """A Ruby double-quoted string literal that evaluates to exactly `value`."""
    if not isinstance(value, str):
        raise TypeError(f"ruby_str expects a str, got {value!r}")
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        elif ord(char) > 0x7E:
            out.append(f"\\u{{{ord(char):X}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def ruby_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(ruby_str(v) for v in values) + "]"


def ruby_string_hash(mapping: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{ruby_str(k)} => {ruby_str(v)}" for k, v in mapping.items()) + "}"


def ruby_table_cfs(table_cfs: Mapping[str, Sequence[str]]) -> str:
    """`{"ns:t1" => [], "t2" => ["cf1", "cf2"]}`: [] means every family."""
    return "{" + ", ".join(f"{ruby_str(t)} => {ruby_list(cfs)}" for t, cfs in table_cfs.items()) + "}"


def add_peer(peer_id: str, config: PeerConfig, enabled: bool = False) -> list[str]:
    """The statements that create `peer_id` with `config`.

    `add_peer` takes CLUSTER_KEY, STATE, TABLE_CFS, NAMESPACES, CONFIG, DATA,
    ENDPOINT_CLASSNAME, SERIAL (2.1+, HBASE-20046; written only when true, so
    older shells never see it) and REMOTE_WAL_DIR (3.x): a serial peer is serial
    from its first instant. It has no key for bandwidth, a bare
    replicate_all=false or exclude lists in every 2.x, so those follow as
    set_peer_* statements in the same session (the shell stops at the first
    error, and the result is read back from ZooKeeper).
    """
    validate_peer_id(peer_id)
    pid = ruby_str(peer_id)
    args = [f"CLUSTER_KEY => {ruby_str(str(config.cluster_key))}"]
    if config.endpoint_class:
        args.append(f"ENDPOINT_CLASSNAME => {ruby_str(config.endpoint_class)}")
    if not enabled:
        args.append('STATE => "DISABLED"')  # only the exact string DISABLED disables
    if config.table_cfs:
        args.append(f"TABLE_CFS => {ruby_table_cfs(config.table_cfs)}")
    if config.namespaces:
        args.append(f"NAMESPACES => {ruby_list(config.namespaces)}")
    if config.configuration:
        args.append(f"CONFIG => {ruby_string_hash(config.configuration)}")
    if config.data:
        args.append(f"DATA => {ruby_string_hash(config.data)}")
    if config.remote_wal_dir:
        args.append(f"REMOTE_WAL_DIR => {ruby_str(config.remote_wal_dir)}")
    if config.serial:
        args.append("SERIAL => true")
    statements = [f"add_peer {pid}, " + ", ".join(args)]
    if not config.replicate_all and not (config.table_cfs or config.namespaces):
        statements.append(f"set_peer_replicate_all {pid}, false")
    if config.exclude_namespaces:
        statements.append(f"set_peer_exclude_namespaces {pid}, {ruby_list(config.exclude_namespaces)}")
    if config.exclude_table_cfs:
        statements.append(f"set_peer_exclude_tableCFs {pid}, {ruby_table_cfs(config.exclude_table_cfs)}")
    if config.bandwidth:
        statements.append(f"set_peer_bandwidth {pid}, {int(config.bandwidth)}")
    return statements


def enable_peer(peer_id: str) -> str:
    return f"enable_peer {ruby_str(validate_peer_id(peer_id))}"


def disable_peer(peer_id: str) -> str:
    return f"disable_peer {ruby_str(validate_peer_id(peer_id))}"


def remove_peer(peer_id: str) -> str:
    return f"remove_peer {ruby_str(validate_peer_id(peer_id))}"


def set_peer_table_cfs(peer_id: str, table_cfs: Mapping[str, Sequence[str]]) -> str:
    """`set_peer_tableCFs` REPLACES the peer's whole table-CFs map (append_peer_tableCFs merges)."""
    return f"set_peer_tableCFs {ruby_str(validate_peer_id(peer_id))}, {ruby_table_cfs(table_cfs)}"


def list_peers() -> str:
    return "list_peers"


def status_replication() -> str:
    return 'status "replication"'
