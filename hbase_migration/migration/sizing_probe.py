"""Gathering the sizing's figures (I/O; the arithmetic is `sizing.py`): the source region servers' `sub=Regions`
metrics, one timed sample copy per table into a scratch table on the target, oldWALs read at the start and at
the end of the dry run (its growth over that span), and HDFS's free space from the namenode's `/jmx`.

The scratch table (`hbase_migration_size_<peer>_<table>`, default namespace) is created from the source's
`describe` (codec map applied, REPLICATION_SCOPE 0: the sample must not replicate anywhere from the target) and
dropped whatever happens; one left by an earlier, interrupted sizing is dropped first. Every table's scratch table
is created in one shell call and dropped in one (each call starts a shell JVM). Changes nothing else:
the sample reads the source and writes only the scratch table.

Which region is sampled: the smallest one holding data (bounded time; a table's regions are alike once its split
policy has run). Matching a region's metrics (keyed by encoded name) to its key range takes the region names
Thrift1's `getTableRegions` gives (`table,start,id.<encoded>.`): Thrift2's `getAllRegionLocations` leaves the
region id out, so its names cannot be encoded. Without a Thrift1 gateway the middle region is sampled and its size
taken as the table's mean region size (marked approximate).
"""
from __future__ import annotations

import dataclasses
import logging
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.migration.region_metrics import RegionMetrics, fetch_region_metrics
from hbase_migration.migration.sizing import SampleCopy, TableSizing, Verdict, project, text, verdict

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.migration.schema import TableSchema
    from hbase_migration.migration.sizing import Projection

log = logging.getLogger(__name__)

_ENCODED = re.compile(rb"\.([0-9a-f]{32})\.$")


@dataclass(frozen=True)
class SizingRequest:
    """How to size: the copy's scope, its parallelism and throttle (they set the projected time), bounds."""

    copy_tasks: int = 4
    rows_per_s: float = 0.0
    sample_timeout_s: float = 300.0
    growth_window_s: float = 10.0  # oldWALs read at least this far apart (a shorter span is noise)
    quota_policy: str = "fail"
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    versions: int | None = None


@dataclass(frozen=True)
class SizingReport:
    tables: tuple[TableSizing, ...]
    projection: "Projection"
    verdict: Verdict
    quota: dict[str, Any] | None  # the last oldWALs reading (QuotaUsage.to_dict)
    capacity: dict[str, Any] | None  # HdfsCapacity.to_dict
    errors: tuple[str, ...]  # what could not be read, named
    sized_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"tables": [t.to_dict() for t in self.tables], "projection": self.projection.to_dict(),
                "verdict": dataclasses.asdict(self.verdict), "quota": self.quota, "capacity": self.capacity,
                "errors": list(self.errors), "sized_s": self.sized_s}

    def text(self) -> str:
        return text(self.tables, self.projection) + "".join(f"\n  ! {e}" for e in self.errors)


class _SampleTimeout(Exception):
    pass


def scratch_name(peer_id: str, table: str) -> str:
    qualifier = re.sub(r"[^A-Za-z0-9_]", "_", table)
    return f"hbase_migration_size_{peer_id}_{qualifier}"[:200]


def encoded_name(region_name: bytes) -> str | None:
    """The encoded name at the end of a full region name (`table,start,id.<md5 hex>.`), None when absent."""
    match = _ENCODED.search(region_name)
    return match.group(1).decode() if match else None


def _regions(cluster: "Cluster", table: str) -> tuple[list[Any], bool]:
    """The table's regions with names that carry the encoded name (Thrift1), else the data path's own (False)."""
    from hbase_migration.data.datapath import open_data_path

    if cluster.uses_thrift2:
        try:
            with open_data_path(dataclasses.replace(cluster, data_path="thrift1")) as path:
                regions = path.regions(table)
            if regions and all(encoded_name(r.name) for r in regions):
                return regions, True
        except Exception as e:  # no Thrift1 gateway: approximate
            log.info("sizing %s: no region names through Thrift1 (%s): sampling the middle region", table, e)
    with open_data_path(cluster) as path:
        regions = path.regions(table)
    return regions, bool(regions) and all(encoded_name(r.name) for r in regions)


def _shell(cluster: "Cluster", statements: list[str]) -> None:
    from hbase_migration.clusters import channels

    channels.shell(cluster, statements, timeout_s=max(cluster.shell_timeout_s, 120.0))


def _scratch_statement(schema: "TableSchema", name: str, codec_map: Mapping[str, str] | None) -> str:
    from hbase_migration.migration.schema import create_statement

    families = tuple(dataclasses.replace(f, attributes={**f.attributes, "REPLICATION_SCOPE": "0"})
                     for f in schema.families)
    return create_statement(dataclasses.replace(schema, families=families), [], name=name, codec_map=codec_map)


def _drop_statements(names: Sequence[str]) -> list[str]:
    from hbase_migration.migration.schema import ruby_string

    return [s for n in names for s in (f"disable {ruby_string(n)}", f"drop {ruby_string(n)}")]


def _create_scratch(target: "Cluster", schema: "TableSchema", name: str, codec_map: Mapping[str, str] | None) -> None:
    from hbase_migration.clusters.shell import ShellCommandError

    statement = _scratch_statement(schema, name, codec_map)
    try:
        _shell(target, [statement])
    except ShellCommandError as e:
        if "already exists" not in str(e):
            raise
        log.warning("a scratch table %s from an earlier sizing is on %s: dropping it", name, target.name)
        _shell(target, _drop_statements([name]))
        _shell(target, [statement])


def create_scratches(target: "Cluster", scratches: Sequence[tuple["TableSchema", str]],
                     codec_map: Mapping[str, str] | None) -> None:
    """Every scratch table in one shell call (a shell is a JVM start: 5 to 20 s, per call, not per table); one
    left by an earlier sizing makes it one table at a time, dropping the leftover first. When creating fails,
    those it created are dropped again before it raises."""
    from hbase_migration.clusters.shell import ShellCommandError
    from hbase_migration.migration.tables import existing_tables

    try:
        try:
            _shell(target, [_scratch_statement(schema, name, codec_map) for schema, name in scratches])
        except ShellCommandError as e:
            if "already exists" not in str(e):
                raise
            log.warning("a scratch table from an earlier sizing is on %s: creating them one at a time", target.name)
            for schema, name in scratches:
                _create_scratch(target, schema, name, codec_map)
    except BaseException:
        names = [name for _, name in scratches]
        try:
            left = sorted(existing_tables(target, names))
            if left:
                _shell(target, _drop_statements(left))
        except Exception as cleanup:  # the creation's error is the one to raise
            log.error("scratch tables may be left on %s (%s: %s): drop those of %s that exist", target.name,
                      type(cleanup).__name__, cleanup, ", ".join(names))
        raise


def drop_scratches(target: "Cluster", names: Sequence[str]) -> None:
    """Every scratch table dropped in one shell call."""
    _shell(target, _drop_statements(names))


def sample_copy(source: "Cluster", target: "Cluster", schema: "TableSchema", region: Any, region_bytes: int,
                approximate: bool, peer_id: str, request: SizingRequest,
                clock: Callable[[], float] = time.monotonic) -> SampleCopy:
    """Copy one region into its scratch table (`create_scratches` made it; the caller drops it), timed, stopping at
    `request.sample_timeout_s`."""
    from hbase_migration.data.copy import CopyOptions, copy_partition
    from hbase_migration.data.partitions import Partition, partition_id

    table = schema.name
    # Few retries: a sample that cannot write says so at once (the copy itself retries as configured).
    options = CopyOptions(table=table, target_table=scratch_name(peer_id, table), start_time_ms=request.start_time_ms,
                          end_time_ms=request.end_time_ms, versions=request.versions, log_every_s=1.0, retries=2,
                          retry_wait_max_s=2.0)
    name = encoded_name(region.name) or region.name.decode("utf-8", "backslashreplace")
    partition = Partition(table, 0, region.start_key, region.end_key, name,
                          partition_id(table, region.start_key, region.end_key, options.fingerprint()))
    last: dict[str, Any] = {}
    started = clock()
    deadline = started + request.sample_timeout_s

    def on_progress(snap: dict[str, Any]) -> None:
        last.update(snap)
        if not snap.get("final") and clock() >= deadline:
            raise _SampleTimeout()

    try:
        result = copy_partition(source, target, partition, options, on_progress=on_progress)
        return SampleCopy(name, region_bytes, result.rows, result.cells, result.bytes, result.elapsed_s, True,
                          approximate)
    except _SampleTimeout:
        return SampleCopy(name, region_bytes, last.get("rows", 0), last.get("cells", 0), last.get("bytes", 0),
                          round(clock() - started, 3), False, approximate)


def _sample_all(source: "Cluster", target: "Cluster", picks: Sequence[tuple], peer_id: str,
                request: SizingRequest, codec_map: Mapping[str, str] | None, errors: list[str]
                ) -> dict[str, "SampleCopy | str"]:
    """Each picked table's sample copy (or why it failed), its scratch table created with the others before and
    dropped with them after whatever happens; a failed drop is in `errors`, naming the tables left."""
    scratches = [(schema, scratch_name(peer_id, schema.name)) for schema, *_ in picks]
    try:
        create_scratches(target, scratches, codec_map)
    except Exception as e:
        why = f"sample copy failed: the scratch tables could not be created on {target.name!r}: " \
              f"{type(e).__name__}: {e}"
        return {schema.name: why for schema, *_ in picks}
    out: dict[str, SampleCopy | str] = {}
    try:
        for schema, region, region_bytes, approximate in picks:
            try:
                sample = sample_copy(source, target, schema, region, region_bytes, approximate, peer_id, request)
            except Exception as e:
                out[schema.name] = f"sample copy failed: {type(e).__name__}: {e}"
                continue
            out[schema.name] = sample
            log.info("sizing %s: sample region %s (%d bytes): %d rows, %d cells in %.2fs%s", schema.name,
                     sample.region, region_bytes, sample.rows, sample.cells, sample.elapsed_s,
                     "" if sample.complete else " (stopped at the sample timeout)")
    finally:
        names = [name for _, name in scratches]
        try:
            drop_scratches(target, names)
        except Exception as drop_error:
            message = (f"the scratch tables {', '.join(names)} could not be dropped from {target.name!r}: "
                       f"{drop_error}; drop them: " + "; ".join(_drop_statements(names)))
            log.error("%s", message)
            errors.append(message)
    return out


def _with_sample(sizing: TableSizing, sample: "SampleCopy | str | None") -> TableSizing:
    if sample is None:
        return sizing
    if isinstance(sample, str):
        return dataclasses.replace(sizing, error=sample)
    return dataclasses.replace(sizing, sample=sample)


def _table_sizing(table: str, regions: Sequence[Any], named: bool, metrics: Sequence[RegionMetrics]
                  ) -> tuple[TableSizing, Any, int, bool]:
    """The table's figures and the region to sample (None: no data), with its bytes and whether approximate."""
    mine = [m for m in metrics if m.table == table]
    sizing = TableSizing(
        table=table, regions=len(regions), regions_reported=len(mine),
        store_file_bytes=sum(m.store_file_size for m in mine), memstore_bytes=sum(m.memstore_size for m in mine),
        store_files=sum(m.store_file_count for m in mine), read_requests=sum(m.read_requests for m in mine),
        write_requests=sum(m.write_requests for m in mine),
        biggest_region_bytes=max((m.data_bytes for m in mine), default=0))
    if sizing.data_bytes == 0 or not regions:
        return sizing, None, 0, False
    if named:
        by_name = {m.encoded_name: m for m in mine}
        holding = [(by_name[encoded_name(r.name)].data_bytes, r.start_key, r) for r in regions
                   if encoded_name(r.name) in by_name and by_name[encoded_name(r.name)].data_bytes > 0]
        if holding:
            size, _, region = min(holding, key=lambda h: (h[0], h[1]))
            return sizing, region, size, False
    middle = sorted(regions, key=lambda r: r.start_key)[len(regions) // 2]
    return sizing, middle, sizing.data_bytes // max(1, len(mine) or len(regions)), True


def _oldwals(client: Any, rootdir: str) -> hdfs.QuotaUsage:
    return hdfs.quota_usage(client, rootdir)


def size_migration(source: "Cluster", target: "Cluster", tables: Sequence[str],
                   schemas: Mapping[str, "TableSchema | None"], peer_id: str, request: SizingRequest, *,
                   codec_map: Mapping[str, str] | None = None, quota_mark: float = hdfs.DEFAULT_QUOTA_MARK,
                   safety_factor: float = 2.0, zk_client: Any = None, clock: Callable[[], float] = time.monotonic,
                   wall: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep
                   ) -> SizingReport:
    """Size every table (see the module docstring); never raises for a cluster it cannot read: the report names
    what is missing and the projection leaves it out."""
    started = clock()
    errors: list[str] = []
    from hbase_migration.migration.quota import webhdfs

    client = webhdfs(source) if source.webhdfs_url else None
    first = None
    if client is None:
        errors.append(f"source {source.name!r} has no webhdfs_url: oldWALs growth and HDFS free space not read")
    else:
        try:
            first = (wall(), _oldwals(client, source.rootdir))
        except Exception as e:
            errors.append(f"oldWALs not readable through {source.webhdfs_url}: {type(e).__name__}: {e}")
    present = [t for t in tables if schemas.get(t) is not None]
    try:
        metrics, unreadable = fetch_region_metrics(source, present, zk_client)
    except Exception as e:
        metrics, unreadable = [], {}
        errors.append(f"region metrics not read: {type(e).__name__}: {e}")
    errors += [f"{server}: /jmx sub=Regions unreadable ({why}): its regions are missing from the sizes"
               for server, why in sorted(unreadable.items())]
    sized: list[TableSizing] = []
    picks: list[tuple] = []  # (schema, region, region bytes, approximate) of each table to sample
    for table in tables:
        schema = schemas.get(table)
        if schema is None:
            continue  # the source_tables check names it
        try:
            regions, named = _regions(source, table)
            sizing, region, region_bytes, approximate = _table_sizing(table, regions, named, metrics)
        except Exception as e:
            errors.append(f"{table}: regions not read: {type(e).__name__}: {e}")
            continue
        if sizing.regions_reported < sizing.regions:
            errors.append(f"{table}: {sizing.regions - sizing.regions_reported} of {sizing.regions} regions not in "
                          "the region servers' metrics (unreadable server, or a region opening): sizes are low")
        if region is not None:
            picks.append((schema, region, region_bytes, approximate))
        sized.append(sizing)
    if picks:
        samples = _sample_all(source, target, picks, peer_id, request, codec_map, errors)
        sized = [_with_sample(sizing, samples.get(sizing.table)) for sizing in sized]
    usage = capacity = None
    growth = files_growth = None
    if client is not None and first is not None:
        wait = request.growth_window_s - (clock() - started)
        if wait > 0:
            sleep(wait)
        try:
            at, usage = wall(), _oldwals(client, source.rootdir)
            growth = hdfs.growth_rate([(first[0], float(first[1].oldwals.space_consumed)),
                                       (at, float(usage.oldwals.space_consumed))])
            files_growth = hdfs.growth_rate([(first[0], float(first[1].oldwals.file_count)),
                                             (at, float(usage.oldwals.file_count))])
        except Exception as e:
            errors.append(f"oldWALs not readable through {source.webhdfs_url}: {type(e).__name__}: {e}")
        try:
            capacity = client.capacity()
        except Exception as e:
            errors.append(f"HDFS free space not read from {source.webhdfs_url}/jmx: {type(e).__name__}: {e}")
    projection = project(sized, copy_tasks=request.copy_tasks, rows_per_s=request.rows_per_s,
                         growth_bytes_per_s=growth, growth_files_per_s=files_growth, usage=usage, capacity=capacity,
                         quota_mark=quota_mark, safety_factor=safety_factor, quota_policy=request.quota_policy)
    report = SizingReport(tuple(sized), projection, verdict(projection, request.quota_policy),
                          usage.to_dict() if usage else None, capacity.to_dict() if capacity else None,
                          tuple(errors), round(clock() - started, 3))
    for line in report.text().splitlines():
        log.info("%s", line)
    return report


def record(ledger: Any, run_id: str, report: SizingReport, sized_ms: int | None = None) -> None:
    """Keep the sizing in the run ledger: each table's figures under its name, the projection, verdict and
    readings under `ALL_TABLES` (what the dashboard shows before the copy starts)."""
    from hbase_migration.ledger.store import ALL_TABLES

    figures = report.to_dict()
    for table in figures["tables"]:
        ledger.record_sizing(run_id, table["table"], table, sized_ms=sized_ms)
    ledger.record_sizing(run_id, ALL_TABLES, {k: v for k, v in figures.items() if k != "tables"}, sized_ms=sized_ms)


# ---------------------------------------------------------------------------------------------------------
# The CLI's preflight options (kept here so the CLI's module stays small)


def add_cli_arguments(parser: Any) -> None:
    parser.add_argument("--no-sizing", action="store_true",
                        help="skip the sizing (no sample copy): --expected-copy-s is trusted instead")
    parser.add_argument("--copy-tasks", type=int, default=4, help="partitions the copies will run at once "
                        "(Spark cores, or the copy's --workers): the projection divides the work by this")
    parser.add_argument("--rows-per-s", type=float, default=0.0, help="the copy's per-task throttle, if any")
    parser.add_argument("--sample-timeout-s", type=float, default=300.0, help="longest sample copy per table")
    parser.add_argument("--quota-policy", default="fail", choices=("fail", "enable_peer"),
                        help="the run's quota policy (enable_peer: a quota the projection overflows only warns)")


def request_from_args(args: Any) -> SizingRequest | None:
    """The sizing the CLI's preflight asks for (None with --no-sizing); a bad figure names its option."""
    if args.no_sizing:
        return None
    for name in ("copy_tasks", "sample_timeout_s"):
        if not math.isfinite(getattr(args, name)) or getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be a finite number > 0, got {getattr(args, name)!r}")
    if not math.isfinite(args.rows_per_s) or args.rows_per_s < 0:
        raise ValueError(f"--rows-per-s must be a finite number >= 0 (0: no throttle), got {args.rows_per_s!r}")
    return SizingRequest(copy_tasks=args.copy_tasks, rows_per_s=args.rows_per_s,
                         sample_timeout_s=args.sample_timeout_s, growth_window_s=max(args.sample_gap_s, 0.0),
                         quota_policy=args.quota_policy)
