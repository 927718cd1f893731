"""No peer is enabled while one of its tables is absent on the target (issue 39).

An enabled peer ships every edit of its tables at once. For a table the target lacks, the sink answers
TableNotFoundException and the source retries that batch without end: every table sharing those queues stalls
and every WAL since stays pinned in oldWALs. (`hbase.replication.drop.on.deleted.table=true` on the sending
cluster's region servers drops such edits instead, but only when the sending cluster lacks the table too:
HBaseInterClusterReplicationEndpoint.filterNotExistTableEdits.) The snapshot path's tables exist on the target only
once cloned, and a failed run may have stopped before creating them, so every path that enables a migration peer
(the enable step, the quota policy `enable_peer`, the failure path) asks here first: the peer's tables (its
TABLE_CFS, read back from the source) against one `list` of the target's tables.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from hbase_migration.replication.model import normalize_table

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)


class TableListUnreadable(RuntimeError):
    """The target's `list` could not be run or read: whether the tables exist is unknown."""


def parse_table_list(output: str) -> set[str]:
    """The shell's `list`: the names between the `TABLE` header and `N row(s)` (`default:` dropped)."""
    lines = [line.strip() for line in output.splitlines()]
    if "TABLE" not in lines:
        raise TableListUnreadable(f"no TABLE header in the shell's `list` output: {output[:300]!r}")
    names = set()
    for line in lines[lines.index("TABLE") + 1:]:
        if re.match(r"^\d+ row\(s\)", line) or line.startswith("Took "):
            break
        if line:
            names.add(normalize_table(line))
    return names


def absent(tables: Iterable[str], listed: Iterable[str]) -> list[str]:
    """Which of `tables` are not among `listed` (names compared as HBase does: `default:t` is `t`), in order."""
    present = {normalize_table(t) for t in listed}
    return [t for t in dict.fromkeys(normalize_table(t) for t in tables) if t not in present]


def list_tables(cluster: "Cluster") -> set[str]:
    """Every table of the cluster: one `list` through its shell."""
    from hbase_migration.clusters import channels

    try:
        out = channels.shell(cluster, ["list"], timeout_s=max(cluster.shell_timeout_s, 60.0))
    except Exception as e:
        raise TableListUnreadable(f"`list` on {cluster.name} failed: {type(e).__name__}: {e}") from None
    return parse_table_list(out.stdout)


@dataclass(frozen=True)
class Gate:
    """Whether a peer may be enabled: its tables, those absent on the target, or why that is unknown."""

    peer_id: str
    target: str
    tables: tuple[str, ...]
    missing: tuple[str, ...] = ()
    error: str | None = None  # the target's tables could not be listed: not enabled either

    @property
    def ok(self) -> bool:
        return not self.missing and self.error is None

    def refusal(self) -> str:
        """Why the peer stays DISABLED (empty when it may be enabled)."""
        if self.error:
            return (f"peer {self.peer_id} not enabled: whether its tables exist on {self.target} is unknown "
                    f"({self.error})")
        if self.missing:
            return (f"peer {self.peer_id} not enabled: its table(s) {', '.join(self.missing)} are absent on "
                    f"{self.target} (an enabled peer would stall every table on its queues with "
                    "TableNotFoundException and keep pinning WALs)")
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {"peer_id": self.peer_id, "target": self.target, "tables": list(self.tables),
                "missing": list(self.missing), "error": self.error}


def peer_tables(admin: Any, peer_id: str, fallback: Sequence[str] = ()) -> tuple[str, ...]:
    """The tables a peer replicates (its TABLE_CFS), else `fallback` (the run's tables)."""
    peer = admin.get_peer(peer_id)
    cfs = dict(peer.config.table_cfs or {}) if peer is not None else {}
    return tuple(normalize_table(t) for t in cfs) or tuple(normalize_table(t) for t in fallback)


def check(target: "Cluster", peer_id: str, tables: Sequence[str]) -> Gate:
    """The gate for `peer_id`, whose `tables` must all exist on `target` (one `list` call)."""
    try:
        missing = absent(tables, list_tables(target))
    except TableListUnreadable as e:
        return Gate(peer_id, target.name, tuple(tables), error=str(e))
    return Gate(peer_id, target.name, tuple(tables), tuple(missing))


def enable_if_tables_exist(source: "Cluster", target: "Cluster", peer_id: str, tables: Sequence[str] = (),
                           dry_run: bool = False) -> tuple[Gate, Any]:
    """Enable the peer on `source` only if each of its tables exists on `target`: (the gate, the enable's
    `PeerOpResult`, None when refused: the peer is left as it was)."""
    from hbase_migration.replication import peer_admin

    with peer_admin(source) as admin:
        gate = check(target, peer_id, peer_tables(admin, peer_id, tables))
        if not gate.ok:
            log.error("%s", gate.refusal())
            return gate, None
        return gate, admin.enable_peer(peer_id, dry_run=dry_run)
