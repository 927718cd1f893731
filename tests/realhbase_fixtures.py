"""The real HBase test bed (realhbase) as a session fixture: two real clusters (dc1, dc2) with real HDFS, started
once per test session on the session's ZooKeeper and stopped at its end.

Enabled by `pytest_plugins = [..., "tests.realhbase_fixtures"]` in tests/conftest.py. The first use resolves
the jars with Maven (~210 MB into ~/.cache/realhbase); `up` then takes one to four minutes on two cores.
"""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def realhbase(zookeeper, tmp_path_factory):
    """`realhbase.testbed.RealHBase`, up: `.endpoints()["dc1"]`, `.shell("dc1", script)`, `.kill_rs("dc2", 1)`,
    `.start_rs("dc2", 1)`, `.set_quota(...)`, `.roll_wals(...)`. A test that breaks it puts it back."""
    from realhbase.testbed import RealHBase, processes

    bed = RealHBase(tmp_path_factory.mktemp("realhbase"), zookeeper_hosts=zookeeper.hosts)
    try:
        bed.up()
    except BaseException:
        bed.down()
        raise
    yield bed
    survivors = bed.down()
    left = processes(bed.workdir)
    assert not survivors and not left, f"realhbase JVMs outlived the session: {survivors or left}"
