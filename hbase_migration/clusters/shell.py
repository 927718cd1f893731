"""Running `hbase shell -n`: statements on stdin, every failure an error that says what and where.

With `-n` the shell exits non-zero on the first error, but HBase 1.x could exit 0 after printing `ERROR: ...`,
so a line of stdout starting with `ERROR` is a failure too. Opened through `channels.shell`, which adds the
cluster's Kerberos ticket cache; the statements themselves are built by the rooms above (peers in
`replication/shell.py`, tables in `migration/schema.py`). `ShellSession` keeps one shell open for statements that
must run at a given moment (the cut-over's freeze), paying its start before (`channels.shell_session`).
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
from typing import Any, Mapping, Sequence

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


def error_lines(stdout: str) -> list[str]:
    """Lines the shell prints for a failed statement (`ERROR <Class>: msg`, 1.x `ERROR: msg`)."""
    return [line.rstrip() for line in stdout.splitlines() if line.startswith("ERROR")]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


UNHANDLED = "Unhandled Java exception:"


def failure_detail(stdout: str, stderr: str) -> str:
    """What a failed shell said, in its own words: its `ERROR` lines on stdout; else, when it died of a statement's
    exception (HBase 2.x's `shell -n` does: JRuby prints `Unhandled Java exception: <class>: <message>` on stderr,
    then a stack whose tail names only HBase's internals), that line; else the tail of its output."""
    errors = error_lines(stdout)
    if errors:
        return "\n".join(errors)
    died = [line.rstrip() for line in stderr.splitlines() if line.startswith(UNHANDLED)]
    return "\n".join(died) if died else _tail(stderr or stdout)


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
        detail = failure_detail(stdout, stderr)
        raise ShellCommandError(
            f"`{shown}` failed (exit {proc.returncode}) running: {'; '.join(statements)}\n{detail}",
            proc.returncode, stdout)
    return output



class ShellSession:
    """One `hbase shell -n` kept open: statements go to its standard input when they are needed, so the JVM and
    JRuby start (10 to 20 s, most of a shell call) is paid once, at `open()`, before the moment that counts.

    The shell reads standard input statement by statement (it echoes each after its prompt, `hbase:001:0> ...`)
    and flushes what it prints, so `run()` writes its statements, then a marker statement (`puts` of a string the
    echo cannot contain, built by concatenation), and returns the lines printed up to the marker. With `-n` the
    shell exits at the first failing statement: the session is then dead, and `run()` raises ShellCommandError
    with what it printed; an `ERROR` line is a failure too (as `run_shell`). A timeout kills the shell's whole
    process group. Not thread-safe: one caller at a time."""

    def __init__(self, command: Sequence[str] = DEFAULT_SHELL_COMMAND, env: Mapping[str, str] | None = None):
        import threading

        self.command = tuple(command)
        if not self.command:
            raise ShellCommandError("shell command is empty: set the cluster's shell_command")
        self._env = None if env is None else {**os.environ, **env}
        self._proc: subprocess.Popen | None = None
        self._out: list[str] = []
        self._err: list[str] = []
        self._changed = threading.Condition()
        self._markers = 0
        self.opened_s: float | None = None  # how long `open()` took (the JVM and JRuby start)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _pump(self, stream: Any, into: list[str]) -> None:
        for line in stream:
            with self._changed:
                into.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def open(self, timeout_s: float = 180.0) -> "ShellSession":
        """Start the shell and wait until it answers a first marker; ShellCommandError when it cannot."""
        import threading

        if self._proc is not None:
            return self
        shown = shlex.join(self.command)
        started = time.monotonic()
        try:
            self._proc = subprocess.Popen(list(self.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True,
                                          env=self._env)
        except OSError as exc:
            raise ShellCommandError(
                f"cannot start the HBase shell `{shown}`: {exc} (check the cluster's shell_command)") from None
        for stream, into in ((self._proc.stdout, self._out), (self._proc.stderr, self._err)):
            threading.Thread(target=self._pump, args=(stream, into), daemon=True, name="hbase-shell-pump").start()
        self.run([], timeout_s=timeout_s)
        self.opened_s = time.monotonic() - started
        log.info("HBase shell session `%s` open after %.1fs", shown, self.opened_s)
        return self

    def run(self, statements: Sequence[str], timeout_s: float = 180.0) -> ShellOutput:
        """Run `statements` in the open session; what they printed (stdout lines between the batch's start and
        its marker). Raises ShellCommandError when the shell exits, prints an `ERROR` line, or exceeds
        `timeout_s` (the session is then closed)."""
        if self._proc is None:
            raise ShellCommandError("the shell session is not open")
        shown = shlex.join(self.command)
        self._markers += 1
        marker = f"__hbase_migration_{self._markers}__"
        half = len(marker) // 2
        with self._changed:
            start, err_start = len(self._out), len(self._err)
        began = time.monotonic()
        script = "".join(s + "\n" for s in statements) + f'puts "{marker[:half]}" + "{marker[half:]}"\n'
        try:
            self._proc.stdin.write(script)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the shell is gone: said below with its output
        deadline = began + timeout_s
        with self._changed:
            while True:
                lines = self._out[start:]
                if any(line.strip() == marker for line in lines):
                    break
                if self._proc.poll() is not None:
                    self._changed.wait(0.5)  # let the pumps drain what it printed last
                    lines = self._out[start:]
                    detail = failure_detail("\n".join(lines), "\n".join(self._err[err_start:] + lines))
                    raise ShellCommandError(
                        f"`{shown}` (session) exited {self._proc.returncode} running: {'; '.join(statements)}\n"
                        f"{detail}", self._proc.returncode, "\n".join(lines))
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close(kill=True)
                    raise ShellCommandError(
                        f"`{shown}` (session) did not finish within {timeout_s:g}s running: {'; '.join(statements)};"
                        f" output so far:\n{_tail(chr(10).join(lines))}", None, "\n".join(lines), timed_out=True)
                self._changed.wait(min(left, 0.2))
        echo = f'puts "{marker[:half]}"'
        out = [line for line in lines if line.strip() != marker and echo not in line]
        stdout = "\n".join(out)
        errors = error_lines(stdout)
        if errors:
            raise ShellCommandError(f"`{shown}` (session) failed running: {'; '.join(statements)}\n"
                                    + "\n".join(errors), None, stdout)
        return ShellOutput(self.command, tuple(statements), 0, stdout, "", time.monotonic() - began)

    def close(self, kill: bool = False, timeout_s: float = 30.0) -> None:
        """End the shell: its standard input closed (it exits), or its process group killed (`kill`, or when it
        does not exit within `timeout_s`)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if not kill:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
            try:
                proc.wait(timeout=timeout_s)
                return
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def __enter__(self) -> "ShellSession":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
