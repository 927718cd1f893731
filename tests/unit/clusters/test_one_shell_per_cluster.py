"""`channels.one_shell_per_cluster`: inside the block every cluster's statements go to one kept-open shell (one
start per cluster), a failing statement raises as its own call would and the next call opens a new shell, nothing
is left running after the block; outside it each call starts a shell of its own. Against a small stand-in that
reads statements line by line as `hbase shell -n` does and records each start (its pid) in a file; the real
shell's session is exercised on realhbase by the migration DAG's preflight and table creation."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hbase_migration.clusters import channels
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.shell import ShellCommandError
from tests.unit.clusters.test_shell_session import STAND_IN as SESSION_STAND_IN

# test_shell_session's stand-in, each start recorded (its pid) in the file its first argument names
STAND_IN = "import os, sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(f'{os.getpid()}\\n')\n" + SESSION_STAND_IN


def cluster(name: str, starts: Path) -> Cluster:
    return Cluster(name, "h", ("zk",), shell_command=(sys.executable, "-c", STAND_IN, str(starts)),
                   shell_timeout_s=30.0)


def started(starts: Path) -> list[int]:
    return [int(p) for p in starts.read_text().split()] if starts.exists() else []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_each_cluster_gets_one_shell_for_the_whole_block(tmp_path):
    a, b = cluster("a", tmp_path / "a"), cluster("b", tmp_path / "b")
    with channels.one_shell_per_cluster():
        first = channels.shell(a, ["describe 't1'", "describe 't2'"])
        second = channels.shell(a, ["list_namespace"])
        other = channels.shell(b, ["list"])
        with channels.one_shell_per_cluster():  # nested: the outer block's shells serve
            again = channels.shell(a, ["status"])
    assert [line for line in first.stdout.splitlines() if line.startswith("ran")] == ["ran describe 't1'",
                                                                                       "ran describe 't2'"]
    assert second.stdout.splitlines()[-1] == "ran list_namespace"
    assert other.stdout.splitlines()[-1] == "ran list" and again.stdout.splitlines()[-1] == "ran status"
    assert len(started(tmp_path / "a")) == 1 and len(started(tmp_path / "b")) == 1
    assert not any(alive(pid) for pid in started(tmp_path / "a") + started(tmp_path / "b"))


def test_a_failing_statement_raises_and_the_next_call_opens_a_new_shell(tmp_path):
    a = cluster("a", tmp_path / "a")
    with channels.one_shell_per_cluster():
        channels.shell(a, ["list"])
        with pytest.raises(ShellCommandError, match="NameError: fail"):
            channels.shell(a, ["fail", "never run"])
        assert channels.shell(a, ["list"]).stdout.splitlines()[-1] == "ran list"
    assert len(started(tmp_path / "a")) == 2


def test_outside_the_block_every_call_starts_its_own_shell(tmp_path):
    a = cluster("a", tmp_path / "a")
    for _ in range(2):
        out = channels.shell(a, ["list"])
        assert out.returncode == 0 and out.stdout.splitlines()[-1] == "ran list"
    with pytest.raises(ShellCommandError, match="exit 1"):
        channels.shell(a, ["fail"])
    assert len(started(tmp_path / "a")) == 3


def test_an_error_inside_the_block_still_closes_its_shells(tmp_path):
    a = cluster("a", tmp_path / "a")
    with pytest.raises(RuntimeError, match="the task failed"):
        with channels.one_shell_per_cluster():
            channels.shell(a, ["list"])
            raise RuntimeError("the task failed")
    [pid] = started(tmp_path / "a")
    assert not alive(pid) and os.path.exists(tmp_path / "a")
