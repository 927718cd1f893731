"""hdfs.py's pure half: WebHDFS JSON parsing, quota constraints, growth, projections and decisions.

The figures of the worked example (all by hand):
  /hbase carries a space quota of 100 GB with 90 GB consumed (10 GB headroom) and a namespace quota of
  2000 names with 120 dirs + 880 files = 1000 used (1000 names headroom); `/` carries HDFS's default
  namespace quota Long.MAX_VALUE; oldWALs itself has none.
  oldWALs' spaceConsumed sampled every 100 s: 12.0, 12.6, 12.3 (the cleaner deleted), 12.9 GB:
  positive increments 0.6 + 0.6 = 1.2 GB over 300 s = 4 MB/s.
  Space runs out in 10 GB / 4 MB/s = 2500 s; at 0.5 files/s the names run out in 1000 / 0.5 = 2000 s.
"""
from __future__ import annotations

import json

import pytest

from hbase_migration.clusters.hdfs import (
    ContentSummary,
    FileStatus,
    HeadroomDecision,
    QuotaConstraint,
    TypeQuota,
    WatchdogDecision,
    WebHdfs,
    WebHdfsError,
    ancestors,
    growth_rate,
    headroom_decision,
    parse_content_summary,
    parse_file_status,
    parse_file_statuses,
    parse_remote_exception,
    projected_exhaustion,
    usage_from_summaries,
    watchdog_decision,
)

GB = 1_000_000_000
LONG_MAX = 9223372036854775807

# ------------------------------------------------------------------------------------ JSON bodies

# The reference's GETCONTENTSUMMARY sample (its "..." elided), plus fields Hadoop 3 adds.
REFERENCE_SUMMARY = """{"ContentSummary":{"directoryCount":2,"fileCount":1,"length":24930,"quota":-1,
                   "spaceConsumed":24930,"spaceQuota":-1,
                   "typeQuota":{"ARCHIVE":{"consumed":500,"quota":10000}}}}"""
HADOOP3_EXTRAS = {"ecPolicy": "Replicated", "snapshotLength": 0, "snapshotFileCount": 0,
                  "snapshotDirectoryCount": 0, "snapshotSpaceConsumed": 0, "erasureCodingPolicy": "x"}


def test_content_summary_reference_sample():
    assert parse_content_summary(json.loads(REFERENCE_SUMMARY)) == ContentSummary(
        directory_count=2, file_count=1, length=24930, quota=-1, space_consumed=24930, space_quota=-1,
        type_quota={"ARCHIVE": TypeQuota(consumed=500, quota=10000)})


def test_content_summary_ignores_unknown_fields_and_defaults_missing_quotas():
    body = json.loads(REFERENCE_SUMMARY)
    body["ContentSummary"].update(HADOOP3_EXTRAS)
    del body["ContentSummary"]["quota"], body["ContentSummary"]["spaceQuota"], body["ContentSummary"]["typeQuota"]
    summary = parse_content_summary(body)
    assert (summary.quota, summary.space_quota, summary.type_quota, summary.names) == (-1, -1, {}, 3)


def test_file_status_and_listing_from_the_webhdfs_docs():
    status = parse_file_status(json.loads(
        '{"FileStatus":{"accessTime":0,"blockSize":0,"group":"supergroup","length":0,'
        '"modificationTime":1320173277227,"owner":"webuser","pathSuffix":"","permission":"777",'
        '"replication":0,"type":"DIRECTORY","childrenNum":2,"fileId":16386,"storagePolicy":0}}'))
    assert status == FileStatus(path_suffix="", type="DIRECTORY", length=0, modification_time_ms=1320173277227,
                                access_time_ms=0, replication=0, block_size=0, owner="webuser", group="supergroup",
                                permission="777", children_num=2)
    listing = parse_file_statuses(json.loads(
        '{"FileStatuses":{"FileStatus":['
        '{"accessTime":1320171722771,"blockSize":33554432,"group":"supergroup","length":24930,'
        '"modificationTime":1320171722771,"owner":"webuser","pathSuffix":"a.patch","permission":"644",'
        '"replication":1,"type":"FILE"},'
        '{"accessTime":0,"blockSize":0,"group":"supergroup","length":0,"modificationTime":1320895981256,'
        '"owner":"szetszwo","pathSuffix":"bar","permission":"711","replication":0,"type":"DIRECTORY"}]}}'))
    assert [(s.path_suffix, s.type, s.length, s.replication, s.block_size, s.children_num) for s in listing] == [
        ("a.patch", "FILE", 24930, 1, 33554432, None), ("bar", "DIRECTORY", 0, 0, 0, None)]


def test_remote_exception_body():
    body = json.loads('{"RemoteException":{"exception":"FileNotFoundException",'
                      '"javaClassName":"java.io.FileNotFoundException","message":"File does not exist: /foo/a.patch"}}')
    assert parse_remote_exception(body) == (
        "FileNotFoundException", "java.io.FileNotFoundException", "File does not exist: /foo/a.patch")
    assert parse_remote_exception({"ContentSummary": {}}) is None
    assert parse_remote_exception("oops") is None


@pytest.mark.parametrize("parser, body, message", [
    (parse_content_summary, {"FileStatus": {}}, "expected a JSON object with 'ContentSummary'"),
    (parse_content_summary, {"ContentSummary": {"directoryCount": "2", "fileCount": 1, "length": 1,
                                                "spaceConsumed": 1}}, "field 'directoryCount' must be an integer"),
    (parse_content_summary, {"ContentSummary": {"directoryCount": 1, "fileCount": 1, "length": 1}},
     "field 'spaceConsumed' must be an integer, got None"),
    (parse_content_summary, {"ContentSummary": {"directoryCount": 1, "fileCount": 1, "length": 1, "spaceConsumed": 1,
                                                "typeQuota": []}}, "typeQuota must be an object"),
    (parse_file_statuses, {"FileStatuses": {"FileStatus": {}}}, "FileStatuses.FileStatus must be a list"),
    (parse_file_status, {"FileStatus": {"length": 1}}, "field 'modificationTime' must be an integer"),
])
def test_malformed_bodies_are_clear_errors(parser, body, message):
    with pytest.raises(WebHdfsError, match=message):
        parser(body)


@pytest.mark.parametrize("kwargs, message", [
    (dict(url="nn:9870"), "url must start with http:// or https://, got 'nn:9870'"),
    (dict(url="http://nn:9870", timeout_s=0), "timeout_s must be a positive number, got 0"),
    (dict(url="http://nn:9870", attempts=0), "attempts must be an integer >= 1, got 0"),
])
def test_client_validates_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WebHdfs(**kwargs)


def test_client_accepts_a_url_with_the_webhdfs_prefix():
    assert WebHdfs("http://nn:9870/webhdfs/v1/").url == "http://nn:9870"
    assert WebHdfs("https://nn:9871").url == "https://nn:9871"


# ------------------------------------------------------------------------------------ quota constraints

def summary(dirs, files, consumed, *, quota=-1, space_quota=-1, types=None, length=None):
    return ContentSummary(dirs, files, consumed // 3 if length is None else length, quota, consumed, space_quota,
                          types or {})


OLDWALS = summary(1, 40, 12 * GB + 900_000_000)
HBASE = summary(120, 880, 90 * GB, quota=2000, space_quota=100 * GB)
ROOT = summary(500, 9500, 300 * GB, quota=LONG_MAX)
USAGE = usage_from_summaries("/hbase", {"/hbase/oldWALs": OLDWALS, "/hbase": HBASE, "/": ROOT})
SAMPLES = [(0.0, 12.0 * GB), (100.0, 12.6 * GB), (200.0, 12.3 * GB), (300.0, 12.9 * GB)]


def test_ancestors():
    assert ancestors("/hbase/oldWALs") == ["/hbase/oldWALs", "/hbase", "/"]
    assert ancestors("/") == ["/"]
    assert ancestors("/a//b/") == ["/a/b", "/a", "/"]
    with pytest.raises(ValueError, match="HDFS path must be absolute"):
        ancestors("hbase")


def test_constraints_from_oldwals_up_to_root():
    assert USAGE.oldwals_path == "/hbase/oldWALs"
    assert USAGE.constraints == (
        QuotaConstraint("/hbase", "space", 100 * GB, 90 * GB),
        QuotaConstraint("/hbase", "namespace", 2000, 1000),
        QuotaConstraint("/", "namespace", LONG_MAX, 10000),
    )
    assert [(c.headroom, c.unit) for c in USAGE.constraints[:2]] == [(10 * GB, "bytes"), (1000, "names")]
    assert USAGE.binding == QuotaConstraint("/hbase", "space", 100 * GB, 90 * GB)  # 10% left vs 50%
    assert USAGE.least_headroom("names") == QuotaConstraint("/hbase", "namespace", 2000, 1000)
    assert USAGE.to_dict()["binding"] == {"path": "/hbase", "kind": "space", "unit": "bytes", "limit": 100 * GB,
                                          "used": 90 * GB, "headroom": 10 * GB, "fraction_used": 0.9}


def test_quota_on_oldwals_itself_and_storage_type_quotas_count():
    usage = usage_from_summaries("/hbase/", {
        "/hbase/oldWALs": summary(1, 3, 600, space_quota=1000, types={"SSD": TypeQuota(400, 500),
                                                                      "DISK": TypeQuota(200, -1)}),
        "/hbase": summary(2, 3, 700), "/": summary(3, 3, 800)})
    assert usage.constraints == (QuotaConstraint("/hbase/oldWALs", "space", 1000, 600),
                                 QuotaConstraint("/hbase/oldWALs", "type:SSD", 500, 400))
    assert usage.binding == QuotaConstraint("/hbase/oldWALs", "type:SSD", 500, 400)  # 20% left vs 40%


def test_a_missing_ancestor_summary_is_an_error():
    with pytest.raises(ValueError, match=r"content summaries missing for /hbase \(needed: /hbase/oldWALs, /hbase, /\)"):
        usage_from_summaries("/hbase", {"/hbase/oldWALs": OLDWALS, "/": ROOT})


# ------------------------------------------------------------------------------------ growth and projection

def test_growth_rate_counts_positive_increments_only():
    assert growth_rate(SAMPLES) == pytest.approx(4_000_000.0)  # 1.2 GB / 300 s; net would be 3 MB/s
    assert growth_rate([(10.0, 5), (20.0, 5)]) == 0.0
    assert growth_rate([(10.0, 9), (20.0, 1)]) == 0.0  # only deletions: no growth
    assert growth_rate([(10.0, 5)]) is None
    assert growth_rate([]) is None


@pytest.mark.parametrize("samples, message", [
    ([(0, 1), (0, 2)], r"sample times must increase strictly; sample 1 at 0 follows 0"),
    ([(5, 1), (4, 2)], r"sample 1 at 4 follows 5"),
    ([(0, 1), (1, "2")], r"sample 1 must be \(time_s, value\) numbers"),
    ([(0, 1, 2)], r"sample 0 must be \(time_s, value\) numbers"),
])
def test_growth_rate_rejects_bad_samples(samples, message):
    with pytest.raises(ValueError, match=message):
        growth_rate(samples)


def test_projected_exhaustion():
    rate = growth_rate(SAMPLES)
    assert projected_exhaustion(USAGE, rate) == pytest.approx(2500.0)  # 10 GB / 4 MB/s
    assert projected_exhaustion(USAGE, rate, names_rate=0.5) == pytest.approx(2000.0)  # 1000 names / 0.5/s
    assert projected_exhaustion(USAGE, 0.0) is None  # no growth
    assert projected_exhaustion(USAGE, None) is None
    no_quota = usage_from_summaries("/hbase", {"/hbase/oldWALs": OLDWALS, "/hbase": summary(1, 1, 5), "/": ROOT})
    assert projected_exhaustion(no_quota, rate) is None  # only `/`'s names quota, and no names rate
    full = usage_from_summaries("/hbase", {"/hbase/oldWALs": OLDWALS, "/": ROOT,
                                           "/hbase": summary(1, 1, 100 * GB, space_quota=100 * GB)})
    assert projected_exhaustion(full, 0.0) == 0.0  # exhausted already, growth or not


# ------------------------------------------------------------------------------------ decisions

def test_headroom_ok_when_the_projection_outlasts_the_copy_with_margin():
    # needed = 1000 s x 2 = 2000 s < 2500 s; 90% used is below a 95% quota mark
    assert headroom_decision(USAGE, 4_000_000.0, 1000, 2.0, 0.95) == HeadroomDecision(
        ok=True, reasons=(), projected_exhaustion_s=2500.0, needed_s=2000.0)


def test_headroom_refused_when_the_copy_would_outlast_the_quota():
    decision = headroom_decision(USAGE, 4_000_000.0, 1500, 2.0, 0.95)
    assert decision == HeadroomDecision(
        ok=False, projected_exhaustion_s=2500.0, needed_s=3000.0,
        reasons=("at 4000000 B/s into /hbase/oldWALs the first quota is exhausted in 2500s, less than the "
                 "copy's 1500s x safety factor 2 = 3000s",))


def test_headroom_refused_above_the_quota_mark_even_without_growth():
    decision = headroom_decision(USAGE, None, 60, 2.0, 0.8)
    assert (decision.ok, decision.projected_exhaustion_s) == (False, None)
    assert decision.reasons == (
        "space quota on /hbase: 90000000000/100000000000 bytes used (90.0%) is at or above the quota mark 80%",)


def test_headroom_notes_without_quota_or_growth():
    no_quota = usage_from_summaries("/hbase", {"/hbase/oldWALs": OLDWALS, "/hbase": summary(1, 1, 5),
                                               "/": summary(1, 1, 5)})
    assert headroom_decision(no_quota, 4e6, 3600) == HeadroomDecision(
        True, (), None, 7200.0, ("no quota on /hbase/oldWALs or any ancestor: only HDFS capacity limits oldWALs",))
    assert headroom_decision(USAGE, 0.0, 60, 2.0, 0.95).notes == (
        "no growth measured: the projection assumes oldWALs stays as it is",)


@pytest.mark.parametrize("args, message", [
    ((USAGE, 1.0, -1), "expected_duration_s must be a number >= 0, got -1"),
    ((USAGE, 1.0, 10, 0.5), "safety_factor must be a number >= 1, got 0.5"),
    ((USAGE, 1.0, 10, 2.0, 1.5), r"quota_mark must be a fraction within \(0, 1\], got 1.5"),
])
def test_headroom_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        headroom_decision(*args)


SPACE_90 = "space quota on /hbase: 90000000000/100000000000 bytes used (90.0%)"


@pytest.mark.parametrize("kwargs, expected", [
    pytest.param(dict(quota_mark=0.99, warn_fraction=0.95), WatchdogDecision(
        "ok", (), 0.9, 2250.0), id="ok: 9 GB to the 99% mark at 4 MB/s"),
    pytest.param(dict(quota_mark=0.95, warn_fraction=0.85), WatchdogDecision(
        "warn", (f"{SPACE_90}: above the warning level 85% (mark 95%)",), 0.9, 1250.0), id="warn: above warning"),
    pytest.param(dict(quota_mark=0.99, warn_fraction=0.95, remaining_s=3000), WatchdogDecision(
        "warn", ("at the current growth the mark 99% is reached in 2250s, before the copy's remaining 3000s",),
        0.9, 2250.0), id="warn: the mark comes before the copy ends"),
    pytest.param(dict(quota_mark=0.9), WatchdogDecision(
        "breach", (f"{SPACE_90}: at or above the mark 90%",), 0.9, 0.0), id="breach: at the mark"),
    pytest.param(dict(quota_mark=0.99), WatchdogDecision(
        "warn", (f"{SPACE_90}: above the warning level 89% (mark 99%)",), 0.9, 2250.0),
        id="default warning level is 90% of the mark"),
])
def test_watchdog_levels(kwargs, expected):
    decision = watchdog_decision(USAGE, 4_000_000.0, **kwargs)
    assert decision.level == expected.level and decision.reasons == expected.reasons
    assert decision.fraction_used == pytest.approx(expected.fraction_used)
    assert decision.seconds_to_mark == pytest.approx(expected.seconds_to_mark)


def test_watchdog_without_quota_and_bad_marks():
    no_quota = usage_from_summaries("/h", {"/h/oldWALs": OLDWALS, "/h": summary(1, 1, 5), "/": summary(1, 1, 5)})
    assert watchdog_decision(no_quota, 1e9, 0.9) == WatchdogDecision(
        "ok", (), None, None, ("no quota on /h/oldWALs or any ancestor",))
    with pytest.raises(ValueError, match=r"quota_mark must be a fraction within \(0, 1\], got 0"):
        watchdog_decision(USAGE, 1.0, 0)
    with pytest.raises(ValueError, match="warn_fraction 0.95 must not exceed quota_mark 0.9"):
        watchdog_decision(USAGE, 1.0, 0.9, warn_fraction=0.95)
