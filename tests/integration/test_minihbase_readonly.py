"""READONLY tables in minihbase, enforced as HBase's `HRegion.checkReadOnly()` does: frozen with the `hbase shell
-n` lookalike (or the control API), every mutation through stock happybase answers IOError naming `region is read
only` (HBase's Thrift1 text), reads go on, nothing reaches the WAL; replicated edits are refused too and ship once
the table is writable again.
"""
from __future__ import annotations

import json
import subprocess
import sys

import happybase.connection
import pytest
import requests

from tests.polling import wait_for

pytestmark = pytest.mark.integration

Hbase = sys.modules[happybase.connection.Hbase.__module__]  # the IDL happybase loads
HBaseIOError = Hbase.IOError
SINGLE = ("org.apache.hadoop.hbase.DoNotRetryIOException: org.apache.hadoop.hbase.DoNotRetryIOException: "
          "region is read only")
BATCH = ("org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException: Failed {n} action{s}: "
         "org.apache.hadoop.hbase.DoNotRetryIOException: region is read only: {n} time{s}, "
         "servers with issues: {servers}")
REPLICATION = "Hadoop:service=HBase,name=RegionServer,sub=Replication"
WAL = "Hadoop:service=HBase,name=RegionServer,sub=WAL"


def shell(cluster, *statements: str, expect_rc: int = 0) -> list[str]:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == expect_rc, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return [line for line in proc.stdout.splitlines() if not line.startswith("Took ")]


def bean(rs: dict, name: str) -> dict:
    body = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": name}, timeout=10).json()
    return body["beans"][0]


def total(cluster, name: str, key: str) -> int:
    return sum(bean(rs, name).get(key, 0) for rs in cluster.region_servers if rs["alive"])


def servers_of(cluster, table: str) -> list[str]:
    """The servername of each region of the table, in key order."""
    return [r["server"] for r in cluster.status()["tables"][table]["regions"]]


def message(excinfo) -> str:
    text = excinfo.value.message
    return text.decode() if isinstance(text, bytes) else text


def batch_error(n: int, servers: list[str]) -> str:
    return BATCH.format(n=n, s="s" if n > 1 else "", servers=", ".join(dict.fromkeys(servers)))


def test_a_readonly_table_refuses_every_mutation_and_serves_reads(minihbase_dc1):
    cluster = minihbase_dc1
    shell(cluster, "create 'frozen', {NAME => 'cf', VERSIONS => 3}, SPLITS => ['m']")
    conn = cluster.connection()
    table = conn.table("frozen")
    table.put(b"a", {b"cf:q": b"1"})
    table.put(b"z", {b"cf:q": b"2"})
    table.counter_set(b"c", b"cf:n", 5)
    before = dict(table.scan())
    appended = total(cluster, WAL, "appendCount")

    out = shell(cluster, "alter 'frozen', READONLY => 'true'", "describe 'frozen'")
    assert out[:3] == ["Updating all regions with the new schema...", "2/2 regions updated.", "Done."]
    assert out[3:5] == ["Table frozen is ENABLED", "frozen, {TABLE_ATTRIBUTES => {READONLY => 'true'}}"]

    regions = servers_of(cluster, "frozen")
    # Single mutations (Table.put(Put), delete, increment, append, checkAndPut): the region server's
    # DoNotRetryIOException as HBase's client rethrows it, at once (no retry).
    single_writes = [
        lambda: conn.client.deleteAllRow(b"frozen", b"a", {}),
        lambda: table.counter_inc(b"c", b"cf:n"),                       # atomicIncrement
        lambda: conn.client.mutateRow(b"frozen", b"a", [Hbase.Mutation(column=b"cf:q", value=b"x")], {}),
        lambda: conn.client.mutateRowTs(b"frozen", b"a", [Hbase.Mutation(column=b"cf:q", isDelete=True)], 9, {}),
        lambda: conn.client.deleteAll(b"frozen", b"a", b"cf:q", {}),
        lambda: conn.client.append(Hbase.TAppend(table=b"frozen", row=b"a", columns=[b"cf:q"], values=[b"+"])),
        lambda: conn.client.checkAndPut(b"frozen", b"a", b"cf:q", b"1",
                                        Hbase.Mutation(column=b"cf:q", value=b"x"), {}),
        lambda: conn.client.checkAndPut(b"frozen", b"a", b"cf:q", b"not the value",  # checked before comparing
                                        Hbase.Mutation(column=b"cf:q", value=b"x"), {}),
    ]
    for write in single_writes:
        with pytest.raises(HBaseIOError) as e:
            write()
        assert message(e) == SINGLE
    # happybase's put and delete go through mutateRows(Ts) (Table.put(List) / delete(List)):
    # RetriesExhaustedWithDetailsException over every action.
    for write in (lambda: table.put(b"a", {b"cf:q": b"x"}), lambda: table.put(b"a", {b"cf:q": b"x"}, timestamp=7),
                  lambda: table.delete(b"a"), lambda: table.delete(b"a", columns=[b"cf:q"])):
        with pytest.raises(HBaseIOError) as e:
            write()
        assert message(e) == batch_error(1, [regions[0]])
    with pytest.raises(HBaseIOError) as e:
        with table.batch() as b:
            for row in (b"a", b"n", b"z"):
                b.put(row, {b"cf:q": b"batched"})
    assert message(e) == batch_error(3, [regions[0], regions[1], regions[1]])
    with pytest.raises(HBaseIOError) as e:
        with table.batch() as b:
            b.delete(b"z", columns=[b"cf:q"])
    assert message(e) == batch_error(1, [regions[1]])

    # Reads and scans go on; nothing changed and nothing was written to any WAL.
    assert table.row(b"a") == {b"cf:q": b"1"}
    assert table.row(b"c") == {b"cf:n": (5).to_bytes(8, "big")}  # happybase's counter_get increments by 0: a write
    assert dict(table.scan()) == before
    assert dict(table.scan(row_start=b"m")) == {b"z": {b"cf:q": b"2"}}
    assert total(cluster, WAL, "appendCount") == appended

    # Writable again (HBase 2.x syntax with a Ruby boolean): every kind of write works; describe keeps the value.
    out = shell(cluster, "alter 'frozen', READONLY => false", "describe 'frozen'")
    assert out[4] == "frozen, {TABLE_ATTRIBUTES => {READONLY => 'false'}}"
    table.put(b"a", {b"cf:q": b"3"})
    with table.batch() as b:
        b.put(b"n", {b"cf:q": b"batched"})
        b.delete(b"z", columns=[b"cf:q"])
    assert table.counter_inc(b"c", b"cf:n") == 6
    assert conn.client.checkAndPut(b"frozen", b"a", b"cf:q", b"3", Hbase.Mutation(column=b"cf:q", value=b"4"), {})
    assert dict(table.scan()) == {b"a": {b"cf:q": b"4"}, b"c": {b"cf:n": (6).to_bytes(8, "big")},
                                  b"n": {b"cf:q": b"batched"}}
    assert total(cluster, WAL, "appendCount") == appended + 5  # a, n, z, the counter, checkAndPut
    conn.close()


def test_create_readonly_and_the_control_endpoint(minihbase_dc1):
    cluster = minihbase_dc1
    out = shell(cluster, "create 'born_frozen', 'cf', READONLY => true", "describe 'born_frozen'")
    assert out[0] == "Created table born_frozen"
    assert out[2] == "born_frozen, {TABLE_ATTRIBUTES => {READONLY => 'true'}}"
    conn = cluster.connection()
    table = conn.table("born_frozen")
    with pytest.raises(HBaseIOError, match="region is read only"):
        table.put(b"r", {b"cf:q": b"v"})

    assert cluster.alter_table("born_frozen", readonly=False) == {
        "table": "born_frozen", "readonly": False, "attributes": {"READONLY": "false"}}
    table.put(b"r", {b"cf:q": b"v"})
    assert table.row(b"r") == {b"cf:q": b"v"}
    assert cluster.alter_table("born_frozen", readonly=True)["readonly"] is True
    with pytest.raises(HBaseIOError, match="region is read only"):
        table.delete(b"r")
    conn.close()

    url = cluster.endpoints["control_url"] + "/control/alter-table"
    bad = requests.post(url, json={"table": "born_frozen", "readonly": "yes"}, timeout=10)
    assert bad.status_code == 400 and bad.json() == {"error": "readonly must be true or false, got 'yes'"}
    unknown = requests.post(url, json={"table": "born_frozen", "readonly": True, "max_filesize": 1}, timeout=10)
    assert unknown.status_code == 400 and "max_filesize" in unknown.json()["error"]
    missing = requests.post(url, json={"table": "nope", "readonly": True}, timeout=10)
    assert missing.status_code == 409
    assert missing.json() == {"error": "org.apache.hadoop.hbase.TableNotFoundException: nope"}
    out = shell(cluster, "alter 'born_frozen', MAX_FILESIZE => '1'", expect_rc=1)  # the master's sanity check
    assert out[-1] == ("ERROR: org.apache.hadoop.hbase.DoNotRetryIOException: MAX_FILESIZE for table descriptor or "
                       "\"hbase.hregion.max.filesize\" (1) is too small, which might cause over splitting into "
                       "unmanageable number of regions. Set hbase.table.sanity.checks to false at conf or table "
                       "descriptor if you want to bypass sanity checks")


def test_readonly_is_kept_in_the_descriptor_across_a_restart(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1)
    cluster.create_table("kept", {"cf": {}})
    conn = cluster.connection()
    conn.table("kept").put(b"r", {b"cf:q": b"v"})
    conn.close()
    cluster.alter_table("kept", readonly=True)
    tableinfo = cluster.local_rootdir / "data" / "default" / "kept" / ".tabledesc" / ".tableinfo.0000000001"
    assert json.loads(tableinfo.read_text())["readonly"] is True

    cluster.restart()
    conn = cluster.connection()
    table = conn.table("kept")
    assert table.row(b"r") == {b"cf:q": b"v"}
    with pytest.raises(HBaseIOError) as e:
        conn.client.deleteAllRow(b"kept", b"r", {})
    assert message(e) == SINGLE
    conn.close()
    assert shell(cluster, "describe 'kept'")[1] == "kept, {TABLE_ATTRIBUTES => {READONLY => 'true'}}"


def test_replicated_edits_wait_while_the_peer_table_is_readonly(minihbase_pair):
    dc1, dc2 = minihbase_pair
    create = "create 'repl_frozen', {NAME => 'cf', REPLICATION_SCOPE => 1}, SPLITS => ['m']"
    shell(dc1, create)
    shell(dc2, create)
    shell(dc1, f"add_peer 'ro1', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'repl_frozen' => []}}")
    src = dc1.connection().table("repl_frozen")
    dst = dc2.connection().table("repl_frozen")
    src.put(b"a0", {b"cf:q": b"first"}, timestamp=1000)
    wait_for(lambda: dst.row(b"a0") == {b"cf:q": b"first"}, what="the first edit on dc2")

    def source(key: str) -> list[int]:
        return [bean(rs, REPLICATION).get(f"source.ro1.{key}", 0) for rs in dc1.region_servers if rs["alive"]]

    shipped = sum(source("shippedOps"))
    failed = sum(source("failedBatches"))
    shell(dc2, "alter 'repl_frozen', READONLY => 'true'")
    logged = total(dc2, WAL, "appendCount")
    expected = {b"a0": {b"cf:q": b"first"}}
    for i in range(1, 10):
        for prefix in (b"a", b"z"):
            src.put(prefix + b"%d" % i, {b"cf:q": b"v%d" % i}, timestamp=2000 + i)
            expected[prefix + b"%d" % i] = {b"cf:q": b"v%d" % i}
    dc1.roll_wals()  # the WAL holding the refused edits cannot leave the queue

    # The sink refuses every batch: the sources retry, nothing ships, their queues stay, the age grows.
    wait_for(lambda: sum(source("failedBatches")) >= failed + 3, what="failed batches on dc1")
    age = max(source("ageOfLastShippedOp"))
    wait_for(lambda: max(source("ageOfLastShippedOp")) >= age + 1000, what="a growing ageOfLastShippedOp")
    assert max(source("sizeOfLogQueue")) >= 2
    assert sum(source("shippedOps")) == shipped
    assert dict(dst.scan()) == {b"a0": {b"cf:q": b"first"}}
    assert total(dc2, WAL, "appendCount") == logged  # the refused edits were never logged

    # Writable again: the backlog ships with its timestamps, the queues drain.
    shell(dc2, "alter 'repl_frozen', READONLY => 'false'")
    wait_for(lambda: dict(dst.scan()) == expected, what="the backlog on dc2")
    assert dst.row(b"z9", include_timestamp=True) == {b"cf:q": (b"v9", 2009)}
    wait_for(lambda: max(source("sizeOfLogQueue")) == 1, what="drained queues")
    assert sum(source("shippedOps")) >= shipped + 18
    shell(dc1, "remove_peer 'ro1'")
