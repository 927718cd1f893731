"""The initial copy by snapshot: HBase's ExportSnapshot over WebHDFS, resumable file by file, then a clone.

Each table's export goes through these steps, every one idempotent and recorded in the ledger
(`snapshot_exports`, `snapshot_files`), so a retry or a re-run continues where the last one stopped:

1. `take` (the source's shell): a FLUSH snapshot named after the run (`snapshot_name`), unless it exists. Taken
   after the peer was added (T0): every edit from T0 on is also in the backlog, replayed on top (each cell keeps
   its timestamp, so twice is harmless).
2. `copy` (WebHDFS only: what the Spark job does, from anywhere that reaches both NameNodes and DataNodes over
   HTTP): the snapshot's `.snapshotinfo` (its TTL removed) and `data.manifest` into the target's
   `.hbase-snapshot/.tmp/<name>` first, so the target's cleaners count the files as referenced while they arrive
   (HBASE-23202); then every file into `archive/data/<ns>/<table>/<region>/<family>/` by the tasks
   (`snapshot_copy.copy_group`), balanced by size, each finished file recorded as it ends; the driver logs and
   records bytes, files, rate and ETA, and watches that the source snapshot still exists.
3. `publish` (WebHDFS): ownership as the target's HBase expects (its user, when the export runs as another), then
   `.tmp/<name>` renamed to `.hbase-snapshot/<name>`.
4. `clone` (the target's shell): `clone_snapshot` creates the table, then the imported snapshot is deleted.
5. `clean` (the source's shell): the source snapshot is deleted.

A failure keeps both snapshots and says exactly what is left where (`ExportFailed.left`); re-running resumes.
`run_export` runs every step (the CLI); the Airflow operator runs 1, 3-5 itself and 2 as a Spark job
(`jobs/snapshot_export.py`), because a Spark driver may run where no HBase shell is.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import hmac
import json
import logging
import posixpath
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.data.progress import eta_seconds, human_bytes, human_duration, rate, retry_transient
from hbase_migration.data.scope import CopyConfigError
from hbase_migration.data.snapshot_copy import (
    COPIED,
    FAILED,
    MATCHED,
    SIGNATURE_HEADER,
    CopySettings,
    FileResult,
    GroupTask,
    balanced_groups,
    copy_group,
    sign,
    task_rate,
    webhdfs_of,
)
from hbase_migration.data.snapshot_manifest import (
    DATA_MANIFEST,
    SNAPSHOTINFO,
    ExportFile,
    ManifestError,
    encryption_refusal,
    export_files,
    family_dirs,
    parse_data_manifest,
    parse_snapshot_info,
    snapshot_dir,
    split_table,
    staging_dir,
    table_dirs,
    without_ttl,
    working_dir,
)
from hbase_migration.replication.shell import ruby_str

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

CHECKSUMS = ("auto", "hdfs", "md5")
LEDGER_RETRY_S = 120.0


class ExportRefused(CopyConfigError):
    """The export cannot start as asked (bad input, a target table already there): nothing was changed."""


class ExportFailed(RuntimeError):
    """The export stopped; `left` says what it left where and how to go on."""

    def __init__(self, message: str, left: str):
        super().__init__(f"{message}. {left}")
        self.reason = message
        self.left = left


# --------------------------------------------------------------------------------------------------
# Pure: names, statements, ownership, what is left


def snapshot_name(copy_id: str, table: str) -> str:
    """The snapshot of `table` for the run (copy) `copy_id`, the same on both clusters: readable (the table's
    name) and unique to the run (a digest of its id), within HBase's rules for snapshot names."""
    namespace, qualifier = split_table(table)
    shown = qualifier if namespace == "default" else f"{namespace}.{qualifier}"
    shown = re.sub(r"[^A-Za-z0-9_.-]", "_", shown)[:120]
    digest = hashlib.sha1(f"{copy_id}\0{table}".encode(), usedforsecurity=False).hexdigest()[:12]
    return f"hbase_migration-{shown}-{digest}"


def take_statement(table: str, name: str) -> str:
    """A FLUSH snapshot (the shell's default type): memstore edits are flushed into it."""
    return f"snapshot {ruby_str(table)}, {ruby_str(name)}"


def clone_statements(table: str, name: str, keep_snapshot: bool = False) -> list[str]:
    """Clone the imported snapshot into `table`, then delete it (the clone's links keep the files it needs).
    Without RESTORE_ACL: the snapshot's grants are the source's principals as of the snapshot, which may not exist
    on the target; the batch's `metadata` task gives the target the grants as they are once the copies ended,
    through `principal_map` (and checks them), for snapshot and scan tables alike."""
    statements = [f"clone_snapshot {ruby_str(name)}, {ruby_str(table)}"]
    return statements if keep_snapshot else statements + [f"delete_snapshot {ruby_str(name)}"]


def delete_statement(name: str) -> str:
    return f"delete_snapshot {ruby_str(name)}"


def ownership(caller: str, hbase_owner: str, hbase_group: str) -> tuple[str | None, str | None]:
    """The (owner, group) to give what the export creates on the target: HBase's (the owner and group of its
    `hbase.id`) when the export runs as another user, so the target's HBase can read, clean and archive them
    (ExportSnapshot's --chuser/--chgroup); (None, None) when it runs as HBase's user already."""
    if not hbase_owner or caller == hbase_owner:
        return None, None
    return hbase_owner, hbase_group or None


def left_behind(*, source: str, target: str, table: str, name: str, source_snapshot: bool | None,
                manifest: str | None, files_done: int, files_total: int | None, bytes_done: int,
                archive_dir: str, staging_dir: str, cloned: bool) -> str:
    """What a stopped export left where, and the ways on (pure; the failure's second sentence)."""
    parts = []
    if source_snapshot is None:
        parts.append(f"source snapshot {name!r} on {source}: state unknown")
    elif source_snapshot:
        parts.append(f"source snapshot {name!r} on {source} (kept; `delete_snapshot {ruby_str(name)}` there to drop "
                     "it)")
    else:
        parts.append(f"no source snapshot {name!r} on {source} (gone: a re-run takes it again)")
    if manifest:
        parts.append(f"its manifest in {manifest} on {target}")
    total = "?" if files_total is None else str(files_total)
    parts.append(f"{files_done} of {total} files ({human_bytes(bytes_done)}) verified, in {staging_dir} (staged) or "
                 f"{archive_dir} on {target}" + (" (a re-run skips them)" if files_done else ""))
    parts.append(f"table {table} {'cloned' if cloned else 'not cloned'} on {target}")
    way = ("Re-run to resume (the snapshot_export task, or python -m hbase_migration snapshot-export with the same "
           f"--copy-id). To give up instead: delete the source snapshot, and on the target `hdfs dfs -rm -r` "
           f"{staging_dir} and the manifest directory; the target's cleaner removes the unreferenced archive files "
           "after hbase.master.hfilecleaner.ttl")
    return "Left: " + "; ".join(parts) + ". " + way


def resume_plan(files: Sequence[ExportFile], recorded: Mapping[str, Any], present: Mapping[str, int]
                ) -> tuple[list[ExportFile], list[ExportFile]]:
    """(done, to do) of a resumed export, each in `files`' order: a file is done when the ledger recorded it
    finished (`recorded`, by relative path) and the target still holds it with its size (`present`: relative path
    -> length). Lookups by path in the two mappings and one set: linear in the files (a resume of a table of
    hundreds of thousands of files must not compare every file with every other)."""
    finished = {f.relative for f in files if f.relative in recorded and present.get(f.relative) == f.size}
    return ([f for f in files if f.relative in finished], [f for f in files if f.relative not in finished])


def progress_line(files_done: int, files_total: int, bytes_done: int, bytes_total: int, elapsed_s: float,
                  moved_bytes: int) -> tuple[str, float, float | None]:
    """The log line of an export in progress, its rate (bytes/s of this run) and ETA (s)."""
    speed = rate(moved_bytes, elapsed_s)
    left = max(bytes_total - bytes_done, 0)
    eta = (0.0 if left == 0 else left / speed) if speed > 0 else eta_seconds(bytes_done, bytes_total, elapsed_s)
    line = (f"{files_done}/{files_total} files, {human_bytes(bytes_done)} of {human_bytes(bytes_total)} "
            f"({100.0 * bytes_done / bytes_total if bytes_total else 100.0:.1f}%) in {human_duration(elapsed_s)}, "
            f"{human_bytes(speed)}/s, ETA {human_duration(eta)}")
    return line, speed, eta


# --------------------------------------------------------------------------------------------------
# The driver's progress endpoint


def signature_ok(key: str, body: bytes, signature: str | None) -> bool:
    """Whether `signature` is `body`'s HMAC-SHA256 under the export's key (compared in constant time; pure)."""
    return bool(signature) and hmac.compare_digest(sign(key, body), str(signature))


class ProgressSink:
    """Where the tasks post their progress (`snapshot_copy.Reporter`): bytes of the file in flight, and each
    file's result, recorded at once through `on_result` (each file once). Its answer carries `abort` once the
    export gave up (`abort(reason)`), which stops every task at its next report.

    A result recorded here makes a re-run skip the file, so the endpoint takes a post only when it is signed with
    the export's own key (`key`, random per export, never on a command line or in a log: it reaches the tasks
    inside their settings, as Spark ships a task's closure, and each post carries an HMAC-SHA256 of its body, so the
    key does not cross the network either) and, with `files` given, only a result of a file of the plan. Any other
    post is answered 401 (or 400) and changes nothing."""

    def __init__(self, on_result: Callable[[FileResult], None], host: str = "127.0.0.1",
                 files: Iterable[str] | None = None):
        import secrets

        self.on_result = on_result
        self.host = host
        self.key = secrets.token_hex(32)
        self.files = None if files is None else frozenset(files)
        self.refused = 0
        self.in_flight: dict[tuple[int, str], int] = {}
        self._events: set[tuple[Any, ...]] = set()
        self._finished: set[str] = set()
        self.copies: dict[str, int] = {}  # relative path -> times a task copied it in this run
        self.finished_bytes = 0
        self.finished_files = 0
        self.aborted: str | None = None
        self._lock = threading.Lock()
        self._server: Any = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/progress"

    def bytes_moving(self) -> int:
        with self._lock:
            return sum(self.in_flight.values())

    def abort(self, reason: str) -> None:
        with self._lock:
            self.aborted = self.aborted or reason

    def take(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """One post: `{task, file, bytes}` or `{task, result}`; the answer. A result of a file not in the plan is
        refused (ValueError)."""
        task = int(payload.get("task") or 0)
        result = payload.get("result")
        if result is not None:
            r = FileResult.from_dict(dict(result))
            if self.files is not None and r.relative not in self.files:
                raise ValueError(f"a result for {r.relative!r}, which is not a file of this export")
            self.result(r, task)
        elif payload.get("file"):
            with self._lock:
                self.in_flight[(task, str(payload["file"]))] = int(payload.get("bytes") or 0)
        with self._lock:
            return {"abort": self.aborted}

    def result(self, r: FileResult, task: int | None = None) -> None:
        """A file's result, from a post or from the task's own return (the same result is acted on once; a retried
        task's new result for a file is another one)."""
        with self._lock:
            self.in_flight.pop((r.task if task is None else task, r.relative), None)
            key = (r.task, r.relative, r.attempts, r.status, r.seconds)
            if key in self._events:
                return
            self._events.add(key)
            if r.status == COPIED:
                self.copies[r.relative] = self.copies.get(r.relative, 0) + 1
            if r.status in (COPIED, MATCHED) and r.relative not in self._finished:
                self._finished.add(r.relative)
                self.finished_files += 1
                self.finished_bytes += max(r.size, 0)
        if r.status in (COPIED, MATCHED):
            self.on_result(r)

    def start(self) -> "ProgressSink":
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if 0 < length <= 1 << 20 else b""
                except (OSError, ValueError):
                    body = b""
                if not body or not signature_ok(sink.key, body, self.headers.get(SIGNATURE_HEADER)):
                    sink.refused += 1
                    if sink.refused <= 3:  # who knocks is said; the key is not
                        log.warning("snapshot export: refused an unsigned or wrongly signed post to the progress "
                                    "endpoint from %s", self.client_address[0])
                    answer, status = {"error": "unauthorized"}, 401
                else:
                    try:
                        answer, status = sink.take(json.loads(body)), 200
                    except ValueError as exc:
                        log.warning("snapshot export: refused a progress post: %s", exc)
                        answer, status = {"abort": sink.aborted, "error": str(exc)}, 400
                    except Exception as exc:  # the ledger refusing: the task carries on
                        log.warning("snapshot export: a progress post failed: %s: %s", type(exc).__name__, exc)
                        answer, status = {"abort": sink.aborted, "error": str(exc)}, 500
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        # a short poll: stop() waits for it, at the end of every export
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name="export-progress", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# --------------------------------------------------------------------------------------------------
# The export


@dataclass(frozen=True)
class ExportOptions:
    """One table's export. `tasks`: how many groups the files are balanced over (default: the executor's task
    slots); `task_bytes_per_s` / `bytes_per_s`: bandwidth per task and in all (`snapshot_copy.task_rate`);
    `checksum`: `auto` (HDFS's checksums when the clusters' compare, found on the manifest, else MD5s), `hdfs` or
    `md5`; `keep_snapshots`: leave both snapshots after the clone; `same_master_key`: the operator attests that the
    target's key provider holds the source's master key (encrypted families may then go by snapshot)."""

    table: str
    copy_id: str
    snapshot: str | None = None
    tasks: int | None = None
    task_bytes_per_s: float | None = None
    bytes_per_s: float | None = None
    chunk_bytes: int = 1 << 20
    checksum: str = "auto"
    keep_snapshots: bool = False
    same_master_key: bool = False
    progress_every_s: float = 5.0
    snapshot_check_every_s: float = 15.0

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise ExportRefused("table: a table name is required")
        if not isinstance(self.copy_id, str) or not self.copy_id.strip():
            raise ExportRefused("copy_id: required (the run whose ledger rows the export resumes from)")
        if self.checksum not in CHECKSUMS:
            raise ExportRefused(f"checksum must be one of {', '.join(CHECKSUMS)}, got {self.checksum!r}")
        for name in ("task_bytes_per_s", "bytes_per_s"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ExportRefused(f"{name} must be a positive number of bytes/s, got {value!r}")
        if self.tasks is not None and (not isinstance(self.tasks, int) or self.tasks < 1):
            raise ExportRefused(f"tasks must be an integer >= 1, got {self.tasks!r}")
        if not isinstance(self.chunk_bytes, int) or not 4096 <= self.chunk_bytes <= 64 << 20:
            raise ExportRefused(f"chunk_bytes must be within 4 KiB..64 MiB, got {self.chunk_bytes!r}")
        try:
            from hbase_migration.data.snapshot_manifest import check_snapshot_name

            object.__setattr__(self, "snapshot", check_snapshot_name(self.snapshot or snapshot_name(self.copy_id,
                                                                                                  self.table)))
        except ValueError as e:
            raise ExportRefused(f"snapshot: {e}") from None

    @property
    def name(self) -> str:
        return str(self.snapshot)


@dataclass
class _Records:
    """The ledger, each call outliving a short outage of its database (`progress.retry_transient`)."""

    ledger: Any
    copy_id: str
    table: str

    def _retry(self, what: str, fn: Callable[[], Any]) -> Any:
        return retry_transient(fn, what, LEDGER_RETRY_S)

    def start(self, name: str, source: "Cluster", target: "Cluster") -> dict[str, Any]:
        return self._retry("recording the export", lambda: self.ledger.snapshot_export_start(
            self.copy_id, self.table, name, source.cluster_key, target.cluster_key))

    def export(self) -> dict[str, Any] | None:
        return self._retry("reading the export", lambda: self.ledger.snapshot_export(self.copy_id, self.table))

    def state(self, state: str, detail: Mapping[str, Any] | None = None) -> None:
        self._retry(f"recording the export's state {state}",
                    lambda: self.ledger.snapshot_export_state(self.copy_id, self.table, state, detail))

    def progress(self, **figures: Any) -> None:
        self._retry("recording the export's progress",
                    lambda: self.ledger.snapshot_export_progress(self.copy_id, self.table, **figures))

    def files(self) -> dict[str, dict[str, Any]]:
        return self._retry("reading the finished files", lambda: self.ledger.snapshot_files(self.copy_id, self.table))

    def file_done(self, name: str, r: FileResult) -> None:
        self._retry(f"recording {r.relative}", lambda: self.ledger.snapshot_file_done(
            self.copy_id, self.table, name, r.relative, max(r.size, 0), r.status, found_in=r.found_in,
            verified_by=r.verified_by, checksum=r.checksum, attempts=max(r.attempts, 1), seconds=r.seconds))


@dataclass
class SnapshotExport:
    """One table's export from `source` to `target`; `ledger` a `hbase_migration.ledger.store.Ledger`."""

    source: "Cluster"
    target: "Cluster"
    options: ExportOptions
    ledger: Any
    records: _Records = field(init=False)
    summary: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_webhdfs(self.source, self.target)
        self.records = _Records(self.ledger, self.options.copy_id, self.options.table)
        self.src = webhdfs_of(self.source)
        self.dst = webhdfs_of(self.target)

    # -- where things are ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def table(self) -> str:
        return self.options.table

    def source_snapshot_dir(self) -> str:
        return snapshot_dir(self.source.rootdir, self.name)

    def target_working_dir(self) -> str:
        return working_dir(self.target.rootdir, self.name)

    def target_snapshot_dir(self) -> str:
        return snapshot_dir(self.target.rootdir, self.name)

    def target_archive_dir(self) -> str:
        return posixpath.join(self.target.rootdir, "archive", "data", *split_table(self.table))

    def target_staging_dir(self) -> str:
        """Where the copy stages the manifest (`snapshot/`) and the files (`archive/`) until `publish`."""
        return staging_dir(self.target.rootdir, self.name)

    def staged_manifest_dir(self) -> str:
        return posixpath.join(self.target_staging_dir(), "snapshot")

    def source_snapshot_exists(self) -> bool:
        return self.src.status_or_none(posixpath.join(self.source_snapshot_dir(), SNAPSHOTINFO)) is not None

    def state(self) -> dict[str, Any] | None:
        return self.records.export()

    # -- checks ----------------------------------------------------------------------------------------

    def target_table_exists(self) -> bool:
        from hbase_migration.data.datapath import open_data_path

        with open_data_path(self.target) as t:
            return bool(t.families(self.table))

    def check(self) -> dict[str, Any] | None:
        """Refuse (ExportRefused, nothing changed) what cannot be exported: the source table missing, the target
        table already there (clone creates it) unless this export cloned it. Returns the ledger's row, if any."""
        from hbase_migration.data.datapath import open_data_path

        existing = self.state()
        if cloned(existing):
            return existing
        with open_data_path(self.source) as s:
            if not s.families(self.table):
                raise ExportRefused(f"table: {self.table!r} does not exist on the source {self.source.name!r}")
        if self.target_table_exists() and not (existing is not None and existing["state"] == "published"):
            raise ExportRefused(
                f"table: {self.table!r} already exists on the target {self.target.name!r}; clone_snapshot creates "
                "it: drop it there (disable, drop), or copy into it with the scan copy (initial_copy scan)")
        return existing

    # -- 1. take ---------------------------------------------------------------------------------------

    def take(self) -> bool:
        """The source snapshot, taken unless it exists. True when this call took it."""
        from hbase_migration.clusters import channels
        from hbase_migration.clusters.shell import ShellCommandError

        self.records.start(self.name, self.source, self.target)
        if self.source_snapshot_exists():
            log.info("snapshot %s of %s exists on %s (taken earlier): reusing it", self.name, self.table,
                     self.source.name)
            self.records.state("snapshot_taken")
            return False
        if (self.state() or {}).get("snapshot_taken_ms"):
            log.warning("snapshot %s was taken earlier and is gone from %s: taking it again (files already on the "
                        "target that the new snapshot shares are skipped)", self.name, self.source.name)
        started = time.monotonic()
        try:
            channels.shell(self.source, [take_statement(self.table, self.name)],
                           timeout_s=max(self.source.shell_timeout_s, 600.0))
        except ShellCommandError as e:
            if "SnapshotExistsException" not in str(e) or not self.source_snapshot_exists():
                raise
        log.info("took snapshot %s of %s on %s in %.1fs (a FLUSH snapshot)", self.name, self.table, self.source.name,
                 time.monotonic() - started)
        self.records.state("snapshot_taken")
        return True

    # -- 2. copy ---------------------------------------------------------------------------------------

    def _read_small(self, client: hdfs.WebHdfs, path: str) -> bytes:
        with client.open(path, 1 << 20) as chunks:
            return b"".join(chunks)

    def read_manifest(self) -> tuple[bytes, bytes]:
        """The source snapshot's `.snapshotinfo` and `data.manifest` (checked: this table's, format 2)."""
        base = self.source_snapshot_dir()
        try:
            info_bytes = self._read_small(self.src, posixpath.join(base, SNAPSHOTINFO))
            manifest_bytes = self._read_small(self.src, posixpath.join(base, DATA_MANIFEST))
        except hdfs.HdfsPathNotFound:
            raise self.failed(f"the source snapshot {self.name!r} does not exist on {self.source.name} ({base}): "
                              "it was deleted, or never taken", source_snapshot=False) from None
        info = parse_snapshot_info(info_bytes)
        encrypted = {f.name: f.encryption for f in parse_data_manifest(manifest_bytes).families if f.encryption}
        if encrypted and not self.options.same_master_key:
            raise ExportRefused(f"{encryption_refusal(self.table, encrypted)}. Nothing was copied; the source snapshot "
                                f"{self.name!r} stays on {self.source.name} (`delete_snapshot {ruby_str(self.name)}` "
                                "there to drop it)")
        if info.table != self.table or info.name != self.name:
            raise ExportRefused(f"snapshot {self.name!r} on {self.source.name} is of table {info.table!r}, not "
                                f"{self.table!r}: choose another --snapshot name")
        if info.version != 2:
            raise ExportRefused(f"snapshot {self.name!r} is in manifest format {info.version}; only format 2 (every "
                                "HBase 2.x snapshot) is exported")
        return info_bytes, manifest_bytes

    def _same_bytes(self, path: str, data: bytes, client: hdfs.WebHdfs | None = None) -> bool:
        client = client or self.dst
        status = client.status_or_none(path)
        return status is not None and status.length == len(data) and self._read_small(client, path) == data

    def _put_manifest(self, directory: str, info_bytes: bytes, manifest_bytes: bytes) -> None:
        """`.snapshotinfo` (its TTL removed) and `data.manifest` into `directory`, each unless already there."""
        self.dst.mkdirs(directory)

        def put(name: str, data: bytes, client: hdfs.WebHdfs) -> None:
            path = posixpath.join(directory, name)
            if not self._same_bytes(path, data, client):
                client.create(path, iter([data]), overwrite=True)

        # both files at once, the second on a client of its own: each CREATE's close waits for the NameNode to
        # complete the file (a few hundred ms here), which the two need not pay one after the other
        with ThreadPoolExecutor(1, thread_name_prefix="export-manifest") as pool:
            info = pool.submit(put, SNAPSHOTINFO, without_ttl(info_bytes), webhdfs_of(self.target))
            put(DATA_MANIFEST, manifest_bytes, self.dst)
            info.result()

    def copy_manifest(self, info_bytes: bytes, manifest_bytes: bytes) -> str:
        """The manifest into the export's staging directory on the target (before any file); returns where it is.
        A snapshot already published there (an earlier attempt) must be this one's."""
        published = self.target_snapshot_dir()
        if self.dst.status_or_none(published) is not None:
            if self._same_bytes(posixpath.join(published, DATA_MANIFEST), manifest_bytes):
                return published
            raise ExportRefused(f"a snapshot {self.name!r} with another manifest is already on the target "
                                f"{self.target.name} ({published}): delete it there (delete_snapshot) or choose "
                                "another --snapshot name")
        staged = self.staged_manifest_dir()
        self._put_manifest(staged, info_bytes, manifest_bytes)
        self.records.state("manifest_copied")
        return staged

    def checksum_mode(self, manifest_dir: str) -> str:
        """`hdfs` when both clusters' HDFS checksums compare (the same algorithm on the manifest, copied with the
        same block size in both places, and equal), else `md5`."""
        if self.options.checksum != "auto":
            return self.options.checksum
        a = self.src.file_checksum(posixpath.join(self.source_snapshot_dir(), DATA_MANIFEST))
        b = self.dst.file_checksum(posixpath.join(manifest_dir, DATA_MANIFEST))
        verdict = hdfs.compare_checksums(a, b)
        if verdict == hdfs.INCOMPARABLE:
            log.warning("the clusters' HDFS checksums do not compare (%s on %s, %s on %s: dfs.bytes-per-checksum or "
                        "dfs.checksum.type differ): every file is verified by an MD5 of the bytes read from the source "
                        "against an MD5 of the target file read back", a.algorithm, self.source.name, b.algorithm,
                        self.target.name)
            return "md5"
        return "hdfs"

    def _present(self, files: Sequence[ExportFile], *, staged: bool = True) -> dict[str, int]:
        """relative path -> length of what the target already holds of `files`, in its `archive/` or (`staged`) in
        the export's staging directory (one LISTSTATUS per family directory and place)."""
        out: dict[str, int] = {}
        bases = [posixpath.join(self.target.rootdir, "archive")]
        if staged:
            bases.append(posixpath.join(self.target_staging_dir(), "archive"))
        for base in bases:
            for d in family_dirs(files):
                try:
                    listed = self.dst.list_status(posixpath.join(base, d))
                except hdfs.HdfsPathNotFound:
                    continue
                out.update({posixpath.join(d, s.path_suffix): s.length for s in listed if s.type == "FILE"})
        return out

    def _sizes(self, files: list[ExportFile]) -> list[ExportFile]:
        """Files whose manifest gave no size, stat'ed on the source (older manifests)."""
        from hbase_migration.data.snapshot_copy import locate

        return [f if f.size >= 0 else replace(f, size=locate(self.src, f, self.source.rootdir)[1].length)
                for f in files]

    def _owner(self) -> tuple[str | None, str | None]:
        root = self.target.rootdir
        marker = self.dst.status_or_none(posixpath.join(root, "hbase.id")) or self.dst.file_status(root)
        return ownership(self.dst.caller(), marker.owner, marker.group)

    def _own_tree(self, files: Sequence[ExportFile], owner: tuple[str | None, str | None]) -> None:
        """HBase's ownership on the directories the copy created under the target's archive/ (each CREATE made its
        parents as the export's user). Done once every file is there: the target's cleaner chore deletes empty
        directories under archive/, so none is made ahead of its files."""
        if owner == (None, None):
            return
        archive = posixpath.join(self.target.rootdir, "archive")
        wanted: set[str] = set()
        for d in family_dirs(files):
            parts = d.split("/")
            wanted.update(posixpath.join(archive, *parts[:i]) for i in range(1, len(parts) + 1))
        for path in sorted(wanted):
            status = self.dst.status_or_none(path)
            if status is not None and (status.owner, status.group) != (owner[0], owner[1] or status.group):
                self.dst.set_owner(path, *owner)

    def copy(self, executor: Any, *, load_limits: Any = None, job_group: str = "snapshot-export") -> dict[str, Any]:
        """Step 2: the manifest, then every file not yet on the target, on `executor`; returns the summary.
        Raises ExportFailed (files failed, the snapshot vanished) naming what is left."""
        started = time.monotonic()
        self.records.start(self.name, self.source, self.target)
        info_bytes, manifest_bytes = self.read_manifest()
        manifest = parse_data_manifest(manifest_bytes)
        files = self._sizes(export_files(manifest))
        manifest_dir = self.copy_manifest(info_bytes, manifest_bytes)
        total_bytes = sum(f.size for f in files)
        done, todo = resume_plan(files, self.records.files(), self._present(files))
        summary: dict[str, Any] = {
            "job": "snapshot_export", "table": self.table, "snapshot": self.name, "copy_id": self.options.copy_id,
            "source": self.source.name, "target": self.target.name, "files_total": len(files),
            "bytes_total": total_bytes, "store_files_in_manifest": manifest.store_files,
            "families": [f.name for f in manifest.families],
            "keep_deleted_cells": [f.name for f in manifest.families
                                   if (f.value("KEEP_DELETED_CELLS") or "").upper() in ("TRUE", "TTL")],
            "files_already_done": len(done), "bytes_already_done": sum(f.size for f in done),
        }
        if manifest_dir == self.target_snapshot_dir() and not todo:
            summary.update(files_copied=0, files_matched=0, bytes_copied=0, published_already=True)
            self.summary = summary
            return summary
        mode = self.checksum_mode(manifest_dir)
        owner = self._owner()
        slots = executor_slots(executor)
        groups = balanced_groups(todo, self.options.tasks or slots, size=lambda f: f.size, key=lambda f: f.relative)
        per_task = task_rate(self.options.task_bytes_per_s, self.options.bytes_per_s, max(1, min(len(groups), slots)))
        log.info("snapshot export %s -> %s of %s (snapshot %s): %d files, %s; %d already on the target (%s), %d to "
                 "copy in %d task(s) of ~%s each%s; checksum %s%s", self.source.name, self.target.name, self.table,
                 self.name, len(files), human_bytes(total_bytes), len(done), human_bytes(summary["bytes_already_done"]),
                 len(todo), len(groups), human_bytes(sum(f.size for f in todo) / max(len(groups), 1)),
                 f", at most {human_bytes(per_task)}/s per task" if per_task else "", mode,
                 f"; files owned by {owner[0]}:{owner[1]}" if owner[0] else "")

        def record(r: FileResult) -> None:
            self.records.file_done(self.name, r)

        from hbase_migration.data.throttle import advertised_host

        sink = ProgressSink(record, host=advertised_host(executor), files=[f.relative for f in todo]).start()
        governor = None
        if load_limits is not None and todo:
            from hbase_migration.data.throttle import LoadGovernor

            governor = LoadGovernor(self.source, load_limits, host=advertised_host(executor),
                                    label=f"{self.table} export",
                                    record=_throttle_recorder(self.ledger, self.options.copy_id, self.table)).start()
        settings = CopySettings(self.source.rootdir, self.target.rootdir, self.target_staging_dir(),
                                chunk_bytes=self.options.chunk_bytes,
                                bytes_per_s=per_task, checksum=mode, owner=owner[0], group=owner[1],
                                load_url=governor.url if governor is not None else None, progress_url=sink.url,
                                progress_key=sink.key)
        monitor = _Monitor(self, sink, files_total=len(files), bytes_total=total_bytes,
                           done_files=len(done), done_bytes=summary["bytes_already_done"])
        monitor.start()
        tasks = [GroupTask(i, g) for i, g in enumerate(groups)]
        error: BaseException | None = None
        results: list[FileResult] = []
        try:
            per_group = executor.run(tasks, functools.partial(_run_group, self.source, self.target, settings),
                                     lambda fresh: [sink.result(r) for g in fresh for r in g])
            results = [r for g in per_group for r in g]
        except BaseException as exc:  # the job failed (a task out of retries, a cancellation): said below
            error = exc
        finally:
            monitor.stop()
            load_control = governor.stop() if governor is not None else None
            sink.stop()
        figures = monitor.figures()
        failed = [r for r in results if r.status == FAILED]
        summary.update(
            files_copied=sum(1 for r in results if r.status == COPIED),
            files_matched=sum(1 for r in results if r.status == MATCHED),
            files_failed=len(failed), bytes_copied=sum(r.bytes_copied for r in results),
            found_in_archive=sum(1 for r in results if r.found_in == "archive" and r.status != FAILED),
            copied_twice=sorted(k for k, n in sink.copies.items() if n > 1),
            seconds=round(time.monotonic() - started, 3), tasks=len(groups), bytes_per_s_per_task=per_task,
            checksum=mode, owner=owner[0], group=owner[1], **figures)
        if load_control is not None:
            summary["load_control"] = load_control
        summary["failures"] = [{"file": r.relative, "error": r.error} for r in failed[:20]]
        self.summary = summary
        if sink.aborted or error is not None or failed:
            reason = sink.aborted or (f"{len(failed)} of {len(todo)} files failed, e.g. {failed[0].relative}: "
                                      f"{failed[0].error}" if failed else f"the copy job failed: "
                                      f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
            raise self.failed(reason, manifest=manifest_dir) from error
        self._verify_all(files)
        self.records.state("files_copied", {"summary": {k: v for k, v in summary.items() if k != "failures"}})
        return summary

    def _verify_all(self, files: Sequence[ExportFile], *, staged: bool = True) -> None:
        """Every file of the snapshot on the target with its length (ExportSnapshot's target verification): staged
        or in `archive/` after the copy, in `archive/` once published (`staged` False)."""
        present = self._present(files, staged=staged)
        wrong = [f"{f.relative} ({present.get(f.relative, 'missing')} bytes, expected {f.size})" for f in files
                 if present.get(f.relative) != f.size]
        if wrong:
            where = "after the copy" if staged else f"in {self.target.rootdir}/archive before publishing"
            raise self.failed(f"{len(wrong)} file(s) not on the target as expected {where}: "
                              + ", ".join(wrong[:5]) + " (a re-run copies them again)")

    # -- 3-5. publish, clone, clean --------------------------------------------------------------------

    def _staged_or_source_manifest(self) -> tuple[bytes, bytes]:
        """The manifest as the copy staged it, else (the staging directory lost) as the source snapshot holds it."""
        staged = self.staged_manifest_dir()
        try:
            return (self._read_small(self.dst, posixpath.join(staged, SNAPSHOTINFO)),
                    self._read_small(self.dst, posixpath.join(staged, DATA_MANIFEST)))
        except hdfs.HdfsPathNotFound:
            return self.read_manifest()

    def _move(self, source: str, destination: str, what: str) -> bool:
        """`source` renamed to `destination` (its parent made first, again if the target's cleaner chore removed it
        as an empty directory of `archive/` meanwhile). False: the destination exists (nothing moved)."""
        for _ in range(5):
            if self.dst.status_or_none(destination) is not None:
                return False
            self.dst.mkdirs(posixpath.dirname(destination))
            try:
                self.dst.move(source, destination)
                return True
            except hdfs.WebHdfsRemoteError as e:
                if e.exception == "FileAlreadyExistsException":
                    return False
                if e.exception != "FileNotFoundException":
                    raise
                if self.dst.status_or_none(source) is None:
                    if self.dst.status_or_none(destination) is not None:
                        return True  # a RENAME retried after a 5xx: the first one had done it
                    raise
        raise self.failed(f"moving {what} into {destination} on {self.target.name} failed five times: its parent "
                          "directory kept vanishing")

    def _merge(self, staged: str, archive: str) -> int:
        """Everything under `staged` into `archive` by renames, a whole directory at once where `archive` lacks it;
        a file already in `archive` with the same length is the same HFile (names are unique), and its staged
        copy is dropped. Returns the renames made."""
        status = self.dst.status_or_none(staged)
        if status is None:
            return 0
        if self._move(staged, archive, staged):
            return 1
        if status.type == "FILE":
            there = self.dst.file_status(archive)
            if there.length != status.length:
                raise self.failed(f"{archive} is already on {self.target.name} with {there.length} bytes, the "
                                  f"staged {staged} has {status.length}: move one of them away and re-run")
            self.dst.delete(staged)
            return 0
        moves = sum(self._merge(posixpath.join(staged, c.path_suffix), posixpath.join(archive, c.path_suffix))
                    for c in self.dst.list_status(staged))
        self.dst.delete(staged)  # empty now
        return moves

    def publish(self) -> None:
        """Step 3: the manifest into `.hbase-snapshot/.tmp/<name>` (from then on HBase's cleaners count its files
        as referenced: HBASE-23202), the staged files renamed into `archive/`, every file checked there with its
        length, HBase's ownership on what the export made, `.tmp/<name>` renamed to `.hbase-snapshot/<name>`, the
        staging directory removed. A master that starts during these seconds deletes `.tmp/<name>` (resetTempDir)
        and may then clean files just moved: the check before the last rename fails, and a re-run copies what
        is missing again."""
        published, tmp = self.target_snapshot_dir(), self.target_working_dir()
        staging = self.target_staging_dir()
        if self.dst.status_or_none(published) is not None:
            self.dst.delete(staging, recursive=True)
            self.records.state("published")
            return
        info_bytes, manifest_bytes = self._staged_or_source_manifest()
        files = self._sizes(export_files(parse_data_manifest(manifest_bytes)))
        self._put_manifest(tmp, info_bytes, manifest_bytes)
        started = time.monotonic()
        moves = sum(self._merge(posixpath.join(staging, "archive", d), posixpath.join(self.target.rootdir, "archive",
                                                                                     d))
                    for d in table_dirs(files))
        self._verify_all(files, staged=False)
        owner = self._owner()
        self._own_tree(files, owner)
        if owner != (None, None):
            for path in (tmp, posixpath.join(tmp, SNAPSHOTINFO), posixpath.join(tmp, DATA_MANIFEST)):
                self.dst.set_owner(path, *owner)
        if self.dst.status_or_none(posixpath.join(tmp, DATA_MANIFEST)) is None:
            raise self.failed(f"{tmp} vanished from {self.target.name} while the files moved into archive/ (a master "
                              "started and removed it: resetTempDir); its cleaner may remove those files: re-run")
        self.dst.move(tmp, published)
        self.dst.delete(staging, recursive=True)
        log.info("snapshot %s published on %s (%s): %d file(s) moved into archive/ in %d rename(s), %.1fs", self.name,
                 self.target.name, published, len(files), moves, time.monotonic() - started)
        self.records.state("published")

    def mob_families(self) -> list[str]:
        """The MOB families (IS_MOB) of the snapshot published on the target; [] when it is gone."""
        try:
            data = self._read_small(self.dst, posixpath.join(self.target_snapshot_dir(), DATA_MANIFEST))
        except hdfs.HdfsPathNotFound:
            return []
        return [f.name for f in parse_data_manifest(data).families if (f.value("IS_MOB") or "").lower() == "true"]

    def keeps_target_snapshot(self, mob: Sequence[str]) -> bool:
        """Whether the imported snapshot stays after the clone: when asked, and always for a table with MOB
        families. A clone's MOB files are HFileLinks in its mobdir, which no store file's MOB_FILE_REFS names, so
        HBase's MOB cleaner chore archives them once hbase.mob.min.age.archive old (seen on 2.6.4: RSMobFileCleaner
        Chore "found 6 files to archive" a minute after the clone, with the bed's minute); the back-references go
        with them, and the HFileCleaner then deletes the MOB files themselves from archive/ unless a snapshot
        names them. Kept, the snapshot keeps them (reads find them in archive/) until a MOB compaction has
        rewritten the family on the target."""
        return self.options.keep_snapshots or bool(mob)

    def clone(self) -> None:
        """Step 4: clone_snapshot creates the table; the imported snapshot is deleted unless kept
        (`keeps_target_snapshot`)."""
        from hbase_migration.clusters import channels
        from hbase_migration.clusters.shell import ShellCommandError

        mob = self.mob_families()
        keep = self.keeps_target_snapshot(mob)
        if mob and not self.options.keep_snapshots:
            self.summary["target_snapshot_kept"] = (
                f"snapshot {self.name!r} stays on {self.target.name}: it holds the MOB files of {self.table}'s "
                f"famil{'y' if len(mob) == 1 else 'ies'} {', '.join(mob)}, which HBase's MOB cleaner would otherwise "
                f"have deleted from the clone (its links are archived). Delete it only after a MOB compaction on the "
                f"target (major_compact {ruby_str(self.table)}, {ruby_str(mob[0])}, 'MOB', for each MOB family) has "
                "rewritten them")
            log.warning("%s", self.summary["target_snapshot_kept"])
        if self.target_table_exists():
            log.info("%s exists on %s: cloned by an earlier attempt", self.table, self.target.name)
            if not keep and self.dst.status_or_none(self.target_snapshot_dir()) is not None:
                channels.shell(self.target, [delete_statement(self.name)])
            self.records.state("cloned")
            return
        started = time.monotonic()
        try:
            channels.shell(self.target, clone_statements(self.table, self.name, keep),
                           timeout_s=max(self.target.shell_timeout_s, 600.0))
        except ShellCommandError as e:
            if not self.target_table_exists():
                raise self.failed(f"clone_snapshot {self.name!r} -> {self.table} on {self.target.name} failed: {e}",
                                  manifest=self.target_snapshot_dir()) from e
            log.warning("%s was cloned on %s but deleting the imported snapshot failed: %s", self.table,
                        self.target.name, e)
        log.info("cloned %s on %s from snapshot %s in %.1fs", self.table, self.target.name, self.name,
                 time.monotonic() - started)
        self.records.state("cloned")

    def clean(self) -> None:
        """Step 5: the source snapshot deleted (unless kept)."""
        from hbase_migration.clusters import channels

        if not self.options.keep_snapshots and self.source_snapshot_exists():
            channels.shell(self.source, [delete_statement(self.name)])
            log.info("deleted snapshot %s on %s", self.name, self.source.name)
        self.records.state("cleaned")

    def finish(self) -> None:
        self.publish()
        self.clone()
        self.clean()

    # -- failures --------------------------------------------------------------------------------------

    def left(self, *, source_snapshot: bool | None = None, manifest: str | None = None) -> str:
        """What this export leaves where, read from the clusters where they answer and from the ledger."""
        def probe(fn: Callable[[], Any], default: Any) -> Any:
            try:
                return fn()
            except Exception:  # a cluster that does not answer: the state is said unknown
                return default

        if source_snapshot is None:
            source_snapshot = probe(self.source_snapshot_exists, None)
        if manifest is None:
            manifest = next((p for p in (self.target_snapshot_dir(), self.target_working_dir(),
                                         self.staged_manifest_dir())
                             if probe(lambda p=p: self.dst.status_or_none(p) is not None, False)), None)
        recorded = probe(self.records.files, {})
        state = probe(self.state, None) or {}
        return left_behind(source=self.source.name, target=self.target.name, table=self.table, name=self.name,
                           source_snapshot=source_snapshot, manifest=manifest, files_done=len(recorded),
                           files_total=state.get("files_total"),
                           bytes_done=sum(int(r.get("size") or 0) for r in recorded.values()),
                           archive_dir=self.target_archive_dir(), staging_dir=self.target_staging_dir(),
                           cloned=state.get("state") in ("cloned", "cleaned"))

    def failed(self, reason: str, *, source_snapshot: bool | None = None, manifest: str | None = None) -> ExportFailed:
        error = ExportFailed(f"snapshot export of {self.table} ({self.name}) stopped: {reason}",
                             self.left(source_snapshot=source_snapshot, manifest=manifest))
        try:
            self.records.state("failed", {"reason": reason, "left": error.left})
        except Exception as e:  # the ledger is bookkeeping: the error says it all
            log.warning("the export's failure was not recorded: %s", e)
        log.error("%s", error)
        return error


def cloned(export: Mapping[str, Any] | None) -> bool:
    """Whether the ledger's row of an export says its table was cloned (a later step may have failed since)."""
    return export is not None and (export["state"] in ("cloned", "cleaned") or bool(export.get("cloned_ms")))


def _throttle_recorder(ledger: Any, copy_id: str, table: str) -> Any:
    """Each load-throttle decision into the ledger (`throttle_decisions`), as the scan copy records them."""
    from types import SimpleNamespace

    from hbase_migration.data.throttle import ledger_recorder

    return ledger_recorder(SimpleNamespace(ledger=ledger), copy_id, table)


def _run_group(source: "Cluster", target: "Cluster", settings: CopySettings, task: GroupTask) -> list[FileResult]:
    """A Spark task (or a thread) copying one group of files."""
    return copy_group(source, target, task.files, settings, task.index)


def executor_slots(executor: Any) -> int:
    """How many tasks the executor runs at once: Spark's default parallelism, the local executor's workers."""
    sc = getattr(executor, "sc", None)
    if sc is not None:
        try:
            return max(1, int(sc.defaultParallelism))
        except Exception:
            return 2
    return max(1, int(getattr(executor, "workers", 1) or 1))


class _Monitor:
    """The driver's watch over a running copy: every `progress_every_s` a progress line in the log and the ledger
    (bytes and files done, rate, ETA); every `snapshot_check_every_s` a look at the source snapshot, which, once
    gone, stops every task (their files would soon be gone too)."""

    def __init__(self, export: SnapshotExport, sink: ProgressSink, *, files_total: int, bytes_total: int,
                 done_files: int, done_bytes: int):
        self.export, self.sink = export, sink
        self.files_total, self.bytes_total = files_total, bytes_total
        self.done_files, self.done_bytes = done_files, done_bytes
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="export-monitor", daemon=True)
        self._last_check = time.monotonic()

    def figures(self) -> dict[str, Any]:
        moving = self.sink.bytes_moving()
        files_done = self.done_files + self.sink.finished_files
        bytes_done = min(self.done_bytes + self.sink.finished_bytes + moving, self.bytes_total)
        elapsed = time.monotonic() - self.started
        line, speed, eta = progress_line(files_done, self.files_total, bytes_done, self.bytes_total, elapsed,
                                         self.sink.finished_bytes + moving)
        return {"files_done": files_done, "bytes_done": bytes_done, "bytes_per_s": round(speed, 1),
                "eta_s": None if eta is None else round(eta, 1), "progress": line}

    def beat(self) -> None:
        f = self.figures()
        log.info("snapshot export %s: %s", self.export.table, f["progress"])
        try:
            self.export.records.progress(files_total=self.files_total, bytes_total=self.bytes_total,
                                         files_done=f["files_done"], bytes_done=f["bytes_done"],
                                         bytes_per_s=f["bytes_per_s"], eta_s=f["eta_s"])
        except Exception as e:
            log.warning("export progress not recorded: %s", e)
        if time.monotonic() - self._last_check >= self.export.options.snapshot_check_every_s:
            self._last_check = time.monotonic()
            try:
                gone = not self.export.source_snapshot_exists()
            except Exception as e:  # the source's NameNode did not answer: the copy goes on, the next look decides
                log.warning("could not check the source snapshot %s: %s", self.export.name, e)
                gone = False
            if gone:
                reason = (f"the source snapshot {self.export.name!r} was deleted from {self.export.source.name} during "
                          f"the export ({self.export.source_snapshot_dir()} is gone): its files are no longer kept")
                log.error("snapshot export %s: %s; stopping every task", self.export.table, reason)
                self.sink.abort(reason)

    def _run(self) -> None:
        while not self._stop.wait(self.export.options.progress_every_s):
            self.beat()

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.beat()


# --------------------------------------------------------------------------------------------------
# Every step (the CLI), and the command lines of the CLI and the Spark job


def run_export(export: SnapshotExport, executor: Any, *, load_limits: Any = None,
               before_take: Callable[[dict[str, Any] | None], None] | None = None,
               before_clone: Callable[[], None] | None = None) -> dict[str, Any]:
    """Steps 1-5 for one table; `before_take(state)` runs before anything changes (the CLI's snapshot checks: space,
    permissions; it raises ExportRefused), `before_clone` before the clone (the CLI creates the target's namespace).
    Returns the summary; raises ExportRefused (nothing changed) or ExportFailed (what is left where)."""
    existing = export.check()
    if before_take is not None and not (existing or {}).get("snapshot_taken_ms"):
        before_take(existing)  # a resumed export passed them when it began
    if cloned(existing):
        log.info("%s was already exported and cloned by %s: nothing to do but the clean-up", export.table,
                 export.options.copy_id)
        export.clean()
        return {"job": "snapshot_export", "table": export.table, "snapshot": export.name, "already_cloned": True}
    if existing is None or existing["state"] != "published":
        export.take()
        summary = export.copy(executor, load_limits=load_limits)
    else:
        summary = {"job": "snapshot_export", "table": export.table, "snapshot": export.name,
                   "published_already": True}
    if before_clone is not None:
        before_clone()
    export.finish()
    summary["cloned"] = True
    summary["snapshots_deleted"] = not export.options.keep_snapshots and "target_snapshot_kept" not in export.summary
    if "target_snapshot_kept" in export.summary:
        summary["target_snapshot_kept"] = export.summary["target_snapshot_kept"]
    return summary


def add_arguments(p: argparse.ArgumentParser, *, job: bool) -> None:
    from hbase_migration.data.jobargs import _finite

    p.add_argument("--source", required=True, help="source cluster (connection JSON/URI, Cluster JSON or conn id)")
    p.add_argument("--target", required=True, help="target cluster (same forms as --source)")
    p.add_argument("--table", required=True, help="the table (ns:name for a namespace); the clone has its name")
    p.add_argument("--copy-id", help="the run this export belongs to: its ledger rows, and the snapshot's name "
                                     "(default: derived from the clusters and the table)")
    p.add_argument("--snapshot", help="the snapshot's name on both clusters (default: from --copy-id and the table)")
    from hbase_migration.data.jobargs import add_ledger_url_args

    add_ledger_url_args(p, "--ledger-url", "the run ledger's SQLAlchemy URL (finished files are recorded there; a "
                                           "re-run skips them). Default: the toolkit's default ledger")
    p.add_argument("--tasks", type=int, help="groups the files are balanced over (default: the task slots)")
    p.add_argument("--task-bytes-per-s", type=_finite, help="bandwidth limit per task (bytes/s)")
    p.add_argument("--bytes-per-s", type=_finite, help="bandwidth limit of the whole export (bytes/s)")
    p.add_argument("--chunk-bytes", type=int, default=1 << 20, help="bytes read and written at once (memory per task "
                                                                     "is a few of these; default 1 MiB)")
    p.add_argument("--checksum", choices=CHECKSUMS, default="auto",
                   help="how copies are verified: auto (HDFS checksums when the clusters' compare, else MD5), hdfs, "
                        "md5")
    p.add_argument("--same-master-key", action="store_true",
                   help="the target's key provider holds the source's master key (hbase.crypto.master.key.name): "
                        "tables with encrypted families (ENCRYPTION) may be exported; refused without it")
    p.add_argument("--max-load", help="load throttle: slow down when a source region server reaches one of these "
                                      "(metric=threshold,...; see hbase_migration/data/throttle.py)")
    p.add_argument("--critical-load", help="load throttle: pause while a source region server is past one of these")
    p.add_argument("--max-pause-s", type=_finite, help="load throttle: paused this long, the export gives up")
    p.add_argument("--load-sample-s", type=_finite, help="load throttle: seconds between two samples (default 5)")
    p.add_argument("--master", help="Spark master (e.g. local[2]); the CLI runs threads in-process without it")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    from hbase_migration.data.jobargs import add_summary_args

    add_summary_args(p)
    p.add_argument("--log-level", default="INFO", help="Python log level")
    if not job:
        p.add_argument("--workers", type=int, default=4, help="threads copying at once without --master (default 4)")
        p.add_argument("--keep-snapshots", action="store_true",
                       help="keep both snapshots after the clone (default: deleted once the table is cloned)")


def parser(prog: str, job: bool) -> argparse.ArgumentParser:
    from hbase_migration.data.jobargs import ArgumentParser

    what = ("Copy a table's snapshot files to another cluster over WebHDFS (the Spark job's part: the manifest, "
            "then every file, resumable; the snapshot is taken and cloned by the caller)" if job else
            "Export a table to another cluster as HBase's ExportSnapshot does, over WebHDFS: a FLUSH snapshot, its "
            "manifest then its files (resumable file by file), clone_snapshot on the target, both snapshots deleted")
    p = ArgumentParser(prog=prog, description=what + ". Prints one JSON summary line; exit 0 done, 1 stopped (what "
                                                     "is left where is said), 2 bad input (nothing changed).")
    add_arguments(p, job=job)
    return p


def prepare(ns: argparse.Namespace) -> tuple["Cluster", "Cluster", ExportOptions, Any]:
    """The clusters, options and load limits of a command line, every one checked (UsageError / ExportRefused:
    exit 2) before anything is opened."""
    from hbase_migration.data import jobargs
    from hbase_migration.data.copy import default_copy_id
    from hbase_migration.data.scope import TableScope

    jobargs.ledger_args(ns)  # first: a URL with a password is refused before any connection is looked up
    source = jobargs.cluster_from_text("source", ns.source)
    target = jobargs.cluster_from_text("target", ns.target)
    jobargs.spark_conf(ns.conf)
    jobargs.summary_args_check(ns)
    require_webhdfs(source, target)
    copy_id = ns.copy_id or "snapshot-" + default_copy_id(source, target, TableScope(table=ns.table))
    options = ExportOptions(ns.table, copy_id, ns.snapshot, ns.tasks, ns.task_bytes_per_s, ns.bytes_per_s,
                            ns.chunk_bytes, ns.checksum, bool(getattr(ns, "keep_snapshots", False)),
                            bool(ns.same_master_key))
    return source, target, options, jobargs.load_limits(ns)


def require_webhdfs(source: "Cluster", target: "Cluster") -> None:
    for which, cluster in (("source", source), ("target", target)):
        if not cluster.webhdfs_url:
            raise ExportRefused(f"{which}: cluster {cluster.name!r} has no webhdfs_url: the snapshot export needs "
                                "WebHDFS on both clusters (the connection's extra webhdfs_url, the NameNode's "
                                "HTTP address, e.g. http://nn:9870)")


def open_ledger(url: str | None) -> Any:
    from hbase_migration.data import jobargs
    from hbase_migration.ledger.location import cli_ledger_url
    from hbase_migration.ledger.store import Ledger, LedgerError

    try:
        return Ledger.open(url or cli_ledger_url())
    except LedgerError as e:
        raise jobargs.UsageError(f"--ledger-url: {e}") from None


def export_main(argv: Sequence[str], make_executor: Callable[[str, Any], Any], *, prog: str, job: bool,
                before_take: Callable[..., None] | None = None, before_clone: Callable[..., None] | None = None
                ) -> int:
    """The command line of `jobs/snapshot_export.py` (`job`: step 2 only) and of the CLI's `snapshot-export`
    (every step). Exit 0 done, 1 stopped or a cluster did not answer (what is left is said), 2 bad input."""
    from hbase_migration.clusters import channels
    from hbase_migration.data import jobargs
    from hbase_migration.data.executors import configure_logging

    ledger = None
    try:
        ns = parser(prog, job).parse_args(list(argv))
        configure_logging(ns.log_level)
        source, target, options, load_limits = prepare(ns)
        ledger = open_ledger(ns.ledger_url)
        export = SnapshotExport(source, target, options, ledger)
    except (jobargs.UsageError, CopyConfigError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        if ledger is not None:
            ledger.close()
        return 2
    status, summary = 0, None
    executor = None
    try:
        if job:
            export.check()
            executor = make_executor(f"snapshot export {options.table}", ns)
            summary = export.copy(executor, load_limits=load_limits)
        else:
            executor = make_executor(f"snapshot export {options.table}", ns)
            take = (lambda state: before_take(source, target, options.table, state,
                                              same_master_key=options.same_master_key)) if before_take else None
            clone = (lambda: before_clone(source, target, options.table)) if before_clone else None
            summary = run_export(export, executor, load_limits=load_limits, before_take=take, before_clone=clone)
    except (jobargs.UsageError, CopyConfigError, ManifestError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except ExportFailed as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        summary = {**(export.summary or {}), "error": e.reason, "left": e.left}
        status = 1
    except (ConnectionError, *channels.auth_errors()) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a shell that refused, a WebHDFS error: said with the state left
        from hbase_migration.clusters.reachability import describe

        left = export.left()
        print(f"{prog}: error: {describe(e)}. {left}", file=sys.stderr)
        summary, status = {**(export.summary or {}), "error": describe(e), "left": left}, 1
    finally:
        describe = getattr(executor, "describe", None)
        if describe is not None and summary is not None:  # Spark: the application id, where it ran
            summary["spark"] = describe()
        close = getattr(executor, "close", None)
        if close is not None:
            close()
        ledger.close()
    text = json.dumps(summary, sort_keys=True, default=str)
    from hbase_migration.data.progress import write_summary

    if write_summary(ns, "snapshot-export", text, prog) is not None:
        status = status or 1
    print(text, flush=True)
    return status


def job_args(source: str, target: str, table: str, *, copy_id: str, ledger_url_file: str, snapshot: str | None = None,
             tasks: int | None = None, task_bytes_per_s: float | None = None, bytes_per_s: float | None = None,
             checksum: str = "auto", max_load: str | None = None, critical_load: str | None = None,
             max_pause_s: float | None = None, load_sample_s: float | None = None, same_master_key: bool = False,
             summary_file: str | None = None, summary_ledger_url_file: str | None = None,
             summary_key: str | None = None) -> list[str]:
    """`application_args` of jobs/snapshot_export.py (the Airflow operator's spark-submit); the ledger goes by the
    name of the file holding its URL (`jobargs.write_ledger_url_file`, shipped with --files), never by the URL."""
    argv = ["--source", source, "--target", target, "--table", table, "--copy-id", copy_id, "--ledger-url-file",
            ledger_url_file]
    if snapshot:
        argv += ["--snapshot", snapshot]
    for flag, value in (("--tasks", tasks), ("--task-bytes-per-s", task_bytes_per_s),
                        ("--bytes-per-s", bytes_per_s)):
        if value:
            argv += [flag, str(value)]
    if checksum != "auto":
        argv += ["--checksum", checksum]
    if same_master_key:
        argv += ["--same-master-key"]
    if max_load or critical_load:
        for flag, value in (("--max-load", max_load), ("--critical-load", critical_load),
                            ("--max-pause-s", max_pause_s), ("--load-sample-s", load_sample_s)):
            if value:
                argv += [flag, str(value)]
    from hbase_migration.data.jobargs import summary_argv

    return argv + summary_argv(summary_file, summary_ledger_url_file, summary_key)
