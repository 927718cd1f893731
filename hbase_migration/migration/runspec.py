"""The run spec: every run parameter of the toolkit's DAGs, defined once, validated once.

Each `Field` holds a parameter's name, type, default, bounds and the words the trigger form shows. From this one
table come the DAGs' trigger forms (`form_schema`, wrapped into Airflow `Param`s by the Airflow layer), the plan
files' fields (`plan_key`: `[quota] mark` is `quota_mark`), and `RunSpec.validate`, which every entry point calls
(the DAG's `open_run`, plan loading, the CLI) and whose output the tasks use as is. Adding a parameter is one
`Field` here, one attribute of `RunSpec`, and the code that uses it.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Mapping

from hbase_migration.clusters.connections import CONN_ID
from hbase_migration.data.scope import timestamp_ms
from hbase_migration.data.throttle import (
    DEFAULT_CRITICAL_LOAD,
    DEFAULT_MAX_LOAD,
    DEFAULT_MAX_PAUSE_S,
    LoadLimits,
    limits_text,
    parse_limits,
)
from hbase_migration.migration.batches import DEFAULT_MAX_BYTES as DEFAULT_BATCH_BYTES
from hbase_migration.migration.batches import DEFAULT_MAX_TABLES as DEFAULT_BATCH_TABLES
from hbase_migration.migration.batches import check_listed, parse_listed
from hbase_migration.migration.initial_copy import DEFAULT_THRESHOLD as SNAPSHOT_THRESHOLD
from hbase_migration.migration.initial_copy import MODES as INITIAL_COPY_MODES
from hbase_migration.migration.quota import DEFAULT_QUOTA_MARK, POLICIES
from hbase_migration.replication.model import PEER_ID_PATTERN, normalize_table, validate_peer_id
from hbase_migration.replication.wal_groups import MAX_CAUGHT_UP_QUEUE_SIZE

MIGRATION, BACKFILL, WATCH, CUTOVER, ROLLBACK = "migration", "backfill", "watch", "cutover", "rollback"
METADATA_MODES = ("apply", "check", "skip")  # the migration's grants, quotas, RS groups: given the target | listed
BULK_LOADS = ("replicated", "none")  # the source replicates bulk loads (its /conf shows it) | none are made


class InvalidRunInput(ValueError):
    """A run parameter is invalid; `field` names it (the form's name, or the plan file's `section.key`)."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.reason = message


# ---------------------------------------------------------------------------------------------------------
# Value checks: each returns the canonical value or raises ValueError saying what is wanted.


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise ValueError(f"must be an integer, got {value!r}")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number, got {value!r}") from None


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"must be true or false, got {value!r}")


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    return value.strip()


def _conn_id(value: Any) -> str:
    text = _string(value)
    if not CONN_ID.match(text):
        raise ValueError(f"{text!r} is not an Airflow connection id (letters, digits, '_', '-', '.')")
    return text


def _name_list(value: Any, what: str, each: Callable[[str], str]) -> tuple[str, ...]:
    """A list of names (or one comma-separated string): each checked by `each`, blanks and repeats dropped."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of {what}s, got {value!r}")
    names = tuple(dict.fromkeys(each(v.strip()) for v in value if v.strip()))
    if not names:
        raise ValueError(f"at least one {what} is required")
    return names


def _tables(value: Any) -> tuple[str, ...]:
    return _name_list(value, "table", normalize_table)


def _table_subset(value: Any) -> tuple[str, ...] | None:
    """Tables, or None for an empty list (every table of the run)."""
    if isinstance(value, (list, tuple)) and not any(isinstance(v, str) and v.strip() for v in value):
        return None
    return _tables(value)


def _conn_ids(value: Any) -> tuple[str, ...]:
    return _name_list(value, "connection id", _conn_id)


def _peer_id(value: Any) -> str:
    return validate_peer_id(value.strip() if isinstance(value, str) else value)


def _run_id(value: Any) -> str:
    text = _string(value)
    if len(text) > 250:
        raise ValueError(f"must be an Airflow run id (at most 250 characters), got {text[:60]!r}...")
    return text


def _load_limits(value: Any) -> str | None:
    """gh-ost style `metric=threshold,...` (see hbase_migration.data.throttle), canonical; empty: no limit."""
    if isinstance(value, str) and not value.strip():
        return None
    limits = parse_limits(value, "limit")
    return limits_text(limits) or None


def _versions(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().lower() == "all":
        return None
    try:
        n = _integer(value)
    except ValueError:
        raise ValueError(f"must be 'all' or a number of versions >= 1, got {value!r}") from None
    if n < 1:
        raise ValueError(f"must be 'all' or a number of versions >= 1, got {value!r}")
    return n


def parse_codec_map(value: Any) -> dict[str, str]:
    """`SNAPPY=ZSTD,LZO=GZ` (or a mapping) -> {"SNAPPY": "ZSTD", "LZO": "GZ"}: each side one of HBase's codecs."""
    from hbase_migration.migration.schema import CODECS

    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, str):
        pairs = []
        for item in (i.strip() for i in value.split(",")):
            if not item:
                continue
            source, sep, target = item.partition("=")
            if not sep:
                raise ValueError(f"{item!r} is not SOURCE=TARGET (e.g. SNAPPY=ZSTD)")
            pairs.append((source, target))
    else:
        raise ValueError(f"must be SOURCE=TARGET pairs such as SNAPPY=ZSTD,LZO=GZ, got {value!r}")
    out: dict[str, str] = {}
    for source, target in pairs:
        source, target = str(source).strip().upper(), str(target).strip().upper()
        for codec in (source, target):
            if codec not in CODECS:
                raise ValueError(f"{codec!r} is not an HBase compression codec ({', '.join(CODECS)})")
        if source in out:
            raise ValueError(f"{source} is mapped twice")
        out[source] = target
    return out


def _codec_map(value: Any) -> str | None:
    """The canonical text of a codec map (sorted pairs); empty: None."""
    codecs = parse_codec_map(value)
    return ",".join(f"{k}={v}" for k, v in sorted(codecs.items())) or None


_CLASS = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def _class_names(value: Any) -> tuple[str, ...]:
    """Java class names (a list, or one comma-separated string); empty: none."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of Java class names, got {value!r}")
    names = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    bad = [n for n in names if not _CLASS.match(n)]
    if bad:
        raise ValueError(f"{bad[0]!r} is not a Java class name (e.g. org.example.hbase.AuditObserver)")
    return names


# ---------------------------------------------------------------------------------------------------------
# The fields


def _command(value: Any) -> str:
    """A command line (shell-split, run without a shell): non-empty, and it must split."""
    import shlex

    text = _string(value)
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"must be a command line that splits like a shell's ({e}), got {value!r}") from None
    if not argv:
        raise ValueError(f"must name a command, got {value!r}")
    return text


def _principal_map(value: Any) -> str:
    from hbase_migration.migration.metadata import parse_principal_map

    if not isinstance(value, str):
        raise ValueError(f"must be a string of SOURCE=TARGET pairs, got {value!r}")
    parse_principal_map(value)  # ValueError naming the item
    return value.strip()


def _principals(value: Any) -> tuple[str, ...]:
    """HBase users or @groups (a list, or one comma-separated string); empty: none."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of users or @groups, got {value!r}")
    names = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    bad = [n for n in names if any(c.isspace() or c in "'\"\\," for c in n) or n == "@"]
    if bad:
        raise ValueError(f"must be user or @group names (no spaces, quotes or commas), got {bad[0]!r}")
    return names


def _principal(value: Any) -> str:
    """One HBase user: a short name, or a Kerberos principal (name@REALM, name/host@REALM)."""
    names = _principals(value)
    if len(names) != 1 or names[0].startswith("@"):
        raise ValueError(f"must be one user (a principal, not a @group), got {value!r}")
    return names[0]


def _local_path(value: Any) -> str:
    text = _string(value)
    if not text.startswith("/"):
        raise ValueError(f"must be an absolute path on the host the task runs on, got {text!r}")
    return text


_POOL = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")


def _pool(value: Any) -> str:
    """An Airflow pool's name."""
    text = _string(value)
    if not _POOL.match(text):
        raise ValueError(f"{text!r} is not an Airflow pool name (letters, digits, '_', '-', '.')")
    return text


def _batches(value: Any) -> tuple[tuple[str, ...], ...]:
    """The operator's batches: a list of 'table1,table2,...' (pure; checked against the tables in `checked`)."""
    return parse_listed(value)


def at_least(low: int, what: str) -> dict[str, Any]:
    """A lower bound, for the form (JSON schema) and for validation alike."""
    return {"bounds": {"minimum": low}, "check": lambda v: v >= low, "wanted": f"{what} >= {low}"}


@dataclass(frozen=True)
class Field:
    """One run parameter.

    `kind` is its JSON schema type on the form; `parse` turns any accepted input into the canonical value;
    `plan_key` is its `section.key` in a plan file ("" when plans cannot set it); `dags` says which DAGs show
    it; `bounds` are extra JSON-schema keywords (minimum, enum, pattern...) mirrored by `parse`.
    """

    name: str
    kind: str | list[str]
    default: Any
    title: str
    description: str
    parse: Callable[[Any], Any]
    plan_key: str = ""
    dags: frozenset[str] = frozenset({MIGRATION})
    nullable: bool = False
    bounds: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[Any], bool] | None = None
    wanted: str = ""

    def value(self, raw: Any) -> Any:
        """The canonical value of `raw`, or InvalidRunInput naming this field."""
        if raw is None or (isinstance(raw, str) and not raw.strip() and self.nullable):
            if self.nullable:
                return None
            raise InvalidRunInput(self.name, "is required")
        try:
            value = self.parse(raw)
        except ValueError as e:
            raise InvalidRunInput(self.name, str(e)) from None
        if self.check is not None and not self.check(value):
            raise InvalidRunInput(self.name, f"must be {self.wanted}, got {raw!r}")
        return value

    def schema(self, default: Any) -> dict[str, Any]:
        """Keyword arguments of Airflow's `Param` for the trigger form."""
        kind = self.kind if not self.nullable else ["null", *([self.kind] if isinstance(self.kind, str)
                                                             else self.kind)]
        return {"default": default, "type": kind, "title": self.title, "description": self.description,
                **dict(self.bounds)}


BOTH = frozenset({MIGRATION, BACKFILL})
CONNS = frozenset({MIGRATION, BACKFILL, CUTOVER, ROLLBACK})
SWITCHES = frozenset({CUTOVER, ROLLBACK})

FIELDS: tuple[Field, ...] = (
    Field("source_conn_id", "string", "hbase_source", "Source cluster",
          "Airflow connection id of the cluster the tables are copied from", _conn_id, "migration.source_conn_id",
          CONNS),
    Field("target_conn_id", "string", "hbase_target", "Target cluster",
          "Airflow connection id of the cluster the tables are copied to", _conn_id, "migration.target_conn_id",
          CONNS),
    Field("tables", "array", ["users"], "Tables",
          "tables to migrate, every family of each ('ns:table' for a namespace)", _tables, "migration.tables",
          BOTH, bounds={"items": {"type": "string", "minLength": 1}, "minItems": 1}),
    Field("peer_id", "string", "migration1", "Replication peer id",
          "letters, digits and '_', not 'lock' (no '-': HBase names recovered queues '<peer>-<server>')",
          _peer_id, "migration.peer_id", bounds={"pattern": PEER_ID_PATTERN}),
    Field("start_time_ms", ["integer", "string"], None, "Window start (ms since the epoch, inclusive)",
          "copy and verify only cells with timestamp >= this; epoch ms or ISO 8601 (2024-01-31T00:00:00Z); "
          "empty: from the first cell (backfill: the run's data interval)", timestamp_ms, "copy.start_time_ms",
          BOTH, nullable=True),
    Field("end_time_ms", ["integer", "string"], None, "Window end (ms since the epoch, exclusive)",
          "copy and verify only cells with timestamp < this; epoch ms or ISO 8601; empty: up to the copy's "
          "start (backfill: the run's data interval)", timestamp_ms, "copy.end_time_ms", BOTH, nullable=True),
    Field("versions", ["integer", "string"], None, "Versions per column",
          "empty or 'all': every version each source family keeps (its VERSIONS), so no history is lost; N: the "
          "newest N of each column (CopyTable's --versions; its default, 1, drops the older versions). The copy "
          "and the verification both cover these versions", _versions, "copy.versions", BOTH, nullable=True,
          bounds={"minimum": 1, "pattern": "^all$"}),
    Field("rows_per_s", "integer", 0, "Throttle per copy task (rows/s)",
          "rows read from the source per second and copy task, to spare its region servers; 0: no limit",
          _integer, "copy.rows_per_s", BOTH, **at_least(0, "an integer")),
    Field("max_load", "string", DEFAULT_MAX_LOAD, "Load throttle: slow down past (metric=threshold,...)",
          "while copying, the source's region servers' /jmx is sampled (sub=IPC gauges such as "
          "numCallsInGeneralQueue, queueSize, numActiveHandler; sub=Server latencies such as Put_99th_percentile, or "
          "write_p99_ms / read_p99_ms, in ms); when any server reaches one of these, the copy's rate is halved "
          "(recovering step by step once under). Empty: no slow-down", _load_limits, "copy.max_load", BOTH,
          nullable=True),
    Field("critical_load", "string", DEFAULT_CRITICAL_LOAD, "Load throttle: pause past (metric=threshold,...)",
          "when any source region server reaches one of these, the copy pauses until it is back under them. "
          "Empty: never pause", _load_limits, "copy.critical_load", BOTH, nullable=True),
    Field("max_pause_s", "number", DEFAULT_MAX_PAUSE_S, "Load throttle: longest pause (s)",
          "paused this long, the copy task fails with the reason; finished partitions are recorded and a retry "
          "resumes", _number, "copy.max_pause_s", BOTH, bounds={"exclusiveMinimum": 0}, check=lambda v: v > 0,
          wanted="a number of seconds > 0"),
    Field("hold_switches", "boolean", True, "Hold splits, merges and the normalizer off while copying",
          "the source's split/merge switch and normalizer are turned off while the copies run and restored to "
          "exactly what they were (the state found is kept in the ledger, the copies of one source are counted, "
          "so the last one restores it, also after a failure or a killed and retried copy)", _boolean,
          "copy.hold_switches", BOTH),
    # -- Batches (issue 42): the run's tables in batches, each with its own peer (hbase_migration/migration/batches.py)
    Field("batches", "array", [], "Batches, as listed (each 'table1,table2,...'; empty: by size)",
          "each item one batch: its tables get their own peer, added DISABLED just before their copy and enabled as "
          "soon as they are on the target; every table of the run in exactly one. Empty: batched by size "
          "(batch_max_tables, batch_max_bytes). One batch's peer is peer_id itself; with more, <peer_id>_b1, ...",
          _batches, "batches.list", bounds={"items": {"type": "string", "minLength": 1}}),
    Field("batch_max_tables", "integer", DEFAULT_BATCH_TABLES, "Batches by size: most tables in one",
          "a batch holds at most this many tables (one Spark application copies them, one verifies them)", _integer,
          "batches.max_tables", **at_least(1, "an integer")),
    Field("batch_max_bytes", "integer", DEFAULT_BATCH_BYTES, "Batches by size: most store file bytes in one",
          "a batch holds at most this many bytes of store files (the sizing's figures; default 1 TiB), so that its "
          "WALs are pinned for a bounded copy; a bigger table goes alone. 0: only batch_max_tables caps a batch",
          _integer,
          "batches.max_bytes", **at_least(0, "an integer")),
    Field("batches_at_once", "integer", 2, "Batches copying side by side",
          "at most this many batches have their peer added and their copies running at once (each pins its own "
          "WALs and loads the source); the next batch waits its turn, with no worker slot held", _integer,
          "batches.at_once", **at_least(1, "an integer")),
    # -- Airflow pools (issue 42): read when the DAG is parsed (a plan's [pools] values, else these defaults); the
    # trigger form shows the DAG's own and refuses another (a task's pool is fixed when its DAG is parsed)
    Field("spark_pool", "string", "hbase_spark", "Airflow pool of the Spark submissions",
          "the copies, snapshot exports and verifications take a slot of this pool while they run (a deferred "
          "wait on a cluster-mode application holds none): its slots bound the Spark applications at once. Create it "
          "(`airflow pools set hbase_spark 4 ...`; make bootstrap and the deployment do)", _pool, "pools.spark"),
    Field("cluster_pool", "string", "hbase_cluster", "Airflow pool of the steps that load a cluster",
          "preflight (its sizing copies a sample), create_target_tables, the peers' additions and enablings, the "
          "switch releases and state_left_behind (each an HBase shell JVM on the source or the target) take a slot "
          "of this pool", _pool, "pools.cluster"),
    Field("initial_copy", "string", "scan", "Initial copy: scan, snapshot or auto",
          "scan: every cell through the Thrift gateways, with its timestamp; snapshot: a FLUSH snapshot of each table, "
          "exported over WebHDFS by Spark tasks (resumable file by file) and cloned on the target: the HFiles byte "
          "for byte, every version, timestamp and delete marker (KEEP_DELETED_CELLS families arrive exactly), and "
          "the target table must be absent; auto: snapshot for the tables whose store files reach "
          "snapshot_threshold_bytes, scan for the others. Either way the peer is added DISABLED first "
          "(docs/snapshot-export.md)", _string, "copy.initial_copy", bounds={"enum": list(INITIAL_COPY_MODES)},
          check=lambda v: v in INITIAL_COPY_MODES, wanted="'scan', 'snapshot' or 'auto'"),
    Field("snapshot_threshold_bytes", "integer", SNAPSHOT_THRESHOLD, "Auto: store files that go by snapshot (bytes)",
          "with initial_copy auto, a table whose store files (the sizing's figure, else HDFS's) reach this many bytes "
          "is copied by snapshot; below it, by scan. Default 1 GiB: below that the snapshot's fixed cost (flush, "
          "three shell sessions, the clone) outweighs its speed", _integer, "copy.snapshot_threshold_bytes",
          **at_least(0, "an integer")),
    Field("same_master_key", "boolean", False, "Snapshot: the target has the source's master key",
          "families with ENCRYPTION (transparent encryption) go by snapshot only when this is on: their HFiles move "
          "as they are, each data key wrapped with the source's master key (hbase.crypto.master.key.name), which "
          "the target's key provider must hold under the same name (no API shows a master key: only you can say "
          "so). Off: such a table is refused by initial_copy snapshot and copied by scan with auto", _boolean,
          "copy.same_master_key"),
    Field("snapshot_task_bytes_per_s", "integer", 0, "Snapshot export: bandwidth per task (bytes/s)",
          "each Spark task of the snapshot export reads at most this many bytes/s from the source's DataNodes "
          "(ExportSnapshot's --bandwidth); 0: no limit", _integer, "copy.snapshot_task_bytes_per_s",
          **at_least(0, "an integer")),
    Field("snapshot_bytes_per_s", "integer", 0, "Snapshot export: total bandwidth (bytes/s)",
          "the whole export of one table reads at most this many bytes/s (shared by its tasks); 0: no limit",
          _integer, "copy.snapshot_bytes_per_s", **at_least(0, "an integer")),
    Field("create_missing_tables", "boolean", True, "Create absent target tables",
          "create a target table that does not exist with the source's families and split keys", _boolean,
          "copy.create_missing_tables"),
    Field("codec_map", "string", None, "Compression codecs to map (SOURCE=TARGET,...)",
          "the target tables this run creates get the source's COMPRESSION (and compaction compression) unless "
          "mapped here, e.g. SNAPPY=ZSTD,LZO=GZ for codecs the target's region servers cannot load (preflight "
          "checks the target loads each codec it will use). Empty: every codec as on the source", _codec_map,
          "tables.codec_map", nullable=True),
    Field("target_coprocessors", "array", [], "Classes installed on the target",
          "coprocessor (and custom SPLIT_POLICY) classes installed on the target's region servers: a source "
          "table's coprocessor among them is carried to the target table; one not listed is refused by name "
          "(install it on the target first, or remove it from the source table)", _class_names,
          "tables.target_coprocessors", bounds={"items": {"type": "string", "minLength": 1}}),
    Field("allow_target_data", "boolean", False, "Accept target tables that already hold data",
          "a target table that already holds rows is refused (its cells would mix with the copy's) unless this "
          "migration's own peer already exists (a resumed or repeated run) or this is on", _boolean,
          "tables.allow_target_data"),
    Field("serial", "boolean", False, "Serial replication (HBase 2.1+)",
          "the peer is created SERIAL => true: edits of a region ship in order across region moves, splits and "
          "merges (HBASE-20046), at some cost in throughput. Needs the shell peer-admin backend", _boolean,
          "peer.serial"),
    Field("bandwidth", "integer", 0, "Peer bandwidth (bytes/s per region server)",
          "the peer's BANDWIDTH: each source region server ships at most this many bytes/s to it; 0: unlimited "
          "(replication.source.per.peer.node.bandwidth)", _integer, "peer.bandwidth", **at_least(0, "an integer")),
    Field("bulk_loads", "string", "replicated", "Bulk loads into these tables until the cut-over",
          "replicated: the source's region servers replicate bulk-loaded HFiles (hbase.replication.bulkload.enabled"
          "=true and a hbase.replication.cluster.id, read from their /conf by preflight, which refuses the run "
          "otherwise: a bulk load is not in the WALs, so without them it never reaches the target). none: your "
          "attestation that nothing is bulk loaded into these tables until the cut-over (shown at the cut-over's "
          "approval)", _string, "peer.bulk_loads", bounds={"enum": list(BULK_LOADS)},
          check=lambda v: v in BULK_LOADS, wanted="'replicated' or 'none'"),
    Field("metadata", "string", "apply", "Grants, quotas, RS groups on the target",
          "apply: each batch gives the target the source's grants, quotas and RS group membership of its tables "
          "(python -m hbase_migration metadata --apply: one shell session) before its verification, and fails on a "
          "change refused or left undone; check: only lists the differences (ledger and log); skip: neither. A "
          "target-only grant or quota is never removed, an RS group the target lacks never created (listed)",
          _string, "tables.metadata", bounds={"enum": list(METADATA_MODES)}, check=lambda v: v in METADATA_MODES,
          wanted="'apply', 'check' or 'skip'"),
    Field("max_lag_ms", "integer", 30_000, "Drained: largest ageOfLastShippedOp (ms)",
          "a queue counts as caught up when its ageOfLastShippedOp is at most this", _integer,
          "catch_up.max_lag_ms", frozenset({MIGRATION}) | SWITCHES, **at_least(0, "an integer")),
    Field("stable_samples", "integer", 3, "Drained: consecutive samples",
          "drained samples in a row, on every region server, before the run moves on", _integer,
          "catch_up.stable_samples", frozenset({MIGRATION}) | SWITCHES, **at_least(2, "an integer")),
    Field("caught_up_queue_size", "integer", 1, "Drained: sizeOfLogQueue when caught up (WALs)",
          "one WAL per WAL group of a source region server (the WAL being written stays queued): 1 on HBase 2.x+ "
          "with the default provider; N with hbase.wal.provider=multiwal and hbase.wal.regiongrouping.numgroups=N; "
          "one more per synchronous replication peer ACTIVE there on 3.x; 0 on 1.x. Where the source's region "
          "servers' /conf and peers can be read, a value above what they allow is refused (it would let a queue one "
          "WAL behind look drained)", _integer, "catch_up.caught_up_queue_size", frozenset({MIGRATION}) | SWITCHES,
          bounds={"minimum": 0, "maximum": MAX_CAUGHT_UP_QUEUE_SIZE},
          check=lambda v: 0 <= v <= MAX_CAUGHT_UP_QUEUE_SIZE,
          wanted=f"an integer 0..{MAX_CAUGHT_UP_QUEUE_SIZE}: the WAL groups of a region server (0 on HBase 1.x, 1 "
                 "on 2.x+ with one WAL group, more with multiwal or a 3.x sync peer)"),
    Field("idle_window_s", "number", 30.0, "Drained: idle window (s)",
          "with writes frozen, HBase 2.x keeps the age of the last shipped edit in its gauge: a queue whose "
          "counters stay frozen this long at its caught-up size counts as caught up whatever that stale age",
          _number, "", SWITCHES, **at_least(0, "a number")),
    Field("canary", "boolean", False, "Drained: canary row",
          "after the queues drain, write a marker row (key prefix __hbase_migration_canary__/) to the first "
          "table on the source, wait until the target reads it, then delete it on both sides", _boolean,
          "catch_up.canary"),
    Field("quota_policy", "string", "fail", "On oldWALs quota pressure",
          "fail: stop the copy and leave the peer DISABLED; enable_peer: enable the peer early so the cleaner "
          "can free shipped WALs, once each of its tables exists on the target (a snapshot table not cloned yet: "
          "the copy stops as with fail, naming it)", _string, "quota.policy", bounds={"enum": list(POLICIES)},
          check=lambda v: v in POLICIES, wanted="'fail' or 'enable_peer'"),
    Field("quota_mark", "number", DEFAULT_QUOTA_MARK, "oldWALs quota mark (fraction)",
          "fraction of an oldWALs HDFS quota that counts as pressure: preflight refuses to start above it, the "
          "copy's watchdog applies the policy when it is reached", _number, "quota.mark",
          frozenset({MIGRATION, WATCH}), bounds={"exclusiveMinimum": 0, "maximum": 1}, check=lambda v: 0 < v <= 1,
          wanted="a fraction in (0, 1]"),
    Field("expected_copy_s", "integer", 3600, "Expected copy duration (s)",
          "preflight checks that oldWALs' quota holds what a disabled peer pins for this long (x2)", _integer,
          "quota.expected_copy_s", **at_least(1, "an integer")),
    Field("sizing", "boolean", True, "Size the migration in preflight",
          "per table: regions, store file bytes and a row estimate from the region servers' metrics, and a timed "
          "copy of one region into a scratch table on the target (dropped afterwards); then the projected copy "
          "time and the oldWALs the disabled peer pins meanwhile, against the quota and HDFS free space: preflight "
          "refuses a run that would not fit. Off: expected_copy_s is trusted instead", _boolean, "quota.sizing"),
    Field("copy_tasks", "integer", 4, "Sizing: partitions copied at once",
          "how many partitions the copies run at the same time across the run (Spark executor cores given to the "
          "copy jobs, or the CLI's --workers); the projection divides the work by this", _integer,
          "quota.copy_tasks", **at_least(1, "an integer")),
    Field("sample_timeout_s", "integer", 300, "Sizing: longest sample copy (s)",
          "the sample copy of one region per table stops after this long; a table whose sample did not finish "
          "is not projected (a warning says so)", _integer, "quota.sample_timeout_s", **at_least(1, "an integer")),
    Field("recompare_sleep_s", "number", 5, "Verify: pause before re-comparing (s)",
          "rows that differ are compared again after this pause (edits in flight)", _number,
          "verify.recompare_sleep_s", BOTH | SWITCHES, **at_least(0, "a number")),
    Field("repair", "boolean", False, "Verify: repair what differs",
          "after the re-compare, make the rows that still differ equal on the target (source versions put with "
          "their timestamps, target-only versions deleted; exact-version deletes need Thrift2); the verification "
          "passes when every repaired row reads back equal. Off: verification only reads", _boolean,
          "verify.repair", BOTH),
    Field("verify_method", "string", "auto", "Verify: method (auto, cells or hash)",
          "cells: both sides read by one job and merge-joined, every version of every cell (all of one side crosses "
          "the WAN); hash: leaves of about hash_leaf_bytes hashed by a job beside each cluster (spark_source_conn_id, "
          "spark_target_conn_id), only the differing leaves compared by cells; auto: hash for a table whose store "
          "files reach hash_verify_min_bytes, else cells. The migration's, the cut-over's and the rollback's "
          "verifications all use it (docs/data-path.md)", _string, "verify.method", BOTH | SWITCHES,
          bounds={"enum": ["auto", "cells", "hash"]}, check=lambda v: v in ("auto", "cells", "hash"),
          wanted="'auto', 'cells' or 'hash'"),
    Field("hash_verify_min_bytes", "integer", 1 << 30, "Verify: auto hashes from (bytes of store files)",
          "with verify_method auto, a table whose store files (its region servers' /jmx) reach this is verified by "
          "hashes; a smaller one, or one whose size cannot be read, by cells", _integer, "verify.hash_min_bytes",
          BOTH | SWITCHES, **at_least(1, "an integer")),
    Field("hash_leaf_bytes", "integer", 1 << 20, "Verify by hashes: bytes of cells per leaf",
          "a leaf's digest (16 bytes) stands for about this many bytes of cells; a differing leaf is compared by "
          "cells, so smaller leaves read less across the WAN where there are differences and ship more digests",
          _integer, "verify.hash_leaf_bytes", BOTH | SWITCHES, **at_least(1024, "an integer")),
    Field("spark_source_conn_id", "string", None, "Verify by hashes: Spark beside the source",
          "the Spark connection whose job hashes the source (empty: the DAG's Spark connection)", _conn_id,
          "spark.source_conn_id", BOTH | SWITCHES, nullable=True),
    Field("spark_target_conn_id", "string", None, "Verify by hashes: Spark beside the target",
          "the Spark connection whose job hashes the target and compares the differing leaves by cells (empty: the "
          "DAG's Spark connection)", _conn_id, "spark.target_conn_id", BOTH | SWITCHES, nullable=True),
    Field("source_remote_conn_id", "string", None, "The source as the target's datacenter reaches it",
          "the HBase connection the jobs beside the target use for the source (the comparison by cells of the "
          "differing leaves; a cells verification too); empty: source_conn_id", _conn_id,
          "verify.source_remote_conn_id", BOTH | SWITCHES, nullable=True),
    Field("verify", "boolean", True, "Verify the window after the copy", "compare both sides' cells in the window",
          _boolean, dags=frozenset({BACKFILL})),
    Field("dry_run", "boolean", False, "Dry run", "run the checks and log the exact peer commands; change nothing",
          _boolean),
    Field("migration_run_id", "string", None, "Migration run to cut over",
          "the run id of the finished hbase_table_migration run (or plan DAG run) whose tables are cut over: its "
          "peer, tables and verification are read from the run ledger", _run_id, dags=frozenset({CUTOVER})),
    Field("only_tables", "array", None, "Tables to cut over (empty: all of the run's)",
          "a subset of the run's tables; the forward peer then keeps replicating the others", _table_subset,
          dags=frozenset({CUTOVER}), nullable=True, bounds={"items": {"type": "string", "minLength": 1}}),
    Field("reverse_peer_id", "string", None, "Reverse peer id (empty: <peer>_rev)",
          "the peer created on the target, ENABLED, replicating the cut-over tables back to the source so a "
          "rollback loses nothing", _peer_id, dags=frozenset({CUTOVER}), nullable=True,
          bounds={"pattern": PEER_ID_PATTERN}),
    Field("unfreeze_source", "boolean", True, "Unfreeze the source after the switch",
          "READONLY freeze: right after the switch make the source tables writable again, so the reverse peer can "
          "apply the target's edits (a READONLY table refuses replicated edits too: they would wait in the target's "
          "WALs). Off: the source stays READONLY, the reverse backlog grows until you unfreeze it (python -m "
          "hbase_migration freeze --unfreeze) or roll back. ACL freeze: the fence stays either way (the replication "
          "sink writes as the HBase superuser); the rollback gives WRITE back. A rollback: the same for the target "
          "after the switch back (READONLY: made writable so the re-created forward peer can apply the source's "
          "edits; ACL: it stays fenced)", _boolean, dags=SWITCHES),
    Field("switch_command", "string", None, "Switch command (moves the clients to the target)",
          "run inside the write freeze once the source is fenced, drained and checked: it must make the clients write "
          "to the target and exit 0 once they do (non-zero aborts the cut-over: the fence is lifted, the clients stay "
          "on the source). Split like a command line, run without a shell where the task runs, with the environment "
          "HBASE_CUTOVER_PHASE=switch (abort: it runs again to send the clients back after an abort), "
          "HBASE_CUTOVER_RUN_ID, HBASE_CUTOVER_TABLES, HBASE_CUTOVER_SOURCE, HBASE_CUTOVER_TARGET. No person is in "
          "the window: the plan, this command included, is approved before writes stop. A rollback runs its own "
          "(moving the clients back to the source) with HBASE_CUTOVER_KIND=rollback and HBASE_CUTOVER_SOURCE/TARGET "
          "the other way round (the clients move from SOURCE to TARGET)", _command, dags=SWITCHES, nullable=True),
    Field("freeze_method", "string", "auto", "How writes to the source are stopped",
          "auto: acl where every region server of the source runs HBase's AccessController and hbase.superuser is "
          "known (read from /conf, or attested in superusers), readonly otherwise; the plan says which and why. "
          "readonly: the tables' READONLY attribute (any cluster; every region of the tables reopens, reads blip; "
          "the source is made writable again after the switch so the reverse peer can write to it); acl: WRITE taken "
          "away from every principal holding it on the tables (clusters with HBase's AccessController: no region "
          "reopens; the fence stays after the switch, the replication sink writes as the HBase superuser). "
          "docs/cutover.md compares them with figures", _string, dags=frozenset({CUTOVER}),
          bounds={"enum": ["auto", "readonly", "acl"]}, check=lambda v: v in ("auto", "readonly", "acl"),
          wanted="'auto', 'readonly' or 'acl'"),
    Field("freeze_exempt", "array", [], "ACL freeze: principals left writing",
          "users or @groups whose WRITE on the tables is not taken away (a tool that must keep writing); a principal "
          "holding WRITE on the namespace or globally must be listed here or the cut-over is refused",
          _principals, dags=SWITCHES, bounds={"items": {"type": "string", "minLength": 1}}),
    # The cut-over's ACL fence (issue 39): who passes every permission check, as the operator attests it
    Field("superusers", "array", None, "ACL freeze: every hbase.superuser entry (your attestation)",
          "the users and @groups of the source's hbase.superuser (HBase 2.6's info servers mask it on /conf, so the "
          "toolkit cannot read it): an ACL fence cannot stop a superuser, so each must also be in freeze_exempt. "
          "Empty list: none besides the user HBase runs as. Not given while /conf hides it: the ACL freeze is "
          "refused. Shown at approval. A rollback fenced by ACL: the target's", _principals, dags=SWITCHES,
          nullable=True,
          bounds={"items": {"type": "string", "minLength": 1}}),
    Field("fence_canary", "string", "hbase_migration_canary", "ACL freeze: the canary principal",
          "the toolkit's own principal, granted READ and WRITE on the tables like the clients for the window: its "
          "write refused on every region server holding their regions proves the fence before the WAL roll; its "
          "grants are revoked after the window. On Kerberos the full principal (name@REALM), with "
          "fence_canary_keytab", _principal, dags=SWITCHES),
    Field("fence_canary_keytab", "string", None, "ACL freeze on Kerberos: the canary's keytab (a path)",
          "an absolute path, on the host the window task runs on, to a keytab of fence_canary (the path is "
          "recorded, never the file): the canary logs in from it. Not given on a Kerberized source: the ACL "
          "window aborts at the canary's proof, nothing changed", _local_path, dags=SWITCHES, nullable=True),
    Field("principal_map", "string", "", "Principals across realms (SOURCE=TARGET,...)",
          "how a source principal is named on the target, for grants and user quotas (the migration's metadata, "
          "the cut-over's check that every fenced writer can write on the target); unlisted: the same short name, "
          "realm and host dropped (app/host@DC1.EXAMPLE is app)", _principal_map, "tables.principal_map",
          frozenset({MIGRATION, CUTOVER})),
    Field("max_freeze_s", "number", 120, "Abort: the freeze's steps longer than (s)",
          "the fence, the forward peer's drain, the bounded check and the switch must be done within this after the "
          "fence started; else the fence is lifted and the clients stay on the source (a rollback: the same with "
          "the roles swapped)", _number, dags=SWITCHES, bounds={"exclusiveMinimum": 0}, check=lambda v: v > 0,
          wanted="a number of seconds > 0"),
    Field("lag_wait_s", "number", 300, "Abort: lag above max_lag_ms for longer than (s)",
          "before the freeze the forward peer's lag must come under max_lag_ms; waited for this long, else the "
          "cut-over is aborted with nothing changed (a rollback: the reverse peer's lag)", _number, dags=SWITCHES,
          **at_least(0, "a number")),
    Field("skew_margin_ms", "integer", 5000, "Bounded check: clock skew margin (ms)",
          "how far the region servers' clocks (which stamp the cells) may be behind the toolkit's: the bounded check "
          "reaches back this much before the last verification's start; a verification by hashes covers the cells "
          "older than its start minus this", _integer, dags=BOTH | SWITCHES,
          **at_least(0, "an integer")),
    Field("check_parallel", "integer", 16, "Bounded check: key ranges compared at once",
          "the window's bounded checks (the live pass and the one in the freeze) compare every region of every table "
          "as a key range of its own, this many at once, each thread with one connection per side", _integer,
          dags=SWITCHES, bounds={"minimum": 1, "maximum": 256}, check=lambda v: 1 <= v <= 256,
          wanted="an integer from 1 to 256"),
    Field("sync_replication", "boolean", False, "Synchronous replication (HBase 3.0+)",
          "cut over with HBase's synchronous replication (a remote WAL on the target's HDFS, ACTIVE / "
          "DOWNGRADE_ACTIVE / STANDBY): only HBase 3.0 and later have it; the check refuses it on older clusters "
          "with the evidence (docs/cutover.md)", _boolean, dags=frozenset({CUTOVER})),
    Field("cutover_run_id", "string", None, "Cut-over run to roll back",
          "the run id of the hbase_cutover run whose reverse peer brings the tables back to the source", _run_id,
          dags=frozenset({ROLLBACK})),
    Field("clusters", "array", ["hbase_source"], "Source clusters to watch",
          "Airflow connection ids of the clusters whose peers and oldWALs are watched", _conn_ids,
          dags=frozenset({WATCH}), bounds={"items": {"type": "string"}, "minItems": 1}),
    Field("max_disabled_s", "number", 3600, "Alert: peer disabled longer than (s)",
          "a disabled peer pins every WAL since it was disabled", _number, dags=frozenset({WATCH}),
          **at_least(0, "a number")),
    Field("alert_lag_ms", "integer", 300_000, "Alert: enabled peer lagging more than (ms)",
          "worst ageOfLastShippedOp of an enabled peer before the watch fails", _integer, dags=frozenset({WATCH}),
          **at_least(0, "an integer")),
    Field("min_exhaustion_s", "number", 86_400, "Alert: quota projected to run out within (s)",
          "the watch fails when oldWALs' growth would exhaust its quota sooner", _number, dags=frozenset({WATCH}),
          **at_least(0, "a number")),
    Field("quota_sample_gap_s", "number", 5, "Gap between two oldWALs readings (s)",
          "the growth rate is measured between two readings this far apart", _number, dags=frozenset({WATCH}),
          **at_least(0, "a number")),
)

BY_NAME = {f.name: f for f in FIELDS}
BY_PLAN_KEY = {f.plan_key: f for f in FIELDS if f.plan_key}


def fields_of(dag_kind: str) -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if dag_kind in f.dags)


def form_schema(dag_kind: str, defaults: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Each field of a DAG kind as `Param` keyword arguments, with `defaults` (a plan's values) applied."""
    defaults = dict(defaults or {})
    out = {}
    for f in fields_of(dag_kind):
        default = defaults.get(f.name, f.default)
        if isinstance(default, tuple):
            default = list(default)
        out[f.name] = f.schema(default)
    return out


# ---------------------------------------------------------------------------------------------------------
# The validated spec


@dataclass(frozen=True)
class RunSpec:
    """One run's validated parameters: what `open_run` hands to every task (as `to_dict()`)."""

    source_conn_id: str = "hbase_source"
    target_conn_id: str = "hbase_target"
    tables: tuple[str, ...] = ("users",)
    peer_id: str | None = None
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    versions: int | None = None
    rows_per_s: int = 0
    max_load: str | None = DEFAULT_MAX_LOAD
    critical_load: str | None = DEFAULT_CRITICAL_LOAD
    max_pause_s: float = DEFAULT_MAX_PAUSE_S
    hold_switches: bool = True
    batches: tuple[tuple[str, ...], ...] = ()
    batch_max_tables: int = DEFAULT_BATCH_TABLES
    batch_max_bytes: int = DEFAULT_BATCH_BYTES
    batches_at_once: int = 2
    spark_pool: str = "hbase_spark"
    cluster_pool: str = "hbase_cluster"
    initial_copy: str = "scan"
    snapshot_threshold_bytes: int = SNAPSHOT_THRESHOLD
    same_master_key: bool = False
    snapshot_task_bytes_per_s: int = 0
    snapshot_bytes_per_s: int = 0
    create_missing_tables: bool = True
    codec_map: str | None = None
    target_coprocessors: tuple[str, ...] = ()
    allow_target_data: bool = False
    serial: bool = False
    bandwidth: int = 0
    bulk_loads: str = "replicated"
    metadata: str = "apply"
    principal_map: str = ""
    max_lag_ms: int = 30_000
    stable_samples: int = 3
    caught_up_queue_size: int = 1
    idle_window_s: float = 30.0
    canary: bool = False
    quota_policy: str = "fail"
    quota_mark: float = DEFAULT_QUOTA_MARK
    expected_copy_s: int = 3600
    sizing: bool = True
    copy_tasks: int = 4
    sample_timeout_s: int = 300
    recompare_sleep_s: float = 5.0
    repair: bool = False
    verify_method: str = "auto"
    hash_verify_min_bytes: int = 1 << 30
    hash_leaf_bytes: int = 1 << 20
    spark_source_conn_id: str | None = None
    spark_target_conn_id: str | None = None
    source_remote_conn_id: str | None = None
    verify: bool = True
    dry_run: bool = False
    clusters: tuple[str, ...] = ("hbase_source",)
    max_disabled_s: float = 3600.0
    alert_lag_ms: int = 300_000
    min_exhaustion_s: float = 86_400.0
    quota_sample_gap_s: float = 5.0
    migration_run_id: str | None = None
    only_tables: tuple[str, ...] | None = None
    reverse_peer_id: str | None = None
    unfreeze_source: bool = True
    switch_command: str | None = None
    freeze_method: str = "auto"
    freeze_exempt: tuple[str, ...] = ()
    superusers: tuple[str, ...] | None = None
    fence_canary: str = "hbase_migration_canary"
    fence_canary_keytab: str | None = None
    max_freeze_s: float = 120.0
    lag_wait_s: float = 300.0
    skew_margin_ms: int = 5000
    check_parallel: int = 16
    sync_replication: bool = False
    cutover_run_id: str | None = None

    @classmethod
    def validate(cls, values: Mapping[str, Any], dag_kind: str = MIGRATION) -> "RunSpec":
        """Check every field the DAG kind has (unknown names are refused), then the rules between fields."""
        known = {f.name for f in fields_of(dag_kind)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidRunInput(unknown[0], f"unknown parameter (known: {', '.join(sorted(known))})")
        parsed = {f.name: f.value(values.get(f.name, f.default)) for f in fields_of(dag_kind)}
        return cls.from_dict(parsed).checked(dag_kind)

    def checked(self, dag_kind: str = MIGRATION) -> "RunSpec":
        """The rules between fields."""
        if dag_kind == WATCH:
            return self
        if self.start_time_ms is not None and self.end_time_ms is not None \
                and self.start_time_ms >= self.end_time_ms:
            raise InvalidRunInput("end_time_ms", f"must be greater than start_time_ms {self.start_time_ms} (the "
                                                 f"window [{self.start_time_ms}, {self.end_time_ms}) would be "
                                                 "reversed or empty)")
        if self.source_conn_id == self.target_conn_id:
            raise InvalidRunInput("target_conn_id", f"must differ from source_conn_id ({self.source_conn_id!r})")
        if dag_kind in SWITCHES and not self.switch_command:
            where = "to the target" if dag_kind == CUTOVER else "back to the source"
            raise InvalidRunInput("switch_command", f"is required: the command that moves the clients {where} "
                                                    "inside the write freeze (exit 0 once they write there)")
        if dag_kind == MIGRATION and self.initial_copy != "scan" and (self.start_time_ms is not None
                                                                      or self.end_time_ms is not None):
            raise InvalidRunInput("initial_copy", f"{self.initial_copy!r} copies every cell of a table (its snapshot): "
                                                  "a time window (start_time_ms, end_time_ms) needs initial_copy scan")
        if dag_kind == MIGRATION and self.batches:
            try:
                check_listed(self.batches, self.tables)
            except ValueError as e:
                raise InvalidRunInput("batches", str(e)) from None
        if dag_kind in (MIGRATION, BACKFILL) and (self.max_load or self.critical_load):
            try:
                LoadLimits(self.max_load or {}, self.critical_load or {}, self.max_pause_s)
            except ValueError as e:
                raise InvalidRunInput("critical_load", str(e)) from None
        return self

    def load_limits(self) -> LoadLimits | None:
        """The copy's load throttle (None: neither limit set)."""
        return LoadLimits.from_options(self.max_load, self.critical_load, self.max_pause_s)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunSpec":
        """From `to_dict()` (an XCom); fields absent keep their defaults."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        for name in ("tables", "clusters", "only_tables", "target_coprocessors", "freeze_exempt", "superusers"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        if values.get("batches") is not None:
            values["batches"] = parse_listed(values["batches"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tables"], d["clusters"] = list(self.tables), list(self.clusters)
        d["only_tables"] = None if self.only_tables is None else list(self.only_tables)
        d["target_coprocessors"] = list(self.target_coprocessors)
        d["freeze_exempt"] = list(self.freeze_exempt)
        d["superusers"] = None if self.superusers is None else list(self.superusers)
        d["batches"] = [",".join(b) for b in self.batches]  # as the form takes them
        return d

    def codecs(self) -> dict[str, str]:
        """The codec map as a mapping (source codec -> target codec)."""
        return parse_codec_map(self.codec_map or "")

    def with_window(self, start_ms: int | None, end_ms: int | None) -> "RunSpec":
        return RunSpec.from_dict({**self.to_dict(), "start_time_ms": start_ms, "end_time_ms": end_ms}).checked()

    def copies(self) -> list[dict[str, Any]]:
        """What the mapped copy and verify tasks expand over: one {table} per table."""
        return [{"table": t} for t in self.tables]
