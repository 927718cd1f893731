"""Replication peer operators: add (DISABLED, scoped to the migrated tables), enable, disable, remove.

Each builds the cluster from its Airflow connection in `execute()`, calls the library's peer admin once, logs
what it did (or, with `dry_run`, the exact commands it would run) and returns the result as a small dict. The
peer admin reads every change back from ZooKeeper, refuses a conflicting peer and leaves it untouched.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

from airflow.sdk import BaseOperator, Context

from hbase_migration.operators.hooks import HBaseClusterHook, table_names

_COMMON_PARAMS = """
    :param peer_id: the replication peer's id on the source cluster.
    :param source_conn_id: the source cluster's Airflow connection (the peer lives there).
    :param dry_run: run the checks and log the exact statements, change nothing.
    :param ledger_run_id: the run whose ledger records the peer's state changes (None: no ledger).
"""


class _PeerOperator(BaseOperator):
    template_fields: Sequence[str] = ("source_conn_id", "peer_id", "dry_run", "ledger_run_id")
    ui_color = "#e8f0fe"

    def __init__(self, *, peer_id: str, source_conn_id: str = "hbase_source", dry_run: bool = False,
                 ledger_run_id: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.peer_id = peer_id
        self.dry_run = dry_run
        self.ledger_run_id = ledger_run_id

    @property
    def is_dry_run(self) -> bool:
        return self.dry_run is True

    def _log_result(self, result) -> dict[str, Any]:
        data = result.to_dict()
        verb = "would run" if result.dry_run else "ran"
        for command in result.commands:
            self.log.info("%s: %s", verb, command)
        self.log.info("peer %s: %s. %s", result.peer_id, result.outcome, result.message)
        if result.peer is not None:
            self.log.info("peer %s now reads back from ZooKeeper as %s", result.peer_id, result.peer.state)
        if self.ledger_run_id and result.changed:
            from hbase_migration.operators.ledger import open_ledger

            with open_ledger() as ledger:
                state = result.peer.state if result.peer else "REMOVED"
                ledger.peer_note(self.ledger_run_id, result.peer_id, state, f"{result.operation}: {result.outcome}")
        return data


class AddPeerOperator(_PeerOperator):
    __doc__ = """Add the migration's replication peer, DISABLED, scoped by TABLE_CFS to `tables`.

    From the instant it exists, every edit to those tables is kept in the source's WALs (T0): the copy that
    follows may then read the tables at leisure, and enabling the peer ships the backlog. Re-running finds the
    peer (same id, same config, ours) and does nothing; a different peer under that id is refused.

    :param tables: the tables the peer replicates (TABLE_CFS, every family of each).
    :param target_conn_id: the cluster the peer ships to (its cluster key is the peer's).
    :param enabled: create the peer ENABLED instead (only when no copy has to precede the shipping).
    :param serial: SERIAL => true (HBase 2.1+; the ZooKeeper backend refuses it).
    :param bandwidth: the peer's BANDWIDTH, bytes/s per source region server (0: unlimited).
    :param ledger_batch: the run's batch this peer is (its own T0 is recorded too); None: the run's one peer.
    """ + _COMMON_PARAMS

    template_fields: Sequence[str] = (*_PeerOperator.template_fields, "target_conn_id", "tables", "enabled",
                                      "serial", "bandwidth", "ledger_batch")

    def __init__(self, *, tables: Sequence[str], target_conn_id: str = "hbase_target",
                 enabled: bool = False, serial: bool = False, bandwidth: int = 0, ledger_batch: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.ledger_batch = ledger_batch
        self.target_conn_id = target_conn_id
        self.tables = tables
        self.enabled = enabled
        self.serial = serial
        self.bandwidth = bandwidth

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.preflight import ensure_distinct, migration_peer_config
        from hbase_migration.replication import peer_admin

        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        ensure_distinct(source, target)
        config = migration_peer_config(target, table_names(self.tables), serial=self.serial is True,
                                       bandwidth=int(self.bandwidth or 0), source=source)
        t0_ms = int(time.time() * 1000)  # taken before the peer exists: every edit from here on is kept
        with peer_admin(source) as admin:
            result = admin.add_peer(self.peer_id, config, enabled=bool(self.enabled), dry_run=self.is_dry_run)
        data = self._log_result(result)
        if self.ledger_run_id and not result.dry_run:
            from hbase_migration.operators.ledger import open_ledger

            with open_ledger() as ledger:
                data["t0_ms"] = ledger.record_t0(self.ledger_run_id, t0_ms) if result.changed else None
                if result.changed and self.ledger_batch:
                    ledger.batch_t0(self.ledger_run_id, self.ledger_batch, t0_ms)
        return data


class EnablePeerOperator(_PeerOperator):
    __doc__ = """Enable the peer: the WAL backlog kept since T0 starts shipping to the target.

    Only once each table of the peer (its TABLE_CFS) exists on the target, read in one `list` there: an enabled
    peer with a table the target lacks stalls every table on its queues (TableNotFoundException, retried without
    end) and keeps pinning WALs. Refused, the task fails at once naming the tables and leaves the peer DISABLED.

    :param target_conn_id: the cluster the peer ships to, whose tables are listed first.
    """ + _COMMON_PARAMS

    template_fields: Sequence[str] = (*_PeerOperator.template_fields, "target_conn_id")

    def __init__(self, *, target_conn_id: str = "hbase_target", **kwargs) -> None:
        super().__init__(**kwargs)
        self.target_conn_id = target_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        from hbase_migration.migration.enable_gate import enable_if_tables_exist

        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        gate, result = enable_if_tables_exist(source, target, self.peer_id, dry_run=self.is_dry_run)
        if result is None:
            if gate.error:  # the listing failed: a retry may read it
                raise RuntimeError(f"{gate.refusal()}; the peer is left DISABLED")
            raise AirflowFailException(f"{gate.refusal()}; the peer is left DISABLED: create (or clone) them on "
                                       f"the target, then clear this task")
        self.log.info("peer %s's tables %s all exist on %s", self.peer_id, ", ".join(gate.tables), gate.target)
        return self._log_result(result)


class DisablePeerOperator(_PeerOperator):
    __doc__ = """Disable the peer: shipping stops and WALs are kept again (oldWALs grows until it is re-enabled).""" \
        + _COMMON_PARAMS

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.replication import peer_admin

        with peer_admin(HBaseClusterHook(self.source_conn_id).get_cluster()) as admin:
            return self._log_result(admin.disable_peer(self.peer_id, dry_run=self.is_dry_run))


class RemovePeerOperator(_PeerOperator):
    __doc__ = """Remove the peer (the cut-over step, run by a person): its queues go and the cleaner frees oldWALs.

    A peer the toolkit did not create is removed only with `force=True`.

    :param force: remove a peer that does not carry the toolkit's ownership mark.
    """ + _COMMON_PARAMS

    template_fields: Sequence[str] = (*_PeerOperator.template_fields, "force")

    def __init__(self, *, force: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.force = force

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.replication import peer_admin

        with peer_admin(HBaseClusterHook(self.source_conn_id).get_cluster()) as admin:
            return self._log_result(admin.remove_peer(self.peer_id, force=bool(self.force),
                                                      dry_run=self.is_dry_run))
