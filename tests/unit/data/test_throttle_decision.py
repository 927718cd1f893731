"""The copy's load-aware throttle, pure parts: limits, one server's figures from /jmx, the AIMD decision as a
truth table, the gate's rest arithmetic, and the gate itself with a fake clock and a scripted decision."""
from __future__ import annotations

import pytest

from hbase_migration.data.throttle import (
    ABORTED,
    FULL,
    IPC_BEAN,
    PAUSED,
    SERVER_BEAN,
    SLOW,
    LoadAbort,
    LoadGate,
    LoadLimitError,
    LoadLimits,
    LoadSample,
    LoadState,
    ServerLoad,
    decide_load,
    limits_text,
    paced_until,
    parse_limits,
    parse_server_load,
    rescaled,
    summarize_decisions,
)
from tests.fake_clock import FakeClock

RS1, RS2 = "rs1.example.com,16020,1", "rs2.example.com,16020,2"
LIMITS = LoadLimits({"numCallsInGeneralQueue": 10, "write_p99_ms": 100},
                    {"numCallsInGeneralQueue": 100, "write_p99_ms": 1000}, max_pause_s=60, sample_s=5)


# ------------------------------------------------------------------------------------------------ limits

def test_limits_parse_in_order_and_round_trip():
    limits = parse_limits(" numCallsInGeneralQueue=10, write_p99_ms = 100,Put_99.9th_percentile=2.5,,")
    assert limits == {"numCallsInGeneralQueue": 10.0, "write_p99_ms": 100.0, "Put_99.9th_percentile": 2.5}
    assert list(limits) == ["numCallsInGeneralQueue", "write_p99_ms", "Put_99.9th_percentile"]
    assert limits_text(limits) == "numCallsInGeneralQueue=10,write_p99_ms=100,Put_99.9th_percentile=2.5"
    assert parse_limits(limits_text(limits)) == limits
    assert parse_limits("") == {} and parse_limits(None) == {}


@pytest.mark.parametrize("text, message", [
    ("queueSize", "max_load: 'queueSize' is not metric=threshold"),
    ("=5", "max_load: '=5' is not metric=threshold"),
    ("threads_running=25", "max_load: unknown metric 'threads_running'; use one of queueSize,"),
    ("Fly_99th_percentile=3", "max_load: unknown metric 'Fly_99th_percentile'"),
    ("Put_p99=3", "max_load: unknown metric 'Put_p99'"),
    ("queueSize=lots", "max_load: threshold of queueSize must be a number, got 'lots'"),
    ("queueSize=0", "max_load: threshold of queueSize must be a positive number, got '0'"),
    ("queueSize=-1", "max_load: threshold of queueSize must be a positive number, got '-1'"),
    ("queueSize=1,queueSize=2", "max_load: queueSize is given twice"),
    (5, "max_load must be text like"),
])
def test_bad_limits_say_which_part(text, message):
    with pytest.raises(LoadLimitError) as e:
        parse_limits(text, "max_load")
    assert str(e.value).startswith(message)


def test_limits_refuse_a_critical_level_below_the_max_and_nothing_to_watch():
    with pytest.raises(LoadLimitError, match="critical_load queueSize=5 is below max_load's 10"):
        LoadLimits({"queueSize": 10}, {"queueSize": 5})
    with pytest.raises(LoadLimitError, match="both empty"):
        LoadLimits({}, {})
    with pytest.raises(LoadLimitError, match="max_pause_s must be a positive number"):
        LoadLimits({"queueSize": 10}, {}, max_pause_s=0)
    assert LoadLimits.from_options("", None) is None
    assert LoadLimits.from_options("queueSize=10", "") == LoadLimits({"queueSize": 10.0}, {})
    assert LoadLimits("queueSize=10", "queueSize=20").critical_load == {"queueSize": 20.0}


# ------------------------------------------------------------------------------------------------ /jmx

IPC = {"beans": [{"name": IPC_BEAN, "modelerType": "RegionServer,sub=IPC", "queueSize": 4096,
                  "numCallsInGeneralQueue": 7, "numActiveHandler": 30, "numOpenConnections": 3,
                  "receivedBytes": 123, "tag.Hostname": "rs1"}]}
SERVER = {"beans": [{"name": SERVER_BEAN, "Put_99th_percentile": 40, "PutBatch_99th_percentile": 120,
                     "Delete_99th_percentile": 0, "Get_99th_percentile": 15, "Get_max": 90,
                     "ScanTime_99th_percentile": 800, "Put_num_ops": 999, "regionCount": 4, "tag.Context": "x"}]}


def test_one_servers_figures_and_the_shorthands():
    assert parse_server_load(IPC, SERVER) == {
        "queueSize": 4096.0, "numCallsInGeneralQueue": 7.0, "numActiveHandler": 30.0, "numOpenConnections": 3.0,
        "Put_99th_percentile": 40.0, "PutBatch_99th_percentile": 120.0, "Delete_99th_percentile": 0.0,
        "Get_99th_percentile": 15.0, "Get_max": 90.0, "ScanTime_99th_percentile": 800.0,
        "write_p99_ms": 120.0,  # the worst write call (PutBatch), scans not counted as reads
        "read_p99_ms": 15.0,
    }


def test_missing_beans_give_no_figures():
    assert parse_server_load({"beans": []}, None) == {}
    assert parse_server_load(IPC, {"beans": []}) == {
        "queueSize": 4096.0, "numCallsInGeneralQueue": 7.0, "numActiveHandler": 30.0, "numOpenConnections": 3.0}


# ------------------------------------------------------------------------------------------------ decision

def sample(t: float, rs1: dict | None = None, rs2: dict | None = None, errors: dict | None = None) -> LoadSample:
    servers = []
    for name, values in ((RS1, rs1), (RS2, rs2)):
        if errors and name in errors:
            servers.append(ServerLoad(name, error=errors[name]))
        else:
            servers.append(ServerLoad(name, values if values is not None else
                                      {"numCallsInGeneralQueue": 0.0, "write_p99_ms": 5.0}))
    return LoadSample(t, tuple(servers))


QUIET = {"numCallsInGeneralQueue": 0.0, "write_p99_ms": 5.0}
BUSY = {"numCallsInGeneralQueue": 12.0, "write_p99_ms": 5.0}
SLOW_WRITES = {"numCallsInGeneralQueue": 1.0, "write_p99_ms": 150.0}
CRITICAL = {"numCallsInGeneralQueue": 250.0, "write_p99_ms": 80.0}


def run(states: list, limits: LoadLimits = LIMITS, start: LoadState | None = None) -> list[LoadState]:
    state = start or LoadState()
    out = []
    for s in states:
        state = decide_load(state, s, limits)
        out.append(state)
    return out


def brief(states: list[LoadState]) -> list[tuple[str, float]]:
    return [(s.state, s.factor) for s in states]


def test_quiet_source_runs_at_full_speed():
    [state] = run([sample(100, QUIET, QUIET)])
    assert state == LoadState(factor=1.0, state=FULL, paused_since=None, reason="under max_load",
                              worst={"numCallsInGeneralQueue": (0.0, RS1), "write_p99_ms": (5.0, RS1)},
                              decided_at=100, samples=1)


def test_past_max_load_halves_the_factor_down_to_the_floor_and_recovers_step_by_step():
    states = run([sample(t, BUSY) for t in range(0, 30, 5)] + [sample(t, QUIET) for t in range(30, 60, 5)])
    assert brief(states) == [(SLOW, 0.5), (SLOW, 0.25), (SLOW, 0.125), (SLOW, 0.0625), (SLOW, 0.05), (SLOW, 0.05),
                             (SLOW, 0.15), (SLOW, 0.25), (SLOW, 0.35), (SLOW, 0.45), (SLOW, 0.55), (SLOW, 0.65)]
    assert states[0].reason == f"past max_load: numCallsInGeneralQueue=12 on {RS1} >= 10"
    assert states[6].reason == "under max_load: recovering to 0.15"


def test_the_worst_server_decides_and_is_named():
    [state] = run([sample(0, QUIET, SLOW_WRITES)])
    assert (state.state, state.factor) == (SLOW, 0.5)
    assert state.reason == f"past max_load: write_p99_ms=150 on {RS2} >= 100"
    assert state.worst == {"numCallsInGeneralQueue": (1.0, RS2), "write_p99_ms": (150.0, RS2)}


def test_past_critical_load_pauses_then_resumes_slowly():
    states = run([sample(0, QUIET), sample(5, CRITICAL), sample(10, CRITICAL), sample(15, BUSY), sample(20, QUIET)])
    assert brief(states) == [(FULL, 1.0), (PAUSED, 0.0), (PAUSED, 0.0), (SLOW, 0.05), (SLOW, 0.15)]
    assert states[1].paused_since == 5 and states[2].paused_since == 5 and states[3].paused_since is None
    assert states[2].reason == f"past critical_load, paused 5s: numCallsInGeneralQueue=250 on {RS1} >= 100"
    assert states[3].reason == "under critical_load again: resuming at factor 0.05"


def test_paused_for_max_pause_gives_up_for_good():
    states = run([sample(t, CRITICAL) for t in (0, 30, 59, 60)] + [sample(65, QUIET)])
    assert brief(states) == [(PAUSED, 0.0), (PAUSED, 0.0), (PAUSED, 0.0), (ABORTED, 0.0), (ABORTED, 0.0)]
    assert states[3].reason == ("paused 60s (max_pause_s 60) and still past critical_load: "
                                f"numCallsInGeneralQueue=250 on {RS1} >= 100")
    assert states[4] is states[3]  # terminal


def test_an_unreadable_server_holds_the_factor_but_cannot_hide_a_busy_one():
    held = run([sample(0, BUSY), sample(5, QUIET, errors={RS2: "refused"})])
    assert brief(held) == [(SLOW, 0.5), (SLOW, 0.5)]
    assert held[1].reason == f"factor held at 0.5; unreadable: {RS2}: refused"
    busy = run([sample(0, BUSY, errors={RS2: "refused"})])
    assert brief(busy) == [(SLOW, 0.5)]
    assert busy[0].reason == f"past max_load: numCallsInGeneralQueue=12 on {RS1} >= 10; unreadable: {RS2}: refused"
    nothing = run([LoadSample(0, ())])
    assert brief(nothing) == [(FULL, 1.0)] and nothing[0].reason == "factor held at 1; no live region server"


def test_a_metric_nobody_reports_is_named_and_triggers_nothing():
    limits = LoadLimits({"numCallsInGeneralQueue": 10, "Append_99th_percentile": 5}, {})
    [state] = run([sample(0, QUIET)], limits)
    assert (state.state, state.factor) == (FULL, 1.0)
    assert state.reason == "under max_load; not reported by any server: Append_99th_percentile"


def test_the_state_round_trips_through_json_and_summarizes():
    states = run([sample(0, BUSY), sample(5, CRITICAL), sample(10, QUIET)])
    assert all(LoadState.from_dict(s.to_dict()) == s for s in states)
    assert summarize_decisions(states, LIMITS) == {
        "max_load": "numCallsInGeneralQueue=10,write_p99_ms=100", "critical_load":
            "numCallsInGeneralQueue=100,write_p99_ms=1000", "max_pause_s": 60, "sample_s": 5,
        "samples": 3, "slow_samples": 2, "paused_samples": 1, "min_factor": 0.0, "final_state": SLOW,
        "aborted": False, "reason": "under critical_load again: resuming at factor 0.05"}


# ------------------------------------------------------------------------------------------------ the gate

def test_pacing_arithmetic():
    assert paced_until(10.0, 100, 200.0, 0.5) == 11.0  # 100 rows at 100 rows/s
    assert paced_until(10.0, 100, 200.0, 0.05) == 20.0
    assert rescaled(12.0, 20.0, 0.05, 0.1) == 16.0  # twice the factor: half of what is left
    assert rescaled(12.0, 20.0, 0.1, 0.05) == 28.0
    assert rescaled(21.0, 20.0, 0.1, 0.05) == 21.0  # nothing left


def scripted(*states: LoadState):
    fetched = []

    def fetch(url):
        fetched.append(url)
        return states[min(len(fetched) - 1, len(states) - 1)]

    return fetch, fetched


def test_the_gate_paces_at_the_factor_of_its_full_speed_rate():
    clock = FakeClock()
    fetch, fetched = scripted(LoadState(1.0, FULL), LoadState(0.5, SLOW), LoadState(0.25, SLOW),
                              LoadState(0.0, PAUSED), LoadState(1.0, FULL),
                              LoadState(0.0, ABORTED, reason="paused 60s (max_pause_s 60) and still past x"))
    gate = LoadGate("http://driver/decision", refresh_s=1.0, poll_s=0.5, fetch=fetch, clock=clock,
                    sleep=clock.sleep)
    assert gate.check().state == FULL  # a partition starts: decision read now (t=0)
    clock.now += 0.5  # 100 rows in 0.5 s at full speed: the reference is 200 rows/s
    assert gate.after_batch(100) == 0.0
    assert gate.reference_rows_per_s == 200.0
    clock.now += 0.5  # t=1.0: the decision is re-read (factor 0.5): 100 rows must take 1 s, 0.5 s of rest
    assert gate.after_batch(100) == pytest.approx(0.5)
    clock.now += 0.01  # t=1.51: a batch the read-ahead had ready; the timeline books another second
    assert gate.after_batch(100) == pytest.approx(0.99)  # re-read at t=2.5: factor 0.25 from now on
    clock.now += 0.01  # t=2.51: 100 rows at 50 rows/s: 2 s booked; after 1 s the driver says paused
    assert gate.after_batch(100) == pytest.approx(1.5)  # 1 s of pacing, 0.5 s paused, then full speed
    assert (gate.paused_s, round(clock.now, 2)) == (0.5, 4.01)
    clock.now += 0.3  # full speed again: measured, no rest
    assert gate.after_batch(50) == 0.0
    assert gate.reference_rows_per_s == pytest.approx(150 / 0.8)
    assert clock.slept == [0.5, 0.99, 1.0, 0.5]
    assert len(fetched) == 5
    clock.now += 2.0
    with pytest.raises(LoadAbort, match="source overloaded: paused 60s .* a re-run resumes"):
        gate.after_batch(100)
    with pytest.raises(LoadAbort):
        gate.check()


def test_a_task_slowed_from_its_first_batch_paces_on_that_batch():
    clock = FakeClock()
    fetch, _ = scripted(LoadState(0.5, SLOW))
    gate = LoadGate("u", fetch=fetch, clock=clock, sleep=clock.sleep)
    gate.check()
    clock.now += 0.25  # 100 rows in 0.25 s: 400 rows/s natural, 200 wanted
    assert gate.after_batch(100) == pytest.approx(0.25)
    assert gate.after_batch(0) == 0.0  # an empty batch books nothing


def test_an_unreachable_driver_keeps_the_last_decision():
    clock = FakeClock()
    answers = [LoadState(0.5, SLOW)]

    def fetch(url):
        if answers:
            return answers.pop(0)
        raise ConnectionError("refused")

    gate = LoadGate("u", fetch=fetch, clock=clock, sleep=clock.sleep)
    gate.check()
    clock.now += 2.0
    assert gate.after_batch(100) == pytest.approx(2.0)  # refresh failed: still 0.5 of this batch's rate
    never = LoadGate("u", fetch=lambda url: (_ for _ in ()).throw(ConnectionError("refused")), clock=clock,
                     sleep=clock.sleep)
    assert never.check().factor == 1.0  # nothing known: full speed (warned once)
