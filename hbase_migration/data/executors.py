"""Where the copy's and verification's partitions run: Spark executors, or threads of this process.

An executor runs `task(item)` once per partition and calls `on_done(results)` on the driver as tasks end, so
finished partitions are recorded while the job runs (a job killed midway resumes where it stopped, as
scylla-migrator's savepoints do). `SparkExecutor` is what the spark-submit jobs use; `LocalExecutor` is the
CLI's, in-process, no Spark. pyspark is imported only by the Spark parts, inside functions.

With Spark, each task adds its result to an accumulator, which Spark merges on the driver at task completion,
and a driver thread polls it: results reach the driver as each task ends, not when the whole job ends. Only
the driver writes the store, which then works the same on local[*], a standalone cluster, YARN or Kubernetes.
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Sequence

log = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Stderr(logging.StreamHandler):
    """A handler on whatever `sys.stderr` is when a record is emitted: the CLI runs copies in-process, and a
    handler holding the first caller's stream would write to a capture or redirect long gone."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure_logging(level: str = "INFO") -> None:
    """Driver and task logs on stderr (stdout carries only the JSON summary)."""
    root = logging.getLogger()
    if not any(getattr(h, "_hbase_migration", False) for h in root.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler._hbase_migration = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(getattr(logging, str(level).upper(), logging.INFO))
    for noisy in ("py4j", "happybase", "thriftpy2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def spark_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> tuple[Any, bool]:
    """(SparkSession, created): the active session when there is one (a test module's, a notebook's),
    else a new one; `master` only when run with python (spark-submit passes its own). The caller stops
    the session only if it created it."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
        if master.startswith("local"):
            # One machine: no UI port to fight over, no progress bar in the logs.
            builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    # Re-running a task is harmless (idempotent writes) but wasteful: no speculative copies.
    builder = builder.config("spark.speculation", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark, True


def stop_session(spark: Any) -> None:
    """Stop Spark; a JVM already gone (killed with the driver's process group) is not an error."""
    try:
        spark.stop()
    except Exception as e:
        log.warning("stopping Spark failed (%s: %s); the JVM is probably gone already", type(e).__name__, e)


def shipped_file(name: str) -> str | None:
    """Where a file given to a job is readable on this host: `name` itself (a path: the CLI, a test; a bare name:
    the working directory of a YARN container, where spark-submit's `--files` are localized), else Spark's copy of
    a file shipped with the job: SparkFiles' directory on an executor or on a driver whose SparkContext runs, or
    the file as spark-submit was given it, on a driver in client mode (on the submitting host; `spark.files`, or
    `spark.yarn.dist.files` on YARN, whose client mode gives the driver no copy). None when there is none. Only a
    bare name is looked for among Spark's files, and Spark is asked only where it is already there (pyspark loaded,
    or spark-submit's JVM waiting for this driver: no JVM is started and no SparkContext created here)."""
    if os.path.isfile(name):
        return os.path.abspath(name)
    if not name or os.path.basename(name) != name:
        return None
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # set by spark-submit for a Python driver
    if "pyspark" not in sys.modules and not under_submit:
        return None
    from pyspark import SparkConf, SparkContext, SparkFiles

    sc = SparkContext._active_spark_context
    if SparkFiles._is_running_on_worker or sc is not None:
        path = SparkFiles.get(name)
        if os.path.isfile(path):
            return path
        if sc is None:  # an executor: its files are in SparkFiles' directory or its working directory only
            return None
        conf = sc.getConf()
    elif under_submit:
        SparkContext._ensure_initialized()  # the gateway to spark-submit's JVM, whose properties hold the conf
        conf = SparkConf()
    else:
        return None
    from urllib.parse import urlparse

    given = ",".join(conf.get(key, "") or "" for key in ("spark.files", "spark.yarn.dist.files"))
    for entry in given.split(","):
        uri = urlparse(entry.strip())
        if uri.scheme in ("", "file") and os.path.basename(uri.path) == name and os.path.isfile(uri.path):
            return uri.path
    return None


SHIPPED_PACKAGES = ("hbase_migration",)
# The distribution's rooms mapped under `hbase_migration` from the checkout's top level (pyproject.toml's
# package-dir): subfolders of an installed package, elsewhere in a checkout. The library's zip leaves them out
# (the Airflow layer imports Airflow, which no Spark process has) and takes each asked for from where it lives.
MAPPED_ROOMS = ("jobs", "operators", "plugins", "sql")


def package_zip(packages: Sequence[str] = SHIPPED_PACKAGES, dest_dir: str | None = None) -> str:
    """Zip the toolkit's packages by their dotted names (the library; the Airflow operators add
    `hbase_migration.jobs`, the spark-submit targets' own package, for a driver in a YARN container), each under
    its import path (`hbase_migration/jobs/...`) wherever it was imported from: an installed package, or a checkout
    whose editable install maps `jobs/` there. Each module goes with its compiled form beside it (`name.pyc`, which
    zipimport prefers): an executor's Python worker then imports without compiling the library from source,
    which cost every worker process of every job a few hundred ms of CPU. The .pyc is hash-based and unchecked
    (the zip is made from the same sources at once); an interpreter of another version finds a magic number it
    does not know and compiles the .py instead. With `hbase_migration`, the ledger's SQL goes along as
    `hbase_migration/sql/`, where `hbase_migration.ledger.store` looks when it was imported from a zip: a driver
    far from any checkout or installed package opens the ledger too."""
    import importlib
    import py_compile

    fd, path = tempfile.mkstemp(prefix="hbase_migration-", suffix=".zip", dir=dest_dir)
    os.close(fd)
    with tempfile.TemporaryDirectory(prefix="hbase_migration-pyc-") as tmp, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in packages:
            pkg = Path(importlib.import_module(name).__file__).resolve().parent
            skip = [pkg / room for room in MAPPED_ROOMS] if name == "hbase_migration" else []
            for file in sorted([*pkg.rglob("*.py"), *pkg.rglob("*.thrift")]):  # the Thrift2 IDL goes along
                if "__pycache__" in file.parts or any(file.is_relative_to(room) for room in skip):
                    continue
                arcname = str(Path(*name.split(".")) / file.relative_to(pkg))
                zf.write(file, arcname)
                if file.suffix == ".py":
                    compiled = py_compile.compile(str(file), cfile=str(Path(tmp) / "module.pyc"), dfile=arcname,
                                                  doraise=True,
                                                  invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                    zf.write(compiled, arcname + "c")
        if "hbase_migration" in packages:
            from hbase_migration.ledger.store import SQL_DIR

            sql = Path(str(SQL_DIR))
            if sql.is_dir():  # else this process runs from such a zip itself, and ships nothing new
                for file in sorted(sql.rglob("*.sql")):
                    zf.write(file, str(Path("hbase_migration", "sql") / file.relative_to(sql)))
    return path


def code_origin(module: str = "hbase_migration") -> str:
    """Where this process imported `module` from: the zip a job shipped (its path, up to `.zip`), or the package's
    folder (a checkout). The summary names it for the driver and each executor: on YARN both must be the zip."""
    import importlib

    file = os.path.abspath(str(importlib.import_module(module).__file__ or ""))  # YARN: './x.zip' in the container
    cut = file.find(".zip" + os.sep)
    return file[:cut + 4] if cut >= 0 else str(Path(file).parent)


def whereabouts() -> tuple[str, str, str]:
    """(host, YARN container id or '', code_origin()) of this process: a driver's or an executor's."""
    import socket

    return socket.gethostname(), os.environ.get("CONTAINER_ID", ""), code_origin()


_shipped: dict[str, str] = {}  # Spark application id -> the zip shipped to it


def ship_package(sc: Any) -> None:
    """Make the toolkit importable in every executor, unless spark-submit --py-files shipped it already, or this
    process shipped it to this application before (a session borrowed by several jobs: every added zip would go
    on each Python worker's sys.path, and every task re-reads the directory of each one)."""
    py_files = sc.getConf().get("spark.submit.pyFiles", "") or ""
    if "hbase_migration" in py_files or sc.applicationId in _shipped:
        return
    _shipped[sc.applicationId] = package_zip()
    sc.addPyFile(_shipped[sc.applicationId])


def _result_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class ResultsParam(AccumulatorParam):
        """Finished results, as an immutable tuple: the polling thread may read it at any time."""

        def zero(self, value: Any) -> tuple:
            return ()

        def addInPlace(self, a: Any, b: Any) -> tuple:
            return tuple(a) + tuple(b)

    return ResultsParam()


def run_partitions(
    sc: Any,
    items: Sequence[Any],
    task: Callable[[Any], Any],
    on_done: Callable[[list[Any]], None] | None = None,
    poll_s: float = 1.0,
    job_group: str = "hbase-migration",
    log_level: str = "INFO",
    on_heartbeat: Callable[[], None] | None = None,
    heartbeat_s: float = 30.0,
    slices: int | None = None,
    places: set | None = None,
) -> list[Any]:
    """Run `task(item)` in one Spark task per item (or in `slices` tasks, each running its share of the items
    one after the other, dealt round-robin so neighbouring items go to different tasks); `on_done(new_results)`
    on the driver as tasks end, `on_heartbeat()` every `heartbeat_s` (a progress line even while no partition
    finishes).

    `places` (a set), when given, gets each task's `whereabouts()`: which hosts, containers and code ran them.

    `task` must not raise for an expected failure (return a failed result instead) so that one bad
    partition does not cancel the others. Returns every result, in item order.
    """
    if not items:
        return []
    slices = len(items) if not slices else max(1, min(slices, len(items)))
    # task s gets items s, s + slices, ... (one group per Spark partition: parallelize gives n items to n slices
    # one each)
    groups = [[(position, items[position]) for position in range(s, len(items), slices)] for s in range(slices)]
    acc = sc.accumulator((), _result_param())

    def run(iterator: Any) -> Any:
        configure_logging(log_level)
        where = whereabouts()
        for group in iterator:
            for position, item in group:
                result = task(item)
                acc.add((result,))
                yield position, result, where

    seen = 0
    lock = threading.Lock()

    def drain() -> None:
        nonlocal seen
        with lock:
            value = acc.value
            fresh = list(value[seen:])
            seen = len(value)
        if fresh and on_done is not None:
            on_done(fresh)

    stop = threading.Event()

    def poll() -> None:
        last_beat = time.monotonic()
        while not stop.wait(poll_s):
            try:
                drain()
                if on_heartbeat is not None and time.monotonic() - last_beat >= heartbeat_s:
                    last_beat = time.monotonic()
                    on_heartbeat()
            except Exception:  # keep polling: a store hiccup must not stop the job's bookkeeping
                log.exception("recording finished partitions failed; will retry")

    poller = threading.Thread(target=poll, name="partition-results", daemon=True)
    poller.start()
    sc.setJobGroup(job_group, f"{len(items)} partitions", interruptOnCancel=True)
    try:
        numbered = sc.parallelize(groups, slices).mapPartitions(run).collect()
        results = [result for _position, result, _where in sorted(numbered, key=lambda pr: pr[0])]
        if places is not None:
            places.update(where for _position, _result, where in numbered)
    finally:
        stop.set()
        poller.join()
        drain()  # whatever finished since the last poll, also when the job failed or was interrupted
    return results


class LocalExecutor:
    """Partitions on `workers` threads of this process (the CLI's copy and verify: no Spark needed)."""

    def __init__(self, workers: int = 4, heartbeat_s: float = 30.0):
        self.workers = max(1, int(workers))
        self.heartbeat_s = heartbeat_s

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
        if not items:
            return []
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(self.workers, len(items)), thread_name_prefix="hbase-task") as pool:
            return list(pool.map(fn, items))

    def run(self, items: Sequence[Any], task: Callable[[Any], Any],
            on_done: Callable[[list[Any]], None] | None = None,
            on_heartbeat: Callable[[], None] | None = None, tasks_per_slot: int | None = None) -> list[Any]:
        """`task(item)` per item on the pool; `on_done([result])` here as each ends. Results in item order.
        (`tasks_per_slot` is Spark's; the pool takes the items one at a time anyway.)"""
        if not items:
            return []
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        results: dict[int, Any] = {}
        with ThreadPoolExecutor(min(self.workers, len(items)), thread_name_prefix="hbase-task") as pool:
            pending = {pool.submit(task, item): i for i, item in enumerate(items)}
            while pending:
                done, _ = wait(pending, timeout=self.heartbeat_s, return_when=FIRST_COMPLETED)
                if not done and on_heartbeat is not None:
                    on_heartbeat()
                for future in done:
                    results[pending.pop(future)] = future.result()
                    if on_done is not None:
                        on_done([future.result()])
        return [results[i] for i in range(len(items))]


class SparkExecutor:
    """Partitions as Spark tasks, one per partition, on the session's cluster (spark-submit's, or `master`).

    A session already active in this process (a test module's, a notebook's) is borrowed and left running;
    one created here is stopped by `close()`. The library is shipped to the executors unless spark-submit's
    --py-files already carries it.
    """

    def __init__(self, app_name: str, master: str | None = None, conf: dict[str, str] | None = None,
                 log_level: str = "INFO", heartbeat_s: float = 30.0):
        self.spark, self.own_session = spark_session(app_name, master, conf)
        if self.own_session:  # a job of its own (not a session borrowed in-process): finish cleanly on SIGTERM
            install_sigterm_handler()
        self.sc = self.spark.sparkContext
        self.log_level = log_level
        self.heartbeat_s = heartbeat_s
        self.places: set[tuple[str, str, str]] = set()
        ship_package(self.sc)

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
        if not items:
            return []
        return self.sc.parallelize(list(items), len(items)).map(fn).collect()

    def run(self, items: Sequence[Any], task: Callable[[Any], Any],
            on_done: Callable[[list[Any]], None] | None = None,
            on_heartbeat: Callable[[], None] | None = None, job_group: str = "hbase-migration",
            tasks_per_slot: int | None = None) -> list[Any]:
        """One Spark task per item, or with `tasks_per_slot` at most that many tasks per task slot of the
        application (`defaultParallelism`), each running its items in turn: a PySpark task costs some 30-40 ms
        of scheduling and worker hand-off, which small partitions feel; results then reach `on_done` as each
        task (not each item) ends."""
        slices = tasks_per_slot * self.sc.defaultParallelism if tasks_per_slot else None
        return run_partitions(self.sc, items, task, on_done, job_group=job_group, log_level=self.log_level,
                              on_heartbeat=on_heartbeat, heartbeat_s=self.heartbeat_s, slices=slices,
                              places=self.places)

    def describe(self) -> dict[str, Any]:
        """Where the job ran, for its summary: the master, deploy mode and application id (YARN's
        application_..._NNNN), the driver's host, container and code, and each executor's that ran a task."""
        conf = self.sc.getConf()
        host, container, code = whereabouts()
        return {
            "master": self.sc.master,
            "deploy_mode": conf.get("spark.submit.deployMode", "client"),
            "application_id": self.sc.applicationId,
            "driver": {"host": host, "container": container or None, "code": code},
            "executors": [{"host": h, "container": c or None, "code": o} for h, c, o in sorted(self.places)],
        }

    def close(self) -> None:
        if self.own_session:
            stop_session(self.spark)


def install_sigterm_handler() -> None:
    """Turn SIGTERM (Airflow's on_kill, a scheduler, `kill`) into SystemExit in the main thread, so
    `finally` blocks record finished partitions and stop Spark before the driver exits."""
    import signal

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def elapsed_since(start: float) -> float:
    return time.monotonic() - start
