"""Table schemas as the HBase shell shows and takes them: `describe` parsed, `create`/`alter` built. All pure.

Thrift1 shows neither `REPLICATION_SCOPE` nor split keys can be given to its `createTable`, so the schema of
record is the shell's. What `describe` prints (HBase 2.x; 1.x prints families the same way):

    Table ns1:t1 is ENABLED
    ns1:t1, {TABLE_ATTRIBUTES => {DURABILITY => 'ASYNC_WAL', MAX_FILESIZE => '21474836480 B (20GB)',
      coprocessor$1 => '|org.example.Obs|1001|', METADATA => {'NORMALIZATION_ENABLED' => 'true'}}}
    COLUMN FAMILIES DESCRIPTION
    {NAME => 'a', INDEX_BLOCK_ENCODING => 'NONE', VERSIONS => '4', ..., TTL => '8640000 SECONDS (100 DAYS)', ...,
      BLOCKSIZE => '32768 B (32KB)', METADATA => {'NEW_VERSION_BEHAVIOR' => 'true'}, CONFIGURATION => {...}}

(one line each; wrapped here). Values keep the units HBase prints them with (`TTL`, `BLOCKSIZE`, `MAX_FILESIZE`,
`MEMSTORE_FLUSHSIZE`; 2.4 and older print plain numbers); `canonical()` reads either form. A table or family is
parsed from balanced braces, so a line wrapped by a terminal-width shell still reads.

`create_statement` rebuilds the source's table on the target: every family attribute (values HBase keeps at
their defaults are left to the target's defaults, which are the same constants), the family METADATA and
CONFIGURATION maps, the table attributes (named keys the shell takes; every other value, coprocessors
included, through `METADATA => {...}`, which is `setValue` as the descriptor itself holds it), the split keys.
Not carried: READONLY (the copy writes into the table; the cut-over freezes tables itself) and ENCRYPTION_KEY
(wrapped with the source cluster's master key: the target wraps its own).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from hbase_migration.clusters.shell import ruby_string  # noqa: F401  (statements here and in freeze/sizing_probe)

_TABLE_STATE = re.compile(r"^\s*Table (\S+) is (ENABLED|DISABLED)\s*$")

FOREVER = 2147483647
# ColumnFamilyDescriptorBuilder's defaults (what a family holds when nothing is said).
FAMILY_DEFAULTS = {
    "BLOOMFILTER": "ROW", "REPLICATION_SCOPE": "0", "VERSIONS": "1", "MIN_VERSIONS": "0", "COMPRESSION": "NONE",
    "TTL": str(FOREVER), "BLOCKSIZE": "65536", "IN_MEMORY": "false", "BLOCKCACHE": "true",
    "KEEP_DELETED_CELLS": "FALSE", "DATA_BLOCK_ENCODING": "NONE", "INDEX_BLOCK_ENCODING": "NONE",
}
# Defaults HBase 2.0-2.3 printed among a family's values (and later versions imply): the same family either way.
IMPLIED_DEFAULTS = {**FAMILY_DEFAULTS, "EVICT_BLOCKS_ON_CLOSE": "false", "NEW_VERSION_BEHAVIOR": "false",
                    "CACHE_DATA_ON_WRITE": "false", "CACHE_INDEX_ON_WRITE": "false", "CACHE_BLOOMS_ON_WRITE": "false",
                    "PREFETCH_BLOCKS_ON_OPEN": "false", "COMPRESS_TAGS": "true", "IN_MEMORY_COMPACTION": None,
                    "IS_MOB": "false"}
# What a reader of the table sees depends on these: a target that differs would answer differently (fewer
# versions, expired cells, deleted cells kept or not). Preflight refuses an existing target table that differs.
READER_VISIBLE = ("VERSIONS", "MIN_VERSIONS", "TTL", "KEEP_DELETED_CELLS")
# Family attributes the shell's `create`/`alter` take by name in every 2.x (admin.rb `hcd`).
SHELL_FAMILY_KEYS = frozenset({
    "VERSIONS", "MIN_VERSIONS", "TTL", "KEEP_DELETED_CELLS", "BLOOMFILTER", "COMPRESSION", "COMPRESSION_COMPACT",
    "COMPRESSION_COMPACT_MAJOR", "COMPRESSION_COMPACT_MINOR", "DATA_BLOCK_ENCODING", "BLOCKSIZE", "IN_MEMORY",
    "IN_MEMORY_COMPACTION", "BLOCKCACHE", "REPLICATION_SCOPE", "IS_MOB", "MOB_THRESHOLD",
    "MOB_COMPACT_PARTITION_POLICY", "NEW_VERSION_BEHAVIOR", "CACHE_DATA_ON_WRITE", "CACHE_INDEX_ON_WRITE",
    "CACHE_BLOOMS_ON_WRITE", "EVICT_BLOCKS_ON_CLOSE", "PREFETCH_BLOCKS_ON_OPEN", "COMPRESS_TAGS",
    "DFS_REPLICATION", "STORAGE_POLICY", "ENCRYPTION"})
# Table attributes the shell takes by name (admin.rb `update_tdb_from_arg`); others go through METADATA.
SHELL_TABLE_KEYS = frozenset({"MAX_FILESIZE", "MEMSTORE_FLUSHSIZE", "DURABILITY", "REGION_REPLICATION",
                              "PRIORITY"})
COMPRESSION_KEYS = ("COMPRESSION", "COMPRESSION_COMPACT", "COMPRESSION_COMPACT_MAJOR", "COMPRESSION_COMPACT_MINOR")
CODECS = ("NONE", "GZ", "LZO", "SNAPPY", "LZ4", "BZIP2", "ZSTD", "LZMA", "BROTLI")
_NUMBERS = frozenset({"VERSIONS", "MIN_VERSIONS", "TTL", "BLOCKSIZE", "REPLICATION_SCOPE", "MOB_THRESHOLD",
                      "DFS_REPLICATION", "MAX_FILESIZE", "MEMSTORE_FLUSHSIZE", "REGION_REPLICATION", "PRIORITY"})
_NOT_CARRIED_TABLE = frozenset({"READONLY", "IS_META"})
_NOT_CARRIED_FAMILY = frozenset({"ENCRYPTION_KEY"})


class SchemaError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------- values
def canonical(key: str, value: str | None) -> str | None:
    """A value in one spelling whatever the HBase version printed: numbers without units (`'8640000 SECONDS
    (100 DAYS)'`, `'32768 B (32KB)'` -> digits; TTL `FOREVER` -> 2147483647), enums upper case, booleans lower."""
    if value is None:
        return None
    text = value.strip()
    if key in _NUMBERS:
        if key == "TTL" and text.upper() == "FOREVER":
            return str(FOREVER)
        match = re.match(r"^-?\d+", text)
        return match.group(0) if match else text
    if key in COMPRESSION_KEYS or key in ("KEEP_DELETED_CELLS", "BLOOMFILTER", "DATA_BLOCK_ENCODING",
                                          "INDEX_BLOCK_ENCODING", "DURABILITY", "IN_MEMORY_COMPACTION"):
        return text.upper()
    if text.lower() in ("true", "false"):
        return text.lower()
    return text


def to_bytes_binary(text: str) -> bytes:
    """`Bytes.toBytesBinary`: the inverse of `toStringBinary`, which `describe` prints values with (`\\xNN`)."""
    out = bytearray()
    i = 0
    raw = text.encode("utf-8")
    while i < len(raw):
        if raw[i:i + 2] == b"\\x" and re.fullmatch(rb"[0-9A-Fa-f]{2}", raw[i + 2:i + 4]):
            out.append(int(raw[i + 2:i + 4], 16))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


# ---------------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class FamilySchema:
    """A family as `describe` shows it: `attributes` the top-level `KEY => 'value'` pairs (as printed, units
    included), `metadata` its METADATA map, `configuration` its CONFIGURATION map."""

    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    configuration: dict[str, str] = field(default_factory=dict)

    def value(self, key: str) -> str | None:
        """The canonical value of `key` (a top-level attribute, else a METADATA entry), HBase's default when
        the descriptor does not show it."""
        raw = self.attributes.get(key, self.metadata.get(key))
        if raw is None:
            raw = IMPLIED_DEFAULTS.get(key)
        return canonical(key, raw)

    def values(self) -> dict[str, str]:
        """Every value the family holds (attributes and METADATA), canonical."""
        return {k: canonical(k, v) for k, v in {**self.metadata, **self.attributes}.items()}

    @property
    def replication_scope(self) -> int | None:
        raw = self.attributes.get("REPLICATION_SCOPE")
        return int(raw) if raw is not None and raw.lstrip("-").isdigit() else None

    @property
    def ttl_seconds(self) -> int | None:
        """None for FOREVER; `TTL => '86400 SECONDS (1 DAY)'` gives 86400."""
        ttl = int(self.value("TTL"))
        return None if ttl >= FOREVER else ttl

    @property
    def keeps_deleted_cells(self) -> bool:
        return self.value("KEEP_DELETED_CELLS") in ("TRUE", "TTL")

    @property
    def encryption(self) -> str | None:
        """The family's cipher (`ENCRYPTION => 'AES'`: transparent encryption of its HFiles), None when clear."""
        value = (self.attributes.get("ENCRYPTION", self.metadata.get("ENCRYPTION")) or "").strip()
        return value if value and value.upper() != "NONE" else None


@dataclass(frozen=True)
class TableSchema:
    """A table as `describe` shows it: `attributes` the TABLE_ATTRIBUTES (reserved keys and `coprocessor$N`),
    `metadata` their METADATA map (every other table value)."""

    name: str
    enabled: bool
    families: tuple[FamilySchema, ...]
    attributes: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    def family(self, name: str) -> FamilySchema | None:
        return next((f for f in self.families if f.name == name), None)

    @property
    def namespace(self) -> str:
        return self.name.split(":", 1)[0] if ":" in self.name else "default"

    def values(self) -> dict[str, str]:
        """Every table value (attributes and METADATA), canonical."""
        return {k: canonical(k, v) for k, v in {**self.metadata, **self.attributes}.items()}

    def coprocessors(self) -> dict[str, str]:
        """`coprocessor$N` -> `path|class|priority|args`."""
        return {k: v for k, v in self.values().items() if k.lower().startswith("coprocessor$")}

    def encrypted_families(self) -> dict[str, str]:
        """family -> cipher of each encrypted family."""
        return {f.name: f.encryption for f in self.families if f.encryption}


def coprocessor_class(spec: str) -> str:
    """The class of a `path|class|priority|args` spec."""
    parts = spec.split("|")
    return parts[1].strip() if len(parts) > 1 else spec.strip()


# ---------------------------------------------------------------------------------------------- parsing
_NEXT = r"(?:'|[A-Za-z0-9_$.\-]+\s*=>|\{)"  # what follows `, ` inside a group: the next key, or the next family
_AFTER_VALUE = re.compile(rf"\s*(?:,\s*{_NEXT}|\}}+\s*(?:,\s*{_NEXT}|\n|$))")
_AFTER_KEY = re.compile(r"\s*=>")


def _closes_quote(text: str, at: int, key: bool = False) -> bool:
    """Whether the quote at `at` closes a string: a key's when `=>` follows, a value's when the next key (or family)
    or the group's end follows. A quote inside a binary value (ENCRYPTION_KEY) is followed by neither, in practice:
    `, NAME =>` would have to be among its random bytes."""
    return bool((_AFTER_KEY if key else _AFTER_VALUE).match(text, at + 1))


class _Reader:
    """HBase's `{KEY => 'value', KEY => {...}}` text (Java toString, no escaping inside quotes)."""

    def __init__(self, text: str):
        self.text = text
        self.i = 0

    def error(self, what: str) -> SchemaError:
        return SchemaError(f"{what} at {self.i} in {self.text[max(0, self.i - 40):self.i + 40]!r}")

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def expect(self, token: str) -> None:
        self.skip()
        if not self.text.startswith(token, self.i):
            raise self.error(f"expected {token!r}")
        self.i += len(token)

    def quoted(self, key: bool = False) -> str:
        """A `'...'` string, closed by the first quote `_closes_quote` accepts: HBase does not escape quotes inside
        values (an ENCRYPTION_KEY is binary, Bytes.toStringBinary keeps its printable bytes, quotes included)."""
        self.expect("'")
        start = self.i
        while True:
            end = self.text.find("'", self.i)
            if end < 0:
                raise self.error("unterminated quote")
            if _closes_quote(self.text, end, key):
                self.i = end + 1
                return self.text[start:end]
            self.i = end + 1

    def key(self) -> str:
        self.skip()
        if self.text.startswith("'", self.i):
            return self.quoted(key=True)
        match = re.compile(r"[A-Za-z0-9_$.\-]+").match(self.text, self.i)
        if not match:
            raise self.error("expected a key")
        self.i = match.end()
        return match.group(0)

    def hash(self) -> dict[str, Any]:
        self.expect("{")
        out: dict[str, Any] = {}
        self.skip()
        if self.text.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            key = self.key()
            self.expect("=>")
            self.skip()
            out[key] = self.hash() if self.text.startswith("{", self.i) else self.quoted()
            self.skip()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            self.expect("}")
            return out


def _braced(text: str, start: int) -> tuple[str, int]:
    """The balanced `{...}` group starting at `start` (quotes respected), newlines inside removed (a shell that
    wraps at the terminal's width cuts lines anywhere), and the index after it."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        ch = text[i]
        if ch == "'":  # opens a string when not in one; closes it only where the reader's rule says
            quoted = not quoted if not quoted else not (_closes_quote(text, i) or _closes_quote(text, i, key=True))
        elif not quoted and ch == "{":
            depth += 1
        elif not quoted and ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1].replace("\r", "").replace("\n", ""), i + 1
        i += 1
    raise SchemaError(f"unbalanced braces in `describe` output: {text[start:start + 200]!r}")


def _strings(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise SchemaError(f"{what} must be a map, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _family(group: str) -> FamilySchema:
    values = _Reader(group).hash()
    name = values.pop("NAME", None)
    if not isinstance(name, str):
        raise SchemaError(f"a family without NAME in `describe` output: {group[:200]!r}")
    metadata = _strings(values.pop("METADATA", {}), "METADATA")
    configuration = _strings(values.pop("CONFIGURATION", {}), "CONFIGURATION")
    return FamilySchema(name, _strings(values, "family attributes"), metadata, configuration)


def parse_describe(output: str, table: str) -> TableSchema:
    """Parse `describe 'table'` output (HBase 1.x and 2.x): state, table attributes, families."""
    lines = output.splitlines()
    header = next((i for i, line in enumerate(lines) if _TABLE_STATE.match(line)), None)
    columns = next((i for i, line in enumerate(lines) if line.strip().startswith("COLUMN FAMILIES DESCRIPTION")),
                   None)
    if header is None or columns is None or columns < header:
        raise SchemaError(f"could not read the schema of table {table!r} from `describe` output: {output[:300]!r}")
    enabled = _TABLE_STATE.match(lines[header]).group(2) == "ENABLED"
    attributes: dict[str, str] = {}
    metadata: dict[str, str] = {}
    table_text = "\n".join(lines[header + 1:columns])
    brace = table_text.find("{")
    if brace >= 0:
        group, _ = _braced(table_text, brace)
        found = _Reader(group).hash().get("TABLE_ATTRIBUTES", {})
        found = dict(found) if isinstance(found, dict) else {}
        metadata = _strings(found.pop("METADATA", {}), "METADATA")
        metadata.update(_strings(found.pop("CONFIGURATION", {}), "CONFIGURATION"))
        attributes = _strings(found, "TABLE_ATTRIBUTES")
    families = []
    text = "\n".join(lines[columns + 1:])
    i = 0
    while True:
        start = text.find("{NAME", i)
        if start < 0:
            break
        group, i = _braced(text, start)
        families.append(_family(group))
    if not families:
        raise SchemaError(f"could not read the families of table {table!r} from `describe` output: "
                          f"{output[:300]!r}")
    return TableSchema(table, enabled, tuple(families), attributes, metadata)


def parse_namespace(output: str, namespace: str) -> dict[str, str]:
    """`describe_namespace 'ns'`: its configuration (`{NAME => 'ns', KEY => 'value'}`)."""
    start = output.find("{NAME")
    if start < 0:
        raise SchemaError(f"could not read namespace {namespace!r} from `describe_namespace` output: "
                          f"{output[:300]!r}")
    group, _ = _braced(output, start)
    values = _Reader(group).hash()
    values.pop("NAME", None)
    return _strings(values, "namespace configuration")


def parse_namespaces(output: str) -> list[str]:
    """`list_namespace`: the names between the `NAMESPACE` header and `N row(s)`."""
    lines = [line.strip() for line in output.splitlines()]
    if "NAMESPACE" not in lines:
        raise SchemaError(f"no NAMESPACE header in `list_namespace` output: {output[:300]!r}")
    names = []
    for line in lines[lines.index("NAMESPACE") + 1:]:
        if re.match(r"^\d+ row\(s\)", line) or line.startswith("Took "):
            break
        if line:
            names.append(line)
    return names


# ---------------------------------------------------------------------------------------------- statements
def _literal(key: str, value: str) -> str:
    """Numbers as an operator types them (VERSIONS => 3); everything else a string (the shell takes both)."""
    text = canonical(key, value) or ""
    if key in _NUMBERS and re.fullmatch(r"-?\d+", text):
        return text
    return ruby_string(to_bytes_binary(text))


def _ruby_map(values: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{ruby_string(k)} => {ruby_string(to_bytes_binary(v))}" for k, v in values.items()) + "}"


def describe_statement(table: str) -> str:
    return f"describe {ruby_string(table)}"


def map_codec(codec: str, codec_map: Mapping[str, str] | None) -> str:
    codec = codec.upper()
    return (codec_map or {}).get(codec, codec)


def family_codecs(family: FamilySchema, codec_map: Mapping[str, str] | None = None) -> set[str]:
    """The codecs the family will use on the target (COMPRESSION and compaction compression, mapped)."""
    return {map_codec(family.value(k) or "NONE", codec_map) for k in COMPRESSION_KEYS
            if family.attributes.get(k, family.metadata.get(k)) is not None or k == "COMPRESSION"}


def family_spec(family: FamilySchema, codec_map: Mapping[str, str] | None = None) -> str:
    """`{NAME => "cf", ...}` recreating the family: every attribute that is not HBase's default (VERSIONS,
    MIN_VERSIONS, TTL, KEEP_DELETED_CELLS and REPLICATION_SCOPE always), codecs mapped, METADATA and
    CONFIGURATION as they are."""
    parts = [f"NAME => {ruby_string(family.name)}"]
    metadata = dict(family.metadata)
    always = (*READER_VISIBLE, "REPLICATION_SCOPE")
    for key, raw in family.attributes.items():
        if key in _NOT_CARRIED_FAMILY:
            continue
        value = raw
        if key in COMPRESSION_KEYS:
            value = map_codec(canonical(key, raw), codec_map)
        if key not in always and canonical(key, value) == canonical(key, IMPLIED_DEFAULTS.get(key)):
            continue
        if key == "TTL" and canonical(key, value) == str(FOREVER):
            continue
        if key in SHELL_FAMILY_KEYS:
            parts.append(f"{key} => {_literal(key, value)}")
        else:
            metadata[key] = canonical(key, value)  # a value the shell has no name for: setValue
    for key in COMPRESSION_KEYS:
        if key in metadata:
            metadata[key] = map_codec(metadata[key], codec_map)
    for key in always:  # shown by every 2.x describe; said explicitly in case an older shell left one out
        if key not in family.attributes and key not in metadata and not (key == "TTL"):
            parts.append(f"{key} => {_literal(key, family.value(key))}")
    if metadata:
        parts.append(f"METADATA => {_ruby_map(metadata)}")
    if family.configuration:
        parts.append(f"CONFIGURATION => {_ruby_map(family.configuration)}")
    return "{" + ", ".join(parts) + "}"


def table_spec(schema: TableSchema) -> list[str]:
    """The table attributes as `KEY => value` pairs of `create`'s trailing hash: named keys the shell takes,
    every other value (coprocessors included) through METADATA; READONLY and IS_META are not carried."""
    parts = []
    metadata = {}
    for key, raw in {**schema.metadata, **schema.attributes}.items():
        if key in _NOT_CARRIED_TABLE:
            continue
        if key in SHELL_TABLE_KEYS:
            parts.append(f"{key} => {_literal(key, raw)}")
        else:
            metadata[key] = canonical(key, raw)
    if metadata:
        parts.append(f"METADATA => {_ruby_map(dict(sorted(metadata.items())))}")
    return parts


def create_statement(schema: TableSchema, split_keys: Sequence[bytes], name: str | None = None,
                     codec_map: Mapping[str, str] | None = None) -> str:
    """`create` for a target table like the source's: its families, table attributes and split keys."""
    parts = [ruby_string(name or schema.name)]
    parts += [family_spec(fam, codec_map) for fam in schema.families]
    parts += table_spec(schema)
    splits = sorted(k for k in split_keys if k)
    if splits:
        parts.append("SPLITS => [" + ", ".join(ruby_string(k) for k in splits) + "]")
    return "create " + ", ".join(parts)


def create_namespace_statement(namespace: str, configuration: Mapping[str, str] | None = None) -> str:
    if configuration:
        return f"create_namespace {ruby_string(namespace)}, {_ruby_map(configuration)}"
    return f"create_namespace {ruby_string(namespace)}"


def alter_family_statement(table: str, family: str, changes: Mapping[str, str]) -> str:
    """`alter 't', {NAME => 'cf', KEY => value, ...}`: what makes a family's attributes those of `changes`."""
    parts = [f"NAME => {ruby_string(family)}"] + [f"{k} => {_literal(k, v)}" for k, v in changes.items()]
    return f"alter {ruby_string(table)}, {{{', '.join(parts)}}}"


def alter_scope_statement(table: str, family: str, scope: int) -> str:
    if scope not in (0, 1):
        raise SchemaError(f"REPLICATION_SCOPE must be 0 or 1, got {scope!r}")
    return f"alter {ruby_string(table)}, {{NAME => {ruby_string(family)}, REPLICATION_SCOPE => \"{scope}\"}}"
