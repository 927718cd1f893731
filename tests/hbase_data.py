"""Writing test data into a cluster with stock happybase: keys spread over every region, and cells written with
the exact timestamps a test chooses (Thrift1 `mutateRowsTs`, one call per timestamp)."""
from contextlib import closing

# Split keys for 8 regions over spread_key's hash prefix ("00".."ff"): every region gets rows.
SPLITS = [b"%02x" % b for b in (0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0)]


def spread_key(i: int) -> bytes:
    """Row i's key, prefixed with a hash byte so consecutive rows land in different regions."""
    return b"%02x-%06d" % ((i * 2654435761) % 256, i)


def connect(cluster):
    """A happybase connection to a `MiniCluster` with a generous timeout, closed on exit."""
    return closing(cluster.connection(timeout=60000))


def write_cells(conn, table: str, cells_by_ts: dict) -> None:
    """cells_by_ts: {ts: {row: {column: value}}}, written through happybase's own Thrift client."""
    import happybase  # noqa: F401  (registers the Hbase_thrift module)
    from Hbase_thrift import BatchMutation, Mutation

    for ts, rows in cells_by_ts.items():
        batches = [BatchMutation(row=row, mutations=[Mutation(column=c, value=v) for c, v in cols.items()])
                   for row, cols in rows.items()]
        for i in range(0, len(batches), 2000):
            conn.client.mutateRowsTs(table.encode(), batches[i:i + 2000], ts, {})


DATA_PATHS = ("thrift2", "thrift1")


def connection_json(cluster, data_path: str = "thrift2") -> str:
    """A `MiniCluster`'s Airflow connection as a deployment with that data path has it: minihbase runs a Thrift2
    gateway, which the connection names (`thrift2_servers`); a Thrift1-only cluster's connection does not."""
    import json

    conn = json.loads(cluster.connection_json)
    if data_path == "thrift1":
        conn["extra"].pop("thrift2_servers", None)
    return json.dumps(conn)


def cluster_of(cluster, name: str, data_path: str = "thrift2"):
    """The toolkit's `Cluster` for a `MiniCluster`, reaching it through `data_path`."""
    from hbase_migration.data.jobargs import cluster_from_text

    return cluster_from_text(name, connection_json(cluster, data_path))


def raw_socket(path):
    """The OS socket under a data path's connection (a test drops it to simulate a network failure)."""
    if path.kind == "thrift1":
        return path.session.connection.transport.sock
    return path.session.client._iprot.trans.sock
