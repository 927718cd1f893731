"""WebHDFS over the cluster's MiniHDFS: `/webhdfs/v1/<path>?op=...` with HDFS's JSON bodies, and the
namenode's `/jmx` on the same HTTP port (as a NameNode serves both on dfs.namenode.http-address).

GET: GETCONTENTSUMMARY, GETQUOTAUSAGE, LISTSTATUS, GETFILESTATUS, OPEN. PUT: SETQUOTA (`namespacequota`,
`storagespacequota`; -1 clears one, an absent parameter leaves it), MKDIRS. DELETE: DELETE (`recursive`).
Errors come back as `{"RemoteException": {...}}` with HDFS's status codes.

`/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem` (FSNamesystem's metrics): `CapacityTotal` (the raw
capacity of the datanodes), `CapacityUsed` (raw bytes of every file: length x replication), `CapacityRemaining`
(the rest; no non-DFS use, no reserved space), their `...GB` twins, `FilesTotal`, `tag.HAState` "active". HDFS
has no WebHDFS operation for free space before Hadoop 3.4's GETSTATUS: this bean is where it is read.
"""
from __future__ import annotations

from typing import Callable

from minihbase.hdfs import HDFSError, HDFSIllegalArgument, MiniHDFS
from minihbase.httpserver import HttpServer, Request, Response
from minihbase.jmx import JmxRegistry

FSNAMESYSTEM_BEAN = "Hadoop:service=NameNode,name=FSNamesystem"

PREFIX = "/webhdfs/v1"
_LONG_MAX = (1 << 63) - 1  # HdfsConstants.QUOTA_DONT_SET


def _int_param(request: Request, name: str) -> int | None:
    text = request.query.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise HDFSIllegalArgument(f'Invalid value for webhdfs parameter "{name}": {text!r} is not a long') from None
    return None if value == _LONG_MAX else value


def fsnamesystem_bean(fs: MiniHDFS, capacity_bytes: int, host: str) -> dict:
    """The FSNamesystem bean's capacity figures (bytes; the GB twins as the namenode rounds them)."""
    summary = fs.content_summary("/")
    used = summary["spaceConsumed"]
    remaining = max(0, capacity_bytes - used)
    gb = 1 << 30
    return {"modelerType": "FSNamesystem", "tag.Context": "dfs", "tag.HAState": "active", "tag.Hostname": host,
            "CapacityTotal": capacity_bytes, "CapacityTotalGB": round(capacity_bytes / gb),
            "CapacityUsed": used, "CapacityUsedGB": round(used / gb), "CapacityRemaining": remaining,
            "CapacityRemainingGB": round(remaining / gb), "CapacityUsedNonDFS": 0,
            "FilesTotal": summary["fileCount"] + summary["directoryCount"]}


def install(server: HttpServer, fs: MiniHDFS, capacity_bytes: Callable[[], int] | None = None,
            host: str = "127.0.0.1") -> None:
    jmx = JmxRegistry()
    if capacity_bytes is not None:
        jmx.register(FSNAMESYSTEM_BEAN, lambda: fsnamesystem_bean(fs, capacity_bytes(), host))
    server.route("GET", "/jmx", jmx.handle)

    def handle(request: Request) -> Response:
        path = request.path[len(PREFIX):] or "/"
        op = request.query.get("op", "").upper()
        try:
            if request.method == "GET":
                if op == "GETCONTENTSUMMARY":
                    return Response(200, {"ContentSummary": fs.content_summary(path)})
                if op == "GETQUOTAUSAGE":
                    return Response(200, {"QuotaUsage": fs.quota_usage(path)})
                if op == "LISTSTATUS":
                    return Response(200, {"FileStatuses": {"FileStatus": fs.list_status(path)}})
                if op == "GETFILESTATUS":
                    return Response(200, {"FileStatus": fs.file_status(path)})
                if op == "OPEN":
                    return Response(200, fs.read_file(path), content_type="application/octet-stream")
                enum = "GetOpParam"
            elif request.method == "PUT":
                if op == "SETQUOTA":
                    fs.set_quota(path, namespace=_int_param(request, "namespacequota"),
                                 space=_int_param(request, "storagespacequota"))
                    return Response(200, b"")
                if op == "MKDIRS":
                    fs.mkdirs(path)
                    return Response(200, {"boolean": True})
                enum = "PutOpParam"
            elif request.method == "DELETE":
                if op == "DELETE":
                    recursive = request.query.get("recursive", "false").lower() == "true"
                    return Response(200, {"boolean": fs.delete(path, recursive=recursive)})
                enum = "DeleteOpParam"
            else:
                enum = "HttpOpParam"
            raise HDFSIllegalArgument(
                f'Invalid value for webhdfs parameter "op": No enum constant '
                f"org.apache.hadoop.hdfs.web.resources.{enum}.Op.{op}")
        except HDFSError as e:
            return Response(e.http_status, e.remote_exception())

    for method in ("GET", "PUT", "DELETE"):
        server.route_prefix(method, PREFIX, handle)
