"""Preflight and target-table creation: the steps before a peer exists."""
from __future__ import annotations

from typing import Any, Sequence

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK
from hbase_migration.operators.hooks import HBaseClusterHook, table_names


class PreflightOperator(BaseOperator):
    """Runs every preflight check against both clusters and fails (without retry) if one refuses; a check that
    could not be made because an endpoint did not answer fails the attempt, which the task's retries repeat.

    Checks: both clusters reachable and distinct; tables on both sides: an existing target table with the
    source's families, VERSIONS, MIN_VERSIONS, TTL and KEEP_DELETED_CELLS (other attributes reported) and no
    row unless allowed or written by this migration; tables to create: coprocessors installed on the target,
    codecs it loads (a scratch twin created and dropped); REPLICATION_SCOPE exactly 1 on every migrated family
    (any value other than 0/1 refused); the peer id free or already ours with the same config (SERIAL,
    BANDWIDTH included; SERIAL needs the shell backend); no other peer pinning WALs; oldWALs quota headroom for
    the copy; bulk loads replicated by the source (its region servers' /conf: hbase.replication.bulkload.enabled and a
    cluster id) unless the operator attests none are made (`bulk_loads` `none`); warnings when deleted cells are kept.
    Changes nothing but the scratch twin. The report is returned (XCom) and logged with a fix per failure.

    :param tables: the tables to migrate (every family of each).
    :param peer_id: the replication peer the run will add.
    :param source_conn_id: the source cluster's Airflow connection.
    :param target_conn_id: the target cluster's Airflow connection.
    :param create_missing: a table absent on the target passes (it will be created) instead of failing.
    :param expected_copy_s: the copy's expected duration: oldWALs must hold what a disabled peer pins that long.
    :param quota_mark: the fraction of an oldWALs quota that counts as pressure (the run's `quota_mark`).
    :param safety_factor: the expected duration is multiplied by this for the headroom check.
    :param codec_map: `SNAPPY=ZSTD,...`: codecs replaced on the tables to create (the run's `codec_map`).
    :param target_coprocessors: classes installed on the target (a coprocessor not listed is refused).
    :param allow_target_data: accept existing target tables that hold rows.
    :param serial: the peer is to be SERIAL. :param bandwidth: the peer's BANDWIDTH (bytes/s, 0 unlimited).
    :param sizing: size the run first (`hbase_migration.migration.sizing_probe`): per table regions, bytes and rows
        from the region servers' metrics and a timed sample copy of one region into a scratch table on the target
        (dropped after), then the projected copy time and the oldWALs pinned meanwhile against the quota and HDFS's free
        space (the `copy_projection` check refuses what does not fit). The figures go to the ledger (dashboard).
    :param copy_tasks: partitions the copies run at once (the projection divides the work by it).
    :param sample_timeout_s: the longest sample copy per table.
    :param rows_per_s: the copy's throttle per task (0: none), as the projection must assume it.
    :param quota_policy: the run's (`enable_peer`: a quota the projection overflows is only a warning).
    :param start_time_ms: :param end_time_ms: :param versions: the copy's scope (the sample copies the same).
    :param ledger_run_id: the run the sizing is recorded under (None: not recorded).
    :param initial_copy: `scan`, `snapshot` or `auto`: how each table's initial copy is made (decided here, with the
        snapshot path's checks for the tables that take it, and recorded in the ledger: a retried run keeps the first
        decision). :param snapshot_threshold_bytes: auto's threshold on a table's store files.
    :param same_master_key: the operator attests that the target holds the source's master key: tables with
        encrypted families may go by snapshot (else refused by `snapshot`, sent to the scan by `auto`).
    :param bulk_loads: `replicated` (the source's /conf must show it) or `none` (the operator's attestation that
        nothing is bulk loaded into the tables until the cut-over).
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "tables", "peer_id", "create_missing",
                                      "expected_copy_s", "quota_mark", "codec_map", "target_coprocessors",
                                      "allow_target_data", "serial", "bandwidth", "sizing", "copy_tasks",
                                      "sample_timeout_s", "rows_per_s", "quota_policy", "start_time_ms",
                                      "end_time_ms", "versions", "ledger_run_id", "initial_copy",
                                      "snapshot_threshold_bytes", "same_master_key", "bulk_loads")
    ui_color = "#e6f4ea"

    def __init__(self, *, tables: Sequence[str], peer_id: str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", create_missing: bool = True,
                 expected_copy_s: float = 3600.0, quota_mark: float = DEFAULT_QUOTA_MARK,
                 safety_factor: float = 2.0, codec_map: str | None = None, target_coprocessors: Sequence[str] = (),
                 allow_target_data: bool = False, serial: bool = False, bandwidth: int = 0, sizing: bool = False,
                 copy_tasks: int = 4, sample_timeout_s: float = 300.0, rows_per_s: float = 0.0,
                 quota_policy: str = "fail", start_time_ms: int | None = None, end_time_ms: int | None = None,
                 versions: int | None = None, ledger_run_id: str | None = None, initial_copy: str = "scan",
                 snapshot_threshold_bytes: int | None = None, same_master_key: bool = False,
                 bulk_loads: str = "replicated", **kwargs) -> None:
        super().__init__(**kwargs)
        self.bulk_loads = bulk_loads
        self.same_master_key = same_master_key
        self.initial_copy = initial_copy
        self.snapshot_threshold_bytes = snapshot_threshold_bytes
        self.sizing = sizing
        self.copy_tasks = copy_tasks
        self.sample_timeout_s = sample_timeout_s
        self.rows_per_s = rows_per_s
        self.quota_policy = quota_policy
        self.start_time_ms = start_time_ms
        self.end_time_ms = end_time_ms
        self.versions = versions
        self.ledger_run_id = ledger_run_id
        self.codec_map = codec_map
        self.target_coprocessors = target_coprocessors
        self.allow_target_data = allow_target_data
        self.serial = serial
        self.bandwidth = bandwidth
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.tables = tables
        self.peer_id = peer_id
        self.create_missing = create_missing
        self.expected_copy_s = expected_copy_s
        self.quota_mark = quota_mark
        self.safety_factor = safety_factor

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.clusters.channels import one_shell_per_cluster
        from hbase_migration.migration.preflight import run_preflight
        from hbase_migration.migration.runspec import parse_codec_map

        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        recorded, resumed = self._earlier_decisions()
        with one_shell_per_cluster():  # describe, namespaces, the sizing's scratch tables: one JVM per cluster
            report = run_preflight(
                source, target, table_names(self.tables), self.peer_id, create_missing=self.create_missing,
                expected_copy_s=self.expected_copy_s, safety_factor=self.safety_factor, quota_mark=self.quota_mark,
                codec_map=parse_codec_map(self.codec_map or ""),
                target_coprocessors=table_names(self.target_coprocessors),
                allow_target_data=self.allow_target_data is True, serial=self.serial is True,
                bandwidth=int(self.bandwidth or 0), sizing=self._sizing_request(),
                initial_copy=self.initial_copy or "scan",
                snapshot_threshold_bytes=int(self.snapshot_threshold_bytes) if self.snapshot_threshold_bytes else None,
                recorded=recorded, resumed_exports=resumed, same_master_key=self.same_master_key is True,
                bulk_loads=self.bulk_loads or "replicated",
            )
        for line in report.text().splitlines():
            self.log.info("%s", line)
        if report.sizing is not None and self.ledger_run_id:
            self._record_sizing(report.sizing)
        if report.ok and report.initial_copy and self.ledger_run_id:
            self._record_decisions(report.initial_copy)
        if not report.ok:
            failed = "; ".join(f"{r.name}: {r.reason}" for r in report.failures)
            if report.retryable:  # nothing refused: an endpoint did not answer, which a retry may get past
                try_number = int(getattr(context.get("ti"), "try_number", None) or 1)
                retries_left = max(int(self.retries or 0) - (try_number - 1), 0)
                self.log.warning("preflight could not make %d check(s) because an endpoint did not answer; "
                                 "%s", len(report.failures), f"the task retries ({retries_left} retr"
                                 f"{'y' if retries_left == 1 else 'ies'} left)" if retries_left else
                                 "no retry left: the run fails, nothing was changed")
                raise AirflowException(f"preflight could not reach: {failed}")
            raise AirflowFailException(f"preflight failed: {failed}")
        return report.to_dict()


    def _earlier_decisions(self) -> tuple[dict[str, str], list[str]]:
        """What this run decided before (a retried or cleared preflight keeps it), and the tables its snapshot
        export already published or cloned (their target tables are its own)."""
        if not self.ledger_run_id:
            return {}, []
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            recorded = {t: d["method"] for t, d in ledger.initial_copies(self.ledger_run_id).items()}
            run = ledger.find_run(self.ledger_run_id)
            exports = ledger.snapshot_exports(run["copy_id"]) if run else {}
        resumed = [t for t, e in exports.items() if e["state"] in ("published", "cloned", "cleaned")
                   or e.get("cloned_ms")]
        return recorded, resumed

    def _record_decisions(self, decisions: Any) -> None:
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            for table, d in decisions.items():
                kept = ledger.initial_copy(self.ledger_run_id, table, d.method, d.reason)
                self.log.info("initial copy of %s: %s (%s)", table, kept, d.reason)

    def _sizing_request(self) -> Any:
        if self.sizing is not True:
            return None
        from hbase_migration.migration.sizing_probe import SizingRequest

        return SizingRequest(copy_tasks=int(self.copy_tasks), rows_per_s=float(self.rows_per_s or 0),
                             sample_timeout_s=float(self.sample_timeout_s), quota_policy=self.quota_policy,
                             start_time_ms=self.start_time_ms, end_time_ms=self.end_time_ms, versions=self.versions)

    def _record_sizing(self, sizing: Any) -> None:
        """Per table and for the run: what the dashboard shows before the copy starts."""
        from hbase_migration.migration.sizing_probe import record
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            record(ledger, self.ledger_run_id, sizing)


class CreateTargetTablesOperator(BaseOperator):
    """Creates each migrated table that is absent on the target exactly like the source's: its namespace (when
    the target lacks it), every family attribute (versions, TTL, compression, encoding, block size, MOB, ...,
    METADATA and CONFIGURATION), every table attribute (MAX_FILESIZE, DURABILITY, SPLIT_POLICY, coprocessors,
    ...) and the source's split keys, then reads it back. Tables that exist are left alone. Safe to re-run.

    :param tables: the tables to create when absent.
    :param source_conn_id: the cluster whose table descriptions are copied.
    :param target_conn_id: the cluster the tables are created on (through its `shell_command`).
    :param codec_map: `SNAPPY=ZSTD,...`: codecs replaced on the target.
    :param target_coprocessors: classes installed on the target; a coprocessor not listed is refused by name.
    :param dry_run: log the `create` statements without running them.
    :param clone_tables: tables the snapshot export clones (`clone_snapshot` creates them; names, or the mapped
        task's {"table": ...} kwargs): only their namespace is created here, when the target lacks it.
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "tables", "dry_run", "codec_map",
                                      "target_coprocessors", "clone_tables")
    ui_color = "#e6f4ea"

    def __init__(self, *, tables: Sequence[str], source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", dry_run: bool = False, codec_map: str | None = None,
                 target_coprocessors: Sequence[str] = (), clone_tables: Sequence[str] = (), **kwargs) -> None:
        super().__init__(**kwargs)
        self.clone_tables = clone_tables
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.tables = tables
        self.dry_run = dry_run
        self.codec_map = codec_map
        self.target_coprocessors = target_coprocessors

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from hbase_migration.clusters.channels import one_shell_per_cluster

        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        cloned = [t["table"] if isinstance(t, dict) else t for t in table_names(self.clone_tables or [])]
        with one_shell_per_cluster():  # describe, list_namespace, create, describe again: one JVM per cluster
            done = self._create(source, target, cloned)
        for item in done:
            self.log.info("%s: %s%s", item["table"], item["outcome"],
                          f" ({item['statement']})" if item.get("statement") else "")
        return done

    def _create(self, source: Any, target: Any, cloned: list[str]) -> list[dict[str, Any]]:
        from hbase_migration.migration.runspec import parse_codec_map
        from hbase_migration.migration.tables import TableRefused, create_missing_tables, create_namespaces

        try:
            done = create_missing_tables(
                source, target, [t for t in table_names(self.tables) if t not in cloned],
                dry_run=self.dry_run is True, codec_map=parse_codec_map(self.codec_map or ""),
                target_coprocessors=table_names(self.target_coprocessors))
        except TableRefused as e:  # a refusal is not fixed by a retry
            raise AirflowFailException(str(e)) from e
        if cloned:
            statements = create_namespaces(source, target, cloned, dry_run=self.dry_run is True)
            done += [{"table": t, "outcome": "cloned from its snapshot later (snapshot_export)",
                      "statement": "; ".join(statements) or None} for t in cloned]
        return done
