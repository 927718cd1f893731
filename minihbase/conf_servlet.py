"""`GET /conf` on the master's and every region server's info port: the running configuration, as Hadoop's
ConfServlet serves it (reference 8.4).

- `/conf` (or `?format=xml`): `Configuration.writeXml`, `<configuration><property><name/><value/><final/>
  <source/></property>...</configuration>`;
- `/conf?format=json`: `Configuration.dumpConfiguration`, `{"properties": [{"key", "value", "isFinal",
  "resource"}]}`;
- `&name=<key>`: that one property (Hadoop 3), 404 when it is not set;
- another format: 400 `Bad format: <format>`.

The properties are the cluster's settings under HBase's names (hbase-site.xml) beside a few of HBase's defaults
(hbase-default.xml); a property that is unset in HBase (hbase.replication.cluster.id by default) is absent.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from minihbase.httpserver import Request, Response

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

SITE, DEFAULT = "hbase-site.xml", "hbase-default.xml"


def properties(cluster: "MiniHBaseCluster", info_port: int, role: str) -> list[tuple[str, str, str]]:
    """(name, value, source) of every property this server shows."""
    cfg = cluster.config
    props = [
        ("hbase.cluster.distributed", "true", SITE),
        ("hbase.rootdir", f"hdfs://{cfg.host}:{cluster.webhdfs.port}{cfg.rootdir}", SITE),
        ("hbase.zookeeper.quorum", cluster.zk_quorum, SITE),
        ("hbase.zookeeper.property.clientPort", str(cluster.zk_port), SITE),
        ("zookeeper.znode.parent", cfg.znode_parent, SITE),
        ("hbase.master.info.port", str(cluster.control.port), SITE),
        ("hbase.regionserver.handler.count", str(cfg.handler_count), SITE),
        ("hbase.regionserver.replication.handler.count", str(cfg.replication_handler_count), SITE),
        ("hbase.hregion.memstore.flush.size", str(cfg.memstore_flush_size_bytes), SITE),
        ("hbase.hregion.max.filesize", str(cfg.region_split_size_bytes), SITE),
        ("hbase.replication", "true", DEFAULT),
        ("hbase.replication.bulkload.enabled", "true" if cfg.replication_bulkload_enabled else "false",
         SITE if cfg.replication_bulkload_enabled else DEFAULT),
        ("hbase.table.sanity.checks", "true", DEFAULT),
        ("hbase.regionserver.thrift.http", "false", DEFAULT),
        ("hbase.security.authentication", "simple", DEFAULT),
    ]
    if role == "regionserver":
        props.append(("hbase.regionserver.info.port", str(info_port), SITE))
    if cfg.replication_cluster_id:
        props.append(("hbase.replication.cluster.id", cfg.replication_cluster_id, SITE))
    return sorted(props)


def _xml(props: list[tuple[str, str, str]]) -> str:
    body = "".join(f"<property><name>{escape(n)}</name><value>{escape(v)}</value><final>false</final>"
                   f"<source>{escape(s)}</source></property>\n" for n, v, s in props)
    return f'<?xml version="1.0" encoding="UTF-8" standalone="no"?><configuration>\n{body}</configuration>\n'


def handler(cluster: "MiniHBaseCluster", info_port: int | None = None, role: str = "master"):
    """The servlet for one server (`info_port` None: the master's control port)."""

    def handle(request: Request) -> Response:
        props = properties(cluster, info_port or cluster.control.port, role)
        fmt = request.query.get("format", "xml")
        name = request.query.get("name")
        if name is not None:
            props = [p for p in props if p[0] == name]
            if not props:
                return Response(404, f"Property {name} not found", content_type="text/plain")
        if fmt == "json":
            return Response(200, {"properties": [{"key": n, "value": v, "isFinal": False, "resource": s}
                                                 for n, v, s in props]})
        if fmt == "xml":
            return Response(200, _xml(props), content_type="text/xml; charset=utf-8")
        return Response(400, f"Bad format: {fmt}", content_type="text/plain")
    return handle

