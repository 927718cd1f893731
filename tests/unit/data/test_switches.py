"""The switches' shell statements and the parsing of what the shell prints (hbase_migration/data/switches.py)."""
import pytest

from hbase_migration.data.switches import (
    OFF,
    SwitchError,
    SwitchState,
    holder_name,
    parse_state,
    read_statements,
    set_statements,
    status_text,
)


def test_statements_are_the_shells_own():
    assert read_statements() == ["splitormerge_enabled 'SPLIT'", "splitormerge_enabled 'MERGE'", "normalizer_enabled"]
    assert set_statements(OFF) == ["splitormerge_switch 'SPLIT', false", "splitormerge_switch 'MERGE', false",
                                   "normalizer_switch false"]
    assert set_statements(SwitchState(True, False, True)) == [
        "splitormerge_switch 'SPLIT', true", "splitormerge_switch 'MERGE', false", "normalizer_switch true"]


def test_one_session_of_three_statements_is_parsed_in_order():
    out = "true\nTook 0.0123 seconds\nfalse\nTook 0.0040 seconds\n true \nTook 0.0031 seconds\n"
    assert parse_state(out, "reading") == SwitchState(split=True, merge=False, normalizer=True)


@pytest.mark.parametrize("out", ["true\nfalse\n", "true\nfalse\ntrue\nfalse\n", "ERROR: Unknown command\n"])
def test_anything_but_three_values_is_refused_with_what_was_printed(out):
    with pytest.raises(SwitchError, match=r"reading: expected one true/false line for each of split, merge and "
                                          r"normalizer, the shell printed \d"):
        parse_state(out, "reading")


def test_holder_names_and_the_status_text():
    assert holder_name("run-1", "ns:t") == "copy run-1 ns:t"
    data = {"source": "zk:2181:/hbase", "now": OFF.to_dict(), "found": {"split": True, "merge": False,
                                                                        "normalizer": True},
            "found_ms": 1_000, "holds": [{"holder": "copy run-1 t", "run_id": "run-1", "held_ms": 1_000}]}
    assert status_text(data) == (
        "switches of zk:2181:/hbase now: split off, merge off, normalizer off\n"
        "held off since 1000 ms; found then (restored by the last holder): split on, merge off, normalizer on\n"
        "  holder: copy run-1 t (run run-1, since 1000 ms)")
    assert status_text({**data, "found": None, "holds": []}).endswith("not held by any copy (nothing recorded to "
                                                                      "restore)")
