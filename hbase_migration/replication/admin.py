"""Peer administration behind one interface, for HBase 2.x+ (shell) and 1.x (ZooKeeper).

Every operation follows the same rules, whatever the backend:

- checks come first and change nothing: the peer id, the config, who owns an
  existing peer, leftover queues of a former peer with the same id;
- add_peer of an id that exists with the same config and our ownership mark is
  a no-op ("unchanged", the peer's state left as found); with another config,
  or without our mark, it is refused with both configs in the message;
- remove_peer, and any change to a peer we do not own, needs `force=True`;
- after every change the peer is read back from ZooKeeper (peer znode and
  peer-state bytes) until it shows what was asked, or a PeerStateMismatch
  reports exactly what it shows;
- `dry_run=True` runs the checks and returns the commands that would run.

Backends only know how to express a change (shell statements or znode writes).
"""
from __future__ import annotations

import abc
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.shell import ShellCommandError
from hbase_migration.replication import zk_peers
from hbase_migration.replication.errors import (
    PeerAdminError,
    PeerConflict,
    PeerNotFound,
    PeerNotOurs,
    PeerStateMismatch,
)
from hbase_migration.replication.model import (
    DEFAULT_OWNER,
    InvalidPeerConfig,
    Peer,
    PeerConfig,
    is_ours,
    validate_peer_id,
)
from hbase_migration.replication.result import PeerOpResult, planned

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)


def _json(config: PeerConfig | None) -> str:
    import json

    return "none" if config is None else json.dumps(config.describe(), sort_keys=True)


class PeerAdmin(abc.ABC):
    """Replication peer operations on one (source) cluster.

    `zk_client`: a started KazooClient for the cluster's quorum, owned by the
    caller; when None, the admin opens one on first use and closes it in
    `close()` (or at the end of a `with` block). `owner` is the ownership mark
    stamped on the peers this admin creates and required on the peers it changes.
    `confirm_timeout_s` bounds the read-back after a change (default: the
    cluster's timeout_s).
    """

    backend = "abstract"

    def __init__(self, cluster: Cluster, zk_client: "KazooClient | None" = None, owner: str = DEFAULT_OWNER,
                 confirm_timeout_s: float | None = None):
        if not isinstance(cluster, Cluster):
            raise TypeError(f"cluster must be a hbase_migration.clusters.cluster.Cluster, got {cluster!r}")
        if not isinstance(owner, str) or not owner.strip():
            raise InvalidPeerConfig(f"owner must be a non-empty string, got {owner!r}")
        self.cluster = cluster
        self.owner = owner
        self.parent = cluster.znode_parent
        self.confirm_timeout_s = cluster.timeout_s if confirm_timeout_s is None else float(confirm_timeout_s)
        self._client = zk_client
        self._owns_client = zk_client is None
        self._stack = contextlib.ExitStack()

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def zk(self) -> "KazooClient":
        if self._client is None:
            self._client = self._stack.enter_context(zk.connect(self.cluster, self.cluster.timeout_s))
        return self._client

    def close(self) -> None:
        """Close the ZooKeeper session this admin opened itself (a caller's client is left alone)."""
        self._stack.close()
        if self._owns_client:
            self._client = None  # a later call opens a fresh session

    def __enter__(self) -> "PeerAdmin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _where(self) -> str:
        return f"cluster {self.cluster.name!r} ({self.cluster.cluster_key})"

    # -- reads ---------------------------------------------------------------------------------

    def list_peers(self) -> list[Peer]:
        return zk_peers.read_peers(self.zk, self.parent)

    def get_peer(self, peer_id: str) -> Peer | None:
        return zk_peers.read_peer(self.zk, self.parent, validate_peer_id(peer_id))

    # -- backend hooks: return the commands, run them only when execute is true ----------------

    @abc.abstractmethod
    def _add(self, peer_id: str, config: PeerConfig, enabled: bool, execute: bool) -> list[str]: ...

    @abc.abstractmethod
    def _set_state(self, peer_id: str, enabled: bool, current: zk_peers.PeerZnodes,
                   execute: bool) -> list[str]: ...

    @abc.abstractmethod
    def _remove(self, peer_id: str, execute: bool) -> list[str]: ...

    @abc.abstractmethod
    def _set_table_cfs(self, peer_id: str, config: PeerConfig, current: zk_peers.PeerZnodes,
                       execute: bool) -> list[str]: ...

    # -- shared checks -------------------------------------------------------------------------

    def _existing(self, peer_id: str) -> tuple[zk_peers.PeerZnodes, Peer]:
        znodes = zk_peers.read_peer_znodes(self.zk, self.parent, peer_id)
        if znodes is None:
            raise PeerNotFound(f"peer {peer_id!r} does not exist on {self._where()}")
        return znodes, zk_peers.decode_peer(znodes, self.parent)

    def _require_ours(self, peer: Peer, operation: str, force: bool) -> None:
        if is_ours(peer, self.owner):
            return
        if force:
            log.warning("%s of peer %s on %s: the peer is not ours (owner mark %r); going ahead because "
                        "force=True", operation, peer.id, self._where(), peer.owner)
            return
        what = (f"{operation} refused: peer {peer.id!r} on {self._where()} was not created by {self.owner!r} "
                f"(owner mark: {peer.owner!r}); nothing was changed")
        raise PeerNotOurs(f"{what}. Pass force=True only if you are sure this peer may be touched. "
                          f"Peer: {_json(peer.config)}", what)

    def _confirm(self, operation: str, peer_id: str, want: Callable[[Peer | None], bool],
                 expected: str) -> Peer | None:
        """Poll ZooKeeper until `want(peer)` holds; raise with the exact state found otherwise."""
        deadline = time.monotonic() + self.confirm_timeout_s
        delay = 0.02
        while True:
            found = zk_peers.read_peer(self.zk, self.parent, peer_id)
            if want(found):
                return found
            if time.monotonic() >= deadline:
                shown = "absent" if found is None else f"{found.state} with config {_json(found.config)}"
                raise PeerStateMismatch(
                    f"after {operation}, ZooKeeper shows peer {peer_id!r} on {self._where()} {shown}; "
                    f"expected {expected} (waited {self.confirm_timeout_s:g}s)", found)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _applying(self, operation: str, peer_id: str, action: Callable[[], list[str]]) -> list[str]:
        """Run a backend action; if it fails, say in the error what ZooKeeper shows afterwards."""
        try:
            return action()
        except (PeerAdminError, ShellCommandError) as exc:
            try:
                found = zk_peers.read_peer(self.zk, self.parent, peer_id)
                shown = "absent" if found is None else f"{found.state} with config {_json(found.config)}"
            except Exception as read_error:  # the report must not hide the original failure
                found, shown = None, f"unreadable ({read_error})"
            exc.args = (f"{exc.args[0] if exc.args else exc}\nafter the failed {operation}, ZooKeeper shows "
                        f"peer {peer_id!r} on {self._where()}: {shown}",) + tuple(exc.args[1:])
            exc.found = found  # type: ignore[attr-defined]
            raise

    def _result(self, operation: str, peer_id: str, outcome: str, dry_run: bool, commands: Sequence[str],
                peer: Peer | None, message: str) -> PeerOpResult:
        result = PeerOpResult(operation, peer_id, outcome, dry_run, list(commands), peer, message)
        log.info("%s%s", "[dry run] " if dry_run else "", message)
        return result

    # -- operations ----------------------------------------------------------------------------

    def add_peer(self, peer_id: str, config: PeerConfig, enabled: bool = False,
                 dry_run: bool = False) -> PeerOpResult:
        """Create `peer_id` (DISABLED unless `enabled`), stamped with this admin's owner mark."""
        validate_peer_id(peer_id)
        if not isinstance(config, PeerConfig):
            raise InvalidPeerConfig(f"config must be a PeerConfig, got {config!r}")
        if config.owner is not None and config.owner != self.owner:
            raise InvalidPeerConfig(
                f"config carries owner mark {config.owner!r} but this admin acts for {self.owner!r}")
        wanted = config.with_owner(self.owner)
        state = "ENABLED" if enabled else "DISABLED"

        current = self.get_peer(peer_id)
        if current is not None:
            if not is_ours(current, self.owner):
                raise PeerConflict(
                    f"add_peer refused: peer {peer_id!r} already exists on {self._where()} and was not "
                    f"created by {self.owner!r} (owner mark: {current.owner!r}); nothing was changed.\n"
                    f"  existing ({current.state}): {_json(current.config)}\n  requested: {_json(wanted)}")
            if current.config != wanted:
                raise PeerConflict(
                    f"add_peer refused: peer {peer_id!r} on {self._where()} is ours but has another config; "
                    f"nothing was changed. Differences (existing != requested): "
                    f"{'; '.join(current.config.differences(wanted))}\n"
                    f"  existing ({current.state}): {_json(current.config)}\n  requested: {_json(wanted)}")
            if current.enabled is None:
                raise PeerAdminError(
                    f"add_peer refused: peer {peer_id!r} on {self._where()} has no peer-state znode (a "
                    "half-created peer); nothing was changed. Remove it (remove_peer) and add it again.")
            note = "" if current.enabled == enabled else (
                f" (it is {current.state}: add_peer never changes the state of an existing peer)")
            return self._result("add_peer", peer_id, "unchanged", dry_run, [], current,
                                f"peer {peer_id} already exists on {self._where()} with this config{note}")

        if wanted.cluster_key.normalized() == self.cluster.cluster_key.normalized():
            raise InvalidPeerConfig(
                f"peer {peer_id!r}: cluster_key {wanted.cluster_key} is {self._where()} itself; "
                "a cluster cannot replicate to itself")
        if self.zk.exists(self.parent) is None:
            raise zk.ZnodeMissing(f"znode parent {self.parent} of {self._where()} does not exist: "
                                  "wrong znode_parent, or HBase never ran there")
        leftovers = zk_peers.leftover_queues(self.zk, self.parent, peer_id)
        if leftovers:
            raise PeerConflict(
                f"add_peer refused: replication queues of a former peer {peer_id!r} remain on "
                f"{self._where()} ({', '.join(leftovers)}); HBase refuses this too (checkQueuesDeleted). "
                "Wait for the region servers to drop them, or use another peer id.")

        commands = self._applying("add_peer", peer_id,
                                  lambda: self._add(peer_id, wanted, enabled, execute=not dry_run))
        if dry_run:
            return self._result("add_peer", peer_id, planned("created", True), True, commands, None,
                                f"would create peer {peer_id} {state} on {self._where()}")
        found = self._confirm("add_peer", peer_id,
                              lambda p: p is not None and p.enabled is enabled and p.config == wanted
                              and is_ours(p, self.owner),
                              f"{state} with config {_json(wanted)}")
        return self._result("add_peer", peer_id, "created", False, commands, found,
                            f"created peer {peer_id} {state} on {self._where()}")

    def enable_peer(self, peer_id: str, dry_run: bool = False, force: bool = False) -> PeerOpResult:
        return self._change_state(peer_id, True, dry_run, force)

    def disable_peer(self, peer_id: str, dry_run: bool = False, force: bool = False) -> PeerOpResult:
        return self._change_state(peer_id, False, dry_run, force)

    def _change_state(self, peer_id: str, enabled: bool, dry_run: bool, force: bool) -> PeerOpResult:
        operation = "enable_peer" if enabled else "disable_peer"
        state = "ENABLED" if enabled else "DISABLED"
        validate_peer_id(peer_id)
        znodes, current = self._existing(peer_id)
        self._require_ours(current, operation, force)
        if current.enabled is enabled:
            return self._result(operation, peer_id, "unchanged", dry_run, [], current,
                                f"peer {peer_id} on {self._where()} is already {state}")
        if current.enabled is None:
            raise PeerAdminError(
                f"{operation} refused: peer {peer_id!r} on {self._where()} has no peer-state znode (a "
                "half-created peer); nothing was changed. Remove it (remove_peer) and add it again.")
        commands = self._applying(operation, peer_id,
                                  lambda: self._set_state(peer_id, enabled, znodes, execute=not dry_run))
        outcome = "enabled" if enabled else "disabled"
        if dry_run:
            return self._result(operation, peer_id, planned(outcome, True), True, commands, current,
                                f"would set peer {peer_id} on {self._where()} {state} (now {current.state})")
        found = self._confirm(operation, peer_id,
                              lambda p: p is not None and p.enabled is enabled and p.config == current.config,
                              f"{state} with config {_json(current.config)}")
        return self._result(operation, peer_id, outcome, False, commands, found,
                            f"peer {peer_id} on {self._where()} is now {state}")

    def remove_peer(self, peer_id: str, force: bool = False, dry_run: bool = False) -> PeerOpResult:
        """Remove `peer_id`; a peer without our owner mark needs `force=True`. Absent = no-op."""
        validate_peer_id(peer_id)
        current = self.get_peer(peer_id)
        if current is None:
            return self._result("remove_peer", peer_id, "absent", dry_run, [], None,
                                f"peer {peer_id} does not exist on {self._where()}: nothing to remove")
        self._require_ours(current, "remove_peer", force)
        commands = self._applying("remove_peer", peer_id, lambda: self._remove(peer_id, execute=not dry_run))
        if dry_run:
            return self._result("remove_peer", peer_id, planned("removed", True), True, commands, current,
                                f"would remove peer {peer_id} ({current.state}) from {self._where()}")
        self._confirm("remove_peer", peer_id, lambda p: p is None, "absent")
        return self._result("remove_peer", peer_id, "removed", False, commands, None,
                            f"removed peer {peer_id} from {self._where()}")

    def set_table_cfs(self, peer_id: str, table_cfs: Mapping[str, Sequence[str]], dry_run: bool = False,
                      force: bool = False) -> PeerOpResult:
        """Replace the peer's TABLE_CFS (table -> families, [] = all families)."""
        validate_peer_id(peer_id)
        if not table_cfs:
            raise InvalidPeerConfig(
                "table_cfs must name at least one table: an empty TABLE_CFS replicates nothing on HBase 2 "
                "and everything on HBase 1")
        znodes, current = self._existing(peer_id)
        self._require_ours(current, "set_table_cfs", force)
        if current.config.replicate_all:
            raise PeerConflict(
                f"set_table_cfs refused: peer {peer_id!r} on {self._where()} replicates all tables "
                "(replicate_all=true); HBase refuses TABLE_CFS on such a peer. Nothing was changed.")
        wanted = current.config.replace(table_cfs=dict(table_cfs))
        if wanted == current.config:
            return self._result("set_table_cfs", peer_id, "unchanged", dry_run, [], current,
                                f"peer {peer_id} on {self._where()} already has these table-CFs")
        commands = self._applying("set_table_cfs", peer_id,
                                  lambda: self._set_table_cfs(peer_id, wanted, znodes, execute=not dry_run))
        if dry_run:
            return self._result(
                "set_table_cfs", peer_id, planned("updated", True), True, commands, current,
                f"would set table-CFs of peer {peer_id} on {self._where()} to {wanted.table_cfs}")
        found = self._confirm("set_table_cfs", peer_id,
                              lambda p: p is not None and p.config == wanted and p.enabled is current.enabled,
                              f"{current.state} with table_cfs {wanted.table_cfs}")
        return self._result("set_table_cfs", peer_id, "updated", False, commands, found,
                            f"table-CFs of peer {peer_id} on {self._where()} are now {wanted.table_cfs}")
