"""Conformance of WebHDFS as the toolkit's quota guard reads it (clusters/hdfs.py): GETCONTENTSUMMARY and
GETQUOTAUSAGE of a directory without quotas, with quotas set through SETQUOTA, cleared again, of a path that
does not exist; the rootdir's quotas (both test beds set them when HDFS is formatted) and the oldWALs directory.

The directory is made and removed through WebHDFS itself (MKDIRS, DELETE), as the daemons' user (HDFS's simple
auth: `user.name`); no JVM starts.
"""
from __future__ import annotations

import getpass
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from tests.conformance.conftest import Backend, observe

pytestmark = [pytest.mark.integration, pytest.mark.realhbase]

DIR = f"/conformance-{uuid.uuid4().hex[:6]}"


def webhdfs(backend: Backend, method: str, path: str, op: str, **params) -> tuple[int, object]:
    """(HTTP status, JSON body or None) of one WebHDFS call on dc1's namenode."""
    ep = backend.endpoints()["dc1"]
    user = ep.get("hdfs_superuser") or getpass.getuser()
    query = urllib.parse.urlencode({"op": op, "user.name": user, **params})
    request = urllib.request.Request(f"{ep['webhdfs_url']}/webhdfs/v1{path}?{query}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            body = resp.read()
            return resp.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture(scope="module")
def directory(backend: Backend):
    status, _ = webhdfs(backend, "PUT", f"{DIR}/q", "MKDIRS")
    assert status == 200
    yield f"{DIR}/q"
    webhdfs(backend, "DELETE", DIR, "DELETE", recursive="true")


def summaries(backend: Backend, path: str) -> dict:
    return {op: webhdfs(backend, "GET", path, op) for op in ("GETCONTENTSUMMARY", "GETQUOTAUSAGE")}


def test_quotas_set_and_cleared(request, backend, directory):
    got = {"empty": summaries(backend, directory)}
    got["set"] = webhdfs(backend, "PUT", directory, "SETQUOTA", namespacequota=10, storagespacequota=1 << 20)
    got["with quotas"] = summaries(backend, directory)
    got["cleared"] = webhdfs(backend, "PUT", directory, "SETQUOTA", namespacequota=-1, storagespacequota=-1)
    got["after clearing"] = summaries(backend, directory)
    observe(request, backend, got)


def test_missing_path(request, backend):
    observe(request, backend, summaries(backend, f"{DIR}/no/such/dir"))


def test_rootdir_and_oldwals(request, backend):
    """The rootdir's quotas and the fields every summary carries (sizes differ: the two hold different files).
    spaceConsumed against length (dfs.replication is 1 on both beds): listed difference `open-blocks`."""
    got = {}
    for path in ("/hbase", "/hbase/oldWALs"):
        for op, (status, body) in summaries(backend, path).items():
            (kind, obj), = body.items()
            got[f"{path} {op}"] = (status, kind, sorted(obj), obj["quota"], obj["spaceQuota"])
        summary = summaries(backend, path)["GETCONTENTSUMMARY"][1]["ContentSummary"]
        got[f"{path} spaceConsumed vs length"] = ("=" if summary["spaceConsumed"] == summary["length"]
                                                  else ">" if summary["spaceConsumed"] > summary["length"] else "<")
    observe(request, backend, got, difference=open_blocks)


def open_blocks(real, mini) -> None:
    """Listed difference `open-blocks`: on HDFS a file being written (the region servers' current WALs under
    /hbase/WALs) counts its whole last block in spaceConsumed while its length counts the bytes written (here
    ~276 MB against ~1.6 MB), as the reference's 6.5 says of quotas; minihbase's HDFS counts written bytes times
    the replication. Closed files (oldWALs) agree. Everything else equal. Asserted exactly."""
    assert real["/hbase spaceConsumed vs length"] == ">" and mini["/hbase spaceConsumed vs length"] == "="
    assert real["/hbase/oldWALs spaceConsumed vs length"] == "=" == mini["/hbase/oldWALs spaceConsumed vs length"]
    assert {**real, "/hbase spaceConsumed vs length": "="} == mini
