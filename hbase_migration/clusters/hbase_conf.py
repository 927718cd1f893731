"""A running HBase server's configuration through its `/conf` servlet, and what replication cannot carry.

`GET http://<server>:<info port>/conf?format=json` answers `{"properties": [{"key", "value", "isFinal",
"resource"}]}` (Hadoop's ConfServlet; `/conf` alone is the XML form, read here too). Every live region server is
asked (info ports from their `rs/` znodes, as for `/jmx`): replication runs in the region servers, and one with
another hbase-site.xml behaves differently.

Bulk-loaded HFiles are not in the WAL: they replicate only when the source's region servers run with
`hbase.replication.bulkload.enabled=true` and a `hbase.replication.cluster.id` (HBASE-13153; the sink also needs
the source's file system configuration, `hbase.replication.conf.dir`). Without them every bulk load into a
migrated table after T0 is lost on the target. `bulkload_findings` is the pure decision.
"""
from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

BULKLOAD_ENABLED = "hbase.replication.bulkload.enabled"
REPLICATION_CLUSTER_ID = "hbase.replication.cluster.id"


class ConfUnreadable(ConnectionError):
    """A server's /conf could not be read or parsed; the message names the server and why."""


def parse_conf_json(payload: Any) -> dict[str, str]:
    """`Configuration.dumpConfiguration` JSON -> {key: value}."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("properties"), list):
        raise ValueError(f"not a /conf JSON document (no properties list): {str(payload)[:200]!r}")
    out = {}
    for prop in payload["properties"]:
        if isinstance(prop, Mapping) and isinstance(prop.get("key"), str):
            out[prop["key"]] = "" if prop.get("value") is None else str(prop["value"])
    return out


def parse_conf_xml(text: str | bytes) -> dict[str, str]:
    """`Configuration.writeXml` -> {name: value}."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"not a /conf XML document: {e}") from None
    if root.tag != "configuration":
        raise ValueError(f"not a /conf XML document (root <{root.tag}>)")
    return {p.findtext("name"): p.findtext("value") or "" for p in root.iter("property") if p.findtext("name")}


def fetch_conf(host: str, port: int, timeout_s: float = 10.0, session: Any = None) -> dict[str, str]:
    """One server's configuration (JSON form; the XML form when JSON is not understood)."""
    import requests

    if session is None:
        from hbase_migration.clusters import channels

        session = channels.http(None)
    http = session
    url = f"http://{host}:{port}/conf"
    try:
        response = http.get(url, params={"format": "json"}, timeout=timeout_s)
        if response.status_code == 200:
            try:
                return parse_conf_json(response.json())
            except ValueError:
                pass
        response = http.get(url, timeout=timeout_s)
        if response.status_code != 200:
            raise ConfUnreadable(f"{host}:{port}: GET {url} answered HTTP {response.status_code}: "
                                 f"{response.text[:200]}")
        return parse_conf_xml(response.content)
    except (requests.ConnectionError, requests.Timeout) as e:
        raise ConfUnreadable(f"{host}:{port}: GET {url} failed: {type(e).__name__}: {e}") from None
    except ValueError as e:
        raise ConfUnreadable(f"{host}:{port}: {url}: {e}") from None


@dataclass(frozen=True)
class ServerConf:
    """One live region server's configuration, or why it could not be read."""

    servername: str
    properties: Mapping[str, str] | None = None
    error: str | None = None


def read_region_server_confs(cluster: "Cluster", zk_client: Any, max_workers: int = 8) -> tuple[ServerConf, ...]:
    """`/conf` of every live region server of `cluster`."""
    from hbase_migration.clusters import channels, zk

    servers = zk.live_region_servers(zk_client, cluster.znode_parent)

    def read(server: Any) -> ServerConf:
        port = cluster.info_port or server.info_port
        if port is None:
            return ServerConf(server.servername, error="info port unknown (no RegionServerInfo in its rs/ znode "
                                                       "and no info_port on the connection)")
        try:
            return ServerConf(server.servername, fetch_conf(server.host, port, cluster.timeout_s,
                                                                 session=channels.http(cluster)))
        except ConfUnreadable as e:
            log.warning("/conf of %s: %s", server.servername, e)
            return ServerConf(server.servername, error=str(e))

    if not servers:
        return ()
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(servers))), thread_name_prefix="conf") as pool:
        return tuple(pool.map(read, servers))


def bulkload_findings(confs: Sequence[ServerConf]) -> tuple[bool | None, str]:
    """(True: bulk loads replicate from every server; False: not from some, named; None: unknown), reason."""
    if not confs:
        return None, "no live region server to read /conf from"
    unread = [c for c in confs if c.properties is None]
    problems = []
    for conf in confs:
        if conf.properties is None:
            continue
        enabled = conf.properties.get(BULKLOAD_ENABLED, "false").strip().lower() == "true"
        cluster_id = conf.properties.get(REPLICATION_CLUSTER_ID, "").strip()
        if not enabled:
            problems.append(f"{conf.servername}: {BULKLOAD_ENABLED}="
                            f"{conf.properties.get(BULKLOAD_ENABLED, 'false (unset)')}")
        elif not cluster_id:
            problems.append(f"{conf.servername}: {BULKLOAD_ENABLED}=true but {REPLICATION_CLUSTER_ID} is unset")
    if problems:
        return False, "; ".join(problems)
    if unread:
        return None, "; ".join(f"{c.servername}: {c.error}" for c in unread)
    ids = sorted({c.properties[REPLICATION_CLUSTER_ID].strip() for c in confs})
    return True, f"{BULKLOAD_ENABLED}=true, {REPLICATION_CLUSTER_ID}={','.join(ids)} on all {len(confs)} server(s)"


DROP_ON_DELETED_TABLE = "hbase.replication.drop.on.deleted.table"


def true_on(confs: Sequence[ServerConf], key: str) -> list[str]:
    """The servers whose `key` is true."""
    return [c.servername for c in confs
            if c.properties is not None and c.properties.get(key, "false").strip().lower() == "true"]


def master_info_address(zk_client: Any, znode_parent: str) -> tuple[str, int] | None:
    """(host, info port) of the active master from its `master` znode (PBUF `Master {1 ServerName {1 host_name,
    2 port, 3 start_code}, 2 rpc_version, 3 info_port}`); None when the znode does not name a usable info port
    (HBase writes none when the master's info server is off)."""
    from hbase_migration.clusters import zk

    try:
        data, _ = zk_client.get(zk.join(znode_parent, "master"))
    except Exception:  # no active master: said by the caller's other facts
        return None
    body = zk.strip_metadata(data)
    if not zk.has_pb_magic(body):
        return None
    host, port = None, None
    for number, _wire, value in zk.decode_fields(body[4:]):
        if number == 1 and isinstance(value, bytes):
            host = next((v.decode() for n, _w, v in zk.decode_fields(value) if n == 1 and isinstance(v, bytes)), None)
        elif number == 3 and isinstance(value, int):
            port = value
    if not host or port is None or not 0 < port < 65536:
        return None
    return host, port


def read_cluster_conf(cluster: "Cluster", zk_client: Any) -> tuple[dict[str, str], str]:
    """A cluster's HBase configuration and whose it is: the active master's `/conf` when its znode names an info
    port, else the first region server's that answers (deployments share one hbase-site). Raises ConfUnreadable
    when none answers."""
    from hbase_migration.clusters import channels

    address = master_info_address(zk_client, cluster.znode_parent)
    errors = []
    if address is not None:
        try:
            return fetch_conf(*address, cluster.timeout_s, session=channels.http(cluster)), \
                f"the master {address[0]}:{address[1]}"
        except ConfUnreadable as e:
            errors.append(str(e))
    for server in read_region_server_confs(cluster, zk_client):
        if server.properties is not None:
            return dict(server.properties), f"region server {server.servername}"
        errors.append(server.error or server.servername)
    raise ConfUnreadable(f"no /conf of {cluster.name} could be read: " + ("; ".join(errors) or "no live server"))


SUPERUSER = "hbase.superuser"
AUTHORIZATION = "hbase.security.authorization"
ACCESS_CONTROLLER = "org.apache.hadoop.hbase.security.access.AccessController"


def parse_superusers(value: str | None) -> tuple[str, ...]:
    """`hbase.superuser` (comma-separated users and @groups; HBase's Superusers trims each) -> its entries."""
    return tuple(dict.fromkeys(p.strip() for p in (value or "").split(",") if p.strip()))


def superusers_of(confs: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    """Pure: from each server's configuration (server -> properties), every `hbase.superuser` entry and the
    servers that list it (a server with another hbase-site lets other users through)."""
    out: dict[str, list[str]] = {}
    for server, props in sorted(confs.items()):
        for who in parse_superusers(props.get(SUPERUSER)):
            out.setdefault(who, []).append(server)
    return out


_MASKED = re.compile(r"^\s*(<[a-z ]+>|\*{3,})\s*$", re.IGNORECASE)


def superuser_unreadable(value: str | None) -> str | None:
    """Why a server's `hbase.superuser` as /conf shows it cannot be trusted (None: it can): absent (HBase 2.6's
    info servers leave out or mask what they consider sensitive, and an absent key cannot be told from a hidden
    one) or masked (`<masked>`, `<redacted>`, `******`)."""
    if value is None:
        return "absent"
    if _MASKED.match(value):
        return f"masked ({value.strip()})"
    return None


def resolve_superusers(confs: Mapping[str, Mapping[str, str]], attested: Sequence[str] | None
                       ) -> tuple[dict[str, list[str]], str | None]:
    """Pure: who passes every permission check, and from where: `hbase.superuser` of every server whose /conf shows
    it, plus `attested` (the run spec's `superusers`, the operator's word, None when not given) as "run spec".
    Fails closed: when any server's value is absent or masked and nothing is attested, the second item says why
    (the list is unknown, so an ACL fence cannot be shown to stop everyone)."""
    unreadable = {server: why for server, props in sorted(confs.items())
                  if (why := superuser_unreadable(props.get(SUPERUSER))) is not None}
    out = superusers_of({s: p for s, p in confs.items() if s not in unreadable})
    for who in parse_superusers(",".join(attested or ())):
        out.setdefault(who, []).append("run spec")
    if unreadable and attested is None:
        where = ", ".join(f"{s}: {w}" for s, w in list(unreadable.items())[:3])
        return out, (f"hbase.superuser is unreadable on {len(unreadable)} server(s) ({where}"
                     f"{', ...' if len(unreadable) > 3 else ''}), so who passes every permission check is unknown: "
                     "name every hbase.superuser entry (users and @groups) in the run spec's superusers (your "
                     "attestation, shown at approval), each also in freeze_exempt, or freeze with READONLY")
    return out, None


def runs_access_controller(props: Mapping[str, str]) -> bool:
    """Whether a server's configuration has HBase's AccessController checking permissions: authorization on and
    the coprocessor loaded on the regions (where a write is checked)."""
    enabled = props.get(AUTHORIZATION, "false").strip().lower() == "true"
    region = [c.strip() for c in props.get("hbase.coprocessor.region.classes", "").split(",")]
    return enabled and ACCESS_CONTROLLER in region


def read_server_confs(cluster: "Cluster", zk_client: Any = None) -> dict[str, dict[str, str]]:
    """The configuration of every live region server (where a write's permission is checked) and of the active
    master when its znode names its info port (name -> properties). Raises
    ConfUnreadable naming each server that did not answer: a fence's check must not pass on what it did not read."""
    from hbase_migration.clusters import channels, zk

    if zk_client is None:
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            return read_server_confs(cluster, client)
    out: dict[str, dict[str, str]] = {}
    errors = []
    address = master_info_address(zk_client, cluster.znode_parent)
    if address is not None:
        try:
            out[f"master {address[0]}:{address[1]}"] = fetch_conf(*address, cluster.timeout_s,
                                                                   session=channels.http(cluster))
        except ConfUnreadable as e:
            errors.append(str(e))
    servers = read_region_server_confs(cluster, zk_client)
    for server in servers:
        if server.properties is None:
            errors.append(f"{server.servername}: {server.error}")
        else:
            out[server.servername] = dict(server.properties)
    if errors or not servers:
        raise ConfUnreadable(f"/conf of {cluster.name} not read from every server: "
                             + ("; ".join(errors) or "no live region server"))
    return out
