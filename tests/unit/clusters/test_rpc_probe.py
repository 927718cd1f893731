"""The region servers' RPC probe (`data_path: auto`): what HBase's RPC server answers a preamble of a version it
does not speak, read exactly, and what other servers answer told apart from it."""
import pytest

from hbase_migration.clusters.rpc_probe import PREAMBLE, ClusterProbe, ServerProbe, frame_size, parse_answer
from hbase_migration.clusters.zk import encode_varint, pb_bytes, pb_varint

# HBase 2.6.4's region server (the bed's), byte for byte, to b"HBas\x7fP": length 154, a varint-delimited
# ResponseHeader {call_id: 0xffffffff, exception {class, stack_trace, do_not_retry: true}}; then it closed.
HBASE_2_6_4 = bytes.fromhex(
    "0000009a980108ffffffff0f128f010a316f72672e6170616368652e6861646f6f702e68626173652e6970632e57726f6e6756657273"
    "696f6e457863657074696f6e125873657276657256657273696f6e3d302c20636c69656e7456657273696f6e3d3132372c2061757468"
    "4d6574686f643d38302c20617574684e616d653d756e6b6e6f776e2066726f6d203132372e302e302e313a33333139382801")


def test_the_preamble_is_hbas_a_version_hbase_does_not_speak_and_simple_auth():
    assert PREAMBLE == b"HBas\x7f\x50"


def test_hbase_s_own_answer_names_wrong_version_exception():
    answer = parse_answer(HBASE_2_6_4)
    assert answer.hbase and answer.exception == "org.apache.hadoop.hbase.ipc.WrongVersionException"
    assert answer.what == ("HBase RPC: WrongVersionException: serverVersion=0, clientVersion=127, authMethod=80, "
                           "authName=unknown from 127.0.0.1:33198")
    assert frame_size(HBASE_2_6_4) == len(HBASE_2_6_4) == 158


def _frame(exception_class: str, message: str = "m") -> bytes:
    header = pb_varint(1, 0xFFFFFFFF) + pb_bytes(2, pb_bytes(1, exception_class) + pb_bytes(2, message))
    body = encode_varint(len(header)) + header
    return len(body).to_bytes(4, "big") + body


def test_any_hbase_exception_counts_and_another_project_s_does_not():
    assert parse_answer(_frame("org.apache.hadoop.hbase.ipc.FatalConnectionException")).hbase
    other = parse_answer(_frame("org.apache.hadoop.ipc.RpcServerException"))
    assert not other.hbase and other.what == \
        "answered an exception 'org.apache.hadoop.ipc.RpcServerException', not one of HBase's"


@pytest.mark.parametrize("data, ended, what", [
    (b"", "closed the connection",  # a Thrift gateway
     "closed the connection without a byte (HBase's RPC server answers a wrong preamble at once)"),
    (b"", "gave no answer within 3s",
     "gave no answer within 3s without a byte (HBase's RPC server answers a wrong preamble at once)"),
    (b"<!DOCTYPE HTML>", "closed the connection",  # minihbase's region servers: HTTP
     "answered b'<!DOCTYPE HTML>' (15 bytes): not an HBase RPC frame"),
    (b"\x00\x00\x00\x00", "closed the connection",
     "answered b'\\x00\\x00\\x00\\x00' (4 bytes): not an HBase RPC frame"),
    (b"\x00\x00", "closed the connection", "answered b'\\x00\\x00' (2 bytes): not an HBase RPC frame"),
])
def test_what_is_not_hbase_says_what_it_answered(data, ended, what):
    answer = parse_answer(data, ended)
    assert not answer.hbase and answer.what == what


def test_a_cut_answer_and_a_malformed_header_are_not_hbase():
    cut = parse_answer(HBASE_2_6_4[:100], "reset the connection (ConnectionResetError: x)")
    assert not cut.hbase and cut.what.startswith(
        "reset the connection (ConnectionResetError: x) after 100 of the 158 bytes its frame announced")
    no_exception = b"\x00\x00\x00\x07\x06" + pb_varint(1, 0xFFFFFFFF)
    assert parse_answer(no_exception).what.startswith("answered an RPC frame without an exception")
    overrun = b"\x00\x00\x00\x02\x7f\x08"
    assert "not an HBase RPC response header (a header of 127 bytes overruns the frame)" in parse_answer(overrun).what


def test_a_cluster_passes_only_when_every_region_server_answers():
    good, bad = ServerProbe("rs1:16020", True, "HBase RPC: ..."), ServerProbe("rs2:16020", False, "closed ...")
    assert ClusterProbe("dc1", (good, good)).ok
    assert ClusterProbe("dc1", (good, good)).reason() == "dc1: 2 region server(s) answer as HBase RPC"
    assert not ClusterProbe("dc1", (good, bad)).ok
    assert ClusterProbe("dc1", (bad, good, bad)).reason() == "dc1: region server rs2:16020 closed ... (and 1 more of 3)"
    assert not ClusterProbe("dc1").ok and ClusterProbe("dc1").reason() == \
        "dc1: no live region server registered in ZooKeeper"
    down = ClusterProbe("dc1", error="ZooKeeperUnreachable: no answer")
    assert not down.ok and down.reason() == "dc1: region servers not listed (ZooKeeperUnreachable: no answer)"
