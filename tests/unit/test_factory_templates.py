"""The DAGs' templates reading the validated run spec, rendered as Airflow renders them (Jinja's native mode)."""
from __future__ import annotations

import pytest
from jinja2.nativetypes import NativeEnvironment

from hbase_migration.operators.factory import spec


class TI:
    def __init__(self, values):
        self.values = values

    def xcom_pull(self, task_ids, key):
        assert (task_ids, key) == ("open_run", "spec")
        return self.values


@pytest.mark.parametrize("name, value", [
    ("peer_id", "1"),                  # a string that looks like a number stays a string
    ("codec_map", None),               # a nullable string left empty stays None (not the string "null")
    ("codec_map", "LZO=GZ,SNAPPY=ZSTD"),
    ("max_load", None),
    ("target_coprocessors", ["org.example.Obs"]),
    ("serial", True),
    ("bandwidth", 1048576),
])
def test_each_kind_of_field_renders_as_its_value(name, value):
    rendered = NativeEnvironment().from_string(spec(name)).render(ti=TI({name: value}))
    assert rendered == value and type(rendered) is type(value)


class CutoverTI:
    """The XComs the cut-over's approval reads: the spec and plan of `open_run`, the `check` task's result."""

    def __init__(self, check):
        self.check = check

    def xcom_pull(self, task_ids, key="return_value"):
        if task_ids == "check":
            return self.check
        return {"spec": {"tables": ["a"], "source_conn_id": "s", "target_conn_id": "t", "peer_id": "p",
                         "reverse_peer_id": "p_rev", "freeze_method": "readonly", "switch_command": "switch",
                         "max_lag_ms": 1, "lag_wait_s": 2, "max_freeze_s": 3},
                "plan": {"freeze_reason": "the run spec's", "bulk_loads": "replicated"}}[key]


@pytest.mark.parametrize("check, shown", [
    ({"metadata": {"text": "none (grants, quotas, RS groups alike on both sides)"}},
     "can write on the target: checked): none (grants, quotas, RS groups alike on both sides)."),
    ({"metadata": {"text": "1 difference(s): quota table a: space: source 1073741824 NO_INSERTS, target -"}},
     "checked): 1 difference(s): quota table a: space: source 1073741824 NO_INSERTS, target -."),
    ({"metadata": None}, "checked): not compared."),
])
def test_the_cutover_approval_shows_the_metadata_differences(check, shown):
    """Issue 39: the approval's text shows the check's metadata comparison, as Airflow renders it."""
    from hbase_migration.operators.cutover_factory import APPROVAL_TASK, build_cutover_dag

    body = build_cutover_dag("test_cutover_body").get_task(APPROVAL_TASK["cutover"]).body
    assert shown in NativeEnvironment().from_string(body).render(ti=CutoverTI(check))
