"""WALs roll (by size and by period), archive to oldWALs once flushed, are cleaned by TTL, and carry the data
through `stop`/`start` and through a crash of the whole cluster process."""
from __future__ import annotations

import re
import time
from urllib.parse import unquote

import pytest
import requests

from minihbase.region import parse_store_file
from minihbase.wal import read_entries
from tests.polling import wait_for

pytestmark = pytest.mark.integration

WAL_NAME = re.compile(r"^(.+)\.(\d+)$")



def listing(cluster, path: str) -> list[dict]:
    resp = requests.get(f"{cluster.webhdfs_url}/webhdfs/v1{path}", params={"op": "LISTSTATUS"}, timeout=10)
    resp.raise_for_status()
    return resp.json()["FileStatuses"]["FileStatus"]


def wal_files(cluster) -> dict[str, list[str]]:
    """servername directory -> WAL file names under <rootdir>/WALs."""
    out = {}
    for d in listing(cluster, f"{cluster.rootdir}/WALs"):
        out[d["pathSuffix"]] = [f["pathSuffix"] for f in listing(cluster, f"{cluster.rootdir}/WALs/{d['pathSuffix']}")]
    return out


def old_wals(cluster) -> list[str]:
    return [f["pathSuffix"] for f in listing(cluster, f"{cluster.rootdir}/oldWALs")]


def unflushed_archived_edits(cluster) -> list[tuple[str, int]]:
    """(WAL, seq id) of every edit in oldWALs that no store file covers yet: archiving must never make one."""
    flushed: dict[str, int] = {}
    for store in (cluster.local_rootdir / "data").glob("*/*/*/*/*"):
        region = store.parent.parent.name
        flushed[region] = max(flushed.get(region, 0), parse_store_file(store.read_bytes())[0])
    return [(wal.name, e.seq_id) for wal in sorted((cluster.local_rootdir / "oldWALs").iterdir())
            for e, _ in read_entries(wal.read_bytes()) if e.seq_id > flushed.get(e.encoded_region, 0)]


def load(table, start: int, count: int, width: int = 200) -> None:
    with table.batch(batch_size=200) as b:
        for i in range(start, start + count):
            b.put(b"row-%06d" % i, {b"cf:v": b"%d" % i, b"cf:pad": b"x" * width})


def test_wal_names_roll_by_size_and_archive_after_flush(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, wal_roll_size_bytes=32 << 10, max_logs=100)
    conn = cluster.connection()
    conn.create_table("t", {"cf": {}})
    servername = cluster.region_servers[0]["servername"]
    before = wal_files(cluster)
    assert list(before) == [servername]
    for name in before[servername]:
        sn, ts = WAL_NAME.match(name).groups()
        assert sn == servername.replace(",", "%2C") and unquote(sn) == servername and len(ts) == 13

    load(conn.table("t"), 0, 2000)
    files = wait_for(lambda: (lambda f: f if len(f) >= 5 else None)(wal_files(cluster)[servername]),
                     what="size-based rolls")
    sizes = {f["pathSuffix"]: f["length"] for f in listing(cluster, f"{cluster.rootdir}/WALs/{servername}")}
    current = max(files, key=lambda n: int(n.rsplit(".", 1)[1]))
    assert all(size >= 32 << 10 for name, size in sizes.items() if name != current)
    # Every acknowledged edit is in a WAL, with sequence ids, write time, table, region and cluster id.
    entries = [e for name in sorted(files) for e, _ in read_entries(
        (cluster.local_rootdir / "WALs" / servername / name).read_bytes())]
    rows = {c.row for e in entries for c in e.cells}
    assert rows == {b"row-%06d" % i for i in range(2000)}
    assert all(e.table == b"t" and e.cluster_ids == [cluster.cluster_id] for e in entries)
    seqs = [e.seq_id for e in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

    assert unflushed_archived_edits(cluster) == []  # nothing is archived before its edits are flushed
    assert set(files) & set(old_wals(cluster)) == set()
    cluster.flush("t")
    cluster.roll_wals()
    archived = wait_for(lambda: set(old_wals(cluster)) >= set(files) and old_wals(cluster), what="archiving")
    assert set(files) <= set(archived)
    assert unflushed_archived_edits(cluster) == []  # the archived files' 2000 edits are all in store files
    current = wal_files(cluster)[servername]
    assert len(current) == 1 and current[0] not in files  # only a fresh current WAL remains
    conn.close()


def test_wal_rolls_by_period_and_cleaner_deletes_by_ttl(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, wal_roll_period_s=0.5, log_cleaner_ttl_s=1.0,
                                log_cleaner_interval_s=0.5, flush_interval_s=0.5)
    conn = cluster.connection()
    conn.create_table("t", {"cf": {}})
    servername = cluster.region_servers[0]["servername"]
    first = wal_files(cluster)[servername]
    load(conn.table("t"), 0, 10, width=10)
    # The period elapses with edits in the WAL: it rolls; the idle flush lets the old file be archived,
    # and the TTL cleaner deletes it from oldWALs a second later.
    wait_for(lambda: not set(first) & set(wal_files(cluster)[servername]), what="a periodic roll")

    def gone() -> bool:
        # WALs first, then oldWALs: a file only moves WALs -> oldWALs -> deleted, so absent from both is deleted.
        live = set(wal_files(cluster)[servername])
        return not set(first) & (live | set(old_wals(cluster)))
    wait_for(gone, what="the TTL cleaner to delete the archived WAL")
    assert not any((cluster.local_rootdir / "oldWALs" / name).exists() for name in first)
    assert conn.table("t").row(b"row-000003") == {b"cf:v": b"3", b"cf:pad": b"x" * 10}
    conn.close()


def test_data_survives_stop_start_and_a_crash(minihbase_factory):
    cluster = minihbase_factory("dc1")
    cluster.create_table("t", {"cf": {"max_versions": 3}}, split_keys=[b"row-001000"])
    conn = cluster.connection()
    table = conn.table("t")
    load(table, 0, 2000, width=20)
    table.put(b"row-000001", {b"cf:v": b"second"}, timestamp=int(time.time() * 1000) + 1000)
    table.delete(b"row-000002")
    conn.close()

    cluster.stop()
    cluster.restart()
    conn = cluster.connection()
    table = conn.table("t")
    assert sum(1 for _ in table.scan()) == 1999
    assert table.cells(b"row-000001", b"cf:v") == [b"second", b"1"]
    assert table.row(b"row-000002") == {}

    # Crash: nothing flushed. The WALs left behind are replayed at the next start, then archived.
    load(table, 2000, 500, width=20)
    table.delete(b"row-000003", columns=[b"cf:v"])
    conn.close()
    cluster.crash()
    left = {sn: names for sn, names in wal_files_on_disk(cluster).items() if names}
    assert left, "the crash should leave WALs behind"
    cluster.restart()
    conn = cluster.connection()
    table = conn.table("t")
    assert sum(1 for _ in table.scan()) == 2499
    assert table.row(b"row-002499") == {b"cf:v": b"2499", b"cf:pad": b"x" * 20}
    assert table.row(b"row-000003") == {b"cf:pad": b"x" * 20}
    live = {rs["servername"] for rs in cluster.region_servers}
    assert set(wal_files(cluster)) == live  # the dead incarnations' WAL directories are gone...
    archived = set(old_wals(cluster))
    assert {n for names in left.values() for n in names} <= archived  # ...their files archived
    conn.close()


def wal_files_on_disk(cluster) -> dict[str, list[str]]:
    root = cluster.local_rootdir / "WALs"
    return {d.name: sorted(f.name for f in d.iterdir()) for d in root.iterdir()} if root.exists() else {}
