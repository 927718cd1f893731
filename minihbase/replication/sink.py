"""The replication sink: `POST /replicateWALEntry` on a region server's RPC port (HBase's
`ReplicationSink.replicateEntries`, reached through `AdminService.replicateWALEntry`).

Wire: the body is WAL records exactly as the source read them (minihbase's WAL record encoding, each with its
length and CRC), so entries arrive with their write time, cluster ids, cells, timestamps and key types. The
sink applies them through its cluster's normal client, in order, grouping consecutive entries of one table and
one cluster-id list into one write: cells keep their original timestamps and delete types, and the cluster ids
ride along into this cluster's WAL, so the edits are never shipped back to a cluster they passed through.

The call holds one of the region server's replication handlers (`replication_handler_count`, HBase's
replication call queue) while the writes it makes go, as a batch (`Table.batch`), through the general handlers
of the region servers holding the regions. A region refusing them (a READONLY table: RetriesExhausted-
WithDetailsException naming `region is read only`) fails the call.

Answers 200 `{"applied": n}` once every entry is applied (the source advances its position only then), or an
HBase error (`{"error": "<java class>: message"}`): the source retries, possibly on another sink.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minihbase.errors import HBaseError
from minihbase.httpserver import Request, Response
from minihbase.replication.metrics import SinkMetrics
from minihbase.wal import WAL_MAGIC, decode_records

if TYPE_CHECKING:
    from minihbase.regionserver import RegionServer

log = logging.getLogger(__name__)
PATH = "/replicateWALEntry"


def encode_batch(records: list[bytes]) -> bytes:
    """A request body: the WAL records, prefixed with the WAL magic so a reader can tell what it holds."""
    return WAL_MAGIC + b"".join(records)


def decode_batch(body: bytes):
    if not body.startswith(WAL_MAGIC):
        raise ValueError("replicateWALEntry body is not a batch of WAL records (bad magic)")
    entries, end = decode_records(body[len(WAL_MAGIC):], 0)
    if end != len(body) - len(WAL_MAGIC):
        raise ValueError(f"replicateWALEntry body has a torn or corrupt record at byte {end + len(WAL_MAGIC)}")
    return [e for e, _, _ in entries]


class ReplicationSink:
    def __init__(self, rs: "RegionServer"):
        self.rs = rs
        self.metrics = SinkMetrics()

    def handle(self, request: Request) -> Response:
        if not self.rs.online:
            return Response(503, {"error": f"org.apache.hadoop.hbase.regionserver.RegionServerStoppedException: "
                                           f"Server {self.rs.servername} not running"})
        try:
            entries = decode_batch(request.body)
        except ValueError as e:
            return Response(400, {"error": f"java.io.IOException: {e}"})
        if not entries:
            return Response(200, {"applied": 0})
        try:
            ipc = self.rs.ipc
            # The injected latency is paid by the writes (each a call of a general handler), not twice here.
            ipc.call(ipc.replication, lambda: self.apply(entries), request_size=len(request.body), latency=False)
        except HBaseError as e:
            log.warning("replication sink on %s failed to apply %d entries: %s", self.rs.servername,
                        len(entries), e.java_text())
            return Response(500, {"error": e.java_text()})
        self.metrics.applied(1, len(entries), entries[-1].write_time)
        return Response(200, {"applied": len(entries)})

    def apply(self, entries) -> None:
        client = self.rs.cluster.client
        group: list = []
        key = None
        for entry in entries:
            k = (entry.table, tuple(entry.cluster_ids))
            if k != key and group:
                client.mutate(key[0], group, cluster_ids=list(key[1]), batch=True)
                group = []
            key = k
            group.append(entry.cells)
        if group:
            client.mutate(key[0], group, cluster_ids=list(key[1]), batch=True)
