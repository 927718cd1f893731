"""The native data path's pure parts: what the JVM side is told (client properties, task specs), how its answers
become the Python paths' results, and the refusals before anything is read."""
from __future__ import annotations

import pytest

from hbase_migration.clusters.cluster import Cluster, ClusterConfigError
from hbase_migration.data import native_jobs
from hbase_migration.data.copy import CopyOptions, summarize
from hbase_migration.data.datapath import native
from hbase_migration.data.scope import CopyConfigError
from hbase_migration.data.verify import VerifyOptions, summarize_verify


def cluster(name: str = "dc1", data_path: str = "native", **extra) -> Cluster:
    return Cluster(name=name, thrift_host="gw", zk_quorum=("zk1", "zk2:2182"), zk_port=2181,
                   znode_parent=f"/hbase-{name}", data_path=data_path, **extra)


def test_a_native_cluster_is_named_so_and_its_python_reads_keep_their_thrift_path():
    c = cluster(thrift2_servers=("gw:9091",))
    assert c.uses_native and c.uses_thrift2 and c.describe()["data_path"] == "native"
    assert not cluster(data_path="auto").uses_native
    assert not cluster(data_path="native").uses_thrift2  # no Thrift2 gateway: its small reads go through Thrift1


def test_client_properties_of_an_open_cluster():
    assert native.client_properties(cluster(), timeout_s=30) == {
        "hbase.zookeeper.quorum": "zk1:2181,zk2:2182",
        "hbase.zookeeper.property.clientPort": "2181",
        "zookeeper.znode.parent": "/hbase-dc1",
        "hbase.rpc.timeout": "30000",
        "hbase.client.scanner.timeout.period": "60000",
    }


def test_a_bind_address_names_the_bound_rpc_client_and_the_address_and_a_bad_one_is_refused():
    props = native.client_properties(cluster(client_bind_address="127.41.0.2"), timeout_s=30)
    assert {k: v for k, v in props.items() if "rpc.client" in k} == {
        "hbase.rpc.client.impl": "local.hbasemigration.jvm.BoundRpcClient",
        "hbase-migration.rpc.client.bind.address": "127.41.0.2",
    }
    assert "hbase.rpc.client.impl" not in native.client_properties(cluster())
    with pytest.raises(ClusterConfigError, match=r"cluster 'dc1': client_bind_address must be an IP address of "
                                                 r"this host, got 'eth1'"):
        cluster(client_bind_address="eth1")


def test_client_properties_of_a_kerberized_cluster_log_in_from_the_keytab(tmp_path):
    keytab = tmp_path / "toolkit.keytab"
    keytab.write_bytes(b"\x05\x02")
    c = cluster(security={"principal": "hbase-migration@DC1.TEST", "keytab": str(keytab),
                          "hbase_principal": "hbase/_HOST@DC1.TEST", "thrift_qop": "auth-conf",
                          "zookeeper_principal": "zookeeper/_HOST@DC1.TEST"})
    props = native.client_properties(c)
    assert "hbase-migration.krb5.conf" not in props  # none named: the JVM's own (Java's default)
    assert {k: props[k] for k in props if "zookeeper.quorum" not in k and "timeout" not in k
            and k not in ("zookeeper.znode.parent", "hbase.zookeeper.property.clientPort")} == {
        "hadoop.security.authentication": "kerberos",
        "hbase.security.authentication": "kerberos",
        "hbase.client.keytab.principal": "hbase-migration@DC1.TEST",
        "hbase.client.keytab.file": str(keytab),
        "hbase.master.kerberos.principal": "hbase/_HOST@DC1.TEST",
        "hbase.regionserver.kerberos.principal": "hbase/_HOST@DC1.TEST",
        "hbase.rpc.protection": "privacy,integrity,authentication",  # the server's choice, not thrift_qop's
        "zookeeper.sasl.client": "true",
        "zookeeper.sasl.client.username": "zookeeper",
    }


def test_a_kerberized_cluster_s_krb5_conf_is_handed_to_the_jvm_for_its_login(tmp_path):
    keytab, krb5 = tmp_path / "toolkit.keytab", tmp_path / "krb5.conf"
    keytab.write_bytes(b"\x05\x02")
    krb5.write_text("[realms]\n DC1.TEST = { kdc = 127.0.0.1:88 }\n")
    c = cluster(security={"principal": "hbase-migration@DC1.TEST", "keytab": str(keytab), "krb5_conf": str(krb5)})
    # jvm/ Connections sets it as java.security.krb5.conf before the keytab login (found where Spark shipped it)
    assert native.client_properties(c)["hbase-migration.krb5.conf"] == str(krb5)
    assert "hbase-migration.krb5.conf" not in native.client_properties(cluster(security={"krb5_conf": str(krb5)}))


def test_native_named_on_kerberized_clusters_with_different_krb5_conf_files_is_refused(tmp_path):
    def secured(name: str, realms: str) -> Cluster:
        (tmp_path / name).mkdir()
        keytab, krb5 = tmp_path / name / "toolkit.keytab", tmp_path / name / "krb5.conf"
        keytab.write_bytes(b"\x05\x02")
        krb5.write_text(realms)
        return cluster(name, security={"principal": f"hbase-migration@{name.upper()}.TEST", "keytab": str(keytab),
                                       "krb5_conf": str(krb5)})

    dc1, dc2 = secured("dc1", "[realms]\n DC1.TEST = {}\n"), secured("dc2", "[realms]\n DC2.TEST = {}\n")
    with pytest.raises(CopyConfigError) as refused:
        native_jobs.uses_native(dc1, dc2, VerifyOptions(table="t"))
    assert str(refused.value) == (
        f"data_path native: dc1's krb5.conf ({tmp_path}/dc1/krb5.conf) and dc2's ({tmp_path}/dc2/krb5.conf) differ, "
        "and the native path logs in to both clusters in the same JVMs, which hold one krb5.conf "
        "(java.security.krb5.conf) — name one krb5.conf listing both realms on both connections (krb5_conf), or a "
        "Thrift path on both")
    assert "\n" not in str(refused.value)
    (tmp_path / "dc2" / "krb5.conf").write_text("[realms]\n DC1.TEST = {}\n")  # the same content: one JVM serves
    assert native_jobs.uses_native(dc1, dc2, VerifyOptions(table="t"))
    (tmp_path / "dc2" / "krb5.conf").write_text("[realms]\n DC2.TEST = {}\n")  # on Thrift: no JVM to share
    assert not native_jobs.uses_native(cluster("dc1", "thrift1", security=dc1.security),
                                       cluster("dc2", "thrift1", security=dc2.security))


def test_the_copy_spec_carries_the_window_the_renames_the_families_rules_and_the_throttle():
    options = CopyOptions(table="t", target_table="t2", families="d,k:k2", start_time_ms=5, end_time_ms=9,
                          versions=2, rows_per_s=100.0, load_url="http://driver:1/load")
    spec = native.copy_spec(cluster("dc1"), cluster("dc2"), options,
                            {b"d": {"versions": 3, "keep_deleted_cells": False}, b"k": 1}, "uuid-1")
    assert spec["families"] == [["d", "d"], ["k", "k2"]]
    assert (spec["table"], spec["target_table"], spec["start_ms"], spec["end_ms"], spec["versions"]) == \
        ("t", "t2", 5, 9, 2)
    assert spec["source_families"] == {"d": {"versions": 3, "keep_deleted_cells": False},
                                       "k": {"versions": 1, "keep_deleted_cells": False}}
    assert spec["source_cluster_id"] == "uuid-1"
    assert (spec["rows_per_s"], spec["load_url"]) == (100.0, "http://driver:1/load")
    assert spec["source"]["properties"]["zookeeper.znode.parent"] == "/hbase-dc1"
    assert spec["target"]["properties"]["zookeeper.znode.parent"] == "/hbase-dc2"
    assert native.copy_spec(cluster("dc1"), cluster("dc2"), CopyOptions(table="t"), {}, None)["versions"] == 0


def test_the_verify_spec_carries_both_sides_rules_and_the_recompare():
    options = VerifyOptions(table="t", recompare_sleep_s=2.0, max_diff_rows=7, sample_limit=3)
    spec = native.verify_spec(cluster("dc1"), cluster("dc2"), options, {b"d": 3}, {b"d": 2}, per_family=True)
    assert spec["source_families"] == {"d": {"versions": 3, "keep_deleted_cells": False}}
    assert spec["target_families"] == {"d": {"versions": 2, "keep_deleted_cells": False}}
    assert (spec["level"], spec["recompare_sleep_s"], spec["recompare_rounds"], spec["max_diff_rows"],
            spec["sample_limit"], spec["per_family"]) == ("content", 2.0, 3, 7, 3, True)


def test_a_native_and_a_thrift_cluster_are_refused_together_and_so_is_a_repair():
    with pytest.raises(CopyConfigError, match="'dc1' is native and 'dc2' is thrift1 .* set data_path native on"):
        native_jobs.uses_native(cluster("dc1"), cluster("dc2", data_path="thrift1"))
    with pytest.raises(CopyConfigError, match="repair: the native data path compares delete markers"):
        native_jobs.uses_native(cluster("dc1"), cluster("dc2"), VerifyOptions(table="t", repair=True))
    assert native_jobs.uses_native(cluster("dc1"), cluster("dc2"), VerifyOptions(table="t"))
    assert not native_jobs.uses_native(cluster("dc1", "thrift1"), cluster("dc2", "thrift1"))


def test_copy_results_of_the_jvm_are_the_python_paths_results():
    d = {"partition_id": "p0", "index": 0, "table": "t", "start_row": "", "stop_row": "6d", "status": "copied",
         "rows": 3, "cells": 7, "delete_markers": 2, "bytes": 99, "scanned_rows": 4, "write_calls": 5,
         "retries": 0, "throttled_s": 0.5, "elapsed_s": 1.25}
    failed = {"partition_id": "p1", "index": 1, "table": "t", "start_row": "6d", "stop_row": "", "status": "failed",
              "error": "RetriesExhaustedException: boom", "elapsed_s": 3.0}
    results = [native_jobs.result_of(d), native_jobs.result_of(failed)]
    assert results[0].stop_row == b"m" and results[0].delete_markers == 2
    summary = summarize(results, skipped=0, elapsed_s=2.0)
    assert (summary["rows"], summary["cells"], summary["delete_markers"], summary["failed_partitions"]) == (3, 7, 2, 1)
    assert summary["failures"][0]["error"] == "RetriesExhaustedException: boom"


def test_verify_verdicts_of_the_jvm_name_differing_markers_with_their_type():
    d = {"partition_id": "p0", "index": 0, "start_row": "", "stop_row": "", "status": "verified",
         "counts": {"matching": 4, "content_different": 1, "only_in_source": 0, "only_in_target": 0},
         "source_rows": 5, "target_rows": 5, "source_cells": 12, "target_cells": 11,
         "differing": [["6131", "content_different"]],
         "versions": [["6131", "643a71", 5, "marker_missing_on_target", "DeleteColumn"],
                      ["6131", "643a71", 4, "only_on_target", None]],
         "truncated": False, "recompared": 1, "recompare_changed": 0, "wide_rows": 0, "elapsed_s": 0.5}
    verdict = native_jobs.verdict_of(d)
    result = summarize_verify([verdict], VerifyOptions(table="t"), 1.0)
    assert result["identical"] is False and result["content_different"] == 1
    assert result["differing_rows_sample"]["content_different"] == ["a1"]
    assert result["differing_versions_sample"] == [
        {"row": "a1", "column": "d:q", "timestamp": 5, "kind": "marker_missing_on_target", "type": "DeleteColumn"},
        {"row": "a1", "column": "d:q", "timestamp": 4, "kind": "only_on_target"}]


def test_the_jars_come_from_the_environment_or_this_checkouts_build(tmp_path, monkeypatch):
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv(native.CLASSPATH_ENV, f"{jar}")
    assert native.classpath() == [str(jar)]
    monkeypatch.setenv(native.CLASSPATH_ENV, f"{jar}:{tmp_path / 'gone.jar'}")
    with pytest.raises(native.NativeUnavailable, match="gone.jar and 0 more"):
        native.classpath()
    monkeypatch.delenv(native.CLASSPATH_ENV)
    monkeypatch.setenv(native.VERSION_ENV, "0.0.0-nowhere")
    with pytest.raises(native.NativeUnavailable, match="not built for HBase 0.0.0-nowhere .*make jvm"):
        native.classpath()
