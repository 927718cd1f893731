"""Preflight, target-table creation and the oldWALs quota check: the steps before a peer exists."""
from __future__ import annotations

from typing import Any, Sequence

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from operators.hooks import HBaseClusterHook
from operators.replication import _tables


class PreflightOperator(BaseOperator):
    """Runs every preflight check against both clusters and fails (without retry) if one fails.

    Checks: both clusters reachable and distinct; tables and families on both sides (or to be created);
    REPLICATION_SCOPE exactly 1 on every migrated family (any value other than 0/1 refused); the peer id free
    or already ours with the same config; no other peer pinning WALs; oldWALs quota headroom for the copy.
    Changes nothing. The report is returned (XCom) and logged with a fix for each failure.
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "tables", "peer_id", "create_missing",
                                      "expected_copy_s")
    ui_color = "#e6f4ea"

    def __init__(self, *, tables: Sequence[str] | str, peer_id: str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", create_missing: bool = True,
                 expected_copy_s: float = 3600.0, safety_factor: float = 2.0, high_water_mark: float = 0.8,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.tables = tables
        self.peer_id = peer_id
        self.create_missing = create_missing
        self.expected_copy_s = expected_copy_s
        self.safety_factor = safety_factor
        self.high_water_mark = high_water_mark

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.preflight import run_preflight

        report = run_preflight(
            HBaseClusterHook(self.source_conn_id).get_cluster(), HBaseClusterHook(self.target_conn_id).get_cluster(),
            _tables(self.tables), self.peer_id, create_missing=bool(self.create_missing),
            expected_copy_s=float(self.expected_copy_s), safety_factor=self.safety_factor,
            high_water_mark=self.high_water_mark,
        )
        for line in report.text().splitlines():
            self.log.info("%s", line)
        if not report.ok:
            raise AirflowFailException(
                "preflight failed: " + "; ".join(f"{r.name}: {r.reason}" for r in report.failures))
        return report.to_dict()


class CreateTargetTablesOperator(BaseOperator):
    """Creates each migrated table that is absent on the target with the source's families (versions, TTL,
    REPLICATION_SCOPE) and the source's split keys; tables that exist are left alone. Safe to re-run."""

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "tables", "dry_run")
    ui_color = "#e6f4ea"

    def __init__(self, *, tables: Sequence[str] | str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", dry_run: bool | str = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.tables = tables
        self.dry_run = dry_run

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from hbase_migration.tables import create_missing_tables

        done = create_missing_tables(
            HBaseClusterHook(self.source_conn_id).get_cluster(), HBaseClusterHook(self.target_conn_id).get_cluster(),
            _tables(self.tables), dry_run=str(self.dry_run).lower() in ("true", "1"))
        for item in done:
            self.log.info("%s: %s%s", item["table"], item["outcome"],
                          f" ({item['statement']})" if item.get("statement") else "")
        return done


class OldWalsQuotaCheckOperator(BaseOperator):
    """Refuses to go on when oldWALs' quota cannot hold the WALs a disabled peer will pin for the copy's
    expected duration times a safety factor (growth measured over `sample_gap_s`)."""

    template_fields: Sequence[str] = ("source_conn_id", "expected_copy_s")

    def __init__(self, *, source_conn_id: str = "hbase_source", expected_copy_s: float = 3600.0,
                 safety_factor: float = 2.0, high_water_mark: float = 0.8, sample_gap_s: float = 5.0,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.expected_copy_s = expected_copy_s
        self.safety_factor = safety_factor
        self.high_water_mark = high_water_mark
        self.sample_gap_s = sample_gap_s

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration import hdfs, quota

        cluster = HBaseClusterHook(self.source_conn_id).get_cluster()
        s = quota.measure(cluster, self.high_water_mark, self.sample_gap_s)
        self.log.info("%s", s.log_line())
        decision = hdfs.headroom_decision(s.usage, s.growth_bytes_per_s, float(self.expected_copy_s),
                                          self.safety_factor, self.high_water_mark)
        if not decision.ok:
            raise AirflowFailException("oldWALs headroom too short: " + "; ".join(decision.reasons))
        return {"sample": s.to_dict(), "decision": decision.to_dict()}
