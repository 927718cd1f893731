"""The clusters the nemesis strikes, behind one set of verbs: real HBase (realhbase, the default: faults on real
processes and through real sockets) or the stand-in (minihbase, `--stand-in`: faults through its control API).

    bed.up(); bed.clusters()                     # `endpoints --json`'s clusters
    bed.kill_rs(dc, slot); bed.start_rs(dc, slot); bed.region_server_up(dc, slot)
    bed.kill_gateway(dc, i); bed.start_gateway(dc, i)
    bed.gateway_fault(dc, i, latency_ms=..., reset_probability=..., reset_now=...)   # proxy or control API
    bed.down()

Real HBase only (`RealBed`): pause / resume / kill / start of any role (a region server, the active master, a
gateway, a DataNode), and the TCP fault proxies (chaos/netproxy.py) the toolkit's connections go through: one in
front of each gateway's Thrift1 and Thrift2 server and of each NameNode's WebHDFS.
"""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any, Callable

# The nemesis's bed: three region servers and two gateways per cluster (the stand-in's too), a backup master and
# two DataNodes of their own (two replicas), so that each can be struck alone and the cluster goes on.
CHAOS_TOPOLOGY = {"region_servers": 3, "gateways": 2, "backup_masters": 1, "datanodes": 2}


class RealBed:
    kind = "realhbase"

    def __init__(self, workdir: Path, zookeeper: str | None, log: Callable[[str], None] = print) -> None:
        from realhbase.roles import Topology
        from realhbase.testbed import RealHBase

        self.bed = RealHBase(workdir, zookeeper_hosts=zookeeper, timeout=1200, topology=Topology(**CHAOS_TOPOLOGY))
        self.log = log
        self.proxies: dict[str, Any] = {}  # "dc1:thrift2:0", "dc1:thrift:1", "dc2:webhdfs" -> FaultProxy

    # ------------------------------------------------------------------------------------------ life
    def up(self) -> None:
        self.bed.up()
        from chaos.netproxy import FaultProxy

        for dc, ep in self.clusters().items():
            for kind in ("thrift", "thrift2"):
                for g in ep[f"{kind}_gateways"]:
                    self.proxies[f"{dc}:{kind}:{g['index']}"] = FaultProxy(g["host"], g["port"],
                                                                           f"{dc}-{kind}-{g['index']}").start()
            host, _, port = ep["webhdfs_url"].rpartition("//")[2].partition(":")
            self.proxies[f"{dc}:webhdfs"] = FaultProxy(host, int(port), f"{dc}-webhdfs").start()

    def down(self) -> list[str]:
        for proxy in self.proxies.values():
            proxy.stop()
        return self.bed.down()

    def clusters(self) -> dict[str, dict]:
        return self.bed.endpoints()

    def version(self) -> str | None:
        return (self.bed._instance().get("versions") or {}).get("hbase")

    def toolkit_connection(self, dc: str, endpoint: dict) -> dict:
        """The cluster's connection with every gateway and WebHDFS behind its fault proxy."""
        conn = json.loads(json.dumps(endpoint["connection"]))
        extra = conn["extra"]
        gateways = endpoint["thrift2_gateways"]
        conn["port"] = self.proxies[f"{dc}:thrift:0"].port
        extra["thrift2_servers"] = ",".join(self.proxies[f"{dc}:thrift2:{g['index']}"].address for g in gateways)
        extra["thrift_servers"] = ",".join(self.proxies[f"{dc}:thrift:{g['index']}"].address for g in gateways)
        extra["webhdfs_url"] = f"http://{self.proxies[f'{dc}:webhdfs'].address}"
        return conn

    # ------------------------------------------------------------------------------------------ faults
    def kill_rs(self, dc: str, slot: int) -> str:
        return self.bed.kill_rs(dc, slot)

    def start_rs(self, dc: str, slot: int) -> str:
        return self.bed.start_rs(dc, slot, timeout=600)

    def region_server_up(self, dc: str, slot: int) -> bool:
        return any(r["slot"] == slot and r["alive"] for r in self.clusters()[dc]["region_servers"])

    def kill(self, dc: str, role: str) -> int:
        return self.bed.kill_role(dc, role)

    def pause(self, dc: str, role: str) -> int:
        return self.bed.pause_role(dc, role)

    def resume(self, dc: str, role: str) -> int:
        return self.bed.resume_role(dc, role)

    def start(self, dc: str, role: str) -> int:
        return self.bed.start_role(dc, role, timeout=600)

    def running(self, dc: str, role: str) -> bool:
        return f"{dc}/{role}" in self.bed.running()

    def active_master(self, dc: str) -> str | None:
        """The role of the master ZooKeeper names active (None between two masters)."""
        return next((m["role"] for m in self.clusters()[dc]["masters"] if m["active"] and m["alive"]), None)

    def live_datanodes(self, dc: str) -> int:
        ep = self.clusters()[dc]
        with urllib.request.urlopen(f"{ep['webhdfs_url']}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState",
                                    timeout=10) as r:
            beans = json.load(r)["beans"]
        return int(beans[0]["NumLiveDataNodes"]) if beans else 0

    def kill_gateway(self, dc: str, index: int) -> dict:
        pid = self.bed.kill_role(dc, f"gw{index}")
        return {"gateway": f"{dc}/gw{index}", "pid": pid}

    def start_gateway(self, dc: str, index: int) -> None:
        self.bed.start_role(dc, f"gw{index}", timeout=600)

    def gateway_fault(self, dc: str, index: int, kind: str = "thrift2", **settings) -> dict:
        """Latency or resets on one gateway (both its servers: one host); `reset_now` resets its connections."""
        out = {}
        for k in ("thrift", "thrift2"):
            proxy = self.proxies[f"{dc}:{k}:{index}"]
            reset_now = settings.pop("reset_now", False) if k == "thrift2" else False
            proxy.set(**{key: settings[key] for key in ("latency_ms", "reset_probability") if key in settings})
            if reset_now:
                proxy.reset_now()
            out[k] = {"latency_ms": proxy.faults.latency_ms, "reset_probability": proxy.faults.reset_probability,
                      "resets": proxy.counts.resets}
        return out

    def gateway_address(self, dc: str, index: int, kind: str = "thrift2") -> dict:
        """Where the toolkit reaches the gateway: its proxy."""
        return {"host": "127.0.0.1", "port": self.proxies[f"{dc}:{kind}:{index}"].port}


class MiniBed:
    """The stand-in's two clusters, faults through their control API (`--stand-in`)."""

    kind = "minihbase"

    def __init__(self, workdir: Path, zookeeper: str | None, log: Callable[[str], None] = print) -> None:
        from demo.backends import TestBed
        from demo.cluster import clusters_toml, gateway_settings

        workdir.mkdir(parents=True, exist_ok=True)
        config = clusters_toml(workdir, gateway_settings(), unique_parents=bool(zookeeper))
        self.bed = TestBed("minihbase", workdir / "minihbase", zookeeper=zookeeper, config=config)
        self.log = log
        self.proxies: dict[str, Any] = {}
        self._clusters: dict[str, dict] | None = None

    def up(self) -> None:
        self.bed.up()

    def down(self) -> list[str]:
        self.bed.down()
        return []

    def clusters(self) -> dict[str, dict]:
        if self._clusters is None:
            self._clusters = self.bed.described()["clusters"]
        return self._clusters

    def version(self) -> str | None:
        return None  # the stand-in imitates no single release

    def toolkit_connection(self, dc: str, endpoint: dict) -> dict:
        from demo.run import toolkit_connection

        return json.loads(toolkit_connection(endpoint, "thrift2"))

    def control(self, dc: str, path: str, body: dict | None = None, timeout: float = 30.0) -> dict:
        url = self.clusters()[dc]["control_url"].rstrip("/") + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def kill_rs(self, dc: str, slot: int) -> str:
        return self.control(dc, "/control/kill-rs", {"server": slot})["killed"]

    def start_rs(self, dc: str, slot: int) -> str:
        return self.control(dc, "/control/start-rs", {"server": slot})["started"]

    def region_server_up(self, dc: str, slot: int) -> bool:
        servers = self.control(dc, "/control/endpoints")["region_servers"]
        return any(rs["slot"] == slot and rs["alive"] for rs in servers)

    def kill_gateway(self, dc: str, index: int) -> dict:
        return {"gateway": self.control(dc, "/control/stop-gateway", {"kind": "thrift2", "index": index})["gateway"]}

    def start_gateway(self, dc: str, index: int) -> None:
        self.control(dc, "/control/start-gateway", {"kind": "thrift2", "index": index})

    def gateway_fault(self, dc: str, index: int, kind: str = "thrift2", **settings) -> dict:
        answer = self.control(dc, "/control/gateway-fault", {"kind": kind, "index": index, **settings})
        return answer["gateway"]["fault"]

    def gateway_address(self, dc: str, index: int, kind: str = "thrift2") -> dict:
        g = self.clusters()[dc][f"{kind}_gateways"][index]
        return {"host": g["host"], "port": g["port"]}
