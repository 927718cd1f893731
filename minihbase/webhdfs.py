"""WebHDFS over the cluster's MiniHDFS: `/webhdfs/v1/<path>?op=...` with HDFS's JSON bodies.

GET: GETCONTENTSUMMARY, GETQUOTAUSAGE, LISTSTATUS, GETFILESTATUS, OPEN. PUT: SETQUOTA (`namespacequota`,
`storagespacequota`; -1 clears one, an absent parameter leaves it), MKDIRS. DELETE: DELETE (`recursive`).
Errors come back as `{"RemoteException": {...}}` with HDFS's status codes.
"""
from __future__ import annotations

from minihbase.hdfs import HDFSError, HDFSIllegalArgument, MiniHDFS
from minihbase.httpserver import HttpServer, Request, Response

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


def install(server: HttpServer, fs: MiniHDFS) -> None:
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
