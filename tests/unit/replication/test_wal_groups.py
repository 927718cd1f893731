"""The WALs a caught-up replication queue holds (one per WAL group of a region server) and the refusal of a
caught_up_queue_size above it: pure data in, numbers and one line out."""
import contextlib

import pytest

from hbase_migration.__main__ import main
from hbase_migration.migration.runspec import InvalidRunInput, RunSpec
from hbase_migration.replication import wal_groups
from hbase_migration.replication.model import Peer, PeerConfig
from hbase_migration.replication.wal_groups import Bound, Groups, caught_up_bound, major_version, sync_peer_ids

MULTI = {"hbase.wal.provider": "multiwal"}


@pytest.mark.parametrize("conf, major, sync, count", [
    ({}, 2, (), 1),  # the default provider
    ({}, None, (), 1),  # no version in the rs/ znode: taken as 2.x+
    ({"hbase.wal.provider": "asyncfs"}, 3, (), 1),
    ({"hbase.wal.provider": "filesystem"}, 2, (), 1),
    ({"hbase.wal.provider": "defaultProvider"}, 2, (), 1),
    ({"hbase.wal.provider": "org.apache.hadoop.hbase.wal.FSHLogProvider"}, 2, (), 1),
    (MULTI, 2, (), 2),  # numgroups' default
    ({**MULTI, "hbase.wal.regiongrouping.numgroups": "4"}, 2, (), 4),
    ({**MULTI, "hbase.wal.regiongrouping.strategy": "bounded", "hbase.wal.regiongrouping.numgroups": "3"}, 3,
     ("s1",), 4),
    ({}, 3, ("s1",), 2),  # real 3.0.0-alpha-4: a sync peer's .syncrep WAL group beside the default one
    ({}, 3, ("s1", "s2"), 3),
    ({}, 2, ("s1",), 1),  # 2.x has no synchronous replication: a remote WAL dir there adds nothing
    ({}, 1, (), 0),  # 1.x: the shipper takes the WAL out of the queue
    (MULTI, 1, (), 0),
    ({**MULTI, "hbase.wal.regiongrouping.strategy": "identity"}, 2, (), None),  # one group per region
    ({**MULTI, "hbase.wal.regiongrouping.strategy": "namespace"}, 2, (), None),
    ({**MULTI, "hbase.wal.regiongrouping.numgroups": "two"}, 2, (), None),
    ({**MULTI, "hbase.wal.regiongrouping.numgroups": "0"}, 2, (), None),
    ({"hbase.wal.provider": "org.example.MyProvider"}, 2, (), None),
])
def test_a_caught_up_queue_holds_one_wal_per_wal_group(conf, major, sync, count):
    assert wal_groups.wal_groups(conf, major, sync).count == count


def test_the_reason_names_the_settings():
    why = wal_groups.wal_groups({**MULTI, "hbase.wal.regiongrouping.numgroups": "3"}, 3, ("sc1",)).why
    assert "hbase.wal.provider=multiwal" in why and "numgroups=3" in why and "sc1" in why and ".syncrep" in why


def test_versions():
    assert [major_version(v) for v in ("3.0.0-alpha-4", "2.6.4-hadoop3", "1.4.14", None, "", "x")] == \
        [3, 2, 1, None, None, None]


def test_sync_peers_are_those_with_a_remote_wal_dir():
    key = "zk:2181:/hbase"
    peers = [Peer("fw", PeerConfig(cluster_key=key, table_cfs={"t": []}), True),
             Peer("sc", PeerConfig(cluster_key=key, table_cfs={"t": []}, remote_wal_dir="hdfs://nn/hbase/remoteWALs"),
                  True)]
    assert sync_peer_ids(peers) == ("sc",)


def test_the_cluster_bound_is_the_smallest_server_count():
    one, two = Groups(1, "default"), Groups(2, "multiwal")
    assert caught_up_bound("dc1", {"rs1": two, "rs2": two}).largest == 2
    mixed = caught_up_bound("dc1", {"rs1": two, "rs2": one})
    assert mixed.largest == 1 and "differ" in mixed.why and "rs2" in mixed.why
    partly = caught_up_bound("dc1", {"rs1": two, "rs2": Groups(None, "identity")}, unread=["rs3"])
    assert partly.largest == 2 and "2 server(s) not known" in partly.why
    unknown = caught_up_bound("dc1", {"rs1": Groups(None, "identity")}, unread=["rs2"])
    assert unknown.largest is None and unknown.refusal(16) is None
    assert caught_up_bound("dc1", {}).largest is None


def test_the_refusal_names_both_numbers():
    bound = Bound("dc1", 2, "hbase.wal.provider=unset (default): 1 WAL group, 1 synchronous replication peer")
    assert bound.refusal(2) is None and bound.refusal(1) is None and bound.refusal(0) is None
    line = bound.refusal(3)
    assert "caught_up_queue_size 3" in line and "at most 2 WAL(s)" in line and "dc1" in line
    assert "one WAL behind look drained" in line and "\n" not in line


@pytest.mark.parametrize("value, ok", [(0, True), (1, True), (2, True), (16, True), (17, False), (-1, False)])
def test_the_run_spec_takes_a_small_range(value, ok):
    values = {"tables": ["t"], "peer_id": "p", "caught_up_queue_size": value}
    if ok:
        assert RunSpec.validate(values).caught_up_queue_size == value
    else:
        with pytest.raises(InvalidRunInput) as e:
            RunSpec.validate(values)
        assert e.value.field == "caught_up_queue_size" and "0..16" in e.value.reason
    assert RunSpec.validate({"tables": ["t"], "peer_id": "p"}).caught_up_queue_size == 1  # the default


def _lag(monkeypatch, capsys, value, bound):
    """`lag` with the source's WAL layout given as data (a Bound): no cluster is reached."""
    from hbase_migration.clusters import zk

    monkeypatch.setenv("AIRFLOW_CONN_SRC", '{"conn_type": "hbase", "host": "zk1", "extra": {"zookeeper_quorum": '
                                           '"zk1", "zookeeper_port": 2181}}')
    from hbase_migration.replication import lag

    monkeypatch.setattr(zk, "connect", lambda *a, **k: contextlib.nullcontext(None))
    monkeypatch.setattr(wal_groups, "read_bound", lambda cluster, client, peer_id, conf=True: bound)
    polled = []

    monkeypatch.setattr(lag, "poll", lambda *a, **k: polled.append(a) or (_ for _ in ()).throw(SystemExit(7)))
    try:
        rc = main(["lag", "--source", "SRC", "--peer-id", "fw1", "--caught-up-queue-size", str(value)])
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err, polled


def test_lag_refuses_a_size_the_layout_does_not_allow(monkeypatch, capsys):
    rc, err, polled = _lag(monkeypatch, capsys, 3, Bound("SRC", 2, "1 WAL group, +1 sync peer"))
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and not polled, err
    assert "caught_up_queue_size 3" in lines[0] and "at most 2" in lines[0]
    assert lines[0].endswith("pass --caught-up-queue-size 2 (one WAL per WAL group of a region server)")


@pytest.mark.parametrize("value, bound", [(2, Bound("SRC", 2, "")), (5, Bound("SRC", None, "identity"))])
def test_lag_goes_on_when_the_size_fits_or_the_layout_is_unknown(monkeypatch, capsys, value, bound):
    rc, err, polled = _lag(monkeypatch, capsys, value, bound)
    assert rc == 7 and polled, err  # reached the poll


@pytest.mark.parametrize("state, new, writes", [
    ("ACTIVE", None, True), ("ACTIVE", "NONE", True), ("DOWNGRADE_ACTIVE", "ACTIVE", True),
    ("ACTIVE", "STANDBY", False), ("ACTIVE", "DOWNGRADE_ACTIVE", False),  # leaving ACTIVE: its .syncrep WAL closes
    ("DOWNGRADE_ACTIVE", None, False), ("STANDBY", None, False), ("STANDBY", "DOWNGRADE_ACTIVE", False),
    ("NONE", None, False), (None, None, False),
])
def test_only_a_sync_peer_active_here_writes_a_syncrep_group(state, new, writes):
    assert wal_groups.writes_syncrep(state, new) is writes


def test_sync_states_decode_as_hbase_writes_them():
    meta = b"\xff\x00\x00\x00\x14master:22871k\x16\xcaQ\x18\xab\xcfk"  # ZKMetadata, as read on real 3.0.0-alpha-4
    assert wal_groups.decode_sync_state(meta + b"PBUF\x08\x00") == "NONE"
    assert wal_groups.decode_sync_state(b"PBUF\x08\x01") == "ACTIVE"
    assert wal_groups.decode_sync_state(meta + b"PBUF\x08\x02") == "DOWNGRADE_ACTIVE"
    assert wal_groups.decode_sync_state(b"PBUF\x08\x03") == "STANDBY"
    assert wal_groups.decode_sync_state(b"PBUF") == "NONE"  # the field absent: proto2's default
    assert wal_groups.decode_sync_state(b"garbage") is None and wal_groups.decode_sync_state(None) is None


def test_sync_peers_counted_by_their_state_here():
    key, remote = "zk:2181:/hbase", "hdfs://nn/hbase/remoteWALs"
    peers = [Peer(i, PeerConfig(cluster_key=key, table_cfs={"t": []}, remote_wal_dir=remote), True)
             for i in ("a", "b", "c", "d")]
    states = {"a": ("ACTIVE", "NONE"), "b": ("STANDBY", "NONE"), "c": ("DOWNGRADE_ACTIVE", "ACTIVE")}
    assert sync_peer_ids(peers, states) == ("a", "c")  # d: state not read, not counted
    assert sync_peer_ids(peers) == ("a", "b", "c", "d")
