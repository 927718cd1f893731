"""The drained sensor refuses, before its first poll, a caught_up_queue_size the source's WAL layout does not
allow (the layout given as data: a `wal_groups.Bound`)."""
import contextlib

import pytest

pytest.importorskip("airflow.sdk")


def _sensor(monkeypatch, size, bound):
    from hbase_migration.clusters import zk
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.operators.sensors import ReplicationDrainedSensor
    from hbase_migration.replication import wal_groups

    sensor = ReplicationDrainedSensor(task_id="drained", peer_id="fw1", caught_up_queue_size=size)
    cluster = Cluster.from_dict({"name": "src", "thrift_host": "t1", "zk_quorum": "zk1"})
    monkeypatch.setattr(sensor, "_cluster", lambda: cluster)
    monkeypatch.setattr(zk, "connect", lambda *a, **k: contextlib.nullcontext(None))
    monkeypatch.setattr(wal_groups, "read_bound", lambda cluster, client, peer_id, conf=True: bound)
    return sensor


def test_a_size_above_the_layout_fails_the_task_at_once(monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.replication.wal_groups import Bound

    sensor = _sensor(monkeypatch, 3, Bound("src", 2, "1 WAL group, +1 sync peer"))
    with pytest.raises(AirflowFailException, match=r"caught_up_queue_size 3 .* at most 2 .*set caught_up_queue_size "
                                                   r"to 2"):
        sensor.execute({})


def test_a_size_that_fits_goes_on_to_wait(monkeypatch):
    from hbase_migration.replication.wal_groups import Bound

    sensor = _sensor(monkeypatch, 2, Bound("src", 2, ""))
    monkeypatch.setattr(sensor, "_ledger", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("waiting")))
    with pytest.raises(RuntimeError, match="waiting"):
        sensor.execute({})
