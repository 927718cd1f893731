"""Parsers for `hbase shell` output: `list_peers` and `status 'replication'` (HBase's `list_peers.rb` and
`admin.rb#status`, HBase book "Cluster Replication").

`list_peers` rows are the formatter's cells joined by ONE space after a
leading space, and an empty cell (no endpoint, no namespaces...) leaves two
spaces in a row. We split on single spaces when the cell count matches the
header; otherwise (whitespace collapsed by some wrapper) each column is
matched by what its values look like, from both ends, and an ambiguous row is
an error rather than a guess.

`status 'replication'` comes in two shapes: 1.x/2.0-2.1 print every source of
a server on one `SOURCE:` line (` PeerID=...` repeated); 2.2+ print one block
per peer with `Normal Queue:` / `Recovered Queue:` lines. Both are parsed into
the same queue records.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hbase_migration.clusters import zk
from hbase_migration.replication.model import InvalidPeerConfig, parse_table_cfs_string


class ShellOutputError(ValueError):
    """Shell output did not have the expected shape; the message quotes the offending line."""


# --------------------------------------------------------------------------------------------------
# list_peers

# column -> (may be empty, what a value looks like)
_COLUMNS: dict[str, tuple[bool, re.Pattern]] = {
    "PEER_ID": (False, re.compile(r"[A-Za-z0-9_.]+")),
    "CLUSTER_KEY": (True, re.compile(r"nil|\S+:\d+:/\S*")),
    "ENDPOINT_CLASSNAME": (True, re.compile(r"nil|[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+")),
    "REMOTE_ROOT_DIR": (True, re.compile(r"nil|\S*/\S*")),
    "SYNC_REPLICATION_STATE": (False, re.compile(r"NONE|ACTIVE|DOWNGRADE_ACTIVE|STANDBY")),
    "STATE": (False, re.compile(r"ENABLED|DISABLED")),
    "REPLICATE_ALL": (False, re.compile(r"true|false")),
    "NAMESPACES": (True, re.compile(r"!|!?[A-Za-z0-9_;]+")),
    "TABLE_CFS": (True, re.compile(r"!|!?[\w.:;,-]+")),
    "BANDWIDTH": (False, re.compile(r"-?\d+")),
    "SERIAL": (False, re.compile(r"true|false")),
}
_ANY = (True, re.compile(r"\S+"))
# HBase 3.x's list_peers.rb prints the word `nil` where 2.x leaves the cell empty (seen on 3.0.0-alpha-4 with the
# 3.0.0-alpha-3 shell: ` s1 127.0.0.1:2181:/hbase-dc1 nil hdfs://... STANDBY ENABLED false  default.sr1 0 false`)
_NIL_COLUMNS = frozenset({"CLUSTER_KEY", "ENDPOINT_CLASSNAME", "REMOTE_ROOT_DIR"})
_END_OF_TABLE = re.compile(r"^\s*(\d+ row\(s\)|Took \d|=> )")


@dataclass(frozen=True)
class ListedPeer:
    """One `list_peers` row. Namespaces/table-CFs are the shell's strings (`!` = exclude lists)."""

    peer_id: str
    cluster_key: str | None
    state: str
    endpoint_class: str | None = None
    replicate_all: bool | None = None  # None: the shell (1.x) has no such column
    namespaces: str | None = None
    table_cfs: str | None = None
    bandwidth: int | None = None
    serial: bool | None = None
    remote_root_dir: str | None = None
    sync_replication_state: str | None = None

    @property
    def enabled(self) -> bool:
        return self.state == "ENABLED"

    def table_cfs_map(self) -> dict[str, list[str]]:
        """The TABLE_CFS cell as a mapping (`ns.t:cf1,cf2;t2` form); {} when empty or an exclude list."""
        if not self.table_cfs or self.table_cfs.startswith("!"):
            return {}
        try:
            return parse_table_cfs_string(self.table_cfs)
        except InvalidPeerConfig as exc:
            raise ShellOutputError(f"peer {self.peer_id}: TABLE_CFS {self.table_cfs!r}: {exc}") from None


def _rule(column: str) -> tuple[bool, re.Pattern]:
    return _COLUMNS.get(column, _ANY)


def _exact_cells(line: str, columns: list[str]) -> list[str | None] | None:
    cells = (line[1:] if line.startswith(" ") else line).rstrip("\r\n").split(" ")
    if len(cells) != len(columns):
        return None
    out: list[str | None] = []
    for column, cell in zip(columns, cells):
        optional, pattern = _rule(column)
        if cell == "":
            if not optional:
                return None
            out.append(None)
        elif pattern.fullmatch(cell):
            out.append(cell)
        else:
            return None
    return out


def _matched_cells(line: str, columns: list[str]) -> list[str | None]:
    """Assign whitespace-separated tokens to columns by their shapes; exactly one assignment or raise."""
    tokens = line.split()
    found: list[list[str | None]] = []

    def walk(ti: int, ci: int, acc: list[str | None]) -> None:
        if len(found) > 1:
            return
        if ci == len(columns):
            if ti == len(tokens):
                found.append(list(acc))
            return
        optional, pattern = _rule(columns[ci])
        if ti < len(tokens) and pattern.fullmatch(tokens[ti]):
            walk(ti + 1, ci + 1, acc + [tokens[ti]])
        if optional:
            walk(ti, ci + 1, acc + [None])

    walk(0, 0, [])
    if not found:
        raise ShellOutputError(f"list_peers row {line.strip()!r} does not fit the header {' '.join(columns)}")
    if len(found) > 1:
        raise ShellOutputError(
            f"list_peers row {line.strip()!r} is ambiguous once spaces are collapsed "
            f"(header {' '.join(columns)}): read the peer from ZooKeeper instead")
    return found[0]


def _bool(value: str | None) -> bool | None:
    return None if value is None else value == "true"


def parse_list_peers(output: str) -> list[ListedPeer]:
    """Peers from `list_peers` output (1.x, 2.0, 2.1+ with SERIAL, 3.x headers).

    Lines before the header (log noise, a prompt) are ignored; the table ends
    at `N row(s)`, `Took ...` or `=> ...`. No header at all is an error: the
    output is not what `list_peers` prints.
    """
    lines = output.splitlines()
    for index, line in enumerate(lines):
        words = line.split()
        if words[:2] == ["PEER_ID", "CLUSTER_KEY"] and "STATE" in words:
            columns = words
            break
    else:
        raise ShellOutputError("no list_peers header (PEER_ID CLUSTER_KEY ... STATE ...) in the shell output")
    peers = []
    for line in lines[index + 1:]:
        if _END_OF_TABLE.match(line):
            break
        if not line.strip():
            continue
        cells = _exact_cells(line, columns) or _matched_cells(line, columns)
        row = {column: None if column in _NIL_COLUMNS and cell == "nil" else cell
               for column, cell in zip(columns, cells)}
        bandwidth = row.get("BANDWIDTH")
        peers.append(ListedPeer(
            peer_id=row["PEER_ID"] or "",
            cluster_key=row.get("CLUSTER_KEY"),
            state=row["STATE"] or "",
            endpoint_class=row.get("ENDPOINT_CLASSNAME"),
            replicate_all=_bool(row.get("REPLICATE_ALL")),
            namespaces=row.get("NAMESPACES"),
            table_cfs=row.get("TABLE_CFS"),
            bandwidth=None if bandwidth is None else int(bandwidth),
            serial=_bool(row.get("SERIAL")),
            remote_root_dir=row.get("REMOTE_ROOT_DIR"),
            sync_replication_state=row.get("SYNC_REPLICATION_STATE"),
        ))
    return peers


# --------------------------------------------------------------------------------------------------
# status 'replication'

@dataclass(frozen=True)
class QueueStatus:
    """One replication source (queue) of one region server, as the shell reports it.

    Numbers the shell did not print are None. `shipped_since_restart` is False
    for "No Ops shipped since last restart", `edits_since_start` False for
    "No edits for this source since it started", `running` False for "No
    Reader/Shipper threads runnning yet." (HBase's spelling).
    """

    queue_id: str
    peer_id: str
    recovered: bool
    age_of_last_shipped_op: int | None = None
    size_of_log_queue: int | None = None
    replication_lag: int | None = None
    edits_read: int | None = None
    ops_shipped: int | None = None
    timestamp_of_last_shipped_op: str | None = None
    timestamp_of_next_to_replicate: str | None = None
    running: bool = True
    shipped_since_restart: bool = True
    edits_since_start: bool = True
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SinkStatus:
    age_of_last_applied_op: int | None = None
    timestamp_started: int | None = None
    timestamps_of_last_applied_op: str | None = None
    waiting_for_ops: bool = False
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerReplicationStatus:
    host: str  # the shell prints the host name only: two servers on one host share it
    queues: list[QueueStatus]
    sink: SinkStatus | None


@dataclass(frozen=True)
class ReplicationStatus:
    version: str | None
    live_servers: int | None
    servers: list[ServerReplicationStatus]
    format: str  # "2.2+" (per-queue blocks) or "1.x" (one SOURCE line per server)

    def queues_of(self, peer_id: str) -> list[tuple[str, QueueStatus]]:
        """(host, queue) for every queue of `peer_id`, recovered ones included."""
        return [(s.host, q) for s in self.servers for q in s.queues if q.peer_id == peer_id]


_SERVER = re.compile(r"^ {4}(\S.*?):\s*$")
_SOURCE = re.compile(r"^\s+SOURCE\s*:(.*)$")
_SINK = re.compile(r"^\s+SINK\s*:(.*)$")
_QUEUE = re.compile(r"\s*(Normal|Recovered) Queue: (\S+)")
_PHRASES = {
    "No Ops shipped since last restart": "shipped_since_restart",
    "No edits for this source since it started": "edits_since_start",
    "No Reader/Shipper threads runnning yet.": "running",
    "No Reader/Shipper threads running yet.": "running",
}
_INT_FIELDS = {
    "AgeOfLastShippedOp": "age_of_last_shipped_op", "SizeOfLogQueue": "size_of_log_queue",
    "Replication Lag": "replication_lag", "EditsReadFromLogQueue": "edits_read",
    "OpsShippedToTarget": "ops_shipped",
}
_TEXT_FIELDS = {
    "TimeStampOfLastShippedOp": "timestamp_of_last_shipped_op",
    "TimeStampsOfLastShippedOp": "timestamp_of_last_shipped_op",  # 1.x spelling
    "TimeStampOfNextToReplicate": "timestamp_of_next_to_replicate",
}


def _items(text: str) -> list[str]:
    """`a=1, b=Mon Jul 18 09:53:28 CST 2016, No edits ...` -> items (dates hold no comma)."""
    return [item.strip() for item in re.split(r",\s+|\n", text) if item.strip()]


def _int(key: str, value: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ShellOutputError(f"{where}: {key}={value!r} is not an integer") from None


def _queue(queue_id: str, body: str, where: str, peer_id: str | None = None) -> QueueStatus:
    parsed = zk.parse_queue_id(queue_id)
    values: dict[str, object] = {}
    raw: dict[str, str] = {}
    for item in _items(body):
        if item in _PHRASES:
            values[_PHRASES[item]] = False
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise ShellOutputError(f"{where}: unexpected text {item!r} in queue {queue_id!r}")
        key = key.strip()
        raw[key] = value
        if key in _INT_FIELDS:
            values[_INT_FIELDS[key]] = _int(key, value, where)
        elif key in _TEXT_FIELDS:
            values[_TEXT_FIELDS[key]] = value
    return QueueStatus(queue_id=queue_id, peer_id=peer_id or parsed.peer_id, recovered=parsed.recovered,
                       fields=raw, **values)  # type: ignore[arg-type]


def _sources(text: str, where: str) -> tuple[list[QueueStatus], bool]:
    """Queues from the text after `SOURCE:` (all its lines); also whether it was the 2.2+ shape."""
    queues: list[QueueStatus] = []
    multi_line = False
    for chunk in re.split(r"\s*PeerID=", text)[1:]:
        if _QUEUE.search(chunk):
            multi_line = True
            peer_id = chunk.split("\n", 1)[0].strip()
            parts = _QUEUE.split(chunk)  # [peer line, kind, queue id, body, kind, queue id, body...]
            for i in range(1, len(parts), 3):
                queue_id, body = parts[i + 1], parts[i + 2]
                queue = _queue(queue_id, body, where, peer_id)
                if (parts[i] == "Recovered") != queue.recovered:
                    raise ShellOutputError(f"{where}: {parts[i]} Queue {queue_id!r} contradicts its queue id")
                queues.append(queue)
        else:  # 1.x/2.0: `<queue id>, AgeOfLastShippedOp=..., ..., Replication Lag=N`
            queue_id, _, body = chunk.partition(", ")  # server names in queue ids hold bare commas
            queues.append(_queue(queue_id.strip(), body, where))
    return queues, multi_line


def _sink(text: str, where: str) -> SinkStatus:
    values: dict[str, object] = {}
    raw: dict[str, str] = {}
    for item in _items(text):
        if item.startswith("Waiting for OPs"):
            values["waiting_for_ops"] = True
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise ShellOutputError(f"{where}: unexpected sink text {item!r}")
        raw[key.strip()] = value
    if "AgeOfLastAppliedOp" in raw:
        values["age_of_last_applied_op"] = _int("AgeOfLastAppliedOp", raw["AgeOfLastAppliedOp"], where)
    if "TimeStampStarted" in raw:
        values["timestamp_started"] = _int("TimeStampStarted", raw["TimeStampStarted"], where)
    if "TimeStampsOfLastAppliedOp" in raw:
        values["timestamps_of_last_applied_op"] = raw["TimeStampsOfLastAppliedOp"]
    return SinkStatus(fields=raw, **values)  # type: ignore[arg-type]


def parse_replication_status(output: str) -> ReplicationStatus:
    """Parse `status 'replication'` (also its 'source' / 'sink' variants) in either format."""
    version = live = None
    servers: list[ServerReplicationStatus] = []
    host: str | None = None
    source_lines: list[str] = []
    sink_text: str | None = None
    section = None
    multi_line = False

    def flush() -> None:
        nonlocal multi_line
        if host is None:
            return
        where = f"server {host}"
        queues, shape = _sources("\n".join(source_lines), where)
        multi_line = multi_line or shape
        servers.append(ServerReplicationStatus(host, queues, _sink(sink_text, where) if sink_text else None))

    for line in output.splitlines():
        if match := re.match(r"^version (\S+)", line):
            version = match.group(1)
        elif match := re.match(r"^(\d+) live servers?", line):
            live = int(match.group(1))
        elif match := _SOURCE.match(line):
            section = "source"
            source_lines.append(match.group(1))
        elif match := _SINK.match(line):
            section = "sink"
            sink_text = match.group(1)
        elif (match := _SERVER.match(line)) and "SOURCE" not in line and "SINK" not in line:
            flush()
            host, source_lines, sink_text, section = match.group(1), [], None, None
        elif section == "source" and line.startswith("    ") and line.strip():
            source_lines.append(line)
        else:  # a blank line, `Took ...`, log noise: the current block is over
            section = None
    flush()
    if version is None and live is None and not servers:
        raise ShellOutputError(
            "no `status 'replication'` output found (expected 'version', 'N live servers')")
    return ReplicationStatus(version, live, servers, "2.2+" if multi_line else "1.x")
