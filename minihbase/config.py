"""A minihbase cluster's settings: defaults, the checked-in `clusters.toml`, overrides, validation.

Every setting is validated and a bad one is named in the error. Small defaults (roll sizes, cleaner TTL) let
tests see WAL rolls, archiving and cleaning within seconds; HBase's own defaults are noted beside them.
"""
from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLUSTERS_TOML = Path(__file__).with_name("clusters.toml")
MAX_GATEWAYS = 16  # Thrift gateways of one kind per cluster
# Compression.Algorithm names (HBase 2.5), and the ones a stock region server loads (no native LZO).
CODECS = ("NONE", "GZ", "LZO", "SNAPPY", "LZ4", "BZIP2", "ZSTD", "LZMA", "BROTLI")
DEFAULT_CODECS = tuple(c for c in CODECS if c != "LZO")


class ConfigError(ValueError):
    """A setting is invalid; the message names it."""


@dataclass
class ClusterConfig:
    name: str
    znode_parent: str
    host: str = "127.0.0.1"
    region_servers: int = 3
    rootdir: str = "/hbase"
    # HDFS
    replication_factor: int = 3           # dfs.replication
    block_size_bytes: int = 1 << 20       # HDFS default 128 MiB; a new block reserves block x replication
    hdfs_capacity_bytes: int = 1 << 40    # raw capacity of the datanodes (the namenode's CapacityTotal)
    quotas: dict[str, dict[str, int]] = field(default_factory=dict)  # path -> {namespace, space_bytes}
    # WAL (HBase: roll at 0.5 x 2 x block size, every hour; maxlogs >= 32)
    wal_roll_size_bytes: int = 256 << 10
    wal_roll_period_s: float = 60.0
    max_logs: int = 8
    # Memstore and regions (HBase: flush at 128 MiB, optional flush every hour, split at 10 GiB)
    memstore_flush_size_bytes: int = 4 << 20
    flush_interval_s: float = 300.0
    region_split_size_bytes: int = 8 << 20
    balancer: bool = True
    # Master log cleaner (HBase: TTL 10 min, chore every 10 min in 2.x)
    log_cleaner_ttl_s: float = 600.0
    log_cleaner_interval_s: float = 10.0
    # Replication sources (HBase: replication.source.nb.capacity 25000 entries, .size.capacity 64 MiB,
    # .sleepforretries 1 s between empty reads and retries, replication.sleep.before.failover 30 s (2.x)).
    replication_batch_entries: int = 5000
    replication_batch_bytes: int = 4 << 20
    replication_sleep_s: float = 0.05
    replication_failover_delay_s: float = 0.5
    replication_rpc_timeout_s: float = 30.0
    # Region server RPC handlers (HBase: hbase.regionserver.handler.count 30, ...replication.handler.count 3):
    # a call holds one for its whole duration; calls finding none free wait in the call queue (/jmx sub=IPC).
    handler_count: int = 30
    replication_handler_count: int = 3
    # Histograms of /jmx (sub=IPC, sub=Server) are published per period (HBase: the 10 s metrics period).
    metrics_period_s: float = 2.0
    # Knobs
    latency_ms: float = 0.0
    zk_session_timeout_s: float = 30.0  # HBase: 90 s; long enough that a busy process never loses it
    client_retry_s: float = 5.0           # how long a request waits for an offline region before IOError
    # Thrift gateways (HBase: one `hbase thrift` / `hbase thrift2` process each): `thrift_gateways` Thrift1
    # servers, the first on thrift_port; `thrift2_gateways` Thrift2 servers (0: none), the first on thrift2_port;
    # the others on free ports. Every gateway keeps its port across restarts (ports.json).
    thrift_gateways: int = 1
    thrift2_gateways: int = 1
    # Tables (TableDescriptorChecker, hbase.table.sanity.checks): the compression codecs the region servers can
    # load (CompressionTest; a stock HBase without native LZO loads all but LZO), and the coprocessor (or split
    # policy) classes installed on them beyond HBase's own. A create naming another is refused.
    compression_codecs: list[str] = field(default_factory=lambda: list(DEFAULT_CODECS))
    coprocessor_classes: list[str] = field(default_factory=list)
    # hbase-site.xml settings served by /conf (and read by replication): bulk-loaded HFiles replicate only with
    # hbase.replication.bulkload.enabled=true and a hbase.replication.cluster.id ("" = unset, HBase's default).
    replication_bulkload_enabled: bool = False
    replication_cluster_id: str = ""
    # Ports: 0 = a free one (endpoints --json tells which)
    thrift_port: int = 0
    thrift2_port: int = 0
    webhdfs_port: int = 0
    master_info_port: int = 0
    rs_ports: list[int] = field(default_factory=list)
    rs_info_ports: list[int] = field(default_factory=list)
    # "module:function" called with the cluster before it starts (part 2's replication plugs in here)
    extensions: list[str] = field(default_factory=list)
    # Kerberos on every channel (`minihbase.security.settings`); empty: an unsecured cluster
    security: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if not isinstance(self.name, str) or not self.name or not all(c.isalnum() or c in "-_" for c in self.name):
            raise ConfigError(f"name must be letters, digits, '-' or '_', got {self.name!r}")
        for key in ("znode_parent", "rootdir"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value.startswith("/") or (value != "/" and value.endswith("/")):
                raise ConfigError(f"{self.name}: {key} must be an absolute path without a trailing '/', "
                                  f"got {value!r}")
        positive_ints = ("region_servers", "replication_factor", "wal_roll_size_bytes", "max_logs",
                         "memstore_flush_size_bytes", "region_split_size_bytes", "replication_batch_entries",
                         "replication_batch_bytes", "handler_count", "replication_handler_count",
                         "hdfs_capacity_bytes")
        for key in positive_ints:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{self.name}: {key} must be a positive integer, got {value!r}")
        if not isinstance(self.block_size_bytes, int) or self.block_size_bytes < 0:
            raise ConfigError(f"{self.name}: block_size_bytes must be >= 0 (0: no block reservation), "
                              f"got {self.block_size_bytes!r}")
        for key in ("wal_roll_period_s", "flush_interval_s", "log_cleaner_ttl_s", "log_cleaner_interval_s",
                    "zk_session_timeout_s", "client_retry_s", "replication_sleep_s",
                    "replication_failover_delay_s", "replication_rpc_timeout_s", "metrics_period_s"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{self.name}: {key} must be a positive number of seconds, got {value!r}")
        if not isinstance(self.latency_ms, (int, float)) or self.latency_ms < 0:
            raise ConfigError(f"{self.name}: latency_ms must be >= 0, got {self.latency_ms!r}")
        for key, least in (("thrift_gateways", 1), ("thrift2_gateways", 0)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= MAX_GATEWAYS:
                raise ConfigError(f"{self.name}: {key} must be an integer from {least} to {MAX_GATEWAYS}, "
                                  f"got {value!r}")
        for key in ("thrift_port", "thrift2_port", "webhdfs_port", "master_info_port"):
            _check_port(self.name, key, getattr(self, key))
        fixed = [(k, getattr(self, k)) for k in ("thrift_port", "thrift2_port", "webhdfs_port", "master_info_port")
                 if getattr(self, k)]
        for i, (key, port) in enumerate(fixed):
            clash = next((k for k, p in fixed[:i] if p == port), None)
            if clash:
                raise ConfigError(f"{self.name}: {key} and {clash} are both {port}; each server needs its own port")
        for key in ("rs_ports", "rs_info_ports"):
            ports = getattr(self, key)
            if not isinstance(ports, list):
                raise ConfigError(f"{self.name}: {key} must be a list of ports, got {ports!r}")
            for p in ports:
                _check_port(self.name, key, p)
        if not isinstance(self.quotas, dict):
            raise ConfigError(f"{self.name}: quotas must be a table of path -> {{namespace, space_bytes}}")
        for path, q in self.quotas.items():
            if not isinstance(path, str) or not path.startswith("/"):
                raise ConfigError(f"{self.name}: quota path must be absolute, got {path!r}")
            if not isinstance(q, dict) or set(q) - {"namespace", "space_bytes"}:
                raise ConfigError(f"{self.name}: quota for {path} takes namespace and space_bytes, got {q!r}")
            for k, v in q.items():
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    raise ConfigError(f"{self.name}: quota {k} for {path} must be a positive integer, got {v!r}")
        if not isinstance(self.compression_codecs, list) or \
                any(not isinstance(c, str) or c.upper() not in CODECS for c in self.compression_codecs):
            raise ConfigError(f"{self.name}: compression_codecs must be a list among {', '.join(CODECS)}, "
                              f"got {self.compression_codecs!r}")
        if not isinstance(self.coprocessor_classes, list) or \
                any(not isinstance(c, str) or not c.strip() for c in self.coprocessor_classes):
            raise ConfigError(f"{self.name}: coprocessor_classes must be a list of class names, "
                              f"got {self.coprocessor_classes!r}")
        if not isinstance(self.replication_bulkload_enabled, bool):
            raise ConfigError(f"{self.name}: replication_bulkload_enabled must be true or false, "
                              f"got {self.replication_bulkload_enabled!r}")
        if not isinstance(self.replication_cluster_id, str):
            raise ConfigError(f"{self.name}: replication_cluster_id must be a string, "
                              f"got {self.replication_cluster_id!r}")
        if not all(isinstance(e, str) and ":" in e for e in self.extensions):
            raise ConfigError(f"{self.name}: extensions must be 'module:function' strings, got {self.extensions!r}")
        if self.security:
            from minihbase.security.settings import SecurityConfigError, SecuritySettings

            try:
                SecuritySettings.from_dict(self.name, self.security)
            except (SecurityConfigError, TypeError) as e:
                raise ConfigError(str(e)) from None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ClusterConfig":
        return cls(**json.loads(text))


def _check_port(name: str, key: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 65536:
        raise ConfigError(f"{name}: {key} must be a port in 0..65535 (0 = any free port), got {value!r}")


FIELDS = {f.name for f in dataclasses.fields(ClusterConfig)}


def build(name: str, settings: dict[str, Any]) -> ClusterConfig:
    unknown = set(settings) - FIELDS
    if unknown:
        raise ConfigError(f"{name}: unknown setting(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(FIELDS))}")
    settings = dict(settings)
    settings.setdefault("znode_parent", f"/hbase-{name}")
    settings["name"] = name
    return ClusterConfig(**settings)


def load_clusters(path: Path = CLUSTERS_TOML) -> dict[str, ClusterConfig]:
    """Every cluster in a clusters.toml: `[defaults]` merged under each `[clusters.<name>]`."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from None
    defaults = data.get("defaults", {})
    clusters = data.get("clusters", {})
    if not clusters:
        raise ConfigError(f"{path}: no [clusters.<name>] table")
    return {name: build(name, {**defaults, **(body or {})}) for name, body in clusters.items()}


def cluster_from_defaults(name: str, overrides: dict[str, Any], path: Path = CLUSTERS_TOML) -> ClusterConfig:
    """A cluster for tests: the file's `[defaults]` (and its `[clusters.<name>]` if any) plus overrides."""
    data = tomllib.loads(Path(path).read_text())
    base = {**data.get("defaults", {}), **data.get("clusters", {}).get(name, {})}
    return build(name, {**base, **overrides})
