"""The shell runner's failure handling, with ordinary commands (not HBase lookalikes)."""
from __future__ import annotations

import sys

import pytest

from hbase_migration.clusters import shell
from hbase_migration.clusters.shell import ShellCommandError


def test_error_lines():
    stdout = (
        "Took 0.0102 seconds\n"
        "ERROR ArgumentError: Either ENDPOINT_CLASSNAME or CLUSTER_KEY must be specified.\n"
        "For usage try 'help \"add_peer\"'\n"
        "ERROR: Peer 1 already exists\n"  # 1.x interactive form, exit code 0
        "  ERROR indented is not the shell's marker\n"
    )
    assert shell.error_lines(stdout) == [
        "ERROR ArgumentError: Either ENDPOINT_CLASSNAME or CLUSTER_KEY must be specified.",
        "ERROR: Peer 1 already exists",
    ]


def test_failure_detail_prefers_the_shells_own_words():
    stack = "\n".join(f"   frame{i} at org/apache/hadoop/hbase/X.java:{i}" for i in range(40))
    died = ("WARN [main] util.NativeCodeLoader: Unable to load native-hadoop library\n"
            "Unhandled Java exception: org.apache.hadoop.hbase.ReplicationPeerNotFoundException: does_not_exist\n"
            "org.apache.hadoop.hbase.ReplicationPeerNotFoundException: does_not_exist\n" + stack + "\n")
    assert shell.failure_detail("hbase:001:0> remove_peer \"x\"\nTook 2.0 seconds\n", died) == (
        "Unhandled Java exception: org.apache.hadoop.hbase.ReplicationPeerNotFoundException: does_not_exist")
    assert shell.failure_detail("ERROR: Peer 1 already exists\n", died) == "ERROR: Peer 1 already exists"
    assert shell.failure_detail("", "a\nb\n") == "a\nb"  # nothing recognised: the output's tail
    assert shell.failure_detail("", stack).splitlines() == stack.splitlines()[-15:]


def test_runner_reports_a_command_that_cannot_start():
    shown = "`/nonexistent/hbase shell -n`"
    with pytest.raises(ShellCommandError, match=f"cannot start the HBase shell {shown}:"):
        shell.run_shell(["list_peers"], ["/nonexistent/hbase", "shell", "-n"], timeout_s=5)


def test_runner_reports_a_non_zero_exit_with_its_output():
    program = "import sys; sys.stdin.read(); print('boom', file=sys.stderr); sys.exit(3)"
    command = [sys.executable, "-c", program]
    with pytest.raises(ShellCommandError, match=r"failed \(exit 3\) running: list_peers\nboom") as err:
        shell.run_shell(["list_peers"], command, timeout_s=30)
    assert err.value.returncode == 3


@pytest.mark.timeout(120)  # the shell sleeps for an hour: only the runner's own timeout ends the call
def test_runner_kills_a_shell_that_hangs():
    command = [sys.executable, "-c", "import time; time.sleep(3600)"]
    with pytest.raises(ShellCommandError, match=r"did not finish within 0.5s running: list_peers") as err:
        shell.run_shell(["list_peers"], command, timeout_s=0.5)
    assert err.value.timed_out


def test_runner_feeds_statements_on_stdin_and_returns_output():
    command = [sys.executable, "-c", "import sys; print(sys.stdin.read().upper(), end='')"]
    out = shell.run_shell(["enable_peer \"1\"", "list_peers"], command, timeout_s=30)
    assert (out.returncode, out.stdout) == (0, 'ENABLE_PEER "1"\nLIST_PEERS\n')
    assert out.statements == ('enable_peer "1"', "list_peers")
