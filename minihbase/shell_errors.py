"""The shell lookalike's errors, shared by its command modules (`shell`, `shell_tables`, `shell_admin`)."""
from __future__ import annotations

from typing import Any


class ShellError(Exception):
    """A failed statement; `str()` is what follows `ERROR: ` (a Ruby message or `<java class>: <message>`)."""


class ArgumentError(ShellError):
    pass


def table_name(value: Any, what: str = "Table name") -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{what} must be of type String")
    return str(value)
