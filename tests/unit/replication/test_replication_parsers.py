"""`list_peers` and `status 'replication'` parsers against the reference's samples (§2.1, §2.2)."""
from __future__ import annotations

import pytest

from hbase_migration.replication.shell_parsers import (
    ListedPeer,
    QueueStatus,
    ShellOutputError,
    SinkStatus,
    parse_list_peers,
    parse_replication_status,
)

# Reference §2.1, captured from a real 2.x cluster (verbatim, trailing spaces included).
LIST_PEERS_2X = """\
hbase:004:0> list_peers
 PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH SERIAL
 1 cdp01:2181:/hbase  DISABLED true   0 false
1 row(s)
Took 0.0102 seconds
=> #<Java::JavaUtil::ArrayList:0x4b691611>
"""


HEADER_21 = (" PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH"
             " SERIAL\n")


def test_list_peers_reference_sample():
    assert parse_list_peers(LIST_PEERS_2X) == [
        ListedPeer(peer_id="1", cluster_key="cdp01:2181:/hbase", state="DISABLED", endpoint_class=None,
                   replicate_all=True, namespaces=None, table_cfs=None, bandwidth=0, serial=False)
    ]


def test_list_peers_2_0_header_several_rows_and_filled_columns():
    output = (
        "SLF4J: Class path contains multiple SLF4J bindings.\n"
        " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME STATE REPLICATE_ALL NAMESPACES TABLE_CFS BANDWIDTH\n"
        " 1 zk1,zk2,zk3:2181:/hbase  ENABLED false ns1;ns2 ns3.t1:cf1,cf2;t2 1048576\n"
        " mig_2 zk9:2181:/hbase-dc2 org.example.MyEndpoint DISABLED true !ns4 !t9 0\n"
        "2 row(s)\n"
        "Took 0.0150 seconds\n"
    )
    first, second = parse_list_peers(output)
    assert first == ListedPeer(peer_id="1", cluster_key="zk1,zk2,zk3:2181:/hbase", state="ENABLED",
                               replicate_all=False, namespaces="ns1;ns2", table_cfs="ns3.t1:cf1,cf2;t2",
                               bandwidth=1048576, serial=None)
    assert first.enabled and first.table_cfs_map() == {"ns3:t1": ["cf1", "cf2"], "t2": []}
    assert second.endpoint_class == "org.example.MyEndpoint" and not second.enabled
    assert (second.namespaces, second.table_cfs, second.table_cfs_map()) == ("!ns4", "!t9", {})


def test_list_peers_1x_header():
    output = (
        " PEER_ID CLUSTER_KEY STATE TABLE_CFS\n"
        " 1 zk1:2181:/hbase ENABLED t1;t2:cf1\n"
        " 2 zk2:2181:/hbase DISABLED \n"
        "2 row(s) in 0.0300 seconds\n"
    )
    assert parse_list_peers(output) == [
        ListedPeer(peer_id="1", cluster_key="zk1:2181:/hbase", state="ENABLED", table_cfs="t1;t2:cf1"),
        ListedPeer(peer_id="2", cluster_key="zk2:2181:/hbase", state="DISABLED", table_cfs=None),
    ]


def test_list_peers_3x_header():
    output = (
        " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME REMOTE_ROOT_DIR SYNC_REPLICATION_STATE STATE REPLICATE_ALL "
        "NAMESPACES TABLE_CFS BANDWIDTH SERIAL\n"
        " 1 zk1:2181:/hbase   NONE ENABLED true   0 false\n"
        " 2 zk2:2181:/hbase  hdfs://nn/remoteWALs ACTIVE DISABLED false  t1 0 true\n"
    )
    one, two = parse_list_peers(output)
    assert (one.sync_replication_state, one.remote_root_dir, one.enabled) == ("NONE", None, True)
    assert (two.remote_root_dir, two.sync_replication_state, two.table_cfs, two.serial) == (
        "hdfs://nn/remoteWALs", "ACTIVE", "t1", True)


def test_list_peers_as_hbase_3_prints_it_nil_for_an_absent_cell():
    """Real HBase 3.0.0-alpha-4 (the 3.0.0-alpha-3 shell, realhbase): `nil`, not an empty cell, for the endpoint
    class, the remote WAL dir and a missing cluster key."""
    output = (
        "hbase:002:0> list_peers\n"
        " PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME REMOTE_ROOT_DIR SYNC_REPLICATION_STATE STATE REPLICATE_ALL "
        "NAMESPACES TABLE_CFS BANDWIDTH SERIAL\n"
        " s1 127.0.0.1:13892:/hbase-dc1 nil hdfs://127.0.0.1:32135/hbase/remoteWALs STANDBY ENABLED false  "
        "default.sr1 0 false\n"
        " 2 127.0.0.1:13892:/hbase-dc2 nil nil NONE DISABLED false  default.t1:cf 0 false\n"
        "2 row(s)\n"
        "Took 0.0902 seconds\n"
    )
    sync, plain = parse_list_peers(output)
    assert sync == ListedPeer(peer_id="s1", cluster_key="127.0.0.1:13892:/hbase-dc1", state="ENABLED",
                              endpoint_class=None, replicate_all=False, namespaces=None, table_cfs="default.sr1",
                              bandwidth=0, serial=False, remote_root_dir="hdfs://127.0.0.1:32135/hbase/remoteWALs",
                              sync_replication_state="STANDBY")
    assert (plain.endpoint_class, plain.remote_root_dir, plain.sync_replication_state, plain.enabled) == (
        None, None, "NONE", False)


def test_list_peers_with_collapsed_whitespace_is_parsed_from_both_ends():
    output = HEADER_21 + "1 cdp01:2181:/hbase DISABLED true 0 false\n" \
        "2 zk:2181:/h ENABLED false ns1 t1:cf 5 true\n"
    one, two = parse_list_peers(output)
    assert (one.endpoint_class, one.state, one.namespaces, one.table_cfs, one.bandwidth) == (
        None, "DISABLED", None, None, 0)
    assert (two.namespaces, two.table_cfs, two.bandwidth, two.serial) == ("ns1", "t1:cf", 5, True)


def test_list_peers_ambiguous_row_is_an_error_not_a_guess():
    with pytest.raises(ShellOutputError, match="is ambiguous once spaces are collapsed"):
        parse_list_peers(HEADER_21 + "1 zk:2181:/h ENABLED false ns1 0 false\n")


def test_list_peers_malformed_output():
    with pytest.raises(ShellOutputError, match="no list_peers header"):
        parse_list_peers("ERROR: something else entirely\n")
    header = " PEER_ID CLUSTER_KEY STATE TABLE_CFS\n"
    with pytest.raises(ShellOutputError, match="does not fit the header"):
        parse_list_peers(header + " 1 zk1:2181:/hbase MAYBE t1\n")


def test_list_peers_empty():
    output = HEADER_21 + "0 row(s)\nTook 0.0040 seconds\n"
    assert parse_list_peers(output) == []


# Reference §2.2, 1.x / 2.0-2.1 one-line format; a second peer and a recovered queue appended on the line.
STATUS_1X = """\
version 2.1.x
3 live servers
    rs1.example.com:
       SOURCE: PeerID=1, AgeOfLastShippedOp=0, SizeOfLogQueue=1, TimeStampsOfLastShippedOp=Mon Jul 18 09:53:28 CST 2016, Replication Lag=0 PeerID=2, AgeOfLastShippedOp=1200, SizeOfLogQueue=3, TimeStampsOfLastShippedOp=Mon Jul 18 09:53:27 CST 2016, Replication Lag=1200 PeerID=1-rs-2.example.com,16020,1468800000000, AgeOfLastShippedOp=0, SizeOfLogQueue=2, TimeStampsOfLastShippedOp=Thu Jan 01 08:00:00 CST 1970, Replication Lag=9223372036854775807
       SINK  : AgeOfLastAppliedOp=0, TimeStampsOfLastAppliedOp=Mon Jul 18 09:53:28 CST 2016
    rs3.example.com:
       SOURCE:
       SINK  : AgeOfLastAppliedOp=5, TimeStampsOfLastAppliedOp=Mon Jul 18 09:53:20 CST 2016
"""  # noqa: E501 - shell lines are long


def test_status_one_line_format():
    status = parse_replication_status(STATUS_1X)
    assert (status.version, status.live_servers, status.format) == ("2.1.x", 3, "1.x")
    assert [s.host for s in status.servers] == ["rs1.example.com", "rs3.example.com"]
    rs1, rs3 = status.servers
    assert [(q.queue_id, q.peer_id, q.recovered, q.age_of_last_shipped_op, q.size_of_log_queue,
             q.replication_lag) for q in rs1.queues] == [
        ("1", "1", False, 0, 1, 0),
        ("2", "2", False, 1200, 3, 1200),
        ("1-rs-2.example.com,16020,1468800000000", "1", True, 0, 2, 9223372036854775807),
    ]
    assert rs1.queues[0].timestamp_of_last_shipped_op == "Mon Jul 18 09:53:28 CST 2016"
    assert rs1.sink == SinkStatus(age_of_last_applied_op=0,
                                  timestamps_of_last_applied_op="Mon Jul 18 09:53:28 CST 2016",
                                  fields={"AgeOfLastAppliedOp": "0",
                                          "TimeStampsOfLastAppliedOp": "Mon Jul 18 09:53:28 CST 2016"})
    assert rs3.queues == [] and rs3.sink.age_of_last_applied_op == 5
    assert [(h, q.queue_id) for h, q in status.queues_of("1")] == [
        ("rs1.example.com", "1"), ("rs1.example.com", "1-rs-2.example.com,16020,1468800000000")]


# Reference §2.2, 2.2+ format, verbatim ("runnning" included), plus a second server whose line carries
# two peers, a queue whose threads have not started, an idle sink, and the shell's trailer.
STATUS_22 = """\
version 2.4.x
3 live servers
    rs1.example.com:
       SOURCE: PeerID=1
         Normal Queue: 1
           AgeOfLastShippedOp=30000, TimeStampOfLastShippedOp=Wed Nov 21 07:07:58 GMT 2018, SizeOfLogQueue=1, EditsReadFromLogQueue=12, OpsShippedToTarget=10, TimeStampOfNextToReplicate=Wed Nov 21 07:02:28 GMT 2018, Replication Lag=0
         Recovered Queue: 1-rs2.example.com,16020,1542784524057
           No Ops shipped since last restart, SizeOfLogQueue=1, EditsReadFromLogQueue=0, OpsShippedToTarget=0, No edits for this source since it started, Replication Lag=0
      SINK: TimeStampStarted=1542784524057, AgeOfLastAppliedOp=0, TimeStampsOfLastAppliedOp=Wed Nov 21 07:07:58 GMT 2018
    ip-10-0-0-3.ec2.internal:
       SOURCE: PeerID=1
         Normal Queue: 1
           No Reader/Shipper threads runnning yet. PeerID=peer_2
         Normal Queue: peer_2
           AgeOfLastShippedOp=5, TimeStampOfLastShippedOp=Wed Nov 21 07:07:59 GMT 2018, SizeOfLogQueue=2, EditsReadFromLogQueue=40, OpsShippedToTarget=38, TimeStampOfNextToReplicate=Wed Nov 21 07:07:58 GMT 2018, Replication Lag=1000
         Recovered Queue: peer_2-ip-10-0-0-9.ec2.internal,16020,1542784500000-rs-x,16020,1542784400000
           No Ops shipped since last restart, SizeOfLogQueue=4, EditsReadFromLogQueue=0, OpsShippedToTarget=0, No edits for this source since it started, Replication Lag=0
      SINK: TimeStampStarted=1542784524058, Waiting for OPs...\x20
Took 0.0421 seconds
"""  # noqa: E501 - shell lines are long


def test_status_multi_line_format():
    status = parse_replication_status(STATUS_22)
    assert (status.version, status.live_servers, status.format) == ("2.4.x", 3, "2.2+")
    rs1, rs3 = status.servers
    assert rs1.host == "rs1.example.com" and rs3.host == "ip-10-0-0-3.ec2.internal"
    normal, recovered = rs1.queues
    assert normal == QueueStatus(
        queue_id="1", peer_id="1", recovered=False, age_of_last_shipped_op=30000, size_of_log_queue=1,
        replication_lag=0, edits_read=12, ops_shipped=10,
        timestamp_of_last_shipped_op="Wed Nov 21 07:07:58 GMT 2018",
        timestamp_of_next_to_replicate="Wed Nov 21 07:02:28 GMT 2018",
        fields={"AgeOfLastShippedOp": "30000", "TimeStampOfLastShippedOp": "Wed Nov 21 07:07:58 GMT 2018",
                "SizeOfLogQueue": "1", "EditsReadFromLogQueue": "12", "OpsShippedToTarget": "10",
                "TimeStampOfNextToReplicate": "Wed Nov 21 07:02:28 GMT 2018", "Replication Lag": "0"})
    assert (recovered.queue_id, recovered.peer_id, recovered.recovered) == (
        "1-rs2.example.com,16020,1542784524057", "1", True)
    assert (recovered.shipped_since_restart, recovered.edits_since_start, recovered.running) == (
        False, False, True)
    assert (recovered.age_of_last_shipped_op, recovered.size_of_log_queue, recovered.replication_lag) == (
        None, 1, 0)
    assert rs1.sink.timestamp_started == 1542784524057 and rs1.sink.age_of_last_applied_op == 0

    not_running, peer2, peer2_recovered = rs3.queues
    assert (not_running.queue_id, not_running.running, not_running.size_of_log_queue) == ("1", False, None)
    assert (peer2.peer_id, peer2.replication_lag, peer2.ops_shipped) == ("peer_2", 1000, 38)
    assert (peer2_recovered.peer_id, peer2_recovered.recovered, peer2_recovered.size_of_log_queue) == (
        "peer_2", True, 4)
    assert rs3.sink == SinkStatus(timestamp_started=1542784524058, waiting_for_ops=True,
                                  fields={"TimeStampStarted": "1542784524058"})
    assert [q.queue_id for _, q in status.queues_of("peer_2")] == [
        "peer_2", "peer_2-ip-10-0-0-9.ec2.internal,16020,1542784500000-rs-x,16020,1542784400000"]


def test_status_source_only_variant():
    output = "version 2.4.x\n1 live servers\n    rs1:\n       SOURCE: PeerID=1\n         Normal Queue: 1\n" \
             "           No Reader/Shipper threads runnning yet.\n"
    status = parse_replication_status(output)
    assert status.servers[0].sink is None and status.servers[0].queues[0].running is False


@pytest.mark.parametrize("output, message", [
    ("", "no `status 'replication'` output found"),
    ("version 2.4.x\n1 live servers\n    rs1:\n"
     "       SOURCE: PeerID=1, SizeOfLogQueue=x, Replication Lag=0\n",
     "server rs1: SizeOfLogQueue='x' is not an integer"),
    ("version 2.4.x\n1 live servers\n    rs1:\n       SOURCE: PeerID=1\n         Normal Queue: 1\n"
     "           Something unexpected\n", "unexpected text 'Something unexpected'"),
    ("version 2.4.x\n1 live servers\n    rs1:\n       SOURCE: PeerID=1\n         Normal Queue: 1-a,1,1\n"
     "           SizeOfLogQueue=1\n", "Normal Queue '1-a,1,1' contradicts its queue id"),
])
def test_status_malformed(output, message):
    with pytest.raises(ShellOutputError, match=message):
        parse_replication_status(output)
