"""Python API to run minihbase clusters from tests and benchmarks (stable: other parts rely on it).

    cluster = MiniCluster.start(zookeeper.hosts, tmp_path, name="dc1")
    cluster.thrift_host, cluster.thrift_port, cluster.thrift2_host, cluster.thrift2_port, cluster.cluster_key,
    cluster.connection_json, cluster.thrift_gateways, cluster.thrift2_gateways
    cluster.kill_rs(0); cluster.start_rs(0); cluster.set_latency(5)
    cluster.stop_gateway("thrift2", 0); cluster.start_gateway("thrift2", 0)
    cluster.set_quota("/hbase", space_bytes=10 << 20); cluster.roll_wals(); cluster.stop()

Each cluster runs as its own `python -m minihbase serve` process (its own GIL), on the given ZooKeeper, with
its files under `<workdir>/<name>/`. Settings come from `clusters.toml`'s `[defaults]` (and the section of the
same name, if any) plus keyword overrides (see `minihbase.config.ClusterConfig`).

Secured clusters run on a `bedkit.security.stack.SecureStack` (KDC, keytabs, SASL ZooKeeper):

    stack = SecureStack(tmp_path / "secure").start()
    dc1 = MiniCluster.start_secure(stack, tmp_path, "dc1", "DC1.TEST", thrift_qop="auth-conf")
    dc2 = MiniCluster.start_secure(stack, tmp_path, "dc2", "DC2.TEST", thrift_http=True, thrift_ssl=True)

Their control calls (every knob below) authenticate with SPNEGO as the cluster's hbase service principal.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from minihbase import process
from minihbase.config import ClusterConfig, cluster_from_defaults
from minihbase.process import MiniHBaseError
from minihbase.security.client import service_auth

__all__ = ["MiniCluster", "MiniHBaseError"]


class MiniCluster:
    def __init__(self, config: ClusterConfig, workdir: Path, zk_hosts: str, proc: subprocess.Popen | None,
                 endpoints: dict):
        self.config = config
        self.name = config.name
        self.workdir = Path(workdir)
        self.zk_hosts = zk_hosts
        self._proc = proc
        self._endpoints = endpoints

    # ------------------------------------------------------------------------------------------ lifecycle
    @classmethod
    def start(cls, zk_hosts: str, workdir: Path, name: str = "dc1", znode_parent: str | None = None,
              region_servers: int = 3, timeout: float = 90.0, **overrides: Any) -> "MiniCluster":
        settings = dict(overrides, region_servers=region_servers)
        if znode_parent is not None:
            settings["znode_parent"] = znode_parent
        config = cluster_from_defaults(name, settings)
        return cls._launch(config, Path(workdir), zk_hosts, timeout)

    @classmethod
    def start_secure(cls, stack, workdir: Path, name: str, realm: str, thrift_qop: str | None = None,
                     thrift_http: bool = False, thrift_ssl: bool = False, region_servers: int = 3,
                     znode_parent: str | None = None, timeout: float = 90.0, security: dict | None = None,
                     **overrides: Any) -> "MiniCluster":
        """A secured cluster of `realm` on `stack`'s ZooKeeper and KDC: Thrift gateways in binary SASL with
        `thrift_qop` (default auth-conf) or `thrift_http` (SPNEGO, TLS with `thrift_ssl`); `security` entries
        override the stack's settings (e.g. `superusers`)."""
        settings = stack.cluster_security(realm, thrift_qop=thrift_qop, thrift_http=thrift_http,
                                          thrift_ssl=thrift_ssl, **(security or {}))
        return cls.start(stack.zookeeper.hosts, workdir, name=name, znode_parent=znode_parent,
                         region_servers=region_servers, timeout=timeout, security=settings, **overrides)

    @classmethod
    def _launch(cls, config: ClusterConfig, workdir: Path, zk_hosts: str, timeout: float) -> "MiniCluster":
        if process.read_pid(workdir, config.name) is not None:
            raise MiniHBaseError(f"cluster {config.name} already runs under {workdir}")
        proc = process.spawn(config, workdir, zk_hosts)
        try:
            endpoints = process.wait_ready(workdir, config.name, proc, timeout)
        except BaseException:
            process.kill(workdir, config.name, proc)
            raise
        return cls(config, workdir, zk_hosts, proc, endpoints)

    def stop(self, timeout: float = 60.0) -> None:
        """Graceful stop: memstores flushed, WALs archived, ZooKeeper sessions closed."""
        process.stop(self.workdir, self.name, self._proc, timeout)
        self._proc = None

    def crash(self) -> None:
        """SIGKILL the cluster process: nothing is flushed, the next start replays the WALs."""
        process.kill(self.workdir, self.name, self._proc)
        self._proc = None

    def restart(self, timeout: float = 90.0) -> "MiniCluster":
        """Start again on the same workdir (after `stop` or `crash`); data and ports are kept."""
        if self.running:
            self.stop()
        fresh = self._launch(self.config, self.workdir, self.zk_hosts, timeout)
        self._proc, self._endpoints = fresh._proc, fresh._endpoints
        return self

    @property
    def security(self) -> dict:
        """The cluster's security settings (`ClusterConfig.security`; empty when unsecured)."""
        return self.config.security

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> "MiniCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------------ addresses
    def _control(self, path: str, body: dict | None = None, timeout: float = 60.0) -> dict:
        return process.control(self._endpoints["control_url"], path, body, timeout,
                               auth=service_auth(self.config.security, self.config.host))

    @property
    def endpoints(self) -> dict:
        """Exactly this cluster's entry of `python -m minihbase endpoints --json` (read live)."""
        self._endpoints = self._control("/control/endpoints")
        return self._endpoints

    @property
    def thrift_host(self) -> str:
        return self._endpoints["thrift"]["host"]

    @property
    def thrift_port(self) -> int:
        return self._endpoints["thrift"]["port"]

    @property
    def thrift2_host(self) -> str | None:
        """The first Thrift2 gateway's host (None when the cluster runs no Thrift2 gateway)."""
        thrift2 = self._endpoints.get("thrift2")
        return thrift2["host"] if thrift2 else None

    @property
    def thrift2_port(self) -> int | None:
        thrift2 = self._endpoints.get("thrift2")
        return thrift2["port"] if thrift2 else None

    @property
    def thrift_gateways(self) -> list[dict]:
        """Every Thrift1 gateway, `{index, host, port, alive}` (read live)."""
        return self.endpoints["thrift_gateways"]

    @property
    def thrift2_gateways(self) -> list[dict]:
        """Every Thrift2 gateway, `{index, host, port, alive}` (read live)."""
        return self.endpoints["thrift2_gateways"]

    @property
    def cluster_key(self) -> str:
        return self._endpoints["cluster_key"]

    @property
    def cluster_id(self) -> str:
        return self._endpoints["cluster_id"]

    @property
    def znode_parent(self) -> str:
        return self._endpoints["zookeeper"]["znode_parent"]

    @property
    def webhdfs_url(self) -> str:
        return self._endpoints["webhdfs_url"]

    @property
    def rootdir(self) -> str:
        return self._endpoints["rootdir"]

    @property
    def local_rootdir(self) -> Path:
        """Where the HDFS rootdir lives on local disk (for assertions against the files)."""
        return self.workdir / self.name / "hdfs" / self.rootdir.lstrip("/")

    @property
    def region_servers(self) -> list[dict]:
        return self.endpoints["region_servers"]

    @property
    def connection_json(self) -> str:
        """The Airflow connection as AIRFLOW_CONN_<ID>'s JSON form."""
        return json.dumps(self._endpoints["connection"])

    @property
    def connection_uri(self) -> str:
        return self._endpoints["connection_uri"]

    def connection(self, **kwargs):
        """A happybase Connection to this cluster's Thrift gateway."""
        import happybase

        return happybase.Connection(self.thrift_host, self.thrift_port, **kwargs)

    # ------------------------------------------------------------------------------------------ knobs
    def kill_rs(self, servername_or_index: str | int) -> str:
        """Crash one region server (no flush); returns its servername."""
        return self._control("/control/kill-rs", {"server": servername_or_index})["killed"]

    def start_rs(self, servername_or_index: str | int) -> str:
        """Start a new region server in that slot (new startcode); returns its servername."""
        return self._control("/control/start-rs", {"server": servername_or_index})["started"]

    def set_latency(self, ms: float) -> None:
        self._control("/control/latency", {"ms": ms})

    def stop_gateway(self, kind: str, index: int = 0) -> dict:
        """Stop one gateway ("thrift" or "thrift2") as if its process died: its port refuses connections and its
        open connections drop. Returns its `{index, host, port, alive}`."""
        return self._control("/control/stop-gateway", {"kind": kind, "index": index})["gateway"]

    def start_gateway(self, kind: str, index: int = 0) -> dict:
        """Start a stopped gateway again on its own port (fresh state, as a restarted process)."""
        return self._control("/control/start-gateway", {"kind": kind, "index": index})["gateway"]

    def gateway_fault(self, kind: str, index: int = 0, *, latency_ms: float | None = None,
                      reset_probability: float | None = None, reset_now: bool = False) -> dict:
        """One gateway's network faults: its own latency (ms, on top of `set_latency`'s), the probability that a
        call's connection is reset (before or after the call runs), and `reset_now` every open connection reset
        at once. None keeps a setting. Returns the gateway's description with its `fault` settings."""
        body: dict[str, Any] = {"kind": kind, "index": index, "reset_now": reset_now}
        if latency_ms is not None:
            body["latency_ms"] = latency_ms
        if reset_probability is not None:
            body["reset_probability"] = reset_probability
        return self._control("/control/gateway-fault", body)["gateway"]

    def set_quota(self, path: str, space_bytes: int | None = None, ns: int | None = None) -> dict:
        """Set HDFS quotas on a directory (None keeps a quota, -1 clears it); returns every quota."""
        body: dict = {"path": path}
        if space_bytes is not None:
            body["space_bytes"] = space_bytes
        if ns is not None:
            body["namespace"] = ns
        return self._control("/control/quota", body)["quotas"]

    def roll_wals(self, servername_or_index: str | int | None = None) -> list[str]:
        body = {} if servername_or_index is None else {"server": servername_or_index}
        return self._control("/control/roll-wals", body)["wals"]

    def flush(self, table: str | None = None) -> int:
        return self._control("/control/flush", {} if table is None else {"table": table})["flushed_regions"]

    def compact(self, table: str, major: bool = False) -> None:
        self._control("/control/compact", {"table": table, "major": major})

    def create_table(self, name: str, families: dict[str, dict], split_keys: list[bytes] | None = None) -> list[str]:
        """Create a (pre-split) table; families map to settings such as max_versions, ttl_s, replication_scope."""
        body = {"table": name, "families": families, "split_keys_hex": [k.hex() for k in split_keys or []]}
        return self._control("/control/create-table", body)["regions"]

    def alter_family(self, table: str, family: str, **settings: Any) -> dict:
        return self._control("/control/alter-family", {"table": table, "family": family, **settings})

    def balance(self) -> int:
        return self._control("/control/balance", {})["moves"]

    def run_log_cleaner(self) -> list[str]:
        return self._control("/control/run-log-cleaner", {})["deleted"]

    def status(self) -> dict:
        return self._control("/control/status")

    def alter_table(self, table: str, readonly: bool | None = None, values: dict[str, str] | None = None,
                    coprocessors: list[str] | None = None) -> dict:
        """Table attributes (HBase's modifyTable): READONLY, other values ("" removes one), coprocessor specs
        added. Returns `{table, readonly, attributes}`."""
        body: dict[str, Any] = {"table": table}
        if readonly is not None:
            body["readonly"] = readonly
        if values:
            body["values"] = values
        if coprocessors:
            body["coprocessors"] = coprocessors
        return self._control("/control/alter-table", body)

    def switches(self) -> dict:
        """`{split, merge, normalizer, split_requests_refused}`: the master's switches (ZooKeeper) and how many
        splits they stopped."""
        return self._control("/control/switches")

    def set_switch(self, name: str, enabled: bool) -> bool:
        """Turn "split", "merge" or "normalizer" on or off; returns the previous value."""
        return self._control("/control/switch", {"switch": name, "enabled": enabled})["previous"]

    def split(self, table: str, split_key: bytes | None = None) -> list[dict]:
        """An operator's split of the region holding `split_key` there (None: the biggest region at its middle
        row); refused (409) while the split switch is off. Returns the daughters `{encoded_name, start_key_hex,
        end_key_hex}`."""
        body = {"table": table, **({"split_key_hex": split_key.hex()} if split_key else {})}
        return self._control("/control/split", body)["regions"]

    def set_hdfs_capacity(self, capacity_bytes: int) -> None:
        """The datanodes' raw capacity the namenode reports (FSNamesystem's CapacityTotal; not enforced)."""
        self._control("/control/hdfs-capacity", {"bytes": capacity_bytes})

    def create_namespace(self, name: str, configuration: dict[str, str] | None = None) -> None:
        self._control("/control/create-namespace", {"namespace": name, "configuration": configuration or {}})

    def set_handler_latency(self, ms: float | None) -> dict:
        """The latency each region server call sleeps holding its handler, apart from `set_latency` (None:
        follow it again)."""
        return self._control("/control/latency", {"handler_ms": ms})
