"""The drain gate's lateness: how long after the true drain the drained sensor says so, and never before it.

Each trial, on minihbase dc1 -> dc2 (3 region servers each, a table in 3 regions, one per server): a writer puts
rows on the source while the peer is DISABLED (a backlog over several WALs), the peer is enabled and the writer
goes on while the backlog ships, then stops at a known instant, as the cut-over's freeze stops the clients. The
sensor starts then and polls every `--poll-s` (`hbase_migration.replication.lag.poll` with the history carried
from poll to poll, exactly what `ReplicationDrainedSensor.poke` and the deferrable trigger do; thresholds as the DAGs
set them). The true drain is the first instant at which the target reads every edit the writer had acknowledged,
seen by a checker reading the target every 20 ms. Figures per trial: the true drain after the writer stopped,
the sensor's drained verdict after the true drain, in seconds and in polls (`(verdict - true drain) / poll
interval`), and whether the verdict came before the true drain (it must not; at the verdict the target is also
read for every acknowledged edit).

Scenarios: `writer_stops_<latency>` as above, thresholds as the DAGs set them; `stale_backlog_0ms`: the writer
stops while the peer is still DISABLED and the peer is enabled 3 s later, with max_lag_ms 1 s and an idle window
of 5 s (the same situation as a backlog older than max_lag in a real run, scaled to seconds): the last shipped
edit's ageOfLastShippedOp then stays above max_lag (HBase 2.x keeps the gauge), and only the idle rule (counters
frozen for `idle_window_s`) can pass the gate, so its lateness is about idle_window_s / poll interval + 1 poll.

Printed, never asserted; the last line is one JSON object.

    .venv/bin/python bench/bench_drain.py [--trials 3] [--poll-s 1.0] [--latencies 0,5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from bench.bench_minihbase_replication import shell  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402


class Writer(threading.Thread):
    """Puts one row at a time on the source, remembering each acknowledged row; `stop()` returns the instant the
    last write was acknowledged."""

    def __init__(self, cluster: MiniCluster, table: str, prefix: bytes, interval_s: float):
        super().__init__(daemon=True)
        self.cluster, self.table, self.prefix, self.interval_s = cluster, table, prefix, interval_s
        self.acked: list[bytes] = []
        self.stopped_at = 0.0
        self._halt = threading.Event()

    def run(self) -> None:
        conn = self.cluster.connection(timeout=60000)
        t = conn.table(self.table)
        i = 0
        while not self._halt.is_set():
            row = self.prefix + b"%02x-%07d" % ((i * 151) % 256, i)  # spread over the three regions
            t.put(row, {b"d:v": b"x%d" % i})
            self.acked.append(row)
            self.stopped_at = time.time()
            i += 1
            self._halt.wait(self.interval_s)
        conn.close()

    def stop(self) -> float:
        self._halt.set()
        self.join(30)
        return self.stopped_at


def missing(conn, table: str, rows: list[bytes]) -> list[bytes]:
    t = conn.table(table)
    found = set()
    for i in range(0, len(rows), 1000):
        found.update(r for r, _ in t.rows(rows[i:i + 1000], columns=[b"d:v"]))
    return [r for r in rows if r not in found]


def trial(dc1: MiniCluster, dc2: MiniCluster, n: int, poll_s: float, backlog_s: float, live_s: float,
          thresholds: dict, stop_before_enable: bool = False, enable_after_s: float = 0.0) -> dict:
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.replication import lag

    table, peer = f"drain{n}", f"drain{n}"
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=[b"w-55", b"w-aa"])
    shell(dc1, f"add_peer '{peer}', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'{table}' => []}}, "
               "STATE => 'DISABLED'")
    source = cluster_from_text("source", dc1.connection_json)
    writer = Writer(dc1, table, b"w-", 0.005)
    writer.start()
    time.sleep(backlog_s / 2)
    dc1.roll_wals()  # the backlog spans WALs: sizeOfLogQueue above its caught-up value at enable
    time.sleep(backlog_s / 2)
    if stop_before_enable:  # a backlog only: the writer stopped before the peer ships anything
        stopped_at = writer.stop()
        time.sleep(enable_after_s)  # the backlog ages: its edits ship older than that
        shell(dc1, f"enable_peer '{peer}'")
    else:
        shell(dc1, f"enable_peer '{peer}'")
        time.sleep(live_s)  # the backlog ships while the writer goes on
        stopped_at = writer.stop()  # the known instant: as a freeze (READONLY) stops the clients
    acked = list(writer.acked)
    th = lag.thresholds_from(thresholds)
    verdicts: list[tuple[float, bool, bool]] = []  # (sample taken at, drained, every edit on the target then)
    done = threading.Event()

    def sensor() -> None:  # the gate, started when the writer stopped, one poll every poll_s
        target = dc2.connection(timeout=60000)
        history: list = []
        next_at = time.time()
        while not done.is_set():
            taken = time.time()
            result = lag.poll(source, peer, history, th, taken)
            history = result.history
            complete = not missing(target, table, acked) if result.decision.drained else False
            verdicts.append((taken, result.decision.drained, complete))
            if result.decision.drained:
                break
            next_at += poll_s
            done.wait(max(0.0, next_at - time.time()))
        target.close()

    poller = threading.Thread(target=sensor, daemon=True)
    poller.start()
    checker = dc2.connection(timeout=60000)
    true_drain: list[float] = []
    left = acked
    while left:
        checked = time.time()
        left = missing(checker, table, left)
        if not left:
            true_drain.append(checked)
        else:
            time.sleep(0.02)
    checker.close()
    poller.join(180)
    done.set()
    shell(dc1, f"remove_peer '{peer}'")
    drain = true_drain[0]
    drained = [(t, complete) for t, d, complete in verdicts if d]
    first = drained[0][0] if drained else None
    return {
        "edits": len(acked),
        "true_drain_after_writer_stopped_s": round(drain - stopped_at, 3),
        "polls": len(verdicts),
        "verdict_after_true_drain_s": None if first is None else round(first - drain, 3),
        "lateness_polls": None if first is None else round((first - drain) / poll_s, 2),
        # a drained verdict sampled before the true drain, or with an acknowledged edit not on the target
        "drained_before_true_drain": sum(1 for t, complete in drained if t < drain or not complete),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--poll-s", type=float, default=1.0, help="the sensor's poll interval (the DAGs poll every 5 s)")
    p.add_argument("--latencies", default="0,5", help="injected latency per RPC on the target (the link), ms")
    p.add_argument("--backlog-s", type=float, default=3.0, help="writing while the peer is disabled")
    p.add_argument("--live-s", type=float, default=4.0, help="writing after the peer is enabled")
    args = p.parse_args(argv)
    # As the DAGs set them (operators/factory.py, operators/cutover.py).
    dag = {"stable_samples": 3, "max_lag_ms": 30_000, "caught_up_queue_size": 1, "idle_window_s": 30.0}
    # A backlog older than max_lag when it has shipped (the writer stopped long before the peer was enabled): its
    # ageOfLastShippedOp stays above max_lag (HBase 2.x keeps the gauge), so only the idle rule can pass it.
    # Scaled to seconds: max_lag 1 s, the backlog enabled 3 s after the writer stopped, an idle window of 5 s.
    stale = {"stable_samples": 3, "max_lag_ms": 1_000, "caught_up_queue_size": 1, "idle_window_s": 5.0}
    scenarios = [(f"writer_stops_{lat:g}ms", lat, dag, False) for lat in (float(x) for x in args.latencies.split(","))]
    scenarios.append(("stale_backlog_0ms", 0.0, stale, True))
    figures: dict = {"poll_s": args.poll_s}
    with tempfile.TemporaryDirectory(prefix="bench-drain-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zookeeper").start()
        try:
            dc1 = MiniCluster.start(zk.hosts, Path(tmp), "dc1", region_servers=3)
            dc2 = MiniCluster.start(zk.hosts, Path(tmp), "dc2", region_servers=3)
            try:
                n = 0
                for name, latency, thresholds, backlog_only in scenarios:
                    dc2.set_latency(latency)
                    runs = []
                    for _ in range(args.trials):
                        runs.append(trial(dc1, dc2, n, args.poll_s, args.backlog_s, args.live_s, thresholds,
                                          stop_before_enable=backlog_only, enable_after_s=3.0))
                        n += 1
                    late = [r["lateness_polls"] for r in runs if r["lateness_polls"] is not None]
                    figures[name] = {
                        "thresholds": thresholds, "trials": runs,
                        "lateness_polls_max": max(late) if late else None,
                        "lateness_polls_median": statistics.median(late) if late else None,
                        "drained_before_true_drain": sum(r["drained_before_true_drain"] for r in runs),
                    }
                    dc2.set_latency(0)
            finally:
                dc2.stop()
                dc1.stop()
        finally:
            zk.stop()
    for name, f in figures.items():
        if isinstance(f, dict):
            print(f"{name}: drained {f['lateness_polls_median']} polls after the true drain (median), "
                  f"{f['lateness_polls_max']} (max), polls of {args.poll_s}s; verdicts before the true drain: "
                  f"{f['drained_before_true_drain']}")
            for r in f["trials"]:
                print(f"   {r}")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
