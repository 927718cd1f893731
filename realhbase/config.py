"""What each realhbase cluster runs with: its ports, its `conf/` directory (hbase-site.xml, core-site.xml,
hdfs-site.xml, log4j2 and metrics2 properties) and each JVM's command line.

Every setting that differs from HBase's or Hadoop's default says why next to it (and in the XML it writes).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from xml.sax.saxutils import escape

from bedkit.ports import ephemeral_range, listening_port, port_free  # noqa: F401 (realhbase.config's names too)

HOST = "127.0.0.1"
CLUSTERS = {"dc1": "/hbase-dc1", "dc2": "/hbase-dc2"}  # name -> zookeeper.znode.parent
REGION_SERVERS = 2
ROOTDIR = "/hbase"
# Set on /hbase when a cluster's HDFS is first formatted, as the stand-in's clusters do: (namespace, bytes).
ROOT_QUOTA = (100000, 4 << 30)
# Explicit heaps: 2 cores and 8 JVMs; the master JVM also holds the NameNode and the DataNode.
HEAP = {"master": "640m", "rs": "512m", "thrift": "256m", "shell": "512m", "tool": "256m"}

# bin/hbase's flags on JDK 11+ (HBase 2.6): without one of them a netty or HDFS call fails with
# InaccessibleObjectException.
JDK17_FLAGS = [
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules", "jdk.unsupported",
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports", "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports", "java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports", "java.base/sun.net.util=ALL-UNNAMED",
]
# Every JVM: a small footprint and a quick start on a 2-core machine (a test bed, not a benchmark).
# The JVM's own warnings (class data sharing's, say) go to stderr, not into a shell's output.
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Djava.net.preferIPv4Stack=true",
             "-Xlog:disable", "-Xlog:all=warning:stderr"]

# The default topology's ports (realhbase/roles.py names each role's; tests/unit checks they are the same).
PORT_NAMES = (["namenode", "namenode_http", "master", "master_info"]
              + [p for i in range(REGION_SERVERS) for p in (f"rs{i}", f"rs{i}_info")]
              + ["gw0_thrift", "gw0_thrift_info", "gw0_thrift2", "gw0_thrift2_info"])


def plan_ports(saved: dict[str, int], names: list[str] = PORT_NAMES, planned: set[int] | None = None) -> dict[str, int]:
    """The cluster's ports (or YARN's, `names`): the ones of its last start when still free (stable addresses
    across restarts), free ones below the ephemeral range otherwise (`listening_port`). `planned`: ports already
    given to another cluster of the same start, whose JVMs have not bound them yet (port_free cannot see them:
    dc1's NameNode and dc2's Thrift2 info server once got the same port); the new ones are added to it."""
    planned = set() if planned is None else planned
    ports: dict[str, int] = {}
    for name in names:
        port = saved.get(name)
        if not port or port in ports.values() or port in planned or not port_free(port):
            port = listening_port(planned | set(ports.values()))
        ports[name] = port
    planned.update(ports.values())
    return ports


def split_zk_hosts(hosts: str) -> tuple[str, int]:
    """"127.0.0.1:2181" -> ("127.0.0.1", 2181): HBase's quorum and client port (one port for every host)."""
    pairs = [h.strip().rpartition(":") for h in hosts.split(",")]
    if any(not host or not port.isdigit() for host, _, port in pairs) or "/" in hosts:
        raise ValueError(f"zookeeper must be HOST:PORT[,HOST:PORT...] without a chroot, got {hosts!r}")
    if len({port for _, _, port in pairs}) != 1:
        raise ValueError(f"every ZooKeeper host must use the same port (HBase's clientPort), got {hosts!r}")
    return ",".join(host for host, _, _ in pairs), int(pairs[0][2])


def hbase_site(name: str, cluster_dir: Path, zk_hosts: str, ports: dict[str, int],
               server_host: str = HOST, region_servers: int = REGION_SERVERS,
               wal_roll_size: int | None = None) -> list[tuple[str, str, str]]:
    """`server_host`: the address the master and region servers listen on (RPC and info servers); 127.0.0.1
    unless the secured bed gives dc2's another (realhbase/secure.py)."""
    quorum, zk_port = split_zk_hosts(zk_hosts)
    return [
        ("hbase.cluster.distributed", "true", "every daemon in its own process, the rootdir on HDFS"),
        ("hbase.rootdir", f"hdfs://{HOST}:{ports['namenode']}{ROOTDIR}", "this cluster's own HDFS"),
        ("hbase.tmp.dir", str(cluster_dir / "tmp"), "local scratch inside the workdir"),
        ("hbase.zookeeper.quorum", quorum, "the shared ZooKeeper (Debian's), as TestReplicationBase shares one"),
        ("hbase.zookeeper.property.clientPort", str(zk_port), ""),
        ("zookeeper.znode.parent", CLUSTERS[name], "one znode parent per cluster on the shared ZooKeeper"),
        ("zookeeper.session.timeout", "20000",
         "a SIGKILLed region server is declared dead after 20 s (HBase: 90 s); long enough for a 2-core machine"),
        ("hbase.master.ipc.address", server_host, "loopback only"),
        ("hbase.regionserver.ipc.address", server_host, "loopback only"),
        ("hbase.master.port", str(ports["master"]), "a free port chosen at up"),
        ("hbase.master.info.port", str(ports["master_info"]), "the master's info server: /jmx, /conf"),
        ("hbase.master.info.bindAddress", server_host, "loopback only"),
        ("hbase.master.infoserver.redirect", "false", "no extra redirect port"),
        ("hbase.regionserver.info.bindAddress", server_host,
         "loopback only; each region server's rpc and info port are given on its command line"),
        ("hbase.master.wait.on.regionservers.mintostart", str(region_servers),
         "assign hbase:meta only once every region server has checked in"),
        ("hbase.master.wait.on.regionservers.maxtostart", str(region_servers),
         "and not wait the 4.5 s timeout once they all have"),
        ("hbase.replication", "true", "production's default: replication on, REPLICATION_SCOPE honoured"),
        ("replication.source.sleepforretries", "100",
         "TestReplicationBase: a source retries after 100 ms (HBase: 1 s)"),
        ("replication.source.maxretriesmultiplier", "10",
         "TestReplicationBase: the retry back-off stops at 1 s (HBase: 300 x sleepforretries)"),
        ("replication.source.ratio", "1.0", "TestReplicationBase: ship to every sink region server"),
        ("replication.sleep.before.failover", "2000",
         "TestReplicationBase: a dead server's queues are claimed after 2 s (HBase: 30 s)"),
        ("replication.stats.thread.period.seconds", "5",
         "TestReplicationBase: replication statistics logged every 5 s (HBase: 300 s)"),
        ("hbase.master.logcleaner.ttl", "10000",
         "oldWALs no peer needs go after 10 s (HBase: 10 min; TestReplicationBase: 10 ms)"),
        ("hbase.master.cleaner.interval", "10000", "the log cleaner chore runs every 10 s (HBase: 10 min)"),
        ("hbase.server.thread.wakefrequency", "1000", "chores and waits poll every second (HBase: 10 s)"),
        ("hbase.regionserver.msginterval", "1000",
         "region servers report load (status 'replication') every second (HBase: 3 s)"),
        ("hbase.regionserver.metrics.period", "2000",
         "region server gauges recomputed every 2 s (HBase: 5 s), with *.period=2 in the metrics2 files"),
        ("hbase.hregion.memstore.flush.size", str(4 << 20),
         "memstores flush at 4 MiB (HBase: 128 MiB), as the stand-in: flushes and HFiles happen in tests"),
        ("hbase.hstore.time.to.purge.deletes", "86400000",
         "delete markers survive major compactions for a day (HBase: purged at the next one), as the toolkit's "
         "preflight asks of a migration's source (docs/data-path.md): a marker purged on the source but not on "
         "the target lets a later put with an older timestamp show on one side only"),
        ("hbase.region.replica.replication.enabled", "true",
         "region replicas' edits replicate (HBase's own region_replica_replication peer, added when a table "
         "with REGION_REPLICATION > 1 is created; nothing changes for other tables)"),
        ("hbase.regionserver.optionalcacheflushinterval", "300000",
         "an idle memstore flushes after 5 min (HBase: 1 h), as the stand-in"),
        ("hbase.hregion.max.filesize", str(8 << 20),
         "regions split past 8 MiB (HBase: 10 GiB), as the stand-in: demo tables spread over both region servers"),
        ("hbase.regionserver.logroll.period", "60000", "WALs roll every 60 s (HBase: 1 h), as the stand-in"),
        ("hbase.regionserver.maxlogs", "10",
         "TestReplicationBase: past 10 WALs the oldest regions are flushed (HBase: 32)"),
        ("hbase.regionserver.handler.count", "30", "HBase's default, as the stand-in"),
        ("hbase.master.mob.cleaner.period", "10",
         "MOB files no store file refers to any more (after a MOB family's major compaction) are archived within "
         "seconds (HBase: once a day), as a snapshot export must find them (docs/snapshot-export.md)"),
        ("hbase.mob.min.age.archive", "60000",
         "...once a minute old (HBase: an hour): a MOB file just flushed is not yet referenced by its store file"),
        *master_key_site(cluster_dir.parent),
    ] + ([] if wal_roll_size is None else [
        ("hbase.regionserver.hlog.blocksize", str(2 * wal_roll_size),
         f"up --wal-roll-size {wal_roll_size}: a WAL rolls at blocksize x logroll.multiplier (HBase: 2 x the HDFS "
         "block x 0.5)"),
        ("hbase.regionserver.logroll.multiplier", "0.5", "HBase 2.x's default, said with the blocksize above")])


MASTER_KEY_ALIAS = "hbase"


def master_key_files(workdir: Path) -> tuple[Path, Path]:
    """The bed's HBase master key (AES-128, a JCEKS keystore) and the properties file holding its password; one key
    for both clusters, as two clusters that may exchange encrypted families' HFiles must share."""
    return workdir / "crypto" / "master-key.jceks", workdir / "crypto" / "master-key.password"


def master_key_site(workdir: Path) -> list[tuple[str, str, str]]:
    keystore, password = master_key_files(workdir)
    return [
        ("hbase.crypto.keyprovider", "org.apache.hadoop.hbase.io.crypto.KeyStoreKeyProvider",
         "transparent encryption of families (ENCRYPTION => 'AES'), as a shop with encrypted data configures it"),
        ("hbase.crypto.keyprovider.parameters", f"jceks://{keystore}?passwordFile={password}",
         "the bed's master key (ensure_master_key); its password in a file, not here"),
        ("hbase.crypto.master.key.name", MASTER_KEY_ALIAS, "the alias of the master key in that keystore"),
    ]


def ensure_master_key(workdir: Path, java: str) -> None:
    """Creates the bed's master key once (keytool, beside `java`): kept with the workdir, as its HDFS data is."""
    import secrets
    import subprocess

    keystore, password_file = master_key_files(workdir)
    if keystore.exists() and password_file.exists():
        return
    keystore.parent.mkdir(parents=True, exist_ok=True)
    keystore.unlink(missing_ok=True)
    password = secrets.token_hex(16)
    keytool = Path(java).resolve().parent / "keytool"
    proc = subprocess.run([str(keytool), "-genseckey", "-alias", MASTER_KEY_ALIAS, "-keyalg", "AES", "-keysize",
                           "128", "-storetype", "jceks", "-keystore", str(keystore), "-storepass:env", "RH_KEYPASS",
                           "-keypass:env", "RH_KEYPASS"], env={**os.environ, "RH_KEYPASS": password},
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"keytool could not create {keystore}: {proc.stderr.strip() or proc.stdout.strip()}")
    password_file.write_text(f"{MASTER_KEY_ALIAS}={password}\n")
    password_file.chmod(0o600)


def core_site(cluster_dir: Path, ports: dict[str, int]) -> list[tuple[str, str, str]]:
    return [
        ("fs.defaultFS", f"hdfs://{HOST}:{ports['namenode']}", "this cluster's NameNode"),
        ("hadoop.tmp.dir", str(cluster_dir / "hadoop-tmp"), "local scratch inside the workdir"),
    ]


TEST_BLOCK_SIZE = 1 << 20


def block_size() -> int:
    """dfs.blocksize: 1 MiB, or `REALHBASE_DFS_BLOCKSIZE` (bytes; a benchmark's production-sized 134217728)."""
    text = os.environ.get("REALHBASE_DFS_BLOCKSIZE", "").strip()
    if not text:
        return TEST_BLOCK_SIZE
    if not text.isdigit() or int(text) < TEST_BLOCK_SIZE or int(text) % 512:
        raise ValueError(f"REALHBASE_DFS_BLOCKSIZE={text!r}: give bytes, a multiple of 512 and at least "
                         f"{TEST_BLOCK_SIZE} (HDFS's smallest), e.g. 134217728 for HDFS's default")
    return int(text)


def hdfs_site(cluster_dir: Path, ports: dict[str, int], size: int | None = None,
              datanodes: int = 0) -> list[tuple[str, str, str]]:
    """`size`: dfs.blocksize (`up --block-size`; default `block_size()`); `datanodes`: DataNode JVMs of their own
    (0: one DataNode in the master's JVM)."""
    size = size or block_size()
    replication = min(2, max(datanodes, 1))
    return [
        ("dfs.namenode.name.dir", f"file://{cluster_dir / 'hdfs' / 'name'}", ""),
        ("dfs.datanode.data.dir", f"file://{cluster_dir / 'hdfs' / 'data'}", ""),
        ("dfs.namenode.rpc-address", f"{HOST}:{ports['namenode']}", ""),
        ("dfs.namenode.http-address", f"{HOST}:{ports['namenode_http']}", "WebHDFS (on by default in Hadoop 3)"),
        ("dfs.webhdfs.enabled", "true", ""),
        ("dfs.datanode.address", f"{HOST}:0", "the DataNode's ports are free ones: nothing outside HDFS uses them"),
        ("dfs.datanode.http.address", f"{HOST}:0", ""),
        ("dfs.datanode.ipc.address", f"{HOST}:0", ""),
        ("dfs.datanode.hostname", HOST, "WebHDFS redirects name the DataNode by its loopback address"),
        ("dfs.replication", str(replication),
         "one DataNode" if replication == 1 else "two replicas: a DataNode killed loses no block"),
        ("dfs.blocksize", str(size),
         "1 MiB blocks (HDFS: 128 MiB, the smallest allowed is 1 MiB): a new block reserves one block against a "
         "space quota, so small quotas work; WALs roll at about this size" if size == TEST_BLOCK_SIZE else
         "REALHBASE_DFS_BLOCKSIZE: a production-sized block (a benchmark's: a file's blocks cost round trips)"),
        ("dfs.namenode.safemode.extension", "0", "leave safe mode as soon as the blocks are reported (HDFS: 30 s)"),
        ("dfs.namenode.safemode.min.datanodes", "1", ""),
        ("dfs.datanode.directoryscan.interval", "10",
         "the DataNode rescans its disks every 10 s (HDFS: 6 h). Hadoop 3.4.2's DataNode drops a replica from "
         "memory and reports it deleted when a read races the replica's finalize (FileNotFoundException on the "
         "rbw file; HDFS-17342, not in 3.4.2): a replication source tailing the WAL that just rolled then finds "
         "\"No live nodes contain block\" forever. The scan puts the replica, still on disk, back within 10 s. "
         "It does not save the rarer case where the deletion reaches the NameNode before the WAL's close "
         "completes: lease recovery then drops the WAL's last block; `up --datanodes 2` (a second replica) "
         "survives both (scripts/repro-wal-reader-fault)"),
    ] + ([] if datanodes < 2 else [
        ("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER",
         "a pipeline that lost a DataNode goes on with the others (HDFS's advice for clusters of 3 nodes or fewer)"),
        ("dfs.namenode.heartbeat.recheck-interval", "15000",
         "a killed DataNode is declared dead after 2 x 15 s + 10 x 3 s (HDFS: 10.5 min)"),
    ])


def site_xml(props: list[tuple[str, str, str]]) -> str:
    lines = ['<?xml version="1.0"?>', "<!-- Written by realhbase (realhbase/config.py): do not edit. -->",
             "<configuration>"]
    for key, value, why in props:
        if why:  # "--" may not appear inside an XML comment (Hadoop's parser refuses the whole file)
            lines.append(f"  <!-- {escape(why).replace('--', '- -')} -->")
        lines.append(f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>")
    return "\n".join(lines + ["</configuration>", ""])


LOG4J2 = """# realhbase: each JVM logs to standard error, which the test bed writes to <cluster>/logs/<role>.log
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %.2000m%n
rootLogger = {level},console
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
logger.statechange.name = org.apache.hadoop.hdfs.StateChange
logger.statechange.level = WARN
logger.clienttrace.name = org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace
logger.clienttrace.level = WARN
logger.audit.name = org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit
logger.audit.level = WARN
logger.blockstate.name = BlockStateChange
logger.blockstate.level = WARN
logger.metrics.name = org.apache.hadoop.metrics2
logger.metrics.level = WARN
"""
# Metrics snapshots (and so /jmx values) every 2 s (HBase: 10 s), as the stand-in's metrics period.
METRICS2 = "*.period=2\n"


def merged(base: list[tuple[str, str, str]], overlay: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """`base` with `overlay`'s keys replacing theirs (in place) or appended."""
    extra = {prop[0]: prop for prop in overlay}
    out = [extra.pop(prop[0], prop) for prop in base]
    return out + list(extra.values())


def write_conf(name: str, cluster_dir: Path, zk_hosts: str, ports: dict[str, int],
               overlay: dict[str, list[tuple[str, str, str]]] | None = None, server_host: str = HOST,
               region_servers: int = REGION_SERVERS, block: int | None = None, datanodes: int = 0,
               wal_roll_size: int | None = None) -> Path:
    """The cluster's conf/ directory; `overlay` adds keys to a site file ({"hbase-site.xml": [...]}: the secured
    bed's, realhbase/secure.py); the rest is the topology's (realhbase/roles.py `Topology`)."""
    conf = cluster_dir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for sub in ("tmp", "hadoop-tmp", "logs"):
        (cluster_dir / sub).mkdir(exist_ok=True)
    overlay = overlay or {}
    for file, props in (("hbase-site.xml", hbase_site(name, cluster_dir, zk_hosts, ports, server_host,
                                                      region_servers, wal_roll_size)),
                        ("core-site.xml", core_site(cluster_dir, ports)),
                        ("hdfs-site.xml", hdfs_site(cluster_dir, ports, block, datanodes))):
        (conf / file).write_text(site_xml(merged(props, overlay.get(file, []))))
    (conf / "log4j2.properties").write_text(LOG4J2.replace("{level}", "INFO"))
    (conf / "log4j2-client.properties").write_text(LOG4J2.replace("{level}", "WARN"))
    for metrics in ("hadoop-metrics2.properties", "hadoop-metrics2-hbase.properties"):
        (conf / metrics).write_text(METRICS2)
    return conf


def save_ports(cluster_dir: Path, ports: dict[str, int], zk_hosts: str, topology: dict | None = None) -> None:
    (cluster_dir / "cluster.json").write_text(json.dumps({"ports": ports, "zookeeper": zk_hosts,
                                                          **({"topology": topology} if topology else {})}, indent=1))


def load_cluster(cluster_dir: Path) -> dict:
    try:
        return json.loads((cluster_dir / "cluster.json").read_text())
    except (OSError, ValueError):
        return {}
