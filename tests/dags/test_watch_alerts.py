"""The replication watch's alerts reach a person, once per breach: `hbase_replication_watch` run by `airflow dags
test` against minihbase, past each threshold at once (a peer DISABLED too long, a lag breach, oldWALs projected
to exhaust its quota), with a real SMTP server and a real HTTP receiver. Without alert settings nothing is sent
(and nothing is claimed: the breach is raised by the first run that has them); a breach that lasts sends nothing
more; its end sends one clear message."""
import dataclasses
import threading
import time
import uuid

import pytest

from tests.alert_receivers import SECRETS, alert_env, http_receiver, smtp_server
from tests.dags.airflow_run import airflow_env, dags_test
from tests.polling import wait_for

# make test-full: make test runs the watch DAG (test_watch_dag.py) and shows an alert reaching a person (the chaos
# run's failed attempt); this one is every breach kind, once each, and the all-clear.
pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.full]

ALERT_LAG_MS = 2000
# Far beyond any real projection: any oldWALs growth during the watch's two readings is a breach.
MIN_EXHAUSTION_S = 1e12
# Timed events (WAL rolls, flushes) stay out of the way: only the test's own rolls grow oldWALs.
QUIET = {"wal_roll_period_s": 3600, "flush_interval_s": 3600}


def max_age_ms(cluster, peer_id):
    from hbase_migration.clusters import zk
    from hbase_migration.replication import metrics

    with zk.connect(cluster, timeout=5) as client:
        return metrics.peer_status(cluster, peer_id, client, time.time()).summary()["max_age_ms"]


class Roller:
    """Writes, flushes and rolls the source's WALs twice a second: with a DISABLED peer pinning them, oldWALs
    grows between any two of the watch's readings (1 s apart) for as long as it runs. (Not faster: every WAL is
    also queued for the enabled peer, which must read through them all once its target takes edits again.)"""

    def __init__(self, cluster, table):
        self.cluster, self.table, self.stop = cluster, table, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        conn, i = self.cluster.connection(), 0
        try:
            while not self.stop.is_set():
                conn.table(self.table).put(b"p%06d" % i, {b"d:v": b"y" * 1000})
                i += 1
                self.cluster.flush(self.table)
                self.cluster.roll_wals()
                self.stop.wait(0.5)
        finally:
            conn.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


@pytest.mark.timeout(1800)  # make test's two workers share two cores: several times its quiet-machine time
def test_each_breach_alerts_once_when_it_starts_and_once_when_it_ends(minihbase_factory, tmp_path):
    from hbase_migration.clusters.connections import cluster_from_connection_text
    from hbase_migration.ledger.store import Ledger
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin

    dc1, dc2 = minihbase_factory("dc1", **QUIET), minihbase_factory("dc2", **QUIET)
    source = cluster_from_connection_text("hbase_source", dc1.connection_json)
    target = cluster_from_connection_text("hbase_target", dc2.connection_json)
    suffix = uuid.uuid4().hex[:6]
    lag_table, pin_table = f"lag_{suffix}", f"pin_{suffix}"
    lagging, pinned = f"lagging_{suffix}", f"pinned_{suffix}"
    for c in (dc1, dc2):
        for t in (lag_table, pin_table):
            c.create_table(t, {"d": {"replication_scope": 1}})
    # Added straight into ZooKeeper (the HBase 1.x path): the watch reads peers from ZooKeeper either way.
    with peer_admin(dataclasses.replace(source, peer_admin="zookeeper")) as admin:
        admin.add_peer(pinned, migration_peer_config(target, [pin_table]), enabled=False)
        admin.add_peer(lagging, migration_peer_config(target, [lag_table]), enabled=True)
    # A lag breach as HBase shows one: an edit shipped, then the sink refuses the next ones (the target table is
    # READONLY), the source retries and ageOfLastShippedOp grows from the last edit it shipped.
    conn = dc1.connection()
    conn.table(lag_table).put(b"first", {b"d:v": b"x"})
    target_conn = dc2.connection()
    wait_for(lambda: target_conn.table(lag_table).row(b"first"), 60, "the first edit shipped")
    dc2.alter_table(lag_table, readonly=True)
    conn.table(lag_table).put(b"refused", {b"d:v": b"x"})
    wait_for(lambda: (max_age_ms(source, lagging) or 0) > ALERT_LAG_MS, 60, "the lag past alert_lag_ms")

    ledger = tmp_path / "ledger.db"
    conf = {"clusters": ["hbase_source"], "quota_sample_gap_s": 1, "max_disabled_s": 0,
            "alert_lag_ms": ALERT_LAG_MS, "min_exhaustion_s": MIN_EXHAUSTION_S}
    runs = []

    def watch(env_extra):
        log = tmp_path / f"watch{len(runs)}.log"
        rc = dags_test("hbase_replication_watch", conf, {**airflow_env(dc1, dc2, ledger), **env_extra}, log)
        runs.append(log.read_text())
        return rc, runs[-1]

    def messages(smtp, http):
        assert len(smtp.mails) == len(http.posts)
        assert [m.subject for m in smtp.mails] == [p.body["text"].split("\n\n", 1)[0] for p in http.posts]
        return [(p.body["hbase_migration"]["kind"], p.body["hbase_migration"]["event"]) for p in http.posts]

    with smtp_server() as smtp, http_receiver() as http:
        # 1. No alert settings: the watch fails on its breaches as before; nothing is sent or claimed.
        rc, log = watch({})
        assert rc != 0 and f"peer {pinned}: DISABLED for" in log and f"peer {lagging}: ageOfLastShippedOp" in log
        assert smtp.mails == [] and http.posts == [] and "alerts:" not in log
        with Ledger.open(f"sqlite:///{ledger}") as led:
            assert led.alert_messages() == []
        alerting = alert_env(smtp, http)
        with Roller(dc1, pin_table):
            # 2. With them, every breach that is on starts (the two above still last): one message each, by mail
            # and webhook.
            rc, log = watch(alerting)
            assert rc != 0
            assert sorted(messages(smtp, http)) == [("lag_breach", "raised"), ("oldwals_quota", "raised"),
                                                    ("peer_disabled", "raised")], log[-3000:]
            # 3. Ten minutes later (the next run), the breaches last: nothing more.
            rc, log = watch(alerting)
            assert rc != 0 and len(http.posts) == 3, messages(smtp, http)
        # The breaches end: the oldWALs stop growing (the roller stopped), the pinned peer is removed, the target
        # takes edits again and a fresh one ships (the age falls back to a few ms).
        with peer_admin(dataclasses.replace(source, peer_admin="zookeeper")) as admin:
            admin.remove_peer(pinned)
        dc2.alter_table(lag_table, readonly=False)
        wait_for(lambda: target_conn.table(lag_table).row(b"refused"), 120, "the backlog shipped")

        def fresh_edit_ships_at_once() -> bool:
            # The gauge keeps the age its last shipped edit had when it shipped: an edit written now and shipped
            # at once brings it down (one written while the backlog still queued would keep it high).
            conn.table(lag_table).put(b"fresh", {b"d:v": b"x"})
            return (max_age_ms(source, lagging) or 0) < ALERT_LAG_MS

        wait_for(fresh_edit_ships_at_once, 60, "the lag back under alert_lag_ms", interval=0.5)
        conn.close()
        target_conn.close()
        # 4. One clear message per breach that ended.
        rc, log = watch(alerting)
        assert rc == 0, log[-3000:]
        assert sorted(messages(smtp, http)[3:]) == [("lag_breach", "cleared"), ("oldwals_quota", "cleared"),
                                                    ("peer_disabled", "cleared")], log[-3000:]
    with peer_admin(source) as admin:
        admin.remove_peer(lagging, force=True)

    by_kind = {(p.body["hbase_migration"]["kind"], p.body["hbase_migration"]["event"]): p.body for p in http.posts}
    run_ids = {p.body["hbase_migration"]["dag_run_id"] for p in http.posts}
    assert len(run_ids) == 2  # raised by the second watch run, cleared by the fourth
    disabled = by_kind[("peer_disabled", "raised")]
    assert disabled["hbase_migration"]["cluster_key"] == dc1.cluster_key
    for fragment in (f"peer {pinned} DISABLED for ", " on hbase_source (max 0s)",
                     f"Cluster: hbase_source (cluster key {dc1.cluster_key})",
                     f"python -m hbase_migration peer enable --source hbase_source --peer-id {pinned}"):
        assert fragment in disabled["text"], (fragment, disabled["text"])
    lag = by_kind[("lag_breach", "raised")]["text"]
    assert f"peer {lagging}: ageOfLastShippedOp " in lag and f"> alert_lag_ms {ALERT_LAG_MS} ms" in lag
    assert f"python -m hbase_migration lag --source hbase_source --peer-id {lagging}" in lag
    quota = by_kind[("oldwals_quota", "raised")]["text"]
    assert "oldWALs /hbase/oldWALs: namespace quota on /hbase: " in quota and "/s: exhausted in " in quota
    assert f"disabled peers pinning WALs: {pinned}" in quota
    assert "no exhaustion projected" in by_kind[("oldwals_quota", "cleared")]["text"]
    assert f"State: peer {pinned} is gone (removed)" in by_kind[("peer_disabled", "cleared")]["text"]
    assert "State: ageOfLastShippedOp " in by_kind[("lag_breach", "cleared")]["text"]
    for text in [p.body["text"] for p in http.posts] + [m.text for m in smtp.mails] + runs:
        for secret in SECRETS:
            assert secret not in text
