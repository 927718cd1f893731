"""HBase's synchronous replication (HBASE-19064): whether a cluster has it, and the state transitions of a planned
switch and of a failover, as shell statements an operator runs.

What it is: a peer (the same peer id on both clusters, table-level TABLE_CFS only) whose config names a
REMOTE_WAL_DIR on the *other* cluster's HDFS. The ACTIVE side writes every edit to its own WAL and to a remote WAL
in that directory and acknowledges a write only when both are written; the STANDBY side refuses client reads and
writes of the peer's tables and receives the edits by the usual (asynchronous) replication. When the ACTIVE side
is lost, the STANDBY side is transited to DOWNGRADE_ACTIVE: it replays the remote WALs first, so every write a
client saw acknowledged is there. States (`SyncReplicationState`): NONE (an ordinary peer), ACTIVE,
DOWNGRADE_ACTIVE (replicates asynchronously, writes no remote WAL), STANDBY. The master allows
ACTIVE -> DOWNGRADE_ACTIVE | STANDBY, STANDBY -> DOWNGRADE_ACTIVE, DOWNGRADE_ACTIVE -> STANDBY | ACTIVE
(`ReplicationPeerManager.allowedTransition`); a new sync peer starts in DOWNGRADE_ACTIVE; a sync peer is removed
only from DOWNGRADE_ACTIVE.

Shown on real HBase 3.0.0-alpha-4 with the 3.0.0-alpha-3 shell (realhbase, tests/integration/
test_sync_replication_realhbase.py): these statements as they are; HBase's refusals are the ones `check_steps` makes
(STANDBY -> ACTIVE: `Can not transit current cluster state from STANDBY to ACTIVE`); and one more: ACTIVE needs
the other cluster's HDFS up (the master looks for the remote WAL directory there first), so after a failover the
target stays DOWNGRADE_ACTIVE until the old source is back.

Which releases have it: HBase 3.0.0-alpha-1 and later only. HBase 2.x cannot, whatever its shell: checked in the
2.6.4-hadoop3 jars realhbase runs (hbase-protocol-shaded's `Replication.proto` has no `remoteWALDir` in
`ReplicationPeer`, its `Master.proto` no `TransitReplicationPeerSyncReplicationState` RPC; hbase-client's `Admin`
has no `transitReplicationPeerSyncReplicationState`, `ReplicationPeerConfig` no remote WAL dir; hbase-server has
no `SyncReplicationState`, `TransitPeerSyncReplicationStateProcedure` or `DualAsyncFSWAL` class). The shell command
(`transit_peer_sync_replication_state`) and `add_peer`'s `REMOTE_WAL_DIR` are in the 3.x shell only: a 2.x shell
in front of a 3.x cluster cannot drive it either (`shell_probe_statement` asks the shell).

Pure: version parsing and the support decision over the region servers' versions (ZooKeeper's `rs/` znodes
carry each server's `VersionInfo.version`), the statements, the transition plans. `region_server_versions` reads
ZooKeeper.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hbase_migration.replication.model import validate_peer_id
from hbase_migration.replication.shell import ruby_str, ruby_string_hash, ruby_table_cfs

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

NONE, ACTIVE, DOWNGRADE_ACTIVE, STANDBY = "NONE", "ACTIVE", "DOWNGRADE_ACTIVE", "STANDBY"
STATES = (NONE, ACTIVE, DOWNGRADE_ACTIVE, STANDBY)
ALLOWED = {ACTIVE: frozenset({DOWNGRADE_ACTIVE, STANDBY}), STANDBY: frozenset({DOWNGRADE_ACTIVE}),
           DOWNGRADE_ACTIVE: frozenset({STANDBY, ACTIVE})}
FIRST_RELEASE = (3, 0, 0)  # 3.0.0-alpha-1 (HBASE-19064)
EVIDENCE_2X = (
    "HBase 2.x has no synchronous replication: in the 2.6.4 jars, ReplicationPeer (Replication.proto) has no "
    "remoteWALDir, MasterService (Master.proto) no TransitReplicationPeerSyncReplicationState RPC, Admin no "
    "transitReplicationPeerSyncReplicationState and hbase-server no SyncReplicationState class; HBASE-19064 "
    "shipped in 3.0.0-alpha-1 only")
SHELL_PROBE_PREFIX = "sync_replication_shell="

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


class SyncReplicationUnsupported(ValueError):
    """The clusters (or their shells) cannot do synchronous replication; the message says which and why."""


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """`2.6.4-hadoop3` -> (2, 6, 4); `3.0.0-beta-1` -> (3, 0, 0); None when unreadable."""
    match = _VERSION.match((text or "").strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


@dataclass(frozen=True)
class Support:
    supported: bool
    reasons: tuple[str, ...] = ()  # why not, one per cluster or server
    versions: Mapping[str, Mapping[str, str | None]] | None = None  # cluster -> server -> version


def support(versions: Mapping[str, Mapping[str, str | None]], shells: Mapping[str, bool | None] | None = None
            ) -> Support:
    """Whether synchronous replication can run between these clusters: every live region server of each
    (`{cluster: {servername: version}}`) runs HBase >= 3.0.0 and, when `shells` says so (`{cluster: has the
    transit command}`, None: not asked), its shell has `transit_peer_sync_replication_state`."""
    reasons = []
    for cluster, servers in versions.items():
        if not servers:
            reasons.append(f"{cluster}: no live region server to read a version from")
            continue
        unknown = sorted(s for s, v in servers.items() if parse_version(v) is None)
        old = sorted(f"{s} ({v})" for s, v in servers.items()
                     if parse_version(v) is not None and parse_version(v) < FIRST_RELEASE)
        if unknown:
            reasons.append(f"{cluster}: region server(s) {', '.join(unknown)} publish no version in ZooKeeper: "
                           "cannot tell whether they have synchronous replication (HBase 3.0+)")
        if old:
            reasons.append(f"{cluster}: region server(s) {', '.join(old)} run HBase < 3.0. {EVIDENCE_2X}")
    for cluster, has_command in (shells or {}).items():
        if has_command is False:
            reasons.append(f"{cluster}: its HBase shell has no transit_peer_sync_replication_state (a shell older "
                           "than 3.0): give the connection a 3.x shell_command")
    return Support(not reasons, tuple(reasons), {k: dict(v) for k, v in versions.items()})


def shell_probe_statement() -> str:
    """A statement whose output says whether the shell has the transit command (`parse_shell_probe`)."""
    return (f'puts "{SHELL_PROBE_PREFIX}" + '
            "respond_to?(:transit_peer_sync_replication_state, true).to_s")


def parse_shell_probe(stdout: str) -> bool | None:
    """True/False from the probe's output line; None when absent."""
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith(SHELL_PROBE_PREFIX):
            return text[len(SHELL_PROBE_PREFIX):] == "true"
    return None


def remote_wal_dir(namenode_uri: str, rootdir: str = "/hbase") -> str:
    """The remote WAL directory on a cluster's HDFS (`hdfs://nn:8020` + `<rootdir>/remoteWALs`), as HBase's
    reference guide lays it out: the peer on one cluster names the *other* cluster's directory."""
    if not re.match(r"^[a-z][a-z0-9+.-]*://[^/\s]+$", namenode_uri.rstrip("/")):
        raise ValueError(f"namenode_uri must be a file system URI such as hdfs://nn:8020, got {namenode_uri!r}")
    root = "/" + rootdir.strip("/") if rootdir.strip("/") else ""
    return f"{namenode_uri.rstrip('/')}{root}/remoteWALs"


def add_sync_peer_statement(peer_id: str, cluster_key: str, remote_dir: str, tables: Sequence[str],
                            configuration: Mapping[str, str] | None = None) -> str:
    """`add_peer` of a synchronous peer (HBase 3.x shell): table-level TABLE_CFS (the only scope a sync peer
    takes), the other cluster's remote WAL directory, and `configuration` (the toolkit's owner mark) as CONFIG.
    Created in DOWNGRADE_ACTIVE."""
    validate_peer_id(peer_id)
    if not tables:
        raise ValueError("a synchronous replication peer needs its tables (TABLE_CFS; no namespace or cluster scope)")
    config = f", CONFIG => {ruby_string_hash(configuration)}" if configuration else ""
    return (f"add_peer {ruby_str(peer_id)}, CLUSTER_KEY => {ruby_str(cluster_key)}, REMOTE_WAL_DIR => "
            f"{ruby_str(remote_dir)}, TABLE_CFS => {ruby_table_cfs({t: [] for t in tables})}{config}")


def transit_statement(peer_id: str, state: str) -> str:
    """`transit_peer_sync_replication_state 'id', 'STATE'` (HBase 3.x shell)."""
    if state not in ALLOWED:
        raise ValueError(f"state must be one of {', '.join(sorted(ALLOWED))}, got {state!r}")
    return f"transit_peer_sync_replication_state {ruby_str(validate_peer_id(peer_id))}, {ruby_str(state)}"


@dataclass(frozen=True)
class Step:
    side: str  # "source" | "target": the cluster the transition runs on
    state: str  # the state it goes to
    why: str

    def statement(self, peer_id: str) -> str:
        return transit_statement(peer_id, self.state)


def check_steps(start: Mapping[str, str], steps: Sequence[Step]) -> dict[str, str]:
    """Walk the steps from the sides' states; ValueError naming the first transition HBase would refuse. Returns
    the final states."""
    states = dict(start)
    for i, step in enumerate(steps, 1):
        now = states.get(step.side)
        if now is None:
            raise ValueError(f"step {i}: the state of the {step.side} is not known")
        if step.state not in ALLOWED.get(now, frozenset()):
            raise ValueError(f"step {i}: the {step.side} cannot go from {now} to {step.state} (HBase allows "
                             f"{now} -> {', '.join(sorted(ALLOWED.get(now, ()))) or 'nothing'})")
        states[step.side] = step.state
    return states


def planned_switch() -> list[Step]:
    """The source (ACTIVE) hands over to the target (STANDBY), both up."""
    return [
        Step("source", STANDBY, "the source refuses client reads and writes of the peer's tables: the write fence; "
                                "everything it acknowledged is in the remote WALs on the target's HDFS"),
        Step("target", DOWNGRADE_ACTIVE, "the target replays the remote WALs, then takes client requests: switch "
                                         "the clients now"),
        Step("target", ACTIVE, "the target writes remote WALs to the source's HDFS: synchronous the other way; the "
                               "source stays STANDBY, one transition from taking over again"),
    ]


def failover() -> list[Step]:
    """The source is dead: the target takes over with every acknowledged write; then the old source rejoins.
    The target cannot go to ACTIVE before that: HBase checks the remote WAL directory on the other cluster's HDFS
    first and refuses while it does not answer (real HBase 3.0.0-alpha-4: `ConnectException` at once)."""
    return [
        Step("target", DOWNGRADE_ACTIVE, "the target replays the remote WALs the dead source wrote to its HDFS: every "
                                         "write a client saw acknowledged is there; switch the clients now"),
        Step("source", STANDBY, "once the old source is back (it comes back in the state it had, ACTIVE: send no "
                                "client to it; it may hold edits no client saw acknowledged): straight to STANDBY, "
                                "which refuses clients from then on"),
        Step("target", ACTIVE, "synchronous again, the target active (only now: ACTIVE needs the other side's HDFS)"),
    ]


def plan(kind: str, peer_id: str) -> list[dict[str, str]]:
    """`planned` or `failover`, checked against HBase's allowed transitions from source ACTIVE / target STANDBY,
    as `{side, state, statement, why}`."""
    steps = {"planned": planned_switch, "failover": failover}.get(kind)
    if steps is None:
        raise ValueError(f"kind must be 'planned' or 'failover', got {kind!r}")
    chosen = steps()
    check_steps({"source": ACTIVE, "target": STANDBY}, chosen)
    return [{"side": s.side, "state": s.state, "statement": s.statement(peer_id), "why": s.why} for s in chosen]


def region_server_versions(cluster: "Cluster", zk_client: Any = None) -> dict[str, str | None]:
    """servername -> version, from the live region servers' `rs/` znodes."""
    from hbase_migration.clusters import zk

    if zk_client is None:
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            return {s.servername: s.version for s in zk.live_region_servers(client, cluster.znode_parent)}
    return {s.servername: s.version for s in zk.live_region_servers(zk_client, cluster.znode_parent)}


def check_support(source: "Cluster", target: "Cluster", *, ask_shells: bool = False) -> Support:
    """`support()` over both clusters' region server versions (and, with `ask_shells`, one shell call each)."""
    versions = {"source": region_server_versions(source), "target": region_server_versions(target)}
    shells = None
    if ask_shells:
        from hbase_migration.clusters import channels

        shells = {side: parse_shell_probe(channels.shell(cluster, [shell_probe_statement()]).stdout)
                  for side, cluster in (("source", source), ("target", target))}
    return support(versions, shells)
