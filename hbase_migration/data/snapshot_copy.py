"""A snapshot export's files, copied by the tasks: each streamed WebHDFS OPEN -> CREATE, verified, resumable.

What one task does with its group of files (`copy_group`), one file at a time, largest first:

1. find the file on the source: its live location, else `archive/` (a compaction, split or table deletion moved
   it there during the export; over WebHDFS nothing follows the move for us, HBASE-22877);
2. skip it when the target already holds it: same length and the same checksum (a retried task re-copies no
   finished file); the source's side (where the file is, its checksum) is asked for in a second thread meanwhile;
3. stream it: OPEN on the source's DataNode -> CREATE on the target's, in chunks of `chunk_bytes` (memory stays
   flat whatever the file's size), created with the source file's block size so HDFS's block checksums compare,
   and its permission; paced by the task's bandwidth limit and the load throttle's decision;
4. verify: the length, then GETFILECHECKSUM on both sides; where the clusters' checksum parameters differ (the
   algorithm names differ) an MD5 of the bytes read from the source against an MD5 of the target file read back.
   This check (and the result's record) runs in a thread of its own while the next file streams (step 3 of one
   file beside step 4 of the one before): a file's round trips after its stream cost no stream time.

Progress (bytes so far of the file in flight, then the file's result) is posted to the driver's progress
endpoint as it happens (`snapshot_export.ProgressSink`): the driver records every finished file in the ledger at
once, not when the whole task ends, and its answer can tell the task to stop (the export gave up).

The pure parts: `balanced_groups` (ExportSnapshot's getBalancedSplits), `task_rate` (the bandwidth limits),
`FileResult`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from hbase_migration.clusters import hdfs
from hbase_migration.data.progress import TokenBucket, human_bytes
from hbase_migration.data.snapshot_manifest import ExportFile

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

T = TypeVar("T")
COPIED, MATCHED, FAILED = "copied", "matched", "failed"
CHECKSUM_MODES = ("hdfs", "md5")


class ExportAborted(RuntimeError):
    """The driver told the task to stop (the export gave up: its source snapshot is gone, a cancellation)."""


class SourceFileMissing(RuntimeError):
    """A file of the snapshot is in neither of its source locations."""


# --------------------------------------------------------------------------------------------------
# Pure: the plan of files over tasks, the bandwidth


def balanced_groups(items: Sequence[T], groups: int, size: Callable[[T], int],
                    key: Callable[[T], Any] = repr) -> list[list[T]]:
    """`items` dealt into at most `groups` lists of about equal bytes, as ExportSnapshot's getBalancedSplits: sorted
    by size (ties by `key`, so the plan is the same every time), the largest first, dealt back and forth over the
    groups (0, 1, ..., n-1, n-1, ..., 0, 0, 1, ...). Each group keeps its files largest first. No empty group."""
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups!r}")
    ordered = sorted(items, key=lambda i: (-max(size(i), 0), key(i)))
    n = min(groups, len(ordered))
    out: list[list[T]] = [[] for _ in range(n)]
    g, step = 0, 1
    for item in ordered:
        out[g].append(item)
        g += step
        if g == n:
            g, step = n - 1, -1
        elif g < 0:
            g, step = 0, 1
    return out


def task_rate(per_task: float | None, total: float | None, tasks_at_once: int) -> float | None:
    """The bytes/s one task may read: its own limit, and its share of the export's total limit when `tasks_at_once`
    tasks run together (the total is never exceeded, whatever finishes first). None: no limit."""
    if tasks_at_once < 1:
        raise ValueError(f"tasks_at_once must be >= 1, got {tasks_at_once!r}")
    limits = [v for v in (per_task, (total / tasks_at_once) if total else None) if v]
    return min(limits) if limits else None


# --------------------------------------------------------------------------------------------------
# What a task is given, and what it returns


@dataclass(frozen=True)
class CopySettings:
    """How the tasks copy. `chunk_bytes`: the unit read, sent, paced and counted (two or three are held at once);
    `bytes_per_s`: this task's limit (see `task_rate`); `checksum`: `hdfs` (GETFILECHECKSUM on both sides, an MD5
    read-back where the algorithms differ) or `md5` (always the MD5s: clusters known to differ); `owner`/`group`:
    set on each file created (the target's HBase user, when the export runs as another); `attempts`: per file;
    `staging`: the export's staging directory on the target (`snapshot_manifest.staging_dir`), where each file is
    written (None: straight into the target's `archive/`); `outage_s`: how long in all a task waits for a cluster
    that stopped answering (a NameNode restarting, in safe mode, recovering a lease) before its files fail: such a
    wait costs a file no attempt."""

    source_root: str
    target_root: str
    staging: str | None = None
    chunk_bytes: int = 1 << 20
    bytes_per_s: float | None = None
    checksum: str = "hdfs"
    owner: str | None = None
    group: str | None = None
    attempts: int = 3
    outage_s: float = 900.0
    load_url: str | None = None
    progress_url: str | None = None
    report_every_s: float = 1.0
    progress_key: str | None = field(default=None, repr=False)  # signs the posts (ProgressSink): never shown

    def __post_init__(self) -> None:
        if self.checksum not in CHECKSUM_MODES:
            raise ValueError(f"checksum must be one of {', '.join(CHECKSUM_MODES)}, got {self.checksum!r}")
        if not isinstance(self.chunk_bytes, int) or self.chunk_bytes < 4096:
            raise ValueError(f"chunk_bytes must be an integer >= 4096, got {self.chunk_bytes!r}")
        if self.bytes_per_s is not None and not self.bytes_per_s > 0:
            raise ValueError(f"bytes_per_s must be positive, got {self.bytes_per_s!r}")
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be an integer >= 1, got {self.attempts!r}")

    def target_of(self, f: ExportFile) -> str:
        """Where the task writes `f` on the target."""
        return f.staged_path(self.staging) if self.staging else f.target_path(self.target_root)


@dataclass
class FileResult:
    """One file's outcome. `status`: copied, matched (already on the target, same length and checksum) or failed;
    `found_in`: where the source had it (`data`, `mobdir` or `archive`)."""

    relative: str
    size: int
    status: str
    bytes_copied: int = 0
    seconds: float = 0.0
    found_in: str | None = None
    verified_by: str | None = None  # "hdfs-checksum", "md5", "length" (an empty file)
    checksum: dict[str, Any] | None = None
    attempts: int = 0
    error: str | None = None
    task: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileResult":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__ if k in d})


@dataclass
class _Verdict:
    same: bool
    by: str
    checksum: dict[str, Any] | None = None
    detail: str = ""


# --------------------------------------------------------------------------------------------------
# Progress to the driver


SIGNATURE_HEADER = "X-Export-Signature"


def sign(key: str, body: bytes) -> str:
    """HMAC-SHA256 (hex) of a post's body under the export's key (pure)."""
    import hmac

    return hmac.new(key.encode("ascii"), body, hashlib.sha256).hexdigest()


class Reporter:
    """Posts this task's progress to the driver (`progress_url`): the bytes so far of the file in flight (at most
    every `every_s`), and each file's result, each post signed with the export's key (`key`, see
    `snapshot_export.ProgressSink`). The driver's answer may say `abort` (ExportAborted). An unreachable driver
    costs one warning: the results still reach it with the task's own."""

    def __init__(self, url: str | None, task: int, every_s: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 key: str | None = None):
        self.url = url
        self.key = key
        self.task = task
        self.every_s = every_s
        self.clock = clock
        self._last = 0.0
        self._warned = False
        self.abort: str | None = None

    def _post(self, payload: dict[str, Any]) -> None:
        if not self.url:
            return
        import requests  # the driver's own endpoint, not a cluster: no channel of clusters/channels.py

        body = json.dumps({"task": self.task, **payload}).encode()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers[SIGNATURE_HEADER] = sign(self.key, body)
        try:
            response = requests.post(self.url, data=body, headers=headers, timeout=5)
            if response.status_code != 200 and not self._warned:
                log.warning("snapshot export: progress endpoint %s answered HTTP %d (%s); going on", self.url,
                            response.status_code, response.text[:200])
                self._warned = True
            answer = response.json() if response.status_code == 200 else {}
        except Exception as exc:
            if not self._warned:
                log.warning("snapshot export: progress endpoint %s unreachable (%s: %s); going on", self.url,
                            type(exc).__name__, exc)
                self._warned = True
            return
        if answer.get("abort"):
            self.abort = str(answer["abort"])

    def bytes(self, relative: str, done: int, force: bool = False) -> None:
        now = self.clock()
        if force or now - self._last >= self.every_s:
            self._last = now
            self._post({"file": relative, "bytes": done})
        self.check()

    def result(self, result: FileResult) -> None:
        self.post_result(result)
        self.check()

    def post_result(self, result: FileResult) -> None:
        """The file's result posted, the driver's answer kept for `check` (callable from another thread)."""
        self._post({"result": result.to_dict()})

    def check(self) -> None:
        if self.abort:
            raise ExportAborted(self.abort)


# --------------------------------------------------------------------------------------------------
# The copy (I/O)


def webhdfs_of(cluster: "Cluster", attempts: int = 3) -> hdfs.WebHdfs:
    """The cluster's WebHDFS through its one HTTP channel (SPNEGO and TLS as the cluster says)."""
    from hbase_migration.clusters import channels

    if not cluster.webhdfs_url:
        raise ValueError(f"cluster {cluster.name!r} has no webhdfs_url: the snapshot export needs WebHDFS on both "
                         "clusters (the connection's extra webhdfs_url, the NameNode's HTTP address)")
    return hdfs.WebHdfs(cluster.webhdfs_url, timeout_s=max(cluster.timeout_s, 30.0), attempts=attempts,
                        session=channels.http(cluster), user=cluster.webhdfs_user)


def locate(client: hdfs.WebHdfs, f: ExportFile, root: str) -> tuple[str, hdfs.FileStatus, str]:
    """(path, status, where) of `f` on the source: its live location, else archive/. Raises SourceFileMissing."""
    live, archived = f.source_paths(root)
    for path, where in ((live, "mobdir" if f.mob else "data"), (archived, "archive")):
        status = client.status_or_none(path)
        if status is not None and status.type == "FILE":
            return path, status, where
    raise SourceFileMissing(f"{f.relative} is in neither {live} nor {archived} on the source")


def _md5_of(client: hdfs.WebHdfs, path: str, chunk: int) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with client.open(path, chunk) as chunks:
        for piece in chunks:
            digest.update(piece)
    return digest.hexdigest()


def same_content(src: hdfs.WebHdfs, dst: hdfs.WebHdfs, src_path: str, dst_path: str, length: int,
                 settings: CopySettings, source_md5: str | None = None,
                 source_checksum: Callable[[], hdfs.FileChecksum] | None = None) -> _Verdict:
    """Whether two files of `length` bytes hold the same bytes: HDFS's checksums when they compare, else MD5s
    (the source's from the copy when given, else read). `source_checksum`: the source's HDFS checksum, asked for
    beside the copy (a snapshot's file never changes), else asked for now."""
    if length == 0:
        return _Verdict(True, "length")
    if settings.checksum == "hdfs":
        a = source_checksum() if source_checksum is not None else src.file_checksum(src_path)
        b = dst.file_checksum(dst_path)
        verdict = hdfs.compare_checksums(a, b)
        if verdict != hdfs.INCOMPARABLE:
            same = verdict == hdfs.EQUAL
            return _Verdict(same, "hdfs-checksum", a.to_dict(),
                            "" if same else f"checksums differ: {a.bytes} != {b.bytes} ({a.algorithm})")
        log.info("checksums of %s do not compare (%s on the source, %s on the target): MD5 of both instead",
                 dst_path, a.algorithm, b.algorithm)
    mine = source_md5 or _md5_of(src, src_path, settings.chunk_bytes)
    theirs = _md5_of(dst, dst_path, settings.chunk_bytes)
    return _Verdict(mine == theirs, "md5", {"algorithm": "MD5", "bytes": mine},
                    "" if mine == theirs else f"MD5 differ: {mine} != {theirs}")


def _stream(chunks: Iterable[bytes], relative: str, bucket: TokenBucket | None, gate: Any, reporter: Reporter,
            digest: Any, sent: list[int]) -> Iterator[bytes]:
    for piece in chunks:
        if bucket is not None:
            bucket.acquire(len(piece))
        if gate is not None:
            gate.after_batch(len(piece))
        if digest is not None:
            digest.update(piece)
        sent[0] += len(piece)
        reporter.bytes(relative, sent[0])
        yield piece


@dataclass
class _Streamed:
    """A file streamed to the target, its check still to come (`_settle`)."""

    source_path: str
    target_path: str
    length: int
    source_md5: str | None
    source_checksum: Callable[[], hdfs.FileChecksum] | None


def _stream_once(src: hdfs.WebHdfs, dst: hdfs.WebHdfs, f: ExportFile, settings: CopySettings, result: FileResult,
                 reporter: Reporter, bucket: TokenBucket | None, gate: Any,
                 side: tuple[Executor, hdfs.WebHdfs] | None) -> _Streamed | None:
    """An attempt's first half: the file located, skipped when the target already holds it (None, the result
    MATCHED), else streamed OPEN -> CREATE. Raises what the attempt met."""
    target = settings.target_of(f)
    source_checksum = None
    if side is not None:
        pool, side_src = side
        located = pool.submit(locate, side_src, f, settings.source_root)
        if settings.checksum == "hdfs":  # in the same thread, so once located
            source_checksum = pool.submit(lambda loc=located: side_src.file_checksum(loc.result()[0])).result
        existing = dst.status_or_none(target)
        path, status, where = located.result()
    else:
        path, status, where = locate(src, f, settings.source_root)
        existing = dst.status_or_none(target)
    result.found_in, result.size = where, status.length
    if existing is not None and existing.type == "FILE" and existing.length == status.length:
        verdict = same_content(src, dst, path, target, status.length, settings, source_checksum=source_checksum)
        if verdict.same:
            result.status, result.verified_by, result.checksum = MATCHED, verdict.by, verdict.checksum
            result.error = None
            return None
        log.info("%s is on the target with the source's length but other bytes (%s): copying it again",
                 target, verdict.detail)
    if gate is not None:
        gate.check()
    digest = hashlib.md5(usedforsecurity=False) if settings.checksum == "md5" else None
    sent = [0]
    with src.open(path, settings.chunk_bytes) as chunks:
        dst.create(target, _stream(chunks, f.relative, bucket, gate, reporter, digest, sent), overwrite=True,
                   blocksize=status.block_size or None, permission=status.permission or None)
    reporter.bytes(f.relative, sent[0], force=True)
    result.bytes_copied += sent[0]
    return _Streamed(path, target, status.length, digest.hexdigest() if digest is not None else None,
                     source_checksum)


def _settle(src: hdfs.WebHdfs, dst: hdfs.WebHdfs, settings: CopySettings, result: FileResult, s: _Streamed) -> None:
    """An attempt's second half: the target's length and content checked against the source's, the owner set;
    the result COPIED, or raises."""
    written = dst.file_status(s.target_path)
    if written.length != s.length:
        raise OSError(f"length differs after the copy: {s.length} bytes on the source, {written.length} on the target")
    verdict = same_content(src, dst, s.source_path, s.target_path, s.length, settings, s.source_md5,
                           s.source_checksum)
    if not verdict.same:
        raise OSError(f"copied bytes differ: {verdict.detail}")
    if settings.owner or settings.group:
        dst.set_owner(s.target_path, settings.owner, settings.group)
    result.status, result.verified_by, result.checksum, result.error = COPIED, verdict.by, verdict.checksum, None


# HDFS's answers while a NameNode starts or a file's last writer died: wait, then try again
WAIT_ON = frozenset({"SafeModeException", "RetriableException", "RecoveryInProgressException",
                     "AlreadyBeingCreatedException", "StandbyException"})


# A NameNode that has no live DataNode yet (a cluster starting) refuses a CREATE or an OPEN with a plain
# IOException saying so (NamenodeWebHdfsMethods.chooseDatanode)
NO_DATANODE = "Failed to find datanode"


def outage(exc: Exception) -> bool:
    """Whether `exc` says a cluster is away for now (unreachable, starting, without a DataNode yet, recovering a
    lease): worth a wait, not an attempt (pure)."""
    if isinstance(exc, hdfs.WebHdfsUnreachable):
        return True
    if isinstance(exc, hdfs.WebHdfsRemoteError):
        return exc.exception in WAIT_ON or NO_DATANODE in str(exc)
    import requests

    return isinstance(exc, (requests.ConnectionError, requests.Timeout))


class OutageWait:
    """A task's budget of waiting for clusters that stopped answering (`CopySettings.outage_s` in all)."""

    def __init__(self, clients: Sequence[hdfs.WebHdfs], settings: CopySettings, sleep: Callable[[float], None] =
                 time.sleep, clock: Callable[[], float] = time.monotonic):
        self.clients, self.settings, self.sleep, self.clock = clients, settings, sleep, clock
        self.left = settings.outage_s
        self._said = -1e9  # when the last warning went out: one each 30 s (a DataNode not yet back: many waits)

    def wait(self, what: str, exc: Exception) -> bool:
        """Waits until every cluster answers again (GETFILESTATUS of its rootdir), at least a few seconds (a lease
        recovers, safe mode ends); False when the budget is spent."""
        started = self.clock()
        if started - self._said >= 30.0:
            self._said = started
            log.warning("%s: a cluster is away (%s: %s); waiting for it (up to %.0fs more)", what,
                        type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "", self.left)
        pause = 2.0
        roots = (self.settings.source_root, self.settings.target_root)
        while self.left - (self.clock() - started) > 0:
            self.sleep(min(pause, max(self.left - (self.clock() - started), 0.0)))
            pause = min(pause * 2, 15.0)
            try:
                for client, root in zip(self.clients, roots):
                    client.status_or_none(root)
            except Exception:  # still away
                continue
            self.left -= self.clock() - started
            log.info("%s: the clusters answer again after %.1fs (%.0fs of waiting left)", what,
                     self.clock() - started, self.left)
            return True
        self.left = 0.0
        return False


def _failed_attempt(f: ExportFile, result: FileResult, exc: Exception, settings: CopySettings,
                    away: OutageWait | None = None) -> bool:
    """Records an attempt's failure; whether another attempt is worth making. ExportAborted and the load
    throttle's LoadAbort are the task's end, not the file's: raised again. A cluster away (`outage`) is waited for
    (`away`), and the attempt given back."""
    if isinstance(exc, ExportAborted) or type(exc).__name__ == "LoadAbort":
        raise exc
    result.status, result.error = FAILED, f"{type(exc).__name__}: {exc}"
    if away is not None and outage(exc) and away.wait(f.relative, exc):
        result.attempts -= 1
        return True
    log.warning("%s: attempt %d of %d failed: %s", f.relative, result.attempts, settings.attempts, result.error)
    # a fact, not a hiccup: the next attempt would meet it too
    fact = isinstance(exc, hdfs.WebHdfsRemoteError) and exc.exception in (
        "AccessControlException", "DSQuotaExceededException", "NSQuotaExceededException")
    return not fact and result.attempts < settings.attempts


def copy_file(src: hdfs.WebHdfs, dst: hdfs.WebHdfs, f: ExportFile, settings: CopySettings, *,
              reporter: Reporter, bucket: TokenBucket | None = None, gate: Any = None,
              side: tuple[Executor, hdfs.WebHdfs] | None = None, result: FileResult | None = None,
              away: OutageWait | None = None) -> FileResult:
    """One file: located, skipped when already there, else streamed and verified (`attempts` tries, counted on
    from `result`'s when given). Never raises for the file's own failure (returns it failed); raises
    ExportAborted, and LoadAbort from the gate.

    `side`: one thread and a source client of its own: the file is located and its HDFS checksum asked for there
    while this thread asks the target for it and copies it (a small file's time is mostly these round trips)."""
    started = time.monotonic()
    result = result or FileResult(f.relative, f.size, FAILED, task=reporter.task)
    while result.attempts < settings.attempts:
        result.attempts += 1
        try:
            streamed = _stream_once(src, dst, f, settings, result, reporter, bucket, gate, side)
            if streamed is not None:
                _settle(src, dst, settings, result, streamed)
            break
        except Exception as exc:  # noqa: BLE001 - a file's failure is its result; the next attempt or file goes on
            if not _failed_attempt(f, result, exc, settings, away):
                break
    result.seconds = round(result.seconds + time.monotonic() - started, 3)
    return result


def copy_group(source: "Cluster", target: "Cluster", files: Sequence[ExportFile], settings: CopySettings,
               task: int = 0) -> list[FileResult]:
    """One task's files, in order (largest first); each result is also posted to the driver as it ends. A file
    that fails does not stop the others; the driver's abort, or the load throttle giving up, does: the files not
    reached are returned failed with the reason.

    Pipelined one file deep: once a file is streamed, its check (the target's length and checksum, the owner,
    the result posted to the driver, which records it in the ledger) runs in a thread of its own, with clients of
    its own, while the next file streams; a file whose check fails is copied again, in this thread, before the
    next one's check starts. A file counts as done only once its check has passed."""
    from hbase_migration.data.throttle import LoadAbort, LoadGate

    src, dst = webhdfs_of(source), webhdfs_of(target)
    side = ThreadPoolExecutor(1, thread_name_prefix=f"export-{task}-source")
    side_src = webhdfs_of(source)  # used by that thread only
    settler = ThreadPoolExecutor(1, thread_name_prefix=f"export-{task}-check")
    check_src, check_dst = webhdfs_of(source), webhdfs_of(target)  # used by the settler only
    reporter = Reporter(settings.progress_url, task, settings.report_every_s, key=settings.progress_key)
    bucket = TokenBucket(settings.bytes_per_s, burst=max(settings.bytes_per_s, settings.chunk_bytes)) \
        if settings.bytes_per_s else None
    gate = LoadGate(settings.load_url) if settings.load_url else None
    away = OutageWait((src, dst), settings)
    results: list[FileResult] = []
    stopped: str | None = None
    in_flight: tuple[ExportFile, FileResult, Future, float] | None = None

    def checked(result: FileResult, streamed: _Streamed, started: float) -> bool:
        _settle(check_src, check_dst, settings, result, streamed)
        result.seconds = round(time.monotonic() - started, 3)  # final before it is posted: the driver's dedup key
        reporter.post_result(result)  # the ledger's write too overlaps the next stream
        return True

    def retry(f: ExportFile, result: FileResult, exc: Exception) -> None:
        """An attempt failed (`exc`): the file's next attempts, in this thread, when worth making."""
        if _failed_attempt(f, result, exc, settings, away):
            copy_file(src, dst, f, settings, reporter=reporter, bucket=bucket, gate=gate, side=(side, side_src),
                      result=result, away=away)

    def land() -> None:
        """The file in flight's check awaited; copied again here when it failed; its result kept and posted."""
        nonlocal in_flight, stopped
        if in_flight is None:
            return
        f, result, check, started = in_flight
        in_flight = None
        posted = False
        try:
            posted = check.result()
        except Exception as exc:  # noqa: BLE001 - the check's failure: the file's next attempt, here
            try:
                retry(f, result, exc)
            except (ExportAborted, LoadAbort) as stop:
                stopped = f"not copied: {type(stop).__name__}: {stop}"
                result.status, result.error = FAILED, stopped
        if not posted:
            result.seconds = round(time.monotonic() - started, 3)
        results.append(result)
        try:
            if posted:
                reporter.check()
            else:
                reporter.result(result)
        except ExportAborted as exc:
            stopped = stopped or f"not copied: ExportAborted: {exc}"

    started_all = time.monotonic()
    for f in files:
        if stopped is not None:
            results.append(FileResult(f.relative, f.size, FAILED, error=stopped, task=task))
            continue
        started = time.monotonic()
        result = FileResult(f.relative, f.size, FAILED, task=task, attempts=1)
        streamed = None
        try:
            try:
                streamed = _stream_once(src, dst, f, settings, result, reporter, bucket, gate, (side, side_src))
            except Exception as exc:  # noqa: BLE001 - the first attempt's failure: the others, in copy_file
                retry(f, result, exc)
        except (ExportAborted, LoadAbort) as exc:
            land()
            stopped = f"not copied: {type(exc).__name__}: {exc}"
            results.append(FileResult(f.relative, f.size, FAILED, error=stopped, task=task))
            continue
        land()  # the previous file's check, which ran while this one streamed
        if streamed is not None:
            in_flight = (f, result, settler.submit(checked, result, streamed, started), started)
        else:
            done: Future = Future()
            done.set_result(False)
            in_flight = (f, result, done, started)
    land()
    side.shutdown(wait=False, cancel_futures=True)
    settler.shutdown(wait=True)
    copied = sum(r.bytes_copied for r in results)
    elapsed = time.monotonic() - started_all
    log.info("snapshot export task %d: %d files (%d copied, %d already there, %d failed), %s in %.1fs (%s/s)",
             task, len(results), sum(r.status == COPIED for r in results), sum(r.status == MATCHED for r in results),
             sum(r.status == FAILED for r in results), human_bytes(copied), elapsed,
             human_bytes(copied / elapsed if elapsed > 0 else 0))
    return results


@dataclass
class GroupTask:
    """A Spark task's work: its index and its files (what crosses to the executor, pickled)."""

    index: int
    files: list[ExportFile] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(max(f.size, 0) for f in self.files)
