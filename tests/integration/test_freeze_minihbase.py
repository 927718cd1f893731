"""The cut-over's freeze against minihbase, through the toolkit's operator (the shell path, `alter ..., READONLY =>
'true'`, read back with `describe`): a write to a frozen table fails through stock happybase with HBase's own
error text, reads go on; a re-run changes nothing; a missing table refuses the whole freeze before anything
changed; unfreezing makes the table writable again."""
from __future__ import annotations

import sys
import uuid

import happybase.connection
import pytest

from hbase_migration.clusters.shell import ShellCommandError
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.migration.freeze import FreezeError, readonly_states
from hbase_migration.operators.cutover import SetReadOnlyOperator

pytestmark = pytest.mark.integration

Hbase = sys.modules[happybase.connection.Hbase.__module__]  # the IDL happybase loads
HBaseIOError = Hbase.IOError
BATCH = ("org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException: Failed 1 action: "
         "org.apache.hadoop.hbase.DoNotRetryIOException: region is read only: 1 time, servers with issues: {server}")
SINGLE = ("org.apache.hadoop.hbase.DoNotRetryIOException: org.apache.hadoop.hbase.DoNotRetryIOException: "
          "region is read only")


@pytest.fixture
def source(minihbase_dc1, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", minihbase_dc1.connection_json)
    table = "frz_" + uuid.uuid4().hex[:6]
    minihbase_dc1.create_table(table, {"d": {"max_versions": 2, "replication_scope": 1}}, split_keys=[b"m"])
    return minihbase_dc1, table


def message(excinfo) -> str:
    text = excinfo.value.message
    return text.decode() if isinstance(text, bytes) else text


def region_server_of(cluster, table: str, row: bytes) -> str:
    """The server of the region holding `row` (the table is split at b"m"; regions are listed in key order)."""
    regions = cluster.status()["tables"][table]["regions"]
    return regions[0 if row < b"m" else 1]["server"]


def test_a_frozen_table_refuses_writes_with_hbases_error_and_serves_reads(source):
    cluster, table = source
    conn = cluster.connection()
    t = conn.table(table)
    t.put(b"a1", {b"d:q": b"before"})
    t.put(b"z1", {b"d:q": b"before"})

    done = SetReadOnlyOperator(task_id="freeze", conn_id="hbase_source", tables=[table], readonly=True).execute({})
    assert done == [{"table": table, "readonly": True, "outcome": "frozen",
                     "statement": f"alter \"{table}\", READONLY => 'true'"}]
    assert readonly_states(cluster_from_text("source", cluster.connection_json), [table]) == {table: True}

    with pytest.raises(HBaseIOError) as batch:  # happybase's put: Thrift1 mutateRows, HBase's Table.put(List)
        t.put(b"a2", {b"d:q": b"after"})
    assert message(batch) == BATCH.format(server=region_server_of(cluster, table, b"a2"))
    with pytest.raises(HBaseIOError) as single:  # one mutation: Table.put(Put)
        conn.client.mutateRow(table.encode(), b"z2", [Hbase.Mutation(column=b"d:q", value=b"after")], {})
    assert message(single) == SINGLE
    with pytest.raises(HBaseIOError) as delete:
        t.delete(b"a1")
    assert "region is read only" in message(delete)

    # reads go on, and nothing was written
    assert t.row(b"a1") == {b"d:q": b"before"}
    assert dict(t.scan()) == {b"a1": {b"d:q": b"before"}, b"z1": {b"d:q": b"before"}}

    # a re-run changes nothing
    again = SetReadOnlyOperator(task_id="freeze", conn_id="hbase_source", tables=[table], readonly=True).execute({})
    assert again == [{"table": table, "readonly": True, "outcome": "unchanged", "statement": None}]

    SetReadOnlyOperator(task_id="unfreeze", conn_id="hbase_source", tables=[table], readonly=False).execute({})
    t.put(b"a2", {b"d:q": b"after"})
    assert t.row(b"a2") == {b"d:q": b"after"}
    conn.close()


def test_a_missing_table_refuses_the_freeze_and_changes_nothing(source):
    cluster, table = source
    with pytest.raises(ShellCommandError, match="Unknown table no_such_table"):
        SetReadOnlyOperator(task_id="freeze", conn_id="hbase_source", tables=[table, "no_such_table"],
                            readonly=True).execute({})
    assert readonly_states(cluster_from_text("source", cluster.connection_json), [table]) == {table: False}
    conn = cluster.connection()
    conn.table(table).put(b"k", {b"d:q": b"still writable"})
    conn.close()


def test_left_alone_when_not_applied(source):
    cluster, table = source
    result = SetReadOnlyOperator(task_id="finish", conn_id="hbase_source", tables=[table], readonly=False,
                                 apply=False).execute({})
    assert result == [{"table": table, "readonly": False, "outcome": "left", "statement": None}]


def test_describe_of_a_missing_table_is_an_error_not_a_writable_table(source):
    cluster, _ = source
    with pytest.raises((ShellCommandError, FreezeError)):
        readonly_states(cluster_from_text("source", cluster.connection_json), ["no_such_table"])


def test_the_cli_freezes_shows_and_unfreezes(source):
    import json
    import os
    import subprocess

    cluster, table = source

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hbase_migration", "freeze", "--source", "hbase_source",
                               "--tables", table, "--json", *args], capture_output=True, text=True, timeout=120,
                              env=os.environ)

    dry = cli("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == [{"table": table, "readonly": False, "outcome": "would_freeze",
                                       "statement": f"alter \"{table}\", READONLY => 'true'"}]
    assert json.loads(cli("--status").stdout) == {table: False}
    assert json.loads(cli().stdout)[0]["outcome"] == "frozen"
    assert json.loads(cli("--status").stdout) == {table: True}
    assert json.loads(cli("--unfreeze").stdout)[0]["outcome"] == "unfrozen"
    missing = subprocess.run([sys.executable, "-m", "hbase_migration", "freeze", "--source", "hbase_source",
                              "--tables", "no_such_table"], capture_output=True, text=True, timeout=120, env=os.environ)
    assert missing.returncode == 2, missing.stderr  # refused before any statement, as copy/verify refuse it
    assert missing.stderr.startswith("error: table(s) no_such_table do not exist on the source 'hbase_source' — ")
