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


def yarn_site(workdir: Path, ports: dict[str, int]) -> list[tuple[str, str, str]]:
    d = yarn_dir(workdir)
    return [
        ("yarn.resourcemanager.hostname", HOST, "loopback only"),
        ("yarn.resourcemanager.address", f"{HOST}:{ports['rm']}", "free ports chosen at up (8032... by default)"),
        ("yarn.resourcemanager.scheduler.address", f"{HOST}:{ports['rm_scheduler']}", ""),
        ("yarn.resourcemanager.resource-tracker.address", f"{HOST}:{ports['rm_tracker']}", ""),
        ("yarn.resourcemanager.admin.address", f"{HOST}:{ports['rm_admin']}", ""),
        ("yarn.resourcemanager.webapp.address", f"{HOST}:{ports['rm_web']}", "the web UI and REST API (/ws/v1)"),
        ("yarn.nodemanager.hostname", HOST, "loopback only"),
        ("yarn.nodemanager.address", f"{HOST}:{ports['nm']}", ""),
        ("yarn.nodemanager.localizer.address", f"{HOST}:{ports['nm_localizer']}", ""),
        ("yarn.nodemanager.webapp.address", f"{HOST}:{ports['nm_web']}", "containers' logs"),
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
    ]


def capacity_scheduler() -> list[tuple[str, str, str]]:
    return [
        ("yarn.scheduler.capacity.root.queues", "default", "one queue"),
        ("yarn.scheduler.capacity.root.default.capacity", "100", ""),
        ("yarn.scheduler.capacity.root.default.maximum-capacity", "100", ""),
        ("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5",
         "application masters may take half the node (YARN: 10 %, less than one Spark AM here)"),
    ]


def write_conf(workdir: Path, ports: dict[str, int]) -> Path:
    """HADOOP_CONF_DIR: dc2's core-site and hdfs-site (fs.defaultFS: dc2's NameNode, where Spark stages the
    application), yarn-site, the scheduler's queue and the daemons' logging."""
    conf = conf_dir(workdir)
    conf.mkdir(parents=True, exist_ok=True)
    for sub in ("local", "logs", "tmp"):
        (yarn_dir(workdir) / sub).mkdir(exist_ok=True)
    cluster_conf = workdir / CLUSTER / "conf"
    for name in ("core-site.xml", "hdfs-site.xml", "log4j2.properties"):
        (conf / name).write_text((cluster_conf / name).read_text())
    (conf / "yarn-site.xml").write_text(config.site_xml(yarn_site(workdir, ports)))
    (conf / "capacity-scheduler.xml").write_text(config.site_xml(capacity_scheduler()))
    spark = spark_conf_dir(workdir)
    spark.mkdir(exist_ok=True)
    (spark / "spark-defaults.conf").write_text(
        "# Written by realhbase (realhbase/yarn.py): Spark on this test bed's YARN, as an operator's\n"
        "# spark-defaults.conf would say it. With HADOOP_CONF_DIR=" + str(conf) + "\n"
        + "".join(f"{k} {v}\n" for k, v in spark_conf(workdir, sys.executable).items()))
    return conf


def spark_conf_dir(workdir: Path) -> Path:
    return yarn_dir(workdir) / "spark-conf"


def java_home(java: str) -> str:
    """JAVA_HOME of the `java` the test bed runs (the NodeManager launches containers with $JAVA_HOME/bin/java)."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    return str(Path(os.path.realpath(java)).parent.parent)


def spark_conf(workdir: Path, python: str) -> dict[str, str]:
    """What an operator's spark-defaults.conf says for this YARN (the tests pass it as the Spark connection's conf):
    PySpark's own jars where they are (`local:`: on every node already, nothing uploaded per application; on a real
    cluster, `spark.yarn.archive` in HDFS), the nodes' Python, small containers."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
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
    }


def plan_ports(saved: dict[str, int]) -> dict[str, int]:
    return config.plan_ports(saved, PORT_NAMES)
