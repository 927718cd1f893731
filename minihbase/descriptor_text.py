"""`describe` as HBase 2.5+ prints table and family descriptors, byte for byte (pure functions).

What the shell prints is Java's `toString` of the descriptors it gets from the master:

- a family: `ColumnFamilyDescriptorBuilder.ModifyableColumnFamilyDescriptor.toString()`:
  `{NAME => 'cf'` + every *reserved* value (`DEFAULT_VALUES` keys plus ENCRYPTION, ENCRYPTION_KEY, IS_MOB,
  MOB_THRESHOLD, MOB_COMPACT_PARTITION_POLICY) as `KEY => 'value'`, then `METADATA => {'k' => 'v', ...}` for the
  other values, then `CONFIGURATION => {...}`, then `}`. The values live in a `java.util.HashMap<Bytes, Bytes>`
  and are printed in its iteration order, which is why real output reads `INDEX_BLOCK_ENCODING, VERSIONS,
  KEEP_DELETED_CELLS, ...`: that order is reproduced here by simulating HashMap (`JavaHashMap`), not listed.
  TTL is printed with `PrettyPrinter.Unit.TIME_INTERVAL` (`8640000 SECONDS (100 DAYS)`), BLOCKSIZE with
  `Unit.BYTE` (`32768 B (32KB)`, HBASE-25519).
- a table (`admin.get_table_attributes`, `TableDescriptorBuilder.toStringTableAttributes()`): `, {TABLE_ATTRIBUTES
  => {...}}` after the table's name, nothing when the descriptor holds no value. Reserved keys (MAX_FILESIZE,
  READONLY, MEMSTORE_FLUSHSIZE, DURABILITY, REGION_REPLICATION, PRIORITY, IS_META when true) and `coprocessor$N`
  come first, sorted as bytes (a `TreeSet<Bytes>`), then `METADATA => {...}` with every other value, sorted too.
  MAX_FILESIZE and MEMSTORE_FLUSHSIZE are printed with `Unit.BYTE` (HBASE-25439).

Values go through `Bytes.toStringBinary` (non-printables and `\\` as `\\xNN`).
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

FOREVER = 2147483647  # HConstants.FOREVER

# ColumnFamilyDescriptorBuilder.DEFAULT_VALUES (2.5+): every family descriptor holds these values.
FAMILY_DEFAULTS: dict[str, str] = {
    "BLOOMFILTER": "ROW", "REPLICATION_SCOPE": "0", "VERSIONS": "1", "MIN_VERSIONS": "0", "COMPRESSION": "NONE",
    "TTL": str(FOREVER), "BLOCKSIZE": "65536", "IN_MEMORY": "false", "BLOCKCACHE": "true",
    "KEEP_DELETED_CELLS": "FALSE", "DATA_BLOCK_ENCODING": "NONE", "INDEX_BLOCK_ENCODING": "NONE",
}
FAMILY_RESERVED = frozenset(FAMILY_DEFAULTS) | {"ENCRYPTION", "ENCRYPTION_KEY", "IS_MOB", "MOB_THRESHOLD",
                                                "MOB_COMPACT_PARTITION_POLICY"}
# TableDescriptorBuilder.DEFAULT_VALUES keys + IS_META: printed in TABLE_ATTRIBUTES itself, the rest in METADATA.
TABLE_RESERVED = frozenset({"MAX_FILESIZE", "READONLY", "MEMSTORE_FLUSHSIZE", "DURABILITY", "REGION_REPLICATION",
                            "PRIORITY", "IS_META"})
_FAMILY_UNITS = {"TTL": "TIME_INTERVAL", "BLOCKSIZE": "BYTE"}
_TABLE_UNITS = {"MAX_FILESIZE": "BYTE", "MEMSTORE_FLUSHSIZE": "BYTE"}


# ---------------------------------------------------------------------------------------------- Java hashing
def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def bytes_hash(data: bytes) -> int:
    """`Bytes.hashCode()`: `hash = 31 * hash + b` from 1, over signed bytes."""
    h = 1
    for b in data:
        h = _int32(31 * h + (b - 256 if b > 127 else b))
    return h


def string_hash(text: str) -> int:
    """`String.hashCode()`: `h = 31 * h + c` from 0, over UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = _int32(31 * h + int.from_bytes(units[i:i + 2], "big"))
    return h


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


class JavaHashMap:
    """The iteration order of a `java.util.HashMap` (Java 8+): keys by bucket (`(h ^ h >>> 16) & (capacity - 1)`),
    within a bucket in insertion order (a resize keeps it). `copy_of` is `putAll` into a new map, which presizes
    the table from the source's size. Tree bins (8+ keys in one bucket) never happen at these sizes."""

    def __init__(self, hash_fn: Callable[[str], int]):
        self.hash_fn = hash_fn
        self.capacity = 0
        self.threshold = 0  # before the first put: the initial capacity, 0 = the default 16
        self.keys: list[str] = []
        self._known: set[str] = set()

    def _resize(self) -> None:
        if self.capacity == 0:
            self.capacity = self.threshold or 16
        else:
            self.capacity *= 2
        self.threshold = int(self.capacity * 0.75)

    def put(self, key: str) -> None:
        if self.capacity == 0:
            self._resize()
        if key in self._known:
            return  # a new value for a key keeps the key's place
        self._known.add(key)
        self.keys.append(key)
        if len(self.keys) > self.threshold:
            self._resize()

    @classmethod
    def copy_of(cls, keys: Iterable[str], hash_fn: Callable[[str], int]) -> "JavaHashMap":
        keys = list(keys)
        new = cls(hash_fn)
        if keys:
            new.threshold = _table_size_for(int(len(keys) / 0.75 + 1.0))
        for key in keys:
            new.put(key)
        return new

    def bucket(self, key: str) -> int:
        h = self.hash_fn(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (self.capacity - 1)

    def order(self) -> list[str]:
        position = {k: i for i, k in enumerate(self.keys)}
        return sorted(self.keys, key=lambda k: (self.bucket(k), position[k]))


def _bytes_key_hash(key: str) -> int:
    return bytes_hash(key.encode("utf-8"))


def family_value_order(values: Iterable[str]) -> list[str]:
    """The iteration order of a family descriptor's values as the shell's client holds them.

    `values`: the keys in the order they were set, the defaults first. The client rebuilds the descriptor from
    the master's protobuf: `newBuilder(name)` (the 12 defaults put into a new map: 32 buckets), each value of the
    message set on it (new keys appended), then `build()` copies that map (`putAll`, presized)."""
    builder = JavaHashMap.copy_of(FAMILY_DEFAULTS, _bytes_key_hash)
    for key in values:
        builder.put(key)
    return JavaHashMap.copy_of(builder.order(), _bytes_key_hash).order()


def configuration_order(keys: Iterable[str]) -> list[str]:
    """A family's CONFIGURATION map (`HashMap<String, String>`) as the client rebuilds it."""
    builder = JavaHashMap(string_hash)
    for key in keys:
        builder.put(key)
    return JavaHashMap.copy_of(builder.order(), string_hash).order()


# ---------------------------------------------------------------------------------------------- PrettyPrinter
def to_string_binary(value: str | bytes) -> str:
    """`Bytes.toStringBinary`: printable ASCII but `\\` as is, every other byte as `\\xNN`."""
    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x5C else f"\\x{b:02X}" for b in data)


def human_ttl(seconds: int) -> str:
    """`PrettyPrinter.humanReadableTTL`, including its quirk: the seconds' plural follows the minutes
    (`minutes == 1 ? "" : "S"`), so 3601 prints `3601 SECONDS (1 HOUR 1 SECONDS)`."""
    if seconds == FOREVER:
        return "FOREVER"
    if seconds < 60:
        return f"{seconds} SECOND{'' if seconds == 1 else 'S'}"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days} DAY{'' if days == 1 else 'S'}")
    if hours:
        parts.append(f"{hours} HOUR{'' if hours == 1 else 'S'}")
    if minutes:
        parts.append(f"{minutes} MINUTE{'' if minutes == 1 else 'S'}")
    if secs:
        parts.append(f"{secs} SECOND{'' if minutes == 1 else 'S'}")
    return f"{seconds} SECONDS ({' '.join(parts)})"


def human_bytes(size: int) -> str:
    """`PrettyPrinter.humanReadableByte`: `65536 B (64KB)`, `10737942528 B (10GB 512KB)`, `512 B`."""
    if size < 1024:
        return f"{size} B"
    parts = []
    rest = size
    for unit, scale in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)):
        n, rest = divmod(rest, scale)
        if n:
            parts.append(f"{n}{unit}")
    return f"{size} B ({' '.join(parts)})"


def pretty(value: str, unit: str | None) -> str:
    """`PrettyPrinter.format(value, unit)` of a value already through `toStringBinary`."""
    if unit == "TIME_INTERVAL":
        return human_ttl(int(value))
    if unit == "BYTE":
        return human_bytes(int(value))
    return value


# ---------------------------------------------------------------------------------------------- descriptors
def family_text(name: str, values: Mapping[str, str], configuration: Mapping[str, str] | None = None) -> str:
    """One family as `describe` prints it. `values`: every value of the descriptor (defaults included) in the
    order they were set; `configuration`: its CONFIGURATION map in the order set."""
    out = [f"{{NAME => '{name}'"]
    order = family_value_order(values)
    for key in order:
        if key in FAMILY_RESERVED:
            out.append(f", {key} => '{pretty(to_string_binary(values[key]), _FAMILY_UNITS.get(key))}'")
    user = [k for k in order if k not in FAMILY_RESERVED]
    if user:
        out.append(", METADATA => {" + ", ".join(f"'{k}' => '{to_string_binary(values[k])}'" for k in user) + "}")
    configuration = configuration or {}
    if configuration:
        out.append(", CONFIGURATION => {" + ", ".join(
            f"'{k}' => '{configuration[k]}'" for k in configuration_order(configuration)) + "}")
    out.append("}")
    return "".join(out)


def table_attributes_text(values: Mapping[str, str]) -> str:
    """`toStringTableAttributes()`: `, {TABLE_ATTRIBUTES => {...}}`, or "" for a descriptor with no value."""
    reserved, user = [], []
    for key in sorted(values, key=lambda k: k.encode("utf-8")):
        if key in TABLE_RESERVED or key.startswith("coprocessor$"):
            if key == "IS_META" and values[key].lower() != "true":
                continue
            reserved.append(key)
        else:
            user.append(key)
    if not reserved and not user:
        return ""
    parts = [f"{k} => '{pretty(to_string_binary(values[k]), _TABLE_UNITS.get(k))}'" for k in reserved]
    if user:
        parts.append("METADATA => {" + ", ".join(f"'{k}' => '{to_string_binary(values[k])}'" for k in user) + "}")
    return ", {TABLE_ATTRIBUTES => {" + ", ".join(parts) + "}}"
