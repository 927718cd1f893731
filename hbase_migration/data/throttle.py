"""The copy's load-aware throttle: the source's region servers say how hard the copy may read them.

gh-ost's `--max-load` / `--critical-load`, for HBase. While a copy runs, the Spark driver samples every live
source region server's `/jmx` every `sample_s` seconds: `Hadoop:service=HBase,name=RegionServer,sub=IPC`
(`queueSize`, `numCallsInGeneralQueue`, `numActiveHandler`, ...) and the latency histograms of
`...,sub=Server` (`Put_99th_percentile`, `Get_99th_percentile`, ...). Past `max_load` (any metric at or above
its threshold on any server) the copy slows down; past `critical_load` it pauses; paused longer than
`max_pause_s`, the copy gives up: every partition still running or not started fails with the reason, and the
finished ones stay recorded, so a retry resumes.

Where it samples: on the driver, once for the whole copy (not in each Spark task: a hundred tasks each reading
every region server's /jmx every few seconds would itself load the servers, and each task would decide alone).
The driver publishes its current decision on a small HTTP endpoint (`LoadGovernor.url`, on the address the
executors already use to reach the driver); each task's `LoadGate` reads it at most once a second and applies it
between scan batches. Decisions go to the driver's log (the Airflow task log) and to the ledger.

Layers, each usable alone:
* `parse_limits(text)`, `parse_server_load(ipc, server)`, `decide_load(state, sample, limits)`, `gate_sleep`:
  pure, unit-tested exactly;
* `sample_load(cluster)`: I/O, one `LoadSample` of every live region server;
* `LoadGovernor` (driver: sampling thread + decision endpoint) and `LoadGate` (task side).
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

IPC_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=IPC"
SERVER_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Server"

# MetricsHBaseServerSource gauges (HBase 2.x names) a limit may name.
IPC_METRICS = ("queueSize", "numCallsInGeneralQueue", "numCallsInReplicationQueue", "numCallsInPriorityQueue",
               "numActiveHandler", "numActiveGeneralHandler", "numActiveReplicationHandler", "numOpenConnections")
# MetricsRegionServerSource time histograms (ms in the handler) and the statistics JMX shows for each.
SERVER_OPS = ("Get", "Put", "PutBatch", "Delete", "DeleteBatch", "ScanTime", "Increment", "Append", "CheckAndPut",
              "CheckAndDelete", "CheckAndMutate")
_SERVER_KEY = re.compile(r"^(?P<op>[A-Za-z]+)_(?P<stat>min|max|mean|median|\d+(?:\.\d+)?th_percentile)$")
# Shorthands: the worst 99th percentile of the write calls, and of the point reads (what clients feel). Scans
# are left out of read_p99_ms on purpose: the copy's own scans are long calls by design; name ScanTime_* to
# limit them.
WRITE_OPS = ("Put", "PutBatch", "Delete", "DeleteBatch", "Increment", "Append", "CheckAndPut", "CheckAndDelete",
             "CheckAndMutate")
DERIVED = {"write_p99_ms": tuple(f"{op}_99th_percentile" for op in WRITE_OPS),
           "read_p99_ms": ("Get_99th_percentile",)}

DEFAULT_MAX_LOAD = "numCallsInGeneralQueue=10,write_p99_ms=100,read_p99_ms=200"
DEFAULT_CRITICAL_LOAD = "numCallsInGeneralQueue=100,write_p99_ms=1000"
DEFAULT_MAX_PAUSE_S = 600.0
DEFAULT_SAMPLE_S = 5.0

FULL, SLOW, PAUSED, ABORTED = "full", "slow", "paused", "aborted"


class LoadLimitError(ValueError):
    """A load limit cannot be read; the message names the part."""


class LoadAbort(RuntimeError):
    """The source stayed past critical_load longer than max_pause_s: the copy gives up (resumable)."""


# --------------------------------------------------------------------------------------------------
# Limits (pure)


def known_metric(name: str) -> bool:
    if name in IPC_METRICS or name in DERIVED:
        return True
    match = _SERVER_KEY.match(name)
    return bool(match and match["op"] in SERVER_OPS)


def parse_limits(text: Any, what: str = "load limit") -> dict[str, float]:
    """`"numCallsInGeneralQueue=10, write_p99_ms=100"` -> {metric: threshold}, in the order given.

    Metrics: the IPC gauges (IPC_METRICS), a Server histogram statistic (`Put_99th_percentile`, `Get_max`,
    `ScanTime_mean`, ...), or the shorthands `write_p99_ms` / `read_p99_ms`. Thresholds are positive numbers.
    An empty text is no limit ({}).
    """
    if text is None:
        return {}
    if not isinstance(text, str):
        raise LoadLimitError(f"{what} must be text like 'numCallsInGeneralQueue=10,write_p99_ms=100', got {text!r}")
    limits: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not name or not value:
            raise LoadLimitError(f"{what}: {part!r} is not metric=threshold")
        if not known_metric(name):
            raise LoadLimitError(
                f"{what}: unknown metric {name!r}; use one of {', '.join(IPC_METRICS)}, "
                f"{', '.join(DERIVED)}, or <op>_<stat> of sub=Server with op in {', '.join(SERVER_OPS)} and stat "
                "min, max, mean, median or NNth_percentile (e.g. Put_99th_percentile)")
        try:
            threshold = float(value)
        except ValueError:
            raise LoadLimitError(f"{what}: threshold of {name} must be a number, got {value!r}") from None
        if not threshold > 0 or threshold == float("inf"):
            raise LoadLimitError(f"{what}: threshold of {name} must be a positive number, got {value!r}")
        if name in limits:
            raise LoadLimitError(f"{what}: {name} is given twice")
        limits[name] = threshold
    return limits


def limits_text(limits: Mapping[str, float]) -> str:
    """The canonical text of parsed limits (`parse_limits(limits_text(x)) == x`)."""
    return ",".join(f"{name}={value:g}" for name, value in limits.items())


@dataclass(frozen=True)
class LoadLimits:
    """When the copy slows down (`max_load`), pauses (`critical_load`) and gives up (`max_pause_s` paused).

    The factor is AIMD, as TCP's congestion window: a sample past max_load halves it (`decrease`, down to
    `min_factor`); a sample under every limit adds `increase` (up to 1.0, full speed). After a pause the copy
    resumes at `min_factor`. `sample_s` is the gap between two samples.
    """

    max_load: Mapping[str, float] = field(default_factory=dict)
    critical_load: Mapping[str, float] = field(default_factory=dict)
    max_pause_s: float = DEFAULT_MAX_PAUSE_S
    sample_s: float = DEFAULT_SAMPLE_S
    min_factor: float = 0.05
    decrease: float = 0.5
    increase: float = 0.1

    def __post_init__(self) -> None:
        for name in ("max_load", "critical_load"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = parse_limits(value, name)
            object.__setattr__(self, name, dict(value))
        if not self.max_load and not self.critical_load:
            raise LoadLimitError("max_load and critical_load are both empty: nothing to watch")
        for metric, critical in self.critical_load.items():
            if metric in self.max_load and critical < self.max_load[metric]:
                raise LoadLimitError(f"critical_load {metric}={critical:g} is below max_load's "
                                     f"{self.max_load[metric]:g}: the copy would pause before it slows down")
        for name in ("max_pause_s", "sample_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise LoadLimitError(f"{name} must be a positive number of seconds, got {value!r}")
        if not 0 < self.min_factor <= 1 or not 0 < self.decrease < 1 or not 0 < self.increase <= 1:
            raise LoadLimitError(f"min_factor must be in (0, 1], decrease in (0, 1), increase in (0, 1]; got "
                                 f"{self.min_factor}, {self.decrease}, {self.increase}")

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys([*self.max_load, *self.critical_load]))

    def to_dict(self) -> dict[str, Any]:
        return {"max_load": limits_text(self.max_load), "critical_load": limits_text(self.critical_load),
                "max_pause_s": self.max_pause_s, "sample_s": self.sample_s}

    @classmethod
    def from_options(cls, max_load: str | None, critical_load: str | None, max_pause_s: float | None = None,
                     sample_s: float | None = None) -> "LoadLimits | None":
        """None when neither limit is set (no load control)."""
        max_l, critical_l = parse_limits(max_load, "max_load"), parse_limits(critical_load, "critical_load")
        if not max_l and not critical_l:
            return None
        return cls(max_l, critical_l, DEFAULT_MAX_PAUSE_S if max_pause_s is None else max_pause_s,
                   DEFAULT_SAMPLE_S if sample_s is None else sample_s)


# --------------------------------------------------------------------------------------------------
# One region server's figures (pure)


def _bean(payload: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("beans"), list):
        return None
    return next((b for b in payload["beans"] if isinstance(b, Mapping) and b.get("name") == name), None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_server_load(ipc_payload: Mapping[str, Any] | None,
                      server_payload: Mapping[str, Any] | None) -> dict[str, float]:
    """The load figures of one region server from its two `/jmx` bodies: every known IPC gauge and Server
    histogram statistic present, plus the shorthands (a shorthand is there when one of its keys is)."""
    values: dict[str, float] = {}
    ipc = _bean(ipc_payload, IPC_BEAN) or {}
    for key in IPC_METRICS:
        if _is_number(ipc.get(key)):
            values[key] = float(ipc[key])
    server = _bean(server_payload, SERVER_BEAN) or {}
    for key, value in server.items():
        if _is_number(value) and known_metric(key) and key not in DERIVED:
            values[key] = float(value)
    for name, keys in DERIVED.items():
        present = [values[k] for k in keys if k in values]
        if present:
            values[name] = max(present)
    return values


@dataclass(frozen=True)
class ServerLoad:
    servername: str
    values: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None  # set: this server's /jmx could not be read


@dataclass(frozen=True)
class LoadSample:
    """Every live region server's load figures at one instant (epoch seconds)."""

    taken_at: float
    servers: tuple[ServerLoad, ...] = ()


# --------------------------------------------------------------------------------------------------
# The decision (pure)


@dataclass(frozen=True)
class LoadState:
    """The throttle's state after a sample: `factor` of the copy's natural rate (1.0 full speed, 0.0 paused)."""

    factor: float = 1.0
    state: str = FULL  # full | slow | paused | aborted
    paused_since: float | None = None
    reason: str = "no sample yet"
    worst: Mapping[str, tuple[float, str]] = field(default_factory=dict)  # metric -> (value, server)
    decided_at: float | None = None
    samples: int = 0

    @property
    def paused(self) -> bool:
        return self.state == PAUSED

    @property
    def aborted(self) -> bool:
        return self.state == ABORTED

    def to_dict(self) -> dict[str, Any]:
        return {"factor": self.factor, "state": self.state, "paused_since": self.paused_since,
                "reason": self.reason, "worst": {k: [v, s] for k, (v, s) in self.worst.items()},
                "decided_at": self.decided_at, "samples": self.samples}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LoadState":
        return cls(float(data["factor"]), data["state"], data.get("paused_since"), data.get("reason", ""),
                   {k: (float(v[0]), str(v[1])) for k, v in (data.get("worst") or {}).items()},
                   data.get("decided_at"), int(data.get("samples", 0)))


def _over(limits: Mapping[str, float], worst: Mapping[str, tuple[float, str]]) -> list[str]:
    return [f"{m}={worst[m][0]:g} on {worst[m][1]} >= {limit:g}" for m, limit in limits.items()
            if m in worst and worst[m][0] >= limit]


def decide_load(state: LoadState, sample: LoadSample, limits: LoadLimits) -> LoadState:
    """The next state from the previous one and a sample.

    * aborted stays aborted;
    * any metric at or above its critical_load on any server: paused (factor 0); paused for `max_pause_s` or
      longer (since the first critical sample): aborted;
    * back under every critical limit after a pause: resume at `min_factor`;
    * any metric at or above its max_load: factor x `decrease` (not below `min_factor`);
    * a server unreadable (or none live): the factor is held (nothing is known about that server);
    * otherwise factor + `increase` (up to 1.0).
    A metric no readable server reports is named in the reason and cannot trigger anything.
    """
    if state.aborted:
        return state
    now = sample.taken_at
    readable = [s for s in sample.servers if s.error is None]
    unreadable = [s for s in sample.servers if s.error is not None]
    worst: dict[str, tuple[float, str]] = {}
    for s in readable:
        for metric in limits.metrics:
            if metric in s.values and (metric not in worst or s.values[metric] > worst[metric][0]):
                worst[metric] = (s.values[metric], s.servername)
    notes = []
    missing = [m for m in limits.metrics if m not in worst]
    if missing and readable:
        notes.append(f"not reported by any server: {', '.join(missing)}")
    if unreadable:
        notes.append("unreadable: " + "; ".join(f"{s.servername}: {s.error}" for s in unreadable))
    if not sample.servers:
        notes.append("no live region server")
    base = replace(state, worst=worst, decided_at=now, samples=state.samples + 1)

    def reason(head: str) -> str:
        return "; ".join([head, *notes])

    critical = _over(limits.critical_load, worst)
    if critical:
        since = state.paused_since if state.paused_since is not None else now
        paused_for = now - since
        if paused_for >= limits.max_pause_s:
            return replace(base, factor=0.0, state=ABORTED, paused_since=since, reason=reason(
                f"paused {paused_for:.0f}s (max_pause_s {limits.max_pause_s:g}) and still past critical_load: "
                + ", ".join(critical)))
        return replace(base, factor=0.0, state=PAUSED, paused_since=since,
                       reason=reason(f"past critical_load, paused {paused_for:.0f}s: " + ", ".join(critical)))
    if state.paused:
        return replace(base, factor=limits.min_factor, state=SLOW, paused_since=None,
                       reason=reason(f"under critical_load again: resuming at factor {limits.min_factor:g}"))
    over = _over(limits.max_load, worst)
    if over:
        factor = round(max(limits.min_factor, state.factor * limits.decrease), 4)
        return replace(base, factor=factor, state=SLOW, reason=reason("past max_load: " + ", ".join(over)))
    if unreadable or not sample.servers:
        return replace(base, reason=reason(f"factor held at {state.factor:g}"))
    factor = round(min(1.0, state.factor + limits.increase), 4)
    return replace(base, factor=factor, state=FULL if factor >= 1.0 else SLOW,
                   reason=reason("under max_load" + ("" if factor >= 1.0 else f": recovering to {factor:g}")))


def paced_until(start: float, rows: int, reference_rows_per_s: float, factor: float) -> float:
    """When a batch of `rows` begun at `start` may be followed by the next one, for the task to run at `factor`
    of its reference rate (its own rate at full speed)."""
    return start + rows / (reference_rows_per_s * factor)


def rescaled(now: float, until: float, old_factor: float, new_factor: float) -> float:
    """The end of a rest begun at `old_factor` when the factor becomes `new_factor`: what is left of it scales
    with old/new (half the factor, twice the rest)."""
    return now + max(0.0, until - now) * old_factor / new_factor


# --------------------------------------------------------------------------------------------------
# Sampling (I/O)


def sample_load(cluster: "Cluster", taken_at: float | None = None, *, timeout_s: float | None = None,
                zk_client: Any = None, max_workers: int = 8) -> LoadSample:
    """One sample of every live region server of `cluster` (ZooKeeper's `rs/`): its IPC and Server beans."""
    from concurrent.futures import ThreadPoolExecutor

    from hbase_migration.clusters import channels, zk
    from hbase_migration.replication.metrics import JmxFormatError, JmxUnavailable, fetch_jmx

    timeout = cluster.timeout_s if timeout_s is None else timeout_s
    taken_at = time.time() if taken_at is None else taken_at
    if zk_client is None:
        with zk.connect(cluster, timeout=timeout) as client:
            servers = zk.live_region_servers(client, cluster.znode_parent)
    else:
        servers = zk.live_region_servers(zk_client, cluster.znode_parent)

    def read(server: Any) -> ServerLoad:
        port = cluster.info_port or server.info_port
        if port is None:
            return ServerLoad(server.servername, error="info port unknown")
        try:
            http = channels.http(cluster)
            ipc = fetch_jmx(server.host, port, timeout, 1, bean=IPC_BEAN, session=http)
            srv = fetch_jmx(server.host, port, timeout, 1, bean=SERVER_BEAN, session=http)
        except (JmxUnavailable, JmxFormatError) as exc:
            return ServerLoad(server.servername, error=str(exc))
        return ServerLoad(server.servername, parse_server_load(ipc, srv))

    if not servers:
        return LoadSample(taken_at, ())
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(servers))), thread_name_prefix="load") as pool:
        return LoadSample(taken_at, tuple(pool.map(read, servers)))


# --------------------------------------------------------------------------------------------------
# The driver's governor: samples, decides, logs, records, and serves the decision to the tasks


class LoadGovernor:
    """Samples the source every `limits.sample_s`, keeps the current `LoadState`, and serves it as JSON on
    `url` (GET) for the tasks' `LoadGate`s. `record(state)` is called for every decision (the ledger);
    decisions that change the state or the factor are logged at INFO, every one at DEBUG."""

    def __init__(self, cluster: "Cluster", limits: LoadLimits, *, host: str = "127.0.0.1",
                 record: Callable[[LoadState], None] | None = None,
                 sampler: Callable[[], LoadSample] | None = None, clock: Callable[[], float] = time.time,
                 label: str = "copy"):
        self.cluster = cluster
        self.limits = limits
        self.host = host
        self.record = record
        self.sampler = sampler or (lambda: sample_load(cluster, clock()))
        self.clock = clock
        self.label = label
        self.state = LoadState()
        self.history: list[LoadState] = []  # every decision, kept for the summary (a few thousand at most)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: Any = None

    # -- the endpoint -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the load governor is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/decision"

    def _serve(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        governor = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.split("?")[0] != "/decision":
                    self.send_error(404)
                    return
                body = json.dumps(governor.current().to_dict()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # the tasks poll every second: no access log
                pass

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        # a short poll: stop() waits for it when the copy ends
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name="load-decision", daemon=True).start()

    # -- sampling ---------------------------------------------------------------------------------------

    def current(self) -> LoadState:
        with self._lock:
            return self.state

    def step(self) -> LoadState:
        """Take one sample and decide (the thread's body; callable directly)."""
        try:
            sample = self.sampler()
        except Exception as exc:  # ZooKeeper unreachable: nothing is known, the factor is held
            sample = LoadSample(self.clock(), (ServerLoad("*", error=f"{type(exc).__name__}: {exc}"),))
        with self._lock:
            before = self.state
            self.state = decide_load(before, sample, self.limits)
            state = self.state
            self.history.append(state)
        changed = (state.state, state.factor) != (before.state, before.factor)
        level = logging.WARNING if state.state in (PAUSED, ABORTED) and changed else (
            logging.INFO if changed else logging.DEBUG)
        log.log(level, "load throttle (%s): %s, factor %.3g: %s", self.label, state.state, state.factor,
                state.reason)
        if self.record is not None:
            try:
                self.record(state)
            except Exception as exc:  # bookkeeping must not stop the throttle
                log.warning("load throttle: decision not recorded: %s", exc)
        return state

    def _run(self) -> None:
        while not self._stop.is_set():
            state = self.step()
            if state.aborted:
                log.error("load throttle (%s): giving up: %s. Finished partitions are recorded; re-run the copy "
                          "to resume once the source is quieter", self.label, state.reason)
                return
            self._stop.wait(self.limits.sample_s)

    def start(self) -> "LoadGovernor":
        self._serve()
        log.info("load throttle (%s): max_load %s, critical_load %s, max pause %gs, a sample every %gs; decision "
                 "served at %s", self.label, limits_text(self.limits.max_load) or "-",
                 limits_text(self.limits.critical_load) or "-", self.limits.max_pause_s, self.limits.sample_s,
                 self.url)
        self._thread = threading.Thread(target=self._run, name="load-governor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """Stop sampling and serving; the copy's summary of what the throttle did."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(30.0, 2 * self.limits.sample_s))
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        return summarize_decisions(self.history, self.limits)

    def __enter__(self) -> "LoadGovernor":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def summarize_decisions(history: Sequence[LoadState], limits: LoadLimits) -> dict[str, Any]:
    """What the copy's JSON summary says about the throttle (pure)."""
    last = history[-1] if history else LoadState()
    return {
        **limits.to_dict(),
        "samples": len(history),
        "slow_samples": sum(1 for s in history if s.state == SLOW),
        "paused_samples": sum(1 for s in history if s.state == PAUSED),
        "min_factor": min((s.factor for s in history), default=1.0),
        "final_state": last.state,
        "aborted": last.aborted,
        "reason": last.reason,
    }


def abort_message(state: LoadState) -> str:
    return (f"source overloaded: {state.reason}. The copy gave up; its finished partitions are recorded and a "
            "re-run resumes with the others")


# --------------------------------------------------------------------------------------------------
# The task side


def fetch_decision(url: str, timeout_s: float = 5.0) -> LoadState:
    """The Spark driver's decision (its own endpoint, not a cluster: no channel of `channels.py`)."""
    import requests

    response = requests.get(url, timeout=timeout_s)
    response.raise_for_status()
    return LoadState.from_dict(response.json())


class LoadGate:
    """Applies the driver's decision inside a copy task, between scan batches.

    At full speed the gate only measures the task's own rate (rows over the time between batches, the base
    `rows_per_s` throttle included): the reference. At factor f < 1 it paces the task at f x reference: each
    batch books rows / (f x reference) seconds on a timeline, and the task rests until the timeline catches up
    (so credit a token bucket or the scan's read-ahead gathered during a rest cannot turn into a burst). Rests
    are taken in steps of `refresh_s`, re-reading the decision: a new factor rescales what is left, full speed
    ends it. While the decision is `paused` the task waits (re-reading every `poll_s`); `aborted` raises
    LoadAbort. When the driver cannot be reached the last decision stands (none yet: full speed), with one
    warning. `after_batch` returns the seconds rested.
    """

    def __init__(self, url: str, *, refresh_s: float = 1.0, poll_s: float = 0.5,
                 fetch: Callable[[str], LoadState] = fetch_decision, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.url = url
        self.refresh_s = refresh_s
        self.poll_s = poll_s
        self._fetch = fetch
        self._clock = clock
        self._sleep = sleep
        self._state: LoadState | None = None
        self._fetched_at: float | None = None
        self._warned = False
        self._last = clock()
        self._full_rows = 0
        self._full_s = 0.0
        self._until: float | None = None  # the pacing timeline (None: not pacing)
        self.rested_s = 0.0
        self.paused_s = 0.0

    def decision(self, force: bool = False) -> LoadState:
        now = self._clock()
        if force or self._fetched_at is None or now - self._fetched_at >= self.refresh_s:
            self._fetched_at = now
            try:
                self._state = self._fetch(self.url)
            except Exception as exc:
                if not self._warned:
                    log.warning("load throttle: decision at %s unreadable (%s: %s); keeping the last one (%s)",
                                self.url, type(exc).__name__, exc,
                                "none yet: full speed" if self._state is None else self._state.state)
                    self._warned = True
        return self._state or LoadState(reason="no decision read yet")

    @property
    def reference_rows_per_s(self) -> float | None:
        """The task's rate at full speed so far (None: never ran at full speed yet)."""
        return self._full_rows / self._full_s if self._full_rows > 0 and self._full_s > 0 else None

    def check(self) -> LoadState:
        """Before a partition starts: raise LoadAbort if the copy has given up."""
        state = self.decision(force=True)
        if state.aborted:
            raise LoadAbort(abort_message(state))
        self._last = self._clock()
        return state

    def _rest(self, seconds: float) -> None:
        self._sleep(seconds)
        self.rested_s += seconds

    def _usable(self, state: LoadState) -> LoadState:
        """Wait out a pause; raise on abort; the state to go on with."""
        while state.paused:
            self._rest(self.poll_s)
            self.paused_s += self.poll_s
            self._until = None  # after a pause, pacing starts afresh
            state = self.decision(force=True)
        if state.aborted:
            raise LoadAbort(abort_message(state))
        return state

    def after_batch(self, rows: int) -> float:
        rested_before = self.rested_s
        now = self._clock()
        work = max(0.0, now - self._last)
        state = self._usable(self.decision())
        if state.factor >= 1.0:
            self._full_rows += rows
            self._full_s += work
            self._until = None
        else:
            reference = self.reference_rows_per_s or (rows / work if work > 0 and rows > 0 else None)
            if reference is not None and rows > 0:
                start = now - work if self._until is None else max(self._until, now - work)
                self._until = paced_until(start, rows, reference, state.factor)
                factor = state.factor
                while self._until is not None and (left := self._until - self._clock()) > 0:
                    self._rest(min(left, self.refresh_s))
                    fresh = self.decision()
                    if fresh.paused or fresh.aborted:
                        self._usable(fresh)
                        break
                    if fresh.factor >= 1.0:
                        self._until = None
                    elif fresh.factor != factor:
                        self._until = rescaled(self._clock(), self._until, factor, fresh.factor)
                        factor = fresh.factor
        self._last = self._clock()
        return self.rested_s - rested_before


def advertised_host(executor: Any) -> str:
    """Where the tasks reach the driver: Spark's `spark.driver.host` (the executors already connect to the driver
    there), else loopback (in-process executors)."""
    sc = getattr(executor, "sc", None)
    if sc is not None:
        try:
            host = sc.getConf().get("spark.driver.host")
        except Exception:
            host = None
        if host:
            return host
    return "127.0.0.1"


def ledger_recorder(store: Any, copy_id: str, table: str) -> Callable[[LoadState], None] | None:
    """A `record` callable writing each decision to the run ledger, when the copy's store is the ledger."""
    ledger = getattr(store, "ledger", None)
    if ledger is None or not callable(getattr(ledger, "throttle_decision", None)):
        return None

    def record(state: LoadState) -> None:
        ledger.throttle_decision(copy_id, table, state.state, state.factor, state.reason,
                                 {k: {"value": v, "server": s} for k, (v, s) in state.worst.items()},
                                 decided_ms=int((state.decided_at or time.time()) * 1000))

    return record
