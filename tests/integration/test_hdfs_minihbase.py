"""WebHdfs and quota_usage against minihbase's WebHDFS (a real HTTP namenode stand-in over real files)."""
from __future__ import annotations

import posixpath
import time

import pytest

from hbase_migration.clusters.hdfs import (
    HdfsPathNotFound,
    QuotaConstraint,
    WebHdfs,
    WebHdfsUnreachable,
    growth_rate,
    headroom_decision,
    quota_usage,
    watchdog_decision,
)
from minihbase.testing import MiniCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dc1(zookeeper, tmp_path_factory):
    cluster = MiniCluster.start(zookeeper.hosts, tmp_path_factory.mktemp("hdfs-dc1"), name="hdfsq",
                                        znode_parent="/hbase-hdfs-test", region_servers=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def client(dc1):
    return WebHdfs(dc1.endpoints["webhdfs_url"], timeout_s=10, attempts=3)


@pytest.fixture(scope="module")
def rootdir(dc1):
    return dc1.endpoints["rootdir"]


def walk(client, path):
    """Every file under `path` through LISTSTATUS, and the number of directories (itself included)."""
    files, dirs = [], 1
    for status in client.list_status(path):
        child = posixpath.join(path, status.path_suffix)
        if status.type == "DIRECTORY":
            sub_files, sub_dirs = walk(client, child)
            files += sub_files
            dirs += sub_dirs
        else:
            files.append(status)
    return files, dirs


def write_rows(dc1, n=500, table=b"hdfs_t"):
    import happybase

    conn = happybase.Connection(dc1.thrift_host, dc1.thrift_port, timeout=20000)
    try:
        if table not in conn.tables():
            conn.create_table(table, {"f": {}})
        with conn.table(table).batch(batch_size=200) as batch:
            for i in range(n):
                batch.put(b"row-%06d" % i, {b"f:q": b"x" * 200})
    finally:
        conn.close()


def test_content_summary_agrees_with_the_files(dc1, client, rootdir):
    write_rows(dc1)
    dc1.roll_wals()  # archive the current WALs into oldWALs: files there to count
    for path in (posixpath.join(rootdir, "WALs"), posixpath.join(rootdir, "oldWALs"), rootdir):
        summary = client.content_summary(path)
        files, dirs = walk(client, path)
        assert (summary.file_count, summary.directory_count) == (len(files), dirs), path
        assert summary.length == sum(f.length for f in files), path
        # a space quota counts raw bytes: length x each file's replication
        assert summary.space_consumed == sum(f.length * f.replication for f in files), path
    oldwals = client.content_summary(posixpath.join(rootdir, "oldWALs"))
    assert oldwals.file_count > 0 and oldwals.length > 0
    status = client.file_status(posixpath.join(rootdir, "oldWALs"))
    assert status.type == "DIRECTORY"


def test_quota_set_through_the_cluster_shows_in_quota_usage(dc1, client, rootdir):
    assert quota_usage(client, rootdir).constraints == ()  # this cluster starts without quotas
    before = client.content_summary(rootdir)
    space = before.space_consumed * 4 + 10_000_000
    names = before.names + 10_000
    dc1.set_quota(rootdir, space_bytes=space, ns=names)
    try:
        usage = quota_usage(client, rootdir)
        now = client.content_summary(rootdir)
        assert usage.oldwals_path == posixpath.join(rootdir, "oldWALs")
        ours = [c for c in usage.constraints if c.path == rootdir]
        assert ours == [QuotaConstraint(rootdir, "space", space, now.space_consumed),
                        QuotaConstraint(rootdir, "namespace", names, now.names)]
        assert usage.binding == min(ours, key=lambda c: 1 - c.fraction_used)

        # Sampled growth while rows are written, then the decisions on real figures.
        samples = [(time.time(), client.content_summary(usage.oldwals_path).space_consumed)]
        write_rows(dc1, 300, table=b"hdfs_growth")
        dc1.roll_wals()
        samples.append((time.time(), client.content_summary(usage.oldwals_path).space_consumed))
        rate = growth_rate(samples)
        assert rate is not None and rate > 0
        fresh = quota_usage(client, rootdir)
        ok = headroom_decision(fresh, rate, expected_duration_s=0, safety_factor=1, quota_mark=1.0)
        assert ok.ok is True, ok
        mark = watchdog_decision(fresh, rate, quota_mark=fresh.binding.fraction_used / 2)
        assert mark.level == "breach"
    finally:
        dc1.set_quota(rootdir, space_bytes=-1, ns=-1)
    assert [c for c in quota_usage(client, rootdir).constraints if c.path == rootdir] == []


def test_wrong_rootdir_is_a_clear_error(client):
    with pytest.raises(HdfsPathNotFound, match=r"/no-such-root/oldWALs does not exist on .*rootdir '/no-such-root'"):
        quota_usage(client, "/no-such-root")


def test_unreachable_webhdfs_after_the_cluster_stops(zookeeper, tmp_path):
    cluster = MiniCluster.start(zookeeper.hosts, tmp_path, name="gone", znode_parent="/hbase-gone",
                                        region_servers=1)
    url = cluster.endpoints["webhdfs_url"]
    rootdir = cluster.endpoints["rootdir"]
    assert WebHdfs(url).content_summary(rootdir).directory_count >= 1
    cluster.stop()
    with pytest.raises(WebHdfsUnreachable, match=r"unreachable: GETCONTENTSUMMARY .* failed after 2 attempt"):
        quota_usage(WebHdfs(url, timeout_s=2, attempts=2, backoff_s=0.05), rootdir)
