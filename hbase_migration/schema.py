"""Table schemas as the HBase shell shows and takes them.

Thrift1 shows neither `REPLICATION_SCOPE` nor split keys can be given to its `createTable`, so the schema of
record is the shell's: `describe` is parsed here, and `create`/`alter` statements are built here. All pure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# One family per line in `describe`: {NAME => 'cf', VERSIONS => '1', ..., REPLICATION_SCOPE => '0', ...}
_FAMILY_LINE = re.compile(r"^\s*\{NAME => '((?:[^'\\]|\\.)*)'(.*)\}\s*$")
_ATTR = re.compile(r"([A-Z_]+) => '((?:[^'\\]|\\.)*)'")
_TABLE_STATE = re.compile(r"^Table (\S+) is (ENABLED|DISABLED)\s*$")

# Attributes a target table copies from the source. Others (block cache, encoding, ...) are the target
# operator's business; compression in particular may differ between datacenters.
COPIED_ATTRIBUTES = ("VERSIONS", "TTL", "MIN_VERSIONS", "KEEP_DELETED_CELLS", "BLOOMFILTER", "REPLICATION_SCOPE")


class SchemaError(ValueError):
    pass


@dataclass(frozen=True)
class FamilySchema:
    name: str
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def replication_scope(self) -> int | None:
        raw = self.attributes.get("REPLICATION_SCOPE")
        return int(raw) if raw is not None and raw.lstrip("-").isdigit() else None

    @property
    def ttl_seconds(self) -> int | None:
        """None for FOREVER; `TTL => '86400 SECONDS (1 DAY)'` gives 86400."""
        raw = self.attributes.get("TTL", "FOREVER")
        if raw.upper() == "FOREVER":
            return None
        return int(raw.split()[0])


@dataclass(frozen=True)
class TableSchema:
    name: str
    enabled: bool
    families: tuple[FamilySchema, ...]

    def family(self, name: str) -> FamilySchema | None:
        return next((f for f in self.families if f.name == name), None)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_describe(output: str, table: str) -> TableSchema:
    """Parse `describe 'table'` output (HBase 1.x and 2.x shells print families the same way)."""
    enabled = None
    families = []
    for line in output.splitlines():
        m = _TABLE_STATE.match(line.strip())
        if m:
            enabled = m.group(2) == "ENABLED"
            continue
        m = _FAMILY_LINE.match(line)
        if m:
            attrs = {k: _unescape(v) for k, v in _ATTR.findall(m.group(2))}
            families.append(FamilySchema(_unescape(m.group(1)), attrs))
    if enabled is None or not families:
        raise SchemaError(f"could not read the schema of table {table!r} from `describe` output: {output[:300]!r}")
    return TableSchema(table, enabled, tuple(families))


def ruby_string(value: str | bytes) -> str:
    """A double-quoted Ruby string literal; bytes outside printable ASCII as \\xNN (row keys are binary)."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    out = []
    for b in value:
        ch = chr(b)
        if ch in '"\\#':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{b:02x}")
    return '"' + "".join(out) + '"'


def describe_statement(table: str) -> str:
    return f"describe {ruby_string(table)}"


def create_statement(schema: TableSchema, split_keys: list[bytes], name: str | None = None) -> str:
    """`create` for a target table with the source's families (COPIED_ATTRIBUTES) and split keys."""
    parts = [ruby_string(name or schema.name)]
    for fam in schema.families:
        attrs = [f"NAME => {ruby_string(fam.name)}"]
        for key in COPIED_ATTRIBUTES:
            if key in fam.attributes:
                value = fam.attributes[key]
                if key == "TTL":
                    ttl = fam.ttl_seconds
                    if ttl is None:
                        continue
                    value = str(ttl)
                # Numbers as an operator types them (VERSIONS => 3); the shell takes either form.
                attrs.append(f"{key} => {value if value.isdigit() else ruby_string(value)}")
        parts.append("{" + ", ".join(attrs) + "}")
    splits = sorted(k for k in split_keys if k)
    if splits:
        parts.append("SPLITS => [" + ", ".join(ruby_string(k) for k in splits) + "]")
    return "create " + ", ".join(parts)


def alter_scope_statement(table: str, family: str, scope: int) -> str:
    if scope not in (0, 1):
        raise SchemaError(f"REPLICATION_SCOPE must be 0 or 1, got {scope!r}")
    return f"alter {ruby_string(table)}, {{NAME => {ruby_string(family)}, REPLICATION_SCOPE => \"{scope}\"}}"
