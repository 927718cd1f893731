"""The cluster's "HDFS": a local directory seen through HDFS paths, with HDFS's quotas and exceptions.

Everything minihbase persists (WALs, oldWALs, store files, table descriptors, hbase.id) goes through here, so a
quota on `/hbase` (or any directory) bites exactly where HDFS's would (reference §6.5):
- a namespace quota counts the directory itself and every directory and file under it;
- a space quota counts bytes x replication; a write that starts a new block must also find room for a whole
  block x replication (HDFS reserves it up front), so writes fail before the files reach the quota;
- renames within a quota directory change nothing; into one, the moved subtree is charged there;
- failures raise `DSQuotaExceededException` / `NSQuotaExceededException` with HDFS's message wording.
Usage is tracked incrementally for quota directories; GETCONTENTSUMMARY walks the files on disk.
"""
from __future__ import annotations

import json
import os
import posixpath
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

_PREFIXES = [("E", 60), ("P", 50), ("T", 40), ("G", 30), ("M", 20), ("k", 10)]


def long2string(n: int, unit: str = "B", decimals: int = 2) -> str:
    """Hadoop's `StringUtils.TraditionalBinaryPrefix.long2String` (e.g. `1 TB`, `1.00 TB`, `512 B`)."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n} {unit}" if unit else f"{sign}{n}"
    for i, (symbol, shift) in enumerate(_PREFIXES):
        if n >= 1 << shift:
            if n & ((1 << shift) - 1) == 0:
                text = str(n >> shift)
            else:
                text = f"{n / (1 << shift):.{decimals}f}"
                if text.startswith("1024") and i > 0:
                    symbol, shift = _PREFIXES[i - 1]
                    text = f"{n / (1 << shift):.{decimals}f}"
            return f"{sign}{text} {symbol}{unit}"
    raise AssertionError("unreachable")


class HDFSError(OSError):
    java_class = "java.io.IOException"
    http_status = 500

    @property
    def exception(self) -> str:
        return self.java_class.rsplit(".", 1)[-1]

    def remote_exception(self) -> dict:
        """WebHDFS's error body."""
        return {"RemoteException": {"exception": self.exception, "javaClassName": self.java_class,
                                    "message": str(self)}}

    def java_text(self) -> str:
        return f"{self.java_class}: {self}"


class FileNotFound(HDFSError):
    java_class = "java.io.FileNotFoundException"
    http_status = 404


class FileAlreadyExists(HDFSError):
    java_class = "org.apache.hadoop.fs.FileAlreadyExistsException"
    http_status = 403


class HDFSIllegalArgument(HDFSError):
    java_class = "java.lang.IllegalArgumentException"
    http_status = 400


class QuotaExceeded(HDFSError):
    java_class = "org.apache.hadoop.hdfs.protocol.QuotaExceededException"
    http_status = 403


class DSQuotaExceeded(QuotaExceeded):
    java_class = "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"

    def __init__(self, path: str, quota: int, consumed: int):
        super().__init__(
            f"The DiskSpace quota of {path} is exceeded: quota = {quota} B = {long2string(quota)} "
            f"but diskspace consumed = {consumed} B = {long2string(consumed)}"
        )
        self.path, self.quota, self.consumed = path, quota, consumed


class NSQuotaExceeded(QuotaExceeded):
    java_class = "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"

    def __init__(self, path: str, quota: int, count: int):
        super().__init__(
            f"The NameSpace quota (directories and files) of directory {path} is exceeded: "
            f"quota={quota} file count={count}"
        )
        self.path, self.quota, self.count = path, quota, count


@dataclass
class _Quota:
    namespace: int = -1  # -1: none
    space: int = -1
    ns_used: int = 0
    space_used: int = 0


def normalize(path: str) -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise HDFSIllegalArgument(f"Pathname {path!r} is not absolute")
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise HDFSIllegalArgument(f"Invalid path name {path}")
    return "/" + "/".join(parts)


def _within(path: str, directory: str) -> bool:
    return directory == "/" or path == directory or path.startswith(directory + "/")


class HDFSOutputStream:
    """An open file being appended to (a WAL); every write is checked against the quotas first."""

    def __init__(self, fs: "MiniHDFS", path: str, fd: int):
        self.fs, self.path, self._fd = fs, path, fd
        self.length = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            raise HDFSError(f"Stream closed: {self.path}")
        self.fs._append(self, data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)


class MiniHDFS:
    def __init__(self, root: Path, replication: int = 3, block_size: int = 1 << 20,
                 quota_file: Path | None = None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.replication = replication
        self.block_size = block_size
        self.quota_file = quota_file
        self._quotas: dict[str, _Quota] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------------------------ paths
    def local(self, path: str) -> Path:
        path = normalize(path)
        return self.root / path.lstrip("/") if path != "/" else self.root

    def exists(self, path: str) -> bool:
        return self.local(path).exists()

    def is_dir(self, path: str) -> bool:
        return self.local(path).is_dir()

    # ------------------------------------------------------------------------------------------ quotas
    def set_quota(self, path: str, namespace: int | None = None, space: int | None = None,
                  persist: bool = True) -> None:
        """None leaves a quota as it is; -1 clears it (HDFS's QUOTA_RESET)."""
        path = normalize(path)
        for name, value in (("namespace quota", namespace), ("storage space quota", space)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or (value <= 0 and value != -1)):
                raise HDFSIllegalArgument(f"Invalid values for {name} : {value}")
        with self._lock:
            if not self.is_dir(path):
                raise FileNotFound(f"Directory does not exist: {path}")
            q = self._quotas.get(path) or _Quota()
            if namespace is not None:
                q.namespace = namespace
            if space is not None:
                q.space = space
            if q.namespace == -1 and q.space == -1:
                self._quotas.pop(path, None)
            else:
                s = self._summary(path)
                q.ns_used = s["directoryCount"] + s["fileCount"]
                q.space_used = s["spaceConsumed"]
                self._quotas[path] = q
            if persist:
                self._save_quotas()

    def quotas(self) -> dict[str, dict]:
        with self._lock:
            return {p: {"namespace": q.namespace, "space": q.space} for p, q in sorted(self._quotas.items())}

    def _save_quotas(self) -> None:
        if self.quota_file is None:
            return
        tmp = self.quota_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.quotas(), indent=1, sort_keys=True))
        tmp.replace(self.quota_file)

    def load_saved_quotas(self) -> None:
        """Quotas set at runtime (WebHDFS or control) survive a restart, as the namenode keeps them."""
        if self.quota_file is None or not self.quota_file.exists():
            return
        for path, q in json.loads(self.quota_file.read_text()).items():
            if self.is_dir(path):
                self.set_quota(path, q["namespace"], q["space"], persist=False)

    def _quota_dirs(self, path: str) -> list[tuple[str, _Quota]]:
        return [(d, q) for d, q in self._quotas.items() if _within(path, d)]

    def _check(self, path: str, ns_delta: int, space_delta: int, exclude: str | None = None) -> None:
        for d, q in self._quota_dirs(path):
            if exclude is not None and _within(exclude, d):
                continue
            if ns_delta and q.namespace >= 0 and q.ns_used + ns_delta > q.namespace:
                raise NSQuotaExceeded(d, q.namespace, q.ns_used + ns_delta)
            if space_delta and q.space >= 0 and q.space_used + space_delta > q.space:
                raise DSQuotaExceeded(d, q.space, q.space_used + space_delta)

    def _charge(self, path: str, ns_delta: int, space_delta: int, exclude: str | None = None) -> None:
        for d, q in self._quota_dirs(path):
            if exclude is not None and _within(exclude, d):
                continue
            q.ns_used += ns_delta
            q.space_used += space_delta

    # ------------------------------------------------------------------------------------------ writes
    def mkdirs(self, path: str) -> None:
        path = normalize(path)
        with self._lock:
            missing = []
            cur = path
            while cur != "/" and not self.local(cur).exists():
                missing.append(cur)
                cur = posixpath.dirname(cur)
            if self.local(cur).is_file():
                raise FileAlreadyExists(f"Parent path is not a directory: {cur}")
            for d in reversed(missing):
                self._check(d, 1, 0)
                self.local(d).mkdir()
                self._charge(d, 1, 0)

    def create(self, path: str, overwrite: bool = False) -> HDFSOutputStream:
        path = normalize(path)
        with self._lock:
            local = self.local(path)
            if local.exists():
                if local.is_dir() or not overwrite:
                    raise FileAlreadyExists(f"{path} for client 127.0.0.1 already exists")
                self.delete(path)
            self.mkdirs(posixpath.dirname(path))
            self._check(path, 1, 0)
            fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            self._charge(path, 1, 0)
            return HDFSOutputStream(self, path, fd)

    def _append(self, stream: HDFSOutputStream, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            repl = self.replication
            delta = len(data) * repl
            check = delta
            if self.block_size > 0:
                blocks_before = -(-stream.length // self.block_size)
                blocks_after = -(-(stream.length + len(data)) // self.block_size)
                if blocks_after > blocks_before:
                    # A new block: HDFS charges a whole block x replication when it allocates it.
                    reserve = (blocks_after - blocks_before) * self.block_size * repl
                    check = max(check, reserve)
            self._check(stream.path, 0, check)
            os.write(stream._fd, data)
            stream.length += len(data)
            self._charge(stream.path, 0, delta)

    def write_file(self, path: str, data: bytes, overwrite: bool = False) -> None:
        stream = self.create(path, overwrite=overwrite)
        try:
            stream.write(data)
        except BaseException:
            stream.close()
            self.delete(path)
            raise
        stream.close()

    def read_file(self, path: str) -> bytes:
        local = self.local(path)
        if not local.is_file():
            raise FileNotFound(f"File does not exist: {normalize(path)}")
        return local.read_bytes()

    def rename(self, src: str, dst: str) -> None:
        src, dst = normalize(src), normalize(dst)
        with self._lock:
            lsrc, ldst = self.local(src), self.local(dst)
            if not lsrc.exists():
                raise FileNotFound(f"File does not exist: {src}")
            if ldst.exists():
                raise FileAlreadyExists(f"rename destination {dst} already exists")
            self.mkdirs(posixpath.dirname(dst))
            s = self._summary(src)
            ns = s["directoryCount"] + s["fileCount"]
            space = s["spaceConsumed"]
            self._check(dst, ns, space, exclude=src)
            os.rename(lsrc, ldst)
            self._charge(src, -ns, -space, exclude=dst)
            self._charge(dst, ns, space, exclude=src)
            for d in [d for d in self._quotas if _within(d, src)]:
                self._quotas[dst + d[len(src):]] = self._quotas.pop(d)

    def delete(self, path: str, recursive: bool = False) -> bool:
        path = normalize(path)
        if path == "/":
            raise HDFSIllegalArgument("Cannot delete /")
        with self._lock:
            local = self.local(path)
            if not local.exists():
                return False
            if local.is_dir() and any(local.iterdir()) and not recursive:
                raise HDFSError(f"`{path} is non empty': Directory is not empty")
            s = self._summary(path)
            if local.is_dir():
                shutil.rmtree(local)
            else:
                local.unlink()
            self._charge(path, -(s["directoryCount"] + s["fileCount"]), -s["spaceConsumed"])
            for d in [d for d in self._quotas if _within(d, path)]:
                del self._quotas[d]
            return True

    # ------------------------------------------------------------------------------------------ reads
    def list_dir(self, path: str) -> list[str]:
        local = self.local(path)
        if not local.is_dir():
            raise FileNotFound(f"File {normalize(path)} does not exist.")
        return sorted(p.name for p in local.iterdir())

    def _status(self, path: str, local: Path, suffix: str) -> dict:
        st = local.stat()
        is_dir = local.is_dir()
        return {
            "accessTime": 0 if is_dir else int(st.st_atime * 1000),
            "blockSize": 0 if is_dir else self.block_size,
            "childrenNum": len(os.listdir(local)) if is_dir else 0,
            "fileId": st.st_ino,
            "group": "supergroup",
            "length": 0 if is_dir else st.st_size,
            "modificationTime": int(st.st_mtime * 1000),
            "owner": "hbase",
            "pathSuffix": suffix,
            "permission": "755" if is_dir else "644",
            "replication": 0 if is_dir else self.replication,
            "storagePolicy": 0,
            "type": "DIRECTORY" if is_dir else "FILE",
        }

    def file_status(self, path: str) -> dict:
        path = normalize(path)
        local = self.local(path)
        if not local.exists():
            raise FileNotFound(f"File does not exist: {path}")
        return self._status(path, local, "")

    def list_status(self, path: str) -> list[dict]:
        path = normalize(path)
        local = self.local(path)
        if not local.exists():
            raise FileNotFound(f"File {path} does not exist.")
        if local.is_file():
            return [self._status(path, local, "")]
        out = []
        for name in self.list_dir(path):
            try:
                out.append(self._status(posixpath.join(path, name), local / name, name))
            except FileNotFoundError:  # deleted (or archived) while we listed
                continue
        return out

    def _summary(self, path: str) -> dict:
        local = self.local(path)
        if not local.exists():
            raise FileNotFound(f"File does not exist: {normalize(path)}")
        if local.is_file():
            size = local.stat().st_size
            return {"directoryCount": 0, "fileCount": 1, "length": size,
                    "spaceConsumed": size * self.replication}
        dirs, files, length = 1, 0, 0
        for base, dnames, fnames in os.walk(local):
            dirs += len(dnames)
            files += len(fnames)
            for f in fnames:
                try:
                    length += os.stat(os.path.join(base, f)).st_size
                except FileNotFoundError:  # removed while we walked
                    files -= 1
        return {"directoryCount": dirs, "fileCount": files, "length": length,
                "spaceConsumed": length * self.replication}

    def content_summary(self, path: str) -> dict:
        """WebHDFS GETCONTENTSUMMARY's `ContentSummary` object."""
        path = normalize(path)
        with self._lock:
            s = self._summary(path)
            q = self._quotas.get(path)
        # Hadoop 3.4's NameNode also sends the erasure-coding policy ("" for replicated files) and the
        # snapshot figures (0 without snapshots): seen by the conformance suite
        return {**s, "quota": q.namespace if q else -1, "spaceQuota": q.space if q else -1, "typeQuota": {},
                "ecPolicy": "", "snapshotDirectoryCount": 0, "snapshotFileCount": 0, "snapshotLength": 0,
                "snapshotSpaceConsumed": 0}

    def quota_usage(self, path: str) -> dict:
        try:
            s = self.content_summary(path)
        except FileNotFound as e:  # FSDirStatAndListingOp.getQuotaUsage's wording
            raise FileNotFound(f"File/Directory does not exist: {normalize(path)}") from e
        return {"fileAndDirectoryCount": s["directoryCount"] + s["fileCount"], "quota": s["quota"],
                "spaceConsumed": s["spaceConsumed"], "spaceQuota": s["spaceQuota"], "typeQuota": {}}
