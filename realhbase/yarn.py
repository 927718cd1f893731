"""The test bed's YARN (`python -m realhbase up --yarn`): a ResourceManager and a NodeManager beside dc2's HDFS (the
target datacenter's, where an operator runs the copy), each in its own JVM, from Maven Central's Hadoop jars at the
test bed's Hadoop version (realhbase/yarn/pom.xml), and the HADOOP_CONF_DIR a Spark client needs to submit to it.

    <workdir>/dc2/yarn/conf/     core-site.xml, hdfs-site.xml (dc2's), yarn-site.xml, capacity-scheduler.xml,
                                 log4j2.properties: HADOOP_CONF_DIR for spark-submit, and the daemons' own
    <workdir>/dc2/yarn/spark-conf/spark-defaults.conf   SPARK_CONF_DIR for spark-submit: what an operator's
                                 spark-defaults.conf says for this YARN (spark_conf below)
    <workdir>/dc2/yarn/local/    the NodeManager's local dirs (containers' working directories, localized files)
    <workdir>/dc2/yarn/logs/     the containers' stdout/stderr (yarn.nodemanager.log-dirs)
    <workdir>/dc2/logs/resourcemanager.log, nodemanager.log

Secured (`up --secure --yarn`): the daemons listen on dc2's server address (realhbase/secure.py SERVER_HOSTS) and
log in as `yarn/<that address>@DC2.TEST`; the conf dir's core-site is dc2's Kerberized one with the web UIs' SPNEGO
principal on that address (secure_core_site), yarn-site adds secure_yarn_site's keys, and spark-defaults.conf names
dc2's krb5.conf for Spark's JVMs in the containers (spark_conf). Containers run under DefaultContainerExecutor: as
the NodeManager's OS user, whatever the application's Kerberos user (a test bed; production runs the
LinuxContainerExecutor, each application as its own OS user).

Every setting that differs from Hadoop's default says why (here and in the XML written).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from realhbase import config
from realhbase.config import HOST

ROLES = ["resourcemanager", "nodemanager"]
CLUSTER = "dc2"
MAIN = {"resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
        "nodemanager": "org.apache.hadoop.yarn.server.nodemanager.NodeManager"}
HEAP = {"resourcemanager": "384m", "nodemanager": "256m"}
PORT_NAMES = ["rm", "rm_scheduler", "rm_tracker", "rm_admin", "rm_web", "nm", "nm_localizer", "nm_web"]
# What the NodeManager offers: enough for a Spark application's AM or driver and two executors of 512 MiB (each
# container is the heap plus Spark's 384 MiB overhead, rounded up to the minimum allocation), nothing more.
NODE_MEMORY_MB = 4096
NODE_VCORES = 4


def yarn_dir(workdir: Path) -> Path:
    return workdir / CLUSTER / "yarn"


def conf_dir(workdir: Path) -> Path:
    return yarn_dir(workdir) / "conf"


def host(secure: bool) -> str:
    """The address YARN's daemons listen on: loopback, or on a secured bed dc2's server address (the host its
    principals name, in DC2.TEST by every krb5.conf's [domain_realm])."""
    if not secure:
        return HOST
    from realhbase import secure as sec

    return sec.server_host(CLUSTER)


def yarn_site(workdir: Path, ports: dict[str, int], secure: bool = False) -> list[tuple[str, str, str]]:
    d = yarn_dir(workdir)
    addr = host(secure)
    return [
        ("yarn.resourcemanager.hostname", addr, "loopback only"),
        ("yarn.resourcemanager.address", f"{addr}:{ports['rm']}", "free ports chosen at up (8032... by default)"),
        ("yarn.resourcemanager.scheduler.address", f"{addr}:{ports['rm_scheduler']}", ""),
        ("yarn.resourcemanager.resource-tracker.address", f"{addr}:{ports['rm_tracker']}", ""),
        ("yarn.resourcemanager.admin.address", f"{addr}:{ports['rm_admin']}", ""),
        ("yarn.resourcemanager.webapp.address", f"{addr}:{ports['rm_web']}", "the web UI and REST API (/ws/v1)"),
        ("yarn.nodemanager.hostname", addr, "loopback only"),
        ("yarn.nodemanager.address", f"{addr}:{ports['nm']}", ""),
        ("yarn.nodemanager.localizer.address", f"{addr}:{ports['nm_localizer']}", ""),
        ("yarn.nodemanager.webapp.address", f"{addr}:{ports['nm_web']}", "containers' logs"),
        ("yarn.nodemanager.local-dirs", str(d / "local"), "inside the workdir"),
        ("yarn.nodemanager.log-dirs", str(d / "logs"), "inside the workdir: each container's stdout/stderr"),
        ("yarn.nodemanager.resource.memory-mb", str(NODE_MEMORY_MB),
         "a small node (YARN: 8 GiB): an AM or driver and two executors of 512 MiB"),
        ("yarn.nodemanager.resource.cpu-vcores", str(NODE_VCORES), "vcores are a count, not the machine's 2 cores"),
        ("yarn.scheduler.minimum-allocation-mb", "256", "containers in 256 MiB steps (YARN: 1 GiB)"),
        ("yarn.scheduler.maximum-allocation-mb", str(NODE_MEMORY_MB), "no container larger than the node"),
        ("yarn.nodemanager.vmem-check-enabled", "false",
         "JDK 17 and Python workers reserve far more virtual memory than 2.1 x the container's size"),
        ("yarn.nodemanager.pmem-check-enabled", "false",
         "an executor's Python workers count against its container; the heaps are capped by -Xmx anyway"),
        ("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "99",
         "a shared disk past 90 % would mark the only node unhealthy (YARN: 90)"),
        ("yarn.nodemanager.delete.debug-delay-sec", "600",
         "a finished container's directory stays 10 min (YARN: 0), for its logs and what was localized"),
        ("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", "500",
         "containers are handed out within half a second (YARN: 1 s)"),
        ("yarn.nodemanager.env-whitelist",
         "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,"
         "HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ,SPARK_LOCAL_IP",
         "YARN's list plus SPARK_LOCAL_IP: Spark in the containers binds loopback as the client does"),
        ("yarn.log-aggregation-enable", "false", "containers' logs stay in yarn.nodemanager.log-dirs"),
    ] + (secure_yarn_site(workdir) if secure else [])


def secure_yarn_site(workdir: Path) -> list[tuple[str, str, str]]:
    """yarn-site's Kerberos keys (`up --secure --yarn`)."""
    from realhbase import secure as sec

    realm = sec.realm(CLUSTER)
    principal = sec.yarn_principal(CLUSTER)
    keytab = sec.keytab(workdir, principal)
    spnego = sec.http_principal(CLUSTER, sec.SERVER_HOSTS[CLUSTER][1])
    spnego_keytab = sec.keytab(workdir, spnego)
    return [
        ("yarn.resourcemanager.principal", f"yarn/_HOST@{realm}",
         "_HOST: the ResourceManager's address (the daemon and its clients expand it alike; Spark's client names "
         "it the renewer of the HDFS delegation tokens it obtains)"),
        ("yarn.resourcemanager.keytab", keytab, ""),
        ("yarn.nodemanager.principal", principal,
         "named in full: the NodeManager expands _HOST with the machine's canonical name, not its address"),
        ("yarn.nodemanager.keytab", keytab, ""),
        ("yarn.resourcemanager.webapp.spnego-principal", spnego, "the web UIs and REST API behind SPNEGO"),
        ("yarn.resourcemanager.webapp.spnego-keytab-file", spnego_keytab, ""),
        ("yarn.nodemanager.webapp.spnego-principal", spnego, ""),
        ("yarn.nodemanager.webapp.spnego-keytab-file", spnego_keytab, ""),
        ("yarn.nodemanager.container-executor.class",
         "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
         "YARN's default, said explicitly: a test bed's containers run as the NodeManager's OS user (production: "
         "LinuxContainerExecutor, each application as its own OS user)"),
    ]


def secure_core_site(workdir: Path) -> list[tuple[str, str, str]]:
    """What the YARN conf dir's core-site changes in dc2's Kerberized one (hadoop.security.authentication=kerberos,
    auth_to_local and the SPNEGO filter come with it): the web servers' SPNEGO principal, on YARN's address."""
    from realhbase import secure as sec

    spnego = sec.http_principal(CLUSTER, sec.SERVER_HOSTS[CLUSTER][1])
    return [
        ("hadoop.http.authentication.kerberos.principal", spnego,
         "the ResourceManager's and NodeManager's web servers on dc2's server address (dc2's NameNode: localhost)"),
        ("hadoop.http.authentication.kerberos.keytab", sec.keytab(workdir, spnego), ""),
    ]


def _site_props(text: str) -> list[tuple[str, str, str]]:
    import xml.etree.ElementTree as ET

    return [(p.findtext("name"), p.findtext("value") or "", "") for p in ET.fromstring(text).iter("property")]


def capacity_scheduler() -> list[tuple[str, str, str]]:
    return [
        ("yarn.scheduler.capacity.root.queues", "default", "one queue"),
        ("yarn.scheduler.capacity.root.default.capacity", "100", ""),
        ("yarn.scheduler.capacity.root.default.maximum-capacity", "100", ""),
        ("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5",
         "application masters may take half the node (YARN: 10 %, less than one Spark AM here)"),
    ]


def write_conf(workdir: Path, ports: dict[str, int], secure: bool = False) -> Path:
    """HADOOP_CONF_DIR: dc2's core-site and hdfs-site (fs.defaultFS: dc2's NameNode, where Spark stages the
    application), yarn-site, the scheduler's queue and the daemons' logging; secured, dc2's krb5.conf too."""
    conf = conf_dir(workdir)
    conf.mkdir(parents=True, exist_ok=True)
    for sub in ("local", "logs", "tmp"):
        (yarn_dir(workdir) / sub).mkdir(exist_ok=True)
    cluster_conf = workdir / CLUSTER / "conf"
    for name in ("core-site.xml", "hdfs-site.xml", "log4j2.properties", *(("krb5.conf",) if secure else ())):
        (conf / name).write_text((cluster_conf / name).read_text())
    if secure:
        core = _site_props((cluster_conf / "core-site.xml").read_text())
        (conf / "core-site.xml").write_text(config.site_xml(config.merged(core, secure_core_site(workdir))))
    (conf / "yarn-site.xml").write_text(config.site_xml(yarn_site(workdir, ports, secure)))
    (conf / "capacity-scheduler.xml").write_text(config.site_xml(capacity_scheduler()))
    spark = spark_conf_dir(workdir)
    spark.mkdir(exist_ok=True)
    (spark / "spark-defaults.conf").write_text(
        "# Written by realhbase (realhbase/yarn.py): Spark on this test bed's YARN, as an operator's\n"
        "# spark-defaults.conf would say it. With HADOOP_CONF_DIR=" + str(conf) + "\n"
        + "".join(f"{k} {v}\n" for k, v in spark_conf(workdir, sys.executable, secure).items()))
    return conf


def spark_conf_dir(workdir: Path) -> Path:
    return yarn_dir(workdir) / "spark-conf"


def java_home(java: str) -> str:
    """JAVA_HOME of the `java` the test bed runs (the NodeManager launches containers with $JAVA_HOME/bin/java)."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    return str(Path(os.path.realpath(java)).parent.parent)


def spark_conf(workdir: Path, python: str, secure: bool = False) -> dict[str, str]:
    """What an operator's spark-defaults.conf says for this YARN (the tests pass it as the Spark connection's conf):
    PySpark's own jars where they are (`local:`: on every node already, nothing uploaded per application; on a real
    cluster, `spark.yarn.archive` in HDFS), the nodes' Python, small containers. Secured: the krb5.conf of dc2's
    hosts for the JVMs in the containers (a node's /etc/krb5.conf in production; the AM logs in from the keytab
    Spark ships it in cluster mode)."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    krb5 = {}
    if secure:
        java_krb5 = f"-Djava.security.krb5.conf={conf_dir(workdir) / 'krb5.conf'}"
        krb5 = {"spark.driver.extraJavaOptions": java_krb5, "spark.yarn.am.extraJavaOptions": java_krb5,
                "spark.executor.extraJavaOptions": java_krb5,
                # a cluster-mode driver's SparkContext logs in and obtains HDFS delegation tokens before the AM's
                # wait for it ends (Spark: 100 s); on two cores under load 27 it took longer once
                "spark.yarn.am.waitTime": "300s"}
    return {
        "spark.yarn.jars": f"local:{jars}/*",
        "spark.pyspark.python": python,
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "2",
        "spark.executor.instances": "1",
        "spark.yarn.am.memory": "512m",
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": HOST,
        "spark.executorEnv.SPARK_LOCAL_IP": HOST,
        "spark.ui.enabled": "false",
        **krb5,
    }


def plan_ports(saved: dict[str, int]) -> dict[str, int]:
    return config.plan_ports(saved, PORT_NAMES)


def containers_dir(workdir: Path) -> Path:
    """The NodeManager's local dirs: every process of a container runs in a directory below it."""
    return yarn_dir(workdir) / "local"


# ---------------------------------------------------------------------------------------------- the daemons
class Yarn:
    """YARN's two daemons beside dc2's HDFS under `workdir`: started, awaited, stopped, described. `jars` is called
    when they are to start; `security` is the bed's (realhbase/security.py); `running` returns "<cluster>/<role>"
    -> pid of the bed's live processes."""

    def __init__(self, workdir: Path, jars, security, running, progress: bool = True, log=lambda message: None):
        self.workdir, self._jars, self.security, self._running = workdir, jars, security, running
        self.progress, self._log = progress, log

    def running_daemons(self) -> dict[str, int]:
        """"dc2/resourcemanager" / "dc2/nodemanager" -> pid of YARN's live daemons."""
        return {r: p for r, p in self._running().items() if r.split("/")[-1] in ROLES}

    def _command(self, role: str, java: str, classpath: list[str]) -> list[str]:
        from realhbase.processes import markers

        conf = conf_dir(self.workdir)
        logs = self.workdir / CLUSTER / "logs"
        return [java, f"-Xmx{HEAP[role]}", *config.JVM_FLAGS, *config.JDK17_FLAGS,
                *markers(self.workdir, CLUSTER, role), f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}",
                f"-Djava.io.tmpdir={yarn_dir(self.workdir) / 'tmp'}", f"-Dyarn.log.dir={logs}",
                f"-Dhadoop.log.dir={logs}", *self.security.jvm_flags(CLUSTER, self.workdir / CLUSTER),
                "-cp", os.pathsep.join([*classpath, str(conf)]), MAIN[role]]

    def start(self, timeout: float) -> dict:
        """A ResourceManager and a NodeManager on dc2; returns once the node is RUNNING in the ResourceManager.
        Already running: returns at once. A failure stops both and raises with the log's tail."""
        import json
        import time

        from realhbase.jars import RealHBaseError, resolve_yarn
        from realhbase.processes import spawn, tail

        if set(self.running_daemons()) >= {f"{CLUSTER}/{r}" for r in ROLES}:
            return self.endpoints()
        if f"{CLUSTER}/master" not in self._running():
            raise RealHBaseError(f"realhbase: YARN runs beside {CLUSTER}'s HDFS, which does not run under "
                                 f"{self.workdir}: `up` first")
        self.stop()  # half a YARN (one daemon died): start both again
        started = time.monotonic()
        jars = self._jars()
        classpath = resolve_yarn(jars.versions["hadoop"], progress=self.progress)
        state_file = yarn_dir(self.workdir) / "yarn.json"
        try:
            saved = json.loads(state_file.read_text()).get("ports", {})
        except (OSError, ValueError):
            saved = {}
        ports = plan_ports(saved)
        secure = self.security.secure
        conf = write_conf(self.workdir, ports, secure)
        address = host(secure)
        state_file.write_text(json.dumps({"ports": ports, "host": address, "secure": secure}, indent=1))
        env = {**os.environ, "JAVA_HOME": java_home(jars.java), "HADOOP_CONF_DIR": str(conf), "SPARK_LOCAL_IP": HOST}
        env.pop("PYTHONPATH", None)  # containers get what their application ships, not this process's path
        logs = self.workdir / CLUSTER / "logs"
        nodes = f"http://{address}:{ports['rm_web']}/ws/v1/cluster/nodes?states=RUNNING"
        try:
            spawned = {role: spawn(self._command(role, jars.java, classpath), logs / f"{role}.log",
                                   f"{CLUSTER}/{role}", yarn_dir(self.workdir), env) for role in ROLES}
            deadline = time.monotonic() + timeout
            while True:
                # the child's own exit status: a scan of /proc just after the spawn can miss a JVM whose launcher
                # is re-executing itself (its command line reads empty for that moment), and it failed this start
                for role, proc in spawned.items():
                    if proc.poll() is not None:
                        log = logs / f"{role}.log"
                        raise RealHBaseError(f"realhbase: {CLUSTER}/{role} exited while starting; tail of "
                                             f"{log}:\n{tail(log)}")
                try:  # the REST API (behind SPNEGO on a secured bed, asked as dc2's hbase service principal)
                    if ((self.security.http_json(CLUSTER, nodes, timeout=3).get("nodes") or {}).get("node") or []):
                        break
                except Exception:  # noqa: BLE001 - not answering yet (a refused connection, SPNEGO before its login)
                    pass
                if time.monotonic() >= deadline:
                    log = logs / "nodemanager.log"
                    raise RealHBaseError(f"realhbase: YARN's node not RUNNING in the ResourceManager within "
                                         f"{timeout:.0f}s; tail of {log}:\n{tail(log)}")
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        self._log(f"YARN ready in {time.monotonic() - started:.1f} s (ResourceManager {address}:{ports['rm']}, "
                  f"web UI http://{address}:{ports['rm_web']}{', Kerberos' if secure else ''}, HADOOP_CONF_DIR {conf})")
        return self.endpoints()

    def stop(self) -> dict[int, str]:
        """SIGTERM to the NodeManager, the ResourceManager and every container process; SIGKILL after 30 s.
        Returns the survivors."""
        from realhbase import processes

        procs = {p: r for p, r in processes.find(self.workdir, containers_dir(self.workdir),
                                                 f"{CLUSTER}/container").items()
                 if r.split("/")[-1] in (*ROLES, "container")}
        if not procs:
            return {}
        _, left = processes.terminate(procs, 30)
        return {pid: procs[pid] for pid in left}

    def endpoints(self) -> dict | None:
        """The `yarn` entry of `endpoints --json` (None: YARN was never started under this workdir)."""
        import json

        try:
            state = json.loads((yarn_dir(self.workdir) / "yarn.json").read_text())
            ports = state["ports"]
        except (OSError, ValueError, KeyError):
            return None
        running = self.running_daemons()
        conf = str(conf_dir(self.workdir))
        secure = bool(state.get("secure"))
        address = state.get("host") or config.HOST  # dc2's server address on a secured bed
        security, kerberos_extra = None, {}
        if secure:
            from bedkit.security.stack import TOOLKIT
            from realhbase import secure as sec

            # What spark-submit needs: the submitting principal and the PATH of its keytab (never its content),
            # the YARN daemons' principals, dc2's krb5.conf for the JVMs and the REST API's SPNEGO principal
            security = {
                "principal": TOOLKIT, "keytab": sec.keytab(self.workdir, TOOLKIT),
                "krb5_conf": str(conf_dir(self.workdir) / "krb5.conf"),
                "resourcemanager_principal": f"yarn/_HOST@{sec.realm(CLUSTER)}",
                "nodemanager_principal": sec.yarn_principal(CLUSTER),
                "spnego_principal": f"HTTP/_HOST@{sec.realm(CLUSTER)}",
            }
            # the provider reads `principal` (--principal); `keytab` there is a keytab's base64 CONTENT, so the
            # path goes under `keytab_path`, which the toolkit's Spark operators pass as --keytab
            kerberos_extra = {"principal": TOOLKIT, "keytab_path": security["keytab"],
                              "yarn_spnego_principal": security["spnego_principal"]}
        return {
            "cluster": CLUSTER,
            "resourcemanager": {"address": f"{address}:{ports['rm']}",
                                "scheduler": f"{address}:{ports['rm_scheduler']}",
                                "web_ui": f"http://{address}:{ports['rm_web']}",
                                "alive": f"{CLUSTER}/resourcemanager" in running},
            "nodemanager": {"address": f"{address}:{ports['nm']}", "web_ui": f"http://{address}:{ports['nm_web']}",
                            "memory_mb": NODE_MEMORY_MB, "vcores": NODE_VCORES,
                            "alive": f"{CLUSTER}/nodemanager" in running},
            "hadoop_conf_dir": conf,
            "spark_conf_dir": str(spark_conf_dir(self.workdir)),
            "containers_dir": str(containers_dir(self.workdir)),
            "container_logs_dir": str(yarn_dir(self.workdir) / "logs"),
            # what spark-defaults.conf holds for this YARN (export HADOOP_CONF_DIR for spark-submit too)
            "spark_conf": spark_conf(self.workdir, sys.executable, secure),
            "security": security,
            # Airflow's Spark connections; the ResourceManager's web address lets the provider follow a
            # cluster-mode application through the REST API (yarn_track_via_rm_api, its durable mode)
            "connections": {
                name: {"conn_type": "spark", "host": "yarn",
                       "extra": {"deploy-mode": mode,
                                 "yarn_resourcemanager_webapp_address": f"{address}:{ports['rm_web']}",
                                 **kerberos_extra}}
                for name, mode in (("spark_yarn", "cluster"), ("spark_yarn_client", "client"))},
        }
