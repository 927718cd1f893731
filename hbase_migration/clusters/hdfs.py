"""oldWALs and HDFS quotas over WebHDFS (HDFS's `GETCONTENTSUMMARY`/`GETQUOTAUSAGE`; HBase's `LogCleaner`): how
much room is left, and for how long.

A disabled or lagging peer pins every WAL written since it was added (ReplicationLogCleaner keeps any
WAL a queue references), so `<rootdir>/oldWALs` grows for the whole copy. When a space or namespace
quota on oldWALs or on any ancestor is exceeded, WAL rolls and flushes fail and region servers abort.
This module measures the quotas (`quota_usage`), the growth (`growth_rate`), and decides before the
copy (`headroom_decision`) and during it (`watchdog_decision`). The decisions are pure functions.

`WebHdfs` is also the snapshot export's file channel (`hbase_migration/data/snapshot_copy.py`): OPEN streamed in
bounded chunks, CREATE from an iterator of chunks (HTTP chunked transfer, as Hadoop's own WebHdfsFileSystem
sends it), MKDIRS, RENAME, DELETE, GETFILECHECKSUM, SETOWNER, SETPERMISSION, CHECKACCESS, GETHOMEDIRECTORY.
The NameNode answers a data operation with a redirect to a DataNode; the client follows it itself, without the
cluster's SPNEGO (a DataNode's URL carries the delegation token the NameNode put in it).
"""
from __future__ import annotations

import contextlib
import logging
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence
from urllib.parse import quote

DEFAULT_QUOTA_MARK = 0.8  # fraction of an oldWALs quota that counts as pressure (preflight, watchdog, watch)

log = logging.getLogger(__name__)

UNSET = -1  # HDFS reports an unset quota as -1
NO_LIMIT = (1 << 63) - 1  # HdfsConstants.QUOTA_DONT_SET: the root's own namespace quota, unless one is set


class WebHdfsError(RuntimeError):
    """WebHDFS could not answer the question; the message names the namenode and the path."""


class WebHdfsUnreachable(WebHdfsError):
    """No answer from the WebHDFS endpoint (connection refused, timeout, 5xx) after every attempt."""


class WebHdfsRemoteError(WebHdfsError):
    """The namenode answered with a RemoteException (HDFS's own error, e.g. a missing path)."""

    def __init__(self, message: str, *, exception: str | None = None, java_class: str | None = None,
                 status: int | None = None, path: str | None = None, op: str | None = None):
        super().__init__(message)
        self.exception = exception
        self.java_class = java_class
        self.status = status
        self.path = path
        self.op = op


class HdfsPathNotFound(WebHdfsRemoteError):
    """FileNotFoundException: the path does not exist."""


# --------------------------------------------------------------------------------------------------
# WebHDFS JSON bodies (pure parsers; unknown fields are ignored, as newer Hadoops add some)


@dataclass(frozen=True)
class TypeQuota:
    consumed: int
    quota: int


@dataclass(frozen=True)
class ContentSummary:
    """GETCONTENTSUMMARY: sizes of a subtree and the quotas set ON that directory (-1 = unset).

    `length` is logical bytes; `space_consumed` is raw bytes (length x replication), which is what a
    space quota counts. A namespace quota counts directories (the directory itself included) + files.
    """

    directory_count: int
    file_count: int
    length: int
    quota: int
    space_consumed: int
    space_quota: int
    type_quota: Mapping[str, TypeQuota] = field(default_factory=dict)

    @property
    def names(self) -> int:
        """What a namespace quota counts: directories + files."""
        return self.directory_count + self.file_count


@dataclass(frozen=True)
class FileStatus:
    """One FileStatus object of GETFILESTATUS / LISTSTATUS."""

    path_suffix: str
    type: str  # FILE | DIRECTORY | SYMLINK
    length: int
    modification_time_ms: int
    access_time_ms: int = 0
    replication: int = 0
    block_size: int = 0
    owner: str = ""
    group: str = ""
    permission: str = ""
    children_num: int | None = None


@dataclass(frozen=True)
class FileChecksum:
    """GETFILECHECKSUM: HDFS's MD5-of-MD5-of-CRC (`MD5-of-0MD5-of-512CRC32C`). Its value depends on the block size,
    `dfs.bytes-per-checksum` and the CRC type as well as on the bytes: two files compare only when their algorithm
    names are equal and both were written with the same block size (`compare_checksums`)."""

    algorithm: str
    bytes: str  # hex, as WebHDFS gives it
    length: int

    def to_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "bytes": self.bytes, "length": self.length}


def parse_file_checksum(body: Any) -> FileChecksum:
    """`{"FileChecksum": {"algorithm", "bytes", "length"}}` -> FileChecksum."""
    fc = _object(body, "FileChecksum", "GETFILECHECKSUM")
    algorithm, value = fc.get("algorithm"), fc.get("bytes")
    if not isinstance(algorithm, str) or not isinstance(value, str):
        raise WebHdfsError(f"WebHDFS GETFILECHECKSUM: algorithm and bytes must be strings, got {str(fc)[:200]!r}")
    return FileChecksum(algorithm, value.lower(), _int(fc, "length", "GETFILECHECKSUM", 0))


EQUAL, DIFFERENT, INCOMPARABLE = "equal", "different", "incomparable"


def compare_checksums(a: FileChecksum | None, b: FileChecksum | None) -> str:
    """`equal`, `different`, or `incomparable` (one is missing, or the algorithms differ: the clusters'
    `dfs.bytes-per-checksum` or checksum type, or the files' block sizes, are not the same). HBASE-28656 compares the
    algorithm first too."""
    if a is None or b is None or a.algorithm != b.algorithm:
        return INCOMPARABLE
    return EQUAL if a.bytes == b.bytes else DIFFERENT


def _int(obj: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise WebHdfsError(f"WebHDFS {where}: field {key!r} must be an integer, got {value!r}")
    return value


def _object(body: Any, key: str, where: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping) or not isinstance(body.get(key), Mapping):
        raise WebHdfsError(f"WebHDFS {where}: expected a JSON object with {key!r}, got {str(body)[:200]!r}")
    return body[key]


def _type_quotas(raw: Any, where: str) -> dict[str, TypeQuota]:
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise WebHdfsError(f"WebHDFS {where}: typeQuota must be an object, got {raw!r}")
    types: dict[str, TypeQuota] = {}
    for storage_type, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise WebHdfsError(f"WebHDFS {where}: typeQuota.{storage_type} must be an object, got {entry!r}")
        types[storage_type] = TypeQuota(_int(entry, "consumed", where, 0), _int(entry, "quota", where, UNSET))
    return types


def parse_content_summary(body: Any) -> ContentSummary:
    """`{"ContentSummary": {...}}` -> ContentSummary; missing quotas read as unset (-1)."""
    cs = _object(body, "ContentSummary", "GETCONTENTSUMMARY")
    where = "GETCONTENTSUMMARY"
    types = _type_quotas(cs.get("typeQuota"), where)
    return ContentSummary(
        directory_count=_int(cs, "directoryCount", where),
        file_count=_int(cs, "fileCount", where),
        length=_int(cs, "length", where),
        quota=_int(cs, "quota", where, UNSET),
        space_consumed=_int(cs, "spaceConsumed", where),
        space_quota=_int(cs, "spaceQuota", where, UNSET),
        type_quota=types,
    )


@dataclass(frozen=True)
class QuotaCounts:
    """GETQUOTAUSAGE: the quotas set on a directory and what counts against them, as the NameNode keeps them on a
    directory that has a quota (its DirectoryWithQuotaFeature): answered without walking the subtree. On a
    directory without a quota the NameNode computes the same figures by a content summary, so the watchdog asks it
    only of the directories found to bear one. `names` is directories + files, as in `ContentSummary`."""

    names: int
    space_consumed: int
    quota: int
    space_quota: int
    type_quota: Mapping[str, TypeQuota] = field(default_factory=dict)


def parse_quota_usage(body: Any) -> QuotaCounts:
    """`{"QuotaUsage": {"fileAndDirectoryCount", "quota", "spaceConsumed", "spaceQuota", "typeQuota"}}`."""
    where = "GETQUOTAUSAGE"
    qu = _object(body, "QuotaUsage", where)
    return QuotaCounts(_int(qu, "fileAndDirectoryCount", where), _int(qu, "spaceConsumed", where),
                       _int(qu, "quota", where, UNSET), _int(qu, "spaceQuota", where, UNSET),
                       _type_quotas(qu.get("typeQuota"), where))


def op_unsupported(exc: BaseException, op: str) -> bool:
    """Whether a WebHDFS error says the NameNode does not know `op` (an older Hadoop: `IllegalArgumentException:
    Invalid value for webhdfs parameter "op": No enum constant ...GetOpParam.Op.<op>`)."""
    return (isinstance(exc, WebHdfsRemoteError) and exc.exception == "IllegalArgumentException"
            and op in str(exc) and '"op"' in str(exc))


def _file_status(obj: Any, where: str) -> FileStatus:
    if not isinstance(obj, Mapping):
        raise WebHdfsError(f"WebHDFS {where}: a FileStatus must be an object, got {obj!r}")
    children = obj.get("childrenNum")
    return FileStatus(
        path_suffix=str(obj.get("pathSuffix", "")),
        type=str(obj.get("type", "")),
        length=_int(obj, "length", where),
        modification_time_ms=_int(obj, "modificationTime", where),
        access_time_ms=_int(obj, "accessTime", where, 0),
        replication=_int(obj, "replication", where, 0),
        block_size=_int(obj, "blockSize", where, 0),
        owner=str(obj.get("owner", "")),
        group=str(obj.get("group", "")),
        permission=str(obj.get("permission", "")),
        children_num=children if isinstance(children, int) and not isinstance(children, bool) else None,
    )


def parse_file_status(body: Any) -> FileStatus:
    """`{"FileStatus": {...}}` (GETFILESTATUS)."""
    return _file_status(_object(body, "FileStatus", "GETFILESTATUS"), "GETFILESTATUS")


def parse_file_statuses(body: Any) -> list[FileStatus]:
    """`{"FileStatuses": {"FileStatus": [...]}}` (LISTSTATUS), in the order HDFS gave them."""
    statuses = _object(body, "FileStatuses", "LISTSTATUS").get("FileStatus")
    if not isinstance(statuses, list):
        raise WebHdfsError(f"WebHDFS LISTSTATUS: FileStatuses.FileStatus must be a list, got {statuses!r}")
    return [_file_status(s, "LISTSTATUS") for s in statuses]


def parse_remote_exception(body: Any) -> tuple[str, str, str] | None:
    """`{"RemoteException": {"exception", "javaClassName", "message"}}` -> the three, else None."""
    if not isinstance(body, Mapping) or not isinstance(body.get("RemoteException"), Mapping):
        return None
    exc = body["RemoteException"]
    return str(exc.get("exception", "")), str(exc.get("javaClassName", "")), str(exc.get("message", ""))


# --------------------------------------------------------------------------------------------------
# The client


class _Retryable(Exception):
    def __init__(self, message: str, response: Any = None):
        super().__init__(message)
        self.response = response


def _absolute(path: str) -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"HDFS path must be absolute (start with '/'), got {path!r}")
    normalized = posixpath.normpath(path)
    return "/" if normalized in ("/", "//") else normalized


class WebHdfs:
    """A WebHDFS client (`/webhdfs/v1/<path>?op=...`) with retries and clear errors: reads (summaries, statuses,
    checksums, OPEN streamed) and the writes the snapshot export needs.

    `url` is the namenode's HTTP address (`http://nn:9870`; a trailing `/webhdfs/v1` is accepted).
    Connection errors, timeouts and 5xx answers are retried (`attempts` in all); a RemoteException is
    turned into WebHdfsRemoteError (HdfsPathNotFound for a missing path) at once.
    """

    def __init__(self, url: str, timeout_s: float = 10.0, attempts: int = 3, *, user: str | None = None,
                 backoff_s: float = 0.5, session: Any = None):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"WebHdfs url must start with http:// or https://, got {url!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise ValueError(f"WebHdfs timeout_s must be a positive number, got {timeout_s!r}")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"WebHdfs attempts must be an integer >= 1, got {attempts!r}")
        base = url.rstrip("/")
        if base.endswith("/webhdfs/v1"):
            base = base[: -len("/webhdfs/v1")]
        self.url = base
        self.timeout_s = float(timeout_s)
        self.attempts = attempts
        self.user = user
        self.backoff_s = backoff_s
        self._session = session

    def __repr__(self) -> str:
        return f"WebHdfs({self.url!r})"

    def _url(self, path: str) -> str:
        return f"{self.url}/webhdfs/v1{quote(_absolute(path), safe='/')}"

    def _params(self, op: str, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
        params = {"op": op}
        if self.user:
            params["user.name"] = self.user
        for key, value in (extra or {}).items():
            if value is not None:
                params[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return params

    def _get(self, path: str, op: str, extra: Mapping[str, Any] | None = None) -> Any:
        path = _absolute(path)
        return self._request(self._url(path), self._params(op, extra), op, path)

    def _http(self) -> Any:
        if self._session is None:
            from hbase_migration.clusters import channels

            self._session = channels.http(None)
        return self._session

    def capacity(self) -> "HdfsCapacity":
        """The datanodes' capacity from the namenode's `/jmx` (same HTTP port as WebHDFS): WebHDFS itself has
        no free-space operation before Hadoop 3.4 (GETSTATUS); FSNamesystem's bean has it on every version."""
        body = self._request(f"{self.url}/jmx", {"qry": NAMENODE_BEAN}, "jmx", NAMENODE_BEAN)
        return parse_fsnamesystem(body, self.url)

    def _send(self, method: str, url: str, params: Mapping[str, str], op: str, path: str, *,
              allow_redirects: bool = True, plain: bool = False, timeout: Any = None, streamed: bool = False) -> Any:
        """One request, retried on connection errors, timeouts and 5xx (`attempts` in all); the last response.
        `plain`: without the cluster's SPNEGO (a DataNode's redirect URL carries its own delegation token);
        `streamed`: the body is read by the caller, as it comes."""
        import requests
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        http = self._http()
        kwargs: dict[str, Any] = {"params": params, "timeout": timeout or self.timeout_s,
                                  "allow_redirects": allow_redirects, "stream": streamed}
        if plain:
            kwargs["auth"] = _no_auth

        def once() -> Any:
            response = http.request(method, url, **kwargs)
            if response.status_code >= 500:
                raise _Retryable(f"HTTP {response.status_code}", response)
            return response

        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.backoff_s, max=max(self.backoff_s, 5.0)),
            retry=retry_if_exception_type((_Retryable, requests.ConnectionError, requests.Timeout)),
            reraise=True,
        )
        try:
            return retrying(once)
        except _Retryable as exc:
            response = exc.response  # the last 5xx: report HDFS's own error if it sent one
            if parse_remote_exception(_json_or_none(response)) is None:
                raise WebHdfsUnreachable(
                    f"WebHDFS {self.url}: {op} {path} failed after {self.attempts} attempt(s): HTTP "
                    f"{response.status_code}: {response.text[:200]}") from None
            return response
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise WebHdfsUnreachable(
                f"WebHDFS {self.url} unreachable: {op} {path} failed after {self.attempts} attempt(s): "
                f"{type(exc).__name__}: {exc}") from exc

    def _answer(self, response: Any, op: str, path: str, ok: tuple[int, ...] = (200,), json_body: bool = True) -> Any:
        """The JSON body of a successful answer (None when `json_body` is off); HDFS's RemoteException raised as
        WebHdfsRemoteError (HdfsPathNotFound for a missing path)."""
        body = _json_or_none(response)
        remote = parse_remote_exception(body)
        if remote is not None:
            exception, java_class, message = remote
            message = message.split("\n\tat ", 1)[0].strip()  # a DataNode sends the Java stack trace along
            kind = HdfsPathNotFound if exception == "FileNotFoundException" else WebHdfsRemoteError
            raise kind(f"WebHDFS {self.url}: {op} {path}: {exception}: {message}", exception=exception,
                       java_class=java_class, status=response.status_code, path=path, op=op)
        if response.status_code not in ok or (json_body and body is None):
            what = "without a JSON body" if json_body and body is None else "without a RemoteException"
            raise WebHdfsError(f"WebHDFS {self.url}: {op} {path} answered HTTP {response.status_code} "
                               f"{what}: {response.text[:200]!r}")
        return body if json_body else None

    def _request(self, url: str, params: Mapping[str, str], op: str, path: str) -> Any:
        return self._answer(self._send("GET", url, params, op, path), op, path)

    def _put(self, path: str, op: str, extra: Mapping[str, Any] | None = None, json_body: bool = True) -> Any:
        path = _absolute(path)
        response = self._send("PUT", self._url(path), self._params(op, extra), op, path)
        return self._answer(response, op, path, json_body=json_body)

    def _redirect(self, method: str, path: str, op: str, extra: Mapping[str, Any] | None = None,
                  streamed: bool = False) -> tuple[str | None, Any]:
        """Where the NameNode sends a data operation: (the DataNode URL of its 307's Location, None), or (None, the
        answer) when the endpoint answers it itself (HttpFS, a gateway that serves the data without a redirect)."""
        path = _absolute(path)
        response = self._send(method, self._url(path), self._params(op, extra), op, path, allow_redirects=False,
                              streamed=streamed)
        if response.status_code in (301, 302, 303, 307, 308) and response.headers.get("Location"):
            response.close()
            return response.headers["Location"], None
        if 200 <= response.status_code < 300:
            return None, response
        self._answer(response, op, path)  # a RemoteException (a missing file, a refused permission)
        raise WebHdfsError(f"WebHDFS {self.url}: {op} {path} answered HTTP {response.status_code} without a "
                           f"redirect to a DataNode: {response.text[:200]!r}")

    # -- reading --------------------------------------------------------------------------------------

    def content_summary(self, path: str) -> ContentSummary:
        return parse_content_summary(self._get(path, "GETCONTENTSUMMARY"))

    def quota_counts(self, path: str) -> QuotaCounts:
        """GETQUOTAUSAGE (Hadoop 3.0+): cheap on a directory that has a quota, a content summary's walk on one
        that has none."""
        return parse_quota_usage(self._get(path, "GETQUOTAUSAGE"))

    def list_status(self, path: str) -> list[FileStatus]:
        return parse_file_statuses(self._get(path, "LISTSTATUS"))

    def file_status(self, path: str) -> FileStatus:
        return parse_file_status(self._get(path, "GETFILESTATUS"))

    def status_or_none(self, path: str) -> FileStatus | None:
        """GETFILESTATUS, None when the path does not exist."""
        try:
            return self.file_status(path)
        except HdfsPathNotFound:
            return None

    def home_directory(self) -> str:
        """GETHOMEDIRECTORY: `/user/<the user WebHDFS acts as>` (SPNEGO's short name, or `user.name`)."""
        body = self._get("/", "GETHOMEDIRECTORY")
        home = body.get("Path") if isinstance(body, Mapping) else None
        if not isinstance(home, str) or not home.startswith("/"):
            raise WebHdfsError(f"WebHDFS {self.url}: GETHOMEDIRECTORY answered {str(body)[:200]!r}")
        return home

    def caller(self) -> str:
        """The user HDFS sees this client as (the last part of its home directory)."""
        return posixpath.basename(self.home_directory().rstrip("/"))

    def check_access(self, path: str, fsaction: str) -> None:
        """CHECKACCESS (`rwx` style, e.g. `-wx`): returns when allowed; raises WebHdfsRemoteError
        (AccessControlException) when not. Changes nothing."""
        if not isinstance(fsaction, str) or len(fsaction) != 3 or any(c not in f"{a}-" for c, a in
                                                                        zip(fsaction, "rwx")):
            raise ValueError(f"fsaction must be like 'rwx', '-w-' or 'r-x', got {fsaction!r}")
        path = _absolute(path)
        response = self._send("GET", self._url(path), self._params("CHECKACCESS", {"fsaction": fsaction}),
                              "CHECKACCESS", path)
        self._answer(response, "CHECKACCESS", path, json_body=False)

    def file_checksum(self, path: str) -> FileChecksum:
        """GETFILECHECKSUM (the NameNode sends it to a DataNode, which computes it)."""
        path = _absolute(path)
        location, response = self._redirect("GET", path, "GETFILECHECKSUM")
        if location is not None:
            response = self._send("GET", location, {}, "GETFILECHECKSUM", path, plain=True)
        return parse_file_checksum(self._answer(response, "GETFILECHECKSUM", path))

    @contextlib.contextmanager
    def open(self, path: str, chunk_size: int = 1 << 20, offset: int = 0) -> Iterator[Iterator[bytes]]:
        """OPEN, streamed: yields an iterator of chunks of at most `chunk_size` bytes (memory stays bounded
        whatever the file's size). The connection is closed when the block ends."""
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size!r}")
        path = _absolute(path)
        location, response = self._redirect("GET", path, "OPEN", {"offset": offset or None}, streamed=True)
        if location is not None:
            response = self._send("GET", location, {}, "OPEN", path, plain=True, streamed=True)
        try:
            if response.status_code != 200:
                self._answer(response, "OPEN", path)
                raise WebHdfsError(f"WebHDFS {self.url}: OPEN {path} answered HTTP {response.status_code}")
            yield response.iter_content(chunk_size)
        finally:
            response.close()

    # -- writing --------------------------------------------------------------------------------------

    def mkdirs(self, path: str, permission: str | None = None) -> bool:
        """MKDIRS (with parents, as `mkdir -p`); True when the directory exists afterwards."""
        body = self._put(path, "MKDIRS", {"permission": permission})
        return bool(body.get("boolean")) if isinstance(body, Mapping) else False

    def create(self, path: str, chunks: Iterable[bytes], *, overwrite: bool = False, blocksize: int | None = None,
               permission: str | None = None, replication: int | None = None) -> None:
        """CREATE from `chunks` (sent with HTTP chunked transfer encoding as they come: nothing is buffered
        whole). The NameNode's redirect is taken again on a 5xx; the data itself is sent once (an iterator cannot
        be replayed): a failure raises, and the caller writes the file again."""
        path = _absolute(path)
        location, direct = self._redirect("PUT", path, "CREATE", {"overwrite": overwrite, "blocksize": blocksize,
                                                                  "permission": permission,
                                                                  "replication": replication})
        if location is None:
            raise WebHdfsError(f"WebHDFS {self.url}: CREATE {path} answered HTTP {direct.status_code} without "
                               "asking for the data (no redirect)")
        import requests

        try:
            response = self._http().request("PUT", location, data=_chunks(chunks), auth=_no_auth,
                                            headers={"Content-Type": "application/octet-stream"},
                                            timeout=(self.timeout_s, max(self.timeout_s, 120.0)))
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise WebHdfsUnreachable(f"WebHDFS {self.url}: CREATE {path}: the DataNode did not take the data: "
                                     f"{type(exc).__name__}: {exc}") from exc
        self._answer(response, "CREATE", path, ok=(200, 201), json_body=False)

    def rename(self, source: str, destination: str) -> bool:
        """RENAME; HDFS's own answer (False: the source is missing, or the destination exists)."""
        body = self._put(source, "RENAME", {"destination": _absolute(destination)})
        return bool(body.get("boolean")) if isinstance(body, Mapping) else False

    def move(self, source: str, destination: str) -> None:
        """RENAME with `renameoptions=NONE` (HDFS's rename2): `source` becomes `destination` exactly, or it raises
        (WebHdfsRemoteError FileAlreadyExistsException: the destination exists; FileNotFoundException: the source
        or the destination's parent is missing). Unlike RENAME without options, never moves a directory *into*
        one that exists."""
        self._put(source, "RENAME", {"destination": _absolute(destination), "renameoptions": "NONE"},
                  json_body=False)

    def delete(self, path: str, recursive: bool = False) -> bool:
        """DELETE; False when there was nothing to delete."""
        path = _absolute(path)
        response = self._send("DELETE", self._url(path), self._params("DELETE", {"recursive": recursive}),
                              "DELETE", path)
        body = self._answer(response, "DELETE", path)
        return bool(body.get("boolean")) if isinstance(body, Mapping) else False

    def set_owner(self, path: str, owner: str | None = None, group: str | None = None) -> None:
        """SETOWNER (HDFS allows a change of owner to its superusers only)."""
        if not owner and not group:
            raise ValueError("set_owner needs an owner or a group")
        self._put(path, "SETOWNER", {"owner": owner, "group": group}, json_body=False)

    def set_permission(self, path: str, permission: str) -> None:
        """SETPERMISSION (octal, e.g. "644")."""
        if not isinstance(permission, str) or not re.fullmatch(r"[0-1]?[0-7]{3}", permission):
            raise ValueError(f"permission must be octal like '644' or '1777', got {permission!r}")
        self._put(path, "SETPERMISSION", {"permission": permission}, json_body=False)


def _no_auth(request: Any) -> Any:
    """No authentication on a request (a requests auth callable that leaves it as is)."""
    return request


def _chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The body of a CREATE: the non-empty chunks (an empty one would end a chunked transfer early)."""
    for chunk in chunks:
        if chunk:
            yield bytes(chunk) if not isinstance(chunk, bytes) else chunk


NAMENODE_BEAN = "Hadoop:service=NameNode,name=FSNamesystem"


@dataclass(frozen=True)
class HdfsCapacity:
    """The namenode's FSNamesystem figures, raw bytes over every datanode (a file's length x replication, as a
    space quota and oldWALs' spaceConsumed count them)."""

    total: int
    used: int
    remaining: int
    ha_state: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "used": self.used, "remaining": self.remaining, "ha_state": self.ha_state}


def parse_fsnamesystem(body: Any, where: str = "namenode") -> HdfsCapacity:
    """`/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem` -> CapacityTotal, CapacityUsed, CapacityRemaining."""
    beans = body.get("beans") if isinstance(body, Mapping) else None
    bean = next((b for b in beans or () if isinstance(b, Mapping) and b.get("name") == NAMENODE_BEAN), None)
    if bean is None:
        raise WebHdfsError(f"{where}/jmx has no {NAMENODE_BEAN} bean (is webhdfs_url the namenode's HTTP "
                           f"address?): {str(body)[:200]!r}")
    what = f"{where}/jmx {NAMENODE_BEAN}"
    return HdfsCapacity(_int(bean, "CapacityTotal", what), _int(bean, "CapacityUsed", what),
                        _int(bean, "CapacityRemaining", what),
                        str(bean["tag.HAState"]) if bean.get("tag.HAState") is not None else None)


def _json_or_none(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------------
# Quotas that bind oldWALs


@dataclass(frozen=True)
class QuotaConstraint:
    """One quota that oldWALs' growth counts against: on oldWALs itself or on an ancestor."""

    path: str
    kind: str  # "space" (raw bytes), "namespace" (dirs + files), "type:<STORAGE>" (raw bytes on a type)
    limit: int
    used: int

    @property
    def unit(self) -> str:
        return "names" if self.kind == "namespace" else "bytes"

    @property
    def headroom(self) -> int:
        return self.limit - self.used

    @property
    def fraction_used(self) -> float:
        return self.used / self.limit if self.limit > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "unit": self.unit, "limit": self.limit,
                "used": self.used, "headroom": self.headroom, "fraction_used": self.fraction_used}


def constraints_of(path: str, cs: ContentSummary | QuotaCounts) -> list[QuotaConstraint]:
    """The quotas set on `path` (its content summary or quota usage): space, namespace, per storage type."""
    found = []
    if cs.space_quota >= 0:
        found.append(QuotaConstraint(path, "space", cs.space_quota, cs.space_consumed))
    if cs.quota >= 0:
        found.append(QuotaConstraint(path, "namespace", cs.quota, cs.names))
    for storage_type, tq in sorted(cs.type_quota.items()):
        if tq.quota >= 0:
            found.append(QuotaConstraint(path, f"type:{storage_type}", tq.quota, tq.consumed))
    return found


@dataclass(frozen=True)
class QuotaUsage:
    """oldWALs' size and every quota it counts against, nearest directory first."""

    rootdir: str
    oldwals_path: str
    oldwals: ContentSummary
    constraints: tuple[QuotaConstraint, ...]

    @property
    def binding(self) -> QuotaConstraint | None:
        """The constraint with the least headroom relative to its limit (bytes and names do not compare
        directly); with a growth rate, `projected_exhaustion` finds which one runs out first."""
        return min(self.constraints, key=lambda c: (1 - c.fraction_used, c.headroom), default=None)

    def least_headroom(self, unit: str) -> QuotaConstraint | None:
        """The constraint of that unit ("bytes" or "names") with the fewest units left."""
        return min((c for c in self.constraints if c.unit == unit), key=lambda c: c.headroom, default=None)

    def to_dict(self) -> dict[str, Any]:
        binding = self.binding
        return {
            "rootdir": self.rootdir, "oldwals_path": self.oldwals_path,
            "oldwals": {"length": self.oldwals.length, "space_consumed": self.oldwals.space_consumed,
                        "files": self.oldwals.file_count, "directories": self.oldwals.directory_count},
            "constraints": [c.to_dict() for c in self.constraints],
            "binding": binding.to_dict() if binding else None,
        }


def ancestors(path: str) -> list[str]:
    """`/a/b/c` -> ['/a/b/c', '/a/b', '/a', '/']."""
    path = _absolute(path)
    out = [path]
    while path != "/":
        path = posixpath.dirname(path)
        out.append(path)
    return out


def quota_usage(client: WebHdfs, rootdir: str) -> QuotaUsage:
    """Content summary of `<rootdir>/oldWALs` and of every ancestor up to `/`; the quotas among them.

    A missing oldWALs directory raises HdfsPathNotFound with the path (a wrong rootdir, usually): an
    empty answer would read as "plenty of room".
    """
    root = _absolute(rootdir)
    oldwals_path = posixpath.join(root, "oldWALs")
    summaries = {}
    for path in ancestors(oldwals_path):
        try:
            summaries[path] = client.content_summary(path)
        except HdfsPathNotFound as exc:
            if path != oldwals_path:
                raise
            raise HdfsPathNotFound(
                f"{oldwals_path} does not exist on {client.url}: is rootdir {root!r} this cluster's "
                f"hbase.rootdir? ({exc})", exception=exc.exception, java_class=exc.java_class,
                status=exc.status, path=exc.path, op=exc.op) from None
    return usage_from_summaries(root, summaries)


def usage_from_summaries(rootdir: str, summaries: Mapping[str, ContentSummary]) -> QuotaUsage:
    """QuotaUsage from the content summaries of `<rootdir>/oldWALs` and each of its ancestors (pure).

    Every one of those directories must be present in `summaries`: a quota on a directory left out
    could be the binding one, so a gap is an error, not "no quota".
    """
    root = _absolute(rootdir)
    oldwals_path = posixpath.join(root, "oldWALs")
    chain = ancestors(oldwals_path)
    missing = [p for p in chain if p not in summaries]
    if missing:
        raise ValueError(f"content summaries missing for {', '.join(missing)} (needed: {', '.join(chain)})")
    constraints = tuple(c for path in chain for c in constraints_of(path, summaries[path]))
    return QuotaUsage(root, oldwals_path, summaries[oldwals_path], constraints)


def quota_bearing(rootdir: str, summaries: Mapping[str, ContentSummary]) -> tuple[str, ...]:
    """The ancestors of `<rootdir>/oldWALs` (oldWALs itself left out: its own summary carries its quotas) that have
    a quota (the root's default namespace quota, Long.MAX_VALUE, is none), nearest first, from the content
    summaries of all of them (`quota_usage`'s walk, done once). Quotas are set by an administrator: a watchdog
    finds them once and then reads only these."""
    oldwals_path = posixpath.join(_absolute(rootdir), "oldWALs")
    return tuple(p for p in ancestors(oldwals_path)[1:]
                 if any(c.limit < NO_LIMIT for c in constraints_of(p, summaries[p])))


def usage_of(rootdir: str, oldwals: ContentSummary,
             bearing: Mapping[str, ContentSummary | QuotaCounts]) -> QuotaUsage:
    """QuotaUsage from oldWALs' own content summary and the quota usage of the ancestors that bear a quota (pure):
    the watchdog's reading, which leaves out the ancestors found to have none."""
    root = _absolute(rootdir)
    oldwals_path = posixpath.join(root, "oldWALs")
    chain = [p for p in ancestors(oldwals_path)[1:] if p in bearing]
    unknown = sorted(set(bearing) - set(chain))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} not an ancestor of {oldwals_path}")
    constraints = tuple(constraints_of(oldwals_path, oldwals)) + tuple(
        c for path in chain for c in constraints_of(path, bearing[path]))
    return QuotaUsage(root, oldwals_path, oldwals, constraints)


# --------------------------------------------------------------------------------------------------
# Growth and projections (pure)


def growth_rate(samples: Sequence[tuple[float, float]]) -> float | None:
    """Growth in units/s from (epoch seconds, value) samples, e.g. oldWALs' spaceConsumed.

    Sums the POSITIVE increments only and divides by the time spanned: the log cleaner's deletions
    (WALs no queue references any more) are ignored, so the figure is the gross inflow. That is the
    right figure for a pinned peer: once the peer is added, every new WAL is retained and the cleaner
    stops freeing space, so net growth rises to the gross inflow. None with fewer than two samples.
    Raises ValueError when times are not strictly increasing or a value is not a number.
    """
    points = list(samples)
    for i, point in enumerate(points):
        if len(point) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in point):
            raise ValueError(f"growth_rate: sample {i} must be (time_s, value) numbers, got {point!r}")
        if i and point[0] <= points[i - 1][0]:
            raise ValueError(f"growth_rate: sample times must increase strictly; sample {i} at {point[0]} "
                             f"follows {points[i - 1][0]}")
    if len(points) < 2:
        return None
    rise = sum(max(0, b[1] - a[1]) for a, b in zip(points, points[1:]))
    return rise / (points[-1][0] - points[0][0])


def _seconds_until(constraint: QuotaConstraint, target: float, rate: float | None,
                   names_rate: float | None) -> float | None:
    """Seconds until `constraint.used` reaches `target` at the rate of its unit; 0 if already there."""
    if constraint.used >= target:
        return 0.0
    per_s = names_rate if constraint.unit == "names" else rate
    if per_s is None or per_s <= 0:
        return None
    return (target - constraint.used) / per_s


def projected_exhaustion(usage: QuotaUsage, rate: float | None,
                         names_rate: float | None = None) -> float | None:
    """Seconds until the first quota is exhausted if oldWALs keeps growing at `rate` bytes/s
    (and `names_rate` files/s for namespace quotas).

    oldWALs lies under every constraint, so its growth adds to each. 0.0 when a quota is already
    exhausted; None when there is no quota, or no growth of the unit that has one.
    """
    times = [t for c in usage.constraints
             if (t := _seconds_until(c, c.limit, rate, names_rate)) is not None]
    return min(times) if times else None


@dataclass(frozen=True)
class HeadroomDecision:
    ok: bool
    reasons: tuple[str, ...]  # why refused; empty when ok
    projected_exhaustion_s: float | None
    needed_s: float  # expected duration x safety factor
    notes: tuple[str, ...] = ()  # caveats of an "ok"

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reasons": list(self.reasons), "notes": list(self.notes),
                "projected_exhaustion_s": self.projected_exhaustion_s, "needed_s": self.needed_s}


def _fraction(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"{name} must be a fraction within (0, 1], got {value!r}")
    return float(value)


def _describe(c: QuotaConstraint) -> str:
    return f"{c.kind} quota on {c.path}: {c.used}/{c.limit} {c.unit} used ({c.fraction_used:.1%})"


def headroom_decision(usage: QuotaUsage, rate: float | None, expected_duration_s: float,
                      safety_factor: float = 2.0, quota_mark: float = DEFAULT_QUOTA_MARK, *,
                      names_rate: float | None = None) -> HeadroomDecision:
    """May a copy of `expected_duration_s` start with the peer pinning WALs? (preflight)

    Refused when a quota is already at or above `quota_mark` of its limit, or when the projected
    exhaustion comes before `expected_duration_s x safety_factor`. No quota at all is ok (the reason
    list then says so: HDFS capacity is the only limit).
    """
    if isinstance(expected_duration_s, bool) or not isinstance(expected_duration_s, (int, float)) \
            or expected_duration_s < 0:
        raise ValueError(f"expected_duration_s must be a number >= 0, got {expected_duration_s!r}")
    if isinstance(safety_factor, bool) or not isinstance(safety_factor, (int, float)) or safety_factor < 1:
        raise ValueError(f"safety_factor must be a number >= 1, got {safety_factor!r}")
    mark = _fraction(quota_mark, "quota_mark")
    needed = float(expected_duration_s) * float(safety_factor)
    projected = projected_exhaustion(usage, rate, names_rate)
    reasons = [f"{_describe(c)} is at or above the quota mark {mark:.0%}"
               for c in usage.constraints if c.fraction_used >= mark]
    if projected is not None and projected < needed:
        reasons.append(
            f"at {rate or 0:.0f} B/s into {usage.oldwals_path} the first quota is exhausted in "
            f"{projected:.0f}s, less than the copy's {expected_duration_s:.0f}s x safety factor "
            f"{safety_factor:g} = {needed:.0f}s")
    notes = []
    if not usage.constraints:
        notes.append(f"no quota on {usage.oldwals_path} or any ancestor: only HDFS capacity limits oldWALs")
    elif projected is None:
        notes.append("no growth measured: the projection assumes oldWALs stays as it is")
    return HeadroomDecision(not reasons, tuple(reasons), projected, needed, tuple(notes))


@dataclass(frozen=True)
class WatchdogDecision:
    level: str  # "ok" | "warn" | "breach"
    reasons: tuple[str, ...]  # why warn or breach; empty when ok
    fraction_used: float | None  # the highest fraction among the constraints
    seconds_to_mark: float | None  # at the current rate, until the first constraint reaches the mark
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "reasons": list(self.reasons), "notes": list(self.notes),
                "fraction_used": self.fraction_used, "seconds_to_mark": self.seconds_to_mark}


def watchdog_decision(usage: QuotaUsage, rate: float | None, quota_mark: float, *,
                      warn_fraction: float | None = None, remaining_s: float | None = None,
                      names_rate: float | None = None) -> WatchdogDecision:
    """ok / warn / breach for a watchdog beside a running copy.

    breach: some quota is at or above `quota_mark` of its limit (act now: fail loudly, or enable
    the peer early so the cleaner can free WALs).
    warn: some quota is at or above `warn_fraction` (default 90% of the mark), or, with `remaining_s`
    (the copy's expected remaining time), the mark will be reached before the copy ends at this rate.
    """
    mark = _fraction(quota_mark, "quota_mark")
    warn_at = mark * 0.9 if warn_fraction is None else _fraction(warn_fraction, "warn_fraction")
    if warn_at > mark:
        raise ValueError(f"warn_fraction {warn_at!r} must not exceed quota_mark {mark!r}")
    if not usage.constraints:
        return WatchdogDecision("ok", (), None, None, (f"no quota on {usage.oldwals_path} or any ancestor",))
    highest = max(c.fraction_used for c in usage.constraints)
    times = [t for c in usage.constraints
             if (t := _seconds_until(c, mark * c.limit, rate, names_rate)) is not None]
    to_mark = min(times) if times else None
    breached = [c for c in usage.constraints if c.fraction_used >= mark]
    if breached:
        return WatchdogDecision("breach", tuple(f"{_describe(c)}: at or above the mark {mark:.0%}"
                                                for c in breached), highest, 0.0)
    reasons = [f"{_describe(c)}: above the warning level {warn_at:.0%} (mark {mark:.0%})"
               for c in usage.constraints if c.fraction_used >= warn_at]
    if remaining_s is not None and to_mark is not None and to_mark < remaining_s:
        reasons.append(f"at the current growth the mark {mark:.0%} is reached in {to_mark:.0f}s, before the "
                       f"copy's remaining {remaining_s:.0f}s")
    return WatchdogDecision("warn" if reasons else "ok", tuple(reasons), highest, to_mark)
