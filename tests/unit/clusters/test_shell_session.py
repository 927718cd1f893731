"""The kept-open shell session's protocol (statements, marker, death, ERROR lines, timeout), against a small
stand-in that reads statements line by line as `hbase shell -n` does: echoes each after a prompt, prints what a
`puts "a" + "b"` prints, exits 1 on `fail`, prints an ERROR line on `error`, hangs on `hang`. The real shell's
session is exercised on realhbase (tests/integration/test_cutover_window_realhbase.py)."""
from __future__ import annotations

import sys

import pytest

from hbase_migration.clusters.shell import ShellCommandError, ShellSession

STAND_IN = r'''
import re, sys, time
n = 0
for line in sys.stdin:
    n += 1
    line = line.rstrip("\n")
    print(f"hbase:{n:03d}:0> {line}", flush=True)
    m = re.fullmatch(r'puts "(.*)" \+ "(.*)"', line)
    if m:
        print(m.group(1) + m.group(2), flush=True)
    elif line == "fail":
        print("NameError: fail", file=sys.stderr, flush=True)
        sys.exit(1)
    elif line == "error":
        print("ERROR: Unknown table nosuch!", flush=True)
    elif line == "hang":
        time.sleep(3600)
    else:
        print(f"ran {line}", flush=True)
'''


def session() -> ShellSession:
    return ShellSession([sys.executable, "-c", STAND_IN]).open(timeout_s=30)


def test_statements_run_when_asked_and_return_their_output():
    s = session()
    try:
        assert s.opened_s is not None and s.alive
        out = s.run(["list", "status"])
        assert out.stdout.splitlines() == ["hbase:002:0> list", "ran list", "hbase:003:0> status", "ran status"]
        assert s.run(["again"]).stdout.splitlines()[-1] == "ran again"
    finally:
        s.close()
    assert not s.alive


def test_a_shell_that_exits_fails_the_batch_with_its_output():
    s = session()
    with pytest.raises(ShellCommandError, match=r"\(session\) exited 1 running: fail\n") as err:
        s.run(["fail"])
    assert err.value.returncode == 1 and "NameError: fail" in str(err.value)
    with pytest.raises(ShellCommandError, match="exited"):
        s.run(["list"])
    s.close()


def test_an_error_line_fails_the_batch():
    s = session()
    try:
        with pytest.raises(ShellCommandError, match="ERROR: Unknown table nosuch!"):
            s.run(["error"])
    finally:
        s.close()


@pytest.mark.timeout(120)  # the stand-in hangs for an hour: only the session's own timeout ends the call
def test_a_batch_past_its_timeout_kills_the_shell():
    s = session()
    with pytest.raises(ShellCommandError, match=r"did not finish within 0.5s running: hang") as err:
        s.run(["hang"], timeout_s=0.5)
    assert err.value.timed_out and not s.alive


def test_a_command_that_cannot_start():
    with pytest.raises(ShellCommandError, match="cannot start the HBase shell"):
        ShellSession(["/nonexistent/hbase", "shell"]).open(5)
    with pytest.raises(ShellCommandError, match="empty"):
        ShellSession([])
