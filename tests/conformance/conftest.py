"""The conformance suite's backends: every probe runs once against realhbase (real Apache HBase 2.6.4 and HDFS)
and once against minihbase, through one small adapter (`Backend`), and the minihbase run compares its normalised
observation with the realhbase one (`observe`).

- realhbase: the session's bed (tests/realhbase_fixtures.py, through its session-scoped holder: the `realhbase`
  fixture is function-scoped, `backend` module-scoped; every test here is marked `realhbase`, so the bed stays up
  for the minihbase runs too and is stopped after the last of them); for working on the suite,
  `CONFORMANCE_REALHBASE_WORKDIR=<dir>` uses a test bed already up there (`python -m realhbase up --workdir <dir>`)
  instead of starting one.
- minihbase: a module-scoped pair started as tests/conftest.py's `minihbase_pair`, shaped as the real bed is
  (2 region servers, HDFS replication 1, as realhbase/config.py), so that per-server output lines up.

Parametrized tests run grouped by backend, realhbase first (pytest orders module-scoped parameters so): the
minihbase run of a probe finds the realhbase observation and asserts the comparison; a probe whose realhbase run
failed or was deselected fails on minihbase too (a comparison with nothing is not a pass).
"""
from __future__ import annotations

import os
import pprint
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

BACKENDS = ("realhbase", "minihbase")
CLUSTERS = ("dc1", "dc2")
# What makes minihbase the same shape as the real test bed (realhbase/config.py: 2 region servers, dfs.replication 1).
MINIHBASE_SHAPE = {"region_servers": 2, "replication_factor": 1}


@dataclass
class Backend:
    """One backend as the probes see it: endpoints in minihbase's schema, the shell, tables, quotas."""

    name: str
    endpoints: Callable[[], dict[str, dict]]
    _shell: Callable[[str, str], subprocess.CompletedProcess]
    _set_quota: Callable[..., None]
    _roll_wals: Callable[[str], Any]
    _kill_rs: Callable[[str, int], str] | None = None
    _start_rs: Callable[[str, int], str] | None = None
    handle: Any = None
    shell_calls: list[float] = field(default_factory=list)

    def shell(self, cluster: str, statements: list[str], timeout: float = 600.0) -> subprocess.CompletedProcess:
        """`hbase shell -n` with the statements on standard input, one call (a real shell is a JVM start)."""
        import time

        started = time.monotonic()
        try:
            return self._shell(cluster, "".join(s + "\n" for s in statements))
        finally:
            self.shell_calls.append(time.monotonic() - started)

    def shell_ok(self, cluster: str, statements: list[str]) -> subprocess.CompletedProcess:
        proc = self.shell(cluster, statements)
        assert proc.returncode == 0, (f"{self.name} {cluster}: the shell failed ({proc.returncode}):\n"
                                      f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    def create_tables(self, cluster: str, creates: list[str]) -> None:
        """Tables made by `create` statements (HBase shell syntax), in one shell call."""
        self.shell_ok(cluster, creates)

    def set_quota(self, cluster: str, path: str, space_bytes: int | None = None,
                  namespace: int | None = None) -> None:
        self._set_quota(cluster, path, space_bytes=space_bytes, namespace=namespace)

    def roll_wals(self, cluster: str) -> None:
        self._roll_wals(cluster)

    def kill_rs(self, cluster: str, slot: int) -> str:
        return self._kill_rs(cluster, slot)

    def start_rs(self, cluster: str, slot: int) -> str:
        return self._start_rs(cluster, slot)

    def region_servers(self, cluster: str) -> list[dict]:
        """Live region servers as {servername, host, port, info_port}."""
        return [rs for rs in self.endpoints()[cluster]["region_servers"] if rs.get("alive", True)]

    def masks(self) -> dict[str, str]:
        """Exact strings that differ by nature between two backends (cluster keys, ZooKeeper addresses, server
        names, host names, ports) -> placeholders naming what they are. Longest first when applied."""
        out: dict[str, str] = {}
        for cluster, ep in self.endpoints().items():
            out[ep["cluster_key"]] = f"<{cluster} cluster key>"
            out[ep["zookeeper"]["znode_parent"]] = f"<{cluster} znode parent>"
            for slot, rs in enumerate(ep["region_servers"]):
                if rs.get("servername"):
                    host, port, code = rs["servername"].split(",")
                    out[rs["servername"]] = f"<{cluster} rs{slot}>"
                    out[f"{host}%2C{port}%2C{code}"] = f"<{cluster} rs{slot} encoded>"
        return out


def apply_masks(text: str, masks: dict[str, str]) -> str:
    for actual in sorted(masks, key=len, reverse=True):
        text = text.replace(actual, masks[actual])
    return text


def server_host(backend: Backend) -> str:
    """The host part of the backend's server names (realhbase: `localhost`, by reverse DNS of 127.0.0.1;
    minihbase: `127.0.0.1`): a host name, masked."""
    hosts = {rs["servername"].split(",")[0] for ep in backend.endpoints().values()
             for rs in ep["region_servers"] if rs.get("servername")}
    assert len(hosts) == 1, hosts
    return hosts.pop()


# ---------------------------------------------------------------------------------------------- backends
def _realhbase_backend(request) -> Backend:
    workdir = os.environ.get("CONFORMANCE_REALHBASE_WORKDIR")
    if workdir:
        from realhbase.testbed import RealHBase

        bed = RealHBase(Path(workdir))
        assert bed.running(), f"CONFORMANCE_REALHBASE_WORKDIR={workdir}: no realhbase runs there"
    else:
        # the session's bed (tests/realhbase_fixtures.py): `realhbase` itself is function-scoped, this module-scoped
        bed = request.getfixturevalue("_realhbase_holder").get()
    return Backend("realhbase", bed.endpoints, lambda c, script: bed.shell(c, script, timeout=600),
                   lambda c, path, **kw: bed.set_quota(c, path, **kw), bed.roll_wals,
                   bed.kill_rs, bed.start_rs, handle=bed)


@pytest.fixture(scope="module")
def _minihbase_pair(zookeeper, tmp_path_factory):
    from minihbase.testing import MiniCluster

    workdir = tmp_path_factory.mktemp("conformance-minihbase")
    started = []
    try:
        for name in CLUSTERS:
            parent = f"/hbase-{name}-{uuid.uuid4().hex[:8]}"
            started.append(MiniCluster.start(zookeeper.hosts, workdir, name=name, znode_parent=parent,
                                             **MINIHBASE_SHAPE))
    except BaseException:
        for cluster in reversed(started):
            cluster.stop()
        raise
    yield dict(zip(CLUSTERS, started))
    for cluster in reversed(started):
        cluster.stop()


def _minihbase_backend(pair: dict) -> Backend:
    def shell(cluster: str, script: str) -> subprocess.CompletedProcess:
        return subprocess.run(pair[cluster].endpoints["shell_command"], input=script, capture_output=True,
                              text=True, timeout=600)

    def endpoints() -> dict[str, dict]:
        return {name: cluster.endpoints for name, cluster in pair.items()}

    return Backend("minihbase", endpoints, shell,
                   lambda c, path, space_bytes=None, namespace=None: pair[c].set_quota(path, space_bytes, ns=namespace),
                   lambda c: pair[c].roll_wals(), lambda c, slot: pair[c].kill_rs(slot),
                   lambda c, slot: pair[c].start_rs(slot), handle=pair)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> Backend:
    if request.param == "realhbase":
        real = _realhbase_backend(request)
        # the bed outlives the modules: its idle scanner (test_thrift.py) starts idling with the first module
        open_idle_scanner(real)
        return real
    return _minihbase_backend(request.getfixturevalue("_minihbase_pair"))


IDLE: dict[str, dict] = {}  # backend name -> the idle scanner test_thrift.py reads after a minute or more


def open_idle_scanner(backend: Backend) -> dict:
    """A Thrift2 scanner on dc1 over three rows of a table of its own, one row read, then left idle: opened once
    per backend (realhbase: when the suite starts, so that its idle minute overlaps the other modules; minihbase,
    whose pair lives one module: when test_thrift.py starts)."""
    if backend.name in IDLE:
        return IDLE[backend.name]
    import time

    from tests.conformance import thrift_probes as tp

    _, h = tp.thrift_modules()
    table = f"conf_idle_{uuid.uuid4().hex[:6]}".encode()
    client = tp.client("thrift2", backend.endpoints()["dc1"]["thrift2"])
    client.createTable(h.TTableDescriptor(tableName=h.TTableName(ns=b"default", qualifier=table),
                                          columns=[h.TColumnFamilyDescriptor(name=b"cf")]), [])
    client.putMultiple(table, [h.TPut(row=b"idle-%d" % i, columnValues=[
        h.TColumnValue(family=b"cf", qualifier=b"q", value=b"v", timestamp=5)]) for i in range(3)])
    sid = client.openScanner(table, h.TScan(caching=1))
    first = [r.row for r in client.getScannerRows(sid, 1)]
    IDLE[backend.name] = {"client": client, "sid": sid, "opened": time.monotonic(), "first": first, "table": table}
    return IDLE[backend.name]


# ---------------------------------------------------------------------------------------------- comparison
_OBSERVED: dict[tuple[str, str], dict[str, Any]] = {}


def observe(request, backend: Backend, value: Any, well_formed: Callable[[Any], bool] = bool,
            difference: Callable[[Any, Any], None] | None = None) -> Any:
    """Record `backend`'s normalised observation for the calling probe, check it is well formed, and once both
    backends have one, compare: `real == mini`, or for a listed difference `difference(real, mini)`, which
    asserts exactly that difference (and fails on anything else)."""
    probe = (request.node.module.__name__, request.node.originalname)
    assert well_formed(value), f"{backend.name}: {probe[1]} observed nothing usable: {value!r}"
    seen = _OBSERVED.setdefault(probe, {})
    seen[backend.name] = value
    if os.environ.get("CONFORMANCE_DUMP"):  # for reading the two observations side by side
        out = Path(os.environ["CONFORMANCE_DUMP"]) / f"{probe[1]}.{backend.name}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(pprint.pformat(value, width=150))
    other = "minihbase" if backend.name == "realhbase" else "realhbase"
    if backend.name == "realhbase":
        return value
    assert other in seen, (f"{probe[1]}: no realhbase observation to compare with (its realhbase run failed or "
                           "was deselected; the conformance suite needs both backends)")
    real, mini = seen["realhbase"], value
    if difference is None:
        assert real == mini, f"{probe[1]}: minihbase differs from real HBase"
    else:
        difference(real, mini)
    return value


TOOK = re.compile(r"^Took \d+\.\d+ seconds", re.M)
