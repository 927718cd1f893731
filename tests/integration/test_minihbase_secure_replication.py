"""Replication dc1 (DC1.TEST) -> dc2 (DC2.TEST) authenticating as real HBase's does: dc1's region servers
present their own `hbase/localhost@DC1.TEST` ticket for the sink principal named by the peer's CONFIG
`hbase.regionserver.kerberos.principal` (HBASE-15294); dc2 maps the DC1 principal to `hbase` (auth_to_local).
Without that CONFIG, or without the cross-realm trust, shipping fails and keeps failing visibly (failedBatches,
the WALs kept, the edits waiting) and nothing is lost."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import gssapi
import pytest
import requests
import thriftpy2
from requests_gssapi import REQUIRED, HTTPSPNEGOAuth

from bedkit.security import zk as secure_zk
from bedkit.security.stack import TOOLKIT
from minihbase.replication.storage import PeerStorage
from tests.polling import wait_for
from tests.secure_thrift_clients import HttpSpnegoTransport, SaslClientTransport, thrift_client

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="secure_repl_hbase2_thrift")
SINK_KEY = "hbase.regionserver.kerberos.principal"
BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Replication"


def _shell(cluster, text: str, env: dict) -> None:
    argv = [sys.executable, "-m", "minihbase", "shell", "-n", "--cluster", cluster.name, "--workdir",
            str(cluster.workdir)]
    proc = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tables(dc1, dc2) -> str:
    table = f"xr_{uuid.uuid4().hex[:6]}"
    dc1.create_table(table, {"cf": {"replication_scope": 1}})
    dc2.create_table(table, {"cf": {}})
    return table


def _add_peer(dc1, dc2, peer: str, table: str, env: dict, sink_principal: str | None) -> None:
    config = f", CONFIG => {{'{SINK_KEY}' => '{sink_principal}'}}" if sink_principal else ""
    _shell(dc1, f"add_peer '{peer}', CLUSTER_KEY => '{dc2.cluster_key}', TABLE_CFS => {{'{table}' => []}}"
                f"{config}\n", env)


def _put_through_sasl_thrift2(dc1, creds, table: str, row: bytes, ts: int) -> None:
    gateway = dc1.endpoints["thrift2"]
    transport = SaslClientTransport(gateway["host"], gateway["port"], creds, "hbase/localhost@DC1.TEST",
                                    qop=dc1.security["thrift_qop"]).open()
    try:
        thrift_client(T2.THBaseService, transport).put(table.encode(), T2.TPut(row=row, columnValues=[
            T2.TColumnValue(family=b"cf", qualifier=b"q", value=b"across realms", timestamp=ts)]))
    finally:
        transport.close()


def _get_through_https_thrift2(dc2, creds, table: str, row: bytes) -> list[tuple[bytes, int]]:
    transport = HttpSpnegoTransport(f"https://localhost:{dc2.endpoints['thrift2']['port']}/", creds,
                                    "HTTP/localhost@DC2.TEST", ca=dc2.security["ssl_ca"])
    result = thrift_client(T2.THBaseService, transport).get(table.encode(), T2.TGet(row=row))
    return [(c.value, c.timestamp) for c in result.columnValues or []]


def _sources(cluster, creds, peer: str) -> list[dict]:
    """The per-queue replication metrics of `peer` on every live region server of `cluster` (/jmx, SPNEGO)."""
    out = []
    target = gssapi.Name(f"HTTP/localhost@{cluster.security['realm']}", gssapi.NameType.kerberos_principal)
    auth = HTTPSPNEGOAuth(creds=creds, target_name=target, mutual_authentication=REQUIRED, opportunistic_auth=True)
    for rs in cluster.region_servers:
        if rs["alive"]:
            beans = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx?qry={BEAN}", auth=auth,
                                 timeout=10).json()["beans"]
            prefix = f"source.{peer}."
            values = {k[len(prefix):]: v for k, v in beans[0].items() if k.startswith(prefix)}
            if values:
                out.append({"servername": rs["servername"], **values})
    return out


def _total(sources: list[dict], key: str) -> int:
    return sum(s.get(key, 0) for s in sources)


def test_a_put_through_the_secured_thrift2_gateway_replicates_across_realms_with_its_timestamp(
        secure_pair, kinit, gss_credentials):
    dc1, dc2 = secure_pair
    table = _tables(dc1, dc2)
    peer = f"ok{uuid.uuid4().hex[:4]}"
    _add_peer(dc1, dc2, peer, table, kinit(TOOLKIT), "hbase/_HOST@DC2.TEST")
    creds = gss_credentials(TOOLKIT)
    _put_through_sasl_thrift2(dc1, creds, table, b"row-1", 1_600_000_000_123)
    assert wait_for(lambda: _get_through_https_thrift2(dc2, creds, table, b"row-1"), timeout=30,
                    what="the edit on dc2") == [(b"across realms", 1_600_000_000_123)]
    sources = _sources(dc1, creds, peer)
    assert _total(sources, "shippedOps") >= 1 and _total(sources, "failedBatches") == 0
    _shell(dc1, f"remove_peer '{peer}'\n", kinit(TOOLKIT))


def test_without_the_peers_sink_principal_shipping_fails_visibly_and_loses_nothing(
        secure_pair, kinit, gss_credentials, secure_stack):
    dc1, dc2 = secure_pair
    table = _tables(dc1, dc2)
    peer = f"np{uuid.uuid4().hex[:4]}"
    _add_peer(dc1, dc2, peer, table, kinit(TOOLKIT), sink_principal=None)
    creds = gss_credentials(TOOLKIT)
    _put_through_sasl_thrift2(dc1, creds, table, b"row-1", 1_600_000_000_456)
    wait_for(lambda: _total(_sources(dc1, creds, peer), "failedBatches") >= 3, timeout=30,
             what="failed batches of the peer without the sink principal")
    first = _sources(dc1, creds, peer)
    assert _total(first, "shippedOps") == 0
    assert _get_through_https_thrift2(dc2, creds, table, b"row-1") == []
    # The WALs stay queued (and on disk) while the batch waits.
    zk = secure_zk.secure_client(secure_stack.zookeeper.hosts, 10, dc1.znode_parent, [],
                                 secure_stack.zookeeper_principal, TOOLKIT, secure_stack.keytab_path(TOOLKIT))
    zk.start()
    try:
        queued = {sn: zk.get_children(f"{dc1.znode_parent}/replication/rs/{sn}/{peer}")
                  for sn in zk.get_children(f"{dc1.znode_parent}/replication/rs")}
    finally:
        zk.stop()
        zk.close()
    assert any(queued.values())
    dc1.roll_wals()
    dc1.run_log_cleaner()
    for sn, wals in queued.items():
        for wal in wals:
            assert (dc1.local_rootdir / "WALs" / sn / wal).exists() or (dc1.local_rootdir / "oldWALs" / wal).exists()
    wait_for(lambda: _total(_sources(dc1, creds, peer), "failedBatches") > _total(first, "failedBatches"),
             timeout=30, what="failures to go on")
    log = (dc1.workdir / "dc1" / "cluster.log").read_text()
    assert f"the peer's CONFIG has no {SINK_KEY}" in log
    assert "Cannot decrypt ticket for hbase/localhost@DC1.TEST using keytab key for hbase/localhost@DC2.TEST" in log
    # An operator sets the peer's sink principal (update_peer_config): the waiting edit ships, timestamp kept.
    zk = secure_zk.secure_client(secure_stack.zookeeper.hosts, 10, dc1.znode_parent, [],
                                 secure_stack.zookeeper_principal, TOOLKIT, secure_stack.keytab_path(TOOLKIT))
    zk.start()
    try:
        storage = PeerStorage(zk, dc1.znode_parent)
        config = storage.require(peer).config
        config.configuration = {**config.configuration, SINK_KEY: "hbase/_HOST@DC2.TEST"}
        storage.update(peer, config)
    finally:
        zk.stop()
        zk.close()
    assert wait_for(lambda: _get_through_https_thrift2(dc2, creds, table, b"row-1"), timeout=30,
                    what="the waiting edit on dc2") == [(b"across realms", 1_600_000_000_456)]
    after = _sources(dc1, creds, peer)
    assert _total(after, "shippedOps") >= 1
    assert max(s["ageOfLastShippedOp"] for s in after) > 0  # the shipped edit had waited
    _shell(dc1, f"remove_peer '{peer}'\n", kinit(TOOLKIT))


def test_without_the_cross_realm_trust_shipping_fails_visibly(secure_stack_factory, secure_cluster_factory,
                                                               gss_credentials, kinit):
    stack = secure_stack_factory(cross_realm=False)
    dc1 = secure_cluster_factory("dc1", "DC1.TEST", stack=stack, thrift_qop="auth-conf")
    dc2 = secure_cluster_factory("dc2", "DC2.TEST", stack=stack, thrift_http=True, thrift_ssl=True)
    table = _tables(dc1, dc2)
    _add_peer(dc1, dc2, "nt", table, kinit(TOOLKIT, stack=stack), "hbase/_HOST@DC2.TEST")
    creds = gss_credentials(TOOLKIT, stack=stack)
    _put_through_sasl_thrift2(dc1, creds, table, b"row-1", 1_600_000_000_789)
    wait_for(lambda: _total(_sources(dc1, creds, "nt"), "failedBatches") >= 3, timeout=30,
             what="failed batches without the trust")
    assert _total(_sources(dc1, creds, "nt"), "shippedOps") == 0
    assert dc2._control("/control/data/get", {"table": table, "row_hex": b"row-1".hex()})["cells"] == []
    log = (dc1.workdir / "dc1" / "cluster.log").read_text()
    assert "cannot get a ticket for hbase/localhost@DC2.TEST" in log
    assert "krbtgt/DC2.TEST@DC1.TEST" in log  # what the KDC lacks
