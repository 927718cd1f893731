"""The operator's CLI: every migration step runnable outside Airflow.

    python -m hbase_migration preflight --source CONN --target CONN --tables T1,T2 --peer-id ID [table options]
                                       [--copy-tasks N] [--rows-per-s N] [--quota-policy P] [--no-sizing]
                                       [--initial-copy scan|snapshot|auto] [--snapshot-threshold-bytes N]
    python -m hbase_migration peer list --source CONN
    python -m hbase_migration peer add --source CONN --target CONN --tables T1,T2 --peer-id ID [--state disabled]
                                       [--serial] [--bandwidth BYTES_PER_S]
    python -m hbase_migration peer enable|disable|remove --source CONN --peer-id ID [--force] [--target CONN]
    python -m hbase_migration lag --source CONN --peer-id ID [--watch]
    python -m hbase_migration quota --source CONN [--quota-mark F]
    python -m hbase_migration create-tables --source CONN --target CONN --tables T1,T2 [--codec-map SNAPPY=ZSTD]
                                           [--target-coprocessors CLASS,...]
    python -m hbase_migration freeze --source CONN --tables T1,T2 [--unfreeze] [--status]   (READONLY)
    python -m hbase_migration metadata --source CONN --target CONN --tables T1,T2 [--principal-map S=T,...]
                                       [--apply]   (grants, quotas, RS groups on both sides; exit 1 while any differs)
    python -m hbase_migration sync-replication check --source CONN --target CONN [--shells]
    python -m hbase_migration sync-replication plan --peer-id ID [--kind planned|failover]
    python -m hbase_migration sync-replication run --source CONN --target CONN --peer-id ID
                                               --kind setup|planned|failover [--tables T1,T2] [--switch-command C]
    python -m hbase_migration copy --source CONN --target CONN --table T [...]
    python -m hbase_migration verify --source CONN --target CONN --table T [...]
    python -m hbase_migration snapshot-export --source CONN --target CONN --table T [--copy-id ID] [--master M]
                                             [--task-bytes-per-s N] [--bytes-per-s N] [...]   (snapshot, clone)
    python -m hbase_migration switches --source CONN [--release HOLDER]   (split/merge, normalizer held off)
    python -m hbase_migration cluster --source CONN          (the connection as the toolkit reads it)

Clusters are Airflow connection ids, resolved as Airflow does (AIRFLOW_CONN_<ID> in JSON or URI form, else
`airflow connections get`). `--json` prints one machine-readable JSON document. `--dry-run` on changing commands
prints what would run. `peer add` first runs the migration DAG's preflight checks for what a peer touches (both
clusters answer, the target's cluster key reaches an HBase, the tables exist on the source with
REPLICATION_SCOPE 1) and changes nothing when one fails; `--force` skips them and says so.

Exit status, one rule for every command:
  0  all is well.
  1  an operational failure: a cluster that does not answer during an action, a check that failed (preflight, a
     peer in the way, the lag not drained, an oldWALs breach), differences found (verify), a failed partition.
  2  a usage error, refused before anything changed: bad arguments, a connection that is missing or does not
     describe a cluster, an invalid name (table, peer id, connection id), number or time window, the same
     cluster and table as source and target, a check that `--force` can skip (peer add's checks; a peer this
     toolkit did not create). One line on stderr, `error: <what> — <how to fix>`, and no traceback.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from typing import Any, Callable, NoReturn, Sequence

from hbase_migration.clusters.cluster import ClusterConfigError
from hbase_migration.clusters.connections import ConnectionNotFound, resolve_cluster
from hbase_migration.migration.runspec import BY_NAME, InvalidRunInput
from hbase_migration.replication.model import InvalidPeerConfig, validate_peer_id

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROG = "hbase-migration" if os.path.basename(sys.argv[0]) == "hbase-migration" else "python -m hbase_migration"
FORCE_FIX = "pass --force only if you are sure this peer may be touched"


class UsageError(Exception):
    """Bad input, refused before anything changed: exit 2 and one line, `error: <what> — <how to fix>`."""

    def __init__(self, what: str, fix: str):
        super().__init__(f"{what} — {fix}")


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one `error: ... — ...` line (main's), not a usage text and an exit."""

    def error(self, message: str) -> NoReturn:
        what, _, fix = message.partition(" — ")  # an argument type's error names its fix already
        raise UsageError(what, fix or f"see `{self.prog} --help`")


def usage_line(error: BaseException, command: str | None) -> str:
    """The one line a usage error prints: its message on one line, with a way to fix it when it has none."""
    from hbase_migration.clusters.zk import ZnodeMissing

    text = " ".join(str(error).split())
    if " — " not in text:
        if isinstance(error, ZnodeMissing):
            text += " — check the connection's znode_parent (the cluster's zookeeper.znode.parent)"
        else:
            text += f" — see `{PROG}{' ' + command if command else ''} --help`"
    return f"error: {text}"


# --------------------------------------------------------------------------------------------------
# Argument types: each input is checked where it is read, by the definition the DAG forms use (runspec), and
# a bad value is refused naming the argument and how to fix it.


def _checked(name: str, parse: Callable[[str], Any], fix: str) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InvalidRunInput as e:
            raise argparse.ArgumentTypeError(f"{e.reason} — {fix}") from None
        except ValueError as e:  # InvalidPeerConfig, a number that does not parse
            raise argparse.ArgumentTypeError(f"{e} — {fix}") from None

    convert.__name__ = name  # argparse names it in its own messages
    return convert


def _param(name: str, fix: str) -> Callable[[str], Any]:
    return _checked(name, BY_NAME[name].value, fix)


def _number(low: float, *, strict: bool, what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not (value > low if strict else value >= low):
            raise ValueError(f"must be {what}, got {text!r}")
        return value

    return parse


CONN_ID = _param("source_conn_id", "give the Airflow connection id of a cluster")
TABLES = _param("tables", "name tables as [namespace:]qualifier, comma-separated (e.g. t1,ns:t2)")
PEER_ID = _checked("peer_id", validate_peer_id, "e.g. --peer-id mig1")
SECONDS = _checked("seconds", _number(0, strict=True, what="a number of seconds > 0"), "e.g. 5")
GAP_S = _checked("seconds", _number(0, strict=False, what="a number of seconds >= 0"), "e.g. 2 (0: one reading)")
FACTOR = _checked("factor", _number(1, strict=False, what="a factor >= 1"), "e.g. --safety-factor 2")


def _workers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"must be a number of partitions at once >= 1, got {text!r}")
    return int(text)


WORKERS = _checked("workers", _workers, "e.g. --workers 4")


def _tables(value: Any) -> list[str]:
    return list(value)  # already checked and canonical (TABLES)


def _run_option(name: str, value):
    """A run parameter given on the command line, checked by the run spec (its error names the parameter)."""
    return BY_NAME[name].value(value)


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if args.json else text)


def _distinct(source: Any, target: Any) -> None:
    """Refuse the same cluster as source and target (by normalized cluster key), as the DAG's form does."""
    from hbase_migration.migration.preflight import ensure_distinct

    try:
        ensure_distinct(source, target)
    except ClusterConfigError as e:
        raise UsageError(str(e), "give --target the connection of the other cluster") from None


# --------------------------------------------------------------------------------------------------
# Commands: each a plain function (args) -> exit status


def cmd_preflight(args: argparse.Namespace) -> int:
    from hbase_migration.migration.preflight import run_preflight
    from hbase_migration.migration.runspec import parse_codec_map
    from hbase_migration.migration.sizing_probe import request_from_args

    try:
        sizing = request_from_args(args)
    except ValueError as e:
        raise UsageError(str(e), "see `python -m hbase_migration preflight --help` for the sizing options") from None

    source, target = resolve_cluster(args.source), resolve_cluster(args.target)
    _distinct(source, target)
    report = run_preflight(source, target, _tables(args.tables),
                           args.peer_id, create_missing=not args.no_create, expected_copy_s=args.expected_copy_s,
                           safety_factor=args.safety_factor, quota_mark=args.quota_mark,
                           sample_gap_s=args.sample_gap_s,
                           codec_map=parse_codec_map(_run_option("codec_map", args.codec_map) or ""),
                           target_coprocessors=_run_option("target_coprocessors", args.target_coprocessors),
                           allow_target_data=args.allow_target_data, serial=args.serial,
                           bandwidth=_run_option("bandwidth", args.bandwidth), sizing=sizing,
                           initial_copy=args.initial_copy, snapshot_threshold_bytes=args.snapshot_threshold_bytes,
                           bulk_loads=args.bulk_loads)
    _emit(args, report.to_dict(), report.text() + f"\npreflight {'passed' if report.ok else 'FAILED'}")
    return EXIT_OK if report.ok else EXIT_FAILED


def _peer_add_checks(args: argparse.Namespace, source: Any, target: Any) -> dict[str, Any]:
    """Preflight's checks for what the new peer touches (hbase_migration.migration.peer_checks), or their skipping with
    --force, said on stderr. Refused (exit 2, nothing changed) when one fails; returns what --json shows."""
    from hbase_migration.migration.peer_checks import PEER_ADD_CHECKS, peer_add_report

    if args.force:
        print(f"warning: --force: peer add skipped its checks ({', '.join(PEER_ADD_CHECKS)})", file=sys.stderr)
        return {"skipped": True, "reason": "--force", "checks": list(PEER_ADD_CHECKS)}
    report = peer_add_report(source, target, _tables(args.tables), args.peer_id)
    if not report.ok:
        _emit(args, {"peer_id": args.peer_id, "outcome": "refused", "checks": report.to_dict()}, report.text())
        failed = "; ".join(f"{r.name}: {r.reason}" for r in report.failures)
        raise UsageError(f"peer add {args.peer_id} refused, nothing changed: {failed}",
                         "fix what failed, or pass --force to add the peer anyway (a DISABLED peer pins every WAL "
                         "in oldWALs until it ships or is removed)")
    if not args.json:
        print(report.text())
    return {"skipped": False, **report.to_dict()}


def cmd_peer(args: argparse.Namespace) -> int:
    from hbase_migration.clusters import zk
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.errors import PeerNotOurs

    if args.action != "list" and not args.peer_id:
        raise UsageError(f"peer {args.action} needs --peer-id", "e.g. --peer-id mig1")
    if args.action == "add" and (not args.target or not args.tables):
        raise UsageError("peer add needs --target and --tables", "e.g. --target hbase_target --tables t1,t2")
    source = resolve_cluster(args.source)
    checks = None
    if args.action == "add":
        from hbase_migration.migration.preflight import migration_peer_config

        target = resolve_cluster(args.target)
        _distinct(source, target)
        config = migration_peer_config(target, _tables(args.tables), serial=args.serial,
                                       bandwidth=_run_option("bandwidth", args.bandwidth), source=source)
        checks = _peer_add_checks(args, source, target)
    if args.action == "enable" and args.target and not args.force:
        from hbase_migration.migration.enable_gate import check, peer_tables

        target = resolve_cluster(args.target)
        with peer_admin(source) as admin:
            gate = check(target, args.peer_id, peer_tables(admin, args.peer_id))
        if not gate.ok:  # the state is unchanged: DISABLED as found
            print(f"error: {gate.refusal()}; nothing was changed (create or clone the tables on {target.name} "
                  "first, or --force)", file=sys.stderr)
            return EXIT_FAILED
    with peer_admin(source) as admin:
        # A wrong znode parent holds no peers: `list` would show none and `remove` find nothing to remove.
        zk.read_cluster_id(admin.zk, source.znode_parent)
        try:
            if args.action == "list":
                peers = admin.list_peers()
                lines = [f"{p.id}\t{p.state}\t{p.config.cluster_key}\towner={p.owner or '-'}\t"
                         f"table_cfs={json.dumps(p.config.table_cfs)}" for p in peers]
                _emit(args, [p.describe() for p in peers], "\n".join(lines) or "no peers")
                return EXIT_OK
            if args.action == "add":
                result = admin.add_peer(args.peer_id, config, enabled=args.state == "enabled",
                                        dry_run=args.dry_run)
            elif args.action == "enable":
                result = admin.enable_peer(args.peer_id, dry_run=args.dry_run, force=args.force)
            elif args.action == "disable":
                result = admin.disable_peer(args.peer_id, dry_run=args.dry_run, force=args.force)
            else:
                result = admin.remove_peer(args.peer_id, force=args.force, dry_run=args.dry_run)
        except PeerNotOurs as e:
            raise UsageError(e.what, FORCE_FIX) from None
    lines = [("would run: " if result.dry_run else "ran: ") + c for c in result.commands]
    lines.append(f"peer {result.peer_id}: {result.outcome}" + (f" ({result.message})" if result.message else ""))
    if result.peer is not None:
        lines.append(f"ZooKeeper now shows peer {result.peer_id} {result.peer.state}")
    data = result.to_dict()
    if checks is not None:
        data["checks"] = checks
    if args.action == "enable" and not args.target and not args.force and result.changed:
        print(f"note: --target not given: whether the tables of peer {args.peer_id} exist on its target was not "
              "checked (an enabled peer whose table the target lacks stalls its queues)", file=sys.stderr)
    _emit(args, data, "\n".join(lines))
    return EXIT_OK


def _caught_up_fits(source: Any, peer_id: str, value: int) -> None:
    """Refuse a caught-up queue size above what the source's WAL layout allows (its region servers' /conf, the
    sync peers); an unreadable layout is not refused (nothing to compare with)."""
    from hbase_migration.replication import lag

    try:
        lag.check_caught_up_queue_size(source, peer_id, value)
    except lag.CaughtUpQueueTooLarge as e:
        raise UsageError(f"--caught-up-queue-size: {e}; nothing polled or changed",
                         f"pass --caught-up-queue-size {e.bound.largest} (one WAL per WAL group of a region "
                         "server)") from None


def cmd_lag(args: argparse.Namespace) -> int:
    from hbase_migration.replication import lag

    source = resolve_cluster(args.source)
    thresholds = lag.thresholds_from({"stable_samples": args.stable_samples, "max_lag_ms": args.max_lag_ms,
                                      "caught_up_queue_size": args.caught_up_queue_size})
    _caught_up_fits(source, args.peer_id, args.caught_up_queue_size)
    history: list[dict] = []
    deadline = time.monotonic() + args.watch_timeout_s
    while True:
        result = lag.poll(source, args.peer_id, history, thresholds, time.time())
        history = result.history
        if not args.json:
            print(result.log_line(), flush=True)
        done = result.decision.drained or not args.watch or time.monotonic() >= deadline
        if done:
            break
        time.sleep(args.interval_s)
    if args.json:
        print(json.dumps({"snapshot": result.snapshot.to_dict(), "summary": result.snapshot.summary(),
                          "decision": result.decision.to_dict()}, indent=2, sort_keys=True, default=str))
    else:
        for server in result.snapshot.servers:
            for q in server.queues:
                print(f"  {server.servername} queue {q.queue_id}: sizeOfLogQueue={q.size_of_log_queue} "
                      f"ageOfLastShippedOp={q.age_ms} shippedOps={q.shipped_ops}")
            if server.error:
                print(f"  {server.servername}: UNREADABLE {server.error}")
        for q in result.snapshot.zk_queues:
            print(f"  ZooKeeper {q.server}/{q.queue_id}: {len(q.wals)} WAL(s)")
    return EXIT_OK if result.decision.drained else EXIT_FAILED


def cmd_quota(args: argparse.Namespace) -> int:
    from hbase_migration.migration import quota

    sample = quota.measure(resolve_cluster(args.source), args.quota_mark, args.sample_gap_s)
    _emit(args, sample.to_dict(), sample.log_line())
    return EXIT_FAILED if sample.decision.level == "breach" else EXIT_OK


def _on_source(cluster: Any, tables: Sequence[str]) -> None:
    """Refuse tables the source does not have (as copy and verify do) before any shell statement runs."""
    from hbase_migration.migration.tables import existing_tables

    absent = [t for t in tables if t not in existing_tables(cluster, tables)]
    if absent:
        raise UsageError(f"table(s) {', '.join(absent)} do not exist on the source {cluster.name!r}",
                         "check the names in --tables ('ns:name' for a namespace) and the source connection")


def cmd_create_tables(args: argparse.Namespace) -> int:
    from hbase_migration.migration.runspec import parse_codec_map
    from hbase_migration.migration.tables import create_missing_tables

    source, target = resolve_cluster(args.source), resolve_cluster(args.target)
    _distinct(source, target)
    _on_source(source, _tables(args.tables))
    done = create_missing_tables(source, target, _tables(args.tables), dry_run=args.dry_run,
                                 codec_map=parse_codec_map(_run_option("codec_map", args.codec_map) or ""),
                                 target_coprocessors=_run_option("target_coprocessors", args.target_coprocessors))
    _emit(args, done, "\n".join(f"{d['table']}: {d['outcome']}" + (f"  {d['statement']}" if d["statement"] else "")
                                for d in done))
    return EXIT_OK


def cmd_metadata(args: argparse.Namespace) -> int:
    """The grants, quotas and RS groups of the tables on both sides, each difference listed; `--apply` gives the
    target the source's (one shell session). Exit 0: no difference (left); 1: some; 2: bad input."""
    from hbase_migration.migration import metadata
    from hbase_migration.migration.tables import existing_tables

    try:
        mapping = metadata.parse_principal_map(args.principal_map)
    except ValueError as e:
        raise UsageError(f"argument --principal-map: {e}", "e.g. --principal-map app/host@DC1.EXAMPLE=app") from None
    source, target = resolve_cluster(args.source), resolve_cluster(args.target)
    _distinct(source, target)
    tables = _tables(args.tables)
    _on_source(source, tables)
    on_target = existing_tables(target, tables)
    absent = [t for t in tables if t not in on_target]
    found = metadata.compare(source, target, tables, mapping, absent)
    data: dict[str, Any] = found.to_dict()
    lines = [*found.notes, *(d.line() for d in found.differences)]
    left = found.differences
    if args.apply and found.changes:
        changed, failed = metadata.apply(target, found)
        after = metadata.compare(source, target, tables, mapping, absent, source_metadata=found.source_metadata)
        data.update(applied=changed, apply_failed=failed, differences_after=[d.to_dict() for d in after.differences])
        lines += [f"applied {changed} change(s) (grants, quotas, RS group moves) on {target.name} in one session"
                  + (f"; {len(failed)} failed: {'; '.join(failed)}" if failed else "")]
        lines += [f"left: {d.line()}" for d in after.differences]
        left = after.differences
    elif args.apply and found.differences:
        data.update(applied=0, apply_failed=[], differences_after=[d.to_dict() for d in found.differences])
        lines.append("nothing --apply can make: each difference above says its fix")
    lines.append(f"{len(left)} difference(s)" + (f"; absent on the target: {', '.join(absent)} (create them first)"
                                                 if absent else ""))
    _emit(args, data, "\n".join(lines))
    return EXIT_FAILED if left else EXIT_OK


def cmd_freeze(args: argparse.Namespace) -> int:
    from hbase_migration.migration.freeze import readonly_states, set_readonly

    cluster = resolve_cluster(args.source)
    tables = _tables(args.tables)
    _on_source(cluster, tables)
    if args.status:
        states = readonly_states(cluster, tables)
        _emit(args, states, "\n".join(f"{t}: {'READONLY' if ro else 'writable'}" for t, ro in states.items()))
        return EXIT_OK
    done = set_readonly(cluster, tables, not args.unfreeze, dry_run=args.dry_run)
    _emit(args, done, "\n".join(f"{d['table']}: {d['outcome']}" + (f"  {d['statement']}" if d["statement"] else "")
                                for d in done))
    return EXIT_OK


def cmd_switches(args: argparse.Namespace) -> int:
    from hbase_migration.data import jobargs, switches
    from hbase_migration.ledger.location import ENV_VAR, cli_ledger_url
    from hbase_migration.ledger.store import Ledger

    jobargs.refuse_password("--ledger-url", args.ledger_url, f"give it in {ENV_VAR} (the default)")
    cluster = resolve_cluster(args.source)
    with Ledger.open(args.ledger_url or cli_ledger_url()) as ledger:
        released = switches.release(cluster, ledger, args.release) if args.release else None
        data = switches.status(cluster, ledger)
    _emit(args, {**data, "released": released}, switches.status_text(data))
    return EXIT_OK


def cmd_sync_replication(args: argparse.Namespace) -> int:
    """Synchronous replication (HBase 3.0+): whether both clusters have it, or the shell statements of a planned
    switch or a failover (checked against HBase's allowed transitions)."""
    from hbase_migration.replication import sync_replication

    if args.action == "run":
        return _sync_replication_run(args)
    if args.action == "plan":
        if not args.peer_id:
            raise UsageError("plan needs --peer-id", "give the synchronous peer's id (the same on both clusters)")
        if args.kind == "setup":
            raise UsageError("plan prints the transitions of planned or failover", "give --kind planned|failover")
        steps = sync_replication.plan(args.kind, args.peer_id)
        _emit(args, steps, "\n".join(f"{s['side']:6}  {s['statement']}    # {s['why']}" for s in steps))
        return EXIT_OK
    if not args.source or not args.target:
        raise UsageError("check needs --source and --target", "give both clusters' Airflow connection ids")
    source, target = resolve_cluster(args.source), resolve_cluster(args.target)
    _distinct(source, target)
    support = sync_replication.check_support(source, target, ask_shells=args.shells)
    data = {"supported": support.supported, "reasons": list(support.reasons), "versions": support.versions}
    _emit(args, data, "supported" if support.supported else "not supported:\n" + "\n".join(
        f"  {r}" for r in support.reasons))
    return EXIT_OK if support.supported else EXIT_FAILED


def _sync_replication_run(args: argparse.Namespace) -> int:
    """The executor (migration/sync_switch.py): refused before any change (exit 2), done or waiting for the old
    source (exit 0), stopped at a step with both clusters' states and the next command (exit 1)."""
    from hbase_migration.migration import sync_switch

    for flag, value in (("--source", args.source), ("--target", args.target), ("--peer-id", args.peer_id)):
        if not value:
            raise UsageError(f"run needs {flag}", "give --source, --target (connection ids) and --peer-id")
    tables = _tables(args.tables) if args.tables else []
    source, target = resolve_cluster(args.source), resolve_cluster(args.target)
    _distinct(source, target)
    dirs = {k: v for k, v in (("source", args.source_remote_wal_dir), ("target", args.target_remote_wal_dir)) if v}
    shown = [PROG, "sync-replication", "run", "--source", args.source, "--target", args.target, "--peer-id",
             args.peer_id, "--kind", args.kind]
    if tables:
        shown += ["--tables", ",".join(tables)]
    if args.switch_command:
        shown += ["--switch-command", "<as before>"]  # the command itself is the operator's: never echoed
    if args.force:
        shown.append("--force")
    try:
        report = sync_switch.run(source, target, args.peer_id, args.kind, tables=tables, remote_dirs=dirs,
                                 switch_command=args.switch_command, force=args.force,
                                 read_timeout_s=args.read_timeout, command=" ".join(shown))
    except sync_switch.SyncSwitchRefused as e:
        raise UsageError(f"sync-replication {args.kind} refused, nothing changed: {e}",
                         "see docs/cutover.md#the-executor") from None
    except sync_switch.StepFailed as e:
        _emit(args, e.report.to_dict(), e.report.text())
        return EXIT_FAILED
    _emit(args, report.to_dict(), report.text())
    return EXIT_OK


def cmd_cluster(args: argparse.Namespace) -> int:
    cluster = resolve_cluster(args.source)
    data = cluster.to_dict()
    channels = cluster.describe()["security"]  # how each channel authenticates (never a secret)
    shown = [f"  {k}: {v}" for k, v in channels.items()] if isinstance(channels, dict) else [f"  {channels}"]
    _emit(args, data, "\n".join([*(f"{k}: {v}" for k, v in data.items()), "authentication:", *shown]))
    return EXIT_OK


def run_in_process(kind: str, argv: Sequence[str]) -> int:
    """The copy or verification in this process, partitions on threads (no Spark), with the same arguments
    as the Spark jobs plus `--workers N` (partitions at once, default 4). Its stdout is one JSON summary line
    (logs go to stderr), so `--json` is accepted for symmetry with the other commands and changes nothing."""
    from hbase_migration.data import jobargs
    from hbase_migration.data.executors import LocalExecutor
    from hbase_migration.data.runner import prepare_job, run_job
    from hbase_migration.data.scope import CopyConfigError

    own = ArgumentParser(prog=f"{PROG} {kind}", add_help=False, allow_abbrev=False)
    own.add_argument("--workers", type=WORKERS, default=4)
    own.add_argument("--json", action="store_true")
    ours, rest = own.parse_known_args(list(argv))
    from hbase_migration.data.datapath.native import NativeUnavailable

    try:
        job = prepare_job(kind, rest, prog=f"{PROG} {kind}", resolve_auto=True)
    except (jobargs.UsageError, CopyConfigError, NativeUnavailable) as e:
        raise UsageError(*_split(e, kind)) from None
    from hbase_migration.migration.region_metrics import table_region_bytes

    if job.source.uses_native:  # HBase's client runs in Spark's JVMs: a local Spark of `--workers` slots
        from hbase_migration.data.executors import SparkExecutor

        return run_job(job, lambda name, ns: SparkExecutor(name, ns.master or f"local[{ours.workers}]",
                                                           jobargs.spark_conf(ns.conf), ns.log_level),
                       hold_switches=kind == "copy", region_sizes=table_region_bytes)
    return run_job(job, lambda _name, _ns: LocalExecutor(ours.workers), hold_switches=kind == "copy",
                   region_sizes=table_region_bytes)


def run_snapshot_export(argv: Sequence[str]) -> int:
    """The snapshot export of one table, every step (docs/snapshot-export.md): on Spark with `--master`, else on
    `--workers` threads of this process. Its stdout is one JSON summary line; exit 0 done, 1 stopped (the error
    says what is left where; a re-run resumes), 2 bad input (nothing changed)."""
    from hbase_migration.data import jobargs
    from hbase_migration.data.executors import LocalExecutor, SparkExecutor
    from hbase_migration.data.snapshot_export import export_main
    from hbase_migration.migration.tables import create_namespaces

    def executor(name: str, ns: argparse.Namespace) -> Any:
        if ns.master:
            return SparkExecutor(name, ns.master, jobargs.spark_conf(ns.conf), ns.log_level)
        return LocalExecutor(max(1, ns.workers))

    def before_take(source: Any, target: Any, table: str, state: Any, same_master_key: bool = False) -> None:
        """The snapshot path's checks (migration/snapshot_checks.py), before the snapshot is taken."""
        from hbase_migration.data.snapshot_export import ExportRefused
        from hbase_migration.migration.checks import ERROR
        from hbase_migration.migration.snapshot_checks import check_table

        resumed = state is not None and state["state"] in ("published", "cloned", "cleaned")
        results = check_table(source, target, table, resumed=resumed, same_master_key=same_master_key)
        for r in results:
            print(f"[{'ok  ' if r.ok else 'FAIL' if r.severity == ERROR else 'warn'}] {r.name}: {r.reason}",
                  file=sys.stderr)
        failures = [r for r in results if not r.ok and r.severity == ERROR]
        if failures and all(r.transient for r in failures):
            raise ConnectionError("; ".join(f"{r.name}: {r.reason}" for r in failures))
        if failures:
            raise ExportRefused("refused before the snapshot is taken, nothing changed: " + "; ".join(
                f"{r.name}: {r.reason}" + (f" (fix: {r.fix})" if r.fix else "") for r in failures))

    def before_clone(source: Any, target: Any, table: str) -> None:
        create_namespaces(source, target, [table])  # clone_snapshot needs the table's namespace

    return export_main(argv, executor, prog=f"{PROG} snapshot-export", job=False, before_take=before_take,
                       before_clone=before_clone)


def _split(error: BaseException, command: str) -> tuple[str, str]:
    """(what, fix) of a message that may already carry its fix after ' — '."""
    what, _, fix = str(error).partition(" — ")
    return what, fix or f"see `{PROG} {command} --help`"


# --------------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-level", default="WARNING", type=str.upper,
                   choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser, target: bool = False) -> None:
        sp.add_argument("--source", required=True, type=CONN_ID, help="source cluster's Airflow connection id")
        if target:
            sp.add_argument("--target", required=True, type=CONN_ID, help="target cluster's Airflow connection id")
        sp.add_argument("--json", action="store_true", help="print one JSON document")

    def table_options(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--codec-map", default="", help=BY_NAME["codec_map"].description)
        sp.add_argument("--target-coprocessors", default="", help=BY_NAME["target_coprocessors"].description)

    def peer_options(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--serial", action="store_true", help=BY_NAME["serial"].description)
        sp.add_argument("--bandwidth", default="0", help=BY_NAME["bandwidth"].description)

    sp = sub.add_parser("preflight", help="every check before a migration; changes nothing")
    common(sp, target=True)
    sp.add_argument("--tables", required=True, type=TABLES, help="comma-separated tables")
    sp.add_argument("--peer-id", required=True, type=PEER_ID)
    sp.add_argument("--no-create", action="store_true", help="fail when a target table is absent")
    sp.add_argument("--expected-copy-s", type=_param("expected_copy_s", "e.g. --expected-copy-s 3600"),
                    default=BY_NAME["expected_copy_s"].default, help="expected copy duration (headroom)")
    sp.add_argument("--safety-factor", type=FACTOR, default=2.0)
    sp.add_argument("--quota-mark", type=_param("quota_mark", "e.g. --quota-mark 0.8"),
                    default=BY_NAME["quota_mark"].default, help="fraction of an oldWALs quota that counts as pressure")
    sp.add_argument("--sample-gap-s", type=GAP_S, default=2.0, help="gap between two oldWALs readings")
    table_options(sp)
    sp.add_argument("--allow-target-data", action="store_true",
                    help="accept existing target tables that already hold rows")
    sp.add_argument("--initial-copy", type=_param("initial_copy", "e.g. --initial-copy auto"),
                    default=BY_NAME["initial_copy"].default, help=BY_NAME["initial_copy"].description)
    sp.add_argument("--snapshot-threshold-bytes", type=_param("snapshot_threshold_bytes", "e.g. 1073741824"),
                    default=BY_NAME["snapshot_threshold_bytes"].default,
                    help=BY_NAME["snapshot_threshold_bytes"].description)
    sp.add_argument("--bulk-loads", type=_param("bulk_loads", "e.g. --bulk-loads none"),
                    default=BY_NAME["bulk_loads"].default, help=BY_NAME["bulk_loads"].description)
    peer_options(sp)
    from hbase_migration.migration.sizing_probe import add_cli_arguments

    add_cli_arguments(sp)
    sp.set_defaults(func=cmd_preflight)

    sp = sub.add_parser("peer", help="replication peer admin on the source")
    sp.add_argument("action", choices=("list", "add", "enable", "disable", "remove"))
    sp.add_argument("--source", required=True, type=CONN_ID)
    sp.add_argument("--target", type=CONN_ID, help="target connection id (add; enable: its tables are listed "
                                                      "first and a peer whose table it lacks is not enabled)")
    sp.add_argument("--tables", type=TABLES, help="comma-separated tables (add)")
    sp.add_argument("--peer-id", type=PEER_ID)
    sp.add_argument("--state", choices=("disabled", "enabled"), default="disabled", help="state of a new peer")
    sp.add_argument("--force", action="store_true",
                    help="add: skip the checks (target reachable, tables and their REPLICATION_SCOPE on the "
                         "source); enable/disable/remove: touch a peer this toolkit did not create")
    peer_options(sp)
    sp.add_argument("--dry-run", action="store_true", help="print the commands, change nothing")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_peer)

    sp = sub.add_parser("lag", help="per-queue replication figures and the drain decision")
    common(sp)
    sp.add_argument("--peer-id", required=True, type=PEER_ID)
    sp.add_argument("--watch", action="store_true", help="poll until drained (or --watch-timeout-s)")
    sp.add_argument("--interval-s", type=SECONDS, default=5.0)
    sp.add_argument("--watch-timeout-s", type=SECONDS, default=3600.0)
    sp.add_argument("--stable-samples", type=_param("stable_samples", "e.g. --stable-samples 3"),
                    default=BY_NAME["stable_samples"].default)
    sp.add_argument("--max-lag-ms", type=_param("max_lag_ms", "e.g. --max-lag-ms 30000"),
                    default=BY_NAME["max_lag_ms"].default)
    sp.add_argument("--caught-up-queue-size",
                    type=_param("caught_up_queue_size", "one per WAL group of a region server: 1 for HBase 2.x, "
                                                        "0 for 1.x, N with multiwal, +1 per ACTIVE 3.x sync peer"),
                    default=BY_NAME["caught_up_queue_size"].default,
                    help="WALs in a caught-up queue, one per WAL group of a region server: 1 for HBase 2.x (default "
                         "provider), 0 for 1.x, N with multiwal's numgroups N, one more per ACTIVE sync peer on 3.x; "
                         "refused above what the source's /conf and peers allow")
    sp.set_defaults(func=cmd_lag)

    sp = sub.add_parser("quota", help="oldWALs usage, quota, growth and projected exhaustion")
    common(sp)
    sp.add_argument("--quota-mark", type=_param("quota_mark", "e.g. --quota-mark 0.8"),
                    default=BY_NAME["quota_mark"].default, help="fraction of a quota that counts as a breach")
    sp.add_argument("--sample-gap-s", type=GAP_S, default=5.0)
    sp.set_defaults(func=cmd_quota)

    sp = sub.add_parser("create-tables", help="create absent target tables exactly like the source's (namespace, "
                                              "every family and table attribute, splits)")
    common(sp, target=True)
    sp.add_argument("--tables", required=True, type=TABLES)
    table_options(sp)
    sp.add_argument("--dry-run", action="store_true")
    sp.set_defaults(func=cmd_create_tables)

    sp = sub.add_parser("metadata", help="the tables' grants (global, namespace, table, family), quotas (throttle, "
                                         "space) and RS groups on both sides, each difference listed; --apply "
                                         "gives the target the source's")
    common(sp, target=True)
    sp.add_argument("--tables", required=True, type=TABLES, help="comma-separated tables")
    sp.add_argument("--principal-map", default="",
                    help="SOURCE=TARGET principals, comma-separated (default: the same short name, realm dropped)")
    sp.add_argument("--apply", action="store_true",
                    help="grant, set_quota and move_tables_rsgroup on the target what the source holds (one shell "
                         "session); a target-only grant or quota is listed, never removed; an RS group the target "
                         "lacks is listed, never created")
    sp.set_defaults(func=cmd_metadata)

    sp = sub.add_parser("freeze", help="make tables READONLY (writes refused, reads go on) or writable again")
    common(sp)
    sp.add_argument("--tables", required=True, type=TABLES)
    sp.add_argument("--unfreeze", action="store_true", help="make the tables writable again")
    sp.add_argument("--status", action="store_true", help="only show each table's READONLY attribute")
    sp.add_argument("--dry-run", action="store_true", help="print the alter statements, change nothing")
    sp.set_defaults(func=cmd_freeze)

    for name in ("copy", "verify"):
        sp = sub.add_parser(name, add_help=False, help=f"the {name} in this process, no Spark "
                                                       f"(arguments as jobs/{name}_table.py, plus --workers N)")
        sp.set_defaults(passthrough=True)
    sp = sub.add_parser("snapshot-export", add_help=False,
                        help="the initial copy of one table by snapshot: taken, exported over WebHDFS (resumable file "
                             "by file), cloned on the target (arguments as jobs/snapshot_export.py, plus --workers N "
                             "and --keep-snapshots)")
    sp.set_defaults(passthrough=True)

    sp = sub.add_parser("switches", help="the source's split/merge and normalizer switches, the state the copies "
                                         "found and who holds them off; --release HOLDER drops a stale hold")
    common(sp)
    sp.add_argument("--release", metavar="HOLDER", help="release this hold (the last one restores the state found)")
    sp.add_argument("--ledger-url", help="the ledger the holds are counted in (default: as the CLI copy's); a URL "
                                         "holding a password is refused: give that one in HBASE_MIGRATION_LEDGER_URL")
    sp.set_defaults(func=cmd_switches)

    sp = sub.add_parser("cluster", help="a connection as the toolkit reads it (the cluster's wire form)")
    common(sp)
    sp.set_defaults(func=cmd_cluster)

    sp = sub.add_parser("sync-replication", help="synchronous replication (HBase 3.0+): whether both clusters have "
                                                 "it (check), the transitions of a switch or failover (plan)")
    sp.add_argument("action", choices=("check", "plan", "run"))
    sp.add_argument("--source", type=CONN_ID, help="check, run: the source cluster's Airflow connection id")
    sp.add_argument("--target", type=CONN_ID, help="check, run: the target cluster's Airflow connection id")
    sp.add_argument("--shells", action="store_true", help="check: also ask each cluster's shell (one call each)")
    sp.add_argument("--peer-id", type=PEER_ID, help="plan, run: the synchronous peer's id")
    sp.add_argument("--kind", choices=("setup", "planned", "failover"), default="planned",
                    help="plan, run: setup (run only: the sync peer on both, source ACTIVE, target STANDBY), "
                         "planned (switch over, both up), failover (the source dead)")
    sp.add_argument("--tables", type=TABLES, help="run --kind setup: the tables the sync peer replicates, T1,T2")
    sp.add_argument("--switch-command", help="run: moves the clients to the target once it takes writes "
                                             "(shell-split, no shell; exit 0 = done; must be safe to run again)")
    sp.add_argument("--source-remote-wal-dir", help="run --kind setup: the remote WAL dir on the source's HDFS "
                                                    "(default: its hbase.rootdir + /remoteWALs, from its /conf)")
    sp.add_argument("--target-remote-wal-dir", help="run --kind setup: the remote WAL dir on the target's HDFS "
                                                    "(default: its hbase.rootdir + /remoteWALs, from its /conf)")
    sp.add_argument("--read-timeout", type=float, default=180.0,
                    help="run: seconds a list_peers may take before a failover's source counts as down")
    sp.add_argument("--force", action="store_true", help="run --kind failover: go on although the source answers "
                                                         "and is ACTIVE or DOWNGRADE_ACTIVE (fence it yourself)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_sync_replication)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status follows the rule in the module docstring, and no error prints a
    traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and not argv[0].startswith("-") else None
    from hbase_migration.clusters.zk import ZnodeMissing
    from hbase_migration.data import jobargs
    from hbase_migration.replication.errors import PeerAdminError

    usage = (UsageError, jobargs.UsageError, ClusterConfigError, ConnectionNotFound, InvalidPeerConfig,
             InvalidRunInput, ZnodeMissing)  # ZnodeMissing: a znode HBase always has is absent (a wrong parent)
    try:
        if command in ("copy", "verify"):
            return run_in_process(command, argv[1:])
        if command == "snapshot-export":
            return run_snapshot_export(argv[1:])
        args = parser().parse_args(argv)
        level = getattr(logging, args.log_level)
        # force: the CLI owns its process's logging (in-process callers, such as tests, may have set it up before)
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
        # kazoo warns at every reconnect attempt to a quorum that does not answer; the error says it once.
        logging.getLogger("kazoo").setLevel(level if level <= logging.INFO else logging.ERROR)
        return args.func(args)
    except usage as e:
        print(usage_line(e, command), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else EXIT_OK
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except PeerAdminError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # an unreachable cluster, a failed shell: an operational failure, said plainly
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
