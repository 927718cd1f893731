"""The dashboard's live peer states, their logic alone: one read per source cluster, answers cached, a page
never waiting past the budget, a failed read shown as unreachable. The reads here are stand-ins (the real
ZooKeeper read is exercised in tests/integration/test_dashboard_live_peer.py); the dashboard pages over a
real ledger show what they return."""
from __future__ import annotations

import threading
import time
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.testclient import TestClient

from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.ledger.store import ALL_TABLES, NO_PEER, Ledger
from hbase_migration.plugins.hbase_migration_plugin import URL_PREFIX
from hbase_migration.plugins.hbase_migration_ui.app import create_app
from hbase_migration.plugins.hbase_migration_ui.live import PeerStates, connection_or_key
from hbase_migration.plugins.hbase_migration_ui.settings import resolve_ledger_url
from tests.polling import wait_for

from .test_plugin_dashboard import FAILED_RUN, fill, text_of

T = 1_714_564_800_000


def run(run_id, peer_id="mig1", key="zk1:2181:/hbase", **params):
    return {"run_id": run_id, "peer_id": peer_id, "source_key": key, "params": params}


class Reads:
    """A stand-in for the ZooKeeper read: records each call, answers from `states` (or raises `error`)."""

    def __init__(self, states=None, error=None, delay_s=0.0):
        self.calls = []
        self.states, self.error, self.delay_s = states or {}, error, delay_s

    def __call__(self, target, peer_ids, timeout_s):
        self.calls.append((str(target), tuple(peer_ids)))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.error:
            raise self.error
        return {p: self.states.get(p, "ABSENT") for p in peer_ids}


def test_one_read_per_cluster_for_every_run_on_it_and_no_read_for_runs_without_a_peer():
    reads = Reads({"mig1": "DISABLED", "mig2": "ENABLED"})
    states = PeerStates(read=reads, clock=lambda: 100.0)
    got = states.states([run("a"), run("b", "mig2"), run("c", NO_PEER), run("d", "mig3", "zk9:2181:/hbase")])
    assert sorted(reads.calls) == [("zk1:2181:/hbase", ("mig1", "mig2")), ("zk9:2181:/hbase", ("mig3",))]
    assert {k: v.state for k, v in got.items()} == {"a": "DISABLED", "b": "ENABLED", "d": "ABSENT"}
    assert got["a"].read_ms == 100_000 and got["a"].where == "zk1:2181:/hbase"
    states.close()


def test_answers_are_kept_for_the_ttl_then_read_again():
    now = [100.0]
    reads = Reads({"mig1": "DISABLED"})
    states = PeerStates(read=reads, clock=lambda: now[0], ttl_s=15)
    states.states([run("a")])
    now[0] = 110.0
    assert states.states([run("a")])["a"].state == "DISABLED" and len(reads.calls) == 1
    reads.states["mig1"] = "ENABLED"
    now[0] = 116.0
    assert states.states([run("a")])["a"].state == "ENABLED" and len(reads.calls) == 2
    states.close()


def test_a_slow_cluster_costs_the_page_at_most_the_budget_and_answers_later():
    release, answered = threading.Event(), threading.Event()

    def slow(target, peer_ids, timeout_s):
        release.wait(600)
        answered.set()
        return {p: "DISABLED" for p in peer_ids}

    states = PeerStates(read=slow, budget_s=0.3)
    got = states.states([run("a")])["a"]
    # The page had its answer while the read was still blocked: it waited for its budget, not for the cluster.
    assert not answered.is_set()
    assert (got.state, got.error) == (None, "no answer within 0.3s")
    release.set()
    wait_for(lambda: states.states([run("a")])["a"].state is not None, 10, "the read to fill the cache")
    assert states.states([run("a")])["a"].state == "DISABLED"  # the read went on and filled the cache
    states.close()


def test_a_failed_read_is_shown_with_its_error():
    states = PeerStates(read=Reads(error=ConnectionError("ZooKeeper quorum zk1:2181 did not answer")))
    got = states.states([run("a")])["a"]
    assert (got.state, got.error) == (None, "ConnectionError: ZooKeeper quorum zk1:2181 did not answer")
    bad = states.states([run("b", key="no-port")])["b"]
    assert bad.state is None and "ClusterConfigError" in bad.error
    states.close()


class Conn:
    def __init__(self, host, port, extra):
        self.host, self.port, self.extra_dejson = host, port, extra


def test_the_runs_connection_is_used_while_it_points_at_the_runs_cluster():
    conns = {"same": Conn("t", 9090, {"zookeeper_quorum": "zk1", "timeout_s": 2}),
             "moved": Conn("t", 9090, {"zookeeper_quorum": "zk7"})}
    cluster_for = connection_or_key(lambda conn_id: conns[conn_id])
    assert cluster_for(run("a", source_conn_id="same")).timeout_s == 2  # a Cluster, from the connection
    assert cluster_for(run("a", source_conn_id="moved")) == ClusterKey.parse("zk1:2181:/hbase")
    assert cluster_for(run("a", source_conn_id="gone")) == ClusterKey.parse("zk1:2181:/hbase")
    assert cluster_for(run("a")) == ClusterKey.parse("zk1:2181:/hbase")


# ---------------------------------------------------------------------------------------------------------
# The pages with live states

def client(tmp_path, reads):
    path = tmp_path / "ledger.db"
    with Ledger.open(f"sqlite:///{path}") as ledger:
        fill(ledger)
        ledger.start_run("scheduled__w:hbase_source", "hbase_replication_watch", "watch", "zk1:2181:/hbase",
                         "zk1:2181:/hbase", NO_PEER, [ALL_TABLES], started_ms=T + 9_000_000)
    app = FastAPI()
    app.mount(URL_PREFIX, create_app(resolve_ledger_url(f"sqlite:///{path}", None, tmp_path),
                                     clock=lambda: T + 3_600_000, peer_states=PeerStates(read=reads)))
    return TestClient(app)


def test_after_peer_remove_the_left_disabled_alarm_is_gone(tmp_path):
    with client(tmp_path, Reads({"mig1": "ENABLED"})) as c:  # mig2 no longer on its cluster
        page = text_of(c.get(f"{URL_PREFIX}/").text)
        assert "left DISABLED" not in page
        assert "mig2: not on the cluster (removed, or never added); read from the cluster at" in page
        assert "mig1: ENABLED (read from the cluster at" in page
        run_page = text_of(c.get(f"{URL_PREFIX}/runs/{quote(FAILED_RUN, safe='')}").text)
        assert "left DISABLED" not in run_page
        assert "Peer mig2: not on the cluster" in run_page


def test_an_unreachable_cluster_keeps_the_ledgers_alarm_and_says_the_cluster_was_not_read(tmp_path):
    with client(tmp_path, Reads(error=ConnectionError("ZooKeeper quorum zk1:2181 did not answer within 3s"))) as c:
        page = text_of(c.get(f"{URL_PREFIX}/").text)
        assert "Peer mig2 was left DISABLED by a failed run" in page
        assert ("mig2: cluster unreachable (ConnectionError: ZooKeeper quorum zk1:2181 did not answer within 3s); "
                "the ledger's last note: DISABLED") in page
        assert "this is the ledger's last note about the peer, which may be out of date" in page


def test_the_watchs_runs_stay_out_of_the_list(tmp_path):
    with client(tmp_path, Reads()) as c:
        assert "scheduled__w" not in c.get(f"{URL_PREFIX}/").text
        assert [r["run_id"] for r in c.get(f"{URL_PREFIX}/api/runs").json()] == [
            FAILED_RUN, "manual__2024-05-01T12:00:00+00:00"]
        # its own page still opens (the watch's task log names it)
        assert c.get(f"{URL_PREFIX}/runs/{quote('scheduled__w:hbase_source', safe='')}").status_code == 200
