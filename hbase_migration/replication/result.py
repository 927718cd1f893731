"""The small result every peer operation returns (and `--json` prints)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hbase_migration.replication.model import Peer

# outcome when the change is made -> outcome reported by a dry run
_WOULD = {"created": "would_create", "enabled": "would_enable", "disabled": "would_disable",
          "removed": "would_remove", "updated": "would_update"}


@dataclass(frozen=True)
class PeerOpResult:
    """What an operation did (or, with dry_run, would do).

    outcome: created | enabled | disabled | removed | updated when something
    changed; unchanged | absent when nothing had to; would_<verb> for a dry
    run that would change something. `commands` are the shell statements or
    znode writes run (or that would run); `peer` is the peer as read back from
    ZooKeeper afterwards (as found, for no-ops and dry runs; None if absent).
    """

    operation: str
    peer_id: str
    outcome: str
    dry_run: bool
    commands: list[str] = field(default_factory=list)
    peer: Peer | None = None
    message: str = ""

    @property
    def changed(self) -> bool:
        return self.outcome in _WOULD and not self.dry_run

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation, "peer_id": self.peer_id, "outcome": self.outcome,
            "changed": self.changed, "dry_run": self.dry_run, "commands": list(self.commands),
            "peer": self.peer.describe() if self.peer else None, "message": self.message,
        }


def planned(outcome: str, dry_run: bool) -> str:
    """The outcome word for a change: itself, or its would_ form in a dry run."""
    return _WOULD[outcome] if dry_run else outcome
