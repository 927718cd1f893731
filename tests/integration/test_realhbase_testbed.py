"""The real HBase test bed itself (realhbase): both clusters up in realhbase's endpoints schema (which holds every
key minihbase's gives, so the demo and tests take either); the real shell,
Thrift1 and Thrift2, the info servers' /jmx and /conf, WebHDFS, a replication peer dc1 -> dc2 that ships a put,
a region server JVM killed and started again, HDFS quotas, WAL rolls, and the CLI's bad input.

Uses the session's `realhbase` fixture (tests/realhbase_fixtures.py). Each test works in its own tables and puts
back what it breaks.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from realhbase import endpoints as schema
from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[2]
# The keys `python -m minihbase endpoints --json` gives every cluster that realhbase gives too (control_url and
# the gateways' fault settings are minihbase's alone).
MINIHBASE_KEYS = {"name", "thrift", "thrift2", "thrift_gateways", "thrift2_gateways", "zookeeper", "cluster_key",
                  "cluster_id", "master", "region_servers", "webhdfs_url", "rootdir", "workdir", "shell_command",
                  "connection", "connection_uri"}
EXTRA_KEYS = {"zookeeper_quorum", "zookeeper_port", "znode_parent", "webhdfs_url", "rootdir", "peer_admin",
              "shell_command", "thrift2_servers", "webhdfs_user"}


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "realhbase", *args], capture_output=True, text=True,
                          cwd=str(REPO), timeout=timeout)


def _http_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _shell_ok(bed, cluster: str, script: str) -> str:
    proc = bed.shell(cluster, script)
    assert proc.returncode == 0, f"hbase shell on {cluster} failed ({proc.returncode}):\n{proc.stdout[-3000:]}"
    return proc.stdout


def _thrift(kind: str, endpoint: dict):
    import thriftpy2
    from thriftpy2.rpc import make_client

    if kind == "thrift":
        module = thriftpy2.load(str(REPO / "bedkit" / "Hbase.thrift"), module_name="test_rh_Hbase_thrift")
        service, address = module.Hbase, endpoint["thrift"]
    else:
        module = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="test_rh_hbase2_thrift")
        service, address = module.THBaseService, endpoint["thrift2"]
    return module, make_client(service, address["host"], address["port"], timeout=30000)


def _table() -> str:
    return "rh_" + uuid.uuid4().hex[:8]


def test_both_clusters_up_with_minihbases_endpoints_schema(realhbase):
    endpoints = realhbase.endpoints()
    assert set(endpoints) == {"dc1", "dc2"}
    for name, ep in endpoints.items():
        assert MINIHBASE_KEYS <= set(ep), MINIHBASE_KEYS - set(ep)
        assert set(ep) == set(schema.CLUSTER_KEYS), set(ep) ^ set(schema.CLUSTER_KEYS)
        assert ep["backend"] == "realhbase" and ep["hbase_version"] == "2.6.4-hadoop3"
        assert ep["name"] == name and ep["rootdir"] == "/hbase"
        assert ep["zookeeper"]["znode_parent"] == f"/hbase-{name}"
        assert ep["cluster_key"] == f"{ep['zookeeper']['quorum']}:{ep['zookeeper']['port']}:/hbase-{name}"
        assert len(ep["cluster_id"]) == 36, ep["cluster_id"]  # the UUID in <parent>/hbaseid
        rs = ep["region_servers"]
        assert [r["slot"] for r in rs] == [0, 1] and all(r["alive"] and r["state"] == "online" for r in rs)
        assert len({r["pid"] for r in rs}) == 2  # each region server is its own JVM
        assert all(r["servername"].split(",")[1] == str(r["port"]) for r in rs)
        assert set(ep["connection"]["extra"]) == EXTRA_KEYS
        assert ep["connection"]["extra"]["shell_command"].split()[-6:] == [
            "shell", "-n", "--cluster", name, "--workdir", str(realhbase.workdir)]
        assert ep["shell_command"][1:4] == ["-m", "realhbase", "shell"]
    assert endpoints["dc1"]["cluster_id"] != endpoints["dc2"]["cluster_id"]
    proc = _cli("endpoints", "--json", "--workdir", str(realhbase.workdir))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"schema_version": schema.SCHEMA_VERSION, "clusters": endpoints}
    status = _cli("status", "--workdir", str(realhbase.workdir))
    assert status.returncode == 0 and "dc1: up" in status.stdout and "dc2: up" in status.stdout, status.stdout


def test_real_shell_creates_a_replicated_table_puts_and_scans(realhbase):
    table = _table()
    out = _shell_ok(realhbase, "dc1", f"create '{table}', {{NAME => 'cf', REPLICATION_SCOPE => 1}}\n"
                                      f"put '{table}', 'r1', 'cf:q', 'v1'\n"
                                      f"scan '{table}'\n"
                                      f"describe '{table}'\n")
    assert f"Created table {table}" in out
    assert "column=cf:q" in out and "value=v1" in out and "1 row(s)" in out
    assert "REPLICATION_SCOPE => '1'" in out
    failed = realhbase.shell("dc1", f"put 'no_such_table_{table}', 'r', 'cf:q', 'v'\nlist\n")
    assert failed.returncode != 0  # `hbase shell -n` stops at the first error
    said = failed.stdout + failed.stderr
    assert f"Unknown table no_such_table_{table}!" in said or "TableNotFoundException" in said, said[-2000:]
    # Each client JVM is on record: kind, seconds, exit status, its first statement.
    runs = [line.split("\t") for line in (realhbase.workdir / "clients.log").read_text().splitlines()]
    [ok] = [r for r in runs if r[4] == f"create '{table}', {{NAME => 'cf', REPLICATION_SCOPE => 1}}"]
    [refused] = [r for r in runs if r[4] == f"put 'no_such_table_{table}', 'r', 'cf:q', 'v'"]
    assert ok[1] == refused[1] == "shell" and ok[3] == "0" and refused[3] != "0" and float(ok[2]) > 0


def test_thrift1_and_thrift2_answer(realhbase):
    ep = realhbase.endpoints()["dc2"]
    table = _table()
    _shell_ok(realhbase, "dc2", f"create '{table}', 'cf'\n")
    hbase1, client1 = _thrift("thrift", ep)
    try:
        assert table.encode() in client1.getTableNames()
        client1.mutateRow(table.encode(), b"row-1", [hbase1.Mutation(column=b"cf:a", value=b"one")], {})
        [row] = client1.getRow(table.encode(), b"row-1", {})
        assert row.columns[b"cf:a"].value == b"one"
    finally:
        client1.close()
    hbase2, client2 = _thrift("thrift2", ep)
    try:
        client2.put(table.encode(), hbase2.TPut(row=b"row-2", columnValues=[
            hbase2.TColumnValue(family=b"cf", qualifier=b"b", value=b"two")]))
        result = client2.get(table.encode(), hbase2.TGet(row=b"row-1"))
        assert [(c.family, c.qualifier, c.value) for c in result.columnValues] == [(b"cf", b"a", b"one")]
        assert client2.get(table.encode(), hbase2.TGet(row=b"row-2")).columnValues[0].value == b"two"
    finally:
        client2.close()


def test_info_servers_jmx_and_conf(realhbase):
    ep = realhbase.endpoints()["dc1"]
    for rs in ep["region_servers"]:
        beans = _http_json(f"http://{rs['host']}:{rs['info_port']}/jmx"
                           "?qry=Hadoop:service=HBase,name=RegionServer,sub=Replication")["beans"]
        assert [b["name"] for b in beans] == ["Hadoop:service=HBase,name=RegionServer,sub=Replication"]
        assert "source.sizeOfLogQueue" in beans[0] and "sink.appliedOps" in beans[0]
    master = ep["master"]
    beans = _http_json(f"http://{master['host']}:{master['info_port']}/jmx"
                       "?qry=Hadoop:service=HBase,name=Master,sub=Server")["beans"]
    assert beans[0]["tag.clusterId"] == ep["cluster_id"]
    with urllib.request.urlopen(f"http://{master['host']}:{master['info_port']}/conf", timeout=10) as resp:
        conf = resp.read().decode()
    assert "<name>zookeeper.znode.parent</name><value>/hbase-dc1</value>" in conf.replace("\n", "")


def test_webhdfs_content_summary_and_quota(realhbase):
    ep = realhbase.endpoints()["dc2"]
    root = f"{ep['webhdfs_url']}/webhdfs/v1{ep['rootdir']}"
    # HDFS checks permissions: anonymous WebHDFS calls are `dr.who`, and HBase makes /hbase/staging 711, so a
    # summary of the whole rootdir needs a user (the HDFS superuser: whoever runs the daemons)
    for op in ("GETCONTENTSUMMARY", "GETQUOTAUSAGE"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _http_json(f"{root}?op={op}")
        assert refused.value.code == 403 and "/hbase/staging" in refused.value.read().decode()
    assert _http_json(f"{root}/oldWALs?op=GETCONTENTSUMMARY")["ContentSummary"]["spaceQuota"] == -1
    assert ep["connection"]["extra"]["webhdfs_user"] == ep["hdfs_superuser"]
    user = f"user.name={ep['hdfs_superuser']}"
    assert _http_json(f"{root}?op=GETQUOTAUSAGE&{user}")["QuotaUsage"]["spaceQuota"] == 4 << 30  # set at format
    as_superuser = f"{root}?op=GETCONTENTSUMMARY&{user}"
    summary = _http_json(as_superuser)["ContentSummary"]
    assert summary["directoryCount"] >= 10 and summary["spaceQuota"] == 4 << 30
    proc = _cli("quota", "dc2", "/hbase", "--space-bytes", str(3 << 30), "--workdir", str(realhbase.workdir))
    assert proc.returncode == 0, proc.stderr
    try:
        assert _http_json(as_superuser)["ContentSummary"]["spaceQuota"] == 3 << 30
    finally:
        realhbase.set_quota("dc2", "/hbase", space_bytes=4 << 30)


@pytest.mark.full  # make test: peers ship on real HBase in the migration, cut-over and conformance tests (which
# compare `status 'replication'` too); this one polls the shell, a JVM a second, until the master shows the peer
def test_replication_peer_ships_a_put_to_dc2(realhbase):
    eps = realhbase.endpoints()
    table = _table()
    create = f"create '{table}', {{NAME => 'cf', REPLICATION_SCOPE => 1}}\n"
    _shell_ok(realhbase, "dc2", create)
    peer = "7"
    out = _shell_ok(realhbase, "dc1", create
                    + f"add_peer '{peer}', CLUSTER_KEY => '{eps['dc2']['cluster_key']}', "
                      f"TABLE_CFS => {{'{table}' => ['cf']}}\n"
                    + f"put '{table}', 'shipped', 'cf:q', 'v'\nlist_peers\n")
    try:
        assert f" {peer} {eps['dc2']['cluster_key']}  ENABLED false  default.{table}:cf 0 false" in out, out
        hbase2, client = _thrift("thrift2", eps["dc2"])
        try:
            wait_for(lambda: client.get(table.encode(), hbase2.TGet(row=b"shipped")).columnValues, timeout=120,
                     what="the put on dc1 to be readable on dc2")
        finally:
            client.close()
        # The master's view of replication is what each region server last reported (every
        # hbase.regionserver.msginterval, 3 s): a peer added a moment ago may not be in it yet.
        status = wait_for(lambda: (lambda out: out if f"SOURCE: PeerID={peer}" in out else None)(
            _shell_ok(realhbase, "dc1", "status 'replication'\n")), timeout=180, interval=1,
            what=f"status 'replication' to show peer {peer}")
        assert f"Normal Queue: {peer}" in status, status
        rolled = _cli("roll-wals", "dc1", "--workdir", str(realhbase.workdir))
        assert rolled.returncode == 0, rolled.stderr
        assert len(json.loads(rolled.stdout)["rolled"]) == 2
    finally:
        _shell_ok(realhbase, "dc1", f"remove_peer '{peer}'\n")


@pytest.mark.full  # the CLI verbs; make test kills and starts a region server in test_toolkit_realhbase.py (the API)
def test_kill_rs_and_start_rs(realhbase):
    workdir = str(realhbase.workdir)
    table = _table()
    _shell_ok(realhbase, "dc2", f"create '{table}', 'cf', SPLITS => ['m']\n"
                                f"put '{table}', 'a', 'cf:q', 'left'\nput '{table}', 'z', 'cf:q', 'right'\n")
    before = realhbase.endpoints()["dc2"]["region_servers"][1]
    killed = _cli("kill-rs", "dc2", "1", "--workdir", workdir)
    assert killed.returncode == 0, killed.stderr
    assert json.loads(killed.stdout) == {"killed": before["servername"]}
    after = realhbase.endpoints()["dc2"]["region_servers"][1]
    assert not after["alive"] and after["state"] == "aborted" and after["pid"] is None
    assert _cli("status", "--workdir", workdir).returncode == 1
    started = _cli("start-rs", "dc2", "1", "--workdir", workdir)
    assert started.returncode == 0, started.stderr
    servername = json.loads(started.stdout)["started"]
    assert servername != before["servername"] and servername.split(",")[:2] == before["servername"].split(",")[:2]
    assert realhbase.endpoints()["dc2"]["region_servers"][1]["alive"]
    # every region is served again, those the killed JVM held included
    hbase2, client = _thrift("thrift2", realhbase.endpoints()["dc2"])
    try:
        def both_rows():
            return all(client.get(table.encode(), hbase2.TGet(row=row)).columnValues for row in (b"a", b"z"))
        wait_for(both_rows, timeout=120, what="both regions served after the crash", ignore=(Exception,))
    finally:
        client.close()


@pytest.mark.parametrize("args", [["kill-rs", "dc9", "0"], ["start-rs", "dc1", "5"],
                                  ["shell", "-n", "--cluster", "dc9"], ["endpoints", "--cluster", "dc9"]])
def test_cli_bad_input_is_one_line_exit_2(realhbase, args):
    proc = _cli(*args, "--workdir", str(realhbase.workdir), timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "dc9" in proc.stderr or "out of range" in proc.stderr


def test_up_on_a_zookeeper_that_does_not_answer_fails_cleanly(tmp_path):
    from bedkit.zookeeper import free_port

    workdir = tmp_path / "bed"
    proc = _cli("up", "--zookeeper", f"127.0.0.1:{free_port()}", "--workdir", str(workdir), timeout=600)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("realhbase: ZooKeeper 127.0.0.1:"), proc.stderr
    from realhbase.testbed import processes

    assert processes(workdir) == {}
    assert _cli("down", "--workdir", str(workdir)).returncode == 0
