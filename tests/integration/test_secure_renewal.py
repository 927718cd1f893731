"""A copy that runs longer than a Kerberos ticket lives: the KDC gives 20 s tickets, the copy (the CLI's, partitions
one after the other at a throttled rate) takes more than twice that, through SASL auth-conf gateways in two realms,
with the load throttle reading /jmx over SPNEGO every few seconds. The toolkit renews from its keytab; the copy
finishes and an independent client (tests/thrift_sasl_client.py, as each realm's hbase admin) finds every version
of every cell on the target."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import thriftpy2

from hbase_migration.clusters import kerberos
from tests.secure_fixtures import ticket_gaps
from tests.secure_thrift_clients import SaslClientTransport, thrift_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="renewal_hbase2_thrift")
LIFETIME_S = 20
SPLITS = [b"r0150", b"r0300", b"r0450"]


def client(cluster, creds):
    gateway = cluster.endpoints["thrift2"]
    transport = SaslClientTransport(gateway["host"], gateway["port"], creds,
                                    f"hbase/localhost@{cluster.security['realm']}",
                                    qop=cluster.security["thrift_qop"]).open()
    return transport, thrift_client(T2.THBaseService, transport)


def every_version(cluster, creds, table):
    transport, c = client(cluster, creds)
    try:
        sid = c.openScanner(table.encode(), T2.TScan(maxVersions=100, caching=500))
        cells = []
        while rows := c.getScannerRows(sid, 500):
            cells += [(r.row, v.family, v.qualifier, v.timestamp, v.value) for r in rows for v in r.columnValues]
        c.closeScanner(sid)
        return sorted(cells)
    finally:
        transport.close()


def test_a_copy_longer_than_a_ticket_renews_and_finishes_with_every_cell(
        secure_stack_factory, secure_cluster_factory, gss_credentials, tmp_path):
    stack = secure_stack_factory(ticket_lifetime_s=LIFETIME_S)
    kerberos.forget_krb5_conf()
    src = secure_cluster_factory("rsrc", "DC1.TEST", stack=stack, thrift_qop="auth-conf")
    dst = secure_cluster_factory("rdst", "DC2.TEST", stack=stack, thrift_qop="auth-conf")
    for cluster in (src, dst):
        cluster.create_table("renewal", {"d": {"max_versions": 3}}, split_keys=SPLITS)
    transport, c = client(src, gss_credentials("hbase@DC1.TEST", stack=stack))
    try:
        for start in range(0, 600, 150):
            c.putMultiple(b"renewal", [T2.TPut(row=b"r%04d" % i, columnValues=[
                T2.TColumnValue(family=b"d", qualifier=b"q", value=b"v%d-%d" % (i, ts), timestamp=ts)
                for ts in (1000, 2000, 3000)]) for i in range(start, start + 150)])
    finally:
        transport.close()

    env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5_CONFIG": str(stack.krb5_conf),
           "AIRFLOW_CONN_SRC": src.connection_json, "AIRFLOW_CONN_DST": dst.connection_json}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", "copy", "--source", "src", "--target", "dst",
                           "--table", "renewal", "--workers", "1", "--rows-per-s", "16", "--load-sample-s", "2",
                           "--max-load", "numCallsInGeneralQueue=1000", "--json"], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=600)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 600 and summary["failed_partitions"] == 0
    assert took > LIFETIME_S + 10  # well past the first ticket's end
    # The first ticket, then each renewed before it expired, the last still valid when the copy's last line was
    # logged. (Renewal is lazy, at the first use after 80% of the lifetime, so how many depends on the machine.)
    tickets, gaps = ticket_gaps(proc.stderr)
    assert len(tickets) >= 2, proc.stderr[-3000:]
    assert max(gaps) < LIFETIME_S, (gaps, proc.stderr[-3000:])
    assert "Ticket expired" not in proc.stderr

    source_cells = every_version(src, gss_credentials("hbase@DC1.TEST", stack=stack), "renewal")
    assert len(source_cells) == 1800
    assert every_version(dst, gss_credentials("hbase@DC2.TEST", stack=stack), "renewal") == source_cells
