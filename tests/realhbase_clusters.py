"""The session's real clusters (the `realhbase` bed) with the verbs the toolkit's integration tests use on the
stand-in's `MiniCluster` (minihbase/testing.py): addresses, the toolkit's connection, a happybase connection,
tables created and dropped through Thrift2 (no shell JVM: seconds, not tens of seconds), WAL rolls, region server
kills, HDFS quotas. A test moved from the stand-in to real HBase keeps its body; `realhbase_pair` in
tests/realhbase_fixtures.py gives (dc1, dc2).

Each test works in its own tables (and peers): the bed is shared by the whole session.
"""
from __future__ import annotations

import json
from typing import Any

from bedkit.idl import thrift_modules


def _thrift2():
    return thrift_modules("tests_realhbase")[1]


class RealCluster:
    def __init__(self, bed, name: str):
        self.bed, self.name = bed, name

    # ------------------------------------------------------------------------------------------ addresses
    @property
    def endpoints(self) -> dict:
        return self.bed.endpoints()[self.name]

    @property
    def cluster_key(self) -> str:
        return self.endpoints["cluster_key"]

    @property
    def znode_parent(self) -> str:
        return self.endpoints["zookeeper"]["znode_parent"]

    @property
    def zk_hosts(self) -> str:
        return self.endpoints["zookeeper"]["hosts"]

    @property
    def webhdfs_url(self) -> str:
        return self.endpoints["webhdfs_url"]

    @property
    def rootdir(self) -> str:
        return self.endpoints["rootdir"]

    @property
    def thrift_host(self) -> str:
        return self.endpoints["thrift"]["host"]

    @property
    def thrift_port(self) -> int:
        return self.endpoints["thrift"]["port"]

    @property
    def region_servers(self) -> list[dict]:
        return self.endpoints["region_servers"]

    @property
    def connection_json(self) -> str:
        return json.dumps(self.endpoints["connection"])

    def connection(self, **kwargs):
        import happybase

        return happybase.Connection(self.thrift_host, self.thrift_port, timeout=kwargs.pop("timeout", 60_000),
                                    **kwargs)

    # ------------------------------------------------------------------------------------------ tables
    def _client(self):
        from thriftpy2.rpc import make_client

        t2 = self.endpoints["thrift2"]
        return make_client(_thrift2().THBaseService, t2["host"], t2["port"], timeout=120_000)

    def create_table(self, name: str, families: dict[str, dict], split_keys: list[bytes] | None = None) -> None:
        """A (pre-split) table through Thrift2's createTable; family settings as the stand-in's: max_versions,
        min_versions, ttl_s, replication_scope, keep_deleted_cells."""
        T = _thrift2()
        ns, _, qualifier = name.rpartition(":")
        columns = []
        for family, s in families.items():
            columns.append(T.TColumnFamilyDescriptor(
                name=family.encode(), maxVersions=s.get("max_versions"), minVersions=s.get("min_versions"),
                timeToLive=s.get("ttl_s"), scope=s.get("replication_scope"),
                keepDeletedCells=T.TKeepDeletedCells.TRUE if s.get("keep_deleted_cells") else None))
        client = self._client()
        try:
            client.createTable(T.TTableDescriptor(tableName=T.TTableName(ns=ns.encode() or None,
                                                                          qualifier=qualifier.encode()),
                                                  columns=columns), list(split_keys or []) or None)
        finally:
            client.close()

    def drop_table(self, name: str) -> None:
        T = _thrift2()
        ns, _, qualifier = name.rpartition(":")
        table = T.TTableName(ns=ns.encode() or None, qualifier=qualifier.encode())
        client = self._client()
        try:
            if client.tableExists(table):
                if client.isTableEnabled(table):
                    client.disableTable(table)
                client.deleteTable(table)
        finally:
            client.close()

    # ------------------------------------------------------------------------------------------ operations
    def roll_wals(self) -> list[str]:
        return self.bed.roll_wals(self.name)

    def kill_rs(self, server: Any) -> str:
        return self.bed.kill_rs(self.name, server)

    def start_rs(self, server: Any) -> str:
        return self.bed.start_rs(self.name, server)

    def set_quota(self, path: str, space_bytes: int | None = None, ns: int | None = None) -> None:
        self.bed.set_quota(self.name, path, space_bytes=space_bytes, namespace=ns)

    def shell(self, script: str):
        proc = self.bed.shell(self.name, script)
        assert proc.returncode == 0, f"hbase shell on {self.name} failed ({proc.returncode}):\n{proc.stdout[-3000:]}"
        return proc.stdout
