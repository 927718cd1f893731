"""`data_path: auto`'s decision table (hbase_migration/data/datapath/auto.py), exactly: which path each connection
gets and the reason the log line and the summary carry."""
import dataclasses

import pytest

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.rpc_probe import ClusterProbe, ServerProbe
from hbase_migration.data import native_jobs
from hbase_migration.data.datapath.auto import blocker, decide, follow, thrift_path
from hbase_migration.data.native_jobs import refused


def cluster(name: str, data_path: str = "auto", thrift2: bool = True) -> Cluster:
    return Cluster(name=name, thrift_host=f"gw.{name}", zk_quorum=(f"zk.{name}",), data_path=data_path,
                   thrift2_servers=(f"gw.{name}:9091",) if thrift2 else ())


HBASE = ServerProbe("rs1:16020", True, "HBase RPC: WrongVersionException: ...")
HTTP = ServerProbe("rs1:16020", False, "answered b'<!DOCTYPE HTML>' (15 bytes): not an HBase RPC frame")


def both_answer() -> list[ClusterProbe]:
    return [ClusterProbe("dc1", (HBASE, HBASE)), ClusterProbe("dc2", (HBASE,))]


def test_every_region_server_of_both_answering_makes_auto_native():
    choice = decide(cluster("dc1"), cluster("dc2"), None, both_answer(), "worker w1")
    assert (choice.source_path, choice.target_path, choice.native) == ("native", "native", True)
    assert choice.reason == ("every region server of dc1 (2) and dc2 (1) answers as HBase RPC from worker w1, "
                             "and the native jars are built")
    assert choice.line(cluster("dc1"), cluster("dc2")) == \
        f"data_path auto: dc1 -> native, dc2 -> native: {choice.reason}"


def test_one_region_server_that_is_not_hbase_keeps_both_on_thrift_naming_it():
    probes = [ClusterProbe("dc1", (HBASE, HTTP)), ClusterProbe("dc2", (HBASE,))]
    choice = decide(cluster("dc1"), cluster("dc2", thrift2=False), None, probes, "worker w1")
    assert (choice.source_path, choice.target_path, choice.native) == ("thrift2", "thrift1", False)
    assert choice.reason == ("dc1: region server rs1:16020 answered b'<!DOCTYPE HTML>' (15 bytes): not an HBase RPC "
                             "frame (probed from worker w1: only the gateways are known to be reachable)")


def test_an_unlisted_cluster_or_one_without_region_servers_keeps_thrift():
    for probe in (ClusterProbe("dc2", error="ZooKeeperUnreachable: x"), ClusterProbe("dc2")):
        choice = decide(cluster("dc1"), cluster("dc2"), None, [ClusterProbe("dc1", (HBASE,)), probe])
        assert not choice.native and choice.reason.startswith(probe.reason())


@pytest.mark.parametrize("other", ["thrift1", "thrift2"])
def test_the_other_cluster_naming_a_thrift_path_keeps_auto_on_thrift_unprobed(other):
    source, target = cluster("dc1"), cluster("dc2", other)
    blocked = blocker(source, target, None, None)
    assert blocked == f"dc2's connection names data_path {other}, and native needs both clusters"
    choice = decide(source, target, blocked)
    assert (choice.source_path, choice.target_path) == ("thrift2", other)


def test_a_repair_and_missing_jars_keep_thrift_unprobed():
    assert blocker(cluster("dc1"), cluster("dc2"), refused(True), None) == refused(True)
    assert refused(True).startswith("repair is asked") and refused(False) is None
    assert blocker(cluster("dc1"), cluster("dc2"), None, "the native data path's jars are not built") == \
        "the native data path's jars are not built"
    assert blocker(cluster("dc1"), cluster("dc2", "native"), None, None) is None  # probed: native wants it too


def test_an_explicit_native_stays_native_and_nothing_auto_is_nothing_to_decide():
    choice = decide(cluster("dc1", "native"), cluster("dc2"), "repair is asked")
    assert (choice.source_path, choice.target_path) == ("native", "thrift2")  # uses_native then refuses the pair
    assert choice.line(cluster("dc1", "native"), cluster("dc2")) == "data_path auto: dc2 -> thrift2: repair is asked"
    assert decide(cluster("dc1", "thrift2"), cluster("dc2", "native"), None) is None


def test_thrift_is_thrift2_where_there_is_a_thrift2_gateway():
    assert thrift_path(cluster("dc1")) == "thrift2"
    assert thrift_path(cluster("dc1", thrift2=False)) == "thrift1"
    assert thrift_path(cluster("dc1", "thrift1")) == "thrift1"


def test_the_source_s_other_view_follows_the_source_s_resolved_path():
    remote = cluster("dc1-remote")
    assert follow(remote, cluster("dc1", "native")).data_path == "native"
    assert follow(remote, cluster("dc1", "thrift2")).data_path == "thrift2"
    assert follow(cluster("dc1-remote", thrift2=False), cluster("dc1", "thrift2")).data_path == "thrift1"
    assert follow(cluster("dc1-remote", "thrift1"), cluster("dc1", "native")).data_path == "thrift1"


def kerberized(tmp_path, name: str, krb5_text: str | None, krb5_name: str = "krb5.conf") -> Cluster:
    keytab = tmp_path / f"{name}.keytab"
    keytab.write_bytes(b"\x05\x02")
    security = {"principal": f"migration@{name.upper()}.TEST", "keytab": str(keytab)}
    if krb5_text is not None:
        (tmp_path / name).mkdir(exist_ok=True)
        krb5 = tmp_path / name / krb5_name
        krb5.write_text(krb5_text)
        security["krb5_conf"] = str(krb5)
    return Cluster(name=name, thrift_host=f"gw.{name}", zk_quorum=(f"zk.{name}",),
                   thrift2_servers=(f"gw.{name}:9091",), security=security)


BOTH_REALMS = "[realms]\n DC1.TEST = { kdc = 127.0.0.1:88 }\n DC2.TEST = { kdc = 127.0.0.1:88 }\n"


def test_kerberized_clusters_with_one_krb5_conf_are_probed_for_native(tmp_path):
    one = kerberized(tmp_path, "dc1", BOTH_REALMS)
    same_path = dataclasses.replace(kerberized(tmp_path, "dc2", None), security=one.security)
    assert blocker(one, same_path, None, None) is None
    same_text = kerberized(tmp_path, "dc2", BOTH_REALMS, "other-name.conf")  # another path, the same content
    assert blocker(one, same_text, None, None) is None
    assert blocker(one, cluster("dc2"), None, None) is None  # only one Kerberized: its krb5.conf is the JVM's
    choice = decide(one, same_text, None, both_answer(), "worker w1")
    assert (choice.source_path, choice.target_path, choice.native) == ("native", "native", True)


def test_kerberized_clusters_with_different_krb5_conf_files_keep_thrift_unprobed_saying_why(tmp_path):
    dc1 = kerberized(tmp_path, "dc1", BOTH_REALMS)
    dc2 = kerberized(tmp_path, "dc2", BOTH_REALMS.replace("127.0.0.1", "10.0.0.2"))
    blocked = blocker(dc1, dc2, None, None)
    assert blocked == (f"dc1's krb5.conf ({tmp_path}/dc1/krb5.conf) and dc2's ({tmp_path}/dc2/krb5.conf) differ, "
                       "and the native path logs in to both clusters in the same JVMs, which hold one krb5.conf "
                       "(java.security.krb5.conf)")
    choice = decide(dc1, dc2, blocked)
    assert (choice.source_path, choice.target_path, choice.native) == ("thrift2", "thrift2", False)
    assert choice.line(dc1, dc2) == f"data_path auto: dc1 -> thrift2, dc2 -> thrift2: {blocked}"
    # a connection without krb5_conf means Java's default file, which is not the other's
    assert native_jobs.krb5_conf(kerberized(tmp_path, "dc3", None)) == "/etc/krb5.conf"
    assert "differ" in blocker(dc1, kerberized(tmp_path, "dc3", None), None, None)
