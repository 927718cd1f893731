"""The oldWALs watchdog's reading plan (issue 42): the quota-bearing ancestors found once, then only cheap calls;
GETQUOTAUSAGE's body; the estimate a NameNode without it leaves. Pure functions, exact expectations."""
from __future__ import annotations

import pytest

from hbase_migration.clusters.hdfs import (
    NO_LIMIT,
    ContentSummary,
    QuotaConstraint,
    QuotaCounts,
    TypeQuota,
    WebHdfsError,
    WebHdfsRemoteError,
    op_unsupported,
    parse_quota_usage,
    quota_bearing,
    usage_of,
)
from hbase_migration.migration.quota import REDISCOVER_READINGS, WatchPlan, estimated_counts, plan_of

GB = 1_000_000_000


def summary(names, consumed, *, quota=-1, space_quota=-1, types=None):
    return ContentSummary(1, names - 1, consumed // 3, quota, consumed, space_quota, types or {})


OLDWALS = summary(41, 12 * GB)
HBASE = summary(1000, 90 * GB, quota=2000, space_quota=100 * GB)
ROOT = summary(10000, 300 * GB, quota=NO_LIMIT)  # HDFS's default on `/`: no quota
SUMMARIES = {"/hbase/oldWALs": OLDWALS, "/hbase": HBASE, "/": ROOT}


def test_quota_usage_body_from_hadoop_3_4():
    body = {"QuotaUsage": {"fileAndDirectoryCount": 74, "quota": 100000, "spaceConsumed": 274793573,
                           "spaceQuota": 4294967296, "typeQuota": {"SSD": {"consumed": 5, "quota": 10}}}}
    assert parse_quota_usage(body) == QuotaCounts(74, 274793573, 100000, 4294967296, {"SSD": TypeQuota(5, 10)})
    assert parse_quota_usage({"QuotaUsage": {"fileAndDirectoryCount": 1, "spaceConsumed": 0}}) == \
        QuotaCounts(1, 0, -1, -1, {})
    with pytest.raises(WebHdfsError, match="WebHDFS GETQUOTAUSAGE: field 'spaceConsumed' must be an integer"):
        parse_quota_usage({"QuotaUsage": {"fileAndDirectoryCount": 1, "spaceConsumed": "x"}})


def test_an_unknown_op_is_told_from_other_refusals():
    # Hadoop 3.4's words for an op it does not know (read on the bed), and an older NameNode's
    new = WebHdfsRemoteError('WebHDFS x: GETQUOTAUSAGE /hbase: IllegalArgumentException: Invalid value for webhdfs '
                             'parameter "op": GETQUOTAUSAGE is not a valid GET operation.',
                             exception="IllegalArgumentException")
    old = WebHdfsRemoteError('IllegalArgumentException: Invalid value for webhdfs parameter "op": No enum constant '
                             'org.apache.hadoop.hdfs.web.resources.GetOpParam.Op.GETQUOTAUSAGE',
                             exception="IllegalArgumentException")
    denied = WebHdfsRemoteError("GETQUOTAUSAGE /hbase: AccessControlException: Permission denied",
                                exception="AccessControlException")
    assert op_unsupported(new, "GETQUOTAUSAGE") and op_unsupported(old, "GETQUOTAUSAGE")
    assert not op_unsupported(denied, "GETQUOTAUSAGE") and not op_unsupported(ValueError("op"), "GETQUOTAUSAGE")


def test_the_bearing_ancestors_leave_out_oldwals_itself_and_the_roots_default():
    assert quota_bearing("/hbase", SUMMARIES) == ("/hbase",)
    assert quota_bearing("/hbase", {**SUMMARIES, "/": summary(10000, 300 * GB, space_quota=900 * GB)}) == \
        ("/hbase", "/")
    assert quota_bearing("/hbase", {**SUMMARIES, "/hbase": summary(1000, 90 * GB)}) == ()


def test_a_reading_is_oldwals_own_summary_and_the_bearing_ancestors_counts():
    usage = usage_of("/hbase", summary(41, 12 * GB, space_quota=50 * GB),
                     {"/hbase": QuotaCounts(1000, 90 * GB, 2000, 100 * GB)})
    assert usage.constraints == (QuotaConstraint("/hbase/oldWALs", "space", 50 * GB, 12 * GB),
                                 QuotaConstraint("/hbase", "space", 100 * GB, 90 * GB),
                                 QuotaConstraint("/hbase", "namespace", 2000, 1000))
    assert usage.oldwals.space_consumed == 12 * GB
    with pytest.raises(ValueError, match="/data not an ancestor of /hbase/oldWALs"):
        usage_of("/hbase", OLDWALS, {"/data": QuotaCounts(1, 1, 1, 1)})


def test_the_plan_asks_one_summary_and_the_bearing_quota_usages():
    plan = plan_of("/hbase/", SUMMARIES)
    assert plan.bearing == ("/hbase",) and plan.quota_usage_op is None and plan.readings == 0
    assert plan.calls() == [("GETCONTENTSUMMARY", "/hbase/oldWALs"), ("GETQUOTAUSAGE", "/hbase")]
    assert plan.baseline == {"oldWALs": [41, 12 * GB], "/hbase": {"names": 1000, "space_consumed": 90 * GB,
                                                                  "quota": 2000, "space_quota": 100 * GB,
                                                                  "type_quota": {}}}
    assert WatchPlan.from_dict(plan.to_dict()) == plan
    without = WatchPlan(plan.rootdir, plan.bearing, False, plan.baseline, REDISCOVER_READINGS - 1)
    assert without.calls() == [("GETCONTENTSUMMARY", "/hbase/oldWALs")] and not without.due_for_discovery()
    assert WatchPlan(plan.rootdir, plan.bearing, False, plan.baseline, REDISCOVER_READINGS).due_for_discovery()
    assert not WatchPlan(plan.rootdir, plan.bearing, True, plan.baseline, 10**6).due_for_discovery()


def test_without_getquotausage_the_ancestors_grow_with_oldwals():
    plan = plan_of("/hbase", {**SUMMARIES, "/hbase": summary(1000, 90 * GB, quota=2000, space_quota=100 * GB,
                                                              types={"DISK": TypeQuota(90 * GB, 95 * GB)})})
    now = summary(61, 15 * GB)  # 20 more WALs, 3 GB more
    assert estimated_counts(plan, now) == {
        "/hbase": QuotaCounts(1020, 93 * GB, 2000, 100 * GB, {"DISK": TypeQuota(93 * GB, 95 * GB)})}
    shrunk = summary(1, 0)  # the cleaner freed oldWALs: never below zero
    assert estimated_counts(plan_of("/hbase", {**SUMMARIES, "/hbase": summary(10, GB, quota=20)}), shrunk) == {
        "/hbase": QuotaCounts(0, 0, 20, -1, {})}


def test_every_reading_records_the_same_paths_so_each_is_a_point_on_each_chart():
    """Regression (the secured DAG run's dashboard check): the discovery's reading recorded `/` (its default
    namespace quota) besides the paths every later reading records, so the dashboard's first quota chart, `/`'s,
    had one point while the run counted 5 samples. Now the discovery reads what the plan reads."""
    from hbase_migration.clusters import hdfs
    from hbase_migration.migration.quota import QuotaSample, discovered_usage, record
    from hbase_migration.plugins.hbase_migration_ui.views import quota_charts

    class Rows:
        def __init__(self):
            self.rows = []

        def quota_sample(self, run_id, path, **values):
            self.rows.append({"path": path, **values})

    plan = plan_of("/hbase", SUMMARIES)
    readings = [discovered_usage(plan, SUMMARIES)] + [
        usage_of("/hbase", summary(41 + i, (12 + i) * GB), {"/hbase": QuotaCounts(1000 + i, (90 + i) * GB, 2000,
                                                                                    100 * GB, {})})
        for i in range(1, 5)]
    ledger = Rows()
    for i, usage in enumerate(readings):
        record(ledger, "run-1", QuotaSample("dc1", 1000.0 + 30 * i, usage, None, None,
                                            hdfs.watchdog_decision(usage, None, 0.8)))
    assert {r["path"] for r in ledger.rows} == {"/hbase"}  # not `/`: its Long.MAX_VALUE is no quota
    assert {c.path for c in readings[0].constraints} == {c.path for c in readings[1].constraints}
    charts = quota_charts(ledger.rows, 0.8, 2_000_000)
    assert [c.points for c in charts] == [5]  # one point per reading, as many as the samples counted
