"""The nemesis's schedule is a pure function of (seed, duration, kinds), exactly; the phase is read from the
run's task states; ZooKeeper's ConnectResponse, a request's type and /proc/net/tcp are decoded exactly."""
from __future__ import annotations

import pytest

from chaos.schedule import (
    KINDS,
    MIN_WINDOW_S,
    PHASES,
    ScheduleError,
    fault_count,
    make_schedule,
    parse_kinds,
    phase_of,
    phase_window_s,
)
from chaos.zkproxy import parse_connect_response, request_type
from chaos.zksessions import parse_proc_net_tcp


def test_a_seed_gives_exactly_this_schedule():
    faults = [f.as_dict() for f in make_schedule(7, 150, ["rs_kill", "gateway_latency", "worker_kill", "zk_expire"])]
    assert faults == [
        {"index": 1, "phase": "peer_add", "offset_s": 7.6, "kind": "worker_kill", "target": "celery-worker-1",
         "hold_s": 11.5, "settings": {}},
        {"index": 2, "phase": "copy", "offset_s": 4.7, "kind": "zk_expire", "target": "toolkit-session",
         "hold_s": 0.0, "settings": {}},
        {"index": 3, "phase": "copy", "offset_s": 65.9, "kind": "zk_expire", "target": "toolkit-session",
         "hold_s": 0.0, "settings": {}},
        {"index": 4, "phase": "catch_up", "offset_s": 12.4, "kind": "gateway_latency", "target": "dc1:thrift2:0",
         "hold_s": 16.7, "settings": {"latency_ms": 1016}},
        {"index": 5, "phase": "verify", "offset_s": 42.6, "kind": "rs_kill", "target": "dc2:rs:0", "hold_s": 11.0,
         "settings": {}},
    ]
    assert [f.as_dict() for f in make_schedule(3, 120, ["gateway_reset", "postgres_restart"])] == [
        {"index": 1, "phase": "peer_add", "offset_s": 5.5, "kind": "postgres_restart", "target": "postgres",
         "hold_s": 7.0, "settings": {}},
        {"index": 2, "phase": "copy", "offset_s": 3.5, "kind": "gateway_reset", "target": "dc1:thrift2:0",
         "hold_s": 35.1, "settings": {"reset_probability": 0.11}},
        {"index": 3, "phase": "catch_up", "offset_s": 3.5, "kind": "gateway_reset", "target": "dc2:thrift2:1",
         "hold_s": 24.1, "settings": {"reset_probability": 0.26}},
        {"index": 4, "phase": "verify", "offset_s": 17.1, "kind": "postgres_restart", "target": "postgres",
         "hold_s": 3.2, "settings": {}},
    ]


def test_the_same_inputs_give_the_same_schedule_and_others_another():
    kinds = tuple(KINDS)
    assert make_schedule(11, 600, kinds) == make_schedule(11, 600, kinds)
    assert make_schedule(11, 600, kinds) != make_schedule(12, 600, kinds)
    assert make_schedule(11, 600, kinds) != make_schedule(11, 630, kinds)
    assert make_schedule(11, 600, kinds) != make_schedule(11, 600, kinds[:-1])


@pytest.mark.parametrize("seed", range(25))
def test_every_phase_and_every_kind_is_hit_within_its_bounds(seed):
    kinds = tuple(KINDS)
    duration = 600
    faults = make_schedule(seed, duration, kinds)
    assert len(faults) == fault_count(duration) == 20
    assert [f.index for f in faults] == list(range(1, 21))
    assert {f.phase for f in faults} == set(PHASES)
    assert {f.kind for f in faults} == set(kinds)  # 20 faults >= 10 kinds: each dealt at least once
    assert [(PHASES.index(f.phase), f.offset_s) for f in faults] == sorted(
        (PHASES.index(f.phase), f.offset_s) for f in faults)
    for f in faults:
        spec = KINDS[f.kind]
        assert 0 <= f.offset_s <= phase_window_s(f.phase, duration), f
        assert f.target in spec.targets, f
        assert spec.hold_s[0] <= f.hold_s <= spec.hold_s[1], f
        assert set(f.settings) == set(spec.settings), f
        for name, value in f.settings.items():
            assert spec.settings[name][0] <= value <= spec.settings[name][1], f


def test_a_short_duration_still_puts_one_fault_in_each_phase():
    faults = make_schedule(5, 30, ["gateway_kill"])
    assert [f.phase for f in faults] == list(PHASES)
    assert [phase_window_s(p, 30) for p in PHASES] == [15.0, 13.5, 15.0, 9.0]
    assert [phase_window_s(p, 10) for p in PHASES] == [15.0, MIN_WINDOW_S, 15.0, MIN_WINDOW_S]
    assert [phase_window_s(p, 600) for p in PHASES] == [15.0, 270.0, 15.0, 180.0]
    assert all(f.offset_s <= phase_window_s(f.phase, 30) for f in faults)


@pytest.mark.parametrize("seed, duration, kinds, message", [
    (-1, 60, "rs_kill", "--seed must be an integer >= 0, got -1"),
    (True, 60, "rs_kill", "--seed must be an integer >= 0, got True"),
    (1, 0, "rs_kill", "--duration must be a number of seconds > 0, got 0"),
    (1, 60, "", "--faults is empty"),
    (1, 60, "rs_kill,disk_full", "unknown fault kind(s) disk_full; known: rs_kill, gateway_kill"),
    (1, 60, "rs_kill,rs_kill", "--faults names rs_kill more than once"),
])
def test_bad_inputs_are_refused_naming_the_input(seed, duration, kinds, message):
    with pytest.raises(ScheduleError) as e:
        make_schedule(seed, duration, kinds)
    assert message in str(e.value)


def test_all_means_every_kind():
    assert parse_kinds("all") == tuple(KINDS)
    assert parse_kinds(" rs_kill , zk_expire ") == ("rs_kill", "zk_expire")


@pytest.mark.parametrize("states, phase", [  # a batch's steps are the `batch` task group's, one index per batch
    ({}, "peer_add"),
    ({"open_run": ["running"]}, "peer_add"),
    ({"open_run": ["success"], "preflight": ["success"], "batch.add_peer": ["up_for_retry"]}, "peer_add"),
    ({"batch.add_peer": ["success"], "batch.copy": [None, "scheduled"]}, "peer_add"),  # scheduled is not started
    ({"batch.add_peer": ["success"], "batch.copy": ["queued", None]}, "copy"),
    ({"batch.copy": ["success", "running"], "batch.enable_peer": [None]}, "copy"),
    ({"batch.copy": ["success", "success"], "batch.enable_peer": ["queued"]}, "catch_up"),
    ({"batch.enable_peer": ["success"], "batch.wait_drained": ["deferred"]}, "catch_up"),
    ({"batch.wait_drained": ["success"], "batch.verify": ["running", None]}, "verify"),
    ({"batch.verify": ["success"], "report": ["success"]}, "verify"),
    ({"batch.copy": ["failed"], "state_left_behind": ["running"]}, "copy"),
])
def test_the_phase_is_the_last_one_whose_tasks_have_started(states, phase):
    assert phase_of(states) == phase


def test_proc_net_tcp_gives_the_established_connections_to_a_port():
    text = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            "   0: 0100007F:A9CE 0100007F:0A8C 01 00000000:00000000 00:00000000 00000000     0        0 51234 1\n"
            "   1: 0100007F:A9CF 0100007F:0A8C 06 00000000:00000000 00:00000000 00000000     0        0 0 1\n"
            "   2: 0100007F:0A8C 0100007F:A9CE 01 00000000:00000000 00:00000000 00000000     0        0 51235 1\n")
    assert parse_proc_net_tcp(text, 0x0A8C) == {0xA9CE: 51234}


def test_a_connect_response_gives_the_session_id_and_password_and_a_request_its_type():
    import struct

    password = bytes(range(16))
    payload = struct.pack(">iiqi", 0, 10000, 0x100005F436A0000, 16) + password + b"\x00"
    assert parse_connect_response(payload) == (0x100005F436A0000, password)
    negative = struct.pack(">iiqi", 0, 10000, -1, 16) + password  # Java's long, shown unsigned
    assert parse_connect_response(negative) == (0xFFFFFFFFFFFFFFFF, password)
    expired = struct.pack(">iiqi", 0, 0, 0, 16) + bytes(16)  # an expired session's answer: id 0
    assert parse_connect_response(expired)[0] == 0
    with pytest.raises(ValueError, match="too short"):
        parse_connect_response(b"\x00" * 10)
    with pytest.raises(ValueError, match="password of 16 bytes does not fit"):
        parse_connect_response(struct.pack(">iiqi", 0, 1, 5, 16) + b"x")
    assert request_type(struct.pack(">ii", 7, -11)) == -11  # closeSession
    assert request_type(struct.pack(">ii", -2, 11)) == 11  # ping
    assert request_type(b"\x00\x01") is None


def summary_of(attempts, differences=0, unexpected=()):
    from argparse import Namespace

    from chaos.run import result

    args = Namespace(seed=1, duration=60.0, rows=10)
    return result(args, ("rs_kill",), [], None, None, attempts, {}, differences,
                  {"unexpected_repairs": list(unexpected)}, [], 0.0)


@pytest.mark.parametrize("attempts, differences, unexpected, status", [
    ([{"state": "success"}], 0, (), "success"),
    ([{"state": "failed", "left_behind": {"state_exact": True}}, {"state": "success"}], 0, (), "success"),
    ([{"state": "failed", "left_behind": {"state_exact": False}}, {"state": "success"}], 0, (), "failed"),
    ([{"state": "failed", "left_behind": {"state_exact": True}}, {"state": "failed",
                                                                  "left_behind": {"state_exact": True}}],
     0, (), "failed"),
    ([{"state": "success"}], 3, (), "failed"),
    ([{"state": "success"}], 0, ({"kind": "missing_on_target"},), "failed"),
])
def test_the_summary_says_success_only_for_a_finished_migration_with_zero_differences(attempts, differences,
                                                                                      unexpected, status):
    summary = summary_of(attempts, differences, unexpected)
    assert summary["status"] == status and summary["ok"] is (status == "success")
    assert summary["retriggered"] is (len(attempts) > 1)


def test_all_means_what_the_backend_can_do_and_real_hbase_kinds_are_refused_on_the_stand_in():
    from chaos.schedule import BACKEND_KINDS, STAND_IN_KINDS

    assert parse_kinds("all", "realhbase") == tuple(KINDS) == BACKEND_KINDS["realhbase"]
    assert parse_kinds("all", "minihbase") == STAND_IN_KINDS and set(STAND_IN_KINDS) < set(KINDS)
    assert parse_kinds("master_kill,rs_kill", "realhbase") == ("master_kill", "rs_kill")
    with pytest.raises(ScheduleError, match="master_kill, datanode_pause need real HBase .*drop --stand-in"):
        parse_kinds("rs_kill,master_kill,datanode_pause", "minihbase")


def test_the_seeds_table_names_the_backend_and_the_faults_fired_by_kind(tmp_path):
    import json

    from chaos import seeds

    summary = {"backend": "realhbase", "hbase_version": "2.6.4-hadoop3", "faults_fired": 3, "differences": 0,
               "faults": [{"kind": "rs_kill", "fired": True}, {"kind": "zk_expire", "fired": True},
                          {"kind": "rs_kill", "fired": True}, {"kind": "master_kill", "fired": False}],
               "attempts": [{"state": "success"}], "wall_time_s": 812.5, "status": "success"}
    (tmp_path / "2.json").write_text("log line\n" + json.dumps(summary) + "\n")
    (tmp_path / "10.json").write_text("")
    assert seeds.rows(tmp_path) == [
        ("2", "realhbase 2.6.4-hadoop3", "3/4", "rs_kill 2, zk_expire 1", 1, 0, 812.5, "success"),
        ("10", "-", "-", "-", "-", "-", "-", "no summary (see its .log)")]
    assert seeds.main([str(tmp_path)]) == 1  # a seed without a summary fails the table
