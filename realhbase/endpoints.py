"""`python -m realhbase endpoints --json`: where everything of the bed is, in realhbase's own schema (version
`SCHEMA_VERSION`, top-level `schema_version`). Pure functions of facts the bed gathers: unit-tested exactly.

    {"schema_version": 1,
     "clusters": {name: CLUSTER_KEYS..., "security" on a secured bed},
     "yarn": {...} when YARN was started (realhbase/yarn.py),
     "security": {...} on a secured bed (the KDC, realms, principals and keytabs: security.json)}

A cluster's `connection` is an Airflow connection of the toolkit's `hbase` type: its `extra` holds EXTRA_KEYS (a
secured bed: SECURE_EXTRA_KEYS instead of `webhdfs_user`, which Kerberized WebHDFS ignores), `thrift_servers` too
when the cluster has more than one gateway. A change to a key's meaning, or a key taken away, is a new version;
a key added is not.
"""
from __future__ import annotations

import json
import shlex
from urllib.parse import quote

from realhbase.config import split_zk_hosts

SCHEMA_VERSION = 1

CLUSTER_KEYS = (
    "name", "backend", "hbase_version", "versions",
    "thrift", "thrift2",                      # the first gateway's Thrift1 and Thrift2 {host, port}
    "thrift_gateways", "thrift2_gateways",    # every gateway: index, host, port, info_port, alive, role, pid
    "zookeeper", "cluster_key", "cluster_id",
    "master",                                 # the active master's slot (host, port, info_port, alive)
    "masters",                                # every master JVM: slot, role, ports, alive, pid
    "region_servers",                         # slot, servername, host, port, info_port, alive, state, pid
    "namenode", "datanodes", "webhdfs_url", "rootdir", "hdfs_superuser",
    "workdir", "conf_dir", "logs_dir", "shell_command", "connection", "connection_uri", "topology")
EXTRA_KEYS = ("zookeeper_quorum", "zookeeper_port", "znode_parent", "webhdfs_url", "webhdfs_user", "rootdir",
              "peer_admin", "shell_command", "thrift2_servers")
SECURE_EXTRA_KEYS = ("krb5_conf", "hbase_principal", "spnego_principal", "zookeeper_principal", "principal",
                     "keytab")  # and thrift_qop, or thrift_http (+ thrift_ssl, ssl_ca)


def region_server_state(servername: str | None, jvm_alive: bool) -> str:
    """`online` (registered in ZooKeeper), `starting` (JVM up, not registered) or `aborted` (JVM gone)."""
    return "online" if servername and jvm_alive else "starting" if jvm_alive else "aborted"


def security_entry(settings: dict) -> dict:
    """A secured cluster's `security` entry, from its settings (realhbase/secure.py `settings`)."""
    keys = ("realm", "krb5_conf", "hbase_principal", "spnego_principal", "zookeeper_principal", "hbase_keytab",
            "spnego_keytab", "superusers", "auth_to_local", "thrift_qop", "thrift_http", "thrift_ssl")
    return {**{k: settings.get(k) for k in keys}, "ssl_ca": settings.get("ssl_ca")}


def security_extras(settings: dict) -> dict:
    """What a secured cluster's connection extras add: the Kerberos names and files the toolkit logs in with, and
    the gateways' mode (binary SASL with its QOP, or HTTP mode with SPNEGO, over TLS with its CA)."""
    extra = {k: settings[k] for k in ("krb5_conf", "hbase_principal", "spnego_principal", "zookeeper_principal")}
    if settings.get("client_principal"):
        extra["principal"] = settings["client_principal"]
    if settings.get("client_keytab"):
        extra["keytab"] = settings["client_keytab"]
    if settings.get("thrift_http"):
        extra["thrift_http"] = True
        if settings.get("thrift_ssl"):
            extra["thrift_ssl"] = True
            if settings.get("ssl_ca"):
                extra["ssl_ca"] = settings["ssl_ca"]
    else:
        extra["thrift_qop"] = settings.get("thrift_qop")
    return extra


def cluster_entry(*, name: str, host: str, server_host: str, parent: str, zk_hosts: str, ports: dict[str, int],
                  versions: dict, cluster_id: str | None, masters: list[dict], region_servers: list[dict],
                  gateways: list[dict], datanodes: list[dict], rootdir: str, workdir: str, conf_dir: str,
                  logs_dir: str, shell_command: list[str], webhdfs_user: str, hdfs_superuser: str,
                  topology: dict, security_extras: dict | None = None, security: dict | None = None) -> dict:
    """One cluster's entry. `masters`: [{slot, role, port, info_port, alive, active, pid}] (`active`: the one
    ZooKeeper's master znode names; `master` is it, else the first); `region_servers`: [{slot, servername, port,
    info_port, jvm_alive, pid}]; `gateways`: [{index, role, thrift, thrift_info, thrift2, thrift2_info, alive,
    pid}]; `datanodes`: [{slot, role, alive, pid}]."""
    quorum, zk_port = split_zk_hosts(zk_hosts)
    webhdfs_url = f"http://{host}:{ports['namenode_http']}"
    extra = {"zookeeper_quorum": quorum, "zookeeper_port": zk_port, "znode_parent": parent,
             # the daemons' user: anonymous WebHDFS (dr.who) may not sum up the root (HBase makes staging 711)
             "webhdfs_url": webhdfs_url, "webhdfs_user": webhdfs_user, "rootdir": rootdir, "peer_admin": "shell",
             "shell_command": shlex.join(shell_command),
             "thrift2_servers": ",".join(f"{host}:{g['thrift2']}" for g in gateways)}
    if len(gateways) > 1:
        extra["thrift_servers"] = ",".join(f"{host}:{g['thrift']}" for g in gateways)
    if security_extras is not None:
        extra.pop("webhdfs_user")  # Kerberos: WebHDFS ignores user.name, the SPNEGO principal is the user
        extra.update(security_extras)
    listed = {kind: [{"index": g["index"], "host": host, "port": g[kind], "info_port": g[f"{kind}_info"],
                      "alive": g["alive"], "role": g["role"], "pid": g.get("pid")} for g in gateways]
              for kind in ("thrift", "thrift2")}
    active = next((m for m in masters if m.get("active")), masters[0])
    first = gateways[0]
    connection = {"conn_type": "hbase", "host": host, "port": first["thrift"], "extra": extra}
    entry = {
        "name": name,
        "backend": "realhbase",
        "hbase_version": versions["hbase"],
        "versions": versions,
        "thrift": {"host": host, "port": first["thrift"]},
        "thrift2": {"host": host, "port": first["thrift2"]},
        "thrift_gateways": listed["thrift"],
        "thrift2_gateways": listed["thrift2"],
        "zookeeper": {"quorum": quorum, "port": zk_port, "znode_parent": parent, "hosts": zk_hosts},
        "cluster_key": f"{quorum}:{zk_port}:{parent}",
        "cluster_id": cluster_id,
        "master": {"host": server_host, "port": active["port"], "info_port": active["info_port"],
                   "alive": active["alive"]},
        "masters": [{"slot": m["slot"], "role": m["role"], "host": server_host, "port": m["port"],
                     "info_port": m["info_port"], "alive": m["alive"], "active": bool(m.get("active")),
                     "pid": m.get("pid")}
                    for m in masters],
        "region_servers": [
            {"slot": r["slot"], "servername": r["servername"], "host": server_host, "port": r["port"],
             "info_port": r["info_port"], "alive": bool(r["servername"] and r["jvm_alive"]),
             "state": region_server_state(r["servername"], r["jvm_alive"]), "pid": r.get("pid")}
            for r in region_servers],
        "namenode": {"host": host, "port": ports["namenode"], "http_port": ports["namenode_http"]},
        "datanodes": datanodes,
        "webhdfs_url": webhdfs_url,
        "rootdir": rootdir,
        # HDFS checks permissions: the daemons' user is its superuser (WebHDFS `user.name`); anonymous calls are
        # `dr.who`, refused a summary of the whole rootdir (HBase makes /hbase/staging 711)
        "hdfs_superuser": hdfs_superuser,
        "workdir": workdir,
        "conf_dir": conf_dir,
        "logs_dir": logs_dir,
        "shell_command": shell_command,
        "connection": connection,
        "connection_uri": f"hbase://{host}:{first['thrift']}/?__extra__="
                          + quote(json.dumps(extra, sort_keys=True), safe=""),
        "topology": topology,
    }
    if security is not None:
        entry["security"] = security
    return entry


def document(clusters: dict[str, dict], yarn: dict | None = None, security: dict | None = None) -> dict:
    """The whole `endpoints --json` document."""
    return {"schema_version": SCHEMA_VERSION, "clusters": clusters, **({"yarn": yarn} if yarn else {}),
            **({"security": security} if security else {})}
