"""WebHdfs's data operations over a real local HTTP socket: a stdlib server plays the NameNode (307 to a "DataNode"
path) and the DataNode, records what it was sent, and answers as HDFS does (201 Created, a RemoteException with a
Java stack trace). What real HDFS answers (chunked CREATE, checksums across clusters) is shown on realhbase."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from hbase_migration.clusters.hdfs import HdfsPathNotFound, WebHdfs, WebHdfsRemoteError, WebHdfsUnreachable

DENIED = {"RemoteException": {"exception": "AccessControlException",
                              "javaClassName": "org.apache.hadoop.security.AccessControlException",
                              "message": "Permission denied: user=nobody, access=WRITE, inode=\"/hbase\"\n\tat org."
                                         "apache.hadoop.hdfs.server.namenode.FSPermissionChecker.check(x.java:1)"}}


@contextmanager
def fake_hdfs(file_bytes: bytes = b"", fail_data: dict | None = None):
    """NameNode at /webhdfs/v1/..., DataNode at /dn/webhdfs/v1/...; yields (url, seen) where seen records
    (method, path, query, Authorization header, body length)."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding") == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _answer(self, status, body=b"", headers=()):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method):
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            body = self._body() if method == "PUT" else b""
            seen.append({"method": method, "path": parts.path, "query": query,
                         "auth": self.headers.get("Authorization"), "chunked": self.headers.get("Transfer-Encoding"),
                         "body": len(body)})
            op = query.get("op")
            datanode = parts.path.startswith("/dn/")
            if not datanode and op in ("OPEN", "CREATE", "GETFILECHECKSUM"):
                location = f"http://127.0.0.1:{self.server.server_address[1]}/dn{parts.path}?{parts.query}"
                return self._answer(307, b"", [("Location", location)])
            if op == "OPEN":
                return self._answer(200, file_bytes, [("Content-Type", "application/octet-stream")])
            if op == "CREATE":
                if fail_data:
                    return self._answer(403, fail_data, [("Content-Type", "application/json")])
                return self._answer(201, b"", [("Location", "hdfs://nn/x")])
            if op == "GETFILECHECKSUM":
                return self._answer(200, {"FileChecksum": {"algorithm": "MD5-of-0MD5-of-512CRC32C",
                                                           "bytes": "AB", "length": 28}})
            if op in ("MKDIRS", "RENAME", "DELETE"):
                return self._answer(200, {"boolean": True})
            if op == "CHECKACCESS":
                return self._answer(403, DENIED) if query.get("user.name") == "nobody" else self._answer(200)
            if op in ("SETOWNER", "SETPERMISSION"):
                return self._answer(200)
            if op == "GETHOMEDIRECTORY":
                return self._answer(200, {"Path": "/user/hbase"})
            if op == "GETFILESTATUS":
                return self._answer(404, {"RemoteException": {"exception": "FileNotFoundException",
                                                              "javaClassName": "java.io.FileNotFoundException",
                                                              "message": "File does not exist: " + parts.path}})
            return self._answer(400, {"RemoteException": {"exception": "IllegalArgumentException", "message": op}})

        def do_GET(self):  # noqa: N802
            self._handle("GET")

        def do_PUT(self):  # noqa: N802
            self._handle("PUT")

        def do_DELETE(self):  # noqa: N802
            self._handle("DELETE")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


class CountingAuth:
    """A stand-in for the cluster's SPNEGO: counts the requests it signs."""

    def __init__(self):
        self.signed = []

    def __call__(self, request):
        self.signed.append(request.url)
        request.headers["Authorization"] = "Negotiate dG9rZW4="
        return request


def _session(auth):
    import requests

    session = requests.Session()
    session.auth = auth
    return session


def test_create_streams_chunks_to_the_datanode_without_the_clusters_auth():
    auth = CountingAuth()
    with fake_hdfs() as (url, seen):
        client = WebHdfs(url, user="hbase", session=_session(auth))
        chunks = [b"a" * 1000, b"", b"b" * 500]
        client.create("/hbase/archive/x", iter(chunks), overwrite=True, blocksize=1 << 20, permission="644")
    namenode, datanode = seen
    assert namenode["path"] == "/webhdfs/v1/hbase/archive/x" and namenode["method"] == "PUT"
    assert namenode["query"] == {"op": "CREATE", "user.name": "hbase", "overwrite": "true", "blocksize": "1048576",
                                 "permission": "644"}
    assert namenode["auth"] == "Negotiate dG9rZW4=" and datanode["auth"] is None
    assert datanode["path"] == "/dn/webhdfs/v1/hbase/archive/x" and datanode["chunked"] == "chunked"
    assert datanode["body"] == 1500
    assert len(auth.signed) == 1


def test_open_yields_bounded_chunks():
    data = bytes(range(256)) * 100
    with fake_hdfs(file_bytes=data) as (url, seen):
        with WebHdfs(url).open("/f", chunk_size=4096) as chunks:
            pieces = list(chunks)
    assert b"".join(pieces) == data and max(len(p) for p in pieces) <= 4096
    assert [s["path"] for s in seen] == ["/webhdfs/v1/f", "/dn/webhdfs/v1/f"]


def test_checksum_metadata_and_permission_calls():
    with fake_hdfs() as (url, seen):
        client = WebHdfs(url, user="hbase")
        assert client.file_checksum("/f").bytes == "ab"
        assert client.mkdirs("/a/b", permission="755") and client.rename("/a/b", "/a/c")
        assert client.delete("/a", recursive=True)
        client.set_owner("/a", "hbase", "hadoop")
        client.set_permission("/a", "644")
        assert client.caller() == "hbase"
        client.check_access("/hbase", "-wx")
        assert client.status_or_none("/missing") is None
        with pytest.raises(WebHdfsRemoteError, match=r"CHECKACCESS /hbase: AccessControlException: Permission "
                                                     r"denied: user=nobody, access=WRITE, inode=\"/hbase\"$"):
            WebHdfs(url, user="nobody").check_access("/hbase", "-w-")  # the Java stack trace is left out
    queries = {s["query"]["op"]: s["query"] for s in seen if "op" in s["query"]}
    assert queries["RENAME"]["destination"] == "/a/c" and queries["DELETE"]["recursive"] == "true"
    assert (queries["SETOWNER"]["owner"], queries["SETOWNER"]["group"]) == ("hbase", "hadoop")
    assert queries["MKDIRS"]["permission"] == "755" and queries["SETPERMISSION"]["permission"] == "644"


def test_a_datanode_refusal_is_hdfs_own_error():
    quota = {"RemoteException": {"exception": "DSQuotaExceededException",
                                 "javaClassName": "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException",
                                 "message": "The DiskSpace quota of /hbase is exceeded\n\tat org.x.Y(Y.java:1)"}}
    with fake_hdfs(fail_data=quota) as (url, _):
        with pytest.raises(WebHdfsRemoteError, match=r"CREATE /f: DSQuotaExceededException: The DiskSpace quota of "
                                                     r"/hbase is exceeded$") as caught:
            WebHdfs(url).create("/f", iter([b"x"]))
    assert caught.value.exception == "DSQuotaExceededException"


def test_bad_arguments_are_refused_before_any_call():
    client = WebHdfs("http://127.0.0.1:9")
    with pytest.raises(ValueError, match="fsaction"):
        client.check_access("/x", "write")
    with pytest.raises(ValueError, match="permission must be octal"):
        client.set_permission("/x", "rw-r--r--")
    with pytest.raises(ValueError, match="needs an owner or a group"):
        client.set_owner("/x")
    with pytest.raises(ValueError, match="absolute"):
        client.mkdirs("relative")


def test_an_unreachable_namenode_is_said():
    with pytest.raises(WebHdfsUnreachable, match="MKDIRS /x failed after 2 attempt"):
        WebHdfs("http://127.0.0.1:9", attempts=2, backoff_s=0.01, timeout_s=1).mkdirs("/x")


def test_a_missing_file_is_path_not_found():
    with fake_hdfs() as (url, _):
        with pytest.raises(HdfsPathNotFound):
            WebHdfs(url).file_status("/missing")
