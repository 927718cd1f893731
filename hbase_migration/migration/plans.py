"""Migration plans: one TOML file per scheduled migration, validated field by field.

A plan names the clusters (Airflow connection ids), the tables, the peer id, the schedule and thresholds; the
DAG file `dags/hbase_migration_plans.py` turns each valid plan into one migration DAG. Every run parameter is
checked by the run spec (`hbase_migration/migration/runspec.py`: the same rules as the trigger form), so a plan that
loads is a run that starts. Errors name the file and the field, so one bad plan breaks no other.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hbase_migration.migration.runspec import BY_NAME, BY_PLAN_KEY, MIGRATION, InvalidRunInput, RunSpec

NAME = re.compile(r"^[A-Za-z0-9_]{1,100}$")
SCHEDULE_PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@yearly"}
# [migration] fields that are the plan's own (the DAG's identity and schedule), not run parameters.
PLAN_ONLY = ("name", "description", "schedule", "spark_conn_id")
REQUIRED = ("source_conn_id", "target_conn_id", "tables", "peer_id")


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
    spec: RunSpec
    spark_conn_id: str = "spark_default"
    params: dict[str, Any] = field(default_factory=dict)  # the values the plan sets: its trigger form's defaults
    description: str = ""

    @property
    def dag_id(self) -> str:
        return f"hbase_migration__{self.name}"

    @property
    def source_conn_id(self) -> str:
        return self.spec.source_conn_id

    @property
    def peer_id(self) -> str | None:
        return self.spec.peer_id

    @property
    def tables(self) -> tuple[str, ...]:
        return self.spec.tables


def _plan_string(path: Path, data: dict, key: str, pattern: re.Pattern | None = None) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PlanError(path, f"migration.{key}", "must be a non-empty string")
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


def _run_values(path: Path, data: dict) -> dict[str, Any]:
    """Each `[section] key` of the file as the run parameter it sets (names from the run spec)."""
    values: dict[str, Any] = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            raise PlanError(path, section, "must be a table ([section])")
        for key, raw in table.items():
            if section == "migration" and key in PLAN_ONLY:
                continue
            spec_field = BY_PLAN_KEY.get(f"{section}.{key}")
            if spec_field is None or MIGRATION not in spec_field.dags:
                known = sorted([k.split(".", 1)[1] for k in BY_PLAN_KEY if k.startswith(section + ".")]
                               + (list(PLAN_ONLY) if section == "migration" else []))
                raise PlanError(path, f"{section}.{key}", f"unknown field (known: {', '.join(known)})")
            values[spec_field.name] = raw
    return values


def parse_plan(path: Path | str, text: str | None = None) -> Plan:
    path = Path(path)
    try:
        data = tomllib.loads(text if text is not None else path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise PlanError(path, "(file)", f"not valid TOML: {e}") from None
    known_sections = {k.split(".")[0] for k in BY_PLAN_KEY}
    unknown = sorted(set(data) - known_sections)
    if unknown:
        raise PlanError(path, unknown[0], f"unknown section (known: {', '.join(sorted(known_sections))})")
    mig = data.get("migration")
    if not isinstance(mig, dict):
        raise PlanError(path, "migration", "section [migration] is required")
    name = _plan_string(path, mig, "name", NAME)
    if name is None:
        raise PlanError(path, "migration.name", "is required (a non-empty string)")
    values = _run_values(path, data)
    for key in REQUIRED:
        if key not in values:
            raise PlanError(path, f"migration.{key}", "is required")
    try:
        spec = RunSpec.validate(values, MIGRATION)
    except InvalidRunInput as e:
        raise PlanError(path, BY_NAME[e.field].plan_key or e.field, e.reason) from None
    params = {k: v for k, v in spec.to_dict().items() if k in values}
    return Plan(name=name, path=str(path), schedule=_schedule(path, mig.get("schedule")), spec=spec,
                spark_conn_id=_plan_string(path, mig, "spark_conn_id") or "spark_default",
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
