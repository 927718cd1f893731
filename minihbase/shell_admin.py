"""The shell's namespace commands and the master's switches, as HBase 2.x's shell takes and prints them.

- `create_namespace 'ns1' [, {'PROPERTY_NAME' => 'PROPERTY_VALUE'}]`, `drop_namespace 'ns1'` (only an empty
  one), `list_namespace ['regex']` (`NAMESPACE`, the names, `N row(s)`), `describe_namespace 'ns1'`
  (`DESCRIPTION`, then `NamespaceDescriptor.toString()`: `{NAME => 'ns1', KEY => 'value'}` with the
  configuration sorted, as its TreeMap holds it). A missing namespace is `Unknown namespace ns1!` (commands.rb's
  translation of NamespaceNotFoundException).
- `splitormerge_switch 'SPLIT'|'MERGE', true|false` and `normalizer_switch true|false` print the switch's
  previous value; `splitormerge_enabled 'SPLIT'|'MERGE'` and `normalizer_enabled` print the current one.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from minihbase.shell_errors import ArgumentError, ShellError

_NOT_FOUND = "org.apache.hadoop.hbase.NamespaceNotFoundException: "


def _namespace(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentError(f"namespace name must be a String, got {value!r}")
    return str(value)


def _control(sh: Any, path: str, body: dict | None = None) -> dict:
    try:
        return sh.control(path, body)
    except ShellError as e:
        if str(e).startswith(_NOT_FOUND):
            raise ShellError(f"Unknown namespace {str(e)[len(_NOT_FOUND):]}!") from None
        raise


def cmd_create_namespace(sh: Any, namespace: Any = None, properties: Any = None) -> None:
    name = _namespace(namespace)
    if properties is not None and not isinstance(properties, dict):
        raise ArgumentError(f"{type(properties).__name__} of {properties!r} is not of Hash type")
    configuration = {str(k): str(v) for k, v in (properties or {}).items()}
    _control(sh, "/control/create-namespace", {"namespace": name, "configuration": configuration})


def cmd_drop_namespace(sh: Any, namespace: Any = None) -> None:
    _control(sh, "/control/drop-namespace", {"namespace": _namespace(namespace)})


def cmd_describe_namespace(sh: Any, namespace: Any = None) -> None:
    found = _control(sh, "/control/namespace", {"namespace": _namespace(namespace)})
    configuration = found["configuration"]
    text = f"{{NAME => '{found['namespace']}'" + "".join(
        f", {k} => '{configuration[k]}'" for k in sorted(configuration)) + "}"
    sh.print("DESCRIPTION", text, "Quota is disabled")


def cmd_list_namespace(sh: Any, regex: Any = ".*") -> None:
    names = _control(sh, "/control/namespaces")["namespaces"]
    pattern = re.compile(str(regex))
    shown = [n for n in names if pattern.fullmatch(n)]
    sh.print("NAMESPACE", *shown, f"{len(shown)} row(s)")


def _boolean(value: Any, what: str) -> bool:
    """`java.lang.Boolean.valueOf(x)`."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"
    raise ArgumentError(f"{what} must be true or false, got {value!r}")


def _split_or_merge(kind: Any) -> str:
    if not isinstance(kind, str) or str(kind) not in ("SPLIT", "MERGE"):
        raise ArgumentError("only SPLIT or MERGE accepted for type!")
    return str(kind).lower()


def cmd_splitormerge_switch(sh: Any, kind: Any = None, enabled: Any = None) -> None:
    previous = sh.control("/control/switch", {"switch": _split_or_merge(kind),
                                              "enabled": _boolean(enabled, "enabled")})["previous"]
    sh.print("true" if previous else "false")


def cmd_splitormerge_enabled(sh: Any, kind: Any = None) -> None:
    state = sh.control("/control/switches")
    sh.print("true" if state[_split_or_merge(kind)] else "false")


def cmd_normalizer_switch(sh: Any, enabled: Any = None) -> None:
    previous = sh.control("/control/switch", {"switch": "normalizer",
                                              "enabled": _boolean(enabled, "enabled")})["previous"]
    sh.print("true" if previous else "false")


def cmd_normalizer_enabled(sh: Any) -> None:
    sh.print("true" if sh.control("/control/switches")["normalizer"] else "false")


ADMIN_COMMANDS: dict[str, Callable[..., None]] = {
    "create_namespace": cmd_create_namespace, "drop_namespace": cmd_drop_namespace,
    "describe_namespace": cmd_describe_namespace, "list_namespace": cmd_list_namespace,
    "splitormerge_switch": cmd_splitormerge_switch, "splitormerge_enabled": cmd_splitormerge_enabled,
    "normalizer_switch": cmd_normalizer_switch, "normalizer_enabled": cmd_normalizer_enabled,
}
