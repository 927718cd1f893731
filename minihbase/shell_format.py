"""What `hbase shell` (2.x) prints, as pure functions: `describe` (its descriptors: `descriptor_text`),
`list_peers`, `status 'replication'` (2.2+ format), dates. Kept byte-faithful to the reference (§2) so that a
parser of real output reads ours.
"""
from __future__ import annotations

import time

from minihbase.descriptor_text import family_text, human_ttl, table_attributes_text
from minihbase.replication.codec import PeerConfig, split_table

__all__ = ["describe", "human_ttl", "java_date", "list_peers_row", "status_replication", "table_cfs_string"]


def java_date(ms: int) -> str:
    """`java.util.Date.toString()`: `EEE MMM dd HH:mm:ss zzz yyyy` in the local zone."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))


def describe(table: dict) -> list[str]:
    """`describe 't'` (describe.rb): the state, the name with `get_table_attributes`, one line per family (each
    followed by an empty line), the row count, the quota line. `table` is `/control/tables`' entry."""
    lines = [f"Table {table['name']} is {'ENABLED' if table['enabled'] else 'DISABLED'}",
             table["name"] + table_attributes_text(table.get("attributes") or {}), "COLUMN FAMILIES DESCRIPTION"]
    families = sorted(table["families"], key=lambda f: f["name"].encode("latin-1"))
    for f in families:
        lines += [family_text(f["name"], dict(f["hbase_values"]), dict(f.get("configuration") or [])), ""]
    lines += [f"{len(families)} row(s)", "Quota is disabled"]
    return lines


# ---------------------------------------------------------------------------------------------- peers
def table_cfs_string(table_cfs: dict[str, list[str]] | None) -> str | None:
    """`ReplicationPeerConfigUtil.convertToString`: `ns.table:cf1,cf2;ns.table2` (the default namespace is
    written out: `default.t1`)."""
    if table_cfs is None:
        return None
    parts = []
    for table, families in table_cfs.items():
        ns, qualifier = split_table(table)
        parts.append(f"{ns}.{qualifier}" + (":" + ",".join(families) if families else ""))
    return ";".join(parts)


def list_peers_row(peer_id: str, config: PeerConfig, enabled: bool) -> str:
    if config.replicate_all:
        namespaces = "!" + ";".join(sorted(config.exclude_namespaces)) if config.exclude_namespaces else None
        table_cfs = "!" + table_cfs_string(config.exclude_table_cfs) if config.exclude_table_cfs else None
    else:
        namespaces = ";".join(sorted(config.namespaces)) if config.namespaces else None
        table_cfs = table_cfs_string(config.table_cfs)
    cells = [peer_id, config.cluster_key, config.endpoint_impl, "ENABLED" if enabled else "DISABLED",
             str(config.replicate_all).lower(), namespaces, table_cfs, str(config.bandwidth),
             str(config.serial).lower()]
    return " " + " ".join("" if c is None else c for c in cells)


LIST_PEERS_HEADER = " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH SERIAL"


def peer_config_rows(config: PeerConfig) -> list[str]:
    """`get_peer_config`'s rows: cluster key, endpoint, then data and configuration pairs."""
    rows = []
    if config.cluster_key:
        rows.append(f" Cluster Key {config.cluster_key}")
    if config.endpoint_impl:
        rows.append(f" Replication Endpoint {config.endpoint_impl}")
    for k, v in config.data.items():
        rows.append(f" {k.decode('utf-8', 'replace')} {v.decode('utf-8', 'replace')}")
    for k, v in config.configuration.items():
        rows.append(f" {k} {v}")
    return rows


# ---------------------------------------------------------------------------------------------- status
def status_replication(status: dict, kind: str = "both") -> list[str]:
    """`status 'replication'` in the 2.2+ format (HBASE-21505), strings as admin.rb builds them."""
    lines = [f"version {status['version']}", f"{status['live_servers']} live servers"]
    for server in status["servers"]:
        sink = server["sink"]
        sink_text = "      SINK:"
        if sink["timestamps_of_last_applied_op"] == sink["timestamp_started"]:
            sink_text += f" TimeStampStarted={sink['timestamp_started']}, Waiting for OPs... "
        else:
            sink_text += (f" TimeStampStarted={sink['timestamp_started']}, AgeOfLastAppliedOp="
                          f"{sink['age_of_last_applied_op']}, TimeStampsOfLastAppliedOp="
                          f"{java_date(sink['timestamps_of_last_applied_op'])}")
        source_text = "       SOURCE:"
        by_peer: dict[str, list[dict]] = {}
        for s in server["sources"]:
            by_peer.setdefault(s["peer_id"], []).append(s)
        for peer_id, sources in by_peer.items():
            source_text += " PeerID=" + peer_id
            for s in sources:
                source_text += ("\n         Recovered Queue: " if s["recovered"] else "\n         Normal Queue: ")
                source_text += s["queue_id"]
                if not s["running"]:
                    source_text += "\n           No Reader/Shipper threads runnning yet."
                    continue
                if s["timestamp_of_last_shipped_op"] == 0:
                    source_text += "\n           No Ops shipped since last restart"
                else:
                    source_text += (f"\n           AgeOfLastShippedOp={s['age_of_last_shipped_op']}, "
                                    f"TimeStampOfLastShippedOp={java_date(s['timestamp_of_last_shipped_op'])}")
                source_text += (f", SizeOfLogQueue={s['size_of_log_queue']}, EditsReadFromLogQueue="
                                f"{s['edits_read']}, OpsShippedToTarget={s['ops_shipped']}")
                if s["edits_since_restart"]:
                    source_text += f", TimeStampOfNextToReplicate={java_date(s['timestamp_next_to_replicate'])}"
                else:
                    source_text += ", No edits for this source since it started"
                source_text += f", Replication Lag={s['replication_lag']}"
        lines.append(f"    {server['hostname']}:")
        if kind in ("both", "source"):
            lines += source_text.split("\n")
        if kind in ("both", "sink"):
            lines.append(sink_text)
    return lines
