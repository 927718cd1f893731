"""Table and column family descriptors, region identities (HBase's region naming), table name rules."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from functools import cached_property

from minihbase.errors import DoNotRetryIOException, JavaIllegalArgument

FOREVER = 2147483647  # HConstants.FOREVER: a TTL in seconds that never expires
_QUALIFIER = re.compile(rb"^[a-zA-Z0-9_][a-zA-Z0-9_.\-]*$")


def validate_table_name(name: bytes) -> tuple[bytes, bytes]:
    """`ns:qualifier` or `qualifier` -> (namespace, qualifier), with HBase's character rules."""
    if not name:
        raise JavaIllegalArgument("Table qualifier must not be empty")
    namespace, sep, qualifier = name.partition(b":")
    if not sep:
        namespace, qualifier = b"default", name
    for part in (namespace, qualifier):
        if not _QUALIFIER.match(part):
            bad = next((chr(c) for c in part if not (chr(c).isalnum() or chr(c) in "_.-")), part[:1].decode(
                "latin-1"))
            raise JavaIllegalArgument(
                f"Illegal character <{bad}> at {part.find(bad.encode('latin-1'))}. User-space table qualifiers "
                f"may only contain 'alphanumeric characters' and digits: {name.decode('latin-1')}"
            )
    return namespace, qualifier


@dataclass
class FamilyDescriptor:
    name: bytes
    max_versions: int = 3
    ttl_s: int = FOREVER
    compression: str = "NONE"
    in_memory: bool = False
    bloom_filter_type: str = "ROW"
    block_cache_enabled: bool = True
    replication_scope: int = 0
    # Kept and shown by `describe` (the toolkit copies them), without further effect in minihbase.
    min_versions: int = 0
    keep_deleted_cells: str = "FALSE"
    block_size: int = 65536
    data_block_encoding: str = "NONE"
    # Every other value HBase keeps in the descriptor (INDEX_BLOCK_ENCODING, IS_MOB, MOB_THRESHOLD,
    # COMPRESSION_COMPACT, NEW_VERSION_BEHAVIOR, METADATA keys...), as strings, in the order they were set; and
    # the family's CONFIGURATION map. Kept, shown and copied; without further effect in minihbase.
    values: dict[str, str] = field(default_factory=dict)
    configuration: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        """HBase's checks plus the one replication needs: REPLICATION_SCOPE is 0 (local) or 1 (global). Other
        values (2 was serial scope in 2.0) crashed 1.0 region servers; minihbase refuses them, naming the family."""
        name = self.name.decode("latin-1")
        scope = self.replication_scope
        if isinstance(scope, bool) or not isinstance(scope, int) or scope not in (0, 1):
            raise DoNotRetryIOException(
                f"REPLICATION_SCOPE of column family '{name}' must be 0 (local) or 1 (global), got {scope!r}")
        if isinstance(self.max_versions, bool) or not isinstance(self.max_versions, int) or self.max_versions < 1:
            raise DoNotRetryIOException(f"Maximum versions must be positive (column family '{name}', "
                                        f"got {self.max_versions!r})")
        if isinstance(self.ttl_s, bool) or not isinstance(self.ttl_s, int) or self.ttl_s < 1:
            raise DoNotRetryIOException(f"TTL for column family '{name}' must be positive, got {self.ttl_s!r}")
        if not isinstance(self.min_versions, int) or not 0 <= self.min_versions <= self.max_versions:
            raise DoNotRetryIOException(f"Minimum versions of column family '{name}' must be between 0 and "
                                        f"VERSIONS ({self.max_versions}), got {self.min_versions!r}")

    def hbase_values(self) -> dict[str, str]:
        """Every value of the descriptor as HBase holds them (`getValues()`: strings), its defaults first."""
        values = {
            "BLOOMFILTER": self.bloom_filter_type, "REPLICATION_SCOPE": str(self.replication_scope),
            "VERSIONS": str(self.max_versions), "MIN_VERSIONS": str(self.min_versions),
            "COMPRESSION": self.compression, "TTL": str(self.ttl_s), "BLOCKSIZE": str(self.block_size),
            "IN_MEMORY": str(bool(self.in_memory)).lower(), "BLOCKCACHE": str(bool(self.block_cache_enabled)).lower(),
            "KEEP_DELETED_CELLS": self.keep_deleted_cells, "DATA_BLOCK_ENCODING": self.data_block_encoding,
            "INDEX_BLOCK_ENCODING": self.values.get("INDEX_BLOCK_ENCODING", "NONE"),
        }
        values.update((k, v) for k, v in self.values.items() if k not in values)
        return values

    def to_json(self) -> dict:
        d = asdict(self)
        d["name"] = self.name.decode("latin-1")
        # Pairs, not an object: the order values were set decides `describe`'s order (and JSON sorts keys).
        d["values"] = [[k, v] for k, v in self.values.items()]
        d["configuration"] = [[k, v] for k, v in self.configuration.items()]
        for key in ("values", "configuration"):
            if not d[key]:
                del d[key]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "FamilyDescriptor":
        d = dict(d)
        d["name"] = d["name"].encode("latin-1")
        for key in ("values", "configuration"):
            d[key] = dict(d.get(key) or [])
        return cls(**d)


@dataclass
class TableDescriptor:
    name: bytes
    families: dict[bytes, FamilyDescriptor] = field(default_factory=dict)
    enabled: bool = True
    # Table attribute READONLY (TableDescriptorBuilder.READONLY, `TableDescriptor.isReadOnly()`): None = never
    # set; once set (true or false) HBase keeps the value in the descriptor and `describe` shows it.
    readonly: bool | None = None
    # Every other table value (MAX_FILESIZE, DURABILITY, SPLIT_POLICY, NORMALIZATION_ENABLED, coprocessor$N,
    # METADATA and CONFIGURATION keys...), as strings: `TableDescriptor.getValues()` without READONLY.
    values: dict[str, str] = field(default_factory=dict)

    @property
    def is_read_only(self) -> bool:
        return bool(self.readonly)

    def attributes(self) -> dict[str, str]:
        """The table attributes set on the descriptor, as HBase's values map holds them (`READONLY => 'true'`):
        what `describe` prints as TABLE_ATTRIBUTES and Thrift2's TTableDescriptor.attributes carries."""
        attrs = {} if self.readonly is None else {"READONLY": "true" if self.readonly else "false"}
        attrs.update(self.values)
        return attrs

    @property
    def split_enabled(self) -> bool:
        """`TableDescriptor.isSplitEnabled()` (SPLIT_ENABLED, default true)."""
        return self.values.get("SPLIT_ENABLED", "true").lower() == "true"

    def coprocessors(self) -> list[str]:
        """The `coprocessor$N` specs, `path|class|priority|args`, in N order."""
        keys = sorted((k for k in self.values if k.lower().startswith("coprocessor$")),
                      key=lambda k: int(k.split("$", 1)[1]) if k.split("$", 1)[1].isdigit() else 0)
        return [self.values[k] for k in keys]

    @property
    def namespace(self) -> bytes:
        return validate_table_name(self.name)[0]

    @property
    def qualifier(self) -> bytes:
        return validate_table_name(self.name)[1]

    @property
    def text(self) -> str:
        return self.name.decode("latin-1")

    def to_bytes(self) -> bytes:
        d = {"name": self.text, "enabled": self.enabled, "families": [f.to_json() for f in self.families.values()]}
        if self.readonly is not None:
            d["readonly"] = self.readonly
        if self.values:
            d["values"] = self.values
        return json.dumps(d, indent=1, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "TableDescriptor":
        d = json.loads(data)
        fams = [FamilyDescriptor.from_json(f) for f in d["families"]]
        return cls(d["name"].encode("latin-1"), {f.name: f for f in fams}, d["enabled"], d.get("readonly"),
                   dict(d.get("values", {})))

    def describe(self) -> str:
        """The shell's `describe` style, used in error messages."""
        fams = ", ".join(
            f"{{NAME => '{f.name.decode('latin-1')}', VERSIONS => '{f.max_versions}', "
            f"TTL => '{'FOREVER' if f.ttl_s >= FOREVER else f.ttl_s}', "
            f"REPLICATION_SCOPE => '{f.replication_scope}'}}"
            for f in sorted(self.families.values(), key=lambda f: f.name)
        )
        attrs = self.attributes()
        if attrs:  # TableDescriptorBuilder.toString: the reserved keys set, before the families
            table_attrs = ", ".join(f"{k} => '{v}'" for k, v in attrs.items())
            return f"'{self.text}', {{TABLE_ATTRIBUTES => {{{table_attrs}}}}}, {fams}"
        return f"'{self.text}', {fams}"


@dataclass(frozen=True)
class RegionInfo:
    """A region's identity as HBase builds it: `table,startKey,regionId.<md5 hex of that>.`."""

    table: bytes
    start_key: bytes
    end_key: bytes
    region_id: int

    @cached_property
    def base_name(self) -> bytes:
        return self.table + b"," + self.start_key + b"," + str(self.region_id).encode()

    @cached_property
    def encoded_name(self) -> str:
        return hashlib.md5(self.base_name).hexdigest()

    @cached_property
    def region_name(self) -> bytes:
        return self.base_name + b"." + self.encoded_name.encode() + b"."

    def contains(self, row: bytes) -> bool:
        return row >= self.start_key and (not self.end_key or row < self.end_key)

    def to_bytes(self) -> bytes:
        return json.dumps({
            "table": self.table.hex(), "start_key": self.start_key.hex(), "end_key": self.end_key.hex(),
            "region_id": self.region_id, "region_name": self.region_name.decode("latin-1"),
        }, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "RegionInfo":
        d = json.loads(data)
        return cls(bytes.fromhex(d["table"]), bytes.fromhex(d["start_key"]), bytes.fromhex(d["end_key"]),
                   d["region_id"])
