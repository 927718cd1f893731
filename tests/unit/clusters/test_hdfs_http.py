"""WebHdfs over a real local HTTP socket: retries on 5xx, RemoteException mapping, unreachable endpoint.

minihbase's WebHDFS serves the happy paths in the integration tests; the answers a healthy server
never gives on demand (a 503 then a 200, a 500 with a RemoteException, a body that is not JSON) come
from `scripted_http`, a stdlib HTTP server that answers a script and records what it was asked.
"""
from __future__ import annotations

import json
import socket
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from hbase_migration.clusters.hdfs import (
    HdfsPathNotFound,
    WebHdfs,
    WebHdfsError,
    WebHdfsRemoteError,
    WebHdfsUnreachable,
    quota_usage,
)


@contextmanager
def scripted_http(script):
    """Serve `script` (list of (status, body str)) in order, one per request; yields (base_url, requests)."""
    seen: list[tuple[str, dict]] = []
    answers = list(script)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            parts = urlsplit(self.path)
            seen.append((parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}))
            status, text = answers.pop(0) if answers else (500, "script exhausted")
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nobody listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary_body(dirs=1, files=2, consumed=300, quota=-1, space_quota=-1):
    return json.dumps({"ContentSummary": {"directoryCount": dirs, "fileCount": files, "length": consumed // 3,
                                          "quota": quota, "spaceConsumed": consumed, "spaceQuota": space_quota,
                                          "typeQuota": {}}})


NOT_FOUND = json.dumps({"RemoteException": {"exception": "FileNotFoundException",
                                            "javaClassName": "java.io.FileNotFoundException",
                                            "message": "File does not exist: /hbase/oldWALs"}})


def test_retries_a_5xx_then_reads_the_summary():
    with scripted_http([(503, "busy"), (200, summary_body())]) as (url, seen):
        client = WebHdfs(url, timeout_s=5, attempts=3, backoff_s=0.01)
        assert client.content_summary("/hbase/oldWALs").space_consumed == 300
    assert seen == [("/webhdfs/v1/hbase/oldWALs", {"op": "GETCONTENTSUMMARY"})] * 2


def test_wal_names_are_quoted_once_and_user_is_passed():
    listing = json.dumps({"FileStatuses": {"FileStatus": []}})
    with scripted_http([(200, listing)]) as (url, seen):
        WebHdfs(url, user="hbase").list_status("/hbase/oldWALs/rs1%2C16020%2C1.17")
    assert seen == [("/webhdfs/v1/hbase/oldWALs/rs1%252C16020%252C1.17", {"op": "LISTSTATUS", "user.name": "hbase"})]


def test_remote_exception_is_not_retried_and_names_path_and_cause():
    with scripted_http([(404, NOT_FOUND)]) as (url, seen):
        with pytest.raises(HdfsPathNotFound) as info:
            WebHdfs(url, attempts=3, backoff_s=0.01).file_status("/hbase/oldWALs")
    assert str(info.value) == (f"WebHDFS {url}: GETFILESTATUS /hbase/oldWALs: FileNotFoundException: "
                               "File does not exist: /hbase/oldWALs")
    assert (info.value.exception, info.value.java_class, info.value.status) == (
        "FileNotFoundException", "java.io.FileNotFoundException", 404)
    assert len(seen) == 1


def test_a_5xx_remote_exception_after_the_last_attempt_is_reported_as_such():
    standby = json.dumps({"RemoteException": {"exception": "StandbyException",
                                              "javaClassName": "org.apache.hadoop.ipc.StandbyException",
                                              "message": "Operation category READ is not supported in state standby"}})
    with scripted_http([(500, standby), (500, standby)]) as (url, seen):
        with pytest.raises(WebHdfsRemoteError, match="GETCONTENTSUMMARY /: StandbyException: Operation category READ"):
            WebHdfs(url, attempts=2, backoff_s=0.01).content_summary("/")
    assert len(seen) == 2


def test_5xx_without_remote_exception_becomes_unreachable():
    with scripted_http([(502, "bad gateway")] * 2) as (url, seen):
        with pytest.raises(WebHdfsUnreachable, match=r"GETCONTENTSUMMARY / failed after 2 attempt\(s\): HTTP 502"):
            WebHdfs(url, attempts=2, backoff_s=0.01).content_summary("/")
    assert len(seen) == 2


def test_non_json_200_is_a_clear_error():
    with scripted_http([(200, "<html>login</html>")]) as (url, _):
        with pytest.raises(WebHdfsError, match="answered HTTP 200 without a JSON body: '<html>login</html>'"):
            WebHdfs(url).content_summary("/")


def test_unreachable_webhdfs_names_the_url():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(WebHdfsUnreachable, match=rf"WebHDFS {url} unreachable: GETCONTENTSUMMARY /hbase failed "
                                                 r"after 2 attempt\(s\): ConnectionError"):
        WebHdfs(url, timeout_s=2, attempts=2, backoff_s=0.01).content_summary("/hbase")


def test_quota_usage_walks_oldwals_and_every_ancestor():
    script = [(200, summary_body(1, 40, 900)), (200, summary_body(10, 90, 5000, quota=200, space_quota=9000)),
              (200, summary_body(20, 180, 9000))]
    with scripted_http(script) as (url, seen):
        usage = quota_usage(WebHdfs(url), "/hbase")
    assert [path for path, _ in seen] == ["/webhdfs/v1/hbase/oldWALs", "/webhdfs/v1/hbase", "/webhdfs/v1/"]
    assert [(c.path, c.kind, c.limit, c.used) for c in usage.constraints] == [
        ("/hbase", "space", 9000, 5000), ("/hbase", "namespace", 200, 100)]


def test_quota_usage_on_a_wrong_rootdir_says_so():
    with scripted_http([(404, NOT_FOUND)]) as (url, _):
        with pytest.raises(HdfsPathNotFound, match=r"/hbase/oldWALs does not exist on .*: is rootdir '/hbase' this "
                                                   r"cluster's hbase.rootdir\?"):
            quota_usage(WebHdfs(url), "/hbase")
