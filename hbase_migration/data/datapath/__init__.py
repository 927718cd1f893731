"""The data path: how copy, verify and repair read and write a cluster's cells, behind one small interface.

`open_data_path(cluster)` picks the implementation once per cluster, from its connection:
- `thrift2` (when the connection names `thrift2_servers`, the `hbase thrift2` gateways): one scan per range
  returns every version of the window, one `putMultiple` writes any mix of timestamps, a delete can remove
  exactly one version. The lossless, fast path.
- `thrift1`: HBase's Thrift1 gateway through happybase (`hbase thrift`), for clusters that run only Thrift1.
  Scans return the newest version of each column only, so older versions cost a `getVer` per column; a write
  carries one timestamp per call, so cells are grouped by timestamp; a delete removes every version at or
  below its timestamp.

Every implementation returns rows as `(row, [(b"family:qualifier", timestamp, value), ...])`, cells in HBase's
order (family, qualifier, newest version first: `scope.cell_order`), only cells inside the asked time range
`[start, end)`, and writes every cell at its own timestamp. Re-writing a cell with its timestamp changes
nothing, so retries and resumed copies are idempotent.

Wide rows: a scan reads with a cell limit per result (Thrift's `TScan.batchSize`), so a row wider than that comes
as consecutive pieces with the same row key, each with the next slice of its cells; readers stitch them by key
(`rows_in` counts rows, verify compares piece by piece). Each scanner call asks for fewer results once the rows
turn out wide (`CallSize`), so a task holds about `call_cells` cells per call whatever the rows' width.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.data.datapath.base import DataPath


def open_data_path(cluster: "Cluster", timeout_s: float | None = None, retries: int = 8,
                   wait_cap_s: float = 20.0, gateway: str | None = None) -> "DataPath":
    """The cluster's data path, chosen once per cluster from its connection (`Cluster.uses_thrift2`), reading
    through `gateway` (one of `Cluster.gateways`; None: the first). After a transport error a session moves to
    another of the cluster's gateways, so a gateway that dies costs its partitions a retry, not the copy."""
    if cluster.uses_thrift2:
        from hbase_migration.data.datapath.thrift2 import Thrift2Path

        return Thrift2Path(cluster, timeout_s, retries, wait_cap_s, gateway)
    from hbase_migration.data.datapath.thrift1 import Thrift1Path

    return Thrift1Path(cluster, timeout_s, retries, wait_cap_s, gateway)

