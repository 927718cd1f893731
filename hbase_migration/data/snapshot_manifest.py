"""An HBase snapshot's manifest, read by hand (pure), and the files an export copies.

A completed snapshot is a directory `<rootdir>/.hbase-snapshot/<name>/` holding two protobuf files (HBase's
`Snapshot.proto` and `HBase.proto`; format version 2, `SnapshotManifestV2`, what every HBase 2.x writes):

- `.snapshotinfo`: `SnapshotDescription {1 name, 2 table, 3 creation_time, 4 type (DISABLED 0, FLUSH 1,
  SKIPFLUSH 2), 5 version, 6 owner, 7 users_and_permissions, 8 ttl (s), ...}`;
- `data.manifest`: `SnapshotDataManifest {1 table_schema, 2 region_manifests}` where a region manifest is
  `{1 version, 2 region_info, 3 family_files {1 family_name, 2 store_files {1 name, 2 reference, 3 file_size}}}`
  and a `RegionInfo` is `{1 region_id, 2 table_name {1 namespace, 2 qualifier}, 3 start_key, 4 end_key, 5
  offline, 6 split, 7 replica_id}`.

No generated code: the few fields needed are decoded here (unknown fields are skipped, so a newer HBase's
additions read fine), as `clusters/zk.py` decodes HBase's znodes. What ExportSnapshot copies follows from it
(`export_files`): every store file into `<target root>/archive/data/<ns>/<table>/<region>/<family>/<file>`; for
a reference file (a split daughter's) the parent's file it refers to; for an HFileLink (a table itself cloned from
a snapshot) the file it links to; MOB files from `<root>/mobdir`. A region's directory is its encoded name, the
MD5 of `<table>,<start key>,<region id>` (`RegionInfo.createRegionName`), which the manifest does not store.
"""
from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

SNAPSHOT_DIR = ".hbase-snapshot"
WORKING_DIR = ".tmp"  # hbase.snapshot.working.dir's default, under SNAPSHOT_DIR
# Where an export stages the manifest and the files it copies, under the target's rootdir, until it publishes: a
# directory HBase's start-up and cleaner chores never look into (see `staging_dir`)
STAGING_DIR = ".hbase-migration-staging"
SNAPSHOTINFO = ".snapshotinfo"
DATA_MANIFEST = "data.manifest"
MANIFEST_FILES = (SNAPSHOTINFO, DATA_MANIFEST)
TYPES = {0: "DISABLED", 1: "FLUSH", 2: "SKIPFLUSH"}
MOB_START_KEY = b".mob"  # MobUtils.getMobRegionInfo: start key ".mob", region id 0
DEFAULT_NAMESPACE = "default"
# Snapshot names follow table qualifiers' rule (TableName.isLegalTableQualifierName; no ':', no leading '.' or '-')
SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")

WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_FIXED32 = 0, 1, 2, 5


class ManifestError(ValueError):
    """A snapshot file that cannot be read as HBase writes it; the message names the file and the field."""


# --------------------------------------------------------------------------------------------------
# Protobuf wire format (the part HBase's messages use)


def _varint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ManifestError(f"{what}: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ManifestError(f"{what}: varint longer than 10 bytes")


def fields(data: bytes, what: str) -> list[tuple[int, int, int | bytes]]:
    """Every field of one message in wire order: (number, wire type, int or bytes)."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    view = memoryview(data)
    while pos < len(data):
        key, pos = _varint(data, pos, what)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ManifestError(f"{what}: field number 0 at byte {pos}")
        if wire == WIRE_VARINT:
            value, pos = _varint(data, pos, what)
            out.append((number, wire, value))
        elif wire == WIRE_LEN:
            length, pos = _varint(data, pos, what)
            if pos + length > len(data):
                raise ManifestError(f"{what}: field {number} claims {length} bytes, {len(data) - pos} left")
            out.append((number, wire, bytes(view[pos:pos + length])))
            pos += length
        elif wire in (WIRE_FIXED64, WIRE_FIXED32):
            size = 8 if wire == WIRE_FIXED64 else 4
            if pos + size > len(data):
                raise ManifestError(f"{what}: field {number} truncated")
            out.append((number, wire, bytes(view[pos:pos + size])))
            pos += size
        else:
            raise ManifestError(f"{what}: unsupported wire type {wire} in field {number}")
    return out


def _encode_varint(value: int) -> bytes:
    if value < 0:
        value &= (1 << 64) - 1
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _encode(number: int, wire: int, value: int | bytes) -> bytes:
    key = _encode_varint(number << 3 | wire)
    if wire == WIRE_VARINT:
        return key + _encode_varint(int(value))  # type: ignore[arg-type]
    if wire == WIRE_LEN:
        return key + _encode_varint(len(value)) + bytes(value)  # type: ignore[arg-type]
    return key + bytes(value)  # type: ignore[arg-type]


def _expect(value: int | bytes, wire: int, want: int, what: str) -> int | bytes:
    if wire != want:
        raise ManifestError(f"{what}: wire type {wire}, expected {want}")
    return value


def _text(value: int | bytes, what: str) -> str:
    if not isinstance(value, bytes):
        raise ManifestError(f"{what}: expected a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{what}: not UTF-8: {value[:60]!r}") from None


def _string_binary(value: int | bytes, what: str) -> str:
    """An attribute's value, which HBase keeps as bytes: the text when it is UTF-8, else as `Bytes.toStringBinary`
    shows it (printable ASCII kept, every other byte `\\xNN`): an encrypted family's ENCRYPTION_KEY is a key
    wrapped with the cluster's master key, not text."""
    if not isinstance(value, bytes):
        raise ManifestError(f"{what}: expected bytes")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else f"\\x{b:02X}" for b in value)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# --------------------------------------------------------------------------------------------------
# .snapshotinfo


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    table: str
    creation_time_ms: int
    type: str  # DISABLED | FLUSH | SKIPFLUSH
    version: int
    owner: str | None = None
    ttl_s: int = 0


def parse_snapshot_info(data: bytes) -> SnapshotInfo:
    """`.snapshotinfo` (`SnapshotDescription`); `type` defaults to FLUSH, as protobuf's declared default."""
    what = SNAPSHOTINFO
    values: dict[str, object] = {"type": "FLUSH", "creation_time_ms": 0, "version": 0, "ttl_s": 0, "owner": None}
    for number, wire, value in fields(data, what):
        if number == 1:
            values["name"] = _text(_expect(value, wire, WIRE_LEN, f"{what} name"), f"{what} name")
        elif number == 2:
            values["table"] = _text(_expect(value, wire, WIRE_LEN, f"{what} table"), f"{what} table")
        elif number == 3:
            values["creation_time_ms"] = _signed64(int(_expect(value, wire, WIRE_VARINT, f"{what} creation_time")))
        elif number == 4:
            kind = int(_expect(value, wire, WIRE_VARINT, f"{what} type"))
            values["type"] = TYPES.get(kind, f"UNKNOWN({kind})")
        elif number == 5:
            values["version"] = int(_expect(value, wire, WIRE_VARINT, f"{what} version"))
        elif number == 6:
            values["owner"] = _text(_expect(value, wire, WIRE_LEN, f"{what} owner"), f"{what} owner")
        elif number == 8:
            values["ttl_s"] = _signed64(int(_expect(value, wire, WIRE_VARINT, f"{what} ttl")))
    if "name" not in values or "table" not in values:
        raise ManifestError(f"{what}: no snapshot name or table (is this a snapshot directory?)")
    return SnapshotInfo(**values)  # type: ignore[arg-type]


def without_ttl(data: bytes) -> bytes:
    """`.snapshotinfo` with its TTL removed (ExportSnapshot's `--reset-ttl`): the imported snapshot does not expire
    on the target under the TTL the source gave it (`hbase.master.snapshot.ttl`). Every other field is kept as it
    was, byte for byte and in order."""
    return b"".join(_encode(n, w, v) for n, w, v in fields(data, SNAPSHOTINFO) if n != 8)


# --------------------------------------------------------------------------------------------------
# data.manifest


@dataclass(frozen=True)
class RegionInfo:
    region_id: int
    namespace: str
    qualifier: str
    start_key: bytes = b""
    end_key: bytes = b""
    offline: bool = False
    split: bool = False
    replica_id: int = 0

    @property
    def table(self) -> str:
        return table_name(self.namespace, self.qualifier)

    @property
    def encoded_name(self) -> str:
        """The region's directory name: MD5 (hex) of `<table>,<start key>,<region id>[_<replica, %04X>]`."""
        name = self.table.encode("utf-8") + b"," + self.start_key + b"," + str(self.region_id).encode("ascii")
        if self.replica_id > 0:
            name += b"_" + (f"{self.replica_id:04X}").encode("ascii")
        return hashlib.md5(name, usedforsecurity=False).hexdigest()

    @property
    def is_mob(self) -> bool:
        """The table's MOB region (its files live under `<root>/mobdir`)."""
        return self.start_key == MOB_START_KEY and self.region_id == 0


@dataclass(frozen=True)
class StoreFile:
    name: str
    size: int | None  # file_size (the referred file's for a reference); None when the manifest has none
    reference: bool = False


@dataclass(frozen=True)
class RegionManifest:
    region: RegionInfo
    families: tuple[tuple[str, tuple[StoreFile, ...]], ...]


@dataclass(frozen=True)
class Family:
    name: str
    attributes: tuple[tuple[str, str], ...] = ()

    def value(self, key: str) -> str | None:
        return next((v for k, v in self.attributes if k.upper() == key.upper()), None)

    @property
    def encryption(self) -> str | None:
        """The family's cipher (its HFiles encrypted, their keys wrapped with the cluster's master key), or None."""
        value = (self.value("ENCRYPTION") or "").strip()
        return value if value and value.upper() != "NONE" else None


@dataclass(frozen=True)
class Manifest:
    table: str
    families: tuple[Family, ...]
    regions: tuple[RegionManifest, ...]

    @property
    def store_files(self) -> int:
        return sum(len(files) for r in self.regions for _, files in r.families)


def table_name(namespace: str, qualifier: str) -> str:
    """`ns:qualifier`, or the bare qualifier in the default namespace (HBase's TableName.getNameAsString)."""
    return qualifier if namespace in ("", DEFAULT_NAMESPACE) else f"{namespace}:{qualifier}"


def split_table(table: str) -> tuple[str, str]:
    namespace, sep, qualifier = table.partition(":")
    return (namespace, qualifier) if sep else (DEFAULT_NAMESPACE, table)


def _table_name(data: bytes, what: str) -> tuple[str, str]:
    namespace = qualifier = None
    for number, wire, value in fields(data, what):
        if number == 1:
            namespace = _text(_expect(value, wire, WIRE_LEN, f"{what} namespace"), f"{what} namespace")
        elif number == 2:
            qualifier = _text(_expect(value, wire, WIRE_LEN, f"{what} qualifier"), f"{what} qualifier")
    if qualifier is None:
        raise ManifestError(f"{what}: no qualifier")
    return namespace or DEFAULT_NAMESPACE, qualifier


def _region_info(data: bytes, what: str) -> RegionInfo:
    values: dict[str, object] = {}
    for number, wire, value in fields(data, what):
        if number == 1:
            values["region_id"] = int(_expect(value, wire, WIRE_VARINT, f"{what} region_id"))
        elif number == 2:
            values["namespace"], values["qualifier"] = _table_name(
                _expect(value, wire, WIRE_LEN, f"{what} table_name"), f"{what} table_name")  # type: ignore[arg-type]
        elif number == 3:
            values["start_key"] = _expect(value, wire, WIRE_LEN, f"{what} start_key")
        elif number == 4:
            values["end_key"] = _expect(value, wire, WIRE_LEN, f"{what} end_key")
        elif number == 5:
            values["offline"] = bool(_expect(value, wire, WIRE_VARINT, f"{what} offline"))
        elif number == 6:
            values["split"] = bool(_expect(value, wire, WIRE_VARINT, f"{what} split"))
        elif number == 7:
            values["replica_id"] = int(_expect(value, wire, WIRE_VARINT, f"{what} replica_id"))
    if "region_id" not in values or "qualifier" not in values:
        raise ManifestError(f"{what}: a region without its id or table")
    return RegionInfo(**values)  # type: ignore[arg-type]


def _store_file(data: bytes, what: str) -> StoreFile:
    name, size, reference = None, None, False
    for number, wire, value in fields(data, what):
        if number == 1:
            name = _text(_expect(value, wire, WIRE_LEN, f"{what} name"), f"{what} name")
        elif number == 2:
            _expect(value, wire, WIRE_LEN, f"{what} reference")
            reference = True
        elif number == 3:
            size = int(_expect(value, wire, WIRE_VARINT, f"{what} file_size"))
    if not name:
        raise ManifestError(f"{what}: a store file without a name")
    if "/" in name or name in (".", ".."):
        raise ManifestError(f"{what}: store file name {name!r} is not a file name")
    return StoreFile(name, size, reference)


def _family(data: bytes, what: str) -> Family:
    name, attributes = None, []
    for number, wire, value in fields(data, what):
        if number == 1:
            name = _text(_expect(value, wire, WIRE_LEN, f"{what} name"), f"{what} name")
        elif number == 2:
            pair = {n: v for n, _, v in fields(_expect(value, wire, WIRE_LEN, f"{what} attribute"), what)}  # type: ignore[arg-type]
            attributes.append((_text(pair.get(1, b""), f"{what} attribute"),
                               _string_binary(pair.get(2, b""), f"{what} attribute value")))
    if name is None:
        raise ManifestError(f"{what}: a column family without a name")
    return Family(name, tuple(attributes))


def parse_data_manifest(data: bytes) -> Manifest:
    """`data.manifest` (`SnapshotDataManifest`): the table, its families and every region's store files."""
    what = DATA_MANIFEST
    table, families, regions = None, [], []
    for number, wire, value in fields(data, what):
        if number == 1:
            for n, w, v in fields(_expect(value, wire, WIRE_LEN, f"{what} table_schema"), f"{what} table_schema"):  # type: ignore[arg-type]
                if n == 1:
                    table = table_name(*_table_name(_expect(v, w, WIRE_LEN, "table_name"), f"{what} table_name"))  # type: ignore[arg-type]
                elif n == 3:
                    families.append(_family(_expect(v, w, WIRE_LEN, "column_families"), f"{what} family"))  # type: ignore[arg-type]
        elif number == 2:
            regions.append(_region_manifest(_expect(value, wire, WIRE_LEN, f"{what} region"), len(regions)))  # type: ignore[arg-type]
    if table is None:
        raise ManifestError(f"{what}: no table schema (is this a version 2 snapshot manifest?)")
    return Manifest(table, tuple(families), tuple(regions))


def _region_manifest(data: bytes, index: int) -> RegionManifest:
    what = f"{DATA_MANIFEST} region {index}"
    region, families = None, []
    for number, wire, value in fields(data, what):
        if number == 2:
            region = _region_info(_expect(value, wire, WIRE_LEN, f"{what} region_info"), f"{what} region_info")  # type: ignore[arg-type]
        elif number == 3:
            family, files = None, []
            for n, w, v in fields(_expect(value, wire, WIRE_LEN, f"{what} family_files"), what):  # type: ignore[arg-type]
                if n == 1:
                    family = _text(_expect(v, w, WIRE_LEN, f"{what} family_name"), f"{what} family_name")
                elif n == 2:
                    files.append(_store_file(_expect(v, w, WIRE_LEN, f"{what} store_file"), f"{what} store_file"))  # type: ignore[arg-type]
            if family is None:
                raise ManifestError(f"{what}: family files without a family name")
            families.append((family, tuple(files)))
    if region is None:
        raise ManifestError(f"{what}: no region_info")
    return RegionManifest(region, tuple(families))


# --------------------------------------------------------------------------------------------------
# Store file names: HFileLinks and references (HFileLink.LINK_NAME_PATTERN, StoreFileInfo.REF_NAME_PATTERN)

_LINK = re.compile(r"^(?:([\w]+)=)?([\w][-\w.]*)=([a-f0-9]+)-([0-9a-f]+(?:_SeqId_[0-9]+_|_del)?)$")


def parse_link(name: str) -> tuple[str, str, str] | None:
    """An HFileLink's name (`[ns=]table=region-hfile`) -> (table, region, hfile); None for a plain file name."""
    match = _LINK.match(name)
    if not match:
        return None
    namespace, qualifier, region, hfile = match.groups()
    return table_name(namespace or DEFAULT_NAMESPACE, qualifier), region, hfile


def parse_reference(name: str) -> tuple[str, str]:
    """A reference file's name (`<hfile or link>.<parent region>`) -> (the referred file's name, parent region)."""
    referred, sep, parent = name.rpartition(".")
    if not sep or not referred or not re.fullmatch(r"[a-f0-9]+", parent):
        raise ManifestError(f"reference file name {name!r} is not <hfile>.<parent region>")
    return referred, parent


# --------------------------------------------------------------------------------------------------
# What an export copies, and where


@dataclass(frozen=True, order=True)
class ExportFile:
    """One file to copy: the store file (or the one a reference or link points to) of `table`'s `region`."""

    table: str  # ns:qualifier (a link may point to another table)
    region: str  # encoded region name
    family: str
    name: str
    size: int  # bytes (-1: the manifest did not say)
    mob: bool = False

    @property
    def relative(self) -> str:
        """`data/<ns>/<table>/<region>/<family>/<file>`: under `archive/` on the target; under the rootdir (or
        `mobdir/` for MOB files) on the source, or under its `archive/` once compacted away."""
        namespace, qualifier = split_table(self.table)
        return posixpath.join("data", namespace, qualifier, self.region, self.family, self.name)

    def target_path(self, rootdir: str) -> str:
        """Where the file ends on the target: under its `archive/`, where the clone's HFileLinks look."""
        return posixpath.join(rootdir, "archive", self.relative)

    def staged_path(self, staging: str) -> str:
        """Where the export writes the file first: `<staging dir>/archive/<relative>` (`staging_dir`)."""
        return posixpath.join(staging, "archive", self.relative)

    def source_paths(self, rootdir: str) -> tuple[str, str]:
        """Where the file is on the source: its live location first, then `archive/`, where a compaction, a split
        or a table deletion moves it (the snapshot keeps it there; HBASE-22877: over WebHDFS the copier must look
        in both itself)."""
        live = posixpath.join(rootdir, "mobdir" if self.mob else "", self.relative)
        return posixpath.normpath(live), posixpath.join(rootdir, "archive", self.relative)

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "region": self.region, "family": self.family, "name": self.name,
                "size": self.size, "mob": self.mob}

    @classmethod
    def from_dict(cls, d: dict) -> "ExportFile":
        return cls(str(d["table"]), str(d["region"]), str(d["family"]), str(d["name"]), int(d["size"]),
                   bool(d.get("mob", False)))


def export_files(manifest: Manifest) -> list[ExportFile]:
    """Every file the snapshot needs on the target, once each (two daughters referring to one parent file copy it
    once), sorted by path. References resolve to the parent region's file, links to the file they name."""
    out: dict[str, ExportFile] = {}
    for region_manifest in manifest.regions:
        region = region_manifest.region
        for family, files in region_manifest.families:
            for store_file in files:
                table, encoded, name = region.table, region.encoded_name, store_file.name
                if store_file.reference:
                    name, encoded = parse_reference(name)
                link = parse_link(name)
                if link is not None:
                    table, encoded, name = link
                f = ExportFile(table, encoded, family, name, -1 if store_file.size is None else store_file.size,
                               region.is_mob)
                out.setdefault(f.relative, f)
    return [out[k] for k in sorted(out)]


def encryption_refusal(table: str, encrypted: Mapping[str, str]) -> str:
    """Why a table with encrypted families (family -> cipher) cannot go by snapshot unless the operator attests the
    target's master key, with the ways on (pure)."""
    shown = ", ".join(f"{f!r} (ENCRYPTION => '{c}')" for f, c in sorted(encrypted.items()))
    return (f"{table} has encrypted famil{'y' if len(encrypted) == 1 else 'ies'} {shown}: a snapshot moves their "
            "HFiles as they are, each data key wrapped with the source cluster's master key "
            "(hbase.crypto.master.key.name), which a target holding another key cannot unwrap (the clone's regions "
            "would not open). Copy it by scan (initial_copy scan, or auto: the target then wraps keys of its own), "
            "or, if the target's key provider holds the source's master key under the same name, say so in the run "
            "spec (same_master_key true; the CLI's --same-master-key)")


def snapshot_dir(rootdir: str, name: str) -> str:
    return posixpath.join(rootdir, SNAPSHOT_DIR, check_snapshot_name(name))


def working_dir(rootdir: str, name: str) -> str:
    """Where an export puts the manifest first (`.hbase-snapshot/.tmp/<name>`): the target's cleaners then count
    the files it names as referenced while they arrive (HBASE-23202)."""
    return posixpath.join(rootdir, SNAPSHOT_DIR, WORKING_DIR, check_snapshot_name(name))


def staging_dir(rootdir: str, name: str) -> str:
    """Where an export stages snapshot `name` on the target until it publishes it (`<rootdir>/.hbase-migration-
    staging/<name>`: the manifest in `snapshot/`, the files in `archive/` as they will lie in the rootdir's).

    Not `.hbase-snapshot/.tmp/<name>` and `archive/`, where ExportSnapshot writes: a master that starts (a restart,
    a failover) deletes every working directory under `.hbase-snapshot/.tmp` that no snapshot procedure of its own
    owns (SnapshotManager.resetTempDir, from initialize()), and once the manifest is gone its HFileCleaner deletes
    the files already copied into `archive/` that nothing else references and that are older than
    hbase.master.hfilecleaner.ttl (5 min): an export of hours would lose all but its last minutes of files. HBase
    neither cleans nor reads an unknown directory of its rootdir, which shares the rootdir's quota and encryption
    zone, so the files move into `archive/` by renames (NameNode operations, no copy) when the export publishes."""
    return posixpath.join(rootdir, STAGING_DIR, check_snapshot_name(name))


def check_snapshot_name(name: str) -> str:
    if not isinstance(name, str) or not SNAPSHOT_NAME.match(name) or len(name) > 200:
        raise ValueError(f"snapshot name must be letters, digits, '_', '-' and '.', not starting with '-' or '.' "
                         f"(at most 200), got {name!r}")
    return name


def table_dirs(files: Iterable[ExportFile]) -> list[str]:
    """The `data/<ns>/<table>` parts of `files` (a link may add another table's), sorted."""
    return sorted({posixpath.join("data", *split_table(f.table)) for f in files})


def family_dirs(files: Sequence[ExportFile]) -> list[str]:
    """The `data/<ns>/<table>/<region>/<family>` directories of `files`, sorted."""
    return sorted({posixpath.dirname(f.relative) for f in files})
