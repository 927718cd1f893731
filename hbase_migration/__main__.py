"""The operator's CLI: every migration step runnable outside Airflow.

    python -m hbase_migration preflight --source CONN --target CONN --tables T1,T2 --peer-id ID
    python -m hbase_migration peer list --source CONN
    python -m hbase_migration peer add --source CONN --target CONN --tables T1,T2 --peer-id ID [--state disabled]
    python -m hbase_migration peer enable|disable|remove --source CONN --peer-id ID [--force]
    python -m hbase_migration lag --source CONN --peer-id ID [--watch]
    python -m hbase_migration quota --source CONN [--quota-mark F]
    python -m hbase_migration create-tables --source CONN --target CONN --tables T1,T2
    python -m hbase_migration freeze --source CONN --tables T1,T2 [--unfreeze] [--status]   (READONLY)
    python -m hbase_migration copy --source CONN --target CONN --table T [...]
    python -m hbase_migration verify --source CONN --target CONN --table T [...]
    python -m hbase_migration cluster --source CONN          (the connection as the toolkit reads it)

Clusters are Airflow connection ids, resolved as Airflow does (AIRFLOW_CONN_<ID> in JSON or URI form, else
`airflow connections get`). `--json` prints one machine-readable JSON document. Exit status: 0 all is well,
1 a check failed / the lag has not drained / verify found differences, 2 a usage error (bad arguments, bad
connection, invalid peer id or cluster key). `--dry-run` on changing commands prints what would run.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any, Sequence

from hbase_migration.cluster import ClusterConfigError
from hbase_migration.connections import ConnectionNotFound, resolve_cluster
from hbase_migration.runspec import BY_NAME, InvalidRunInput

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _tables(text: str) -> list[str]:
    return list(BY_NAME["tables"].value(text))


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if args.json else text)


# --------------------------------------------------------------------------------------------------
# Commands: each a plain function (args) -> exit status


def cmd_preflight(args: argparse.Namespace) -> int:
    from hbase_migration.preflight import run_preflight

    report = run_preflight(resolve_cluster(args.source), resolve_cluster(args.target), _tables(args.tables),
                           args.peer_id, create_missing=not args.no_create, expected_copy_s=args.expected_copy_s,
                           safety_factor=args.safety_factor, quota_mark=args.quota_mark,
                           sample_gap_s=args.sample_gap_s)
    _emit(args, report.to_dict(), report.text() + f"\npreflight {'passed' if report.ok else 'FAILED'}")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_peer(args: argparse.Namespace) -> int:
    from hbase_migration.replication import peer_admin

    source = resolve_cluster(args.source)
    with peer_admin(source) as admin:
        if args.action == "list":
            peers = admin.list_peers()
            lines = [f"{p.id}\t{p.state}\t{p.config.cluster_key}\towner={p.owner or '-'}\t"
                     f"table_cfs={json.dumps(p.config.table_cfs)}" for p in peers]
            _emit(args, [p.describe() for p in peers], "\n".join(lines) or "no peers")
            return EXIT_OK
        if args.action == "add":
            from hbase_migration.preflight import ensure_distinct, migration_peer_config

            if not args.target or not args.tables:
                raise UsageError("peer add needs --target and --tables")
            target = resolve_cluster(args.target)
            ensure_distinct(source, target)
            config = migration_peer_config(target, _tables(args.tables), source=source)
            result = admin.add_peer(args.peer_id, config, enabled=args.state == "enabled", dry_run=args.dry_run)
        elif args.action == "enable":
            result = admin.enable_peer(args.peer_id, dry_run=args.dry_run)
        elif args.action == "disable":
            result = admin.disable_peer(args.peer_id, dry_run=args.dry_run)
        else:
            result = admin.remove_peer(args.peer_id, force=args.force, dry_run=args.dry_run)
    lines = [("would run: " if result.dry_run else "ran: ") + c for c in result.commands]
    lines.append(f"peer {result.peer_id}: {result.outcome}" + (f" ({result.message})" if result.message else ""))
    if result.peer is not None:
        lines.append(f"ZooKeeper now shows peer {result.peer_id} {result.peer.state}")
    _emit(args, result.to_dict(), "\n".join(lines))
    return EXIT_OK


def cmd_lag(args: argparse.Namespace) -> int:
    from hbase_migration import lag

    source = resolve_cluster(args.source)
    thresholds = lag.thresholds_from({"stable_samples": args.stable_samples, "max_lag_ms": args.max_lag_ms,
                                      "caught_up_queue_size": args.caught_up_queue_size})
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
    from hbase_migration import quota

    sample = quota.measure(resolve_cluster(args.source), args.quota_mark, args.sample_gap_s)
    _emit(args, sample.to_dict(), sample.log_line())
    return EXIT_FAILED if sample.decision.level == "breach" else EXIT_OK


def cmd_create_tables(args: argparse.Namespace) -> int:
    from hbase_migration.tables import create_missing_tables

    done = create_missing_tables(resolve_cluster(args.source), resolve_cluster(args.target),
                                 _tables(args.tables), dry_run=args.dry_run)
    _emit(args, done, "\n".join(f"{d['table']}: {d['outcome']}" + (f"  {d['statement']}" if d["statement"] else "")
                                for d in done))
    return EXIT_OK


def cmd_freeze(args: argparse.Namespace) -> int:
    from hbase_migration.freeze import readonly_states, set_readonly

    cluster = resolve_cluster(args.source)
    tables = _tables(args.tables)
    if args.status:
        states = readonly_states(cluster, tables)
        _emit(args, states, "\n".join(f"{t}: {'READONLY' if ro else 'writable'}" for t, ro in states.items()))
        return EXIT_OK
    done = set_readonly(cluster, tables, not args.unfreeze, dry_run=args.dry_run)
    _emit(args, done, "\n".join(f"{d['table']}: {d['outcome']}" + (f"  {d['statement']}" if d["statement"] else "")
                                for d in done))
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
    from hbase_migration.executors import LocalExecutor
    from hbase_migration.runner import job_main

    argv = [a for a in argv if a != "--json"]
    workers = 4
    if "--workers" in argv:
        i = argv.index("--workers")
        try:
            workers = int(argv[i + 1])
        except (IndexError, ValueError):
            print("error: --workers needs a number", file=sys.stderr)
            return EXIT_USAGE
        del argv[i:i + 2]
    return job_main(kind, argv, lambda _name, _ns: LocalExecutor(workers))


# --------------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hbase_migration", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-level", default="WARNING")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser, target: bool = False) -> None:
        sp.add_argument("--source", required=True, help="source cluster's Airflow connection id")
        if target:
            sp.add_argument("--target", required=True, help="target cluster's Airflow connection id")
        sp.add_argument("--json", action="store_true", help="print one JSON document")

    sp = sub.add_parser("preflight", help="every check before a migration; changes nothing")
    common(sp, target=True)
    sp.add_argument("--tables", required=True, help="comma-separated tables")
    sp.add_argument("--peer-id", required=True)
    sp.add_argument("--no-create", action="store_true", help="fail when a target table is absent")
    sp.add_argument("--expected-copy-s", type=float, default=3600.0, help="expected copy duration (headroom)")
    sp.add_argument("--safety-factor", type=float, default=2.0)
    sp.add_argument("--quota-mark", type=float, default=BY_NAME["quota_mark"].default,
                    help="fraction of an oldWALs quota that counts as pressure")
    sp.add_argument("--sample-gap-s", type=float, default=2.0, help="gap between two oldWALs readings")
    sp.set_defaults(func=cmd_preflight)

    sp = sub.add_parser("peer", help="replication peer admin on the source")
    sp.add_argument("action", choices=("list", "add", "enable", "disable", "remove"))
    sp.add_argument("--source", required=True)
    sp.add_argument("--target", help="target connection id (add)")
    sp.add_argument("--tables", help="comma-separated tables (add)")
    sp.add_argument("--peer-id")
    sp.add_argument("--state", choices=("disabled", "enabled"), default="disabled", help="state of a new peer")
    sp.add_argument("--force", action="store_true", help="remove a peer this toolkit did not create")
    sp.add_argument("--dry-run", action="store_true", help="print the commands, change nothing")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_peer)

    sp = sub.add_parser("lag", help="per-queue replication figures and the drain decision")
    common(sp)
    sp.add_argument("--peer-id", required=True)
    sp.add_argument("--watch", action="store_true", help="poll until drained (or --watch-timeout-s)")
    sp.add_argument("--interval-s", type=float, default=5.0)
    sp.add_argument("--watch-timeout-s", type=float, default=3600.0)
    sp.add_argument("--stable-samples", type=int, default=BY_NAME["stable_samples"].default)
    sp.add_argument("--max-lag-ms", type=int, default=BY_NAME["max_lag_ms"].default)
    sp.add_argument("--caught-up-queue-size", type=int, default=BY_NAME["caught_up_queue_size"].default,
                    help="1 for HBase 2.x, 0 for 1.x")
    sp.set_defaults(func=cmd_lag)

    sp = sub.add_parser("quota", help="oldWALs usage, quota, growth and projected exhaustion")
    common(sp)
    sp.add_argument("--quota-mark", type=float, default=BY_NAME["quota_mark"].default,
                    help="fraction of a quota that counts as a breach")
    sp.add_argument("--sample-gap-s", type=float, default=5.0)
    sp.set_defaults(func=cmd_quota)

    sp = sub.add_parser("create-tables", help="create absent target tables like the source's (families, splits)")
    common(sp, target=True)
    sp.add_argument("--tables", required=True)
    sp.add_argument("--dry-run", action="store_true")
    sp.set_defaults(func=cmd_create_tables)

    sp = sub.add_parser("freeze", help="make tables READONLY (writes refused, reads go on) or writable again")
    common(sp)
    sp.add_argument("--tables", required=True)
    sp.add_argument("--unfreeze", action="store_true", help="make the tables writable again")
    sp.add_argument("--status", action="store_true", help="only show each table's READONLY attribute")
    sp.add_argument("--dry-run", action="store_true", help="print the alter statements, change nothing")
    sp.set_defaults(func=cmd_freeze)

    for name in ("copy", "verify"):
        sp = sub.add_parser(name, add_help=False, help=f"the {name} in this process, no Spark "
                                                       f"(arguments as jobs/{name}_table.py, plus --workers N)")
        sp.set_defaults(passthrough=True)

    sp = sub.add_parser("cluster", help="a connection as the toolkit reads it (the cluster's wire form)")
    common(sp)
    sp.set_defaults(func=cmd_cluster)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    if argv and argv[0] in ("copy", "verify"):
        try:
            return run_in_process(argv[0], argv[1:])
        except SystemExit as e:  # argparse in the job: 2 on a usage error
            return int(e.code or 0)
    args = p.parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from hbase_migration.replication import InvalidPeerConfig, PeerAdminError

    try:
        return args.func(args)
    except (UsageError, ClusterConfigError, ConnectionNotFound, InvalidPeerConfig, InvalidRunInput) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except PeerAdminError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # an unreachable cluster, a failed shell: a failure, said plainly
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
