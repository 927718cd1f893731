"""How the toolkit reaches one HBase cluster, and HBase cluster keys.

A `Cluster` is built from an Airflow Connection's fields (by the hook in
`operators/`) or from the CLI; it holds addresses only and opens nothing.
Every field is validated in the constructor and named in the error, as
happybase's `Connection` does.
"""
from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass, fields
from typing import Any, Mapping

from hbase_migration.clusters.security import SECURITY_EXTRAS, Security, SecurityConfigError

PEER_ADMIN_BACKENDS = ("shell", "zookeeper")
DATA_PATHS = ("auto", "native", "thrift1", "thrift2")
DEFAULT_SHELL_COMMAND = ("hbase", "shell", "-n")


class ClusterConfigError(ValueError):
    """A cluster description or cluster key is invalid; the message names the field."""


def _port(value: Any, what: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ClusterConfigError(f"{what} must be an integer port, got {value!r}") from None
    if not 0 < port < 65536:
        raise ClusterConfigError(f"{what} must be within 1..65535, got {port}")
    return port


@dataclass(frozen=True)
class ClusterKey:
    """`quorum:clientPort:znodeParent`, e.g. `zk1,zk2,zk3:2181:/hbase` (HBase's ZKConfig format).

    Hosts of the quorum may carry their own port (`zk1:2181,zk2:2182:2181:/hbase`),
    as HBase accepts.
    """

    quorum: tuple[str, ...]
    port: int
    znode_parent: str

    @classmethod
    def parse(cls, text: str) -> "ClusterKey":
        if not isinstance(text, str) or not text.strip():
            raise ClusterConfigError(f"cluster key must be 'quorum:port:/znode-parent', got {text!r}")
        text = text.strip()
        parts = text.split(":")
        if len(parts) < 3:
            raise ClusterConfigError(
                f"cluster key {text!r} must have the form 'quorum:port:/znode-parent' "
                "(e.g. 'zk1,zk2,zk3:2181:/hbase')"
            )
        parent = parts[-1]
        port = _port(parts[-2], f"client port of cluster key {text!r}")
        quorum_text = ":".join(parts[:-2])
        hosts = tuple(h.strip() for h in quorum_text.split(","))
        if not hosts or any(not h for h in hosts):
            raise ClusterConfigError(f"cluster key {text!r} has an empty host in its quorum")
        for host in hosts:
            if ":" in host:
                name, _, hport = host.rpartition(":")
                if not name:
                    raise ClusterConfigError(f"cluster key {text!r} has an empty host in its quorum")
                _port(hport, f"port of quorum host {host!r} in cluster key {text!r}")
        return cls(hosts, port, _znode_parent(parent, f"znode parent of cluster key {text!r}"))

    def __str__(self) -> str:
        return f"{','.join(self.quorum)}:{self.port}:{self.znode_parent}"

    @property
    def zk_hosts(self) -> str:
        """The quorum as a ZooKeeper connect string (`h1:2181,h2:2181`)."""
        return ",".join(h if ":" in h else f"{h}:{self.port}" for h in self.quorum)

    def normalized(self) -> "ClusterKey":
        """Same cluster, spelled one way: hosts lower-cased, sorted, each with its port."""
        hosts = sorted((h if ":" in h else f"{h}:{self.port}").lower() for h in self.quorum)
        return ClusterKey(tuple(hosts), self.port, self.znode_parent.rstrip("/") or "/")


def _znode_parent(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise ClusterConfigError(f"{what} must be an absolute znode path starting with '/', got {value!r}")
    if value != "/" and value.endswith("/"):
        value = value.rstrip("/")
    return value


THRIFT_TRANSPORTS = ("buffered", "framed")
THRIFT_PROTOCOLS = ("binary", "compact")

# Connection extras -> Cluster fields. The one place a connection's extras are decoded (docs/configuration.md
# "Connections").
EXTRAS = {
    "zookeeper_quorum": "zk_quorum", "zookeeper_port": "zk_port", "znode_parent": "znode_parent",
    "info_port": "info_port", "webhdfs_url": "webhdfs_url", "webhdfs_user": "webhdfs_user", "rootdir": "rootdir",
    "peer_admin": "peer_admin",
    "shell_command": "shell_command", "shell_timeout_s": "shell_timeout_s", "timeout_s": "timeout_s",
    "thrift_transport": "thrift_transport", "thrift_protocol": "thrift_protocol",
    "zk_legacy_table_cfs": "zk_legacy_table_cfs",
    "thrift_servers": "thrift_servers", "thrift2_servers": "thrift2_servers", "data_path": "data_path",
    "client_bind_address": "client_bind_address",
    **{name: f"security.{name}" for name in SECURITY_EXTRAS},  # hbase_migration/clusters/security.py
}


def _hosts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(h).strip() for h in (value or ()))


def _endpoints(value: Any, what: str) -> tuple[str, ...]:
    """`host:port` gateways from a comma-separated string or a list, each checked."""
    out = []
    for item in _hosts(value):
        host, sep, port = item.rpartition(":")
        if not sep or not host:
            raise ClusterConfigError(f"{what}: {item!r} must be host:port")
        out.append(f"{host}:{_port(port, f'{what}: port of {item!r}')}")
    return tuple(dict.fromkeys(out))


def _flag(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise ClusterConfigError(f"{what} must be true or false, got {value!r}")


def _seconds(value: Any, what: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ClusterConfigError(f"{what} must be a number of seconds, got {value!r}") from None
    if not seconds > 0:
        raise ClusterConfigError(f"{what} must be positive, got {value!r}")
    return seconds


@dataclass(frozen=True)
class Cluster:
    """Addresses of one HBase cluster. Opens no connection.

    `to_dict()`/`from_dict()` are its one wire form: what crosses a process boundary (Spark job arguments, a
    trigger's `serialize()`, the CLI's `--json`) is that dict, and the other side rebuilds the same Cluster.
    """

    name: str
    thrift_host: str
    zk_quorum: tuple[str, ...]
    thrift_port: int = 9090
    zk_port: int = 2181
    znode_parent: str = "/hbase"
    info_port: int | None = None  # None: read each region server's from its rs/ znode
    webhdfs_url: str | None = None
    # WebHDFS's `user.name` on a cluster without Kerberos (HDFS's simple auth): HBase makes <rootdir>/staging 711,
    # so only its own user (or HDFS's superuser) can sum up <rootdir>; anonymous calls run as dr.who and are
    # refused. Ignored by a Kerberized NameNode, where SPNEGO says who calls.
    webhdfs_user: str | None = None
    rootdir: str = "/hbase"
    peer_admin: str = "shell"
    shell_command: tuple[str, ...] = DEFAULT_SHELL_COMMAND
    shell_timeout_s: float = 180.0  # a real `hbase shell` spends 10-30 s starting its JVM
    timeout_s: float = 10.0
    thrift_transport: str = "buffered"  # hbase.regionserver.thrift.framed=false (HBase's default)
    thrift_protocol: str = "binary"  # hbase.regionserver.thrift.compact=false
    zk_legacy_table_cfs: bool = False  # HBase 1.x peers keeping TABLE_CFS in their own znode
    thrift_servers: tuple[str, ...] = ()  # every Thrift1 gateway as host:port (default: thrift_host:thrift_port)
    thrift2_servers: tuple[str, ...] = ()  # Thrift2 gateways (`hbase thrift2`) as host:port
    # How copy and verify read and write cells: native (HBase's own client in Spark's JVMs), thrift2, thrift1;
    # auto: resolved once per task by the operators and the CLI (data/datapath/auto.py): native when every region
    # server of both clusters answers HBase RPC from there (clusters/rpc_probe.py), else thrift2 when there is a
    # Thrift2 gateway, else thrift1. A job handed auto unresolved takes Thrift
    data_path: str = "auto"
    # The native path's HBase client connects to this cluster's servers from this local IP address (a host with
    # several interfaces: the one whose route leads to that cluster); None: the kernel's choice
    client_bind_address: str | None = None
    security: Security | None = None  # Kerberos, QOP, HTTP mode, TLS (security.py); None: an open cluster

    def __post_init__(self) -> None:
        if not self.thrift_host:
            raise ClusterConfigError(f"cluster {self.name!r}: host (the Thrift server) is required")
        object.__setattr__(self, "thrift_port", _port(self.thrift_port, f"cluster {self.name!r}: port"))
        object.__setattr__(self, "zk_port", _port(self.zk_port, f"cluster {self.name!r}: zookeeper_port"))
        object.__setattr__(self, "zk_quorum", _hosts(self.zk_quorum))
        if not self.zk_quorum or any(not h for h in self.zk_quorum):
            raise ClusterConfigError(
                f"cluster {self.name!r}: zookeeper_quorum is required (comma-separated hosts)"
            )
        object.__setattr__(
            self, "znode_parent", _znode_parent(self.znode_parent, f"cluster {self.name!r}: znode_parent")
        )
        if self.info_port is not None:
            object.__setattr__(self, "info_port", _port(self.info_port, f"cluster {self.name!r}: info_port"))
        if self.peer_admin not in PEER_ADMIN_BACKENDS:
            raise ClusterConfigError(
                f"cluster {self.name!r}: peer_admin must be one of {', '.join(PEER_ADMIN_BACKENDS)}, "
                f"got {self.peer_admin!r}"
            )
        shell = shlex.split(self.shell_command) if isinstance(self.shell_command, str) else self.shell_command
        object.__setattr__(self, "shell_command", tuple(shell))
        if not self.shell_command:
            raise ClusterConfigError(f"cluster {self.name!r}: shell_command is empty")
        if self.webhdfs_url is not None and not self.webhdfs_url.startswith(("http://", "https://")):
            raise ClusterConfigError(
                f"cluster {self.name!r}: webhdfs_url must start with http:// or https://, "
                f"got {self.webhdfs_url!r}"
            )
        if not self.rootdir.startswith("/"):
            raise ClusterConfigError(
                f"cluster {self.name!r}: rootdir must be an absolute HDFS path, got {self.rootdir!r}"
            )
        for name in ("timeout_s", "shell_timeout_s"):
            object.__setattr__(self, name, _seconds(getattr(self, name), f"cluster {self.name!r}: {name}"))
        if self.thrift_transport not in THRIFT_TRANSPORTS:
            raise ClusterConfigError(f"cluster {self.name!r}: thrift_transport must be one of "
                                     f"{', '.join(THRIFT_TRANSPORTS)}, got {self.thrift_transport!r}")
        if self.thrift_protocol not in THRIFT_PROTOCOLS:
            raise ClusterConfigError(f"cluster {self.name!r}: thrift_protocol must be one of "
                                     f"{', '.join(THRIFT_PROTOCOLS)}, got {self.thrift_protocol!r}")
        object.__setattr__(self, "zk_legacy_table_cfs",
                           _flag(self.zk_legacy_table_cfs, f"cluster {self.name!r}: zk_legacy_table_cfs"))
        primary = f"{self.thrift_host}:{self.thrift_port}"
        gateways = _endpoints(self.thrift_servers, f"cluster {self.name!r}: thrift_servers")
        object.__setattr__(self, "thrift_servers", (primary, *[g for g in gateways if g != primary]))
        object.__setattr__(self, "thrift2_servers",
                           _endpoints(self.thrift2_servers, f"cluster {self.name!r}: thrift2_servers"))
        if self.data_path not in DATA_PATHS:
            raise ClusterConfigError(f"cluster {self.name!r}: data_path must be one of {', '.join(DATA_PATHS)}, "
                                     f"got {self.data_path!r}")
        if self.data_path == "thrift2" and not self.thrift2_servers:
            raise ClusterConfigError(f"cluster {self.name!r}: data_path thrift2 needs thrift2_servers "
                                     "(the host:port of `hbase thrift2` gateways)")
        if self.client_bind_address is not None:
            try:
                ipaddress.ip_address(self.client_bind_address)
            except ValueError:
                raise ClusterConfigError(f"cluster {self.name!r}: client_bind_address must be an IP address of "
                                         f"this host, got {self.client_bind_address!r}") from None
        if isinstance(self.security, Mapping):
            try:
                object.__setattr__(self, "security", Security.from_dict(self.security) if self.security else None)
            except SecurityConfigError as e:
                raise ClusterConfigError(f"cluster {self.name!r}: {e}") from None
        elif self.security is not None and not isinstance(self.security, Security):
            raise ClusterConfigError(f"cluster {self.name!r}: security must be a Security or a mapping, "
                                     f"got {self.security!r}")
        if self.security == Security():  # the form's defaults (no principal, no TLS): an open cluster
            object.__setattr__(self, "security", None)
        if self.security is not None and self.webhdfs_url and self.webhdfs_url.startswith("http://") \
                and self.security.ssl_ca and not self.security.thrift_ssl:
            raise ClusterConfigError(f"cluster {self.name!r}: ssl_ca is set but no channel uses TLS (thrift_ssl is "
                                     "off and webhdfs_url is http://): remove it, or name the https endpoints")

    @property
    def gateways(self) -> tuple[str, ...]:
        """The gateways (host:port) of the data path this cluster uses."""
        return self.thrift2_servers if self.uses_thrift2 else self.thrift_servers

    @property
    def uses_thrift2(self) -> bool:
        """Whether the Python reads and writes (copy and verify on a Thrift path, repair, the canary, the
        toolkit's small reads) go through Thrift2 rather than Thrift1 (the data path is chosen once, here)."""
        return self.data_path == "thrift2" or (self.data_path != "thrift1" and bool(self.thrift2_servers))

    @property
    def uses_native(self) -> bool:
        """Whether copy and verify run in Spark's JVMs with HBase's own client (docs/data-path.md)."""
        return self.data_path == "native"

    @property
    def cluster_key(self) -> ClusterKey:
        return ClusterKey(self.zk_quorum, self.zk_port, self.znode_parent)

    @property
    def zk_hosts(self) -> str:
        return self.cluster_key.zk_hosts

    @classmethod
    def from_connection(
        cls, name: str, host: str | None, port: int | None, extra: Mapping[str, Any] | None
    ) -> "Cluster":
        """Build from an Airflow Connection's fields: host/port = the Thrift server, the rest in extras
        (`EXTRAS`: every key and the field it sets). An unknown extra is refused (a misspelt key would
        otherwise be silently ignored)."""
        extra = dict(extra or {})
        unknown = sorted(set(extra) - set(EXTRAS))
        if unknown:
            raise ClusterConfigError(f"cluster {name!r}: unknown extra {', '.join(map(repr, unknown))} "
                                     f"(known: {', '.join(sorted(EXTRAS))})")
        if not extra.get("zookeeper_quorum"):
            raise ClusterConfigError(f"cluster {name!r}: extra 'zookeeper_quorum' is required")
        values = {EXTRAS[k]: v for k, v in extra.items() if v not in (None, "") and k not in SECURITY_EXTRAS}
        secured = {k: v for k, v in extra.items() if v not in (None, "") and k in SECURITY_EXTRAS}
        return cls(name=name, thrift_host=host or "", thrift_port=port if port else 9090,
                   security=secured or None, **values)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: JSON-ready, every field."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("zk_quorum", "shell_command", "thrift_servers", "thrift2_servers"):
            d[name] = list(d[name])
        d["security"] = self.security.to_dict() if self.security is not None else None
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cluster":
        """The Cluster `to_dict()` described; unknown keys are refused."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ClusterConfigError(f"unknown cluster field(s) {', '.join(unknown)} "
                                     f"(known: {', '.join(sorted(known))})")
        if "name" not in data or "thrift_host" not in data or "zk_quorum" not in data:
            raise ClusterConfigError("a cluster needs name, thrift_host and zk_quorum")
        return cls(**dict(data))

    def describe(self) -> dict[str, Any]:
        """What logs show: addresses and how each channel authenticates; never a secret (a keytab's path, not
        its contents)."""
        return {
            "name": self.name,
            "thrift": f"{self.thrift_host}:{self.thrift_port}",
            "data_path": "native" if self.uses_native else "thrift2" if self.uses_thrift2 else "thrift1",
            "thrift2": ",".join(self.thrift2_servers) or None,
            "cluster_key": str(self.cluster_key),
            "webhdfs_url": self.webhdfs_url,
            "webhdfs_user": self.webhdfs_user,
            "rootdir": self.rootdir,
            "peer_admin": self.peer_admin,
            "security": self.security.channels() if self.security is not None else "none (open cluster)",
        }
