"""minihbase replication end to end, driven as an operator drives HBase: stock happybase for data, the
`hbase shell -n` lookalike for tables and peers, `/jmx` for metrics, ZooKeeper for queues.

dc1 (2 region servers) replicates to dc2 (1 region server); each test uses its own tables and peer ids.
"""
from __future__ import annotations

import subprocess
import sys
import time
import uuid

import happybase.connection
import pytest
import requests
from kazoo.client import KazooClient

from minihbase.replication import codec
from minihbase.testing import MiniCluster
from tests.polling import wait_for

pytestmark = pytest.mark.integration

HBaseIOError = sys.modules[happybase.connection.Hbase.__module__].IOError  # the IDL happybase loads
BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Replication"
FAST = dict(log_cleaner_ttl_s=0.2, log_cleaner_interval_s=600.0, replication_failover_delay_s=0.2)



def shell(cluster, *statements: str, expect_rc: int = 0) -> str:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == expect_rc, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def beans(cluster) -> dict[str, dict]:
    """servername -> replication bean of every live region server."""
    out = {}
    for rs in cluster.region_servers:
        if rs["alive"]:
            body = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": BEAN}, timeout=10)
            out[rs["servername"]] = body.json()["beans"][0]
    return out


def total(cluster, key: str) -> int:
    return sum(b.get(key, 0) for b in beans(cluster).values())


@pytest.fixture(scope="module")
def pair(zookeeper, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("replication")
    suffix = uuid.uuid4().hex[:8]
    dc1 = MiniCluster.start(zookeeper.hosts, workdir, name="dc1", znode_parent=f"/hbase-dc1-{suffix}",
                            region_servers=2, wal_roll_size_bytes=64 << 10, **FAST)
    try:
        dc2 = MiniCluster.start(zookeeper.hosts, workdir, name="dc2", znode_parent=f"/hbase-dc2-{suffix}",
                                region_servers=1, **FAST)
    except BaseException:
        dc1.stop()
        raise
    yield dc1, dc2
    dc2.stop()
    dc1.stop()


@pytest.fixture
def zk(zookeeper):
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def create_both(dc1, dc2, statement: str) -> None:
    shell(dc1, statement)
    shell(dc2, statement)


def cells(table, row: bytes) -> dict:
    """Every version of every column of a row, with timestamps (happybase `cells` per column)."""
    out = {}
    for column in table.row(row):
        out[column] = table.cells(row, column, versions=10, include_timestamp=True)
    return out


def snapshot(table) -> dict:
    return {key: cells(table, key) for key, _ in table.scan()}


def queues(zk, cluster) -> dict[str, dict[str, list[str]]]:
    """replicator -> queue id -> WAL names; read again if a claim moved a node while we listed."""
    from kazoo.exceptions import NoNodeError

    base = f"{cluster.znode_parent}/replication/rs"
    for _ in range(20):
        try:
            return {rs: {q: sorted(zk.get_children(f"{base}/{rs}/{q}")) for q in zk.get_children(f"{base}/{rs}")
                         if q != "lock"} for rs in zk.get_children(base)}
        except NoNodeError:
            continue
    raise AssertionError("the queues kept changing while being listed")


def test_disabled_peer_queues_everything_and_enable_ships_it_with_original_timestamps(pair, zk):
    dc1, dc2 = pair
    create_both(dc1, dc2, "create 'orders', {NAME => 'd', VERSIONS => 3, REPLICATION_SCOPE => 1}, "
                          "SPLITS => ['m']")
    dc1.roll_wals()
    shell(dc1, f"add_peer '1', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'orders' => []}}, "
               "STATE => 'DISABLED'")
    # Every live region server has a queue for the peer holding its current WAL.
    wait_for(lambda: all("1" in q and len(q["1"]) == 1 for q in queues(zk, dc1).values()), what="queues")
    before = {sn: b["source.1.sizeOfLogQueue"] for sn, b in beans(dc1).items()}
    assert before == {sn: 1 for sn in before}

    src = dc1.connection().table("orders")
    for i in range(200):
        src.put(b"a%03d" % i, {b"d:v": b"one"}, timestamp=1_000 + i)
        src.put(b"z%03d" % i, {b"d:v": b"one", b"d:w": b"w"}, timestamp=1_000 + i)
    for i in range(0, 200, 2):
        src.put(b"a%03d" % i, {b"d:v": b"two"}, timestamp=5_000 + i)  # overwrites: a newer version
    src.delete(b"a001")  # a whole row
    src.delete(b"z002", columns=[b"d:w"])  # one column, every version
    src.put(b"a003", {b"d:v": b"three"}, timestamp=1_003)  # same timestamp: replaces the value
    dc1.roll_wals()
    for i in range(50):
        src.put(b"m%03d" % i, {b"d:v": b"after roll"})  # server timestamps
    dc1.roll_wals()

    # Disabled: nothing shipped, every queue grew (3 WALs: the first two rolled, the one being written).
    dst = dc2.connection().table("orders")
    assert list(dst.scan()) == []
    grown = beans(dc1)
    assert {sn: b["source.1.sizeOfLogQueue"] for sn, b in grown.items()} == {sn: 3 for sn in grown}
    assert all(b["source.1.shippedOps"] == 0 and b["source.1.logEditsRead"] == 0 for b in grown.values())
    assert all(len(q["1"]) == 3 for q in queues(zk, dc1).values())
    assert "DISABLED" in shell(dc1, "list_peers")

    expected = snapshot(src)
    shell(dc1, "enable_peer '1'")
    wait_for(lambda: snapshot(dst) == expected, what="every edit on dc2")
    assert dst.row(b"a000", include_timestamp=True) == {b"d:v": (b"two", 5_000)}
    assert dst.cells(b"a000", b"d:v", versions=3, include_timestamp=True) == [(b"two", 5_000), (b"one", 1_000)]
    assert dst.row(b"a001") == {} and dst.row(b"z002") == {b"d:v": b"one"}
    assert dst.row(b"a003", include_timestamp=True) == {b"d:v": (b"three", 1_003)}

    # Drained: back to the WAL being written, positions past everything shipped.
    wait_for(lambda: all(b["source.1.sizeOfLogQueue"] == 1 for b in beans(dc1).values()), what="drain")
    assert all(len(q["1"]) == 1 for q in queues(zk, dc1).values())
    src.put(b"fresh", {b"d:v": b"now"})
    wait_for(lambda: dst.row(b"fresh") == {b"d:v": b"now"}, what="a fresh edit")
    after = beans(dc1)
    ages = [b["source.1.ageOfLastShippedOp"] for b in after.values() if b["source.1.shippedOps"]]
    assert ages and min(ages) < 10_000
    # 200 + 200 + 100 + 3 deletes/puts + 50 + 1 entries, one entry per row mutation.
    assert sum(b["source.1.shippedOps"] for b in after.values()) == 554
    assert sum(b["source.1.logEditsRead"] for b in after.values()) == 554
    assert sum(b["source.1.shippedBatches"] for b in after.values()) >= 2
    assert total(dc2, "sink.appliedOps") >= 554

    shell(dc1, "remove_peer '1'")
    wait_for(lambda: not any(k.startswith("source.1.") for b in beans(dc1).values() for k in b),
             what="per-peer metrics to vanish")
    wait_for(lambda: all(q == {} for q in queues(zk, dc1).values()), what="queues deleted")


def test_filtering_by_scope_table_cfs_and_namespaces(pair):
    dc1, dc2 = pair
    create_both(dc1, dc2, "create 'mixed', {NAME => 'rep', REPLICATION_SCOPE => '1'}, {NAME => 'loc'}")
    create_both(dc1, dc2, "create 'outside', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    dc1.roll_wals()  # a fresh WAL: the new queue starts there, so the counts below are exact
    shell(dc1, f"add_peer '2', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'mixed' => []}}")
    wait_for(lambda: all("source.2.sizeOfLogQueue" in b for b in beans(dc1).values()), what="sources")
    read0, filtered0 = total(dc1, "source.2.logEditsRead"), total(dc1, "source.2.logEditsFiltered")

    conn = dc1.connection()
    mixed, outside = conn.table("mixed"), conn.table("outside")
    for i in range(30):
        mixed.put(b"loc%02d" % i, {b"loc:q": b"local only"})  # scope 0: filtered
        outside.put(b"o%02d" % i, {b"cf:q": b"not in TABLE_CFS"})  # filtered
        mixed.put(b"both%02d" % i, {b"rep:q": b"shipped", b"loc:q": b"kept home"})  # the rep cell ships
    mixed.put(b"marker", {b"rep:q": b"done"})

    dst = dc2.connection()
    wait_for(lambda: dst.table("mixed").row(b"marker"), what="the marker")
    wait_for(lambda: total(dc1, "source.2.logEditsRead") - read0 == 91, what="every edit read")
    assert total(dc1, "source.2.logEditsFiltered") - filtered0 == 60
    assert dict(dst.table("mixed").scan()) == {**{b"both%02d" % i: {b"rep:q": b"shipped"} for i in range(30)},
                                               b"marker": {b"rep:q": b"done"}}
    assert list(dst.table("outside").scan()) == []

    # A changed TABLE_CFS reaches the region servers through their watches.
    shell(dc1, "append_peer_tableCFs '2', {'outside' => []}")
    wait_for(lambda: "outside" in shell(dc1, "show_peer_tableCFs '2'"), what="the new table-CFs")
    wait_for(lambda: (outside.put(b"late", {b"cf:q": b"now shipped"}) or
                      dst.table("outside").row(b"late", columns=[b"cf:q"])), timeout=30,
             what="edits of the appended table")
    shell(dc1, "remove_peer '2'")


def test_master_master_does_not_loop(pair):
    dc1, dc2 = pair
    create_both(dc1, dc2, "create 'mm', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    dc1.roll_wals()
    dc2.roll_wals()
    shell(dc1, f"add_peer '3', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'mm' => []}}")
    shell(dc2, f"add_peer '3', CLUSTER_KEY => \"{dc1.cluster_key}\", TABLE_CFS => {{'mm' => []}}")
    wait_for(lambda: all("source.3.sizeOfLogQueue" in b for b in beans(dc1).values())
             and all("source.3.sizeOfLogQueue" in b for b in beans(dc2).values()), what="sources")
    t1, t2 = dc1.connection().table("mm"), dc2.connection().table("mm")
    for i in range(40):
        t1.put(b"from1-%02d" % i, {b"cf:q": b"dc1"}, timestamp=10 + i)
        t2.put(b"from2-%02d" % i, {b"cf:q": b"dc2"}, timestamp=10 + i)
    wait_for(lambda: len(list(t1.scan())) == 80 and len(list(t2.scan())) == 80, what="both sides complete")
    # Each side ships only its own edits; the other side's come back tagged with its cluster id and are
    # filtered, so nothing ping-pongs.
    def settled(cluster) -> bool:  # every entry read, and each batch read shipped (the count follows the POST)
        return (total(cluster, "source.3.logEditsRead") == 80
                and total(cluster, "source.3.shippedOps") + total(cluster, "source.3.logEditsFiltered") >= 80)

    # (waiting for the reads alone raced the last batch's shipping under load: shippedOps 4 of 40, 2026-11-30)
    wait_for(lambda: settled(dc1) and settled(dc2), what="every WAL entry read and shipped or filtered on both sides")
    for cluster in (dc1, dc2):
        assert total(cluster, "source.3.shippedOps") == 40
        assert total(cluster, "source.3.logEditsFiltered") == 40
    assert dict(t1.scan(include_timestamp=True)) == dict(t2.scan(include_timestamp=True))
    shell(dc1, "remove_peer '3'")
    shell(dc2, "remove_peer '3'")


def test_bandwidth_throttles_shipping(pair):
    dc1, dc2 = pair
    create_both(dc1, dc2, "create 'slow', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(dc1, f"add_peer '4', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'slow' => []}}, "
               "STATE => 'DISABLED'", "set_peer_bandwidth '4', 20000")
    assert " 20000 false" in shell(dc1, "list_peers")
    src, dst = dc1.connection().table("slow"), dc2.connection().table("slow")
    with src.batch() as b:
        for i in range(50):
            b.put(b"r%03d" % i, {b"cf:q": b"x" * 900})  # ~48 KB of WAL records, all on one region server
    shell(dc1, "enable_peer '4'")
    started = time.monotonic()
    wait_for(lambda: len(list(dst.scan())) == 50, what="the throttled rows")
    # 20 kB/s (per region server and peer): ~48 kB cannot arrive in much less than ~2.4 s.
    assert time.monotonic() - started > 1.5
    shell(dc1, "remove_peer '4'")


def test_retention_keeps_queued_wals_until_the_peer_is_removed(pair, zk):
    dc1, dc2 = pair
    create_both(dc1, dc2, "create 'kept', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(dc1, f"add_peer '5', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'kept' => []}}, "
               "STATE => 'DISABLED'")
    wait_for(lambda: all("5" in q for sn, q in queues(zk, dc1).items()), what="queues")
    table = dc1.connection().table("kept")
    old_dir = dc1.local_rootdir / "oldWALs"
    for round_ in range(4):
        with table.batch() as b:
            for i in range(200):
                b.put(b"r%d-%03d" % (round_, i), {b"cf:q": b"x" * 200})
        dc1.flush("kept")
        dc1.roll_wals()  # flushed and rolled: the old WALs move to oldWALs
    queued = {w for q in queues(zk, dc1).values() for w in q.get("5", [])}
    wait_for(lambda: len({p.name for p in old_dir.iterdir()} & queued) >= 6, what="archived queued WALs")
    # Past the 0.2 s TTL, only the replication cleaner's veto can keep a file.
    wait_for(lambda: all(time.time() - p.stat().st_mtime > 0.3 for p in old_dir.iterdir()), 10, "the TTL to pass")
    dc1.run_log_cleaner()
    archived = {p.name for p in old_dir.iterdir()}
    # Unqueued WALs (older tests' peers are gone) were deleted; no queued WAL was: each is live or archived.
    assert archived and archived <= queued, f"unqueued WALs survived the cleaner: {archived - queued}"
    assert all(w in archived or _live_wal(dc1, w) for w in queued)
    status = shell(dc1, "status 'replication'")
    assert "SizeOfLogQueue=5" in status and "Normal Queue: 5" in status

    shell(dc1, "remove_peer '5'")
    wait_for(lambda: not any("5" in q for q in queues(zk, dc1).values()), what="queues of the removed peer")
    wait_for(lambda: not dc1.run_log_cleaner() and not any(old_dir.iterdir()) or None,
             what="the cleaner to free oldWALs")


def _live_wal(cluster, name: str) -> bool:
    return any((cluster.local_rootdir / "WALs" / rs["servername"] / name).exists() for rs in cluster.region_servers)


def test_a_disabled_peer_fills_the_quota_until_the_region_server_aborts(minihbase_factory, pair, zk):
    _, dc2 = pair
    cluster = minihbase_factory("dc3", region_servers=1, wal_roll_size_bytes=32 << 10,
                                memstore_flush_size_bytes=64 << 10, block_size_bytes=4096,
                                log_cleaner_interval_s=0.2, log_cleaner_ttl_s=0.1, client_retry_s=1.0)
    shell(cluster, "create 'fill', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(cluster, f"add_peer '6', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'fill' => []}}, "
                   "STATE => 'DISABLED'")
    used = requests.get(f"{cluster.webhdfs_url}/webhdfs/v1/hbase", params={"op": "GETCONTENTSUMMARY"},
                        timeout=10).json()["ContentSummary"]["spaceConsumed"]
    quota = used + 3_000_000
    cluster.set_quota("/hbase", space_bytes=quota)
    table = cluster.connection().table("fill")
    with pytest.raises(HBaseIOError):  # the append, a roll or a flush hits the quota: the server aborts
        for i in range(20_000):
            table.put(b"r%05d" % i, {b"cf:v": b"x" * 1000})
    server = cluster.status()["region_servers"][0]
    assert server["state"] == "aborted" and "DSQuotaExceededException" in server["abort_reason"]
    queued = {w for q in queues(zk, cluster).values() for w in q.get("6", [])}
    archived = {p.name for p in (cluster.local_rootdir / "oldWALs").iterdir()}
    assert len(archived) >= 3 and archived <= queued  # every archived WAL is still pinned by the queue


def test_failover_claims_the_dead_servers_queue_and_loses_nothing(minihbase_factory, pair, zk):
    _, dc2 = pair
    cluster = minihbase_factory("dc4", region_servers=2, replication_failover_delay_s=0.2)
    shell(cluster, "create 'fo', {NAME => 'cf', REPLICATION_SCOPE => 1}, SPLITS => ['m']")
    shell(dc2, "create 'fo', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(cluster, f"add_peer '7', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'fo' => []}}, "
                   "STATE => 'DISABLED'")
    table = cluster.connection().table("fo")
    rows = {}
    for prefix in (b"a", b"z"):  # both regions, so both servers hold a backlog
        for i in range(150):
            rows[prefix + b"%03d" % i] = {b"cf:q": b"v%d" % i}
            table.put(prefix + b"%03d" % i, rows[prefix + b"%03d" % i], timestamp=7_000 + i)
    victim = cluster.region_servers[0]["servername"]
    survivor = cluster.region_servers[1]["servername"]
    wait_for(lambda: all("7" in q for q in queues(zk, cluster).values()) and len(queues(zk, cluster)) == 2,
             what="both queues")
    cluster.kill_rs(0)

    recovered = f"7-{victim}"
    claimed = wait_for(lambda: queues(zk, cluster).get(survivor, {}).get(recovered), what="the claim")
    assert claimed and victim not in queues(zk, cluster)
    bean = beans(cluster)[survivor]
    assert bean[f"source.{recovered}.sizeOfLogQueue"] >= 1
    assert f"Recovered Queue: {recovered}" in shell(cluster, "status 'replication'")

    shell(cluster, "enable_peer '7'")
    dst = dc2.connection().table("fo")
    wait_for(lambda: dict(dst.scan()) == rows, what="every edit, the dead server's included")
    assert dst.row(b"a000", include_timestamp=True) == {b"cf:q": (b"v0", 7_000)}
    # The recovered queue finishes: its znode and its metrics go.
    wait_for(lambda: recovered not in queues(zk, cluster).get(survivor, {}), what="the recovered queue to end")
    wait_for(lambda: not any(k.startswith(f"source.{recovered}.") for k in beans(cluster)[survivor]),
             what="the recovered queue's metrics to go")
    assert total(cluster, "source.completedRecoverQueues") == 1
    shell(cluster, "remove_peer '7'")


def test_peer_znodes_are_hbase_bytes(pair, zk):
    dc1, dc2 = pair
    shell(dc1, f"add_peer '8', CLUSTER_KEY => \"{dc2.cluster_key}\", STATE => 'DISABLED', SERIAL => true, "
               "CONFIG => {'hbase_migration.owner' => 'me'}")
    base = f"{dc1.znode_parent}/replication/peers/8"
    state, _ = zk.get(base + "/peer-state")
    assert state[0] == 0xFF and codec.strip_metadata(state) == b"PBUF\x08\x01"
    config = codec.decode_peer(zk.get(base)[0])
    assert (config.cluster_key, config.replicate_all, config.serial, config.configuration) == (
        dc2.cluster_key, True, True, {"hbase_migration.owner": "me"})
    shell(dc1, "enable_peer '8'")
    assert codec.strip_metadata(zk.get(base + "/peer-state")[0]) == b"PBUF\x08\x00"
    wait_for(lambda: all(b.get("source.8.isInitializing") == 0 for b in beans(dc1).values()), what="sources")
    shell(dc1, "remove_peer '8'")
    assert zk.exists(base) is None


def test_chained_failover_when_the_claimer_dies_too(minihbase_factory, pair, zk):
    _, dc2 = pair
    cluster = minihbase_factory("dc5", region_servers=3, replication_failover_delay_s=0.2)
    shell(cluster, "create 'chain', {NAME => 'cf', REPLICATION_SCOPE => 1}, SPLITS => ['h', 'p']")
    shell(dc2, "create 'chain', {NAME => 'cf', REPLICATION_SCOPE => 1}")
    shell(cluster, f"add_peer '9', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'chain' => []}}, "
                   "STATE => 'DISABLED'")
    table = cluster.connection().table("chain")
    rows = {}
    for prefix in (b"a", b"k", b"t"):  # one region per server: three backlogs
        for i in range(100):
            rows[prefix + b"%03d" % i] = {b"cf:q": prefix}
            table.put(prefix + b"%03d" % i, {b"cf:q": prefix}, timestamp=9_000 + i)
    names = [rs["servername"] for rs in cluster.region_servers]
    first = names[0]
    cluster.kill_rs(0)
    claimer = wait_for(lambda: next((sn for sn, q in queues(zk, cluster).items() if f"9-{first}" in q), None),
                       what="the first claim")
    cluster.kill_rs(names.index(claimer))
    last = next(sn for sn in names if sn not in (first, claimer))
    # The last server holds its own queue, the claimer's, and the first dead server's chained through both.
    wait_for(lambda: set(queues(zk, cluster).get(last, {})) == {"9", f"9-{claimer}", f"9-{first}-{claimer}"},
             what="the chained claim")
    assert set(queues(zk, cluster)) == {last}
    shell(cluster, "enable_peer '9'")
    dst = dc2.connection().table("chain")
    wait_for(lambda: dict(dst.scan()) == rows, what="every edit of the three servers")
    wait_for(lambda: set(queues(zk, cluster)[last]) == {"9"}, what="the recovered queues to finish")
    shell(cluster, "remove_peer '9'")
