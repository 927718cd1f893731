"""Start and stop a real ZooKeeper server from Debian's `zookeeper` package.

Both test beds use it (realhbase's `up` and the stand-in's, when no `--zookeeper` is given), and so do the
test harness and the benchmarks. The server runs standalone on a loopback port with its
data in a directory the caller owns; `stop()` ends the JVM and waits for it.

With `sasl=ZooKeeperSasl(...)` it runs as secure HBase deployments run it: SASL/Kerberos through a JAAS
`Server` section (Krb5LoginModule, its keytab), `SASLAuthenticationProvider`, and client ids with host and realm
removed (`kerberos.removeHostFromPrincipal`, `kerberos.removeRealmFromPrincipal`: `hbase/localhost@DC2.TEST` is
`hbase`); `zookeeper.security.auth_to_local` maps the trusted realms' principals (ZooKeeper's DEFAULT rule maps
the default realm only). Once up, the root znode is locked (world READ, `sasl:` ALL for `root_writers`), so an
unauthenticated client can read but create nothing anywhere.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bedkit.ports import free_port

ZOOKEEPER_JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar")


def zookeeper_installed() -> bool:
    return all(os.path.exists(jar) for jar in ZOOKEEPER_JARS)


def _answers_ruok(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


@dataclass
class ZooKeeperSasl:
    """The server's Kerberos identity: `principal` (zookeeper/localhost@DC1.TEST) in `keytab`, `krb5_conf`,
    `auth_to_local` (ZooKeeper's rule syntax, as Hadoop's) and the SASL ids given ALL on the root znode."""
    principal: str
    keytab: Path
    krb5_conf: Path
    auth_to_local: str = "DEFAULT"
    root_writers: list[str] = field(default_factory=list)


def _serving(host: str, port: int, timeout: float = 1.0) -> bool:
    """`stat` answers once the server takes sessions (`ruok` says imok before: its Kerberos login may still run)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"stat")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
    except OSError:
        return False
    return bool(data) and b"not currently serving" not in data


class ZooKeeperServer:
    """One standalone ZooKeeper JVM on 127.0.0.1.

    >>> zk = ZooKeeperServer(Path("/tmp/zk")); zk.start(); zk.hosts
    '127.0.0.1:41234'
    """

    def __init__(self, workdir: Path, port: int | None = None, host: str = "127.0.0.1",
                 sasl: ZooKeeperSasl | None = None):
        self.workdir = Path(workdir)
        self.host = host
        self.port = port or free_port(host)
        self.sasl = sasl
        self.process: subprocess.Popen | None = None

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def _write_config(self) -> Path:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(
            "tickTime=500\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,stat,mntr\n"
            # Short sessions let tests expire a session or a region server quickly.
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=60000\n"
            + ("kerberos.removeHostFromPrincipal=true\nkerberos.removeRealmFromPrincipal=true\n"
               if self.sasl else "")
        )
        return cfg

    def _jvm_options(self) -> list[str]:
        if self.sasl is None:
            return []
        jaas = self.workdir / "jaas.conf"
        jaas.write_text(
            "Server {\n"
            "  com.sun.security.auth.module.Krb5LoginModule required\n"
            "  useKeyTab=true\n"
            f'  keyTab="{self.sasl.keytab}"\n'
            "  storeKey=true\n"
            "  useTicketCache=false\n"
            f'  principal="{self.sasl.principal}";\n'
            "};\n")
        return [f"-Djava.security.auth.login.config={jaas}", f"-Djava.security.krb5.conf={self.sasl.krb5_conf}",
                "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                f"-Dzookeeper.security.auth_to_local={self.sasl.auth_to_local}"]

    def _lock_root(self, timeout: float) -> None:
        """world READ and `sasl:<writer>` ALL on `/`, set by the server's own principal (which keeps ALL)."""
        from kazoo.security import ACL, Id, Permissions

        from bedkit.security import zk as secure_zk

        os.environ["KRB5_CONFIG"] = str(self.sasl.krb5_conf)  # this process's Kerberos library reads it
        acl = [ACL(Permissions.READ, Id("world", "anyone"))]
        admin = self.sasl.principal.split("/")[0].split("@")[0]
        for writer in dict.fromkeys([admin, *self.sasl.root_writers]):
            acl.append(ACL(Permissions.ALL, Id("sasl", writer)))
        client = secure_zk.AclKazooClient(lambda path: acl, hosts=self.hosts, timeout=10, sasl_options=secure_zk
                                          .sasl_options(self.sasl.principal, self.sasl.principal, self.sasl.keytab, []))
        client.start(timeout=timeout)
        try:
            client.set_acls("/", acl)
        finally:
            client.stop()
            client.close()

    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        if not zookeeper_installed():
            raise RuntimeError(
                "ZooKeeper is not installed: expected %s (run `make bootstrap`, "
                "which does `apt-get install -y zookeeper`)" % ", ".join(ZOOKEEPER_JARS)
            )
        if _answers_ruok(self.host, self.port):
            raise RuntimeError(f"port {self.port} already has a ZooKeeper: refusing to share it")
        cfg = self._write_config()
        log = open(self.workdir / "zookeeper.log", "ab")
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", *self._jvm_options(), "-cp", ":".join(ZOOKEEPER_JARS),
             "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        (self.workdir / "zookeeper.pid").write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self.process.returncode}; see {self.workdir / 'zookeeper.log'}"
                )
            if _answers_ruok(self.host, self.port):
                if self.sasl is not None:
                    if not _serving(self.host, self.port):
                        time.sleep(0.05)
                        continue
                    try:
                        self._lock_root(max(5.0, deadline - time.monotonic()))
                    except Exception as e:
                        self.stop()
                        raise RuntimeError(f"secure ZooKeeper on {self.hosts}: setting the root ACL as "
                                           f"{self.sasl.principal} failed: {e}; see {self.workdir / 'zookeeper.log'}")
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.hosts} within {timeout}s")

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        (self.workdir / "zookeeper.pid").unlink(missing_ok=True)

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
