"""Throttling, progress arithmetic and the record of finished partitions (resume).

Used by the copy and verify jobs on both sides of Spark:
- `TokenBucket` / `Throttle` run inside each task, to cap what one task reads
  from the source (rows/s and bytes/s); the clock and sleep are injectable so the
  arithmetic is unit-tested without waiting.
- `rate`, `eta_seconds`, `ProgressMeter` turn counters into the numbers an
  operator reads in the logs (rate, ETA) and the final JSON summary.
- `ProgressStore` records finished partitions so a re-run skips them.
  `SavepointFile` (a JSON file replaced atomically, in scylla-migrator's
  spirit) works today; `LedgerStore` adapts the run ledger
  (`hbase_migration.ledger.store`) once it exists. Only the Spark driver writes the
  store, so it works the same on `local[*]`, YARN or Kubernetes.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------------
# Throttle


class TokenBucket:
    """A token bucket refilled at `rate` tokens/s, holding at most `burst` tokens.

    `acquire(n)` takes n tokens and, if the bucket goes negative, sleeps until the
    debt is repaid: a request larger than the burst is allowed (a scan batch can
    be bigger than a second's worth) and paid for by waiting afterwards, so the
    long-run rate never exceeds `rate`.
    """

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not rate or rate <= 0:
            raise ValueError(f"token bucket rate must be > 0, got {rate!r}")
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else self.rate  # one second's worth
        if self.burst <= 0:
            raise ValueError(f"token bucket burst must be > 0, got {burst!r}")
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self, n: float) -> float:
        """Take `n` tokens; returns the seconds slept (0.0 when none was needed)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= n
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait


class Throttle:
    """Rows/s and bytes/s limits for one task; either may be None (unlimited)."""

    def __init__(
        self,
        rows_per_s: float | None = None,
        bytes_per_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.rows = TokenBucket(rows_per_s, clock=clock, sleep=sleep) if rows_per_s else None
        self.bytes = TokenBucket(bytes_per_s, clock=clock, sleep=sleep) if bytes_per_s else None

    @property
    def enabled(self) -> bool:
        return self.rows is not None or self.bytes is not None

    def acquire(self, rows: int, nbytes: int) -> float:
        """Account for a batch just read; returns the seconds slept."""
        slept = 0.0
        if self.rows is not None:
            slept += self.rows.acquire(rows)
        if self.bytes is not None:
            slept += self.bytes.acquire(nbytes)
        return slept


# --------------------------------------------------------------------------------------------------
# Progress arithmetic


def rate(count: float, seconds: float) -> float:
    """count/seconds, 0.0 for an empty interval (no division by zero in a log line)."""
    return count / seconds if seconds > 0 else 0.0


def eta_seconds(done: float, total: float | None, elapsed: float) -> float | None:
    """Seconds left if the rest goes at the average pace so far.

    None when it cannot be known yet (nothing done, no total, no time elapsed);
    0.0 when done >= total.
    """
    if total is None or total <= 0:
        return None
    if done >= total:
        return 0.0
    if done <= 0 or elapsed <= 0:
        return None
    return elapsed * (total - done) / done


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as HDFS and HBase UIs show them)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    i = 0
    while abs(n) >= 1024 and i < len(units) - 1:
        n /= 1024.0
        i += 1
    return f"{n:.0f} {units[i]}" if i == 0 else f"{n:.1f} {units[i]}"


def human_duration(seconds: float | None) -> str:
    """3725 -> '1h02m05s'; None -> '?'."""
    if seconds is None or math.isnan(seconds) or math.isinf(seconds):
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m{s:02d}s"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


@dataclass
class ProgressMeter:
    """Running totals of a copy (or one partition of it) and their rates.

    `total_partitions` and, when sampling gave it, `total_rows` are the
    denominators of the ETA: by rows when known (even-sized tasks are not
    guaranteed), otherwise by finished partitions.
    """

    total_partitions: int = 0
    total_rows: int | None = None
    clock: Callable[[], float] = time.monotonic
    rows: int = 0
    cells: int = 0
    bytes: int = 0
    partitions_done: int = 0
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def add(self, rows: int = 0, cells: int = 0, nbytes: int = 0, partitions: int = 0) -> None:
        self.rows += rows
        self.cells += cells
        self.bytes += nbytes
        self.partitions_done += partitions

    def snapshot(self) -> dict[str, Any]:
        elapsed = max(0.0, self.clock() - self.started)
        if self.total_rows:
            eta = eta_seconds(self.rows, self.total_rows, elapsed)
        else:
            eta = eta_seconds(self.partitions_done, self.total_partitions, elapsed)
        return {
            "rows": self.rows,
            "cells": self.cells,
            "bytes": self.bytes,
            "partitions_done": self.partitions_done,
            "partitions_total": self.total_partitions,
            "elapsed_s": round(elapsed, 3),
            "rows_per_s": round(rate(self.rows, elapsed), 1),
            "cells_per_s": round(rate(self.cells, elapsed), 1),
            "bytes_per_s": round(rate(self.bytes, elapsed), 1),
            "eta_s": None if eta is None else round(eta, 1),
        }

    def line(self) -> str:
        """One log line: what is done, how fast, how long is left."""
        s = self.snapshot()
        return (
            f"{s['partitions_done']}/{s['partitions_total']} partitions, {s['rows']} rows, "
            f"{s['cells']} cells, {human_bytes(s['bytes'])} in {human_duration(s['elapsed_s'])} "
            f"({s['rows_per_s']:.0f} rows/s, {human_bytes(s['bytes_per_s'])}/s), "
            f"ETA {human_duration(s['eta_s'])}"
        )


# --------------------------------------------------------------------------------------------------
# Finished partitions (resume)


class ProgressStore(Protocol):
    """Where a copy records its finished partitions.

    The method names and arguments are those of the run ledger
    (`hbase_migration.ledger.store`), so the ledger plugs in through `LedgerStore`.
    """

    def done_partitions(self, copy_id: str, table: str) -> set[str]: ...

    def finished_ranges(self, copy_id: str, table: str) -> list[Any]:
        """The finished partitions as key ranges (`hbase_migration.data.resume.FinishedRange`), what a resume takes
        out of its new plan whatever the regions are now."""
        ...

    def partition_done(
        self, copy_id: str, table: str, partition_id: str, start_row: bytes, stop_row: bytes,
        rows: int, cells: int, bytes: int,
    ) -> None: ...


class SavepointError(RuntimeError):
    """The savepoint file exists but cannot be read as one; the message names the path."""


class SavepointFile:
    """Finished partitions in one JSON file, rewritten atomically (temp file + fsync + rename).

    Layout: `{"version": 1, "copies": {copy_id: {table: {partition_id: {...}}}}}` with
    row keys hex-encoded. A crash at any instant leaves either the old or the new
    file, never a torn one. An advisory lock (fcntl) serialises writers that share
    the file (two runs started by mistake, or a driver and an operator's CLI).
    """

    VERSION = 1

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"version": self.VERSION, "copies": {}}
        try:
            data = json.loads(text)
        except ValueError as e:
            raise SavepointError(f"savepoint {self.path} is not valid JSON: {e}") from None
        if not isinstance(data, dict) or data.get("version") != self.VERSION or not isinstance(
            data.get("copies"), dict
        ):
            raise SavepointError(
                f"savepoint {self.path} is not a version-{self.VERSION} savepoint "
                "(expected {\"version\": 1, \"copies\": {...}})"
            )
        return data

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(str(self.path) + ".lock", "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _write(self, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def done_partitions(self, copy_id: str, table: str) -> set[str]:
        return set(self._read()["copies"].get(copy_id, {}).get(table, {}))

    def finished_ranges(self, copy_id: str, table: str) -> list[Any]:
        """The finished partitions as key ranges (`hbase_migration.data.resume.FinishedRange`)."""
        from hbase_migration.data.resume import finished_from_records

        return finished_from_records(self._read()["copies"].get(copy_id, {}).get(table, {}))

    def partition_done(
        self, copy_id: str, table: str, partition_id: str, start_row: bytes, stop_row: bytes,
        rows: int, cells: int, bytes: int,  # noqa: A002 - the ledger's argument name
    ) -> None:
        self.partitions_done(copy_id, table, [{
            "partition_id": partition_id, "start_row": start_row, "stop_row": stop_row,
            "rows": rows, "cells": cells, "bytes": bytes,
        }])

    def partitions_done(self, copy_id: str, table: str, records: list[dict[str, Any]]) -> None:
        """Record several partitions with one rewrite (the driver batches what finished)."""
        if not records:
            return
        with self._file_lock():
            data = self._read()
            done = data["copies"].setdefault(copy_id, {}).setdefault(table, {})
            for r in records:
                done[r["partition_id"]] = {
                    "start_row": bytes(r["start_row"]).hex(),
                    "stop_row": bytes(r["stop_row"]).hex(),
                    "rows": int(r["rows"]),
                    "cells": int(r["cells"]),
                    "bytes": int(r["bytes"]),
                    "finished_at": round(time.time(), 3),
                }
                if r.get("fingerprint"):  # the scope it was copied under (a resume matches it; see resume.py)
                    done[r["partition_id"]]["fingerprint"] = r["fingerprint"]
            self._write(data)


def retry_transient(fn: Callable[[], Any], what: str, retry_s: float, *,
                    sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None) -> Any:
    """`fn()`, again after a transient database error (`ledger.is_transient`: a restart or failover) for up to
    `retry_s` seconds (waits of 1, 2, 4, then 10 s); any other error, or one past the bound, is raised."""
    from hbase_migration.ledger.store import is_transient

    sleep, clock = sleep or time.sleep, clock or time.monotonic
    deadline = clock() + retry_s
    delay = 1.0
    while True:
        try:
            return fn()
        except Exception as e:
            if not is_transient(e) or clock() + delay > deadline:
                raise
            reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0][:200]
            log.warning("%s: the ledger's database did not answer (%s); retrying in %.0fs (for up to %.0fs)",
                        what, reason, delay, retry_s)
            sleep(delay)
            delay = min(delay * 2, 10.0)


def write_summary(ns: Any, job: str, text: str, prog: str, retry_s: float = 60.0) -> str | None:
    """Put a job's JSON summary `text` where its command line asked besides stdout: `--summary-file` (a local
    file: the CLI, or a driver on the submitting host) and the ledger of `--summary-ledger-url` under
    `--summary-key` (the Airflow operators' channel: the driver may run in a YARN container, cluster mode, where
    no file of the worker can be reached; a restart of the ledger's database is waited out for `retry_s`).
    Returns None, or the error (also said on stderr) when the summary could not be delivered: the job then exits
    1 whatever it did, as the task would otherwise not know."""
    import sys

    if getattr(ns, "summary_file", None):
        Path(ns.summary_file).write_text(text + "\n", encoding="utf-8")
    url, key = getattr(ns, "summary_ledger_url", None), getattr(ns, "summary_key", None)
    if not (url and key):
        return None
    try:
        from hbase_migration.ledger.store import Ledger

        def put() -> None:
            with Ledger.open(url) as ledger:
                ledger.put_job_summary(key, job, text)

        retry_transient(put, f"keeping the {job} summary", retry_s)
    except Exception as e:  # the run's outcome stands in the log; the task is told by the exit status
        error = f"the summary could not be kept in the ledger under {key!r}: {type(e).__name__}: {e}"
        print(f"{prog}: error: {error}", file=sys.stderr)
        return error
    log.info("summary kept in the ledger under %s", key)
    return None


class LedgerStore:
    """Adapts the run ledger (any object with `partition_done`/`done_partitions`).

    Every read and write of the copy's progress outlives a restart or failover of the ledger's database of up
    to `retry_s` seconds (a partition record is an upsert: a retry of one that did commit changes nothing):
    without it, the whole copy job failed at the first partition it finished during the outage, and the work of
    every partition in flight was lost to the task's retry (or a job starting then failed at its plan)."""

    def __init__(self, ledger: Any, retry_s: float = 120.0, sleep: Callable[[float], None] | None = None):
        for name in ("partition_done", "done_partitions"):
            if not callable(getattr(ledger, name, None)):
                raise TypeError(f"ledger {ledger!r} has no {name}() method")
        self.ledger = ledger
        self.retry_s = retry_s
        self._sleep = sleep  # the waits between retries (a test's fake; never the process-wide time.sleep)

    def _retry(self, fn: Callable[[], Any], what: str) -> Any:
        return retry_transient(fn, what, self.retry_s, sleep=self._sleep)

    def done_partitions(self, copy_id: str, table: str) -> set[str]:
        return set(self._retry(lambda: self.ledger.done_partitions(copy_id, table),
                               f"reading the finished partitions of {table}"))

    def finished_ranges(self, copy_id: str, table: str) -> list[Any]:
        from hbase_migration.data.resume import FinishedRange

        rows = self._retry(lambda: self.ledger.finished_ranges(copy_id, table),
                           f"reading the finished key ranges of {table}")
        return [FinishedRange(r["partition_id"], r["start_row"], r["stop_row"], r["fingerprint"]) for r in rows]

    def partition_done(
        self, copy_id: str, table: str, partition_id: str, start_row: bytes, stop_row: bytes,
        rows: int, cells: int, bytes: int,  # noqa: A002
        fingerprint: str | None = None,
    ) -> None:
        self.ledger.partition_done(copy_id, table, partition_id, start_row, stop_row, rows, cells, bytes,
                                   fingerprint=fingerprint)

    def partitions_done(self, copy_id: str, table: str, records: list[dict[str, Any]]) -> None:
        for r in records:
            self._retry(lambda r=r: self.partition_done(
                copy_id, table, r["partition_id"], r["start_row"], r["stop_row"],
                r["rows"], r["cells"], r["bytes"], fingerprint=r.get("fingerprint"),
            ), f"recording partition {r['partition_id']} of {table}")

    def copy_plan(self, copy_id: str, table: str, partitions: int, est_rows: int | None = None) -> None:
        self._retry(lambda: self.ledger.copy_plan(copy_id, table, partitions, est_rows=est_rows),
                    f"recording the partition plan of {table}")


def record_done(store: Any, copy_id: str, table: str, records: list[dict[str, Any]]) -> None:
    """Record finished partitions through the batch method when the store has one."""
    many = getattr(store, "partitions_done", None)
    if callable(many):
        many(copy_id, table, records)
        return
    for r in records:
        store.partition_done(copy_id, table, r["partition_id"], r["start_row"], r["stop_row"],
                             r["rows"], r["cells"], r["bytes"])


def record_plan(store: Any, copy_id: str, table: str, partitions: list[Any]) -> None:
    """Record how many partitions the copy of `table` was planned into (finished ones included) and the rows
    they are expected to hold, where the store keeps a plan (the ledger: the dashboard's progress and ETA); a
    savepoint file keeps none."""
    plan = getattr(store, "copy_plan", None)
    if not callable(plan):
        return
    estimates = [getattr(p, "est_rows", None) for p in partitions]
    est_rows = sum(estimates) if estimates and None not in estimates else None
    plan(copy_id, table, len(partitions), est_rows)
