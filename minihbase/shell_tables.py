"""The shell's table DDL: `create`, `alter`, `describe`/`desc`, as HBase 2.5's admin.rb takes and prints them.

`create 'ns:t', {NAME => 'cf', VERSIONS => 3, TTL => 86400, COMPRESSION => 'SNAPPY', ..., METADATA => {...},
CONFIGURATION => {...}}, {MAX_FILESIZE => 21474836480, DURABILITY => 'ASYNC_WAL', METADATA => {...},
SPLITS => [...]}`: a String or a Hash with NAME is a family (`hcd`: every ColumnFamilyDescriptorBuilder
attribute, see `table_attributes`), any other Hash holds SPLITS and table attributes (`update_tdb_from_arg`).
A key the shell does not know is ignored with HBase's message and the statement goes on.

`alter 't', {NAME => 'cf', ...}` changes or adds a family; `alter 't', MAX_FILESIZE => ..., 'coprocessor' =>
'path|class|priority|args'` (METHOD => 'table_att' or none) changes table attributes (a coprocessor key adds the
spec as the next `coprocessor$N`); `alter 't', METHOD => 'table_att_unset', NAME => 'MAX_FILESIZE'` removes one.
The master refuses what its sanity checks refuse (codecs the region servers cannot load, coprocessor classes
not installed) and a table in a namespace that does not exist (NamespaceNotFoundException).
"""
from __future__ import annotations

from typing import Any, Callable

from minihbase.errors import JavaIllegalArgument
from minihbase.replication.codec import split_table, table_text
from minihbase.shell_errors import ArgumentError, ShellError, table_name
from minihbase.shell_format import describe
from minihbase.shell_lang import RStr
from minihbase.table_attributes import family_settings, table_settings


def _java(fn: Callable[[], Any]) -> Any:
    """Run a conversion; Java's IllegalArgumentException is the statement's error."""
    try:
        return fn()
    except JavaIllegalArgument as e:
        raise ShellError(e.java_text()) from None


def _family(arg: Any) -> tuple[str, dict, list[str]]:
    """`admin.hcd`: a family name, or a hash with NAME and attributes -> (name, settings, ignored keys)."""
    if isinstance(arg, str):
        return str(arg), {}, []
    arg = dict(arg)
    name = arg.pop("NAME", None)
    if name is None:
        raise ArgumentError(f"Column family {arg} must have a name")
    settings, ignored = _java(lambda: family_settings(arg))
    return str(name), settings, ignored


def _splits(value: Any) -> list[bytes]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError("SPLITS must be an Array of Strings")
    return [v.raw if isinstance(v, RStr) else str(v).encode() for v in value]


def cmd_create(sh: Any, table: Any = None, *args: Any) -> None:
    name = table_name(table)
    if not args:
        raise ArgumentError("Table must have at least one column family")
    families: dict[str, dict] = {}
    splits: list[bytes] = []
    body: dict[str, Any] = {}
    for arg in args:
        if isinstance(arg, str) or (isinstance(arg, dict) and "NAME" in arg):
            fname, settings, ignored = _family(arg)
            for key in ignored:
                sh.print(f"Unknown argument ignored for column family {fname}: {key}")
            if fname in families:
                sh.print(f"Family '{fname}' already exists, the old one will be replaced")
            families[fname] = settings
            continue
        if not isinstance(arg, dict):
            raise ArgumentError(f"{type(arg).__name__} of {arg!r} is not of Hash or String type")
        arg = dict(arg)
        method = arg.pop("METHOD", None)
        if method is not None and str(method) != "table_att":
            raise ArgumentError("table_att is currently the only supported method")
        if "SPLITS" in arg:
            splits = _splits(arg.pop("SPLITS"))
        settings, coprocessors, ignored = _java(lambda: table_settings(arg))
        for key in ignored:
            sh.print(f"An argument ignored (unknown or overridden): {key}")
        if "readonly" in settings:
            body["readonly"] = settings["readonly"]
        body.setdefault("values", {}).update(settings.get("values", {}))
        body.setdefault("coprocessors", []).extend(coprocessors)
    if not families:
        raise ArgumentError("Table must have at least one column family")
    canonical = table_text(*split_table(name))
    if name in sh.tables() or canonical in sh.tables():
        raise ShellError(f"Table already exists: {name}!")
    try:
        sh.control("/control/create-table", {"table": canonical, "families": families,
                                             "split_keys_hex": [s.hex() for s in splits], **body})
    except ShellError as e:
        # commands.rb translate_hbase_exceptions: NamespaceNotFoundException -> "Unknown namespace ns!"
        prefix = "org.apache.hadoop.hbase.NamespaceNotFoundException: "
        if str(e).startswith(prefix):
            raise ShellError(f"Unknown namespace {str(e)[len(prefix):]}!") from None
        raise
    sh.print(f"Created table {name}")


def cmd_describe(sh: Any, table: Any = None) -> None:
    sh.print(*describe(sh.table(table_name(table))))


def cmd_alter(sh: Any, table: Any = None, *args: Any) -> None:
    name = table_name(table)
    current = sh.table(name)
    if not args:
        raise ArgumentError("There should be at least one argument but the table name")
    family_changes = []
    table_change: dict[str, Any] = {"values": {}, "remove": [], "coprocessors": []}
    for arg in args:
        if not isinstance(arg, (dict, str)):
            raise ArgumentError(f"{type(arg).__name__} of {arg!r} is not of Hash or String type")
        method = str(arg.get("METHOD", "")) if isinstance(arg, dict) else ""
        if method.lower() == "delete":
            raise ArgumentError("minihbase's alter cannot delete a column family")
        if method == "table_att_unset":
            keys = arg.get("NAME")
            for key in keys if isinstance(keys, list) else [keys]:
                if not isinstance(key, str):
                    raise ArgumentError("NAME parameter missing for table_att_unset method")
                table_change["remove"].append(str(key))
            continue
        if isinstance(arg, dict) and "NAME" not in arg:
            # A hash without NAME changes table attributes (METHOD => 'table_att' or none).
            if method not in ("", "table_att"):
                raise ArgumentError(f"Unknown method: {method}")
            attrs = {k: v for k, v in arg.items() if k != "METHOD"}
            settings, coprocessors, ignored = _java(lambda: table_settings(attrs))
            for key in ignored:
                sh.print(f"Unknown argument ignored: {key}")
            if "readonly" in settings:
                table_change["readonly"] = settings["readonly"]
            table_change["values"].update(settings.get("values", {}))
            table_change["coprocessors"].extend(coprocessors)
            continue
        fname, settings, ignored = _family(arg)
        for key in ignored:
            sh.print(f"Unknown argument ignored for column family {fname}: {key}")
        family_changes.append((fname, settings))
    for fname, settings in family_changes:
        sh.control("/control/alter-family", {"table": current["name"], "family": fname, **settings})
    table_change = {k: v for k, v in table_change.items() if v or k == "readonly"}
    if table_change:
        sh.control("/control/alter-table", {"table": current["name"], **table_change})
    sh.print("Updating all regions with the new schema...",
             f"{current['regions']}/{current['regions']} regions updated.", "Done.")


TABLE_COMMANDS: dict[str, Callable[..., None]] = {
    "create": cmd_create, "describe": cmd_describe, "desc": cmd_describe, "alter": cmd_alter,
}
