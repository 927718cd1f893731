"""Command-line arguments of the copy and verify (the Spark jobs and the CLI share them), and the argv the
Airflow layer renders for a `SparkSubmitOperator`'s `application_args`. No Spark and no Airflow here.

A cluster is given as one argument, in any of these forms:
- the cluster's wire form, `Cluster.to_dict()` as JSON (what the Airflow operators pass);
- Airflow connection JSON, as `AIRFLOW_CONN_*` or minihbase's `endpoints[...]["connection"]` hold it:
  `{"conn_type": "hbase", "host": "...", "port": 9090, "extra": {"zookeeper_quorum": "...", ...}}`;
- an Airflow connection URI: `hbase://thrift-host:9090?zookeeper_quorum=zk1,zk2&znode_parent=/hbase`;
- an Airflow connection id (`hbase_source`), resolved as the CLI resolves it.
Connection fields are decoded by `Cluster.from_connection`, the one place that reads a connection's extras.

The run ledger's URL may carry its database's password, and a command line is seen by every user of the host (`ps`,
Spark's UI, YARN's application page): the operators write it into a file only its owner can read, ship that with
the job (spark-submit `--files`) and pass the file's name (`--ledger-url-file`, `--summary-ledger-url-file`); a
plain `--ledger-url` holding a password is refused.
"""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from hbase_migration.clusters.cluster import Cluster, ClusterConfigError
from hbase_migration.data.copy import CopyOptions
from hbase_migration.data.scope import CopyConfigError, timestamp_ms, to_bytes_binary
from hbase_migration.data.verify import VerifyOptions


class UsageError(ValueError):
    """A job argument is wrong; the job exits 2 and changes nothing."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are a `UsageError` (one line naming the argument, exit 2 from the caller) rather
    than a usage text and an exit from inside the parser."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} — see `{self.prog} --help`")


FORMS = "a connection id, Airflow connection JSON or URI, or the cluster's JSON"


def cluster_from_text(name: str, text: str) -> Cluster:
    """A `Cluster` from one of the forms in the module docstring; errors name the argument."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"--{name}: a cluster description is required — give {FORMS}")
    text = text.strip()
    try:
        if text.startswith(("{", "[")):
            data = json.loads(text)
            if not isinstance(data, dict):
                raise UsageError(f"--{name}: expected a JSON object — give {FORMS}")
            if "thrift_host" in data:
                return Cluster.from_dict({"name": name, **data})
            return _from_connection(name, data)
        if "://" in text:
            from hbase_migration.clusters.connections import parse_connection

            return _from_connection(name, parse_connection(text))
        from hbase_migration.clusters.connections import CONN_ID, ConnectionNotFound, resolve_cluster

        if not CONN_ID.match(text):
            raise UsageError(f"--{name}: {text!r} is not an Airflow connection id (letters, digits, '_', '-', '.'), "
                             f"nor connection JSON or a URI — give {FORMS}")
        try:
            return resolve_cluster(text)
        except ConnectionNotFound as e:
            raise UsageError(f"--{name}: {e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--{name}: not valid JSON ({e.msg} at column {e.colno}) — give {FORMS}") from None
    except (ClusterConfigError, TypeError) as e:
        fix = "" if " — " in str(e) else f" — fix the cluster description given to --{name}"
        raise UsageError(f"--{name}: {e}{fix}") from None


def _from_connection(name: str, data: Mapping[str, Any]) -> Cluster:
    from hbase_migration.clusters.connections import parse_extra

    extra = parse_extra(data.get("extra"), "the connection's extra")
    return Cluster.from_connection(data.get("conn_id") or name, data.get("host"), data.get("port"), extra)


def _finite(text: str) -> float:
    """A float argument that is a real number: argparse's `float` takes 'nan' and turns '1e400' into inf,
    which the checks after it would report as 'got inf', not as what was typed."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number (a float holds up to 1.8e308)")
    return value


def _instant(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date-time with its offset (as the trigger form takes them)."""
    try:
        return timestamp_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} (e.g. 1714521600000 or 2024-05-01T00:00:00Z)") from None


def _add_scope(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", required=True, help="source cluster (connection JSON/URI, Cluster JSON or conn id)")
    p.add_argument("--target", required=True, help="target cluster (same forms as --source)")
    p.add_argument("--table", required=True, help="source table (ns:name for a namespace)")
    p.add_argument("--target-table", help="target table (default: the source table's name)")
    p.add_argument("--start-row", help="first row (inclusive), \\xNN escapes as CopyTable's --startrow")
    p.add_argument("--stop-row", help="last row (exclusive), \\xNN escapes")
    p.add_argument("--start-time-ms", type=_instant,
                   help="copy cells with timestamp >= this (ms, inclusive; or ISO 8601 with an offset)")
    p.add_argument("--end-time-ms", type=_instant,
                   help="only cells with timestamp < this (ms, exclusive; or ISO 8601 with an offset); none: all")
    p.add_argument("--families", nargs="+", help="families, CopyTable style: cf1 src:dst (or cf1,src:dst)")
    p.add_argument("--versions", default="all",
                   help="versions per column: 'all' (default: every version each family keeps) or N, the newest N "
                        "(CopyTable's --versions; its default of 1 loses the older versions)")
    p.add_argument("--rows-per-partition", type=int,
                   help="sample regions (key-only scan) and split those with more rows than this")
    p.add_argument("--options-json", help="further library options as a JSON object (see CopyOptions/VerifyOptions)")
    p.add_argument("--master", help="Spark master when run with python (spark-submit sets it otherwise)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    add_summary_args(p)
    p.add_argument("--log-level", default="INFO", help="Python log level of the driver and tasks")


def add_summary_args(p: argparse.ArgumentParser) -> None:
    """Where the job's JSON summary goes besides stdout: a local file (the CLI; a driver on the submitting host),
    or the run ledger under a key the submitting task chose (a driver anywhere: YARN's or Kubernetes' cluster
    mode, where no file of the Airflow worker can be reached)."""
    p.add_argument("--summary-file", help="also write the final JSON summary to this file")
    add_ledger_url_args(p, "--summary-ledger-url",
                        "also keep the final JSON summary in the run ledger at this SQLAlchemy URL, under "
                        "--summary-key (how the Airflow task reads it wherever the driver ran)")
    p.add_argument("--summary-key", help="the summary's key in the ledger of --summary-ledger-url")


def summary_args_check(ns: argparse.Namespace) -> None:
    """--summary-ledger-url (or its -file) and --summary-key go together."""
    given = getattr(ns, "summary_ledger_url", None) or getattr(ns, "summary_ledger_url_file", None)
    if bool(given) != bool(getattr(ns, "summary_key", None)):
        raise UsageError("--summary-ledger-url and --summary-key go together — give both (the ledger and the key "
                         "the submitting task reads the summary under) or neither")


def summary_argv(summary_file: str | None = None, summary_ledger_url_file: str | None = None,
                 summary_key: str | None = None) -> list[str]:
    argv: list[str] = []
    for flag, value in (("--summary-file", summary_file), ("--summary-ledger-url-file", summary_ledger_url_file),
                        ("--summary-key", summary_key)):
        if value:
            argv += [flag, value]
    return argv


# --------------------------------------------------------------------------------------------------
# The ledger's URL: on a command line only without a password; otherwise in a file (see the module docstring)

LEDGER_URL_FILE = "hbase-migration-ledger-url"  # the name the operators ship the ledger's URL under


def add_ledger_url_args(p: argparse.ArgumentParser, flag: str, what: str) -> None:
    """`flag` (a URL without a password) and `flag`-file (a file holding the URL), one or the other."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(flag, help=f"{what}. Without a password: a URL holding one is refused (a command line is "
                                  f"seen by every user of the host); give it in {flag}-file instead")
    group.add_argument(f"{flag}-file", metavar="FILE",
                       help=f"as {flag}, the URL read from this file (keep it readable only by you: chmod 600); a "
                            "bare name is also looked for among the files shipped with the Spark job (--files)")


def write_ledger_url_file(url: str, directory: str | os.PathLike[str], name: str = LEDGER_URL_FILE) -> str:
    """Write `url` into a new file `name` in `directory`, readable and writable by its owner only (0600, whatever
    the umask), for spark-submit `--files`; its path. The caller removes the directory after the job."""
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(url + "\n")
    return path


def read_ledger_url_file(flag: str, name: str) -> str:
    """The URL in the file `name` (a path, or the name of a file shipped with the Spark job:
    `executors.shipped_file`); a `UsageError` naming `flag` when there is none."""
    from hbase_migration.data.executors import shipped_file

    path = shipped_file(name)
    if path is None:
        raise UsageError(f"{flag}: no file {name!r} on this host, nor shipped with the Spark job — give the path of "
                         "a file holding the ledger's SQLAlchemy URL, or ship it with spark-submit --files")
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{flag}: {path} cannot be read ({getattr(e, 'strerror', None) or e}) — make it readable "
                         "by the user running the job, and by no one else (chmod 600)") from None
    if not text or "\n" in text:
        raise UsageError(f"{flag}: {path} must hold the ledger's SQLAlchemy URL on one line — write it there "
                         "(e.g. postgresql+psycopg://user:password@host/db)")
    return text


def refuse_password(flag: str, url: str | None, fix: str | None = None) -> None:
    """A `UsageError` when the URL given to `flag` on a command line carries a password (not echoed)."""
    from hbase_migration.ledger.location import has_password

    if url and has_password(url):
        raise UsageError(f"{flag}: the URL holds a password, which a command line shows to every user of this host "
                         f"— {fix or f'put the URL in a file only you can read (chmod 600) and give {flag}-file'}, "
                         "or leave the password out (libpq reads ~/.pgpass)")


def ledger_args(ns: argparse.Namespace) -> None:
    """Resolve `--ledger-url` and `--summary-ledger-url` (where the parser has them): a URL given as such must hold
    no password; one given by `-file` is read into `ns.ledger_url` / `ns.summary_ledger_url`. UsageError: exit 2."""
    for flag, attr in (("--ledger-url", "ledger_url"), ("--summary-ledger-url", "summary_ledger_url")):
        refuse_password(flag, getattr(ns, attr, None))
        name = getattr(ns, attr + "_file", None)
        if name:
            setattr(ns, attr, read_ledger_url_file(f"{flag}-file", name))


def copy_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=prog or "copy_table.py",
        description="Copy an HBase table between clusters over Thrift, keeping every cell's timestamp "
                    "(a PySpark CopyTable). Prints one JSON summary line; exit 0 when every partition was "
                    "copied, 1 when one failed, 2 on a usage error.",
    )
    _add_scope(p)
    p.add_argument("--copy-id", help="name of this copy in the savepoint/ledger (default: from clusters+tables)")
    p.add_argument("--savepoint", help="JSON file recording finished partitions (resume skips them)")
    add_ledger_url_args(p, "--ledger-url", "record finished partitions in the run ledger at this SQLAlchemy URL")
    p.add_argument("--writers", type=int, help="target connections per task")
    p.add_argument("--pipeline", type=int, help="write calls in flight per connection (mutateRowsTs or putMultiple)")
    p.add_argument("--scan-batch-rows", type=int, help="rows per scanner call")
    p.add_argument("--rows-per-s", type=_finite, help="per-task throttle on rows read from the source")
    p.add_argument("--bytes-per-s", type=_finite, help="per-task throttle on bytes read from the source")
    p.add_argument("--max-load", help="load throttle: slow down when a source region server reaches any of these "
                                      "/jmx figures, 'metric=threshold,...' (e.g. numCallsInGeneralQueue=10,"
                                      "write_p99_ms=100; see hbase_migration/data/throttle.py)")
    p.add_argument("--critical-load", help="load throttle: pause while a source region server is past any of these")
    p.add_argument("--max-pause-s", type=_finite, help="load throttle: paused this long, the copy gives up "
                                                     "(default 600; finished partitions stay recorded)")
    p.add_argument("--load-sample-s", type=_finite, help="load throttle: seconds between two samples (default 5)")
    p.add_argument("--no-hold-switches", action="store_true",
                   help="leave the source's split/merge and normalizer switches as they are (the CLI copy turns "
                        "them off while it runs and restores them; see hbase_migration/data/switches.py)")
    return p


def verify_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=prog or "verify_table.py",
        description="Compare a table on two clusters: row counts, or every version of every cell of both "
                    "sides merge-joined by row key, a re-compare, optionally a repair. Without --end-time-ms "
                    "every cell is compared, future timestamps included. Prints one JSON result line; exit 0 "
                    "when identical, 1 when differences were found (or a partition failed), 2 on a usage error.",
    )
    _add_scope(p)
    p.add_argument("--level", choices=("rows", "content"), default="content",
                   help="rows: row counts only (key-only scans); content: every cell (default)")
    p.add_argument("--recompare-sleep-s", type=_finite, default=0.0,
                   help="pause before differing rows are compared again (edits in flight)")
    p.add_argument("--sample-limit", type=int, default=20, help="differing row keys listed per kind")
    p.add_argument("--repair", action="store_true",
                   help="write source cells (with their timestamps) to the target and delete target-only cells")
    p.add_argument("--method", choices=("cells", "hash", "auto"), default="cells",
                   help="cells: both sides read here and merge-joined (default); hash: leaves of both sides hashed "
                        "beside each cluster, only the differing ones compared by cells (docs/data-path.md); auto: "
                        "hash when the table's store files reach --hash-min-bytes")
    p.add_argument("--hash-leaf-bytes", type=int, help="hash: bytes of cells per leaf (default 1 MiB)")
    p.add_argument("--hash-min-bytes", type=int, help="auto: hash at or above this table size (default 1 GiB)")
    p.add_argument("--skew-margin-ms", type=int,
                   help="hash: how far the region servers' clocks may be behind this job's; cells newer than the "
                        "verification's start minus this are left out on both sides (default 5000)")
    p.add_argument("--source-remote",
                   help="the source as the target's datacenter reaches it (same forms as --source): what the "
                        "comparison by cells reads (default --source)")
    p.add_argument("--hash-side", choices=("source", "target"),
                   help="hash: run only this side, beside its cluster, meeting the other side's job in the ledger "
                        "of --summary-ledger-url(-file) under --exchange-key (default: both sides here)")
    p.add_argument("--exchange-key", help="with --hash-side: the key both sides' jobs meet under in the ledger")
    p.add_argument("--started-ms", type=int,
                   help="hash: the verification's start (ms since the epoch; default now): its time bound is this "
                        "minus --skew-margin-ms; both sides' jobs of one verification get the same")
    return p


def hash_side_check(ns: argparse.Namespace) -> None:
    """--hash-side needs --method hash, --exchange-key and the ledger they meet in."""
    if not getattr(ns, "hash_side", None):
        if getattr(ns, "exchange_key", None):
            raise UsageError("--exchange-key goes with --hash-side — give both, or neither (both sides here)")
        return
    if ns.method != "hash":
        raise UsageError(f"--hash-side {ns.hash_side} needs --method hash (a side's job hashes)")
    if not ns.exchange_key or not (ns.summary_ledger_url or ns.summary_ledger_url_file):
        raise UsageError(f"--hash-side {ns.hash_side} needs --exchange-key and --summary-ledger-url(-file): the "
                         "ledger where the two sides' jobs meet")


def _scope_kwargs(ns: argparse.Namespace) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if ns.options_json:
        try:
            extra = json.loads(ns.options_json)
        except json.JSONDecodeError as e:
            raise UsageError(f"--options-json: not valid JSON: {e}") from None
        if not isinstance(extra, dict):
            raise UsageError("--options-json: expected a JSON object")
    kwargs: dict[str, Any] = dict(extra)
    kwargs.update(
        table=ns.table,
        target_table=ns.target_table,
        start_row=to_bytes_binary(ns.start_row) if ns.start_row else b"",
        stop_row=to_bytes_binary(ns.stop_row) if ns.stop_row else b"",
        start_time_ms=ns.start_time_ms,
        end_time_ms=ns.end_time_ms,
        families=",".join(ns.families) if ns.families else (),
        versions=ns.versions,
    )
    if ns.rows_per_partition is not None:
        kwargs["rows_per_partition"] = ns.rows_per_partition
    return kwargs


def copy_options(ns: argparse.Namespace) -> CopyOptions:
    kwargs = _scope_kwargs(ns)
    for name in ("writers", "pipeline", "scan_batch_rows", "rows_per_s", "bytes_per_s"):
        value = getattr(ns, name)
        if value is not None:
            kwargs[name] = value
    try:
        return CopyOptions.from_dict(kwargs)
    except CopyConfigError as e:
        raise UsageError(str(e)) from None


def load_limits(ns: argparse.Namespace) -> Any:
    """The copy's load throttle from --max-load/--critical-load/--max-pause-s/--load-sample-s (None: off)."""
    from hbase_migration.data.throttle import LoadLimits

    try:
        return LoadLimits.from_options(ns.max_load, ns.critical_load, ns.max_pause_s, ns.load_sample_s)
    except ValueError as e:
        raise UsageError(f"--max-load/--critical-load: {e}") from None


def verify_options(ns: argparse.Namespace) -> VerifyOptions:
    """VerifyOptions from the arguments. Without --end-time-ms every cell is compared, timestamps in the future
    included (a cutoff at the job's start would never compare them); edits in flight then differ at first and
    the re-compare (--recompare-sleep-s) sees them again."""
    kwargs = _scope_kwargs(ns)
    kwargs.update(level=ns.level, recompare_sleep_s=ns.recompare_sleep_s, sample_limit=ns.sample_limit,
                  repair=ns.repair, method=ns.method)
    for name in ("hash_leaf_bytes", "hash_min_bytes", "skew_margin_ms"):
        if getattr(ns, name) is not None:
            kwargs[name] = getattr(ns, name)
    try:
        return VerifyOptions.from_dict(kwargs)
    except CopyConfigError as e:
        raise UsageError(str(e)) from None


def spark_conf(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf: expected KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


# --------------------------------------------------------------------------------------------------
# argv builders for the Airflow layer (SparkSubmitOperator application_args)


def _scope_argv(source: str, target: str, table: str, target_table: str | None, start_time_ms: int | None,
                end_time_ms: int | None, families: Sequence[str] | str | None, versions: int | None,
                rows_per_partition: int | None, options: Mapping[str, Any] | None) -> list[str]:
    argv = ["--source", source, "--target", target, "--table", table]
    if target_table:
        argv += ["--target-table", target_table]
    if start_time_ms is not None:
        argv += ["--start-time-ms", str(start_time_ms)]
    if end_time_ms is not None:
        argv += ["--end-time-ms", str(end_time_ms)]
    if families:
        argv += ["--families", families if isinstance(families, str) else ",".join(families)]
    if versions is not None:
        argv += ["--versions", str(versions)]
    if rows_per_partition:
        argv += ["--rows-per-partition", str(rows_per_partition)]
    if options:
        argv += ["--options-json", json.dumps(dict(options), sort_keys=True)]
    return argv


def copy_job_args(source: str, target: str, table: str, *, target_table: str | None = None,
                  start_time_ms: int | None = None, end_time_ms: int | None = None,
                  families: Sequence[str] | str | None = None, versions: int | None = None,
                  rows_per_partition: int | None = None, rows_per_s: float | None = None,
                  copy_id: str | None = None, savepoint: str | None = None, ledger_url_file: str | None = None,
                  options: Mapping[str, Any] | None = None, summary_file: str | None = None,
                  max_load: str | None = None, critical_load: str | None = None,
                  max_pause_s: float | None = None, load_sample_s: float | None = None,
                  summary_ledger_url_file: str | None = None, summary_key: str | None = None) -> list[str]:
    """`application_args` for jobs/copy_table.py. The ledger goes by the name of the file holding its URL
    (`write_ledger_url_file`, shipped with --files), never by the URL."""
    argv = _scope_argv(source, target, table, target_table, start_time_ms, end_time_ms, families, versions,
                       rows_per_partition, options)
    if rows_per_s:
        argv += ["--rows-per-s", str(rows_per_s)]
    if max_load or critical_load:
        for flag, value in (("--max-load", max_load), ("--critical-load", critical_load),
                            ("--max-pause-s", max_pause_s), ("--load-sample-s", load_sample_s)):
            if value:
                argv += [flag, str(value)]
    for flag, value in (("--copy-id", copy_id), ("--savepoint", savepoint), ("--ledger-url-file", ledger_url_file)):
        if value:
            argv += [flag, value]
    return argv + summary_argv(summary_file, summary_ledger_url_file, summary_key)


def verify_job_args(source: str, target: str, table: str, *, target_table: str | None = None,
                    start_time_ms: int | None = None, end_time_ms: int | None = None,
                    families: Sequence[str] | str | None = None,
                    versions: int | None = None, level: str = "content", recompare_sleep_s: float = 0.0,
                    repair: bool = False, sample_limit: int | None = None,
                    options: Mapping[str, Any] | None = None, summary_file: str | None = None,
                    summary_ledger_url_file: str | None = None, summary_key: str | None = None,
                    method: str = "cells", hash_leaf_bytes: int | None = None, hash_min_bytes: int | None = None,
                    skew_margin_ms: int | None = None, source_remote: str | None = None,
                    hash_side: str | None = None, exchange_key: str | None = None,
                    started_ms: int | None = None) -> list[str]:
    """`application_args` for jobs/verify_table.py."""
    argv = _scope_argv(source, target, table, target_table, start_time_ms, end_time_ms, families, versions, None,
                       options)
    if level != "content":
        argv += ["--level", level]
    if recompare_sleep_s:
        argv += ["--recompare-sleep-s", str(recompare_sleep_s)]
    if sample_limit:
        argv += ["--sample-limit", str(sample_limit)]
    if repair:
        argv += ["--repair"]
    if method != "cells":
        argv += ["--method", method]
    for flag, value in (("--hash-leaf-bytes", hash_leaf_bytes), ("--hash-min-bytes", hash_min_bytes),
                        ("--skew-margin-ms", skew_margin_ms), ("--source-remote", source_remote),
                        ("--hash-side", hash_side), ("--exchange-key", exchange_key), ("--started-ms", started_ms)):
        if value is not None:
            argv += [flag, str(value)]
    return argv + summary_argv(summary_file, summary_ledger_url_file, summary_key)
