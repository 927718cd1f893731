"""The DAGs' templates reading the validated run spec, rendered as Airflow renders them (Jinja's native mode)."""
from __future__ import annotations

import pytest
from jinja2.nativetypes import NativeEnvironment

from operators.factory import spec


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
