from pathlib import Path

import pytest

from hbase_migration.migration.plans import PlanError, load_plans, parse_plan

EXAMPLE = (Path(__file__).resolve().parents[3] / "dags" / "plans" / "example_orders.toml").read_text()

MINIMAL = """
[migration]
name = "m1"
source_conn_id = "src"
target_conn_id = "dst"
tables = ["t1", "t2"]
peer_id = "m1"
"""


def test_checked_in_example_parses():
    plan = parse_plan("example_orders.toml", EXAMPLE)
    assert plan.dag_id == "hbase_migration__example_orders"
    assert plan.schedule is None and plan.tables == ("orders", "users")
    assert plan.params["quota_policy"] == "fail" and plan.params["stable_samples"] == 3


def test_minimal_plan_and_defaults():
    plan = parse_plan("m1.toml", MINIMAL)
    assert plan.params == {"source_conn_id": "src", "target_conn_id": "dst", "tables": ["t1", "t2"],
                           "peer_id": "m1"}
    assert plan.spark_conn_id == "spark_default"


@pytest.mark.parametrize("change, field, fragment", [
    (('peer_id = "m1"', 'peer_id = "m-1"'), "migration.peer_id", "contains '-'"),
    (('peer_id = "m1"', 'peer_id = "lock"'), "migration.peer_id", "reserved by HBase"),
    (('tables = ["t1", "t2"]', "tables = []"), "migration.tables", "at least one table"),
    (('tables = ["t1", "t2"]', "tables = 3"), "migration.tables", "must be a list of tables"),
    (('source_conn_id = "src"\n', ''), "migration.source_conn_id", "is required"),
    (("peer_id = \"m1\"", "peer_id = \"m1\"\n[quota]\nmark = 1.5"), "quota.mark", "a fraction in (0, 1]"),
    (('target_conn_id = "dst"', 'target_conn_id = "src"'), "migration.target_conn_id", "must differ"),
    (('name = "m1"', 'name = "m1"\nschedule = "@sometimes"'), "migration.schedule", "unknown preset"),
    (('name = "m1"', 'name = "m1"\nschedule = "* *"'), "migration.schedule", "5-field cron"),
    (('name = "m1"', 'name = "m1"\ncolour = "blue"'), "migration.colour", "unknown field"),
    (("peer_id = \"m1\"", "peer_id = \"m1\"\n[quota]\npolicy = \"ignore\""), "quota.policy", "'fail' or"),
    (("peer_id = \"m1\"", "peer_id = \"m1\"\n[catch_up]\nstable_samples = 1"), "catch_up.stable_samples", ">= 2"),
    (("peer_id = \"m1\"", "peer_id = \"m1\"\n[copy]\nstart_time_ms = 10\nend_time_ms = 5"), "copy.end_time_ms",
     "greater than"),
    (("peer_id = \"m1\"", "peer_id = \"m1\"\n[copy]\nrows_per_s = true"), "copy.rows_per_s", "integer"),
    (('[migration]', '[migrate]'), "migrate", "unknown section"),
    (('name = "m1"', 'name = "m1'), "(file)", "not valid TOML"),
])
def test_errors_name_the_file_and_field(change, field, fragment):
    text = MINIMAL.replace(*change)
    with pytest.raises(PlanError) as e:
        parse_plan("plans/m1.toml", text)
    assert e.value.field == field
    assert str(e.value).startswith(f"plans/m1.toml: {field}: ") and fragment in str(e.value)


def test_one_bad_plan_does_not_hide_the_good_ones(tmp_path):
    (tmp_path / "a.toml").write_text(MINIMAL)
    bad = MINIMAL.replace('name = "m1"', 'name = "m2"').replace("tables = [", "tables = 3 #")
    (tmp_path / "b.toml").write_text(bad)
    (tmp_path / "c.toml").write_text(MINIMAL.replace('name = "m1"', 'name = "m3"'))  # same peer on same source
    plans, errors = load_plans(tmp_path)
    assert [p.name for p in plans] == ["m1"]
    assert sorted((Path(e.path).name, e.field) for e in errors) == [("b.toml", "migration.tables"),
                                                                    ("c.toml", "migration.peer_id")]
