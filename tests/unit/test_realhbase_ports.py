"""The test bed plans its JVMs' ports below the kernel's ephemeral range: a port from bind(0) could be taken by
any outgoing connection before the JVM binds it seconds later (a dc2 master died with "Address already in use"
when a benchmark's bed started beside a demo's)."""
import random
import socket

from realhbase import config


def test_planned_ports_are_free_distinct_and_below_the_ephemeral_range():
    low, _ = config.ephemeral_range()
    ports = config.plan_ports({})
    assert sorted(ports) == sorted(config.PORT_NAMES)
    assert len(set(ports.values())) == len(ports)
    assert all(port < low and config.port_free(port) for port in ports.values()), ports


def test_a_saved_port_is_kept_while_free_and_replaced_once_taken():
    saved = config.plan_ports({})
    assert config.plan_ports(saved) == saved  # stable addresses across restarts
    with socket.socket() as holder:
        holder.bind((config.HOST, saved["master"]))
        holder.listen(1)
        again = config.plan_ports(saved)
    assert again["master"] != saved["master"] and again["master"] < config.ephemeral_range()[0]
    assert {k: v for k, v in again.items() if k != "master"} == {k: v for k, v in saved.items() if k != "master"}


def test_the_range_is_read_from_the_kernel_and_a_taken_candidate_is_skipped(tmp_path):
    proc = tmp_path / "ip_local_port_range"
    proc.write_text("40000\t60999\n")
    assert config.ephemeral_range(str(proc)) == (40000, 60999)
    assert config.ephemeral_range(str(tmp_path / "missing")) == (32768, 60999)
    first = config.listening_port(set(), random.Random(7))
    assert config.listening_port({first}, random.Random(7)) != first


def test_two_clusters_planned_in_one_start_never_share_a_port():
    """dc2's ports are planned before dc1's JVMs bind theirs, so port_free cannot see dc1's: the plan must (once
    dc1's NameNode and dc2's Thrift2 info server were given the same port, and the NameNode died on it)."""
    planned: set[int] = set()
    dc1 = config.plan_ports({}, planned=planned)
    dc2 = config.plan_ports({}, planned=planned)
    assert not set(dc1.values()) & set(dc2.values())
    assert planned == set(dc1.values()) | set(dc2.values())
    # a saved port the other cluster was just given is replaced, not reused
    again = config.plan_ports({"master": dc1["master"]}, planned=planned)
    assert again["master"] != dc1["master"] and not set(again.values()) & (set(dc1.values()) | set(dc2.values()))
