"""How figures read on the dashboard: pure functions from the ledger's raw values to text.

Instants are UTC (Airflow's default_timezone here; HBase timestamps are UTC epoch ms); sizes are binary units
as HDFS and HBase UIs show them (the same `human_bytes` the CLI logs with). None, a figure not recorded yet,
reads as an em dash.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hbase_migration.data.progress import human_bytes, human_duration
from hbase_migration.data.scope import LATEST_TIMESTAMP, to_string_binary

MISSING = "\u2014"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def instant(ms: int | None) -> str:
    """1714564800000 -> '2024-05-01 12:00:00 UTC'."""
    if ms is None:
        return MISSING
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S UTC")


def window_end(ms: int | None) -> str:
    """A verification window's end: an instant, or no end (every timestamp compared, future ones included),
    which the ledger keeps as HBase's LATEST_TIMESTAMP."""
    if ms is not None and ms >= LATEST_TIMESTAMP:
        return "no end (every timestamp)"
    return instant(ms)


def duration(ms: int | None) -> str:
    """850 -> '850 ms', 3_725_000 -> '1h02m05s' (the CLI's format above a second)."""
    if ms is None:
        return MISSING
    if ms < 0:
        return "-" + duration(-ms)
    if ms < 1000:
        return f"{ms} ms"
    return human_duration(ms / 1000)


def count(n: int | None) -> str:
    """1234567 -> '1,234,567'."""
    return MISSING if n is None else f"{n:,}"


def size(n: int | None) -> str:
    """1536 -> '1.5 KiB'."""
    return MISSING if n is None else human_bytes(n)


def rate(bytes_per_s: float | None) -> str:
    """1572864.0 -> '1.5 MiB/s'."""
    return MISSING if bytes_per_s is None else f"{human_bytes(bytes_per_s)}/s"


def percent(part: int | None, whole: int | None) -> str:
    """(45, 60) -> '75.0%'; no whole (no quota set) -> the em dash."""
    if part is None or not whole:
        return MISSING
    return f"{100 * part / whole:.1f}%"


def row_key(hex_text: str) -> str:
    """A ledger row key (hex) as HBase's Bytes.toStringBinary prints it, ready to paste into `hbase shell`."""
    return to_string_binary(bytes.fromhex(hex_text))


def relative(ms: int | None, now_ms: int) -> str:
    """How far `ms` is from now: 'in 2h05m00s', '3m00s ago'."""
    if ms is None:
        return MISSING
    delta = ms - now_ms
    return f"in {duration(delta)}" if delta >= 0 else f"{duration(-delta)} ago"


def per_second(n: float | None) -> str:
    """Rows per second: 12345.6 -> '12,346'; a slow rate keeps a decimal, 0.333 -> '0.3'."""
    if n is None:
        return MISSING
    return f"{round(n):,}" if n >= 100 else f"{n:.1f}"
