"""WebHDFS over a minihbase rootdir, HDFS quotas, and the failure the toolkit exists to prevent: a quota that
runs out aborts the region server (its znode goes, its regions answer IOError) until someone makes room."""
from __future__ import annotations

import os
import sys

import happybase.connection
import pytest
import requests
from kazoo.client import KazooClient

from minihbase.testing import MiniHBaseError
from tests.polling import wait_for

HBASE = sys.modules[happybase.connection.Hbase.__module__]  # the IDL happybase loads (HBase's own)
HBaseIOError, IllegalArgument, AlreadyExists = HBASE.IOError, HBASE.IllegalArgument, HBASE.AlreadyExists

pytestmark = pytest.mark.integration



def webhdfs(cluster, method: str, path: str, **params):
    return requests.request(method, f"{cluster.webhdfs_url}/webhdfs/v1{path}", params=params, timeout=10)


def disk_summary(root) -> dict:
    dirs, files, length = 1, 0, 0
    for base, dnames, fnames in os.walk(root):
        dirs += len(dnames)
        files += len(fnames)
        length += sum(os.path.getsize(os.path.join(base, f)) for f in fnames)
    return {"directoryCount": dirs, "fileCount": files, "length": length}


def test_webhdfs_listing_status_and_content_summary(minihbase_dc1):
    cluster = minihbase_dc1
    conn = cluster.connection()
    conn.create_table("hdfs_t", {"cf": {}})
    with conn.table("hdfs_t").batch() as b:
        for i in range(500):
            b.put(b"r%04d" % i, {b"cf:v": b"v" * 100})
    cluster.flush("hdfs_t")
    conn.close()

    names = {s["pathSuffix"]: s for s in webhdfs(cluster, "GET", "/hbase", op="LISTSTATUS").json()[
        "FileStatuses"]["FileStatus"]}
    assert {"WALs", "oldWALs", "data", "hbase.id"} <= set(names)
    assert names["WALs"]["type"] == "DIRECTORY" and names["hbase.id"]["type"] == "FILE"
    status = webhdfs(cluster, "GET", "/hbase/hbase.id", op="GETFILESTATUS").json()["FileStatus"]
    assert status["length"] == 42 and status["replication"] == 3 and status["pathSuffix"] == ""

    body = webhdfs(cluster, "GET", "/hbase", op="GETCONTENTSUMMARY").json()["ContentSummary"]
    # Quiesce-free comparison: compare the summary with the files on disk right after it.
    disk = disk_summary(cluster.local_rootdir)
    assert set(body) >= {"directoryCount", "fileCount", "length", "quota", "spaceConsumed", "spaceQuota"}
    assert (body["directoryCount"], body["fileCount"], body["length"]) == (
        disk["directoryCount"], disk["fileCount"], disk["length"])
    assert body["spaceConsumed"] == body["length"] * 3  # replication factor 3, as HDFS counts it

    missing = webhdfs(cluster, "GET", "/hbase/nope", op="GETFILESTATUS")
    assert missing.status_code == 404
    assert missing.json()["RemoteException"]["javaClassName"] == "java.io.FileNotFoundException"
    bad = webhdfs(cluster, "GET", "/hbase", op="FROBNICATE")
    assert bad.status_code == 400 and bad.json()["RemoteException"]["exception"] == "IllegalArgumentException"


def test_setquota_over_http_shows_in_the_summary(minihbase_dc1):
    cluster = minihbase_dc1
    resp = webhdfs(cluster, "PUT", "/hbase/oldWALs", op="SETQUOTA", namespacequota=5000,
                   storagespacequota=10 << 30)
    assert resp.status_code == 200
    body = webhdfs(cluster, "GET", "/hbase/oldWALs", op="GETCONTENTSUMMARY").json()["ContentSummary"]
    assert (body["quota"], body["spaceQuota"]) == (5000, 10 << 30)
    usage = webhdfs(cluster, "GET", "/hbase/oldWALs", op="GETQUOTAUSAGE").json()["QuotaUsage"]
    assert usage["fileAndDirectoryCount"] == body["directoryCount"] + body["fileCount"]
    bad = webhdfs(cluster, "PUT", "/hbase/oldWALs", op="SETQUOTA", namespacequota=0)
    assert bad.status_code == 400 and "Invalid values for namespace quota" in bad.json()["RemoteException"][
        "message"]
    webhdfs(cluster, "PUT", "/hbase/oldWALs", op="SETQUOTA", namespacequota=-1, storagespacequota=-1)
    body = webhdfs(cluster, "GET", "/hbase/oldWALs", op="GETCONTENTSUMMARY").json()["ContentSummary"]
    assert (body["quota"], body["spaceQuota"]) == (-1, -1)


def test_space_quota_exhaustion_aborts_the_region_server(minihbase_factory, zookeeper):
    cluster = minihbase_factory("dc1", region_servers=2, block_size_bytes=4096, client_retry_s=1.0)
    cluster.create_table("q", {"cf": {}})
    conn = cluster.connection()
    table = conn.table("q")
    table.put(b"before", {b"cf:v": b"kept"})
    region = table.regions()[0]
    victim = next(rs["servername"] for rs in cluster.region_servers if rs["port"] == region["port"])

    used = webhdfs(cluster, "GET", "/hbase", op="GETCONTENTSUMMARY").json()["ContentSummary"]["spaceConsumed"]
    quota = used + 200_000
    cluster.set_quota("/hbase", space_bytes=quota)
    with pytest.raises(HBaseIOError) as failure:
        for i in range(10_000):
            table.put(b"r%05d" % i, {b"cf:v": b"x" * 1000})
    message = failure.value.message.decode()
    assert "DSQuotaExceededException: The DiskSpace quota of /hbase is exceeded: " \
           f"quota = {quota} B = " in message
    assert victim in message

    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    try:
        wait_for(lambda: victim not in zk.get_children(f"{cluster.znode_parent}/rs"), what="the znode to go")
    finally:
        zk.stop()
        zk.close()
    assert {rs["servername"]: rs["alive"] for rs in cluster.region_servers}[victim] is False
    # Recovery needs to write too (replayed edits are flushed): with no room the region stays offline.
    with pytest.raises(HBaseIOError, match="NotServingRegionException"):
        table.row(b"before")
    assert "DSQuotaExceededException" in (cluster.status()["master"]["recovery_error"] or "")

    cluster.set_quota("/hbase", space_bytes=-1)  # an operator makes room
    assert wait_for(lambda: _row_or_none(table, b"before"), what="recovery") == {b"cf:v": b"kept"}
    restarted = cluster.start_rs(victim)
    assert restarted != victim
    table.put(b"after", {b"cf:v": b"ok"})
    assert table.row(b"after") == {b"cf:v": b"ok"}
    conn.close()


def test_namespace_quota_fails_the_roll_and_aborts(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, client_retry_s=1.0)
    count = webhdfs(cluster, "GET", "/hbase", op="GETQUOTAUSAGE").json()["QuotaUsage"]["fileAndDirectoryCount"]
    cluster.set_quota("/hbase", ns=count)
    with pytest.raises(MiniHBaseError, match="NSQuotaExceededException: The NameSpace quota "
                                             rf"\(directories and files\) of directory /hbase is exceeded: "
                                             rf"quota={count} file count={count + 1}"):
        cluster.roll_wals()
    assert cluster.region_servers[0]["alive"] is False


def _row_or_none(table, row):
    try:
        return table.row(row) or None
    except HBaseIOError:
        return None


def test_archive_into_a_full_oldwals_aborts(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, client_retry_s=1.0)
    cluster.create_table("a", {"cf": {}})
    conn = cluster.connection()
    conn.table("a").put(b"r", {b"cf:v": b"1"})
    usage = webhdfs(cluster, "GET", "/hbase/oldWALs", op="GETQUOTAUSAGE").json()["QuotaUsage"]
    cluster.set_quota("/hbase/oldWALs", ns=usage["fileAndDirectoryCount"])  # no room for one more file
    cluster.flush("a")
    with pytest.raises(MiniHBaseError, match="NSQuotaExceededException: The NameSpace quota .* of directory "
                                             "/hbase/oldWALs is exceeded"):
        cluster.roll_wals()  # the roll itself succeeds (WALs/ has room); archiving the old file does not
    assert cluster.region_servers[0]["alive"] is False
    assert cluster.status()["region_servers"][0]["abort_reason"].startswith("WAL archive failed: ")
    conn.close()
