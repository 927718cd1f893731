"""The real HBase test bed (realhbase) as a session fixture: two real clusters (dc1, dc2) with real HDFS, started
once per test session on the session's ZooKeeper.

Enabled by `pytest_plugins = [..., "tests.realhbase_fixtures"]` in tests/conftest.py. The first use resolves
the jars with Maven (~210 MB into ~/.cache/realhbase); `up` then takes one to four minutes on two cores.

Every test that uses the fixture is marked `realhbase` and runs first, together, in one process: the bed's JVMs
(~2.4 GiB, and their ZooKeeper sessions) are stopped right after the last of them. (Every test that uses the bed is
sorted before that moment, so none finds it stopped.) Under pytest-xdist (`make test`'s two workers) they are one
unit of work (tests/xdist_groups.py), so one worker runs them while the other runs the rest.

Opt-in: the `realhbase_yarn` fixture is the same bed with YARN added beside dc2 (a ResourceManager and a
NodeManager, `RealHBase.start_yarn`); the default fixture never starts YARN, and YARN stops with the bed.

`realhbase_secure` is the secured bed (`realhbase up --secure`: its own KDC, SASL ZooKeeper, Kerberized HDFS and
HBase), also once per session: its tests are one unit of work of their own, sorted right after the plain bed's
(under xdist the other worker takes them at once), and it stops after the last of them.
"""
from __future__ import annotations

import time

import pytest


class _Bed:
    """The one test bed of the session, started on first use and stoppable between tests."""

    def __init__(self, factory, zookeeper, secure: bool = False):
        self.factory, self.zookeeper, self.secure, self.bed = factory, zookeeper, secure, None

    def get(self, yarn: bool = False):
        if yarn:
            bed = self.get()
            bed.start_yarn()  # already running: returns at once
            return bed
        if self.bed is None:
            from realhbase.testbed import RealHBase

            if self.secure:  # a SASL ZooKeeper of its own; a loaded machine starts eight Kerberized JVMs slowly
                bed = RealHBase(self.factory.mktemp("realhbase-secure"), secure=True, timeout=600)
            else:
                bed = RealHBase(self.factory.mktemp("realhbase"), zookeeper_hosts=self.zookeeper.hosts)
            started = time.monotonic()
            try:
                bed.up()
            except BaseException:
                bed.down()
                raise
            bed.up_seconds = time.monotonic() - started  # printed by the tests that check the bed itself
            self.bed = bed
        return self.bed

    def stop(self):
        if self.bed is None:
            return
        from realhbase.testbed import processes

        bed, self.bed = self.bed, None
        survivors = bed.down()
        left = processes(bed.workdir)
        assert not survivors and not left, f"realhbase JVMs outlived their tests: {survivors or left}"


_holder: _Bed | None = None
_secure_holder: _Bed | None = None


@pytest.fixture(scope="session")
def _realhbase_holder(zookeeper, tmp_path_factory):
    global _holder
    _holder = _Bed(tmp_path_factory, zookeeper)
    yield _holder
    _holder.stop()
    _holder = None


@pytest.fixture(scope="session")
def _realhbase_secure_holder(tmp_path_factory):
    global _secure_holder
    _secure_holder = _Bed(tmp_path_factory, None, secure=True)
    yield _secure_holder
    _secure_holder.stop()
    _secure_holder = None


@pytest.fixture(scope="session")  # session: module fixtures build on it
def realhbase(_realhbase_holder):
    """`realhbase.testbed.RealHBase`, up: `.endpoints()["dc1"]`, `.shell("dc1", script)`, `.kill_rs("dc2", 1)`,
    `.start_rs("dc2", 1)`, `.set_quota(...)`, `.roll_wals(...)`. A test that breaks it puts it back."""
    return _realhbase_holder.get()


@pytest.fixture
def realhbase_pair(realhbase):
    """(dc1, dc2) of the `realhbase` bed as tests/realhbase_clusters.py's RealCluster: the stand-in's test verbs
    (create_table, connection_json, connection(), roll_wals, kill_rs...) on real HBase."""
    from tests.realhbase_clusters import RealCluster

    return RealCluster(realhbase, "dc1"), RealCluster(realhbase, "dc2")


@pytest.fixture
def realhbase_yarn(_realhbase_holder):
    """The `realhbase` bed with YARN running on dc2 (opt-in): `.yarn_endpoints()` names its ResourceManager,
    HADOOP_CONF_DIR and a SPARK_CONF_DIR for spark-submit."""
    return _realhbase_holder.get(yarn=True)


@pytest.fixture(scope="session")  # session: module fixtures build on it
def realhbase_secure(_realhbase_secure_holder):
    """`realhbase.testbed.RealHBase` up with `--secure` (realms DC1.TEST and DC2.TEST, the toolkit's principal
    hbase-migration@DC1.TEST): `.endpoints()`, `.shell(...)` as the cluster's hbase admin. A test that changes its
    KDC or its clusters puts them back."""
    return _realhbase_secure_holder.get()


def _uses_secure_bed(item) -> bool:
    return "realhbase_secure" in getattr(item, "fixturenames", ())


def _uses_bed(item) -> bool:
    # By fixture, or by marker for a test that asks for the bed through request.getfixturevalue.
    names = getattr(item, "fixturenames", ())
    return not _uses_secure_bed(item) and (
        "realhbase" in names or "realhbase_yarn" in names or "realhbase_pair" in names
        or item.get_closest_marker("realhbase") is not None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _uses_bed(item) or _uses_secure_bed(item):
            item.add_marker(pytest.mark.realhbase)
    # Stable: the real-HBase tests first, in their collected order (those on YARN last of them: once started, YARN
    # stays up with the bed, its entry in `endpoints --json`), then the secured bed's, then everything else.
    items.sort(key=lambda item: (0, _uses_yarn(item)) if _uses_bed(item) else (1, False) if _uses_secure_bed(item)
               else (2, False))


def _uses_yarn(item) -> bool:
    return "realhbase_yarn" in getattr(item, "fixturenames", ())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # After pytest's own teardown of the item: its fixtures (a test's tables and peers) are removed from the bed
    # before the bed stops.
    result = yield
    if _holder is not None and _uses_bed(item) and (nextitem is None or not _uses_bed(nextitem)):
        _holder.stop()
    if _secure_holder is not None and _uses_secure_bed(item) and (nextitem is None
                                                                  or not _uses_secure_bed(nextitem)):
        _secure_holder.stop()
    return result
