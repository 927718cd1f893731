"""How the bed is secured, as one object the rest of realhbase asks: `Plain` (nothing: every method a no-op or the
plain call) or `Kerberos` (`up --secure`: the KDC, keytabs, TLS files and SASL ZooKeeper, Kerberized HDFS and HBase;
the details are realhbase/secure.py's). Nothing else in realhbase branches on whether the bed is secured.

    security = for_bed(workdir, secure)
    hosts = security.start_zookeeper(port)          # plain ZooKeeper, or the whole secured stack
    overlay = security.prepare_cluster("dc1", d)     # the cluster's krb5.conf, JAAS, keystore; its site keys
    security.jvm_flags("dc1", d, client=False)       # what each of its JVMs is started with
    security.http_answers("dc1", url); security.thrift_answers("dc1", host, port, "thrift2", modules)
    security.connection_extras("dc1"); security.describe("dc1")   # endpoints --json
"""
from __future__ import annotations

import json
from pathlib import Path

from realhbase import probes
from realhbase.config import HOST
from realhbase.jars import RealHBaseError
from realhbase.processes import tail


class Plain:
    """A plain bed: Debian's ZooKeeper without SASL, every probe unauthenticated, no security extras."""

    secure = False

    def __init__(self, workdir: Path):
        self.workdir = workdir

    def server_host(self, cluster: str) -> str:
        """The address the cluster's master and region servers listen on and are named by (servernames)."""
        return HOST

    def start_zookeeper(self, port: int | None) -> tuple[str, int, dict]:
        """Starts the bed's own ZooKeeper (`port` when given); returns (hosts, port, what instance.json records)."""
        from bedkit.zookeeper import ZooKeeperServer

        zk_dir = self.workdir / "zookeeper"
        server = ZooKeeperServer(zk_dir, port=port)
        try:
            server.start()
        except RuntimeError as e:
            raise RealHBaseError(f"realhbase: ZooKeeper did not start: {e}\n{tail(zk_dir / 'zookeeper.log')}")
        return server.hosts, server.port, {}

    def prepare_cluster(self, cluster: str, cluster_dir: Path) -> dict | None:
        """Files the cluster needs beside its site files; returns keys to add to them ({file: [(key, value, why)]})."""
        return None

    def jvm_flags(self, cluster: str, cluster_dir: Path, client: bool = False) -> list[str]:
        return []

    def ensure_parents(self, zk_hosts: str, parents) -> None:
        """Each cluster's znode parent, created before its JVMs start: a region server that starts before its master
        has created it retries with an error per second until it has."""
        client = probes.zk_client(zk_hosts)
        try:
            for parent in parents:
                client.ensure_path(parent)
        finally:
            client.stop()
            client.close()

    def http_json(self, cluster: str, url: str, timeout: float = 5.0):
        return probes.http_json(url, timeout=timeout)

    def http_answers(self, cluster: str, url: str) -> bool:
        return probes.answers(url)

    def thrift_answers(self, cluster: str, host: str, port: int, kind: str, modules) -> bool:
        return probes.thrift_answers(port, kind, modules, host)

    def client_env(self, cluster: str, cluster_dir: Path, own_ticket_cache: bool = True) -> dict[str, str]:
        """The environment a client JVM (shell, DFSAdmin) of the cluster needs."""
        return {}

    def connection_extras(self, cluster: str) -> dict:
        """What the cluster's Airflow connection's extras add for security."""
        return {}

    def describe(self, cluster: str) -> dict | None:
        """The cluster's `security` entry of `endpoints --json` (None: not secured)."""
        return None

    def summary(self) -> dict | None:
        """The top-level `security` entry of `endpoints --json`."""
        return None

    def hdfs_superuser(self) -> str:
        """HDFS's superuser: the daemons' OS user on a plain bed."""
        import getpass

        return getpass.getuser()


class Kerberos(Plain):
    """A secured bed (`up --secure`, realhbase/secure.py): Kerberos in two realms on every channel."""

    secure = True

    def server_host(self, cluster: str) -> str:
        from realhbase import secure

        return secure.server_host(cluster)

    def start_zookeeper(self, port: int | None) -> tuple[str, int, dict]:
        """The KDC (realms DC1.TEST and DC2.TEST, trust both ways), every keytab, the TLS files and the SASL
        ZooKeeper; security.json holds what `endpoints --json` says of them."""
        from bedkit.kdc import KdcError
        from realhbase import secure

        stack = secure.stack(self.workdir, zookeeper_port=port)
        try:
            stack.start()
        except (KdcError, RuntimeError, OSError) as e:
            raise RealHBaseError(f"realhbase: the secure stack (KDC, keytabs, SASL ZooKeeper) did not start: {e}"
                                 f"\n{tail(self.workdir / 'zookeeper' / 'zookeeper.log')}") from None
        (self.workdir / "security.json").write_text(json.dumps(stack.describe(), indent=1, sort_keys=True))
        self._stack = stack
        return stack.zookeeper.hosts, stack.zookeeper.port, {"secure": True, "kdc_pid": stack.kdc.process.pid}

    def prepare_cluster(self, cluster: str, cluster_dir: Path) -> dict | None:
        from realhbase import secure

        secure.write_files(cluster, self.workdir, cluster_dir, self._stack.kdc.port, self._stack.tls)
        return secure.site_overlay(cluster, self.workdir, cluster_dir)

    def jvm_flags(self, cluster: str, cluster_dir: Path, client: bool = False) -> list[str]:
        from realhbase import secure

        return secure.jvm_flags(cluster, cluster_dir, client=client)

    def ensure_parents(self, zk_hosts: str, parents) -> None:
        """As dc1's hbase service principal (SASL), with the ACL secure HBase gives its base znode."""
        from bedkit.security import zk as secure_zk
        from realhbase import secure

        principal = secure.hbase_principal("dc1")
        for parent in parents:
            client = secure_zk.secure_client(zk_hosts, 10, parent, ["hbase-migration"], "zookeeper/_HOST@DC1.TEST",
                                             principal, secure.keytab(self.workdir, principal))
            client.start(timeout=15)
            try:
                client.ensure_path(parent)
            finally:
                client.stop()
                client.close()

    def http_json(self, cluster: str, url: str, timeout: float = 5.0):
        """Through SPNEGO, as the cluster's hbase service principal."""
        from realhbase import secure

        return secure.http(self.workdir, cluster, url, timeout=timeout)

    def http_answers(self, cluster: str, url: str) -> bool:
        from realhbase import secure

        return secure.http_answers(self.workdir, cluster, url)

    def thrift_answers(self, cluster: str, host: str, port: int, kind: str, modules) -> bool:
        """Thrift SASL with the cluster's QOP, or HTTP mode with SPNEGO over TLS: an answer also shows that the
        gateway accepts Kerberos."""
        from realhbase import secure

        return secure.thrift_answers(self.workdir, cluster, host, port, kind, modules)

    def client_env(self, cluster: str, cluster_dir: Path, own_ticket_cache: bool = True) -> dict[str, str]:
        """The caller's ticket cache (KRB5CCNAME, as `hbase shell` does: the toolkit's shell backend fills one of its
        own), else the cluster's admin (hbase@<realm>, a superuser of HBase and HDFS) from a cache `kinit` fills."""
        import os

        from realhbase import secure

        if own_ticket_cache and os.environ.get("KRB5CCNAME"):
            return {}
        return secure.kinit_env(self.workdir, cluster, cluster_dir)

    def connection_extras(self, cluster: str) -> dict:
        from realhbase import secure

        return secure.connection_extras(cluster, self.workdir)

    def describe(self, cluster: str) -> dict | None:
        from realhbase import secure

        return secure.describe(cluster, self.workdir)

    def summary(self) -> dict | None:
        from realhbase import secure

        return secure.summary(self.workdir)

    def hdfs_superuser(self) -> str:
        return "hbase"


def for_bed(workdir: Path, secure: bool) -> Plain:
    return Kerberos(workdir) if secure else Plain(workdir)
