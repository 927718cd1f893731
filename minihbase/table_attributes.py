"""Table and column family attributes as HBase 2.5 takes them, and the master's sanity checks on a descriptor.

Input comes from three places that all end in `TableDescriptorBuilder`/`ColumnFamilyDescriptorBuilder`:
- the shell's `create`/`alter` hashes (admin.rb `hcd` for families, `update_tdb_from_arg` for tables, plus
  `METADATA`/`CONFIGURATION` maps and `alter ..., 'coprocessor' => 'path|class|priority|args'`);
- Thrift2's `TTableDescriptor.attributes` / `TColumnFamilyDescriptor.attributes` (raw `setValue(key, value)`);
- the control API (`/control/create-table`, `/control/alter-table`).
Values are converted as Java does (`JInteger.valueOf`, `JBoolean.valueOf`, enum `valueOf`) and kept as the
strings HBase keeps. Typed family values land in `FamilyDescriptor`'s fields (they drive behaviour: versions, TTL,
scope); every other value is kept in its `values` map.

`sanity_check` is `TableDescriptorChecker.sanityCheck` (hbase.table.sanity.checks=true): sizes, compression
codecs the region servers can load (`CompressionTest`), coprocessor and split-policy classes that load.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping

from minihbase.errors import DoNotRetryIOException, JavaIllegalArgument
from minihbase.schema import FOREVER, FamilyDescriptor, TableDescriptor

# Compression.Algorithm (2.5): name -> getName() (what CompressionTest's message shows).
CODECS = {"NONE": "none", "GZ": "gz", "LZO": "lzo", "SNAPPY": "snappy", "LZ4": "lz4", "BZIP2": "bzip2",
          "ZSTD": "zstd", "LZMA": "lzma", "BROTLI": "brotli"}
BLOOM_TYPES = ("NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH")
DATA_BLOCK_ENCODINGS = ("NONE", "PREFIX", "DIFF", "FAST_DIFF", "ROW_INDEX_V1")
INDEX_BLOCK_ENCODINGS = ("NONE", "PREFIX_TREE")
KEEP_DELETED = ("FALSE", "TRUE", "TTL")
MEMORY_COMPACTIONS = ("NONE", "BASIC", "EAGER", "ADAPTIVE")
MOB_POLICIES = ("DAILY", "WEEKLY", "MONTHLY")
DURABILITIES = ("USE_DEFAULT", "SKIP_WAL", "ASYNC_WAL", "SYNC_WAL", "FSYNC_WAL")
# Classes in HBase's own jars: loadable on every region server without installing anything.
BUILTIN_SPLIT_POLICIES = tuple(f"org.apache.hadoop.hbase.regionserver.{c}" for c in (
    "ConstantSizeRegionSplitPolicy", "IncreasingToUpperBoundRegionSplitPolicy", "SteppingSplitPolicy",
    "KeyPrefixRegionSplitPolicy", "DelimitedKeyPrefixRegionSplitPolicy", "DisabledRegionSplitPolicy",
    "BusyRegionSplitPolicy"))
BUILTIN_COPROCESSORS = ("org.apache.hadoop.hbase.coprocessor.MultiRowMutationEndpoint",
                        "org.apache.hadoop.hbase.coprocessor.AggregateImplementation")
# TableDescriptorBuilder.CP_HTD_ATTR_VALUE_PATTERN: path|class|priority|args.
COPROCESSOR_SPEC = re.compile(r"(^[^|]*)\|([^|]+)\|\s*(\d*)\s*(\|.*)?$")
SANITY_SUFFIX = (" Set hbase.table.sanity.checks to false at conf or table descriptor if you want to bypass "
                 "sanity checks")
MIN_MAX_FILESIZE = 2 << 20       # hbase.hregion.max.filesize.limit
MIN_MEMSTORE_FLUSHSIZE = 1 << 20  # hbase.hregion.memstore.flush.size.limit


# ---------------------------------------------------------------------------------------------- Java conversions
def java_long(value: Any, what: str) -> int:
    """`JLong.valueOf` / `JInteger.valueOf`: integers and their decimal strings; the BYTE/TIME printer's form
    (`'32768 B (32KB)'`) is read as its leading number, as HBase 2.5's PrettyPrinter.valueOf does."""
    if isinstance(value, bool):
        raise JavaIllegalArgument(f"{what} must be a number, got {value}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    match = re.match(r"^(-?\d+)(?: B \(.*\)| SECONDS? \(.*\))?$", text)
    if not match:
        raise JavaIllegalArgument(f"java.lang.NumberFormatException: For input string: \"{text}\" ({what})")
    return int(match.group(1))


def java_bool(value: Any, what: str) -> bool:
    """`JBoolean.valueOf(x)`: true or 'true' in any case is true, any other string false."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"
    raise JavaIllegalArgument(f"{what} must be true or false, got {value!r}")


def java_enum(choices: Iterable[str], java_class: str) -> Callable[[Any, str], str]:
    """`Enum.valueOf(x.upcase)`: the shell upper-cases; an unknown name is IllegalArgumentException."""
    allowed = tuple(choices)

    def convert(value: Any, _what: str) -> str:
        text = str(value).strip().upper()
        if text not in allowed:
            raise JavaIllegalArgument(f"No enum constant {java_class}.{text}")
        return text
    return convert


def ttl_seconds(value: Any, what: str = "TTL") -> int:
    """`setTimeToLive(int)` or, from a string, PrettyPrinter.valueOf(TIME_INTERVAL): 'FOREVER' or seconds."""
    if isinstance(value, str) and value.strip().upper() == "FOREVER":
        return FOREVER
    return java_long(value, what)


def _string(value: Any, what: str) -> str:
    if isinstance(value, (dict, list)):
        raise JavaIllegalArgument(f"{what} must be a string, got {value!r}")
    return str(value)


def _bool_text(value: Any, what: str) -> str:
    return "true" if java_bool(value, what) else "false"


def _long_text(value: Any, what: str) -> str:
    return str(java_long(value, what))


# ---------------------------------------------------------------------------------------------- families
# Typed values: key -> (FamilyDescriptor field, converter from any input).
FAMILY_FIELDS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "VERSIONS": ("max_versions", java_long),
    "MIN_VERSIONS": ("min_versions", java_long),
    "TTL": ("ttl_s", ttl_seconds),
    "KEEP_DELETED_CELLS": ("keep_deleted_cells", java_enum(KEEP_DELETED, "org.apache.hadoop.hbase.KeepDeletedCells")),
    "BLOOMFILTER": ("bloom_filter_type", java_enum(BLOOM_TYPES, "org.apache.hadoop.hbase.regionserver.BloomType")),
    "COMPRESSION": ("compression", java_enum(CODECS, "org.apache.hadoop.hbase.io.compress.Compression.Algorithm")),
    "DATA_BLOCK_ENCODING": ("data_block_encoding", java_enum(
        DATA_BLOCK_ENCODINGS, "org.apache.hadoop.hbase.io.encoding.DataBlockEncoding")),
    "BLOCKSIZE": ("block_size", java_long),
    "IN_MEMORY": ("in_memory", java_bool),
    "BLOCKCACHE": ("block_cache_enabled", java_bool),
    "REPLICATION_SCOPE": ("replication_scope", java_long),
}
_CODEC = java_enum(CODECS, "org.apache.hadoop.hbase.io.compress.Compression.Algorithm")
# Other values the shell's `hcd` takes by name, kept as strings in `values`.
FAMILY_VALUES: dict[str, Callable[[Any, str], str]] = {
    "INDEX_BLOCK_ENCODING": java_enum(INDEX_BLOCK_ENCODINGS, "org.apache.hadoop.hbase.io.encoding.IndexBlockEncoding"),
    "COMPRESSION_COMPACT": _CODEC, "COMPRESSION_COMPACT_MAJOR": _CODEC, "COMPRESSION_COMPACT_MINOR": _CODEC,
    "IN_MEMORY_COMPACTION": java_enum(MEMORY_COMPACTIONS, "org.apache.hadoop.hbase.MemoryCompactionPolicy"),
    "CACHE_DATA_ON_WRITE": _bool_text, "CACHE_INDEX_ON_WRITE": _bool_text, "CACHE_BLOOMS_ON_WRITE": _bool_text,
    "EVICT_BLOCKS_ON_CLOSE": _bool_text, "PREFETCH_BLOCKS_ON_OPEN": _bool_text, "COMPRESS_TAGS": _bool_text,
    "NEW_VERSION_BEHAVIOR": _bool_text, "IS_MOB": _bool_text, "MOB_THRESHOLD": _long_text,
    "MOB_COMPACT_PARTITION_POLICY": java_enum(MOB_POLICIES, "org.apache.hadoop.hbase.client.MobCompactPartitionPolicy"),
    "DFS_REPLICATION": _long_text, "STORAGE_POLICY": _string, "ENCRYPTION": _string,
}
FAMILY_KEYS = tuple(FAMILY_FIELDS) + tuple(FAMILY_VALUES)


def _family_value(settings: dict, key: str, raw: Any) -> None:
    if key in FAMILY_FIELDS:
        field, convert = FAMILY_FIELDS[key]
        settings[field] = convert(raw, key)
    else:
        convert = FAMILY_VALUES.get(key, _string)
        settings.setdefault("values", {})[key] = convert(raw, key)


def family_settings(arg: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A shell family hash (without NAME) -> (FamilyDescriptor settings, keys ignored). `METADATA => {...}`
    values are set as `setValue(k, v)` (a named key through it sets that attribute); `CONFIGURATION => {...}`
    goes to the family's configuration map."""
    settings: dict[str, Any] = {}
    ignored = []
    for key, raw in arg.items():
        key = str(key)
        if key in FAMILY_KEYS:
            _family_value(settings, key, raw)
        elif key == "METADATA":
            settings.update(_merge(settings, family_values_settings(_string_map(raw, "METADATA"))))
        elif key == "CONFIGURATION":
            settings.setdefault("configuration", {}).update(_string_map(raw, "CONFIGURATION"))
        else:
            ignored.append(key)
    return settings, ignored


def family_values_settings(values: Mapping[str, str]) -> dict[str, Any]:
    """Raw `setValue(key, value)` pairs (Thrift2's attributes, METADATA) -> FamilyDescriptor settings."""
    settings: dict[str, Any] = {}
    for key, raw in values.items():
        _family_value(settings, str(key), raw)
    return settings


def _merge(settings: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(more)
    for key in ("values", "configuration"):
        if key in settings and key in more:
            out[key] = {**settings[key], **more[key]}
    return out


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise JavaIllegalArgument(f"{what} must be a Hash type")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


# ---------------------------------------------------------------------------------------------- tables
def _durability(value: Any, what: str) -> str:
    return java_enum(DURABILITIES, "org.apache.hadoop.hbase.client.Durability")(value, what)


# admin.rb `update_tdb_from_arg`: key -> converter to the stored string.
TABLE_VALUES: dict[str, Callable[[Any, str], str]] = {
    "MAX_FILESIZE": _long_text, "COMPACTION_ENABLED": _bool_text, "SPLIT_ENABLED": _bool_text,
    "MERGE_ENABLED": _bool_text, "NORMALIZATION_ENABLED": _bool_text, "NORMALIZER_TARGET_REGION_COUNT": _long_text,
    "NORMALIZER_TARGET_REGION_SIZE_MB": _long_text, "NORMALIZER_TARGET_REGION_SIZE": _long_text,
    "MEMSTORE_FLUSHSIZE": _long_text, "DURABILITY": _durability, "PRIORITY": _long_text, "FLUSH_POLICY": _string,
    "REGION_MEMSTORE_REPLICATION": _bool_text, "SPLIT_POLICY": _string, "REGION_REPLICATION": _long_text,
}


def table_settings(arg: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """A shell table hash (`create`'s or `alter`'s table_att) -> (settings {readonly?, values}, coprocessor specs
    to add, keys ignored). SPLITS, METHOD and NAME are the caller's."""
    settings: dict[str, Any] = {}
    coprocessors: list[str] = []
    ignored = []
    for key, raw in arg.items():
        key = str(key)
        if key == "READONLY":
            settings["readonly"] = java_bool(raw, key)
        elif key in TABLE_VALUES:
            settings.setdefault("values", {})[key] = TABLE_VALUES[key](raw, key)
        elif key in ("METADATA", "CONFIGURATION"):
            more = table_values_settings(_string_map(raw, key))
            if "readonly" in more:
                settings["readonly"] = more["readonly"]
            settings.setdefault("values", {}).update(more.get("values", {}))
        elif re.search("coprocessor", key, re.IGNORECASE):
            # alter's table_att: any key naming a coprocessor is `setCoprocessorWithSpec(value)` (next free N).
            coprocessors.append(coprocessor_spec(str(raw).strip()))
        else:
            ignored.append(key)
    return settings, coprocessors, ignored


def table_values_settings(values: Mapping[str, str]) -> dict[str, Any]:
    """Raw `setValue(key, value)` pairs (Thrift2's attributes, METADATA) -> table settings; a `coprocessor$N`
    value must be a spec."""
    settings: dict[str, Any] = {}
    for key, raw in values.items():
        key = str(key)
        if key == "READONLY":
            settings["readonly"] = java_bool(raw, key)
            continue
        if key.lower().startswith("coprocessor$"):
            value = coprocessor_spec(str(raw))
        else:
            value = TABLE_VALUES.get(key, _string)(raw, key)
        settings.setdefault("values", {})[key] = value
    return settings


def coprocessor_spec(spec: str) -> str:
    """`setCoprocessorWithSpec`: `path|class|priority|args`, else IllegalArgumentException as HBase words it."""
    if not COPROCESSOR_SPEC.match(spec):
        raise JavaIllegalArgument(f"Format does not match {COPROCESSOR_SPEC.pattern}: {spec}")
    return spec


def coprocessor_class(spec: str) -> str:
    match = COPROCESSOR_SPEC.match(spec)
    return match.group(2).strip() if match else spec


def next_coprocessor_key(values: Mapping[str, str]) -> str:
    """`coprocessor$N` with N one past the highest in use (TableDescriptorBuilder.setCoprocessorToMap)."""
    used = [int(k.split("$", 1)[1]) for k in values if k.lower().startswith("coprocessor$")
            and k.split("$", 1)[1].isdigit()]
    return f"coprocessor${max(used, default=0) + 1}"


# ---------------------------------------------------------------------------------------------- sanity checks
def _sanity_error(message: str) -> DoNotRetryIOException:
    return DoNotRetryIOException(message + SANITY_SUFFIX)


def check_codecs(families: Iterable[FamilyDescriptor], codecs: Iterable[str]) -> None:
    """`TableDescriptorChecker.checkCompression`: every family's COMPRESSION and compaction compression must load
    on the region servers (`CompressionTest.testCompression`)."""
    loadable = {c.upper() for c in codecs} | {"NONE"}
    for fam in families:
        wanted = [fam.compression] + [fam.values[k] for k in ("COMPRESSION_COMPACT", "COMPRESSION_COMPACT_MAJOR",
                                                               "COMPRESSION_COMPACT_MINOR") if k in fam.values]
        for codec in wanted:
            if codec.upper() not in loadable:
                name = CODECS.get(codec.upper(), codec.lower())
                raise _sanity_error(f"Compression algorithm '{name}' previously failed test.")


def sanity_check(desc: TableDescriptor, codecs: Iterable[str], coprocessor_classes: Iterable[str]) -> None:
    """`TableDescriptorChecker.sanityCheck`, the parts minihbase models, in HBase's order."""
    values = desc.values
    if "MAX_FILESIZE" in values and int(values["MAX_FILESIZE"]) < MIN_MAX_FILESIZE:
        raise _sanity_error(f"MAX_FILESIZE for table descriptor or \"hbase.hregion.max.filesize\" "
                            f"({values['MAX_FILESIZE']}) is too small, which might cause over splitting into "
                            "unmanageable number of regions.")
    if "MEMSTORE_FLUSHSIZE" in values and int(values["MEMSTORE_FLUSHSIZE"]) < MIN_MEMSTORE_FLUSHSIZE:
        raise _sanity_error(f"MEMSTORE_FLUSHSIZE for table descriptor or \"hbase.hregion.memstore.flush.size\" "
                            f"({values['MEMSTORE_FLUSHSIZE']}) is too small, which might cause very frequent "
                            "flushing.")
    policy = values.get("SPLIT_POLICY")
    if policy is not None and policy not in BUILTIN_SPLIT_POLICIES and policy not in set(coprocessor_classes):
        raise _sanity_error(f"Unable to load configured region split policy '{policy}' for table "
                            f"'{desc.text}'")
    loadable = set(BUILTIN_COPROCESSORS) | set(coprocessor_classes)
    for spec in desc.coprocessors():
        cls = coprocessor_class(spec)
        if cls not in loadable:
            raise _sanity_error(f"Class {cls} cannot be loaded")
    if "REGION_REPLICATION" in values and int(values["REGION_REPLICATION"]) < 1:
        raise _sanity_error("Table region replication should be at least one.")
    check_codecs(desc.families.values(), codecs)
