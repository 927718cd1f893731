"""HBase's synchronous replication (HBASE-19064) on real HBase 3.x (the realhbase test bed with
`REALHBASE_VERSION=3.0.0-alpha-4`; `make test-sync-replication`), driven by `replication/sync_replication.py`'s
statements through the toolkit's shell channel:

* the failover: a sync peer on both clusters, each naming a remote WAL directory on the other's HDFS; dc2 STANDBY,
  dc1 ACTIVE; clients writing to dc1 and recording every put HBase acknowledged; every JVM of dc1 (its master with
  its NameNode and DataNode, region servers, gateways) SIGKILLed mid-writes; dc2 transited to DOWNGRADE_ACTIVE:
  every acknowledged put is read back from dc2 with its value and timestamp. The peer's ordinary (asynchronous)
  shipping is disabled on dc1 during the writes, so none of them can reach dc2 that way: what dc2 has, it has from
  the remote WAL. DOWNGRADE_ACTIVE -> ACTIVE is refused while dc1's HDFS is gone; once dc1 is started again it goes
  to STANDBY and dc2 to ACTIVE.
* the planned switch, both clusters up: dc1 STANDBY (the write fence), dc2 DOWNGRADE_ACTIVE, dc2 ACTIVE; every
  write dc1 acknowledged is on dc2; a transition HBase refuses is the one `sync_replication.check_steps` refuses.

Skipped, with the reason `sync_replication.check_support` gives, unless the running servers (their `rs/` znodes'
versions) and their shells have synchronous replication: HBase 2.x has none. Each test has its own table and peer
id. Timings are printed (one JSON line each), never asserted.
"""
from __future__ import annotations

import json
import re
import threading
import time
import uuid

import pytest

from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow, pytest.mark.full,
              pytest.mark.timeout(1500)]  # the bed's start, a datacenter killed and started again

FAMILY = "f"


@pytest.fixture(scope="module")
def bed(realhbase):
    """(the RealHBase bed, its endpoints, {name: Cluster}) when both clusters have synchronous replication."""
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.replication.sync_replication import check_support

    eps = realhbase.endpoints()
    clusters = {n: cluster_from_text(n, json.dumps(eps[n]["connection"])) for n in ("dc1", "dc2")}
    for ask_shells in (False, True):  # the servers' versions first (free), then one shell call per cluster
        support = check_support(clusters["dc1"], clusters["dc2"], ask_shells=ask_shells)
        if not support.supported:
            pytest.skip(f"the test bed runs HBase {eps['dc1']['hbase_version']}, which cannot do synchronous "
                        f"replication: {'; '.join(support.reasons)}. Run it on HBase 3.x: make test-sync-replication")
    return realhbase, eps, clusters


class AckedWriter:
    """Threads putting one cell per new row to a cluster's Thrift2 gateway, each with a timestamp and a value of
    its own. A put is acknowledged when the call returned; a thread stops at its first failed put, which is kept
    apart (in flight: HBase may or may not have it)."""

    def __init__(self, endpoint: dict, table: str, threads: int = 3):
        self.endpoint, self.table, self.threads = endpoint, table, threads
        self.acked: list[tuple[bytes, int, bytes]] = []
        self.unacked: list[tuple[bytes, int, bytes, str]] = []
        self._lock, self._stop, self._workers = threading.Lock(), threading.Event(), []

    def start(self) -> "AckedWriter":
        self.started = time.monotonic()
        self._workers = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)]
        for worker in self._workers:
            worker.start()
        return self

    def _run(self, index: int) -> None:
        from demo.workload import Thrift2

        client = Thrift2(self.endpoint, timeout_ms=60_000)
        try:
            seq = 0
            while not self._stop.is_set():
                row = f"w{index}-{seq:07d}".encode()
                ts = int(time.time() * 1000)
                value = f"{row.decode()}@{ts}:{uuid.uuid4().hex[:8]}".encode()
                try:
                    client.put(self.table, [(row, {f"{FAMILY}:q".encode(): value}, ts)])
                except Exception as e:  # the gateway killed, or the cluster fenced (STANDBY)
                    with self._lock:
                        self.unacked.append((row, ts, value, f"{type(e).__name__}: {str(e)[:300]}"))
                    return
                with self._lock:
                    self.acked.append((row, ts, value))
                seq += 1
        finally:
            try:
                client.close()
            except Exception:
                pass

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def wait_stopped(self, timeout: float = 120.0) -> None:
        """Every thread has ended (by its first failed put)."""
        wait_for(lambda: not any(w.is_alive() for w in self._workers), timeout, "the writers to stop")
        self.seconds = time.monotonic() - self.started

    def stop(self) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(120)


def read_back(endpoint: dict, table: str, rows: list[bytes]) -> dict[bytes, list[tuple[int, bytes]]]:
    """row -> [(timestamp, value)] of FAMILY:q on that cluster, newest version only (every row we wrote has one)."""
    from demo.workload import Thrift2, idl

    T, client, found = idl(), Thrift2(endpoint, timeout_ms=120_000), {}
    try:
        for start in range(0, len(rows), 500):
            chunk = rows[start:start + 500]
            for result in client.client.getMultiple(table.encode(), [T.TGet(row=r, maxVersions=1) for r in chunk]):
                if result.row:
                    found[result.row] = [(c.timestamp, c.value) for c in result.columnValues or []]
    finally:
        client.close()
    return found


def states(where, peer: str) -> str | None:
    """The peer's SYNC_REPLICATION_STATE as `list_peers` shows it (None: no such peer), in an open shell session
    or in a shell of its own on a cluster."""
    from hbase_migration.clusters import channels
    from hbase_migration.replication.shell_parsers import parse_list_peers

    if hasattr(where, "run"):
        out = where.run(["list_peers"], timeout_s=300).stdout
    else:
        out = channels.shell(where, ["list_peers"], timeout_s=300).stdout
    return next((p.sync_replication_state for p in parse_list_peers(out) if p.peer_id == peer), None)


def set_up(eps, clusters, table: str, peer: str) -> None:
    """The table on both clusters (its family replicated) and the sync peer on both, each naming the other's
    remote WAL directory; created in DOWNGRADE_ACTIVE on both."""
    from hbase_migration.clusters import channels
    from hbase_migration.replication import sync_replication as sr

    other = {"dc1": "dc2", "dc2": "dc1"}
    for name, cluster in clusters.items():
        nn = eps[other[name]]["namenode"]
        remote = sr.remote_wal_dir(f"hdfs://{nn['host']}:{nn['port']}", eps[other[name]]["rootdir"])
        channels.shell(cluster, [f"create '{table}', {{NAME => '{FAMILY}', REPLICATION_SCOPE => 1}}",
                                 sr.add_sync_peer_statement(peer, eps[other[name]]["cluster_key"], remote, [table])],
                       timeout_s=600)


def transit(session, peer: str, state: str) -> float:
    """One transition in an open shell (its JVM start not counted); its seconds."""
    from hbase_migration.replication.sync_replication import transit_statement

    started = time.monotonic()
    session.run([transit_statement(peer, state)], timeout_s=600)
    return round(time.monotonic() - started, 1)


def refused_put(endpoint: dict, table: str) -> str:
    """The error a client gets for a put to a cluster that must refuse it (STANDBY); fails if it is accepted."""
    from demo.workload import Thrift2

    client = Thrift2(endpoint, timeout_ms=120_000)
    try:
        with pytest.raises(Exception) as refused:
            client.put(table, [(b"refused-" + uuid.uuid4().hex.encode(), {f"{FAMILY}:q".encode(): b"x"}, None)])
    finally:
        client.close()
    return str(refused.value)


def refused_transition(session, peer: str, state: str) -> str:
    """A transition HBase must refuse, run in an open shell with its error caught there (the session lives on);
    HBase's error, its class and first line. Fails if HBase did it."""
    from hbase_migration.replication.sync_replication import transit_statement

    # the markers are built in Ruby so that the shell's echo of the statement does not contain them
    out = session.run([f"begin; {transit_statement(peer, state)}; puts 'HM_' + 'TRANSITED'; "
                       "rescue Exception, java.lang.Throwable => e; "
                       "puts 'HM_' + 'REFUSED ' + e.class.to_s + ': ' + e.message.to_s.lines.first.to_s.strip; end"],
                      timeout_s=600).stdout
    # what `puts` prints may follow the shell's `Took N seconds` on the same line
    said = re.findall(r"HM_(REFUSED [^\n]*|TRANSITED)", out)
    assert said and said[-1].startswith("REFUSED "), out
    return said[-1][len("REFUSED "):]


def dismantle(bed, clusters, table: str, peer: str) -> None:
    """Whatever a test left, undone: the source started again if it is down, the peer brought to DOWNGRADE_ACTIVE
    on both sides (ACTIVE ones first: HBase removes a sync peer only from there) and removed, the table dropped."""
    from hbase_migration.clusters import channels
    from hbase_migration.replication.sync_replication import transit_statement

    if not any(role.startswith("dc1/") for role in bed.running()):
        bed.start_cluster("dc1")
    now = {name: states(cluster, peer) for name, cluster in clusters.items()}
    for name in sorted(now, key=lambda n: now[n] != "ACTIVE"):
        statements = []
        if now[name] in ("ACTIVE", "STANDBY"):
            statements.append(transit_statement(peer, "DOWNGRADE_ACTIVE"))
        if now[name] is not None:
            statements.append(f"remove_peer '{peer}'")
        channels.shell(clusters[name], statements + [f"disable '{table}'", f"drop '{table}'"], timeout_s=600)


def test_failover_with_the_source_datacenter_killed_mid_writes_keeps_every_acknowledged_write(bed):
    from hbase_migration.clusters import channels
    from hbase_migration.replication import sync_replication as sr

    realhbase, eps, clusters = bed
    tag = uuid.uuid4().hex[:6]
    table, peer = f"sync{tag}", f"sync{tag}"
    figures: dict = {"hbase": eps["dc1"]["hbase_version"], "shell": eps["dc1"]["versions"]["hbase-shell"]}
    writer = None
    try:
        set_up(eps, clusters, table, peer)
        with channels.shell_session(clusters["dc2"]) as target:
            with channels.shell_session(clusters["dc1"]) as source:
                assert states(source, peer) == states(target, peer) == sr.DOWNGRADE_ACTIVE  # as HBase creates it
                figures["target_standby_s"] = transit(target, peer, sr.STANDBY)
                figures["source_active_s"] = transit(source, peer, sr.ACTIVE)
                # the ordinary shipping off: nothing reaches dc2 but through the remote WAL on its HDFS
                source.run([f"disable_peer '{peer}'"])
            assert "STANDBY" in refused_put(eps["dc2"], table)  # the standby refuses clients

            writer = AckedWriter(eps["dc1"], table).start()
            wait_for(lambda: writer.count() >= 1500, 300, "1500 puts acknowledged by the ACTIVE source")
            killed = realhbase.kill_cluster("dc1")  # mid-writes: every JVM of the source datacenter
            writer.wait_stopped()
            acked, unacked = list(writer.acked), list(writer.unacked)
            figures.update(killed=sorted(killed), acknowledged=len(acked), in_flight=len(unacked),
                           writes_per_s=round(len(acked) / writer.seconds, 1))
            assert len(unacked) == writer.threads, unacked  # each writer ended on a put the dead source never answered

            figures["target_downgrade_active_s"] = transit(target, peer, sr.DOWNGRADE_ACTIVE)
            assert states(target, peer) == sr.DOWNGRADE_ACTIVE

            found = read_back(eps["dc2"], table, [row for row, _, _ in acked])
            lost = [(row, ts, value, found.get(row)) for row, ts, value in acked if found.get(row) != [(ts, value)]]
            figures["acknowledged_found"] = len(acked) - len(lost)
            assert not lost, f"{len(lost)} of {len(acked)} acknowledged puts are not on the target: {lost[:5]}"
            in_flight = read_back(eps["dc2"], table, [row for row, _, _, _ in unacked])
            figures["in_flight_found"] = sum(in_flight.get(row) == [(ts, value)] for row, ts, value, _ in unacked)

            # ACTIVE needs the other side's HDFS (the master checks the remote WAL directory there): refused now
            started = time.monotonic()
            error = refused_transition(target, peer, sr.ACTIVE)
            figures["target_active_with_source_dead"] = {"refused_after_s": round(time.monotonic() - started, 1),
                                                         "error": error[:300]}
            assert states(target, peer) == sr.DOWNGRADE_ACTIVE

        # the old source back: it comes back ACTIVE (as it was), goes to STANDBY; the target then to ACTIVE
        started = time.monotonic()
        realhbase.start_cluster("dc1")
        figures["source_restart_s"] = round(time.monotonic() - started, 1)
        assert states(clusters["dc1"], peer) == sr.ACTIVE
        with channels.shell_session(clusters["dc1"]) as source, channels.shell_session(clusters["dc2"]) as target:
            figures["old_source_standby_s"] = transit(source, peer, sr.STANDBY)
            figures["target_active_s"] = transit(target, peer, sr.ACTIVE)
            assert (states(source, peer), states(target, peer)) == (sr.STANDBY, sr.ACTIVE)
        assert "STANDBY" in refused_put(eps["dc1"], table)
        print("sync replication failover:", json.dumps(figures, sort_keys=True))
    finally:
        if writer is not None:
            writer.stop()
        dismantle(realhbase, clusters, table, peer)


def test_planned_switch_fences_the_source_and_the_target_has_every_acknowledged_write(bed):
    from hbase_migration.clusters import channels
    from hbase_migration.replication import sync_replication as sr

    realhbase, eps, clusters = bed
    tag = uuid.uuid4().hex[:6]
    table, peer = f"syncp{tag}", f"syncp{tag}"
    steps = sr.plan("planned", peer)
    assert [(s["side"], s["state"]) for s in steps] == [("source", sr.STANDBY), ("target", sr.DOWNGRADE_ACTIVE),
                                                        ("target", sr.ACTIVE)]
    figures: dict = {"hbase": eps["dc1"]["hbase_version"]}
    writer = None
    try:
        set_up(eps, clusters, table, peer)
        with channels.shell_session(clusters["dc1"]) as source, channels.shell_session(clusters["dc2"]) as target:
            sides = {"source": source, "target": target}
            transit(target, peer, sr.STANDBY)
            transit(source, peer, sr.ACTIVE)
            writer = AckedWriter(eps["dc1"], table).start()
            wait_for(lambda: writer.count() >= 600, 300, "600 puts acknowledged by the ACTIVE source")
            for step in steps:  # the plan's statements as they are, in its order
                started = time.monotonic()
                sides[step["side"]].run([step["statement"]], timeout_s=600)
                figures[f"{step['side']}_{step['state'].lower()}_s"] = round(time.monotonic() - started, 1)
                if step["state"] == sr.STANDBY:  # the fence: the source's clients are refused from here on
                    writer.wait_stopped()
            acked, unacked = list(writer.acked), list(writer.unacked)
            assert len(unacked) == writer.threads and all("STANDBY" in error for *_, error in unacked), unacked
            figures.update(acknowledged=len(acked), refused_by_the_fence=len(unacked))

            # a transition HBase refuses is one check_steps refuses: STANDBY -> ACTIVE
            with pytest.raises(ValueError, match="cannot go from STANDBY to ACTIVE"):
                sr.check_steps({"source": sr.STANDBY}, [sr.Step("source", sr.ACTIVE, "")])
            figures["standby_to_active"] = refused_transition(source, peer, sr.ACTIVE)
            assert "STANDBY" in figures["standby_to_active"] and "ACTIVE" in figures["standby_to_active"]
            assert states(target, peer) == sr.ACTIVE
        assert states(clusters["dc1"], peer) == sr.STANDBY  # the refused transition changed nothing

        found = read_back(eps["dc2"], table, [row for row, _, _ in acked])
        lost = [(row, ts, value, found.get(row)) for row, ts, value in acked if found.get(row) != [(ts, value)]]
        figures["acknowledged_found"] = len(acked) - len(lost)
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged puts are not on the target: {lost[:5]}"
        print("sync replication planned switch:", json.dumps(figures, sort_keys=True))
    finally:
        if writer is not None:
            writer.stop()
        dismantle(realhbase, clusters, table, peer)
