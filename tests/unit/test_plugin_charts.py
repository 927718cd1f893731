"""The dashboard's charts and the figures around them, exactly: scales and ticks, the SVG drawn (escaped, no
script), the copy's progress and ETA, the lag per region server with the disabled phase, oldWALs against its
quota with the projection, the peer as the cluster has it, and the links into the Airflow UI."""
from __future__ import annotations

import re

import pytest

from hbase_migration.ledger.store import ALL_TABLES
from hbase_migration.plugins.hbase_migration_ui import charts, views
from hbase_migration.plugins.hbase_migration_ui.live import LivePeer

T = 1_714_564_800_000  # 2024-05-01 12:00:00 UTC
GiB = 1 << 30
RUN = {"run_id": "manual__2024-05-01T12:00:00+00:00", "dag_id": "hbase_table_migration", "plan": "manual",
       "peer_id": "mig1", "t0_ms": T + 10_000, "status": "running", "tables": ["ns:a", "ns:b"],
       "started_ms": T, "ended_ms": None, "duration_ms": None, "params": {}}


# ---------------------------------------------------------------------------------------------------------
# Scales

@pytest.mark.parametrize("span, step", [(97, 20), (0.3, 0.1), (10, 2), (1, 0.2), (0, 1.0), (4_000, 1_000)])
def test_nice_step_is_one_two_or_five_times_a_power_of_ten(span, step):
    assert charts.nice_step(span) == pytest.approx(step)


def test_value_ticks_reach_the_top_and_bytes_tick_in_binary_units():
    assert charts.value_ticks(7) == [0, 2, 4, 6, 8]
    assert charts.value_ticks(0) == [0, 0.5]
    assert charts.value_ticks(5.6 * GiB, binary=True) == [0, 2 * GiB, 4 * GiB, 6 * GiB]
    assert charts.value_ticks(900, binary=True) == [0, 500, 1000]  # below 1 KiB: plain bytes


def test_time_ticks_fall_on_round_instants():
    assert charts.time_ticks(T + 1_500, T + 95_000) == [T + 30_000, T + 60_000, T + 90_000]
    assert charts.time_ticks(T, T + 3 * 3600_000) == [T + i * 3600_000 for i in range(4)]
    assert charts.time_label(T + 61_000, 1) == "12:01:01"
    assert charts.time_label(T, 2 * 86_400_000) == "05-01 12:00"


def test_downsample_keeps_first_and_last():
    points = [(i, float(i)) for i in range(10)]
    assert charts.downsample(points, 4) == ((0, 0.0), (3, 3.0), (6, 6.0), (9, 9.0))
    assert charts.downsample(points, 20) == tuple(points)


# ---------------------------------------------------------------------------------------------------------
# SVG

def test_an_empty_chart_says_so():
    svg = charts.Chart("Lag", (), charts.count_format, empty_text="No lag sample yet.").svg()
    assert 'data-points="0"' in svg and ">No lag sample yet.</text></svg>" in svg
    assert "<circle" not in svg


def test_a_chart_draws_a_line_and_a_dot_per_sample_with_its_value():
    chart = charts.Chart("Queue", (charts.Series("rs1:16020", ((T, 1.0), (T + 60_000, 5.0))),),
                         charts.count_format, rules=(charts.Rule(8.0, "quota"),),
                         markers=(charts.Marker(T + 30_000, "peer enabled"),),
                         bands=(charts.Band(T, T + 30_000, "peer DISABLED"),))
    svg = str(chart.svg())
    assert svg.startswith('<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 760 250"')
    assert 'data-points="2"' in svg
    dots = re.findall(r'<circle class="pt" cx="([\d.]+)" cy="([\d.]+)"', svg)
    # x from the left margin (78) to the right (744); y: 176 px for 0..8, the axis at 216.
    assert dots == [("78.0", "194.0"), ("744.0", "106.0")]
    assert "<title>rs1:16020: 5 at 12:01:00 UTC</title>" in svg
    assert '<polyline fill="none" stroke="#0072b2" stroke-width="2" points="78.0,194.0 744.0,106.0"/>' in svg
    assert 'class="rule"' in svg and ">quota</text>" in svg
    assert 'class="marker"' in svg and ">peer enabled</text>" in svg
    assert '<rect class="band" x="78.0"' in svg and ">peer DISABLED</text>" in svg


def test_a_step_series_holds_its_value_until_the_next_point():
    svg = str(charts.Chart("Copy", (charts.Series("t", ((T, 0.0), (T + 10_000, 1.0)), step=True),),
                           charts.count_format).svg())
    assert 'points="78.0,216.0 744.0,216.0 744.0,40.0"' in svg


def test_chart_text_from_the_ledger_is_escaped_and_no_script_is_emitted():
    hostile = '<script>alert(1)</script>"'
    svg = str(charts.Chart(f"oldWALs under {hostile}", (charts.Series(hostile, ((T, 1.0),)),),
                           charts.count_format).svg())
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert 'data-series="&lt;script&gt;alert(1)&lt;/script&gt;&#34;"' in svg


def test_a_long_series_is_drawn_without_dots():
    points = tuple((T + i * 1000, float(i)) for i in range(charts.MAX_DOTS + 1))
    svg = str(charts.Chart("Many", (charts.Series("s", points),), charts.count_format).svg())
    assert "<circle" not in svg and "<polyline" in svg and f'data-points="{len(points)}"' in svg


# ---------------------------------------------------------------------------------------------------------
# Copy progress

def copy_totals(**tables):
    return {"tables": {t: {"partitions": n, "rows": rows, "cells": rows, "bytes": rows, "started_ms": None,
                           "finished_ms": last} for t, (n, rows, last) in tables.items()}}


def test_copy_rows_fill_duration_rate_and_eta_from_the_plan():
    copy = copy_totals(**{"ns:a": (6, 6_000, T + 70_000), "ns:b": (4, 4_000, T + 60_000)})
    progress = {"plans": {"ns:a": {"partitions": 8, "planned_ms": T + 10_000},
                          "ns:b": {"partitions": 4, "planned_ms": T + 10_000}}, "partitions": []}
    phases = {"ns:a": {"copy": {"status": "running", "started_ms": T + 9_000}},
              "ns:b": {"copy": {"status": "success", "started_ms": T + 9_000}}}
    a, b = views.copy_rows(copy, progress, phases, now_ms=T + 100_000, tables=["ns:a", "ns:b"])
    # Running: duration so far from the plan's instant, 6 of 8 done in 90 s -> 30 s left at that pace.
    assert (a.done_text, a.percent, a.duration_ms, a.rows_per_s, a.eta_ms, a.running) == (
        "6 of 8", 75.0, 90_000, pytest.approx(6_000 / 90), 30_000, True)
    # Done: from the plan to its last partition (the ledger's partitions carry no start: it was empty before).
    assert (b.done_text, b.duration_ms, b.rows_per_s, b.eta_ms, b.running) == ("4 of 4", 50_000, 80.0, None, False)


def test_copy_rows_of_an_older_copy_without_a_plan_fall_back_to_the_phase_start():
    [row] = views.copy_rows(copy_totals(t=(3, 300, T + 30_000)), {"plans": {}, "partitions": []},
                            {"t": {"copy": {"status": "success", "started_ms": T}}}, T + 99_000)
    assert (row.done_text, row.percent, row.duration_ms, row.rows_per_s) == ("3", None, 30_000, 10.0)


def test_copy_chart_plots_percent_of_plan_per_table_up_to_now():
    copy = copy_totals(t=(1, 10, T + 20_000))
    progress = {"plans": {"t": {"partitions": 2, "planned_ms": T}},
                "partitions": [{"table_name": "t", "finished_ms": T + 20_000}]}
    rows = views.copy_rows(copy, progress, {"t": {"copy": {"status": "running", "started_ms": T}}}, T + 40_000)
    chart = views.copy_chart(rows, progress, T + 40_000)
    assert [s.points for s in chart.series] == [((T, 0.0), (T + 20_000, 50.0), (T + 40_000, 50.0))]
    assert chart.y_max == 100.0 and [r.label for r in chart.rules] == ["planned total"]


# ---------------------------------------------------------------------------------------------------------
# Lag and quota

def test_run_instants_take_the_earliest_enable_after_t0():
    phases = {ALL_TABLES: {"enable_peer": {"status": "success", "ended_ms": T + 90_000},
                           "catch_up": {"status": "success", "ended_ms": T + 120_000}}}
    notes = [{"state": "DISABLED", "noted_ms": T + 10_000}, {"state": "ENABLED", "noted_ms": T + 50_000}]
    assert views.run_instants(RUN, phases, notes) == views.RunInstants(T + 10_000, T + 50_000, T + 120_000)
    assert views.run_instants(RUN, {}, []) == views.RunInstants(T + 10_000, None, None)


def lag_point(at, server, size, age):
    return {"sampled_ms": at, "server": server, "queues": 1, "size_of_log_queue": size,
            "age_of_last_shipped_op_ms": age}


def test_lag_charts_draw_one_line_per_region_server_and_shade_the_disabled_phase():
    series = [lag_point(T + 20_000, "rs1,16020,1", 2, 0), lag_point(T + 20_000, "rs2,16020,1", 1, 0),
              lag_point(T + 40_000, "rs1,16020,1", 4, 0), lag_point(T + 60_000, "rs1,16020,1", 1, 900)]
    size, age = views.lag_charts(series, views.RunInstants(T + 10_000, T + 50_000, None), "running", T + 70_000)
    assert [(s.label, s.points) for s in size.series] == [
        ("rs1:16020", ((T + 20_000, 2.0), (T + 40_000, 4.0), (T + 60_000, 1.0))),
        ("rs2:16020", ((T + 20_000, 1.0),))]
    assert [s.points[-1] for s in age.series] == [(T + 60_000, 900.0), (T + 20_000, 0.0)]
    assert size.bands == (charts.Band(T + 10_000, T + 50_000, "peer DISABLED: WALs kept"),)
    assert [m.label for m in size.markers] == ["T0: peer added", "peer enabled"]
    # Still disabled while the run copies: the band reaches now.
    still, _ = views.lag_charts(series, views.RunInstants(T + 10_000, None, None), "running", T + 70_000)
    assert still.bands[0].end_ms == T + 70_000


def test_server_labels_keep_the_start_code_only_when_needed():
    assert views._server_labels(["rs1,16020,1", "rs1,16020,2", "rs2,16020,1"]) == {
        "rs1,16020,1": "rs1,16020,1", "rs1,16020,2": "rs1,16020,2", "rs2,16020,1": "rs2:16020"}


def quota_point(at, used, quota=None, growth=None, exhaustion=None, path="/hbase"):
    return {"path": path, "sampled_ms": at, "space_consumed": used, "space_quota": quota, "ns_consumed": 1,
            "ns_quota": None, "growth_bytes_per_s": growth, "projected_exhaustion_ms": exhaustion}


def test_quota_chart_projects_the_growth_against_the_quota_and_the_mark():
    samples = [quota_point(T, 600, 1_000), quota_point(T + 60_000, 700, 1_000, 100 / 60, T + 300_000)]
    [chart] = views.quota_charts(samples, 0.8, now_ms=T + 60_000)
    used, projection = chart.series
    assert used.points == ((T, 600.0), (T + 60_000, 700.0))
    # As far again as the history spans (one minute): 700 + 100 B.
    assert projection.dashed and projection.points == ((T + 60_000, 700.0), (T + 120_000, 800.0))
    assert [(r.value, r.label) for r in chart.rules] == [(1_000.0, "quota 1000 B"), (800.0, "quota mark 80%")]
    assert chart.note == "exhausted in 4m00s at this growth"


def test_a_quota_far_above_the_usage_is_named_not_drawn():
    [chart] = views.quota_charts([quota_point(T, 4 << 20, 4 * GiB)], 0.8, now_ms=T)
    assert chart.rules == () and chart.note == "quota 4.0 GiB: 0.10% used (off this scale)"
    [none] = views.quota_charts([quota_point(T, 10, path="/hbase/oldWALs")], None, now_ms=T)
    assert none.note == "no space quota on this path" and len(none.series) == 1


# ---------------------------------------------------------------------------------------------------------
# The peer, from the cluster

def live(state, error=None):
    return LivePeer(state, None if state is None else T + 5_000, "zk:2181:/hbase", error)


def test_a_removed_peer_raises_no_alarm_whatever_the_ledger_noted():
    ended = {**RUN, "status": "failed"}
    assert views.peer_alert(ended, "DISABLED", "copy failed") is not None  # the ledger alone
    assert views.peer_alert(ended, "DISABLED", "copy failed", live("ABSENT")) is None
    assert views.peer_alert(ended, "DISABLED", "copy failed", live("ENABLED")) is None
    assert views.peer_alert(ended, "ENABLED", None, live("DISABLED")).level == "bad"  # disabled by hand since
    shown = views.peer_shown(ended, "DISABLED", live("ABSENT"))
    assert (shown.state, shown.from_cluster, shown.text) == (
        "ABSENT", True, "not on the cluster (removed, or never added); read from the cluster at "
                        "2024-05-01 12:00:05 UTC")


def test_an_unreachable_cluster_falls_back_to_the_ledger_and_says_so():
    ended = {**RUN, "status": "failed"}
    down = live(None, "no answer within 3s")
    alert = views.peer_alert(ended, "DISABLED", "copy failed", down)
    assert alert.level == "bad" and alert.lines[-1] == (
        "The source cluster could not be read (no answer within 3s): this is the ledger's last note about the "
        "peer, which may be out of date.")
    shown = views.peer_shown(ended, "DISABLED", down)
    assert (shown.text, shown.level) == ("cluster unreachable (no answer within 3s); the ledger's last note: "
                                         "DISABLED", "warn")
    assert views.peer_shown({**RUN, "peer_id": "-"}, None, None).text == "no peer (this run touches none)"


# ---------------------------------------------------------------------------------------------------------
# Links into the Airflow UI

def test_links_lead_to_the_dag_run_and_each_phases_task():
    base = "/airflow"
    run_href = "/airflow/dags/hbase_table_migration/runs/manual__2024-05-01T12%3A00%3A00%2B00%3A00"
    assert views.dag_run_href(base, RUN) == run_href
    assert views.task_href(base, RUN, ALL_TABLES, "catch_up") == run_href + "/tasks/wait_drained"
    assert views.task_href(base, RUN, "ns:b", "copy") == run_href + "/tasks/copy/mapped/1"
    assert views.task_href(base, RUN, "ns:b", "create_tables") == run_href + "/tasks/create_target_tables"
    assert views.task_href(base, RUN, "ns:zzz", "verify") is None  # not one of the run's mapped tables
    watch = {**RUN, "plan": "watch", "dag_id": "hbase_replication_watch", "run_id": "scheduled__x:hbase_source"}
    assert views.dag_run_href("", watch) == "/dags/hbase_replication_watch/runs/scheduled__x"


def test_a_running_run_and_phase_show_their_duration_so_far():
    assert views.run_duration(RUN, T + 65_000) == 65_000
    assert views.run_duration({**RUN, "status": "failed"}, T + 65_000) is None
    grid = views.phase_grid({"ns:a": {"copy": {"status": "running", "started_ms": T, "ended_ms": None,
                                               "duration_ms": None, "detail": None}}}, now_ms=T + 7_000)
    assert grid.rows[0][1][0].duration_ms == 7_000


def test_tables_not_started_yet_are_listed_once_a_copy_has_begun():
    progress = {"plans": {"ns:a": {"partitions": 2, "planned_ms": T}}, "partitions": []}
    phases = {"ns:a": {"copy": {"status": "running", "started_ms": T}}}
    a, b = views.copy_rows(copy_totals(), progress, phases, T + 5_000, tables=["ns:a", "ns:b"])
    assert (a.done_text, a.running, b.done_text, b.rows_per_s, b.eta_ms) == ("0 of 2", True, "not started", None,
                                                                              None)
    assert views.copy_rows(copy_totals(), {"plans": {}, "partitions": []}, {}, T, tables=["ns:a"]) == []


def test_counts_tick_on_whole_numbers_and_a_flat_line_keeps_a_readable_scale():
    assert charts.value_ticks(1, integer=True) == [0, 1]
    flat = charts.Chart("age", (charts.Series("rs1", ((T, 0.0), (T + 1_000, 0.0))),), lambda v: f"{v:g} ms",
                        min_top=1000)
    assert re.findall(r'<text class="tick" x="72" y="[\d.]+" text-anchor="end">([^<]+)</text>', str(flat.svg())) == [
        "0 ms", "500 ms", "1000 ms"]
