"""realhbase's pure parts: the roles table for a topology, how a process is recognized as the bed's, the
`endpoints --json` schema built from facts, the security entries, and ZooKeeper's payloads."""
from __future__ import annotations

from pathlib import Path

import pytest

from realhbase import config, endpoints, probes, processes, roles
from realhbase.roles import Topology

WORKDIR = Path("/w/bed")


def test_the_default_topology_is_todays_bed_and_its_ports_are_configs():
    names = [r.name for r in roles.roles()]
    assert names == ["master", "rs0", "rs1", "gw0"]
    assert sorted(roles.port_names()) == sorted(config.PORT_NAMES)
    assert [r.heap for r in roles.roles()] == ["640m", "512m", "512m", "256m"]


def test_a_topology_adds_region_servers_and_gateways_each_with_ports_of_its_own():
    topology = Topology(region_servers=3, gateways=2)
    names = [r.name for r in roles.roles(topology)]
    assert names == ["master", "rs0", "rs1", "rs2", "gw0", "gw1"]
    ports = roles.port_names(topology)
    assert len(ports) == len(set(ports)) == 4 + 3 * 2 + 2 * 4
    assert roles.role("gw1", topology).ports == ("gw1_thrift", "gw1_thrift_info", "gw1_thrift2", "gw1_thrift2_info")
    with pytest.raises(ValueError, match="no role 'rs3'"):
        roles.role("rs3", topology)
    assert Topology.from_dict({"region_servers": 3, "gateways": 2, "unknown": 1}) == topology
    assert Topology.from_dict(None) == Topology()


def test_each_role_runs_its_main_with_its_ports():
    ports = {name: 20000 + i for i, name in enumerate(roles.port_names(Topology(gateways=2)))}
    main, args, props = roles.main_and_args(roles.role("rs1"), ports)
    assert main == roles.REGION_SERVER_MAIN
    assert args == [f"-Dhbase.regionserver.port={ports['rs1']}", f"-Dhbase.regionserver.info.port={ports['rs1_info']}",
                    "start"] and props == []
    main, args, _ = roles.main_and_args(roles.role("gw1", Topology(gateways=2)), ports)
    assert main == roles.LAUNCHER and args[0] == "thrift" and args.index("--") == 9
    assert args[1:7] == ["-b", "127.0.0.1", "-p", str(ports["gw1_thrift"]), "--infoport", str(ports["gw1_thrift_info"])]
    assert args[9:14] == ["--", "-b", "127.0.0.1", "-p", str(ports["gw1_thrift2"])]
    main, args, props = roles.main_and_args(roles.role("master"), ports)
    assert (main, args, props) == (roles.LAUNCHER, ["master"], [f"-Drealhbase.quota=/hbase:100000:{4 << 30}"])


def _probes(asked, live_datanodes=0):
    def http(url):
        asked.append(url)
        return True

    return roles.Probes(server_host="127.0.0.3", http_answers=http,
                        http_json=lambda url: {"beans": [{"NumLiveDataNodes": live_datanodes}]},
                        thrift_answers=lambda port, kind: asked.append((port, kind)) or True,
                        registered=lambda port: asked.append(port) or True)


def test_readiness_checks_in_order_each_naming_the_role_whose_log_an_error_shows():
    ports = {name: 30000 + i for i, name in enumerate(roles.port_names())}
    asked = []
    checks = [c for r in roles.roles() for c in roles.checks(r, ports, _probes(asked))]
    assert [(c.label, c.role) for c in checks] == [
        ("WebHDFS", "master"), ("master info server", "master"), ("rs0 info server", "rs0"),
        ("rs0 in ZooKeeper", "rs0"), ("rs1 info server", "rs1"), ("rs1 in ZooKeeper", "rs1"),
        ("Thrift1 (master initialized)", "gw0"), ("Thrift2", "gw0")]
    assert all(c.ready() for c in checks)
    assert asked[:2] == [f"http://127.0.0.1:{ports['namenode_http']}/webhdfs/v1/?op=GETFILESTATUS",
                         f"http://127.0.0.3:{ports['master_info']}/jmx?qry=x:y=z"]
    assert asked[-2:] == [(ports["gw0_thrift"], "thrift"), (ports["gw0_thrift2"], "thrift2")]


def test_hdfs_apart_for_backup_masters_and_datanodes_of_their_own():
    topology = Topology(region_servers=3, gateways=2, backup_masters=1, datanodes=2)
    assert topology.hdfs_apart and not Topology().hdfs_apart
    assert [r.name for r in roles.roles(topology)] == [
        "namenode", "dn0", "dn1", "master", "master1", "rs0", "rs1", "rs2", "gw0", "gw1"]
    assert Topology(backup_masters=1).hdfs_apart and [r.name for r in roles.roles(Topology(backup_masters=1))][:3] \
        == ["namenode", "dn0", "master"]  # one DataNode of its own
    ports = {name: 30000 + i for i, name in enumerate(roles.port_names(topology))}
    main, args, props = roles.main_and_args(roles.role("master1", topology), ports, Path("/w/dc1"))
    assert (main, args, props) == (roles.LAUNCHER, ["hmaster", f"-Dhbase.master.port={ports['master1']}",
                                                    f"-Dhbase.master.info.port={ports['master1_info']}"], [])
    assert roles.main_and_args(roles.role("dn1", topology), ports, Path("/w/dc1"))[1] == [
        "datanode", "/w/dc1/hdfs/data1"]
    assert roles.main_and_args(roles.role("namenode", topology), ports)[2][0].startswith("-Drealhbase.quota=")
    [dn1] = roles.checks(roles.role("dn1", topology), ports, _probes([], live_datanodes=1))
    assert dn1.label == "dn1 live in the NameNode" and not dn1.ready()
    assert roles.checks(roles.role("dn1", topology), ports, _probes([], live_datanodes=2))[0].ready()
    [info] = roles.checks(roles.role("master1", topology), ports, _probes([]))
    assert info.label == "master1 info server"


@pytest.mark.parametrize("bad, says", [
    (dict(region_servers=0), "--region-servers must be a whole number from 1 to 9"),
    (dict(gateways=True), "--gateways must be a whole number"),
    (dict(datanodes=5), "--datanodes must be a whole number from 0 to 4"),
    (dict(block_size=1000), "--block-size must be bytes, a multiple of 512"),
    (dict(wal_roll_size=4096), "--wal-roll-size must be bytes"),
    (dict(rs_heap_mb=128), "--rs-heap-mb must be MiB from 256"),
])
def test_a_bad_topology_is_refused_naming_the_option(bad, says):
    with pytest.raises(ValueError, match=says):
        Topology(**bad)


def test_a_region_servers_heap_comes_from_the_topology_and_the_rest_keep_their_kinds():
    topology = Topology(rs_heap_mb=1536)
    heaps = {r.name: r.heap for r in roles.roles(topology)}
    assert heaps == {"master": "640m", "rs0": "1536m", "rs1": "1536m", "gw0": "256m"}
    assert roles.jvm_command("java", [], Path("/w"), "dc1", Path("/w/dc1"), "rs0", heaps["rs0"], "Main", [])[1] \
        == "-Xmx1536m"
    assert {r.heap for r in roles.roles(Topology()) if r.kind == "rs"} == {"512m"}
    assert Topology.from_dict(topology.as_dict()) == topology  # a restarted role keeps it (cluster.json)


def test_sizes_and_datanodes_reach_the_site_files(tmp_path):
    ports = {name: 30000 + i for i, name in enumerate(roles.port_names())}
    hdfs = {k: v for k, v, _ in config.hdfs_site(tmp_path, ports, 4 << 20, datanodes=2)}
    assert (hdfs["dfs.blocksize"], hdfs["dfs.replication"]) == (str(4 << 20), "2")
    assert hdfs["dfs.client.block.write.replace-datanode-on-failure.policy"] == "NEVER"
    plain = {k: v for k, v, _ in config.hdfs_site(tmp_path, ports)}
    assert plain["dfs.replication"] == "1" and "dfs.client.block.write.replace-datanode-on-failure.policy" not in plain
    hbase = {k: v for k, v, _ in config.hbase_site("dc1", tmp_path, "127.0.0.1:2181", ports, wal_roll_size=1 << 20,
                                                   region_servers=3)}
    assert hbase["hbase.regionserver.hlog.blocksize"] == str(2 << 20)
    assert hbase["hbase.master.wait.on.regionservers.mintostart"] == "3"


def test_the_active_master_is_read_from_its_znode():
    server = b"\x0a\x09localhost\x10\xd2\x09\x18\x01"  # ServerName{host "localhost", port 1234, start code 1}
    data = b"\xff\x00\x00\x00\x02ab" + b"PBUF" + b"\x0a" + bytes([len(server)]) + server + b"\x10\x00"
    assert probes.master_port_of(data) == 1234
    assert probes.master_port_of(b"PBUF") is None and probes.master_port_of(b"") is None


def test_a_process_is_the_beds_by_its_markers_its_files_or_its_container_directory():
    containers = WORKDIR / "dc2" / "yarn" / "local"
    java = ["java", "-Xmx512m", *processes.markers(WORKDIR, "dc1", "rs0"), "-cp", "x", "Main"]
    assert processes.role_of(java, WORKDIR, containers, "dc2/container") == "dc1/rs0"
    client = ["java", *processes.markers(WORKDIR, "dc1", "client", client=True)]
    assert processes.role_of(client, WORKDIR, containers, "dc2/container") is None  # `down` leaves clients be
    other_bed = ["java", *processes.markers(Path("/w/other"), "dc1", "rs0")]
    assert processes.role_of(other_bed, WORKDIR, containers, "dc2/container") is None
    executor = ["python3", f"{containers}/usercache/x/appcache/app_1/container_1/pyspark.zip"]
    assert processes.role_of(executor, WORKDIR, containers, "dc2/container") == "dc2/container"
    zk = ["java", "-cp", "z", processes.ZOOKEEPER_MAIN, str(WORKDIR / "zookeeper" / "zoo.cfg")]
    assert processes.role_of(zk, WORKDIR, containers, "c") == "zookeeper"
    assert processes.role_of(zk, Path("/w/other"), containers, "c") is None
    kdc = ["/usr/sbin/krb5kdc", "-n", "-P", str(WORKDIR / "kdc" / "kdc.pid")]
    assert processes.role_of(kdc, WORKDIR, containers, "c") == "kdc"


def test_servernames_and_the_cluster_id_as_zookeeper_holds_them():
    names = ["localhost,20001,100", "localhost,20002,50", "localhost,20001,200"]
    assert probes.newest_on_port(names, 20001) == "localhost,20001,200"  # restarted on its port: the new one
    assert probes.newest_on_port(names, 20003) is None
    uuid = b"0d0f4e3c-2f7e-4d9b-b0a1-6f2b33c2a0aa"
    payload = b"PBUF\x0a" + bytes([len(uuid)]) + uuid
    header = b"\xff\x00\x00\x00\x0b" + b"1234@master"
    assert probes.cluster_id_of(header + payload) == uuid.decode()
    assert probes.cluster_id_of(b"plain-id") == "plain-id"


def _facts(**over):
    ports = {name: 40000 + i for i, name in enumerate(roles.port_names(Topology(gateways=2)))}
    facts = dict(
        name="dc1", host="127.0.0.1", server_host="127.0.0.1", parent="/hbase-dc1", zk_hosts="127.0.0.1:2181",
        ports=ports, versions={"hbase": "2.6.4-hadoop3"}, cluster_id="cid",
        masters=[{"slot": 0, "role": "master", "port": ports["master"], "info_port": ports["master_info"],
                  "alive": True, "pid": 10}],
        region_servers=[{"slot": 0, "servername": "localhost,40004,1", "port": ports["rs0"],
                         "info_port": ports["rs0_info"], "jvm_alive": True, "pid": 11},
                        {"slot": 1, "servername": None, "port": ports["rs1"], "info_port": ports["rs1_info"],
                         "jvm_alive": True, "pid": 12}],
        gateways=[{"index": i, "role": f"gw{i}", "alive": i == 0, "pid": 20 + i,
                   **{k: ports[f"gw{i}_{k}"] for k in ("thrift", "thrift_info", "thrift2", "thrift2_info")}}
                  for i in (0, 1)],
        datanodes=[{"slot": 0, "role": "master", "alive": True, "pid": 10}], rootdir="/hbase", workdir="/w",
        conf_dir="/w/dc1/conf", logs_dir="/w/dc1/logs", shell_command=["py", "-m", "realhbase", "shell"],
        webhdfs_user="me", hdfs_superuser="me", topology={"region_servers": 2, "gateways": 2})
    facts.update(over)
    return facts


def test_a_clusters_entry_has_every_key_of_the_schema():
    entry = endpoints.cluster_entry(**_facts())
    assert set(endpoints.CLUSTER_KEYS) == set(entry)
    extra = entry["connection"]["extra"]
    assert set(endpoints.EXTRA_KEYS) | {"thrift_servers"} == set(extra)  # two gateways: both listed
    ports = _facts()["ports"]
    assert extra["thrift2_servers"] == f"127.0.0.1:{ports['gw0_thrift2']},127.0.0.1:{ports['gw1_thrift2']}"
    assert entry["thrift"] == {"host": "127.0.0.1", "port": ports["gw0_thrift"]}
    assert [g["alive"] for g in entry["thrift2_gateways"]] == [True, False]
    assert entry["cluster_key"] == "127.0.0.1:2181:/hbase-dc1" and extra["zookeeper_port"] == 2181
    assert [(r["alive"], r["state"]) for r in entry["region_servers"]] == [(True, "online"), (False, "starting")]
    assert entry["master"] == {"host": "127.0.0.1", "port": ports["master"], "info_port": ports["master_info"],
                               "alive": True}
    assert "security" not in entry
    assert entry["connection_uri"].startswith(f"hbase://127.0.0.1:{ports['gw0_thrift']}/?__extra__=%7B")


def test_region_server_states():
    assert endpoints.region_server_state("h,1,2", True) == "online"
    assert endpoints.region_server_state(None, True) == "starting"
    assert endpoints.region_server_state("h,1,2", False) == "aborted"


SETTINGS = {"realm": "DC2.TEST", "krb5_conf": "/k/krb5.conf", "hbase_principal": "hbase/_HOST@DC2.TEST",
            "hbase_keytab": "/k/hbase.keytab", "spnego_principal": "HTTP/_HOST@DC2.TEST", "spnego_keytab": "/k/http",
            "zookeeper_principal": "zookeeper/_HOST@DC1.TEST", "superusers": ["hbase-migration"],
            "auth_to_local": "DEFAULT", "thrift_qop": None, "thrift_http": True, "thrift_ssl": True,
            "ssl_cert": "/t/c", "ssl_key": "/t/k", "ssl_ca": "/t/ca", "client_principal": "hbase-migration@DC1.TEST",
            "client_keytab": "/k/toolkit.keytab"}


def test_a_secured_clusters_security_entry_and_extras():
    assert endpoints.security_entry(SETTINGS) == {k: SETTINGS[k] for k in (
        "realm", "krb5_conf", "hbase_principal", "spnego_principal", "zookeeper_principal", "hbase_keytab",
        "spnego_keytab", "superusers", "auth_to_local", "thrift_qop", "thrift_http", "thrift_ssl", "ssl_ca")}
    assert endpoints.security_extras(SETTINGS) == {
        "krb5_conf": "/k/krb5.conf", "hbase_principal": "hbase/_HOST@DC2.TEST",
        "spnego_principal": "HTTP/_HOST@DC2.TEST", "zookeeper_principal": "zookeeper/_HOST@DC1.TEST",
        "principal": "hbase-migration@DC1.TEST", "keytab": "/k/toolkit.keytab", "thrift_http": True,
        "thrift_ssl": True, "ssl_ca": "/t/ca"}
    binary = {**SETTINGS, "thrift_http": False, "thrift_ssl": False, "thrift_qop": "auth-conf"}
    assert endpoints.security_extras(binary)["thrift_qop"] == "auth-conf"
    assert "thrift_http" not in endpoints.security_extras(binary)
    extras = endpoints.security_extras(binary)
    entry = endpoints.cluster_entry(**_facts(security_extras=extras, security=endpoints.security_entry(binary)))
    assert "webhdfs_user" not in entry["connection"]["extra"]  # Kerberized WebHDFS ignores user.name
    assert set(endpoints.SECURE_EXTRA_KEYS) <= set(entry["connection"]["extra"])
    assert entry["security"]["realm"] == "DC2.TEST"


def test_the_document_names_its_schema_version():
    assert endpoints.document({"dc1": {}}) == {"schema_version": endpoints.SCHEMA_VERSION, "clusters": {"dc1": {}}}
    assert set(endpoints.document({}, {"cluster": "dc2"}, {"realms": []})) == {
        "schema_version", "clusters", "yarn", "security"}
