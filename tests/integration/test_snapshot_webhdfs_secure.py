"""The snapshot export's file channel on secured clusters: the WebHDFS client the export's tasks and driver open
(`snapshot_copy.webhdfs_of`, through `channels.http(cluster)`) authenticates with SPNEGO to both clusters, each in
its own realm (DC1.TEST, DC2.TEST, reached through the cross-realm trust), reads a file streamed, lists, makes and
removes directories; the same calls without the security extras are refused (401). Against minihbase's secured
pair (a real KDC), which serves these WebHDFS operations (not CREATE: the data path of a real DataNode is shown on
realhbase, unsecured)."""
from __future__ import annotations

import dataclasses
import uuid

import pytest

from hbase_migration.clusters import kerberos
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.snapshot_copy import webhdfs_of

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def clusters(secure_pair):
    kerberos.forget_krb5_conf()
    return tuple(cluster_from_text(c.name, c.connection_json) for c in secure_pair)


def test_the_exports_webhdfs_channel_uses_spnego_on_both_clusters_across_realms(clusters):
    for cluster in clusters:
        client = webhdfs_of(cluster)
        hbase_id = f"{cluster.rootdir}/hbase.id"
        with client.open(hbase_id, chunk_size=4096) as chunks:
            assert b"".join(chunks)  # OPEN, streamed (minihbase answers it itself, as HttpFS does)
        scratch = f"/snapshot-export-check-{uuid.uuid4().hex[:8]}"
        assert client.mkdirs(f"{scratch}/archive/data/default")
        assert [s.path_suffix for s in client.list_status(f"{scratch}/archive/data")] == ["default"]
        assert client.delete(scratch, recursive=True) and client.status_or_none(scratch) is None
        with pytest.raises(Exception, match="401"):
            webhdfs_of(dataclasses.replace(cluster, security=None)).file_status(cluster.rootdir)
