"""Migration plans: one TOML file per scheduled migration, validated field by field.

A plan names the clusters (Airflow connection ids), the tables, the peer id, the schedule and thresholds; the
DAG file `dags/hbase_migration_plans.py` turns each valid plan into one migration DAG. Errors name the file
and the field, so one bad plan is reported clearly and breaks no other.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME = re.compile(r"^[A-Za-z0-9_]{1,100}$")
PEER_ID = re.compile(r"^[A-Za-z0-9_]{1,64}$")
SCHEDULE_PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@yearly"}


class PlanError(ValueError):
    def __init__(self, path: Path | str, field_name: str, message: str):
        super().__init__(f"{path}: {field_name}: {message}")
        self.path = str(path)
        self.field = field_name


@dataclass(frozen=True)
class Plan:
    name: str
    path: str
    schedule: str | None
    source_conn_id: str
    target_conn_id: str
    tables: tuple[str, ...]
    peer_id: str
    spark_conn_id: str = "spark_default"
    params: dict[str, Any] = field(default_factory=dict)  # defaults for the DAG's trigger form
    description: str = ""

    @property
    def dag_id(self) -> str:
        return f"hbase_migration__{self.name}"


# section.key -> (param name, type check, description for errors)
_OPTIONAL: dict[str, tuple[str, Any, str]] = {
    "copy.start_time_ms": ("start_time_ms", int, "an integer (ms since the epoch)"),
    "copy.end_time_ms": ("end_time_ms", int, "an integer (ms since the epoch)"),
    "copy.rows_per_s": ("rows_per_s", int, "an integer >= 0"),
    "copy.create_missing_tables": ("create_missing_tables", bool, "true or false"),
    "catch_up.max_lag_ms": ("max_lag_ms", int, "an integer >= 0"),
    "catch_up.stable_samples": ("stable_samples", int, "an integer >= 2"),
    "catch_up.caught_up_queue_size": ("caught_up_queue_size", int, "0 (HBase 1.x) or 1 (HBase 2.x)"),
    "quota.policy": ("quota_policy", str, "'fail' or 'enable_peer'"),
    "quota.mark": ("quota_mark", float, "a fraction in (0, 1]"),
    "quota.expected_copy_s": ("expected_copy_s", int, "an integer >= 1"),
    "verify.recompare_sleep_s": ("recompare_sleep_s", float, "a number >= 0"),
}

_RANGES = {
    "rows_per_s": lambda v: v >= 0, "max_lag_ms": lambda v: v >= 0, "stable_samples": lambda v: v >= 2,
    "caught_up_queue_size": lambda v: v in (0, 1), "quota_policy": lambda v: v in ("fail", "enable_peer"),
    "quota_mark": lambda v: 0 < v <= 1, "expected_copy_s": lambda v: v >= 1, "recompare_sleep_s": lambda v: v >= 0,
    "start_time_ms": lambda v: v >= 0, "end_time_ms": lambda v: v >= 0,
}


def _typed(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _string(path: Path, data: dict, key: str, pattern: re.Pattern | None = None, required: bool = True) -> Any:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PlanError(path, f"migration.{key}", "is required (a non-empty string)")
    if pattern is not None and not pattern.match(value):
        raise PlanError(path, f"migration.{key}", f"{value!r} must match {pattern.pattern}")
    return value.strip()


def _schedule(path: Path, value: Any) -> str | None:
    if value in (None, "", "none", "None"):
        return None
    if not isinstance(value, str):
        raise PlanError(path, "migration.schedule", f"must be a cron expression, a preset or 'none', got {value!r}")
    if value.startswith("@"):
        if value not in SCHEDULE_PRESETS:
            presets = ", ".join(sorted(SCHEDULE_PRESETS))
            raise PlanError(path, "migration.schedule", f"unknown preset {value!r} ({presets})")
        return value
    if len(value.split()) != 5:
        raise PlanError(path, "migration.schedule", f"{value!r} is not a 5-field cron expression")
    return value


def parse_plan(path: Path | str, text: str | None = None) -> Plan:
    path = Path(path)
    try:
        data = tomllib.loads(text if text is not None else path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise PlanError(path, "(file)", f"not valid TOML: {e}") from None
    known_sections = {"migration", "copy", "catch_up", "quota", "verify"}
    unknown = sorted(set(data) - known_sections)
    if unknown:
        raise PlanError(path, unknown[0], f"unknown section (known: {', '.join(sorted(known_sections))})")
    mig = data.get("migration")
    if not isinstance(mig, dict):
        raise PlanError(path, "migration", "section [migration] is required")
    known = {"name", "description", "schedule", "source_conn_id", "target_conn_id", "tables", "peer_id",
             "spark_conn_id"}
    extra = sorted(set(mig) - known)
    if extra:
        raise PlanError(path, f"migration.{extra[0]}", f"unknown field (known: {', '.join(sorted(known))})")
    name = _string(path, mig, "name", NAME)
    source = _string(path, mig, "source_conn_id")
    target = _string(path, mig, "target_conn_id")
    if source == target:
        raise PlanError(path, "migration.target_conn_id", f"must differ from source_conn_id ({source!r})")
    tables = mig.get("tables")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, str) and t.strip() for t in tables):
        raise PlanError(path, "migration.tables", "must be a non-empty list of table names")
    peer_id = _string(path, mig, "peer_id", PEER_ID)
    params: dict[str, Any] = {}
    for dotted, (param, kind, wanted) in _OPTIONAL.items():
        section, key = dotted.split(".")
        sec = data.get(section, {})
        if not isinstance(sec, dict):
            raise PlanError(path, section, "must be a table ([section])")
        if key not in sec:
            continue
        value = sec[key]
        if not _typed(value, kind) or not _RANGES.get(param, lambda v: True)(value):
            raise PlanError(path, dotted, f"must be {wanted}, got {value!r}")
        params[param] = value
    for section in ("copy", "catch_up", "quota", "verify"):
        for key in data.get(section, {}):
            if f"{section}.{key}" not in _OPTIONAL:
                raise PlanError(path, f"{section}.{key}", "unknown field")
    if "start_time_ms" in params and "end_time_ms" in params and params["start_time_ms"] >= params["end_time_ms"]:
        raise PlanError(path, "copy.end_time_ms",
                        "must be greater than copy.start_time_ms (the window is [start, end))")
    params.update(source_conn_id=source, target_conn_id=target, tables=[t.strip() for t in tables], peer_id=peer_id)
    return Plan(name=name, path=str(path), schedule=_schedule(path, mig.get("schedule")), source_conn_id=source,
                target_conn_id=target, tables=tuple(params["tables"]), peer_id=peer_id,
                spark_conn_id=_string(path, mig, "spark_conn_id", required=False) or "spark_default",
                params=params, description=str(mig.get("description", "")))


def load_plans(directory: Path | str) -> tuple[list[Plan], list[PlanError]]:
    """Every `*.toml` plan in `directory`: the valid ones, and one error per invalid file.

    Two plans with the same name or peer id on the same source are both refused (they would fight over it).
    """
    plans, errors = [], []
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            plans.append(parse_plan(path))
        except PlanError as e:
            errors.append(e)
    seen: dict[tuple[str, str], Plan] = {}
    names: dict[str, Plan] = {}
    valid = []
    for plan in plans:
        clash = names.get(plan.name) or seen.get((plan.source_conn_id, plan.peer_id))
        if clash:
            errors.append(PlanError(plan.path, "migration.name" if plan.name == clash.name else "migration.peer_id",
                                    f"clashes with {clash.path}"))
            continue
        names[plan.name] = plan
        seen[(plan.source_conn_id, plan.peer_id)] = plan
        valid.append(plan)
    return valid, errors
