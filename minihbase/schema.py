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

    def to_json(self) -> dict:
        d = asdict(self)
        d["name"] = self.name.decode("latin-1")
        return d

    @classmethod
    def from_json(cls, d: dict) -> "FamilyDescriptor":
        d = dict(d)
        d["name"] = d["name"].encode("latin-1")
        return cls(**d)


@dataclass
class TableDescriptor:
    name: bytes
    families: dict[bytes, FamilyDescriptor] = field(default_factory=dict)
    enabled: bool = True
    # Table attribute READONLY (TableDescriptorBuilder.READONLY, `TableDescriptor.isReadOnly()`): None = never
    # set; once set (true or false) HBase keeps the value in the descriptor and `describe` shows it.
    readonly: bool | None = None

    @property
    def is_read_only(self) -> bool:
        return bool(self.readonly)

    def attributes(self) -> dict[str, str]:
        """The table attributes set on the descriptor, as HBase's values map holds them (`READONLY => 'true'`):
        what `describe` prints as TABLE_ATTRIBUTES and Thrift2's TTableDescriptor.attributes carries."""
        return {} if self.readonly is None else {"READONLY": "true" if self.readonly else "false"}

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
        return json.dumps(d, indent=1, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "TableDescriptor":
        d = json.loads(data)
        fams = [FamilyDescriptor.from_json(f) for f in d["families"]]
        return cls(d["name"].encode("latin-1"), {f.name: f for f in fams}, d["enabled"], d.get("readonly"))

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
