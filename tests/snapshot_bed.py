"""What the snapshot export's realhbase tests and its benchmark share: tables of their own on dc1 (a family that
keeps deleted cells among them), cells deleted before the copy, the real shell's raw scan read back, the CLI export
run as a subprocess, an independent look at the target's HDFS (plain urllib, no toolkit code).

The checks that decide a verdict use no toolkit code: demo/workload.py's plain Thrift2 client compares every
version of every column, the real shell's `scan ..., {RAW => true}` shows the delete markers and the cells they
hide, and WebHDFS is read with urllib.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def shell_ok(bed: Any, cluster: str, statements: list[str] | str, timeout: float = 600) -> str:
    script = statements if isinstance(statements, str) else "\n".join(statements) + "\n"
    proc = _shell(bed, cluster, script, timeout)
    assert proc.returncode == 0, f"hbase shell on {cluster} failed ({proc.returncode}):\n{proc.stdout[-3000:]}" \
                                 f"\n{proc.stderr[-2000:]}"
    return proc.stdout


def _shell(bed: Any, cluster: str, script: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(bed.shell_command(cluster), input=script, capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


@dataclass
class BedTable:
    """A table of the test's own on dc1: `d` keeps 3 versions, `k` keeps deleted cells (and 5 versions)."""

    name: str
    splits: tuple[bytes, ...] = (b"40", b"80", b"c0")

    def sample(self, rows: int):
        from demo.workload import SampleTable

        return SampleTable(self.name, {"d": {"max_versions": 3}, "k": {"max_versions": 5}}, self.splits, rows)

    def create_statements(self) -> list[str]:
        namespace = self.name.partition(":")[0] if ":" in self.name else None
        splits = ", ".join(f"'{s.decode()}'" for s in self.splits)
        return ([f"create_namespace '{namespace}'"] if namespace else []) + [
            f"create '{self.name}', {{NAME => 'd', VERSIONS => 3, REPLICATION_SCOPE => 1}}, "
            f"{{NAME => 'k', VERSIONS => 5, KEEP_DELETED_CELLS => 'true', REPLICATION_SCOPE => 1}}, "
            f"SPLITS => [{splits}]"]


def thrift2(endpoint: dict):
    from demo.workload import Thrift2

    return Thrift2(endpoint)


def compare_sides(src_endpoint: dict, dst_endpoint: dict, table: str) -> dict:
    """demo.workload's comparison of every version of `table` on both clusters (Thrift2), as a dict."""
    from demo.workload import compare

    src, dst = thrift2(src_endpoint), thrift2(dst_endpoint)
    try:
        return compare(src, dst, table).as_dict()
    finally:
        src.close()
        dst.close()


def load(endpoint: dict, table: BedTable, rows: int, value_bytes: int = 0) -> None:
    """The demo's rows (old explicit timestamps, several versions), and with `value_bytes` a wide value per row in
    `d:blob` (to make megabytes of HFiles quickly)."""
    from demo.workload import load as demo_load

    client = thrift2(endpoint)
    try:
        demo_load(client, table.sample(rows))
        if value_bytes:
            sample = table.sample(rows)
            batch = []
            for i in range(rows):
                batch.append((sample.row_key(i), {b"d:blob": os.urandom(value_bytes)}, 1_000_000 + i))
                if len(batch) >= 200:
                    client.put(table.name, batch)
                    batch = []
            if batch:
                client.put(table.name, batch)
    finally:
        client.close()


def delete_kept_cells(endpoint: dict, table: BedTable, count: int = 20) -> list[bytes]:
    """Put `count` distinctive cells in family k, then delete each (one version, or the whole column): the family
    keeps them, hidden from reads and shown by a raw scan. Returns their values."""
    client = thrift2(endpoint)
    values = []
    try:
        for i in range(count):
            row, value = b"kept-%04d" % i, b"deleted-value-%04d" % i
            client.put(table.name, [(row, {b"k:gone": value}, 5_000 + i), (row, {b"k:live": b"x"}, 5_000 + i)])
            client.delete(table.name, row, b"k:gone", 5_000 + i if i % 2 else None)
            values.append(value)
    finally:
        client.close()
    return values


RAW_LINE = re.compile(r"^ (\S+) column=(\S+), timestamp=(\S+), (type=\w+|value=.*)$")


def raw_scan(bed: Any, cluster: str, table: str, start: str | None = None, stop: str | None = None) -> list[str]:
    """The real shell's raw scan (every version, delete markers and the cells they hide), one cell per line."""
    bounds = (f", STARTROW => '{start}'" if start else "") + (f", STOPROW => '{stop}'" if stop else "")
    out = shell_ok(bed, cluster, [f"scan '{table}', {{RAW => true, VERSIONS => 10{bounds}}}"])
    return [line for line in out.splitlines() if RAW_LINE.match(line)]


def connection(endpoint: dict) -> str:
    return json.dumps(endpoint["connection"])


def snapshot_cli(src: dict, dst: dict, table: str, ledger_url: str, *extra: str, env: dict | None = None,
                 log: Path | None = None, wait: bool = True, timeout: float = 1800):
    """`python -m hbase_migration snapshot-export` as a subprocess; its CompletedProcess (or Popen with wait off)."""
    cmd = [sys.executable, "-m", "hbase_migration", "snapshot-export", "--source", connection(src), "--target",
           connection(dst), "--table", table, "--ledger-url", ledger_url, *extra]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable, **(env or {})}
    out = open(log, "w") if log is not None else subprocess.PIPE
    if not wait:
        return subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=subprocess.PIPE, stderr=out, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, cwd=REPO, env=full_env, stdout=subprocess.PIPE, stderr=out, text=True,
                          timeout=timeout)


def summary_of(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON summary line in: {stdout[-2000:]}"
    return json.loads(lines[-1])


def webhdfs(endpoint: dict, path: str, op: str, **params: str) -> Any:
    """An independent WebHDFS read (urllib), as the daemons' user."""
    from urllib.parse import quote, urlencode

    query = urlencode({"op": op, "user.name": endpoint["connection"]["extra"]["webhdfs_user"], **params})
    with urllib.request.urlopen(f"{endpoint['webhdfs_url']}/webhdfs/v1{quote(path)}?{query}", timeout=30) as r:
        return json.loads(r.read())


def mkdirs(endpoint: dict, path: str) -> None:
    """WebHDFS MKDIRS (urllib), as the daemons' user."""
    from urllib.parse import quote, urlencode

    query = urlencode({"op": "MKDIRS", "user.name": endpoint["connection"]["extra"]["webhdfs_user"]})
    request = urllib.request.Request(f"{endpoint['webhdfs_url']}/webhdfs/v1{quote(path)}?{query}", method="PUT")
    with urllib.request.urlopen(request, timeout=30) as r:
        assert json.loads(r.read())["boolean"], path


def read_file(endpoint: dict, path: str) -> bytes:
    """A whole (small) file through WebHDFS OPEN (urllib follows the DataNode redirect)."""
    from urllib.parse import quote, urlencode

    query = urlencode({"op": "OPEN", "user.name": endpoint["connection"]["extra"]["webhdfs_user"]})
    with urllib.request.urlopen(f"{endpoint['webhdfs_url']}/webhdfs/v1{quote(path)}?{query}", timeout=60) as r:
        return r.read()


def listing(endpoint: dict, directory: str) -> dict[str, dict]:
    """path -> FileStatus of every file under `directory` (recursively); {} when it does not exist."""
    out: dict[str, dict] = {}
    try:
        statuses = webhdfs(endpoint, directory, "LISTSTATUS")["FileStatuses"]["FileStatus"]
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {}
        raise
    for s in statuses:
        path = f"{directory}/{s['pathSuffix']}"
        if s["type"] == "DIRECTORY":
            out.update(listing(endpoint, path))
        else:
            out[path] = s
    return out


def exists(endpoint: dict, path: str) -> bool:
    try:
        webhdfs(endpoint, path, "GETFILESTATUS")
        return True
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise


def wait_ledger(ledger_url: str, predicate, timeout: float, what: str, proc: Any = None):
    """Poll the ledger until `predicate(ledger)` is truthy (and `proc`, when given, still runs)."""
    from hbase_migration.ledger.store import Ledger

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended ({proc.returncode}) before {what}")
        try:
            with Ledger.open(ledger_url) as ledger:
                result = predicate(ledger)
            if result:
                return result
        except Exception as e:  # the ledger may not exist yet
            if "no such table" not in str(e) and "unable to open" not in str(e):
                raise
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (its children, theirs, ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def spark_python_workers(pid: int) -> tuple[list[int], list[tuple[int, str]]]:
    """The PySpark Python workers running tasks under `pid` (the processes the daemon forked: the daemon itself
    runs none), and the whole tree for an error message."""
    tree = [(p, cmdline(p)) for p in descendants(pid)]
    daemons = {p for p, c in tree if "pyspark.daemon" in c or "pyspark/daemon.py" in c}
    workers = [p for p in daemons if parent(p) in daemons]
    if not workers:  # without the daemon (spark.python.use.daemon=false) each task has a worker of its own
        workers = [p for p, c in tree if "pyspark.worker" in c or "pyspark/worker.py" in c]
    return workers, tree
