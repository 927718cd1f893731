"""The shell lookalike on a secured cluster: it needs a ticket (`KRB5CCNAME`) and refuses with HBase's own text
otherwise, acts as the ticket's principal (an operator's `hbase@DC1.TEST`, the toolkit, the intruder), and the
cluster answers each with what AccessController allows it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest

from bedkit.security.stack import INTRUDER, TOOLKIT
from tests.polling import wait_for

pytestmark = pytest.mark.integration
NO_TGT = ("ERROR: SASL authentication failed. The most likely cause is missing or invalid credentials. "
          "Consider 'kinit'.")
DENIED = "ERROR: org.apache.hadoop.hbase.security.AccessDeniedException: Insufficient permissions"


def shell(cluster, text: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "minihbase", "shell", "-n", "--cluster", cluster.name, "--workdir",
            str(cluster.workdir)]
    return subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TZ": "UTC", **env})


def lines(proc: subprocess.CompletedProcess) -> list[str]:
    """stdout without the `Took N seconds` lines."""
    return [line for line in proc.stdout.splitlines() if not re.fullmatch(r"Took \d+\.\d{4} seconds", line)]


def test_without_a_ticket_the_shell_refuses_with_hbases_text(secure_pair, secure_stack, tmp_path):
    dc1, _ = secure_pair
    proc = shell(dc1, "list\n", {"KRB5CCNAME": f"FILE:{tmp_path / 'empty-cache'}", **secure_stack.env()})
    assert proc.returncode == 1
    assert lines(proc) == [NO_TGT]
    assert "GSS initiate failed [Caused by GSSException: No valid credentials provided (Mechanism level: Failed " \
           "to find any Kerberos tgt)]" in proc.stderr


def test_an_expired_ticket_is_no_ticket(secure_pair, secure_stack, tmp_path):
    dc1, _ = secure_pair
    cache = tmp_path / "short-cache"
    env = {"KRB5CCNAME": f"FILE:{cache}", **secure_stack.env()}
    kinit = subprocess.run(["kinit", "-l", "2s", "-kt", str(secure_stack.keytab_path("hbase@DC1.TEST")),
                            "hbase@DC1.TEST"], env={**os.environ, **env}, capture_output=True, text=True, timeout=30)
    assert kinit.returncode == 0, kinit.stderr
    wait_for(lambda: subprocess.run(["klist", "-s"], env={**os.environ, **env}).returncode != 0, timeout=10,
             what="the 2 s ticket to expire")
    proc = shell(dc1, "list\n", env)
    assert (proc.returncode, lines(proc)) == (1, [NO_TGT])


def test_the_operators_admin_creates_writes_reads_and_deletes(secure_pair, kinit):
    dc1, _ = secure_pair
    table = f"ops_{uuid.uuid4().hex[:6]}"
    proc = shell(dc1, f"create '{table}', 'cf'\n"
                      f"put '{table}', 'r1', 'cf:a', 'v1', 1700000000123\n"
                      f"put '{table}', 'r1', 'cf:b', \"v\\x00\\\\2\", 1700000000000\n"  # Ruby: NUL, backslash
                      f"put '{table}', 'r2', 'cf:a', 'w', 1699999980000\n"
                      f"get '{table}', 'r1'\n"
                      f"scan '{table}'\n"
                      f"deleteall '{table}', 'r1'\n"
                      f"scan '{table}', {{COLUMNS => ['cf:a']}}\n", kinit("hbase@DC1.TEST"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc) == [
        f"Created table {table}",
        "COLUMN  CELL",
        " cf:a timestamp=2023-11-14T22:13:20.123, value=v1",
        " cf:b timestamp=2023-11-14T22:13:20, value=v\\x00\\x5C2",
        "1 row(s)",
        "ROW  COLUMN+CELL",
        " r1 column=cf:a, timestamp=2023-11-14T22:13:20.123, value=v1",
        " r1 column=cf:b, timestamp=2023-11-14T22:13:20, value=v\\x00\\x5C2",
        " r2 column=cf:a, timestamp=2023-11-14T22:13, value=w",
        "2 row(s)",
        "ROW  COLUMN+CELL",
        " r2 column=cf:a, timestamp=2023-11-14T22:13, value=w",
        "1 row(s)",
    ]


def test_the_intruder_gets_access_denied_for_admin_and_data_commands(secure_pair, kinit):
    dc1, _ = secure_pair
    table = f"guarded_{uuid.uuid4().hex[:6]}"
    dc1.create_table(table, {"cf": {}})
    env = kinit(INTRUDER)
    expected = {
        f"create '{table}x', 'cf'": f"{DENIED} (user=intruder@DC1.TEST, scope=default, params=[namespace=default,"
                                    f"table=default:{table}x,family=cf],action=CREATE)",
        f"disable '{table}'": f"{DENIED} (user=intruder@DC1.TEST, scope=default:{table}, params=[table=default:"
                              f"{table},],action=CREATE)",
        f"put '{table}', 'r', 'cf:q', 'v'": f"{DENIED} (user=intruder@DC1.TEST, scope=default:{table}, family=cf:q, "
                                            f"params=[table=default:{table},family=cf:q],action=WRITE)",
        f"get '{table}', 'r'": f"{DENIED} for user 'intruder' (table={table}, action=READ)",
        f"scan '{table}'": f"{DENIED} for user 'intruder' (table={table}, action=READ)",
        "add_peer '9', CLUSTER_KEY => 'localhost:2181:/hbase'": f"{DENIED} for user 'intruder' (global, "
                                                                  "action=ADMIN)",
        "list_peers": f"{DENIED} for user 'intruder' (global, action=ADMIN)",
    }
    for statement, error in expected.items():
        proc = shell(dc1, statement + "\n", env)
        assert (proc.returncode, lines(proc)[-1]) == (1, error), statement
    proc = shell(dc1, "list\n", env)  # reading the table list is no admin change
    assert proc.returncode == 0 and table in lines(proc)
    assert dc1.status()["tables"][table]["enabled"]


def test_the_toolkit_manages_peers_through_the_shell(secure_pair, kinit):
    dc1, dc2 = secure_pair
    proc = shell(dc1, f"add_peer '77', CLUSTER_KEY => '{dc2.cluster_key}', STATE => 'DISABLED'\nlist_peers\n"
                      "remove_peer '77'\n", kinit(TOOLKIT))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(line.startswith(f" 77 {dc2.cluster_key} ") and "DISABLED" in line for line in lines(proc))


def test_an_unknown_table_is_unknown_whoever_asks(secure_pair, kinit):
    dc1, _ = secure_pair
    for principal in ("hbase@DC1.TEST", INTRUDER):
        proc = shell(dc1, "get 'no_such_table', 'r'\n", kinit(principal))
        assert (proc.returncode, lines(proc)) == (1, ["ERROR: Unknown table no_such_table!"]), principal
