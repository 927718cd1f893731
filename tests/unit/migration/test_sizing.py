"""The sizing's arithmetic (hbase_migration/migration/sizing.py), the region metrics' parser and the namenode's capacity
bean, with exact figures."""
import re

import pytest

from hbase_migration.clusters.hdfs import (
    ContentSummary,
    HdfsCapacity,
    WebHdfsError,
    parse_fsnamesystem,
    usage_from_summaries,
)
from hbase_migration.migration.region_metrics import REGIONS_BEAN, RegionMetrics, metric_prefix, parse_regions_bean
from hbase_migration.migration.sizing import (
    SampleCopy,
    TableSizing,
    TableWork,
    estimate_rows,
    project,
    run_copy_seconds,
    table_work,
    text,
    verdict,
)
from hbase_migration.migration.sizing_probe import encoded_name, scratch_name

SAMPLE = SampleCopy("e" * 32, region_bytes=1_000, rows=250, cells=500, bytes=4_000, elapsed_s=2.0, complete=True)


def sized(table="t1", data=10_000, biggest=3_000, sample=SAMPLE, error=None):
    return TableSizing(table, regions=4, regions_reported=4, store_file_bytes=data - 1_000, memstore_bytes=1_000,
                       store_files=7, read_requests=11, write_requests=13, biggest_region_bytes=biggest,
                       sample=sample, error=error)


def summary(consumed=0, space_quota=-1, files=0, quota=-1):
    return ContentSummary(directory_count=1, file_count=files, length=consumed // 3, quota=quota,
                          space_consumed=consumed, space_quota=space_quota)


def usage(space_quota=1_000_000, consumed=500_000, ns_quota=-1, names=0):
    """oldWALs under /hbase with a space (and namespace) quota on /hbase; none above."""
    return usage_from_summaries("/hbase", {
        "/hbase/oldWALs": summary(100_000, files=4),
        "/hbase": summary(consumed, space_quota, files=names - 1 if ns_quota >= 0 else 0, quota=ns_quota),
        "/": summary(consumed)})


def test_rows_are_the_samples_rows_per_byte_times_the_tables_bytes():
    assert estimate_rows(10_000, SAMPLE) == 2_500
    assert estimate_rows(0, None) == 0
    assert estimate_rows(10_000, None) is None
    assert estimate_rows(10_000, SampleCopy("r", 1_000, 100, 100, 100, 300.0, complete=False)) is None


def test_table_work_at_the_samples_pace_and_under_a_rows_throttle():
    assert table_work(sized()) == TableWork(work_s=20.0, longest_s=6.0)  # 2 s per 1,000 bytes
    assert table_work(sized(), rows_per_s=100) == TableWork(work_s=25.0, longest_s=7.5)  # 2,500 rows at 100/s
    assert table_work(sized(data=0, sample=None)) == TableWork(0.0, 0.0)
    assert table_work(sized(sample=None)) is None


def test_the_run_spreads_the_work_over_the_tasks_but_never_ends_before_its_longest_partition():
    works = [TableWork(20.0, 6.0), TableWork(40.0, 30.0)]
    assert run_copy_seconds(works, 1) == 60.0
    assert run_copy_seconds(works, 4) == 30.0  # 60/4 = 15, but one region takes 30
    assert run_copy_seconds([TableWork(400.0, 10.0)], 8) == 50.0
    assert run_copy_seconds([], 4) == 0.0
    with pytest.raises(ValueError, match="copy_tasks must be >= 1, got 0"):
        run_copy_seconds(works, 0)


def test_a_projection_that_fits_the_quota_and_the_free_space():
    p = project([sized("t1"), sized("t2", data=20_000, biggest=15_000)], copy_tasks=4, growth_bytes_per_s=1_000.0,
                growth_files_per_s=0.0, usage=usage(), capacity=HdfsCapacity(10_000_000, 4_000_000, 6_000_000),
                quota_mark=0.8, safety_factor=2.0)
    # work 20 + 40 = 60 s over 4 tasks = 15 s, but t2's biggest region takes 30 s
    assert p.copy_s == 30.0 and p.pinned_bytes == 30_000.0
    assert [(limit.name, limit.room, limit.needed, limit.exceeded) for limit in p.limits] == [
        ("space quota on /hbase", 300_000.0, 60_000.0, False),  # 0.8 x 1,000,000 - 500,000
        ("HDFS free space (the namenode's CapacityRemaining)", 6_000_000.0, 60_000.0, False)]
    v = verdict(p)
    assert (v.ok, v.severity, v.fix) == (True, "ok", None)
    assert v.reason == ("projected copy 30s (30s, 4 partitions at once), oldWALs growth 1000 B/s pins 29.3 KiB (x2 = "
                        "58.6 KiB); fits: space quota on /hbase: room 293.0 KiB; HDFS free space (the namenode's "
                        "CapacityRemaining): room 5.7 MiB")


def test_a_quota_too_small_is_refused_with_the_figures_and_every_fix():
    p = project([sized("t1"), sized("t2", data=20_000, biggest=15_000)], copy_tasks=4, growth_bytes_per_s=10_000.0,
                usage=usage(), capacity=HdfsCapacity(10_000_000, 4_000_000, 6_000_000), quota_mark=0.8)
    quota = p.limits[0]
    assert (quota.needed, quota.room, quota.exceeded) == (600_000.0, 300_000.0, True)
    v = verdict(p)
    assert (v.ok, v.severity) == (False, "error")
    assert v.reason == ("projected copy 30s (30s, 4 partitions at once), oldWALs growth 9.8 KiB/s pins 293.0 KiB "
                        "(x2 = 585.9 KiB); does not fit: space quota on /hbase: needs 585.9 KiB, room 293.0 KiB")
    # (500,000 used + 600,000 needed) / 0.8 = 1,375,000
    assert v.fix == ("more quota: at least 1375000 bytes (1.3 MiB) on /hbase (`hdfs dfsadmin -setSpaceQuota 1375000 "
                     "/hbase`); or a faster copy (more partitions at once than copy_tasks=4: Spark cores for the copy "
                     "jobs or the CLI's --workers; a higher rows_per_s); or quota_policy enable_peer (the watchdog "
                     "enables the peer when the quota reaches 80%); or fewer tables per run (the longest: t2 40s of "
                     "work, t1 20s of work)")


def test_with_enable_peer_an_overflowing_quota_is_a_warning_and_free_space_holds_only_up_to_the_mark():
    p = project([sized()], copy_tasks=1, growth_bytes_per_s=10_000.0, usage=usage(),
                capacity=HdfsCapacity(10_000_000, 9_500_000, 500_000), quota_policy="enable_peer")
    assert p.copy_s == 20.0
    free = p.limits[1]
    assert (free.needed, free.room, free.exceeded) == (300_000.0, 500_000.0, False)  # min(400,000, quota room)
    v = verdict(p, "enable_peer")
    assert (v.ok, v.severity) == (True, "warning")
    assert "space quota on /hbase: needs 390.6 KiB, room 293.0 KiB (quota_policy enable_peer: the watchdog " \
           "enables the peer early at the mark)" in v.reason


def test_without_a_quota_free_space_is_the_limit():
    no_quota = usage_from_summaries("/hbase", {p: summary(1_000) for p in ("/hbase/oldWALs", "/hbase", "/")})
    p = project([sized()], copy_tasks=1, growth_bytes_per_s=10_000.0, usage=no_quota,
                capacity=HdfsCapacity(1_000_000, 700_000, 300_000))
    assert [(limit.kind, limit.needed, limit.room) for limit in p.limits] == [("free_space", 400_000.0, 300_000.0)]
    v = verdict(p)
    assert not v.ok and "does not fit: HDFS free space (the namenode's CapacityRemaining): needs 390.6 KiB, room " \
                        "293.0 KiB" in v.reason
    assert v.fix.startswith("free HDFS space: at least 390.6 KiB more than the 293.0 KiB remaining")
    assert v.fix.endswith("or a space quota on the oldWALs directory with quota_policy enable_peer (the watchdog then "
                          "enables the peer before HDFS fills)")


def test_a_namespace_quota_counts_the_files_oldwals_gains():
    p = project([sized()], copy_tasks=1, growth_bytes_per_s=0.0, growth_files_per_s=10.0,
                usage=usage(space_quota=-1, ns_quota=1_000, names=500), capacity=None)
    [names] = p.limits
    assert (names.name, names.unit, names.room, names.needed) == ("namespace quota on /hbase", "names", 300.0, 400.0)
    assert not verdict(p).ok and "needs 400 names, room 300" in verdict(p).reason
    assert p.notes == ("HDFS free space not read (namenode /jmx unreadable): only quotas are checked",)


def test_tables_without_a_whole_sample_are_named_and_nothing_is_projected_without_one():
    stopped = SampleCopy("r", 1_000, 10, 10, 10, 300.0, complete=False)
    p = project([sized("t1", sample=stopped), sized("t2", sample=None, error="sample copy failed: boom")],
                copy_tasks=2, growth_bytes_per_s=1.0)
    assert p.copy_s is None and dict(p.unprojected) == {
        "t1": "the sample copy stopped at the timeout before its region ended", "t2": "sample copy failed: boom"}
    v = verdict(p)
    assert (v.ok, v.severity) == (True, "warning")
    assert v.reason.startswith("not projected: t1: the sample copy stopped at the timeout before its region ended; "
                               "t2: sample copy failed: boom")
    assert project([sized()], copy_tasks=1, growth_bytes_per_s=None).notes[0].startswith("oldWALs growth not measured")


def test_the_text_shows_each_table_and_the_limits():
    p = project([sized()], copy_tasks=2, growth_bytes_per_s=100.0, usage=usage(),
                capacity=HdfsCapacity(10_000_000, 4_000_000, 6_000_000))
    assert text([sized()], p).splitlines() == [
        "sizing: table, regions, store files (bytes), memstore, est. rows, sample, work",
        "  t1: 4 regions, 7 files 8.8 KiB, memstore 1000 B, ~2500 rows, sample 250 rows/1000 B in 2.0s, work 20s",
        "  copy: 10s with 2 partitions at once; oldWALs growth 100 B/s, pinned 1000 B",
        "  space quota on /hbase: room 293.0 KiB, needs 2.0 KiB",
        "  HDFS free space (the namenode's CapacityRemaining): room 5.7 MiB, needs 2.0 KiB"]


def test_region_metrics_are_read_by_each_tables_prefix_and_replicas_are_left_out():
    def keys(prefix, region, **figures):
        return {f"{prefix}{region}_metric_{k}": v for k, v in figures.items()}

    a, b, c = "a" * 32, "b" * 32, "c" * 32
    bean = {"name": REGIONS_BEAN, "modelerType": "RegionServer,sub=Regions", "numRegions": 4,
            **keys(metric_prefix("t_table_x"), a, storeCount=1, storeFileCount=2, storeFileSize=300, memStoreSize=40,
                   readRequestCount=5, writeRequestCount=6, replicaid=0, filteredReadRequestCount=9),
            f"{metric_prefix('t_table_x')}{a}_store_d_metric_mixedRowReadsCount": 77,
            **keys(metric_prefix("ns:t"), b, storeFileSize=1_000, memStoreSize=0, replicaid=0),
            **keys(metric_prefix("ns:t"), c, storeFileSize=1_000, replicaid=1),  # a secondary replica
            **keys(metric_prefix("other"), a, storeFileSize=5)}
    assert metric_prefix("ns:t") == "Namespace_ns_table_t_region_"
    assert metric_prefix("t") == "Namespace_default_table_t_region_"
    found = parse_regions_bean({"beans": [{"name": "other"}, bean]}, ["t_table_x", "ns:t"], "rs1,16020,1")
    assert found == [
        RegionMetrics("ns:t", b, "rs1,16020,1", store_file_size=1_000),
        RegionMetrics("t_table_x", a, "rs1,16020,1", 1, 2, 300, 40, 5, 6)]
    assert found[1].data_bytes == 340
    assert parse_regions_bean({"beans": []}, ["t"]) == []
    with pytest.raises(ValueError, match="must be a number"):
        parse_regions_bean({"beans": [{"name": REGIONS_BEAN, f"{metric_prefix('t')}{a}_metric_storeFileSize": "x"}]},
                           ["t"])


def test_the_namenode_capacity_bean():
    body = {"beans": [{"name": "Hadoop:service=NameNode,name=FSNamesystem", "CapacityTotal": 1_000,
                       "CapacityUsed": 300, "CapacityRemaining": 650, "tag.HAState": "active", "FilesTotal": 3}]}
    assert parse_fsnamesystem(body) == HdfsCapacity(1_000, 300, 650, "active")
    with pytest.raises(WebHdfsError, match="nn/jmx has no Hadoop:service=NameNode,name=FSNamesystem bean"):
        parse_fsnamesystem({"beans": []}, "nn")


def test_region_names_and_scratch_names():
    assert encoded_name(b"t,r1,1700000000000.0123456789abcdef0123456789abcdef.") == "0123456789abcdef0123456789abcdef"
    assert encoded_name(b"t,r1,0") is None
    assert scratch_name("mig1", "ns:orders") == "hbase_migration_size_mig1_ns_orders"


def test_the_smallest_region_holding_data_is_sampled_and_without_names_the_middle_one_approximately():
    from hbase_migration.data.datapath.base import Region
    from hbase_migration.migration.sizing_probe import _table_sizing

    names = {b"": "a" * 32, b"g": "b" * 32, b"p": "c" * 32}
    regions = [Region(k, e, b"t,%s,1.%s." % (k, names[k].encode())) for k, e in ((b"", b"g"), (b"g", b"p"),
                                                                                  (b"p", b""))]
    metrics = [RegionMetrics("t", "a" * 32, store_file_size=0), RegionMetrics("t", "b" * 32, store_file_size=700,
                                                                              memstore_size=100),
               RegionMetrics("t", "c" * 32, store_file_size=5_000, store_file_count=2),
               RegionMetrics("other", "d" * 32, store_file_size=9)]
    sizing, region, size, approximate = _table_sizing("t", regions, True, metrics)
    assert (sizing.regions, sizing.regions_reported, sizing.store_file_bytes, sizing.memstore_bytes,
            sizing.store_files, sizing.biggest_region_bytes) == (3, 3, 5_700, 100, 2, 5_000)
    assert (region.start_key, size, approximate) == (b"g", 800, False)  # the empty region is not a sample
    unnamed = [Region(r.start_key, r.end_key, b"t,%s,0" % r.start_key) for r in regions]
    _, region, size, approximate = _table_sizing("t", unnamed, False, metrics)
    assert (region.start_key, size, approximate) == (b"g", 5_800 // 3, True)
    assert _table_sizing("t", regions, True, [])[1] is None  # no data: nothing to sample


@pytest.mark.parametrize("change, message", [
    ({"copy_tasks": 0}, "--copy-tasks must be a finite number > 0, got 0"),
    ({"sample_timeout_s": 0.0}, "--sample-timeout-s must be a finite number > 0, got 0.0"),
    ({"sample_timeout_s": float("inf")}, "--sample-timeout-s must be a finite number > 0, got inf"),
    ({"rows_per_s": -1.0}, "--rows-per-s must be a finite number >= 0 (0: no throttle), got -1.0"),
    ({"rows_per_s": float("inf")}, "--rows-per-s must be a finite number >= 0 (0: no throttle), got inf"),
])
def test_the_clis_sizing_options_are_checked(change, message):
    from argparse import Namespace

    from hbase_migration.migration.sizing_probe import SizingRequest, request_from_args

    args = dict(no_sizing=False, copy_tasks=4, sample_timeout_s=300.0, rows_per_s=0.0, quota_policy="fail",
                sample_gap_s=2.0)
    assert request_from_args(Namespace(**args)) == SizingRequest(growth_window_s=2.0)
    assert request_from_args(Namespace(**{**args, "no_sizing": True})) is None
    with pytest.raises(ValueError, match=re.escape(message)):
        request_from_args(Namespace(**{**args, **change}))
