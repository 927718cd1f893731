"""parse_replication_bean against real-shaped /jmx bodies (reference §3): both key forms, queue ids
discovered from key names, recovered queues of hyphenated hosts, missing keys as None."""
from __future__ import annotations

import pytest

from hbase_migration.clusters.zk import QueueInfo
from hbase_migration.replication.metrics import (
    REPLICATION_BEAN,
    JmxFormatError,
    PeerLagSnapshot,
    QueueMetrics,
    ServerReading,
    parse_replication_bean,
)

# A production gauge-era body, verbatim from the seed notes (two peers, 1 and 2).
SEED_BEAN = {
    "name": "Hadoop:service=HBase,name=RegionServer,sub=Replication",
    "modelerType": "RegionServer,sub=Replication",
    "tag.Context": "regionserver",
    "tag.Hostname": "regionserver-2",
    "source.1.logEditsRead": 457239,
    "source.1.logReadInBytes": 212179411,
    "source.2.shippedOps": 11726,
    "source.2.logEditsRead": 315487,
    "source.1.shippedKBs": 94549,
    "source.ageOfLastShippedOp": 0,
    "source.shippedKBs": 101367,
    "source.logReadInBytes": 359568890,
    "source.1.sizeOfLogQueue": 0,
    "source.2.logReadInBytes": 147389479,
    "source.sizeOfLogQueue": 0,
    "source.2.sizeOfLogQueue": 0,
    "sink.ageOfLastAppliedOp": 0,
    "source.logEditsRead": 772726,
    "source.1.ageOfLastShippedOp": 0,
    "source.shippedOps": 181258,
    "source.2.logEditsFiltered": 303761,
    "source.logEditsFiltered": 591468,
    "source.2.ageOfLastShippedOp": 0,
    "sink.appliedOps": 0,
    "source.1.shippedOps": 169532,
    "source.2.shippedBatches": 316,
    "source.2.shippedKBs": 6818,
    "source.1.logEditsFiltered": 287707,
    "source.shippedBatches": 12459,
    "source.1.shippedBatches": 12143,
    "sink.appliedBatches": 0,
}


def body(*beans):
    return {"beans": list(beans)}


def test_seed_gauge_era_bean_exact():
    parsed = parse_replication_bean(body({"name": "java.lang:type=Memory", "HeapMemoryUsage": {}}, SEED_BEAN))
    assert parsed.bean_present is True
    assert parsed.hostname == "regionserver-2"
    assert sorted(parsed.queues) == ["1", "2"]
    assert parsed.queues["1"] == QueueMetrics(
        queue_id="1", peer_id="1", recovered=False, dead_servers=(),
        size_of_log_queue=0, age_ms=0, age_form="gauge", age_num_ops=None,
        shipped_ops=169532, shipped_batches=12143, shipped_bytes=None,  # this era only had shippedKBs
        log_edits_read=457239, log_edits_filtered=287707, log_read_in_bytes=212179411,
        oldest_wal_age_ms=None, failed_batches=None, other={"shippedKBs": 94549},
    )
    assert parsed.queues["2"] == QueueMetrics(
        queue_id="2", peer_id="2", size_of_log_queue=0, age_ms=0, age_form="gauge",
        shipped_ops=11726, shipped_batches=316, log_edits_read=315487, log_edits_filtered=303761,
        log_read_in_bytes=147389479, other={"shippedKBs": 6818},
    )
    assert parsed.source == {
        "ageOfLastShippedOp": 0, "shippedKBs": 101367, "logReadInBytes": 359568890, "sizeOfLogQueue": 0,
        "logEditsRead": 772726, "shippedOps": 181258, "logEditsFiltered": 591468, "shippedBatches": 12459,
    }
    assert parsed.sink == {"ageOfLastAppliedOp": 0, "appliedOps": 0, "appliedBatches": 0}
    assert parsed.tables == {}


def test_histogram_era_keys():
    bean = {
        "name": REPLICATION_BEAN, "tag.Hostname": "rs1",
        "source.1.sizeOfLogQueue": 1, "source.1.shippedOps": 10, "source.1.shippedBytes": 2048,
        "source.1.failedBatches": 2, "source.1.oldestWalAge": 5000,
        "Source.1.ageOfLastShippedOp_num_ops": 7, "Source.1.ageOfLastShippedOp_min": 3,
        "Source.1.ageOfLastShippedOp_max": 1500, "Source.1.ageOfLastShippedOp_mean": 700.5,
        "Source.1.ageOfLastShippedOp_99.9th_percentile": 1500,
        "Source.1.ageOfLastShippedOp_TimeRangeCount_1000-3000": 1,
        "Source.ageOfLastShippedOp_max": 1500, "Source.ageOfLastShippedOp_num_ops": 9,
        "source.sizeOfLogQueue": 1, "source.walReaderEditsBufferUsage": 0,
        "Sink.ageOfLastAppliedOp_max": 20, "sink.appliedOps": 4,
    }
    parsed = parse_replication_bean(body(bean))
    assert parsed.queues == {"1": QueueMetrics(
        queue_id="1", peer_id="1", size_of_log_queue=1, age_ms=1500, age_form="histogram", age_num_ops=7,
        shipped_ops=10, shipped_bytes=2048, failed_batches=2, oldest_wal_age_ms=5000,
        other={"ageOfLastShippedOp_min": 3, "ageOfLastShippedOp_mean": 700.5,
               "ageOfLastShippedOp_99.9th_percentile": 1500,
               "ageOfLastShippedOp_TimeRangeCount_1000-3000": 1},
    )}
    assert parsed.source == {"ageOfLastShippedOp_max": 1500, "ageOfLastShippedOp_num_ops": 9,
                             "sizeOfLogQueue": 1, "walReaderEditsBufferUsage": 0}
    assert parsed.sink == {"ageOfLastAppliedOp_max": 20, "appliedOps": 4}


def test_gauge_wins_when_both_forms_are_present():
    parsed = parse_replication_bean(body({
        "name": REPLICATION_BEAN, "source.1.sizeOfLogQueue": 1, "source.1.ageOfLastShippedOp": 40,
        "Source.1.ageOfLastShippedOp_max": 0, "Source.1.ageOfLastShippedOp_num_ops": 3,
    }))
    q = parsed.queues["1"]
    assert (q.age_ms, q.age_form, q.age_num_ops) == (40, "gauge", 3)
    assert q.other == {}


def test_recovered_queues_with_hyphenated_hosts_and_named_peers():
    dead1 = "rs-1.dc-a.example.com,16020,1700000000001"
    dead2 = "rs-2.dc-a.example.com,16020,1700000000002"
    chained = f"peer_a-{dead1}-{dead2}"
    parsed = parse_replication_bean(body({
        "name": REPLICATION_BEAN,
        "source.peer_a.sizeOfLogQueue": 1,
        f"source.1-{dead1}.sizeOfLogQueue": 4,
        f"source.1-{dead1}.ageOfLastShippedOp": 90000,
        f"source.{chained}.sizeOfLogQueue": 2,
        f"Source.{chained}.ageOfLastShippedOp_max": 12,
        "source.1.sizeOfLogQueue": 1,
    }))
    assert sorted(parsed.queues) == sorted(["peer_a", f"1-{dead1}", chained, "1"])
    rec = parsed.queues[f"1-{dead1}"]
    assert (rec.peer_id, rec.recovered, rec.dead_servers, rec.size_of_log_queue, rec.age_ms) == (
        "1", True, (dead1,), 4, 90000)
    two = parsed.queues[chained]
    assert (two.peer_id, two.recovered, two.dead_servers, two.age_ms, two.age_form) == (
        "peer_a", True, (dead1, dead2), 12, "histogram")
    assert [q.queue_id for q in parsed.queues_of("1")] == ["1", f"1-{dead1}"]
    assert [q.queue_id for q in parsed.queues_of("peer_a")] == ["peer_a", chained]
    assert parsed.queues_of("9") == []


def test_global_keys_are_not_taken_for_queues():
    parsed = parse_replication_bean(body({
        "name": REPLICATION_BEAN, "source.shippedOps": 5, "source.1.shippedOps": 3,
        "source.shippedOps.sizeOfLogQueue": 1,  # a peer literally named "shippedOps"
    }))
    assert parsed.source == {"shippedOps": 5}
    assert sorted(parsed.queues) == ["1", "shippedOps"]
    assert parsed.queues["1"].shipped_ops == 3
    assert parsed.queues["shippedOps"].size_of_log_queue == 1


def test_per_table_keys_are_kept_apart():
    parsed = parse_replication_bean(body({
        "name": REPLICATION_BEAN, "source.1.sizeOfLogQueue": 1,
        "source.ns:orders.v2.shippedBytes": 4096, "Source.ns:orders.v2.ageOfLastShippedOp_max": 8,
    }))
    assert list(parsed.queues) == ["1"]
    assert parsed.tables == {"ns:orders.v2": {"shippedBytes": 4096, "ageOfLastShippedOp_max": 8}}


def test_missing_figures_are_none_not_zero():
    parsed = parse_replication_bean(body({"name": REPLICATION_BEAN, "source.7.shippedOps": 0}))
    q = parsed.queues["7"]
    assert q.shipped_ops == 0
    assert (q.size_of_log_queue, q.age_ms, q.age_form, q.log_edits_read, q.failed_batches) == (
        None, None, None, None, None)


def test_absent_bean_and_empty_beans():
    assert parse_replication_bean({"beans": []}).bean_present is False
    absent = parse_replication_bean(body({"name": "Hadoop:service=HBase,name=RegionServer,sub=Server"}))
    assert (absent.bean_present, absent.queues, absent.source) == (False, {}, {})
    empty = parse_replication_bean(body({"name": REPLICATION_BEAN, "modelerType": "RegionServer,sub=Replication",
                                         "tag.Hostname": "rs1"}))
    assert (empty.bean_present, empty.hostname, empty.queues, empty.source, empty.sink) == (
        True, "rs1", {}, {}, {})


@pytest.mark.parametrize("payload, message", [
    ([], "must be an object with a 'beans' list"),
    ({"bean": []}, "must be an object with a 'beans' list"),
    ({"beans": {}}, "must be an object with a 'beans' list"),
    (body({"name": REPLICATION_BEAN, "source.1.sizeOfLogQueue": "3"}),
     r"/jmx key 'source.1.sizeOfLogQueue' must be a JSON number, got '3'"),
    (body({"name": REPLICATION_BEAN, "Source.1.ageOfLastShippedOp_max": True}),
     r"/jmx key 'Source.1.ageOfLastShippedOp_max' must be a JSON number, got True"),
])
def test_malformed_bodies_name_the_problem(payload, message):
    with pytest.raises(JmxFormatError, match=message):
        parse_replication_bean(payload)


def test_snapshot_round_trips_through_json():
    import json

    snap = PeerLagSnapshot(
        peer_id="1", taken_at=1700000000.5, peer_state="ENABLED",
        live_servers=("rs1,16020,1", "rs2,16020,2"),
        servers=(
            ServerReading("rs1,16020,1", 16030, (QueueMetrics("1", "1", size_of_log_queue=1, age_ms=3,
                                                              age_form="gauge", other={"shippedKBs": 2}),)),
            ServerReading("rs2,16020,2", 16031, (), error="region server rs2:16031: /jmx unreadable"),
        ),
        zk_queues=(QueueInfo("rs1,16020,1", "1", "1", False, [], [("rs1%2C16020%2C1.123", 254)]),),
    )
    again = PeerLagSnapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
    assert again == snap
    assert [s.servername for s in again.unreadable] == ["rs2,16020,2"]
    assert snap.summary() == {
        "peer_id": "1", "taken_at": 1700000000.5, "peer_state": "ENABLED", "live_servers": 2,
        "unreadable_servers": 1, "max_age_ms": 3, "total_size_of_log_queue": 1, "recovered_queues": 0,
        "zk_wals": 1,
    }


def test_summary_counts_a_recovered_queue_seen_in_jmx_and_zookeeper_once():
    dead = "rs-9.example.com,16020,9"
    rec = QueueMetrics(f"1-{dead}", "1", recovered=True, dead_servers=(dead,), size_of_log_queue=3)
    snap = PeerLagSnapshot(
        peer_id="1", taken_at=1.0, peer_state="ENABLED", live_servers=("rs1,16020,1",),
        servers=(ServerReading("rs1,16020,1", 16030, (QueueMetrics("1", "1", size_of_log_queue=2, age_ms=9), rec)),),
        zk_queues=(QueueInfo("rs1,16020,1", f"1-{dead}", "1", True, [dead], [("w.1", 0), ("w.2", 0)]),
                   QueueInfo("rs1,16020,1", "1", "1", False, [], [("w.3", 5)])),
    )
    summary = snap.summary()
    assert (summary["recovered_queues"], summary["zk_wals"], summary["max_age_ms"],
            summary["total_size_of_log_queue"]) == (1, 3, 9, 2)


def test_hbase_3_queue_ids_name_the_reporting_server():
    """HBase 3.x (ReplicationQueueId; real 3.0.0-alpha-4's /jmx): `<peer>-<this server>` is the normal queue,
    `<peer>-<this server>-<source server>` a recovered one; read without the server's name, as 2.x ids."""
    me = "localhost,15357,1795773130447"
    dead = "rs-2.dc-a.example.com,16020,1700000000002"
    bean = {"name": REPLICATION_BEAN, f"source.fw1-{me}.sizeOfLogQueue": 1,
            f"source.fw1-{me}.ageOfLastShippedOp": 0, f"source.fw1-{me}-{dead}.sizeOfLogQueue": 3}
    normal, recovered = parse_replication_bean(body(bean), me).queues_of("fw1")
    assert (normal.queue_id, normal.recovered, normal.dead_servers, normal.size_of_log_queue) == (
        f"fw1-{me}", False, (), 1)
    assert (recovered.recovered, recovered.dead_servers, recovered.size_of_log_queue) == (True, (dead,), 3)
    as_2x = parse_replication_bean(body(bean)).queues[f"fw1-{me}"]
    assert (as_2x.recovered, as_2x.dead_servers) == (True, (me,))
