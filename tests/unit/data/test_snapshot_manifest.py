"""The snapshot manifest read by hand: bytes a real HBase 2.6.4 wrote (realhbase_snapshot/: `.snapshotinfo` and
`data.manifest` of snapshot `exp1_snap` of table `exp1`, families `d` (VERSIONS 3) and `k` (KEEP_DELETED_CELLS),
split at 'm', two flushes; `enc1_s` of table `enc1`, families `e` (ENCRYPTION => 'AES'), `k` (the same with an
ENCRYPTION_KEY given, kept wrapped by the master key) and `p` (clear), and `describe 'enc1'` as its shell printed
it), and manifests built field by field for what that cluster did not make (references,
links, MOB, a namespace, replicas)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hbase_migration.data.snapshot_manifest import (
    ExportFile,
    ManifestError,
    RegionInfo,
    _encode,
    check_snapshot_name,
    export_files,
    family_dirs,
    parse_data_manifest,
    parse_link,
    parse_reference,
    parse_snapshot_info,
    snapshot_dir,
    table_dirs,
    without_ttl,
    working_dir,
)

HERE = Path(__file__).resolve().parent / "realhbase_snapshot"
INFO = (HERE / "exp1.snapshotinfo").read_bytes()
MANIFEST = (HERE / "exp1.data.manifest").read_bytes()
# The region directories realhbase's dc1 showed under /hbase/data/default/exp1/ (LISTSTATUS)
REGION_DIRS = {b"": "78217e7e03695be84366e5ce74aae1cf", b"m": "2da859cd50a429d5e76368f2eb721cb0"}


def test_the_real_snapshotinfo():
    info = parse_snapshot_info(INFO)
    assert (info.name, info.table, info.type, info.version, info.ttl_s, info.owner) == (
        "exp1_snap", "exp1", "FLUSH", 2, 0, None)
    assert info.creation_time_ms == 1795660809700


def test_ttl_is_removed_and_every_other_byte_kept():
    info = parse_snapshot_info(INFO)
    stripped = without_ttl(INFO)
    assert stripped == INFO[:-2]  # the real file ends with field 8 (ttl) = 0: 0x40 0x00
    assert parse_snapshot_info(stripped) == info
    with_ttl = INFO[:-2] + _encode(8, 0, 86_400)
    assert parse_snapshot_info(with_ttl).ttl_s == 86_400
    assert parse_snapshot_info(without_ttl(with_ttl)).ttl_s == 0
    assert without_ttl(without_ttl(with_ttl)) == without_ttl(with_ttl)


def test_the_real_manifest_and_its_regions_encoded_names():
    manifest = parse_data_manifest(MANIFEST)
    assert manifest.table == "exp1"
    assert [(f.name, f.value("KEEP_DELETED_CELLS"), f.value("VERSIONS")) for f in manifest.families] == [
        ("d", "FALSE", "3"), ("k", "TRUE", "5")]
    assert {r.region.start_key: r.region.encoded_name for r in manifest.regions} == REGION_DIRS
    assert manifest.store_files == 6
    region = manifest.regions[0].region
    assert (region.namespace, region.qualifier, region.region_id, region.replica_id) == (
        "default", "exp1", 1795660771919, 0)


def test_the_real_manifests_files_and_where_they_go():
    files = export_files(parse_data_manifest(MANIFEST))
    assert [(f.region, f.family, f.name, f.size) for f in files] == [
        ("2da859cd50a429d5e76368f2eb721cb0", "d", "291bfaf2914841e3865102a9626e8ba2", 5078),
        ("2da859cd50a429d5e76368f2eb721cb0", "k", "5bc9396fc1d3498a9d98f615bd9cb523", 5078),
        ("2da859cd50a429d5e76368f2eb721cb0", "k", "cde2c685e6c44c468effdc66c70a9bb2", 4952),
        ("78217e7e03695be84366e5ce74aae1cf", "d", "123fb79b7714474c9895f21f5a0216b2", 4952),
        ("78217e7e03695be84366e5ce74aae1cf", "k", "8ea14cc94aea4ff987dc93e32960b618", 4950),
        ("78217e7e03695be84366e5ce74aae1cf", "k", "a0d432144c2b43c0b7a537cac265ba97", 4981)]
    f = files[0]
    assert f.target_path("/hbase") == "/hbase/archive/data/default/exp1/2da859cd50a429d5e76368f2eb721cb0/d/" \
                                      "291bfaf2914841e3865102a9626e8ba2"
    assert f.source_paths("/hbase") == (
        "/hbase/data/default/exp1/2da859cd50a429d5e76368f2eb721cb0/d/291bfaf2914841e3865102a9626e8ba2",
        "/hbase/archive/data/default/exp1/2da859cd50a429d5e76368f2eb721cb0/d/291bfaf2914841e3865102a9626e8ba2")
    assert ExportFile.from_dict(f.to_dict()) == f
    assert table_dirs(files) == ["data/default/exp1"]
    assert family_dirs(files)[0] == "data/default/exp1/2da859cd50a429d5e76368f2eb721cb0/d"
    assert len(family_dirs(files)) == 4


# ------------------------------------------------------------------------------------------------ built manifests

def _table_name(ns: str, q: str) -> bytes:
    return _encode(1, 2, ns.encode()) + _encode(2, 2, q.encode())


def _region(ns: str, q: str, start: bytes, region_id: int, replica: int = 0) -> bytes:
    body = _encode(1, 0, region_id) + _encode(2, 2, _table_name(ns, q)) + _encode(3, 2, start) + _encode(4, 2, b"")
    return body + (_encode(7, 0, replica) if replica else b"")


def _store_file(name: str, size: int | None, reference: bool = False) -> bytes:
    body = _encode(1, 2, name.encode())
    if reference:
        body += _encode(2, 2, _encode(1, 2, b"splitkey") + _encode(2, 0, 0))
    return body + (_encode(3, 0, size) if size is not None else b"")


def _manifest(ns: str, q: str, regions: list[tuple[bytes, list[tuple[str, list[bytes]]]]]) -> bytes:
    schema = _encode(1, 2, _table_name(ns, q)) + _encode(3, 2, _encode(1, 2, b"cf"))
    out = _encode(1, 2, schema)
    for region_info, families in regions:
        body = _encode(1, 0, 2) + _encode(2, 2, region_info)
        for family, files in families:
            body += _encode(3, 2, _encode(1, 2, family.encode()) + b"".join(_encode(2, 2, f) for f in files))
        out += _encode(2, 2, body)
    return out


def test_encoded_names_follow_hbases_region_name():
    region = RegionInfo(1700000000000, "ns1", "orders", b"k\x00\xff")
    assert region.table == "ns1:orders"
    assert region.encoded_name == hashlib.md5(b"ns1:orders,k\x00\xff,1700000000000").hexdigest()
    replica = RegionInfo(1700000000000, "default", "t", b"", replica_id=2)
    assert replica.encoded_name == hashlib.md5(b"t,,1700000000000_0002").hexdigest()
    assert RegionInfo(0, "ns1", "orders", b".mob").is_mob and not region.is_mob


def test_references_links_mob_and_a_namespace():
    parent = RegionInfo(1, "ns1", "t", b"").encoded_name
    daughter_a, daughter_b = _region("ns1", "t", b"", 2), _region("ns1", "t", b"m", 2)
    mob = _region("ns1", "t", b".mob", 0)
    data = _manifest("ns1", "t", [
        (daughter_a, [("cf", [_store_file(f"aaaa1111.{parent}", 700, reference=True)])]),
        (daughter_b, [("cf", [_store_file(f"aaaa1111.{parent}", 700, reference=True),
                              _store_file("old=t0=0123abcd-beef00_SeqId_7_", 300),
                              _store_file("ffff0000", None)])]),
        (mob, [("cf", [_store_file("d41d8cd98f00b204e9800998ecf8427e20240101deadbeef", 5000)])]),
    ])
    manifest = parse_data_manifest(data)
    assert manifest.table == "ns1:t" and [f.name for f in manifest.families] == ["cf"]
    files = {(f.table, f.region, f.name): f for f in export_files(manifest)}
    # both daughters refer to one parent file: copied once, from the parent region
    assert files[("ns1:t", parent, "aaaa1111")].size == 700
    # a link to another table's file: copied where it points (old=t0 is namespace old, table t0)
    assert files[("old:t0", "0123abcd", "beef00_SeqId_7_")].relative == "data/old/t0/0123abcd/cf/beef00_SeqId_7_"
    # no size in the manifest: -1 (the export stats it on the source)
    assert files[("ns1:t", RegionInfo(2, "ns1", "t", b"m").encoded_name, "ffff0000")].size == -1
    mob_file = next(f for f in files.values() if f.mob)
    assert mob_file.source_paths("/hbase")[0].startswith("/hbase/mobdir/data/ns1/t/")
    assert mob_file.source_paths("/hbase")[1].startswith("/hbase/archive/data/ns1/t/")
    assert mob_file.target_path("/hbase").startswith("/hbase/archive/data/ns1/t/")
    assert len(files) == 4
    assert table_dirs(files.values()) == ["data/ns1/t", "data/old/t0"]


def test_link_and_reference_names():
    assert parse_link("t1=abc123-00ff") == ("t1", "abc123", "00ff")
    assert parse_link("ns=my.table-x=abc123-00ff_SeqId_12_") == ("ns:my.table-x", "abc123", "00ff_SeqId_12_")
    assert parse_link("00ff") is None and parse_link("a=b-xyz") is None  # xyz is not hex
    assert parse_reference("00ff.abc123") == ("00ff", "abc123")
    assert parse_reference("ns=t.x=abc-00ff.def456") == ("ns=t.x=abc-00ff", "def456")
    with pytest.raises(ManifestError, match="not <hfile>.<parent region>"):
        parse_reference("00ff")


@pytest.mark.parametrize("data, message", [
    (MANIFEST[:-3], "data.manifest"),
    (b"\x08", "truncated varint"),
    (b"\x00\x01", "field number 0"),
    (b"\x0b", "unsupported wire type 3"),
    (_encode(2, 2, _encode(1, 0, 2)), "no region_info"),
    (_encode(5, 0, 1), "no table schema"),
])
def test_what_is_not_a_manifest_is_said(data, message):
    with pytest.raises(ManifestError, match=message):
        parse_data_manifest(data)


def test_a_store_file_name_must_be_a_name():
    data = _manifest("default", "t", [(_region("default", "t", b"", 1), [("cf", [_store_file("../x", 1)])])])
    with pytest.raises(ManifestError, match="is not a file name"):
        parse_data_manifest(data)


def test_snapshotinfo_without_a_name_is_refused():
    with pytest.raises(ManifestError, match="no snapshot name or table"):
        parse_snapshot_info(_encode(3, 0, 5))


def test_snapshot_directories_and_names():
    assert snapshot_dir("/hbase", "s1") == "/hbase/.hbase-snapshot/s1"
    assert working_dir("/hbase", "s1") == "/hbase/.hbase-snapshot/.tmp/s1"
    assert check_snapshot_name("hbase_migration-ns.t-0a1b") == "hbase_migration-ns.t-0a1b"
    for bad in ("", "-x", ".x", "a:b", "a/b", "x" * 201):
        with pytest.raises(ValueError, match="snapshot name"):
            check_snapshot_name(bad)


def test_the_real_manifest_of_an_encrypted_table():
    """An encrypted family's ENCRYPTION_KEY is the family key wrapped with the master key: bytes, not text (this
    manifest once failed to parse: "not UTF-8"). It reads as HBase's describe prints it (Bytes.toStringBinary)."""
    from hbase_migration.migration.schema import parse_describe

    manifest = parse_data_manifest((HERE / "enc1.data.manifest").read_bytes())
    assert {f.name: f.encryption for f in manifest.families} == {"e": "AES", "k": "AES", "p": None}
    described = parse_describe((HERE / "enc1.describe.txt").read_text(), "enc1")
    assert described.encrypted_families() == {"e": "AES", "k": "AES"}
    key = next(f for f in manifest.families if f.name == "k").value("ENCRYPTION_KEY")
    assert key.startswith("B\\x0A\\x03AES") and key == described.family("k").attributes["ENCRYPTION_KEY"]
    assert [f.family for f in export_files(manifest)] == ["e", "k", "p"]
    assert parse_snapshot_info((HERE / "enc1.snapshotinfo").read_bytes()).name == "enc1_s"
