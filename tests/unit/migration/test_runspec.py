"""The run spec: one definition and one validation of every run parameter, for forms, plans and the CLI."""
from __future__ import annotations

import jsonschema
import pytest

from hbase_migration.migration.runspec import (
    BACKFILL,
    BY_NAME,
    BY_PLAN_KEY,
    CUTOVER,
    FIELDS,
    MIGRATION,
    ROLLBACK,
    WATCH,
    InvalidRunInput,
    RunSpec,
    form_schema,
    timestamp_ms,
)

BASE = {"source_conn_id": "src", "target_conn_id": "dst", "tables": ["t1"], "peer_id": "p1"}


def test_defaults_validate_and_round_trip_through_a_dict():
    spec = RunSpec.validate(BASE)
    assert (spec.tables, spec.peer_id, spec.quota_mark, spec.quota_policy) == (("t1",), "p1", 0.8, "fail")
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert spec.copies() == [{"table": "t1"}]


def test_values_are_canonical():
    spec = RunSpec.validate({**BASE, "tables": "a, default:b,,a", "rows_per_s": "10", "quota_mark": 1,
                             "start_time_ms": "2024-05-01T14:00:00+02:00", "end_time_ms": "2024-05-02"})
    assert spec.tables == ("a", "b")
    assert (spec.rows_per_s, spec.quota_mark) == (10, 1.0)
    assert (spec.start_time_ms, spec.end_time_ms) == (1_714_564_800_000, 1_714_608_000_000)


@pytest.mark.parametrize("change, field, fragment", [
    ({"peer_id": "lock"}, "peer_id", "reserved by HBase"),
    ({"peer_id": "a-b"}, "peer_id", "contains '-'"),
    ({"peer_id": "a.b"}, "peer_id", "must be 1-64 characters"),
    ({"tables": []}, "tables", "at least one table"),
    ({"tables": ["-bad"]}, "tables", "not a valid HBase table name"),
    ({"target_conn_id": "src"}, "target_conn_id", "must differ from source_conn_id"),
    ({"start_time_ms": 10, "end_time_ms": 10}, "end_time_ms", "must be greater than start_time_ms 10"),
    ({"start_time_ms": "yesterday"}, "start_time_ms", "epoch milliseconds or an ISO 8601"),
    ({"start_time_ms": "2024-05-01T12:00:00"}, "start_time_ms", "has no UTC offset"),
    ({"end_time_ms": -1}, "end_time_ms", "within 0.."),
    ({"rows_per_s": True}, "rows_per_s", "must be an integer"),
    ({"rows_per_s": -1}, "rows_per_s", "an integer >= 0"),
    ({"stable_samples": 1}, "stable_samples", "an integer >= 2"),
    ({"caught_up_queue_size": 17}, "caught_up_queue_size", "an integer 0..16: the WAL groups of a region server"),
    ({"quota_policy": "ignore"}, "quota_policy", "'fail' or 'enable_peer'"),
    ({"quota_mark": 0}, "quota_mark", "a fraction in (0, 1]"),
    ({"quota_mark": 1.5}, "quota_mark", "a fraction in (0, 1]"),
    ({"colour": "blue"}, "colour", "unknown parameter"),
    ({"source_conn_id": "a b"}, "source_conn_id", "not an Airflow connection id"),
    ({"codec_map": "SNAPPY"}, "codec_map", "'SNAPPY' is not SOURCE=TARGET (e.g. SNAPPY=ZSTD)"),
    ({"codec_map": "SNAPPY=ZIP"}, "codec_map", "'ZIP' is not an HBase compression codec"),
    ({"codec_map": "lzo=gz,LZO=NONE"}, "codec_map", "LZO is mapped twice"),
    ({"target_coprocessors": ["org.x.Ok", "not a class"]}, "target_coprocessors", "'not a class' is not a Java"),
    ({"bandwidth": -1}, "bandwidth", "an integer >= 0"),
    ({"serial": "yes"}, "serial", "must be true or false"),
    ({"bulk_loads": "some"}, "bulk_loads", "must be 'replicated' or 'none', got 'some'"),
    ({"metadata": "maybe"}, "metadata", "must be 'apply', 'check' or 'skip', got 'maybe'"),
    ({"principal_map": "app@DC1"}, "principal_map", "'app@DC1' is not SOURCE=TARGET"),
])
def test_invalid_values_name_their_field(change, field, fragment):
    with pytest.raises(InvalidRunInput) as e:
        RunSpec.validate({**BASE, **change})
    assert e.value.field == field and fragment in e.value.reason


def test_table_and_peer_options_are_canonical():
    spec = RunSpec.validate({**BASE, "codec_map": " snappy=zstd,LZO = gz ", "target_coprocessors": "a.B, a.B,c.D",
                             "allow_target_data": "true", "serial": True, "bandwidth": "1048576"})
    assert (spec.codec_map, spec.codecs()) == ("LZO=GZ,SNAPPY=ZSTD", {"LZO": "GZ", "SNAPPY": "ZSTD"})
    assert (spec.target_coprocessors, spec.allow_target_data, spec.serial, spec.bandwidth) == (
        ("a.B", "c.D"), True, True, 1_048_576)
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert RunSpec.validate({**BASE, "codec_map": ""}).codecs() == {}
    assert BY_PLAN_KEY["tables.codec_map"].name == "codec_map" and BY_PLAN_KEY["peer.serial"].name == "serial"


def test_each_dag_kind_has_its_own_fields():
    backfill = RunSpec.validate({k: v for k, v in BASE.items() if k != "peer_id"}, BACKFILL)
    assert (backfill.peer_id, backfill.verify) == (None, True)
    with pytest.raises(InvalidRunInput, match="unknown parameter"):
        RunSpec.validate(BASE, BACKFILL)  # a backfill touches no peer
    with pytest.raises(InvalidRunInput, match="unknown parameter"):
        RunSpec.validate({**BASE, "verify": False}, MIGRATION)
    watch = RunSpec.validate({"clusters": "a,b", "quota_mark": 0.5}, WATCH)
    assert (watch.clusters, watch.quota_mark, watch.alert_lag_ms) == (("a", "b"), 0.5, 300_000)


HASH_FIELDS = ("verify_method", "hash_verify_min_bytes", "hash_leaf_bytes", "spark_source_conn_id",
               "spark_target_conn_id", "source_remote_conn_id")


def test_form_schema_comes_from_the_fields_with_plan_defaults():
    schema = form_schema(MIGRATION, {"tables": ("a", "b"), "quota_mark": 0.5})
    assert list(schema) == [f.name for f in FIELDS if MIGRATION in f.dags]
    assert schema["tables"]["default"] == ["a", "b"] and schema["quota_mark"]["default"] == 0.5
    assert schema["start_time_ms"]["type"] == ["null", "integer", "string"]
    assert schema["quota_mark"]["exclusiveMinimum"] == 0 and schema["quota_mark"]["maximum"] == 1
    assert set(form_schema(BACKFILL)) == {"source_conn_id", "target_conn_id", "tables", "start_time_ms",
                                          "end_time_ms", "versions", "rows_per_s", "max_load", "critical_load",
                                          "max_pause_s", "hold_switches", "recompare_sleep_s", "repair",
                                          *HASH_FIELDS, "verify", "skew_margin_ms"}


@pytest.mark.parametrize("value, versions", [(None, None), ("all", None), ("", None), (3, 3), ("2", 2)])
def test_versions_default_to_every_version_the_family_keeps(value, versions):
    assert RunSpec.validate({**BASE, "versions": value}).versions == versions


@pytest.mark.parametrize("value", [0, -1, "some", True])
def test_versions_refuse_what_is_not_all_or_a_count(value):
    with pytest.raises(InvalidRunInput, match="versions: must be 'all' or a number of versions >= 1"):
        RunSpec.validate({**BASE, "versions": value})


@pytest.mark.parametrize("peer_id, valid", [("lock", False), ("a-b", False), ("1", True), ("lock2", True),
                                            ("x" * 64, True), ("x" * 65, False)])
def test_the_forms_peer_id_pattern_agrees_with_the_library(peer_id, valid):
    schema = {k: v for k, v in form_schema(MIGRATION)["peer_id"].items() if k not in ("default", "title",
                                                                                        "description")}
    try:
        jsonschema.validate(peer_id, schema)
        form_ok = True
    except jsonschema.ValidationError:
        form_ok = False
    try:
        RunSpec.validate({**BASE, "peer_id": peer_id})
        library_ok = True
    except InvalidRunInput:
        library_ok = False
    assert form_ok == library_ok == valid


def test_every_plan_key_names_a_migration_field():
    assert BY_PLAN_KEY["quota.mark"] is BY_NAME["quota_mark"]
    assert BY_PLAN_KEY["migration.peer_id"] is BY_NAME["peer_id"]
    assert all(MIGRATION in f.dags for f in BY_PLAN_KEY.values())


def test_timestamp_ms_is_exact():
    assert timestamp_ms("2024-05-01T12:00:00.123Z") == 1_714_564_800_123
    assert timestamp_ms(1_714_564_800_123) == 1_714_564_800_123
    assert timestamp_ms("2024-05-01") == 1_714_521_600_000


def test_the_load_throttle_fields_are_canonical_and_checked_together():
    spec = RunSpec.validate({**BASE, "max_load": " queueSize=1e6, write_p99_ms=50 ", "critical_load": "",
                             "max_pause_s": "30"})
    assert (spec.max_load, spec.critical_load, spec.max_pause_s) == ("queueSize=1e+06,write_p99_ms=50", None, 30.0)
    assert spec.load_limits().max_load == {"queueSize": 1e6, "write_p99_ms": 50.0}
    assert RunSpec.validate({**BASE, "max_load": "", "critical_load": None}).load_limits() is None
    default = RunSpec.validate(BASE)
    assert (default.max_load, default.critical_load) == ("numCallsInGeneralQueue=10,write_p99_ms=100,read_p99_ms=200",
                                                         "numCallsInGeneralQueue=100,write_p99_ms=1000")
    with pytest.raises(InvalidRunInput) as e:
        RunSpec.validate({**BASE, "max_load": "load=3"})
    assert e.value.field == "max_load" and "unknown metric 'load'" in e.value.reason
    with pytest.raises(InvalidRunInput) as e:
        RunSpec.validate({**BASE, "max_load": "queueSize=100", "critical_load": "queueSize=10"})
    assert e.value.field == "critical_load" and "is below max_load's 100" in e.value.reason
    with pytest.raises(InvalidRunInput, match="max_pause_s: must be a number of seconds > 0"):
        RunSpec.validate({**BASE, "max_pause_s": 0})


def test_cutover_and_rollback_forms():
    assert list(form_schema(CUTOVER)) == [
        "source_conn_id", "target_conn_id", "max_lag_ms", "stable_samples", "caught_up_queue_size", "idle_window_s",
        "recompare_sleep_s", *HASH_FIELDS, "migration_run_id", "only_tables", "reverse_peer_id", "unfreeze_source",
        "switch_command", "freeze_method", "freeze_exempt", "superusers", "fence_canary", "fence_canary_keytab",
        "principal_map", "max_freeze_s", "lag_wait_s", "skew_margin_ms", "check_parallel", "sync_replication"]
    assert list(form_schema(ROLLBACK)) == [
        "source_conn_id", "target_conn_id", "max_lag_ms", "stable_samples", "caught_up_queue_size", "idle_window_s",
        "recompare_sleep_s", *HASH_FIELDS, "unfreeze_source", "switch_command", "freeze_exempt", "superusers",
        "fence_canary", "fence_canary_keytab", "max_freeze_s", "lag_wait_s", "skew_margin_ms", "check_parallel",
        "cutover_run_id"]
    spec = RunSpec.validate({"migration_run_id": "manual__2024-05-01T00:00:00+00:00", "only_tables": "a,ns:b",
                             "switch_command": "switch-clients --to dc2"}, CUTOVER)
    assert (spec.migration_run_id, spec.only_tables, spec.reverse_peer_id, spec.unfreeze_source) == (
        "manual__2024-05-01T00:00:00+00:00", ("a", "ns:b"), None, True)
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert (spec.switch_command, spec.freeze_method, spec.freeze_exempt, spec.max_freeze_s, spec.lag_wait_s,
            spec.skew_margin_ms, spec.sync_replication) == ("switch-clients --to dc2", "auto", (), 120.0, 300.0,
                                                           5000, False)
    go = {"migration_run_id": "r", "switch_command": "true"}
    assert RunSpec.validate(go, CUTOVER).check_parallel == 16
    assert RunSpec.validate({**go, "check_parallel": 4}, CUTOVER).check_parallel == 4
    with pytest.raises(InvalidRunInput, match="check_parallel: must be an integer from 1 to 256"):
        RunSpec.validate({**go, "check_parallel": 0}, CUTOVER)
    assert RunSpec.validate({**go, "only_tables": []}, CUTOVER).only_tables is None
    with pytest.raises(InvalidRunInput, match="migration_run_id: is required"):
        RunSpec.validate({}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="reverse_peer_id: peer id 'a-b' contains '-'"):
        RunSpec.validate({**go, "reverse_peer_id": "a-b"}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="switch_command: is required: the command that moves the clients"):
        RunSpec.validate({"migration_run_id": "r"}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="switch_command: must be a command line that splits"):
        RunSpec.validate({**go, "switch_command": "echo 'unclosed"}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="freeze_method: must be 'auto', 'readonly' or 'acl', got 'disable'"):
        RunSpec.validate({**go, "freeze_method": "disable"}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="freeze_exempt: must be user or @group names"):
        RunSpec.validate({**go, "freeze_exempt": ["a b"]}, CUTOVER)
    with pytest.raises(InvalidRunInput, match="max_freeze_s: must be a number of seconds > 0"):
        RunSpec.validate({**go, "max_freeze_s": 0}, CUTOVER)
    assert RunSpec.validate({**go, "freeze_method": "acl", "freeze_exempt": "svc,@etl"}, CUTOVER).freeze_exempt == (
        "svc", "@etl")
    with pytest.raises(InvalidRunInput, match="unknown parameter"):
        RunSpec.validate({"cutover_run_id": "r", "migration_run_id": "r"}, ROLLBACK)
    with pytest.raises(InvalidRunInput, match="target_conn_id: must differ"):
        RunSpec.validate({"cutover_run_id": "r", "target_conn_id": "hbase_source"}, ROLLBACK)
    back = {"cutover_run_id": "r", "switch_command": "switch-clients --to dc1"}
    assert RunSpec.validate({**back, "idle_window_s": 10}, ROLLBACK).idle_window_s == 10.0
    # The rollback is a window like the cut-over's: its own switch command, required.
    with pytest.raises(InvalidRunInput, match="switch_command: is required: the command that moves the clients back "
                                              "to the source inside the write freeze"):
        RunSpec.validate({"cutover_run_id": "r"}, ROLLBACK)
    with pytest.raises(InvalidRunInput, match="unknown parameter"):  # the rollback fences as its cut-over did
        RunSpec.validate({**back, "freeze_method": "acl"}, ROLLBACK)


def test_verify_method_fields():
    spec = RunSpec.validate({**BASE})
    assert (spec.verify_method, spec.hash_verify_min_bytes, spec.hash_leaf_bytes, spec.skew_margin_ms) == (
        "auto", 1 << 30, 1 << 20, 5000)
    assert (spec.spark_source_conn_id, spec.spark_target_conn_id, spec.source_remote_conn_id) == (None, None, None)
    spec = RunSpec.validate({**BASE, "verify_method": "hash", "spark_source_conn_id": "spark_dc1",
                             "spark_target_conn_id": "spark_dc2", "hash_leaf_bytes": 4096})
    assert (spec.verify_method, spec.spark_source_conn_id, spec.hash_leaf_bytes) == ("hash", "spark_dc1", 4096)
    with pytest.raises(InvalidRunInput, match="verify_method: must be 'auto', 'cells' or 'hash'"):
        RunSpec.validate({**BASE, "verify_method": "sha"})
    with pytest.raises(InvalidRunInput, match="hash_leaf_bytes: must be an integer >= 1024"):
        RunSpec.validate({**BASE, "hash_leaf_bytes": 10})
    with pytest.raises(InvalidRunInput, match="spark_source_conn_id"):
        RunSpec.validate({**BASE, "spark_source_conn_id": "no spaces"})


def test_the_fence_canary_is_one_principal_and_its_keytab_an_absolute_path():
    base = {"migration_run_id": "manual__1", "switch_command": "switch-clients"}
    spec = RunSpec.validate(base, CUTOVER)
    assert (spec.fence_canary, spec.fence_canary_keytab) == ("hbase_migration_canary", None)
    spec = RunSpec.validate({**base, "fence_canary": "hm_canary@DC1.EXAMPLE",
                             "fence_canary_keytab": "/etc/security/keytabs/hm_canary.keytab"}, CUTOVER)
    assert (spec.fence_canary, spec.fence_canary_keytab) == ("hm_canary@DC1.EXAMPLE",
                                                             "/etc/security/keytabs/hm_canary.keytab")
    assert RunSpec.from_dict(spec.to_dict()) == spec
    for field, bad in (("fence_canary", "@ops"), ("fence_canary", "a,b"), ("fence_canary_keytab", "hm.keytab")):
        with pytest.raises(InvalidRunInput) as e:
            RunSpec.validate({**base, field: bad}, CUTOVER)
        assert field in str(e.value), str(e.value)
