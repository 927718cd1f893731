"""Shared test harness.

Settings every test shares are made before Airflow or Spark is imported (so a bare `pytest` works too). The
service fixtures follow kazoo's own `kazoo/testing/harness.py`: one real ZooKeeper for the whole session
(Debian's jars, a free loopback port), a fresh chroot per test, `expire` ends a session on the server side so
ephemeral nodes really vanish; minihbase clusters run as their own processes on that ZooKeeper.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import threading
import uuid
from pathlib import Path

import pytest

from bedkit.zookeeper import ZooKeeperServer
from deploy import spark_jvm

REPO = Path(__file__).resolve().parents[1]
pytest_plugins = [
    "tests.secure_fixtures",  # secured minihbase: KDC, SASL ZooKeeper, secured cluster pairs
    "tests.realhbase_fixtures",  # real HBase and HDFS (realhbase), started once per session
]
if importlib.util.find_spec("xdist") is not None:
    pytest_plugins.append("tests.xdist_groups")  # make test's two workers: the real-HBase tests one unit of work
os.environ.setdefault("AIRFLOW_HOME", str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
spark_jvm.with_submit_opts(os.environ)  # every driver the tests start: C1 only, serial GC, the class archive


def _metadata_db_per_worker() -> None:
    """Under pytest-xdist (`make test` runs two workers) each worker gets its own copy of the migrated metadata
    database: `airflow dags test` runs with the repository as AIRFLOW_HOME, and two runs writing one SQLite file at
    once would fail on its lock. A test's own Airflow (tests/airflow_home.py) and a deployment set their own."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    source = REPO / ".airflow" / "airflow.db"
    if not worker or not source.is_file() or "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" in os.environ:
        return
    copy = REPO / ".state" / "pytest-airflow" / f"{worker}.db"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{copy}"


_metadata_db_per_worker()


KERBEROS_ENV = ("KRB5_CONFIG", "KRB5CCNAME", "KRB5_KDC_PROFILE")


def _restore_kerberos_env():
    """Save the process's Kerberos configuration; restore it when resumed. MIT Kerberos reads KRB5_CONFIG for the
    whole process, and the toolkit keeps the krb5.conf its first Kerberized connection named: a test (or a module's
    fixture) with a KDC of its own must not leave later tests pointed at a KDC it has stopped."""
    saved = {k: os.environ.get(k) for k in KERBEROS_ENV}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    kerberos = sys.modules.get("hbase_migration.clusters.kerberos")
    if kerberos is not None:
        kerberos.forget_krb5_conf()


# Autouse, at both scopes: a module fixture's KDC is set up after the module-scoped save and torn down before its
# restore; a test's own KDC likewise inside the function-scoped one.
kerberos_env_per_module = pytest.fixture(scope="module", autouse=True)(_restore_kerberos_env)
kerberos_env_per_test = pytest.fixture(autouse=True)(_restore_kerberos_env)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """The session's ZooKeeper server (`.hosts` is "127.0.0.1:PORT")."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def spark(request):
    """A Spark local[2] session for the module (the jobs find it already started), stopped afterwards."""
    from hbase_migration.data import executors

    session, created = executors.spark_session(f"test-{request.module.__name__}", "local[2]")
    yield session
    if created:
        session.stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the session (`deploy/postgres.py`); `.create_database(name)` gives a URL."""
    from deploy.postgres import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zookeeper):
    """A chroot no other test uses, created empty and deleted afterwards."""
    from kazoo.client import KazooClient

    chroot = "/test-" + uuid.uuid4().hex[:12]
    admin = KazooClient(hosts=zookeeper.hosts)
    admin.start(timeout=15)
    admin.ensure_path(chroot)
    yield chroot
    admin.delete(chroot, recursive=True)
    admin.stop()
    admin.close()


@pytest.fixture
def zk_client(zookeeper, zk_chroot):
    """A started KazooClient whose root is this test's chroot."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.hosts + zk_chroot, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def expire_session(client, hosts: str, timeout: float = 15.0) -> None:
    """Expire `client`'s session on the server, as a network partition longer
    than the session timeout would.

    A second connection that presents the same session id and password, then
    closes, ends the session server-side: its ephemeral nodes are deleted and
    `client` sees LOST before it reconnects with a new session.
    """
    from kazoo.client import KazooClient, KazooState

    lost = threading.Event()

    def on_state(state):
        if state == KazooState.LOST:
            lost.set()
            return True  # remove the listener
        return False

    client.add_listener(on_state)
    session_id, password = client.client_id
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=timeout)
    twin.stop()
    twin.close()
    if not lost.wait(timeout):
        raise AssertionError("the session was not reported LOST after expiry")


@pytest.fixture
def expire(zookeeper):
    """`expire(client)`: end that client's session on this session's ZooKeeper."""

    def _expire(client, timeout: float = 15.0) -> None:
        expire_session(client, zookeeper.hosts, timeout)

    return _expire


# ---------------------------------------------------------------------------------------------- minihbase
# Clusters run as their own processes (`python -m minihbase serve`) on the session's ZooKeeper, each with a
# znode parent no other module uses, and are stopped when the module ends (`make test` checks none is left).


def _start_minihbase(zookeeper, workdir, name: str, **overrides):
    from minihbase.testing import MiniCluster

    parent = f"/hbase-{name}-{uuid.uuid4().hex[:8]}"
    return MiniCluster.start(zookeeper.hosts, workdir, name=name, znode_parent=parent, **overrides)


@pytest.fixture(scope="module")
def minihbase_dc1(zookeeper, tmp_path_factory):
    """One minihbase cluster (`dc1`, 3 region servers) for the module: `minihbase.testing.MiniCluster`."""
    cluster = _start_minihbase(zookeeper, tmp_path_factory.mktemp("minihbase"), "dc1")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def minihbase_pair(zookeeper, tmp_path_factory):
    """Two minihbase clusters (`dc1` source, `dc2` target) for the module, as a tuple."""
    workdir = tmp_path_factory.mktemp("minihbase")
    dc1 = _start_minihbase(zookeeper, workdir, "dc1")
    try:
        dc2 = _start_minihbase(zookeeper, workdir, "dc2")
    except BaseException:
        dc1.stop()
        raise
    yield dc1, dc2
    dc2.stop()
    dc1.stop()


@pytest.fixture
def minihbase_factory(zookeeper, tmp_path):
    """`start(name="dcX", **overrides)` for a test that needs its own cluster settings (stopped afterwards)."""
    started = []

    def start(name: str = "dc1", **overrides):
        cluster = _start_minihbase(zookeeper, tmp_path / "minihbase", name, **overrides)
        started.append(cluster)
        return cluster

    yield start
    for cluster in reversed(started):
        cluster.stop()
