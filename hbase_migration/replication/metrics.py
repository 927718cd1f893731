"""Replication lag from region servers' `/jmx`, and the decision "has the peer drained?"

Bean `Hadoop:service=HBase,name=RegionServer,sub=Replication` (HBase's `MetricsReplicationSourceSourceImpl`;
HBase book, "Replication Metrics"): per-queue `source.<queueId>.sizeOfLogQueue` and `ageOfLastShippedOp`, as
gauges (1.x, early 2.x) or time histograms (`Source.<queueId>.ageOfLastShippedOp_*`, later 2.x).

Three layers, each usable alone:

* `parse_replication_bean(payload)`: pure; one `/jmx` JSON body -> per-queue figures.
* `fetch_jmx(...)` / `peer_status(...)`: I/O; one `PeerLagSnapshot` of a peer across every live
  region server (JMX) plus ZooKeeper's queue znodes as a second opinion.
* `decide_drained(history, thresholds)`: pure; a verdict over the last K snapshots with reasons an
  operator can act on.

`canary(...)` is the end-to-end proof: a marker row written on the source and read back on the target.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hbase_migration.clusters import zk

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

REPLICATION_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Replication"

Number = int | float

# Per-queue JMX metric -> QueueMetrics field. `ageOfLastShippedOp` is handled apart (gauge or histogram).
QUEUE_FIGURES: Mapping[str, str] = {
    "sizeOfLogQueue": "size_of_log_queue",
    "shippedOps": "shipped_ops",
    "shippedBatches": "shipped_batches",
    "shippedBytes": "shipped_bytes",
    "logEditsRead": "log_edits_read",
    "logEditsFiltered": "log_edits_filtered",
    "logReadInBytes": "log_read_in_bytes",
    "oldestWalAge": "oldest_wal_age_ms",
    "failedBatches": "failed_batches",
}
AGE = "ageOfLastShippedOp"
# Newer 2.x also publishes per-TABLE keys under the same prefix (`source.<table>.shippedBytes` and an
# age histogram, MetricsReplicationTableSourceImpl). A queue always has its `sizeOfLogQueue` gauge and
# counters registered together, so an id is a queue only when it carries something besides these two.
_TABLE_ONLY_METRICS = frozenset({"shippedBytes", AGE})

# MutableHistogram capitalizes its name: `Source.<id>.ageOfLastShippedOp_max`, `..._99.9th_percentile`.
_HISTOGRAM_KEY = re.compile(
    r"^(?P<scope>Source|Sink)\.(?:(?P<id>.+)\.)?(?P<metric>[A-Za-z]+)_"
    r"(?P<stat>num_ops|min|max|mean|median|\d+(?:\.\d+)?th_percentile|(?:Time|Size)RangeCount_.+)$"
)


class JmxFormatError(ValueError):
    """A `/jmx` body is not what HBase's JMXJsonServlet writes; the message names the key."""


class JmxUnavailable(ConnectionError):
    """A region server's `/jmx` could not be read after every attempt; the message names the server."""


# --------------------------------------------------------------------------------------------------
# Parsing one /jmx body


@dataclass(frozen=True)
class QueueMetrics:
    """One replication source queue on one region server, as its JMX keys report it.

    A figure the bean does not carry is None (never 0): old versions lack `oldestWalAge` and
    `failedBatches`, and a missing figure must not read as "nothing queued".
    `age_ms` is the gauge `source.<id>.ageOfLastShippedOp` when present, else the histogram's
    `Source.<id>.ageOfLastShippedOp_max` (max over the last metrics interval; 0 when nothing was
    recorded in it); `age_form` says which, `age_num_ops` is the histogram's cumulative count.
    """

    queue_id: str
    peer_id: str
    recovered: bool = False
    dead_servers: tuple[str, ...] = ()
    size_of_log_queue: Number | None = None
    age_ms: Number | None = None
    age_form: str | None = None  # "gauge" | "histogram" | None
    age_num_ops: Number | None = None
    shipped_ops: Number | None = None
    shipped_batches: Number | None = None
    shipped_bytes: Number | None = None
    log_edits_read: Number | None = None
    log_edits_filtered: Number | None = None
    log_read_in_bytes: Number | None = None
    oldest_wal_age_ms: Number | None = None
    failed_batches: Number | None = None
    other: Mapping[str, Number] = field(default_factory=dict)  # any other per-queue key, e.g. shippedKBs

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["dead_servers"] = list(self.dead_servers)
        out["other"] = dict(self.other)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "QueueMetrics":
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        values["dead_servers"] = tuple(values.get("dead_servers") or ())
        values["other"] = dict(values.get("other") or {})
        return cls(**values)


@dataclass(frozen=True)
class RegionServerReplication:
    """The `sub=Replication` bean of one region server, split by queue."""

    bean_present: bool
    hostname: str | None = None
    queues: Mapping[str, QueueMetrics] = field(default_factory=dict)  # by queue id
    source: Mapping[str, Number] = field(default_factory=dict)  # global `source.*` (histograms: name_stat)
    sink: Mapping[str, Number] = field(default_factory=dict)  # `sink.*` (histograms: name_stat)
    tables: Mapping[str, Mapping[str, Number]] = field(default_factory=dict)  # per-table keys, newer 2.x

    def queues_of(self, peer_id: str) -> list[QueueMetrics]:
        """This peer's queues: the normal one first, then recovered ones by id."""
        return sorted((q for q in self.queues.values() if q.peer_id == peer_id),
                      key=lambda q: (q.recovered, q.queue_id))


def _number(key: str, value: Any) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JmxFormatError(f"/jmx key {key!r} must be a JSON number, got {value!r}")
    return value


def parse_replication_bean(payload: Mapping[str, Any], servername: str | None = None) -> RegionServerReplication:
    """Parse a `/jmx` body (`{"beans": [...]}`) for the REPLICATION_BEAN (`...,sub=Replication`).

    Accepts both key forms: gauge `source.<id>.ageOfLastShippedOp` (1.x, early 2.x) and histogram
    `Source.<id>.ageOfLastShippedOp_max`/`_num_ops` (later 2.x, 3.x). Queue ids are discovered from the
    key names: `source.<name>` is a global figure, `source.<queueId>.<name>` a queue's (the queue id
    may hold dots, commas and '-' of a recovered queue's dead server names, so the metric name is the
    part after the LAST dot). Peer ids and dead servers are parsed as HBase's ReplicationQueueInfo does.
    Without the bean (a server with no replication source yet) `bean_present` is False. `servername` (the server
    the body came from) lets HBase 3.x's queue ids be read (`queue_identity`).
    """
    if not isinstance(payload, Mapping) or not isinstance(payload.get("beans"), list):
        raise JmxFormatError(f"/jmx body must be an object with a 'beans' list, got {str(payload)[:200]!r}")
    bean = next((b for b in payload["beans"] if isinstance(b, Mapping) and b.get("name") == REPLICATION_BEAN),
                None)
    if bean is None:
        return RegionServerReplication(bean_present=False)

    plain: dict[str, dict[str, Number]] = {}  # queue-or-table id -> metric -> value
    histograms: dict[str, dict[str, Number]] = {}  # id -> "metric_stat" -> value
    source: dict[str, Number] = {}
    sink: dict[str, Number] = {}
    for key, value in bean.items():
        if key.startswith("source."):
            rest = key[len("source."):]
            if "." not in rest:
                source[rest] = _number(key, value)
            else:
                ident, metric = rest.rsplit(".", 1)
                plain.setdefault(ident, {})[metric] = _number(key, value)
        elif key.startswith("sink."):
            sink[key[len("sink."):]] = _number(key, value)
        elif key.startswith(("Source.", "Sink.")):
            match = _HISTOGRAM_KEY.match(key)
            if not match:
                log.debug("ignoring unrecognised /jmx key %r", key)
                continue
            name = f"{match['metric']}_{match['stat']}"
            if match["scope"] == "Sink":
                sink[name] = _number(key, value)
            elif match["id"] is None:
                source[name] = _number(key, value)
            else:
                histograms.setdefault(match["id"], {})[name] = _number(key, value)

    queues: dict[str, QueueMetrics] = {}
    tables: dict[str, dict[str, Number]] = {}
    for ident in sorted(set(plain) | set(histograms)):
        figures = plain.get(ident, {})
        hist = histograms.get(ident, {})
        if not set(figures) - _TABLE_ONLY_METRICS:
            tables[ident] = {**figures, **hist}
            continue
        queues[ident] = _queue_metrics(ident, figures, hist, servername)
    return RegionServerReplication(
        bean_present=True,
        hostname=bean.get("tag.Hostname") if isinstance(bean.get("tag.Hostname"), str) else None,
        queues=queues, source=source, sink=sink, tables=tables,
    )


def queue_identity(queue_id: str, servername: str | None = None) -> zk.QueueId:
    """A queue id as the server that reports it names it. HBase 2.x (ReplicationQueueInfo): `<peer>` is the normal
    queue, `<peer>-<dead1>[-<dead2>...]` a recovered one. HBase 3.x (ReplicationQueueId, queues in the
    `hbase:replication` table): `<peer>-<this server>` is the normal queue, `<peer>-<this server>-<source server>`
    a recovered one (real HBase 3.0.0-alpha-4: `fw1-localhost,15357,1795773130447` on that server, which the 2.x
    reading took for a recovered queue of a dead server). Without `servername`, the 2.x reading."""
    if servername:
        peer_id, _, rest = queue_id.partition("-")
        if rest == servername:
            return zk.QueueId(queue_id, peer_id, False, ())
        if rest.startswith(servername + "-") and zk.is_full_servername(rest[len(servername) + 1:]):
            return zk.QueueId(queue_id, peer_id, True, (rest[len(servername) + 1:],))
    return zk.parse_queue_id(queue_id)


def _queue_metrics(queue_id: str, figures: Mapping[str, Number], hist: Mapping[str, Number],
                   servername: str | None = None) -> QueueMetrics:
    parsed = queue_identity(queue_id, servername)
    values: dict[str, Any] = {QUEUE_FIGURES[m]: v for m, v in figures.items() if m in QUEUE_FIGURES}
    if AGE in figures:
        values.update(age_ms=figures[AGE], age_form="gauge")
    elif f"{AGE}_max" in hist:
        values.update(age_ms=hist[f"{AGE}_max"], age_form="histogram")
    if f"{AGE}_num_ops" in hist:
        values["age_num_ops"] = hist[f"{AGE}_num_ops"]
    other = {m: v for m, v in figures.items() if m not in QUEUE_FIGURES and m != AGE}
    other.update({m: v for m, v in hist.items() if m not in (f"{AGE}_max", f"{AGE}_num_ops")})
    return QueueMetrics(queue_id=queue_id, peer_id=parsed.peer_id, recovered=parsed.recovered,
                        dead_servers=parsed.dead_servers, other=other, **values)


# --------------------------------------------------------------------------------------------------
# Reading /jmx over HTTP


class _Retryable(Exception):
    """A 5xx answer: the servlet or the server is having a moment; worth another try."""


def fetch_jmx(host: str, info_port: int, timeout_s: float = 10.0, attempts: int = 3, *,
              bean: str = REPLICATION_BEAN, backoff_s: float = 0.5, session: Any = None) -> dict[str, Any]:
    """GET `http://host:port/jmx?qry=<bean>` and return the JSON body.

    Connection errors, timeouts and 5xx answers are retried (`attempts` in all, exponential backoff
    from `backoff_s`); after the last one JmxUnavailable names the server and the last error. A 4xx
    or a body that is not JSON is not retried (JmxFormatError / JmxUnavailable at once).
    """
    import requests
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    if not host:
        raise ValueError("fetch_jmx: host is required")
    if isinstance(info_port, bool) or not isinstance(info_port, int) or not 0 < info_port < 65536:
        raise ValueError(f"fetch_jmx: info_port must be an integer port within 1..65535, got {info_port!r}")
    if not timeout_s > 0:
        raise ValueError(f"fetch_jmx: timeout_s must be positive, got {timeout_s!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"fetch_jmx: attempts must be an integer >= 1, got {attempts!r}")
    url = f"http://{host}:{info_port}/jmx"
    if session is None:
        from hbase_migration.clusters import channels

        session = channels.http(None)
    http = session

    def once() -> dict[str, Any]:
        response = http.get(url, params={"qry": bean}, timeout=timeout_s)
        if response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code != 200:
            raise JmxUnavailable(f"region server {host}:{info_port}: GET {url}?qry={bean} answered "
                                 f"HTTP {response.status_code}: {response.text[:200]}")
        try:
            return response.json()
        except ValueError:
            raise JmxFormatError(f"region server {host}:{info_port}: /jmx answered a body that is not "
                                 f"JSON: {response.text[:200]!r}") from None

    retrying = Retrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=backoff_s, max=max(backoff_s, 5.0)),
        retry=retry_if_exception_type((_Retryable, requests.ConnectionError, requests.Timeout)),
        reraise=True,
    )
    try:
        return retrying(once)
    except (_Retryable, requests.ConnectionError, requests.Timeout) as exc:
        cause = str(exc) if isinstance(exc, _Retryable) else f"{type(exc).__name__}: {exc}"
        raise JmxUnavailable(f"region server {host}:{info_port}: /jmx unreadable after {attempts} "
                             f"attempt(s): {cause}") from exc


# --------------------------------------------------------------------------------------------------
# One snapshot of a peer across the cluster

PEER_ENABLED = "ENABLED"


@dataclass(frozen=True)
class ServerReading:
    """What one live region server's `/jmx` said about the peer; `error` set = unreadable."""

    servername: str
    info_port: int | None = None
    queues: tuple[QueueMetrics, ...] = ()  # the peer's queues on this server (normal and recovered)
    bean_present: bool = True
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"servername": self.servername, "info_port": self.info_port, "bean_present": self.bean_present,
                "error": self.error, "queues": [q.to_dict() for q in self.queues]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ServerReading":
        return cls(data["servername"], data.get("info_port"),
                   tuple(QueueMetrics.from_dict(q) for q in data.get("queues", ())),
                   bool(data.get("bean_present", True)), data.get("error"))


@dataclass(frozen=True)
class PeerLagSnapshot:
    """A peer's replication state at one instant: every live server's JMX plus ZooKeeper's queues.

    `peer_state` is ENABLED, DISABLED, ABSENT (no peer znode) or UNREADABLE. `zk_queues` holds the
    peer's queue znodes under every server (live or dead). Plain data: `to_dict()`/`from_dict()`
    round-trip through JSON, so a sensor can keep its history between pokes.
    """

    peer_id: str
    taken_at: float
    peer_state: str
    live_servers: tuple[str, ...]
    servers: tuple[ServerReading, ...]
    zk_queues: tuple[zk.QueueInfo, ...] = ()

    @property
    def unreadable(self) -> list[ServerReading]:
        return [s for s in self.servers if s.error is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "peer_id": self.peer_id, "taken_at": self.taken_at, "peer_state": self.peer_state,
            "live_servers": list(self.live_servers), "servers": [s.to_dict() for s in self.servers],
            "zk_queues": [{"server": q.server, "queue_id": q.queue_id, "peer_id": q.peer_id,
                           "recovered": q.recovered, "dead_servers": list(q.dead_servers),
                           "wals": [[w, p] for w, p in q.wals]} for q in self.zk_queues],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PeerLagSnapshot":
        return cls(
            peer_id=data["peer_id"], taken_at=float(data["taken_at"]), peer_state=data["peer_state"],
            live_servers=tuple(data["live_servers"]),
            servers=tuple(ServerReading.from_dict(s) for s in data["servers"]),
            zk_queues=tuple(zk.QueueInfo(q["server"], q["queue_id"], q["peer_id"], bool(q["recovered"]),
                                         list(q["dead_servers"]), [(w, int(p)) for w, p in q["wals"]])
                            for q in data.get("zk_queues", ())),
        )

    def lag_rows(self) -> list[dict[str, Any]]:
        """The queues as the ledger's lag rows (`Ledger.lag_sample`): those whose figures were all read."""
        return [{"server": s.servername, "queue_id": q.queue_id, "size_of_log_queue": q.size_of_log_queue,
                 "age_of_last_shipped_op_ms": q.age_ms, "shipped_ops": q.shipped_ops, "recovered": q.recovered}
                for s in self.servers for q in s.queues
                if None not in (q.size_of_log_queue, q.age_ms, q.shipped_ops)]

    def summary(self) -> dict[str, Any]:
        """Headline figures for logs and the UI: worst age, total WALs queued, counts."""
        normal = [q for s in self.servers for q in s.queues if not q.recovered]
        ages = [q.age_ms for q in normal if q.age_ms is not None]
        sizes = [q.size_of_log_queue for q in normal if q.size_of_log_queue is not None]
        return {
            "peer_id": self.peer_id, "taken_at": self.taken_at, "peer_state": self.peer_state,
            "live_servers": len(self.live_servers), "unreadable_servers": len(self.unreadable),
            "max_age_ms": max(ages) if ages else None,
            "total_size_of_log_queue": sum(sizes) if sizes else None,
            "recovered_queues": len({(s.servername, q.queue_id) for s in self.servers for q in s.queues
                                     if q.recovered} | {(q.server, q.queue_id) for q in self.zk_queues
                                                        if q.recovered}),
            "zk_wals": sum(len(q.wals) for q in self.zk_queues),
        }


def _read_peer_state(zk_client: Any, znode_parent: str, peer_id: str) -> str:
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk_client.get(zk.peer_state_path(znode_parent, peer_id))
    except NoNodeError:
        return "ABSENT"
    try:
        return zk.decode_peer_state(data).name
    except zk.ZnodeFormatError as exc:
        log.warning("peer %s: unreadable peer-state znode (%s)", peer_id, exc)
        return "UNREADABLE"


def peer_status(cluster: "Cluster", peer_id: str, zk_client: Any, taken_at: float, *,
                timeout_s: float | None = None, attempts: int = 3, max_workers: int = 8) -> PeerLagSnapshot:
    """Snapshot `peer_id` on every live region server of `cluster` (JMX) and in ZooKeeper.

    Live servers come from `<znode_parent>/rs`; each one's `/jmx` is read on `cluster.info_port` when
    set, else on the info port its znode advertises. A server whose `/jmx` cannot be read (or whose
    info port is unknown) is kept as unreadable with the error: never skipped. `taken_at` (epoch
    seconds) is the caller's, so the decision stays a pure function of the samples.
    """
    if not peer_id or "-" in peer_id:
        raise ValueError(f"peer_id must be a non-empty HBase peer id without '-', got {peer_id!r}")
    from hbase_migration.clusters import channels

    timeout = cluster.timeout_s if timeout_s is None else timeout_s
    parent = cluster.znode_parent
    servers = zk.live_region_servers(zk_client, parent)
    zk_queues = tuple(q for q in zk.replication_queues(zk_client, parent) if q.peer_id == peer_id)
    peer_state = _read_peer_state(zk_client, parent, peer_id)

    def read(server: zk.RegionServer) -> ServerReading:
        port = cluster.info_port or server.info_port
        if port is None:
            return ServerReading(server.servername, None, error=(
                "info port unknown: its rs/ znode carries no RegionServerInfo.infoPort and the cluster "
                "sets no info_port"))
        try:
            payload = fetch_jmx(server.host, port, timeout, attempts, session=channels.http(cluster))
            bean = parse_replication_bean(payload, server.servername)
        except (JmxUnavailable, JmxFormatError) as exc:
            log.warning("peer %s: %s", peer_id, exc)
            return ServerReading(server.servername, port, error=str(exc))
        return ServerReading(server.servername, port, tuple(bean.queues_of(peer_id)), bean.bean_present)

    if servers:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(servers))),
                                thread_name_prefix="jmx") as pool:
            readings = tuple(pool.map(read, servers))
    else:
        readings = ()
    return PeerLagSnapshot(peer_id, float(taken_at), peer_state, tuple(s.servername for s in servers),
                           readings, zk_queues)


# --------------------------------------------------------------------------------------------------
# The drain decision (pure)


@dataclass(frozen=True)
class DrainThresholds:
    """When a peer counts as drained.

    stable_samples: K, consecutive snapshots that must all pass (>= 2: counters are compared between
      consecutive snapshots).
    caught_up_queue_size: the sizeOfLogQueue of a caught-up normal queue: 1 on HBase 2.x (the WAL
      being written stays counted), 0 on 1.x; with multiwal, one per WAL group; on 3.x one more per
      synchronous replication peer (`wal_groups`).
    max_lag_ms: the largest ageOfLastShippedOp still called caught up.
    idle_window_s: how long a queue's counters must stay frozen before a stale age is believed (see
      `decide_drained`); longer than the metrics period (10 s by default) so a cached JMX snapshot
      cannot fake an idle source.
    """

    stable_samples: int = 3
    caught_up_queue_size: int = 1
    max_lag_ms: int = 30_000
    idle_window_s: float = 30.0

    def __post_init__(self) -> None:
        for name, low in (("stable_samples", 2), ("caught_up_queue_size", 0), ("max_lag_ms", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"DrainThresholds.{name} must be an integer >= {low}, got {value!r}")
        if isinstance(self.idle_window_s, bool) or not isinstance(self.idle_window_s, (int, float)) \
                or self.idle_window_s < 0:
            raise ValueError(f"DrainThresholds.idle_window_s must be a number >= 0, "
                             f"got {self.idle_window_s!r}")


@dataclass(frozen=True)
class DrainDecision:
    drained: bool
    reasons: tuple[str, ...]  # why not drained, per server/queue; empty when drained
    notes: tuple[str, ...] = ()  # caveats of a positive verdict (stale ages believed idle)
    stable_samples: int = 0  # trailing snapshots that passed (at most K)
    required_samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"drained": self.drained, "reasons": list(self.reasons), "notes": list(self.notes),
                "stable_samples": self.stable_samples, "required_samples": self.required_samples}


def _when(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _normal_queue(reading: ServerReading | None, peer_id: str) -> QueueMetrics | None:
    if reading is None or reading.error is not None:
        return None
    # the peer's own queue on that server: id `<peer>` on HBase 2.x, `<peer>-<that server>` on 3.x (queue_identity)
    return next((q for q in reading.queues if not q.recovered and q.peer_id == peer_id), None)


def _counters(q: QueueMetrics) -> tuple:
    return (q.log_edits_read, q.shipped_ops, q.log_edits_filtered, q.shipped_batches, q.failed_batches)


def idle_span(history: Sequence[PeerLagSnapshot], th: DrainThresholds) -> list[PeerLagSnapshot]:
    """The samples a stale age is judged over: the last K (the stable window) extended back to the newest sample
    taken at least `idle_window_s` before the last one, so the span covers the idle window whatever the poll
    interval. (Judging over the last K alone, as before, meant a stale age was never believed when K polls span
    less than the idle window: with the DAGs' 5 s polls, K=3 spans 10 s < 30 s, and a drained, idle peer whose
    frozen gauge sat above max_lag_ms stayed "not drained" forever.) A history that does not reach that far
    back yet is returned whole; `_idle_stale_ages` then refuses it as too short."""
    if not history:
        return []
    start = max(0, len(history) - th.stable_samples)
    horizon = history[-1].taken_at - th.idle_window_s
    reaching = [i for i, s in enumerate(history) if s.taken_at <= horizon]
    if reaching:
        start = min(start, reaching[-1])
    else:
        start = 0
    return list(history[start:])


def _idle_stale_ages(window: Sequence[PeerLagSnapshot], th: DrainThresholds) -> dict[str, str]:
    """Servers whose over-threshold age is a stale gauge of an idle source, with a note for each.

    HBase 2.x's gauge keeps the age of the last shipped batch forever when no new edit arrives
    (§3.3), so an idle, fully shipped source can show a large age. Believed idle only when, over the
    whole window (spanning at least idle_window_s): the peer is ENABLED (a disabled peer also freezes
    everything), the queue stays at the caught-up size, the gauge value is exactly the same (a retrying
    shipper refreshes it upwards), every counter is frozen, and cumulatively nothing was read without
    being shipped or filtered (logEditsRead - logEditsFiltered <= shippedOps; shippedOps counts rows,
    at least one per shipped edit). Anything less keeps the queue "not drained": write the canary,
    whose shipment refreshes the age.
    """
    if len(window) < 2 or window[-1].taken_at - window[0].taken_at < th.idle_window_s:
        return {}
    peer_id = window[-1].peer_id
    notes: dict[str, str] = {}
    for reading in window[-1].servers:
        last = _normal_queue(reading, peer_id)
        if last is None or last.age_ms is None or last.age_ms <= th.max_lag_ms:
            continue
        series = [_normal_queue(next((r for r in s.servers if r.servername == reading.servername), None),
                                peer_id) for s in window]
        if any(q is None for q in series) or any(s.peer_state != PEER_ENABLED for s in window):
            continue
        if any(q.age_form != "gauge" or q.age_ms != last.age_ms for q in series):
            continue
        if any(q.size_of_log_queue is None or q.size_of_log_queue > th.caught_up_queue_size for q in series):
            continue
        read, shipped, filtered, batches, _ = _counters(last)
        if None in (read, shipped, filtered, batches) or any(_counters(q) != _counters(last) for q in series):
            continue
        if read - filtered > shipped:
            continue
        notes[reading.servername] = (
            f"{reading.servername} queue {last.queue_id}: ageOfLastShippedOp={last.age_ms:g} ms is stale: no "
            f"edit read, shipped or failed for {window[-1].taken_at - window[0].taken_at:.0f}s, queue at "
            f"{last.size_of_log_queue:g} WAL(s), nothing read-but-unshipped; treated as idle (the canary "
            "proves it end to end)")
    return notes


def _sample_reasons(sample: PeerLagSnapshot, prev: PeerLagSnapshot | None, th: DrainThresholds,
                    idle: Mapping[str, str]) -> list[str]:
    peer = sample.peer_id
    reasons: list[str] = []
    if sample.peer_state != PEER_ENABLED:
        reasons.append(f"peer {peer} is {sample.peer_state} in ZooKeeper: nothing ships until it is enabled"
                       if sample.peer_state == "DISABLED" else f"peer {peer} state is {sample.peer_state} "
                       "in ZooKeeper")
    if not sample.live_servers:
        reasons.append("no live region server registered in ZooKeeper")
    live = set(sample.live_servers)
    readings = {r.servername: r for r in sample.servers}
    prev_readings = {r.servername: r for r in prev.servers} if prev is not None else {}
    zk_normal = {q.server: q for q in sample.zk_queues if not q.recovered and q.peer_id == peer}

    for server in sample.live_servers:
        reading = readings.get(server)
        if reading is None:
            reasons.append(f"{server}: live but not read in this sample")
            continue
        if reading.error is not None:
            reasons.append(f"{server}: /jmx unreadable: {reading.error}")
            continue
        q = _normal_queue(reading, peer)
        if q is None:
            zq = zk_normal.get(server)
            if not reading.bean_present:
                reasons.append(f"{server}: its /jmx has no sub=Replication bean: no replication source runs there"
                               + (f" while ZooKeeper holds its queue with {len(zq.wals)} WAL(s)" if zq else ""))
            elif zq is not None:
                reasons.append(f"{server}: reports no replication source for peer {peer} while ZooKeeper "
                               f"holds its queue with {len(zq.wals)} WAL(s)")
            else:
                reasons.append(f"{server}: reports no replication source for peer {peer} (not started yet, "
                               "or the peer was never refreshed on this server)")
            continue
        where = f"{server} queue {q.queue_id}"
        if q.size_of_log_queue is None:
            reasons.append(f"{where}: sizeOfLogQueue not reported")
        elif q.size_of_log_queue > th.caught_up_queue_size:
            reasons.append(f"{where}: sizeOfLogQueue={q.size_of_log_queue:g} WAL(s), caught up is "
                           f"<= {th.caught_up_queue_size}")
        if q.age_ms is None:
            reasons.append(f"{where}: ageOfLastShippedOp not reported")
        elif q.age_ms > th.max_lag_ms and server not in idle:
            reasons.append(f"{where}: ageOfLastShippedOp={q.age_ms:g} ms > {th.max_lag_ms} ms")
        if prev is None:
            continue
        before = _normal_queue(prev_readings.get(server), peer)
        if before is None:
            reasons.append(f"{where}: no reading in the previous sample to compare its counters with")
            continue
        now_c, then_c = _counters(q), _counters(before)
        if None in now_c[:3] or None in then_c[:3]:
            reasons.append(f"{where}: logEditsRead/shippedOps/logEditsFiltered not all reported")
            continue
        deltas = [a - b for a, b in zip(now_c, then_c) if a is not None and b is not None]
        if any(d < 0 for d in deltas):
            reasons.append(f"{where}: counters went backwards since the previous sample (source restarted?); "
                           "progress cannot be judged yet")
            continue
        d_read, d_shipped, d_filtered = now_c[0] - then_c[0], now_c[1] - then_c[1], now_c[2] - then_c[2]
        if d_read > 0 and d_shipped + d_filtered == 0:
            reasons.append(f"{where}: read {d_read:g} WAL edit(s) since the previous sample but shipped and "
                           "filtered none: edits are waiting to ship")
        if now_c[4] is not None and then_c[4] is not None and now_c[4] > then_c[4]:
            reasons.append(f"{where}: {now_c[4] - then_c[4]:g} batch(es) failed to ship since the previous "
                           "sample")

    for reading in sample.servers:
        if reading.error is None:
            for q in reading.queues:
                if q.recovered and q.peer_id == peer:
                    reasons.append(f"{reading.servername}: recovered queue {q.queue_id} still running "
                                   f"(sizeOfLogQueue={q.size_of_log_queue}) for dead server(s) "
                                   f"{', '.join(q.dead_servers) or '?'}")
    for zq in (z for z in sample.zk_queues if z.peer_id == peer):
        if zq.server not in live:
            reasons.append(f"ZooKeeper: queue {zq.queue_id} ({len(zq.wals)} WAL(s)) under dead server "
                           f"{zq.server} not claimed by a live server yet")
        elif zq.recovered:
            reasons.append(f"ZooKeeper: recovered queue {zq.queue_id} ({len(zq.wals)} WAL(s)) under "
                           f"{zq.server} not finished")
    return reasons


def decide_drained(history: Sequence[PeerLagSnapshot],
                   thresholds: DrainThresholds | None = None) -> DrainDecision:
    """Drained only when each of the last K snapshots (K = thresholds.stable_samples) passes:

    * the peer is ENABLED and at least one region server is live;
    * every live server was read (no unreadable /jmx) and reports a normal queue for the peer;
    * each normal queue: sizeOfLogQueue <= caught_up_queue_size, ageOfLastShippedOp <= max_lag_ms
      (or a stale age proven idle over at least `idle_window_s` of history, however many polls that
      takes: see `idle_span` and `_idle_stale_ages`);
    * counters versus the previous snapshot (the one before the window too, when the history has it):
      if logEditsRead moved, shippedOps + logEditsFiltered moved too (read but neither shipped nor
      filtered = edits waiting in the reader/shipper); failedBatches did not move; no counter went
      backwards (a restarted source cannot be judged); the server was read in the previous sample;
    * no recovered queue for the peer, in JMX or in ZooKeeper, and no queue of the peer under a dead
      server in ZooKeeper (not claimed yet: its WALs have not started to ship).

    The movement rule is deliberately "moved", not "balanced": shippedOps counts rows (>= 1 per edit)
    and a batch in flight at sampling time is normal under a live writer, so an equality test would
    flap; a stalled shipper shows as reads with no shipments, or as a growing age.
    Raises ValueError when the history mixes peers or is not in time order.
    """
    th = thresholds or DrainThresholds()
    k = th.stable_samples
    if not history:
        return DrainDecision(False, ("no sample taken yet",), (), 0, k)
    for i, sample in enumerate(history):
        if sample.peer_id != history[0].peer_id:
            raise ValueError(f"history mixes peers: sample {i} is for peer {sample.peer_id!r}, "
                             f"sample 0 for {history[0].peer_id!r}")
        if i and sample.taken_at <= history[i - 1].taken_at:
            raise ValueError(f"history must be in time order: sample {i} taken_at={sample.taken_at} <= "
                             f"sample {i - 1} taken_at={history[i - 1].taken_at}")
    start = max(0, len(history) - k)
    window = list(history[start:])
    idle = _idle_stale_ages(idle_span(history, th), th)
    per_sample = [
        _sample_reasons(s, history[start + i - 1] if start + i > 0 else None, th, idle)
        for i, s in enumerate(window)
    ]
    trailing = 0
    for reasons in reversed(per_sample):
        if reasons:
            break
        trailing += 1
    if trailing >= k:
        return DrainDecision(True, (), tuple(idle[s] for s in sorted(idle)), trailing, k)
    out: list[str] = list(dict.fromkeys(per_sample[-1]))
    if not out:
        out.append(f"drained for only {trailing} consecutive sample(s), {k} needed")
        failing = len(window) - trailing - 1
        if failing >= 0:
            when = _when(window[failing].taken_at)
            out.extend(f"at {when}: {r}" for r in dict.fromkeys(per_sample[failing]))
    return DrainDecision(False, tuple(out), (), trailing, k)


# --------------------------------------------------------------------------------------------------
# The canary: end-to-end proof that an edit written now on the source reaches the target

CANARY_ROW_PREFIX = b"__hbase_migration_canary__/"


class CanaryTimeout(TimeoutError):
    """The canary row did not show up on the target within the timeout."""


def _thrift_address(endpoint: Any, what: str) -> tuple[str, int]:
    if hasattr(endpoint, "thrift_host"):
        return endpoint.thrift_host, int(endpoint.thrift_port)
    if isinstance(endpoint, (tuple, list)) and len(endpoint) == 2:
        return str(endpoint[0]), int(endpoint[1])
    if isinstance(endpoint, str) and ":" in endpoint:
        host, _, port = endpoint.rpartition(":")
        return host, int(port)
    raise ValueError(f"{what} must be a Cluster, a (host, port) pair or 'host:port', got {endpoint!r}")


def _canary_connection(endpoint: Any, host: str, port: int, timeout_s: float) -> Any:
    """An open happybase connection to the canary's gateway, through `channels` (the cluster's security when
    `endpoint` is a Cluster; a plain one for a bare host/port)."""
    from hbase_migration.clusters import channels

    connection = channels.thrift1(endpoint if hasattr(endpoint, "thrift_host") else None, f"{host}:{port}",
                                  timeout_s)
    connection.open()
    return connection


def canary(source_thrift: Any, target_thrift: Any, table: str, family: str | None, timeout_s: float = 60.0, *,
           poll_s: float = 0.05, max_poll_s: float = 0.5, connect_timeout_s: float = 10.0) -> float:
    """Write a marker cell on the source, wait until the target reads it back, delete it on both.

    The row key is `__hbase_migration_canary__/<uuid4>` in `table`, column `<family>:canary` (None: the
    table's first family on the source); the family must be one the peer replicates. Returns the delay in
    seconds from just before the put on the source to the first read on the target that returns the marker
    (polling backs off from `poll_s` to `max_poll_s`). Raises CanaryTimeout (after deleting the row) when it
    is not seen within `timeout_s`. The row is deleted on the source, and that delete replicates after the put:
    both clusters end with the same delete markers (until a major compaction), so a later verification, raw ones
    included (the native path compares markers), sees nothing of it. Only a canary not seen is deleted on the
    target too (its marker, at the target's clock, masks the put should it arrive later).
    """
    if not table or (family is not None and (not family or ":" in family)):
        raise ValueError(f"canary: a table and a family name without ':' are required, "
                         f"got {table!r}, {family!r}")
    if not timeout_s > 0:
        raise ValueError(f"canary: timeout_s must be positive, got {timeout_s!r}")
    src_host, src_port = _thrift_address(source_thrift, "source_thrift")
    dst_host, dst_port = _thrift_address(target_thrift, "target_thrift")
    marker = uuid.uuid4().hex
    row = CANARY_ROW_PREFIX + marker.encode()
    value = marker.encode()
    connections: list[tuple[Any, str]] = []
    seen = False
    try:
        source = _canary_connection(source_thrift, src_host, src_port, connect_timeout_s)
        connections.append((source, "source"))
        target = _canary_connection(target_thrift, dst_host, dst_port, connect_timeout_s)
        connections.append((target, "target"))
        src_table, dst_table = source.table(table), target.table(table)
        family = family or sorted(src_table.families())[0].decode()
        column = f"{family}:canary".encode()
        started = time.monotonic()
        src_table.put(row, {column: value})
        deadline = started + timeout_s
        wait = poll_s
        while True:
            if dst_table.row(row, columns=[column]).get(column) == value:
                seen = True
                delay = time.monotonic() - started
                log.info("canary %s reached %s:%s table %s after %.3fs",
                         marker, dst_host, dst_port, table, delay)
                return delay
            if time.monotonic() >= deadline:
                raise CanaryTimeout(
                    f"canary row {row.decode()} written on {src_host}:{src_port} table {table} was not "
                    f"readable on {dst_host}:{dst_port} after {timeout_s:g}s: replication is lagging or "
                    "not running")
            time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
            wait = min(wait * 2, max_poll_s)
    finally:
        # The source's delete replicates (the same markers on both sides: a raw verification sees no canary); the
        # target's own, a marker the source never has, only for a put that may still arrive there.
        for conn, label in connections:
            try:
                if label == "source" or not seen:
                    conn.table(table).delete(row)
            except Exception as exc:  # cleanup must not hide the verdict; the row is under a reserved prefix
                log.warning("canary: could not delete %s on the %s: %s", row.decode(), label, exc)
            finally:
                conn.close()
