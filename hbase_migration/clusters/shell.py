"""Running `hbase shell -n`: statements on stdin, every failure an error that says what and where.

With `-n` the shell exits non-zero on the first error, but HBase 1.x could exit 0 after printing `ERROR: ...`,
so a line of stdout starting with `ERROR` is a failure too. Opened through `channels.shell`, which adds the
cluster's Kerberos ticket cache; the statements themselves are built by the rooms above (peers in
`replication/shell.py`, tables in `migration/schema.py`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from hbase_migration.clusters.cluster import DEFAULT_SHELL_COMMAND

log = logging.getLogger(__name__)


class ShellCommandError(RuntimeError):
    """`hbase shell -n` failed: non-zero exit, an `ERROR` line, or a timeout."""

    def __init__(self, message: str, returncode: int | None = None, output: str = "", timed_out: bool = False):
        super().__init__(message)
        self.returncode = returncode
        self.output = output
        self.timed_out = timed_out


@dataclass(frozen=True)
class ShellOutput:
    command: tuple[str, ...]
    statements: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def error_lines(stdout: str) -> list[str]:
    """Lines the shell prints for a failed statement (`ERROR <Class>: msg`, 1.x `ERROR: msg`)."""
    return [line.rstrip() for line in stdout.splitlines() if line.startswith("ERROR")]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_shell(statements: Sequence[str], command: Sequence[str] = DEFAULT_SHELL_COMMAND,
              timeout_s: float = 180.0, env: Mapping[str, str] | None = None) -> ShellOutput:
    """Run statements through `command` (stdin), raising ShellCommandError on any failure.

    Failure = the command cannot start, does not finish within `timeout_s`
    (its whole process group is killed: the shell is a JVM with children),
    exits non-zero, or prints a line starting with `ERROR` on stdout.
    """
    command = tuple(command)
    if not command:
        raise ShellCommandError("shell command is empty: set the cluster's shell_command")
    if not statements:
        raise ValueError("no statements to run")
    shown = shlex.join(command)
    script = "\n".join(statements) + "\n"
    log.info("running %d statement(s) through `%s`: %s", len(statements), shown, "; ".join(statements))
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True, env=None if env is None else {**os.environ, **env},
        )
    except OSError as exc:
        raise ShellCommandError(
            f"cannot start the HBase shell `{shown}`: {exc} (check the cluster's shell_command)") from None
    try:
        stdout, stderr = proc.communicate(script, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise ShellCommandError(
            f"`{shown}` did not finish within {timeout_s:g}s running: {'; '.join(statements)}; "
            f"output so far:\n{_tail(stdout + stderr)}", None, stdout, timed_out=True) from None
    output = ShellOutput(command, tuple(statements), proc.returncode, stdout, stderr,
                         time.monotonic() - started)
    errors = error_lines(stdout)
    if proc.returncode != 0 or errors:
        detail = "\n".join(errors) if errors else _tail(stderr or stdout)
        raise ShellCommandError(
            f"`{shown}` failed (exit {proc.returncode}) running: {'; '.join(statements)}\n{detail}",
            proc.returncode, stdout)
    return output

