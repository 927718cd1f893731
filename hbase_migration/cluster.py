"""How the toolkit reaches one HBase cluster, and HBase cluster keys.

A `Cluster` is built from an Airflow Connection's fields (by the hook in
`operators/`) or from the CLI; it holds addresses only and opens nothing.
Every field is validated in the constructor and named in the error, as
happybase's `Connection` does.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping

PEER_ADMIN_BACKENDS = ("shell", "zookeeper")
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


@dataclass(frozen=True)
class Cluster:
    """Addresses of one HBase cluster. Opens no connection."""

    name: str
    thrift_host: str
    zk_quorum: tuple[str, ...]
    thrift_port: int = 9090
    zk_port: int = 2181
    znode_parent: str = "/hbase"
    info_port: int | None = None  # None: read each region server's from its rs/ znode
    webhdfs_url: str | None = None
    rootdir: str = "/hbase"
    peer_admin: str = "shell"
    shell_command: tuple[str, ...] = DEFAULT_SHELL_COMMAND
    timeout_s: float = 10.0
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.thrift_host:
            raise ClusterConfigError(f"cluster {self.name!r}: host (the Thrift server) is required")
        object.__setattr__(self, "thrift_port", _port(self.thrift_port, f"cluster {self.name!r}: port"))
        object.__setattr__(self, "zk_port", _port(self.zk_port, f"cluster {self.name!r}: zookeeper_port"))
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
        """Build from an Airflow Connection's fields (host/port = Thrift, the rest in extras).

        Extras: zookeeper_quorum (required), zookeeper_port, znode_parent, info_port,
        webhdfs_url, rootdir, peer_admin, shell_command (a string, split like a shell
        would, or a list), timeout_s.
        """
        extra = dict(extra or {})
        known = {
            "zookeeper_quorum", "zookeeper_port", "znode_parent", "info_port", "webhdfs_url",
            "rootdir", "peer_admin", "shell_command", "timeout_s",
        }
        quorum = extra.get("zookeeper_quorum")
        if not quorum:
            raise ClusterConfigError(f"cluster {name!r}: extra 'zookeeper_quorum' is required")
        if isinstance(quorum, str):
            quorum = [h.strip() for h in quorum.split(",")]
        shell = extra.get("shell_command", DEFAULT_SHELL_COMMAND)
        if isinstance(shell, str):
            shell = shlex.split(shell)
        info_port = extra.get("info_port")
        return cls(
            name=name,
            thrift_host=host or "",
            thrift_port=port if port else 9090,
            zk_quorum=tuple(quorum),
            zk_port=extra.get("zookeeper_port", 2181),
            znode_parent=extra.get("znode_parent", "/hbase"),
            info_port=int(info_port) if info_port not in (None, "") else None,
            webhdfs_url=extra.get("webhdfs_url") or None,
            rootdir=extra.get("rootdir", "/hbase"),
            peer_admin=extra.get("peer_admin", "shell"),
            shell_command=tuple(shell),
            timeout_s=float(extra.get("timeout_s", 10.0)),
            extra={k: v for k, v in extra.items() if k not in known},
        )

    def describe(self) -> dict[str, Any]:
        """What logs and `--json` show: addresses, never credentials."""
        return {
            "name": self.name,
            "thrift": f"{self.thrift_host}:{self.thrift_port}",
            "cluster_key": str(self.cluster_key),
            "webhdfs_url": self.webhdfs_url,
            "rootdir": self.rootdir,
            "peer_admin": self.peer_admin,
        }
