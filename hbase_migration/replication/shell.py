"""`hbase shell -n`: statement builders (pure) and the runner.

Statements are Ruby, so every string goes through `ruby_str`, which writes a
double-quoted literal with `\\`, `"` and `#` escaped (no `#{}` interpolation
can sneak in) and control or non-ASCII characters as escapes.

The runner feeds the statements on stdin to the cluster's `shell_command`.
With `-n` the shell exits non-zero on the first error, but HBase 1.x could
exit 0 after printing `ERROR: ...`, so a line of stdout starting with `ERROR`
is a failure too. The shell's output parsers live in `shell_parsers`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from hbase_migration.clusters.cluster import DEFAULT_SHELL_COMMAND
from hbase_migration.replication.errors import ShellCommandError
from hbase_migration.replication.model import PeerConfig, validate_peer_id
from hbase_migration.replication.shell_parsers import (  # noqa: F401 - re-exported for callers
    ListedPeer,
    QueueStatus,
    ReplicationStatus,
    ServerReplicationStatus,
    ShellOutputError,
    SinkStatus,
    parse_list_peers,
    parse_replication_status,
)

log = logging.getLogger(__name__)

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


# --------------------------------------------------------------------------------------------------
# Runner

@dataclass(frozen=True)
class ShellOutput:
    command: tuple[str, ...]
    statements: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def error_lines(stdout: str) -> list[str]:
    """Lines the shell prints for a failed statement (`ERROR <Class>: msg`, 1.x `ERROR: msg`)."""
    return [line.rstrip() for line in stdout.splitlines() if line.startswith("ERROR")]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_shell(statements: Sequence[str], command: Sequence[str] = DEFAULT_SHELL_COMMAND,
              timeout_s: float = 180.0, env: Mapping[str, str] | None = None) -> ShellOutput:
    """Run statements through `command` (stdin), raising ShellCommandError on any failure.

    Failure = the command cannot start, does not finish within `timeout_s`
    (its whole process group is killed: the shell is a JVM with children),
    exits non-zero, or prints a line starting with `ERROR` on stdout.
    """
    command = tuple(command)
    if not command:
        raise ShellCommandError("shell command is empty: set the cluster's shell_command")
    if not statements:
        raise ValueError("no statements to run")
    shown = shlex.join(command)
    script = "\n".join(statements) + "\n"
    log.info("running %d statement(s) through `%s`: %s", len(statements), shown, "; ".join(statements))
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True, env=None if env is None else {**os.environ, **env},
        )
    except OSError as exc:
        raise ShellCommandError(
            f"cannot start the HBase shell `{shown}`: {exc} (check the cluster's shell_command)") from None
    try:
        stdout, stderr = proc.communicate(script, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise ShellCommandError(
            f"`{shown}` did not finish within {timeout_s:g}s running: {'; '.join(statements)}; "
            f"output so far:\n{_tail(stdout + stderr)}", None, stdout) from None
    output = ShellOutput(command, tuple(statements), proc.returncode, stdout, stderr,
                         time.monotonic() - started)
    errors = error_lines(stdout)
    if proc.returncode != 0 or errors:
        detail = "\n".join(errors) if errors else _tail(stderr or stdout)
        raise ShellCommandError(
            f"`{shown}` failed (exit {proc.returncode}) running: {'; '.join(statements)}\n{detail}",
            proc.returncode, stdout)
    return output

