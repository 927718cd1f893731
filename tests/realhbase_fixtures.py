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
"""
from __future__ import annotations

import pytest


class _Bed:
    """The one test bed of the session, started on first use and stoppable between tests."""

    def __init__(self, factory, zookeeper):
        self.factory, self.zookeeper, self.bed = factory, zookeeper, None

    def get(self, yarn: bool = False):
        if yarn:
            bed = self.get()
            bed.start_yarn()  # already running: returns at once
            return bed
        if self.bed is None:
            from realhbase.testbed import RealHBase

            bed = RealHBase(self.factory.mktemp("realhbase"), zookeeper_hosts=self.zookeeper.hosts)
            try:
                bed.up()
            except BaseException:
                bed.down()
                raise
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


@pytest.fixture(scope="session")
def _realhbase_holder(zookeeper, tmp_path_factory):
    global _holder
    _holder = _Bed(tmp_path_factory, zookeeper)
    yield _holder
    _holder.stop()
    _holder = None


@pytest.fixture(scope="session")  # session: module fixtures build on it
def realhbase(_realhbase_holder):
    """`realhbase.testbed.RealHBase`, up: `.endpoints()["dc1"]`, `.shell("dc1", script)`, `.kill_rs("dc2", 1)`,
    `.start_rs("dc2", 1)`, `.set_quota(...)`, `.roll_wals(...)`. A test that breaks it puts it back."""
    return _realhbase_holder.get()


@pytest.fixture
def realhbase_yarn(_realhbase_holder):
    """The `realhbase` bed with YARN running on dc2 (opt-in): `.yarn_endpoints()` names its ResourceManager,
    HADOOP_CONF_DIR and a SPARK_CONF_DIR for spark-submit."""
    return _realhbase_holder.get(yarn=True)


def _uses_bed(item) -> bool:
    # By fixture, or by marker for a test that asks for the bed through request.getfixturevalue.
    names = getattr(item, "fixturenames", ())
    return "realhbase" in names or "realhbase_yarn" in names or item.get_closest_marker("realhbase") is not None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _uses_bed(item):
            item.add_marker(pytest.mark.realhbase)
    # Stable: the real-HBase tests first, in their collected order, then everything else in its own.
    items.sort(key=lambda item: 0 if _uses_bed(item) else 1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # After pytest's own teardown of the item: its fixtures (a test's tables and peers) are removed from the bed
    # before the bed stops.
    result = yield
    if _holder is not None and _uses_bed(item) and (nextitem is None or not _uses_bed(nextitem)):
        _holder.stop()
    return result
