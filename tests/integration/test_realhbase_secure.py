"""The toolkit's security against HBase itself: `python -m realhbase up --secure` (two real clusters, Kerberized
HDFS and HBase in the realms DC1.TEST and DC2.TEST of the project's MIT KDC, a SASL ZooKeeper, SPNEGO on the info
servers and WebHDFS, dc1's Thrift gateways on SASL auth-conf, dc2's in HTTP mode with SPNEGO over TLS), driven
through the toolkit's own clients (`hbase_migration.clusters.*`) as `hbase-migration@DC1.TEST`, the connections
built from `endpoints --json` exactly as from minihbase's secure mode. Each proof is paired with the same call
without credentials, refused by the real server: it is the toolkit's authentication that opens the channel.

The session's secured bed (`realhbase_secure`, tests/realhbase_fixtures.py: its own workdir, KDC and ZooKeeper,
stopped after its last test with nothing left running), which the secured migration DAG's test shares. `make test`
runs these (the refusals among them) once; the ticket renewal on real HBase is `make test-full`'s.
"""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

# What `python -m minihbase up --secure` + `endpoints --json` gives (bedkit/security/stack.py `describe`,
# server.py `describe` and `connection_extras`): realhbase's secure bed gives the same keys.
MINIHBASE_SECURITY = {"cross_realm_trust", "kdc", "keytabs", "krb5_conf", "principals", "realms",
                      "ticket_lifetime_s", "tls", "toolkit", "zookeeper"}
MINIHBASE_CLUSTER_SECURITY = {"auth_to_local", "hbase_keytab", "hbase_principal", "krb5_conf", "realm",
                              "spnego_keytab", "spnego_principal", "ssl_ca", "superusers", "thrift_http",
                              "thrift_qop", "thrift_ssl", "zookeeper_principal"}
MINIHBASE_EXTRA = {
    "dc1": {"zookeeper_quorum", "zookeeper_port", "znode_parent", "webhdfs_url", "rootdir", "peer_admin",
            "shell_command", "thrift2_servers", "krb5_conf", "hbase_principal", "spnego_principal",
            "zookeeper_principal", "principal", "keytab", "thrift_qop"},
    "dc2": {"zookeeper_quorum", "zookeeper_port", "znode_parent", "webhdfs_url", "rootdir", "peer_admin",
            "shell_command", "thrift2_servers", "krb5_conf", "hbase_principal", "spnego_principal",
            "zookeeper_principal", "principal", "keytab", "thrift_http", "thrift_ssl", "ssl_ca"},
}


@pytest.fixture(scope="module")
def secure_bed(realhbase_secure):
    return realhbase_secure


@pytest.fixture(scope="module")
def endpoints(secure_bed):
    proc = subprocess.run([sys.executable, "-m", "realhbase", "endpoints", "--json", "--workdir",
                           str(secure_bed.workdir)], capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def clusters(endpoints):
    from hbase_migration.clusters import kerberos
    from hbase_migration.data.jobargs import cluster_from_text

    kerberos.forget_krb5_conf()
    return {name: cluster_from_text(name, json.dumps(ep["connection"])) for name, ep in endpoints["clusters"].items()}


def _open_copy(cluster):
    return dataclasses.replace(cluster, security=None)


def _admin_thrift2(bed, name):
    """Thrift2 as the cluster's hbase service principal (realhbase's own client, not the toolkit's): setup only."""
    from realhbase import secure
    from realhbase.testbed import HOST, _thrift_modules

    port = bed.endpoints()[name]["thrift2"]["port"]  # the first gateway's (cluster.json names it gw0_thrift2)
    return secure.thrift_client(bed.workdir, name, HOST, port, "thrift2", _thrift_modules())


def _create_table(bed, name, table, scope=0):
    from realhbase.testbed import _thrift_modules

    _, T = _thrift_modules()
    with _admin_thrift2(bed, name) as admin:
        tname = T.TTableName(ns=b"default", qualifier=table.encode())
        if not admin.tableExists(tname):
            admin.createTable(T.TTableDescriptor(tableName=tname, columns=[
                T.TColumnFamilyDescriptor(name=b"cf", maxVersions=10, scope=scope)]), None)


# ------------------------------------------------------------------------------------------ the bed itself


def test_endpoints_have_minihbase_secure_modes_schema(secure_bed, endpoints):
    assert set(endpoints["security"]) == MINIHBASE_SECURITY
    sec = endpoints["security"]
    assert sec["realms"] == ["DC1.TEST", "DC2.TEST"] and sec["cross_realm_trust"] == "both ways"
    assert sec["toolkit"]["principal"] == "hbase-migration@DC1.TEST"
    assert Path(sec["toolkit"]["keytab"]).is_file() and Path(sec["krb5_conf"]).is_file()
    for name, ep in endpoints["clusters"].items():
        assert ep["backend"] == "realhbase"
        assert set(ep["security"]) == MINIHBASE_CLUSTER_SECURITY
        extra = ep["connection"]["extra"]
        assert set(extra) == MINIHBASE_EXTRA[name], set(extra) ^ MINIHBASE_EXTRA[name]
        assert extra["principal"] == "hbase-migration@DC1.TEST"
        assert extra["zookeeper_principal"] == "zookeeper/_HOST@DC1.TEST"
        assert extra["hbase_principal"] == f"hbase/_HOST@{ep['security']['realm']}"
    assert endpoints["clusters"]["dc1"]["connection"]["extra"]["thrift_qop"] == "auth-conf"
    dc2 = endpoints["clusters"]["dc2"]["connection"]["extra"]
    assert dc2["thrift_http"] is True and dc2["thrift_ssl"] is True and Path(dc2["ssl_ca"]).is_file()
    print(f"secure bed up in {secure_bed.up_seconds:.0f} s")


def test_the_servers_run_kerberized(secure_bed):
    """What the site files say, as the servers read them (each cluster's conf/)."""
    for name in ("dc1", "dc2"):
        conf = secure_bed.cluster_dir(name) / "conf"
        hbase_site, core_site = (conf / "hbase-site.xml").read_text(), (conf / "core-site.xml").read_text()
        for key, value in (("hbase.security.authentication", "kerberos"), ("hbase.security.authorization", "true"),
                           ("hbase.security.authentication.ui", "kerberos"),
                           ("hbase.superuser", "hbase,hbase-migration")):
            assert f"<name>{key}</name><value>{value}</value>" in hbase_site
        assert "<name>hadoop.security.authentication</name><value>kerberos</value>" in core_site
    assert "<name>hbase.thrift.security.qop</name><value>auth-conf</value>" in \
        (secure_bed.cluster_dir("dc1") / "conf" / "hbase-site.xml").read_text()
    assert "<name>hbase.thrift.ssl.enabled</name><value>true</value>" in \
        (secure_bed.cluster_dir("dc2") / "conf" / "hbase-site.xml").read_text()


# ------------------------------------------------------------------------------------------ Thrift


def test_thrift2_scan_over_sasl_auth_conf_as_the_toolkit(secure_bed, clusters):
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.clusters.thrift import ThriftSession
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    dc1 = clusters["dc1"]
    _create_table(secure_bed, "dc1", "sec_scan")
    T = hbase2()
    for gateway in (*dc1.thrift_servers, *dc1.thrift2_servers):
        handshake = channels.thrift_handshake(dc1, gateway, 15)
        assert (handshake.offered, handshake.qop) == (("auth-conf",), "auth-conf")
    with Thrift2Session(dc1) as session:
        session.call("putMultiple", b"sec_scan", [
            T.TPut(row=f"r{i}".encode(), columnValues=[
                T.TColumnValue(family=b"cf", qualifier=b"q", value=b"old", timestamp=1000),
                T.TColumnValue(family=b"cf", qualifier=b"q", value=f"v{i}".encode(), timestamp=2000)])
            for i in range(5)])
        scanner = session.call("openScanner", b"sec_scan", T.TScan(maxVersions=10))
        try:
            rows = session.call("getScannerRows", scanner, 100)
        finally:
            session.call("closeScanner", scanner)
    assert [r.row for r in rows] == [f"r{i}".encode() for i in range(5)]
    assert [(c.timestamp, c.value) for c in rows[3].columnValues] == [(2000, b"v3"), (1000, b"old")]
    with ThriftSession(dc1) as session:
        assert b"sec_scan" in session.call("getTableNames")


def test_thrift_http_mode_with_spnego_over_tls_across_the_trust(secure_bed, clusters):
    """dc2 (DC2.TEST) in HTTP mode over TLS: the toolkit (DC1.TEST) posts each call with a SPNEGO token for
    HTTP/localhost@DC2.TEST; the real gateway runs it as the toolkit (doAs through hadoop.proxyuser.hbase)."""
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.clusters.thrift import ThriftSession
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    dc2 = clusters["dc2"]
    _create_table(secure_bed, "dc2", "sec_http")
    T = hbase2()
    with Thrift2Session(dc2) as session:
        session.call("putMultiple", b"sec_http", [T.TPut(row=b"r1", columnValues=[
            T.TColumnValue(family=b"cf", qualifier=b"q", value=b"v1", timestamp=1000)])])
        result = session.call("get", b"sec_http", T.TGet(row=b"r1", maxVersions=10))
    assert [(c.timestamp, c.value) for c in result.columnValues] == [(1000, b"v1")]
    with ThriftSession(dc2) as session:
        assert b"sec_http" in session.call("getTableNames")


def test_unauthenticated_thrift_calls_are_refused(clusters):
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.clusters.kerberos import KerberosError
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    with pytest.raises(Exception):  # a plain binary client on the SASL gateway: the server closes the connection
        with Thrift2Session(_open_copy(clusters["dc1"]), timeout_s=10) as session:
            session.call("tableExists", hbase2().TTableName(qualifier=b"sec_scan"), retries=1)
    dc2 = clusters["dc2"]
    anonymous = dataclasses.replace(dc2, security=dataclasses.replace(
        dc2.security, principal=None, keytab=None, hbase_principal=None, spnego_principal=None,
        zookeeper_principal=None))
    with pytest.raises(KerberosError, match="401"):
        channels.thrift_call_probe(anonymous, dc2.thrift2_servers[0], "thrift2")


# ------------------------------------------------------------------------------------------ HTTP


def test_jmx_and_webhdfs_through_spnego(clusters):
    from hbase_migration.clusters import channels, zk
    from hbase_migration.migration.quota import webhdfs
    from hbase_migration.replication.metrics import JmxUnavailable, fetch_jmx

    for cluster in clusters.values():
        with zk.connect(cluster, timeout=15) as client:
            servers = zk.live_region_servers(client, cluster.znode_parent)
        assert len(servers) == 2
        jmx = fetch_jmx(servers[0].host, servers[0].info_port, session=channels.http(cluster))
        assert "beans" in jmx
        with pytest.raises(JmxUnavailable, match="401"):
            fetch_jmx(servers[0].host, servers[0].info_port, attempts=1)
        # the oldWALs summary the quota watchdog reads: through the HDFS ACL the README asks for (rootdir 700)
        summary = webhdfs(cluster).content_summary(f"{cluster.rootdir}/oldWALs")
        assert summary.directory_count >= 1
        with pytest.raises(Exception, match="401"):
            webhdfs(_open_copy(cluster)).content_summary(f"{cluster.rootdir}/oldWALs")


def test_anonymous_http_gets_401_negotiate(endpoints):
    for ep in endpoints["clusters"].values():
        for url in (f"http://{ep['master']['host']}:{ep['master']['info_port']}/jmx",
                    f"{ep['webhdfs_url']}/webhdfs/v1/?op=GETFILESTATUS"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(url, timeout=10)
            assert err.value.code == 401 and err.value.headers.get("WWW-Authenticate", "").startswith("Negotiate")


# ------------------------------------------------------------------------------------------ ZooKeeper, replication


def test_peer_across_the_realms_added_by_the_shell_and_read_through_sasl_zookeeper(secure_bed, clusters):
    """The toolkit adds the dc1 -> dc2 peer through the real shell (its own ticket cache; CONFIG names DC2's region
    server principal, HBASE-15294) and reads the peers znode through SASL ZooKeeper (secure HBase gives it no
    world access: an anonymous read is refused)."""
    from kazoo.exceptions import NoAuthError

    from hbase_migration.clusters import zk
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin, zk_peers

    dc1, dc2 = clusters["dc1"], clusters["dc2"]
    for name in ("dc1", "dc2"):
        _create_table(secure_bed, name, "sec_repl", scope=1)
    config = migration_peer_config(dc2, ["sec_repl"], source=dc1)
    assert config.configuration == {"hbase.regionserver.kerberos.principal": "hbase/_HOST@DC2.TEST"}
    with peer_admin(dc1) as admin:
        assert admin.backend == "shell"
        admin.add_peer("secrepl", config)
        admin.enable_peer("secrepl")
    with zk.connect(dc1, timeout=15) as client:
        peers = {p.id: p for p in zk_peers.read_peers(client, dc1.znode_parent)}
        assert peers["secrepl"].config.configuration["hbase.regionserver.kerberos.principal"] == \
            "hbase/_HOST@DC2.TEST"
        assert str(peers["secrepl"].config.cluster_key) == str(dc2.cluster_key)
        acls = client.get_acls(zk.join(dc1.znode_parent, "replication", "peers", "secrepl"))[0]
        assert ("sasl", "hbase") in {(a.id.scheme, a.id.id) for a in acls}
        assert not [a for a in acls if a.id.scheme == "world"]
    with zk.connect(_open_copy(dc1), timeout=15) as anonymous:
        with pytest.raises(NoAuthError):
            anonymous.get_children(zk.join(dc1.znode_parent, "replication", "peers", "secrepl"))


def test_the_peer_ships_across_the_realms(secure_bed, clusters):
    """A put on dc1 (DC1.TEST) reaches dc2 (DC2.TEST) through the peer the previous test added: dc1's region
    servers authenticate to dc2's as hbase/<host>@DC2.TEST across the trust, dc2 maps them to `hbase`."""
    from hbase_migration.clusters.idl import hbase2
    from hbase_migration.data.datapath.thrift2 import Thrift2Session

    dc1, dc2 = clusters["dc1"], clusters["dc2"]
    T = hbase2()
    with Thrift2Session(dc1) as session:
        session.call("putMultiple", b"sec_repl", [T.TPut(row=b"shipped", columnValues=[
            T.TColumnValue(family=b"cf", qualifier=b"q", value=b"across", timestamp=4242)])])
    deadline = time.monotonic() + 180
    with Thrift2Session(dc2) as session:
        while True:
            result = session.call("get", b"sec_repl", T.TGet(row=b"shipped", maxVersions=10))
            if result.columnValues:
                break
            assert time.monotonic() < deadline, "the put on dc1 did not reach dc2 in 180 s (cross-realm replication)"
            time.sleep(2)
    assert [(c.timestamp, c.value) for c in result.columnValues] == [(4242, b"across")]


def test_the_beds_own_tools_run_as_the_clusters_admin(secure_bed):
    """`realhbase shell` and DFSAdmin without a ticket cache of the caller's: as `hbase@<realm>` from a cache the
    bed fills with kinit (a superuser of HBase and of HDFS)."""
    import os

    assert not os.environ.get("KRB5CCNAME")
    proc = secure_bed.shell("dc1", "list_peers\nwhoami\n")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "secrepl" in proc.stdout and "hbase@DC1.TEST" in proc.stdout
    secure_bed.set_quota("dc2", "/hbase", namespace=100000)  # the bed's own value: DFSAdmin authenticated


# ------------------------------------------------------------------------------ preflight (issue 29, part 2)


def _preflight(endpoints, env_extra: dict | None = None, **source_extra) -> tuple[int, str]:
    import os

    source = json.loads(json.dumps(endpoints["clusters"]["dc1"]["connection"]))
    source["extra"].update(source_extra)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5_CONFIG": endpoints["security"]["krb5_conf"],
           "AIRFLOW_CONN_SRC": json.dumps(source),
           "AIRFLOW_CONN_DST": json.dumps(endpoints["clusters"]["dc2"]["connection"]), **(env_extra or {})}
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", "preflight", "--source", "src", "--target", "dst",
                           "--tables", "pf_secure", "--peer-id", "pfsec", "--sample-gap-s", "0",
                           "--bulk-loads", "none"], env=env,
                          capture_output=True, text=True, cwd=str(REPO), timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def _line(output: str, check: str) -> str:
    return next(t for t in output.splitlines() if f"] {check}:" in t)


def _nothing_changed(clusters) -> None:
    from hbase_migration.clusters import zk
    from hbase_migration.migration.tables import existing_tables
    from hbase_migration.replication import zk_peers

    with zk.connect(clusters["dc1"], timeout=15) as client:
        assert "pfsec" not in {p.id for p in zk_peers.read_peers(client, clusters["dc1"].znode_parent)}
    assert existing_tables(clusters["dc2"], ["pf_secure"]) == set()


def test_the_security_preflight_passes_on_the_real_clusters(secure_bed, endpoints, clusters):
    """Every endpoint of both clusters accepts the toolkit (ZooKeeper, both gateways, each region server's /jmx,
    WebHDFS), the QOP agrees, the clocks agree; the oldWALs guard reads the rootdir's and its ancestors' quotas
    (the toolkit is in HDFS's superuser group: those reads need the whole subtree)."""
    _create_table(secure_bed, "dc1", "pf_secure", scope=1)
    rc, out = _preflight(endpoints)
    assert rc == 0, out
    assert "[ok  ] source_authentication: src: accepted by all 6 endpoint(s)" in out
    assert "[ok  ] target_authentication: dst: accepted by all 6 endpoint(s)" in out
    assert "[ok  ] source_thrift_qop: src: every gateway agreed on QOP auth-conf" in out
    assert _line(out, "oldwals_headroom").startswith("[ok  ]")
    assert "preflight passed" in out
    _nothing_changed(clusters)


def test_a_qop_mismatch_and_a_wrong_keytab_are_refused_by_preflight(secure_bed, endpoints, clusters):
    _create_table(secure_bed, "dc1", "pf_secure", scope=1)
    rc, out = _preflight(endpoints, thrift_qop="auth-int")
    assert rc == 1, out
    failed = _line(out, "source_thrift_qop")
    ep = endpoints["clusters"]["dc1"]
    assert failed.startswith("[FAIL]") and (
        f"thrift1 gateway 127.0.0.1:{ep['thrift']['port']}, thrift2 gateway 127.0.0.1:{ep['thrift2']['port']} offer "
        "SASL QOP auth-conf, the connection's thrift_qop is auth-int") in failed
    intruder = endpoints["security"]["keytabs"]["intruder@DC1.TEST"]
    rc, out = _preflight(endpoints, keytab=intruder)
    assert rc == 1, out
    failed = _line(out, "source_kerberos_login")
    assert failed.startswith("[FAIL]")
    assert f"keytab {intruder} does not hold hbase-migration@DC1.TEST (it holds: intruder@DC1.TEST)" in failed
    _nothing_changed(clusters)


def _kdc(bed):
    """The secure bed's running KDC, for kadmin.local (its databases under the workdir)."""
    from realhbase import secure

    return secure.stack(bed.workdir).kdc


def test_a_missing_cross_realm_trust_is_refused_by_preflight(secure_bed, endpoints, clusters):
    """krbtgt/DC2.TEST@DC1.TEST deleted from DC1's database for the run: the toolkit (DC1.TEST) gets its tickets
    for dc1 but none for dc2's principals; preflight names the target's endpoints, the missing krbtgt and the fix,
    and changes nothing. The trust is put back with its first keys (dc1's replication to dc2 needs it)."""
    _create_table(secure_bed, "dc1", "pf_secure", scope=1)
    kdc = _kdc(secure_bed)
    kdc.kadmin("DC1.TEST", "delprinc -force krbtgt/DC2.TEST@DC1.TEST")
    try:
        assert not kdc.has_principal("krbtgt/DC2.TEST@DC1.TEST", realm="DC1.TEST")
        rc, out = _preflight(endpoints)
    finally:
        kdc.restore_trusts()
    assert kdc.has_principal("krbtgt/DC2.TEST@DC1.TEST", realm="DC1.TEST")
    assert rc == 1, out
    assert _line(out, "source_authentication").startswith("[ok  ]")
    failed = _line(out, "target_authentication")
    assert failed.startswith("[FAIL]") and "no cross-realm trust from DC1.TEST to DC2.TEST" in failed, out
    thrift2 = endpoints["clusters"]["dc2"]["thrift2"]
    assert f"thrift2 127.0.0.1:{thrift2['port']}" in failed
    lines = out.splitlines()
    fix = lines[lines.index(failed) + 1].strip()
    assert fix.startswith("fix:") and "krbtgt/DC2.TEST@DC1.TEST" in fix, out
    _nothing_changed(clusters)


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.mark.skipif(not Path(FAKETIME_LIB).exists(), reason="needs Debian's faketime package")
def test_a_toolkit_host_clock_six_minutes_ahead_is_refused_by_preflight_as_skew(secure_bed, endpoints, clusters):
    """The toolkit's host (the Airflow worker) six minutes ahead of the KDC and the clusters (libfaketime on the
    preflight process and the shells it starts; Kerberos allows 300 s): every server's HTTP Date is measured 360 s
    behind, and preflight refuses with the endpoints, by how much, and the fix, changing nothing. Whatever the
    clusters refused besides (the shells' Java Kerberos stamps its authenticators with the skewed clock) is
    reported on the skewed hosts, not as a keytab or trust problem."""
    _create_table(secure_bed, "dc1", "pf_secure", scope=1)
    rc, out = _preflight(endpoints, env_extra={"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "+6m",
                                               "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
    assert rc == 1, out
    failed = _line(out, "clock_skew")
    assert failed.startswith("[FAIL]"), out
    assert re.search(r"its clock is 3(59|60|61)s behind this host's", failed), failed
    assert "src " in failed and "dst " in failed, failed  # both clusters' servers measured, each named
    lines = out.splitlines()
    fix = lines[lines.index(failed) + 1].strip()
    assert fix.startswith("fix:") and "synchronize the clocks" in fix, out
    assert not _line(out, "source_kerberos_login").startswith("[FAIL]")  # the keytab is not what is wrong
    _nothing_changed(clusters)


def _every_version(bed, name, table) -> list[tuple]:
    """Every version of every cell, read as the cluster's hbase principal (not the toolkit)."""
    from realhbase.testbed import _thrift_modules

    _, T = _thrift_modules()
    out = []
    with _admin_thrift2(bed, name) as admin:
        scanner = admin.openScanner(table.encode(), T.TScan(maxVersions=100))
        try:
            while True:
                rows = admin.getScannerRows(scanner, 500)
                if not rows:
                    break
                out += [(r.row, c.family, c.qualifier, c.timestamp, c.value) for r in rows for c in r.columnValues]
        finally:
            admin.closeScanner(scanner)
    return out


def _on_thrift2(connection: dict) -> dict:
    return {**connection, "extra": {**connection["extra"], "data_path": "thrift2"}}


@pytest.mark.full  # make test renews tickets on minihbase's secured pair (tests/integration/test_secure_renewal.py)
def test_a_copy_longer_than_the_toolkits_ticket_renews_and_finishes_with_every_cell(secure_bed, endpoints):
    """The toolkit's principal given 20 s tickets (`modprinc -maxlife`, the servers' own unchanged): the CLI's copy,
    throttled to take more than twice that, reads dc1's SASL auth-conf gateway and writes dc2's SPNEGO gateway
    (a token per HTTP call) across the trust, and samples /jmx through SPNEGO. It renews from its keytab; every
    version of every cell is on the target, read back as dc2's hbase principal."""
    import os

    from realhbase.testbed import _thrift_modules
    from tests.secure_fixtures import ticket_gaps

    lifetime = 20
    _, T = _thrift_modules()
    table = "sec_renewal"
    splits = [b"r0150", b"r0300", b"r0450"]
    for name in ("dc1", "dc2"):
        with _admin_thrift2(secure_bed, name) as admin:
            admin.createTable(T.TTableDescriptor(
                tableName=T.TTableName(ns=b"default", qualifier=table.encode()),
                columns=[T.TColumnFamilyDescriptor(name=b"d", maxVersions=3)]), splits)
    with _admin_thrift2(secure_bed, "dc1") as admin:
        for start in range(0, 600, 150):
            admin.putMultiple(table.encode(), [T.TPut(row=b"r%04d" % i, columnValues=[
                T.TColumnValue(family=b"d", qualifier=b"q", value=b"v%d-%d" % (i, ts), timestamp=ts)
                for ts in (1000, 2000, 3000)]) for i in range(start, start + 150)])
    principal = endpoints["security"]["toolkit"]["principal"]
    kdc = _kdc(secure_bed)
    kdc.kadmin("DC1.TEST", f"modprinc -maxlife \"{lifetime} seconds\" {principal}")
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5_CONFIG": endpoints["security"]["krb5_conf"],
               # pinned to the gateways this test is about (`auto` would now pick native on real HBase)
               **{f"AIRFLOW_CONN_{cid}": json.dumps(_on_thrift2(endpoints["clusters"][dc]["connection"]))
                  for cid, dc in (("SRC", "dc1"), ("DST", "dc2"))}}
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "hbase_migration", "copy", "--source", "src", "--target",
                               "dst", "--table", table, "--workers", "1", "--rows-per-s", "16", "--load-sample-s",
                               "2", "--max-load", "numCallsInGeneralQueue=1000", "--json"], env=env,
                              capture_output=True, text=True, cwd=str(REPO), timeout=600)
        took = time.monotonic() - started
    finally:
        kdc.kadmin("DC1.TEST", f"modprinc -maxlife \"1 day\" {principal}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 600 and summary["failed_partitions"] == 0
    assert took > lifetime + 10  # well past the first ticket's end
    tickets, gaps = ticket_gaps(proc.stderr)
    assert len(tickets) >= 2, proc.stderr[-3000:]
    assert max(gaps) < lifetime, (gaps, proc.stderr[-3000:])
    assert "Ticket expired" not in proc.stderr
    source = _every_version(secure_bed, "dc1", table)
    assert len(source) == 1800
    assert _every_version(secure_bed, "dc2", table) == source
