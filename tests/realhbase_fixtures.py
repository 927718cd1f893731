"""The real HBase test bed (realhbase) as a session fixture: two real clusters (dc1, dc2) with real HDFS, started
once per test session on the session's ZooKeeper.

Enabled by `pytest_plugins = [..., "tests.realhbase_fixtures"]` in tests/conftest.py. The first use resolves
the jars with Maven (~210 MB into ~/.cache/realhbase); `up` then takes one to four minutes on two cores.

Every test that uses the fixture is marked `realhbase` and runs first, together: the bed's eight JVMs (~2.4 GiB,
and their ZooKeeper sessions) are stopped right after the last of them, so the deployment tests and the rest never
share two cores with them. A test that asks for the bed after that starts it again.
"""
from __future__ import annotations

import pytest


class _Bed:
    """The one test bed of the session, started on first use and stoppable between tests."""

    def __init__(self, factory, zookeeper):
        self.factory, self.zookeeper, self.bed = factory, zookeeper, None

    def get(self):
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


@pytest.fixture
def realhbase(_realhbase_holder):
    """`realhbase.testbed.RealHBase`, up: `.endpoints()["dc1"]`, `.shell("dc1", script)`, `.kill_rs("dc2", 1)`,
    `.start_rs("dc2", 1)`, `.set_quota(...)`, `.roll_wals(...)`. A test that breaks it puts it back."""
    return _realhbase_holder.get()


def _uses_bed(item) -> bool:
    # By fixture, or by marker for a test that asks for the bed through request.getfixturevalue.
    return "realhbase" in getattr(item, "fixturenames", ()) or item.get_closest_marker("realhbase") is not None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _uses_bed(item):
            item.add_marker(pytest.mark.realhbase)
    # Stable: the real-HBase tests first, in their collected order, then everything else in its own.
    items.sort(key=lambda item: 0 if _uses_bed(item) else 1)


def pytest_runtest_teardown(item, nextitem):
    if _holder is not None and _uses_bed(item) and (nextitem is None or not _uses_bed(nextitem)):
        _holder.stop()
