"""Airflow hooks: an Airflow Connection in, a library object out. No I/O until asked."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from airflow.sdk import BaseHook

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster


def table_names(tables: Sequence[str] | str) -> list[str]:
    """An operator's `tables` argument as a list (one table may be given as a plain string). The names are
    validated by the run spec (in the DAGs) or by the library call they reach."""
    return [tables] if isinstance(tables, str) else list(tables)


class HBaseClusterHook(BaseHook):
    """One HBase cluster, described by an Airflow Connection of type `hbase` (registered with its form fields
    by this repository's provider entry point, `hbase_migration_provider.py`).

    Host and port are the Thrift1 server; extras hold `zookeeper_quorum` (required), `zookeeper_port`,
    `znode_parent`, `info_port` (omit to read each region server's from ZooKeeper), `webhdfs_url`, `rootdir`,
    `peer_admin` (`shell` for HBase 2.x+, `zookeeper` for 1.x) and `shell_command` (default `hbase shell -n`).
    """

    conn_name_attr = "hbase_conn_id"
    default_conn_name = "hbase_source"
    conn_type = "hbase"
    hook_name = "HBase cluster (migration toolkit)"

    def __init__(self, hbase_conn_id: str = default_conn_name, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hbase_conn_id = hbase_conn_id

    def get_cluster(self) -> "Cluster":
        from hbase_migration.clusters.cluster import Cluster

        conn = self.get_connection(self.hbase_conn_id)
        return Cluster.from_connection(self.hbase_conn_id, conn.host, conn.port, conn.extra_dejson)

    def get_conn(self) -> "Cluster":
        return self.get_cluster()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict:
        """The Connections form's behaviour, as the provider info declares it (`hbase_migration.operators.provider`,
        which Airflow 3 reads instead of this method)."""
        from hbase_migration.operators.provider import UI_FIELD_BEHAVIOUR as declared

        return {"hidden_fields": list(declared["hidden-fields"]), "relabeling": dict(declared["relabeling"]),
                "placeholders": dict(declared["placeholders"])}
