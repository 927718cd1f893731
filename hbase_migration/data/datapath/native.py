"""The native data path: copy and verify with HBase's own client in Spark's JVMs (docs/data-path.md, "The native
data path"). Python keeps the plan, the resume, the ledger, the progress and the load throttle; the cells never
leave the executors' JVMs.

The JVM side is `jvm/` (Java, built by Maven into `jvm/target/<hbase version>/` by `make bootstrap`): a raw range
reader (`RangeReader`: every version and every delete marker of a key range, with their types), the copy and
verify tasks over it, and `Driver`, this module's entry point into the Spark driver's JVM (through py4j). The
driver loads `Driver` through a class loader of its own over the jars (so a Spark session started without them,
a test module's or a notebook's, serves too) and adds the jars to the application (`SparkContext.addJar`), which
ships them to every executor.

Pure here: the HBase client properties of a cluster (`client_properties`) and the task specs (`copy_spec`,
`verify_spec`), unit-tested exactly; the rest talks to the JVM.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.data.datapath.base import Region

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

CLASSPATH_ENV = "HBASE_MIGRATION_JVM_CLASSPATH"  # the jars, os.pathsep-separated (an installation's own build)
VERSION_ENV = "HBASE_MIGRATION_HBASE_VERSION"  # which build of this checkout's jvm/target/ to use
JVM_DIR = Path(__file__).resolve().parents[3] / "jvm"
DRIVER_CLASS = "local.hbasemigration.jvm.Driver"
BOUND_RPC_CLIENT = "local.hbasemigration.jvm.BoundRpcClient"  # HBase's RPC client bound to a local address


class NativeUnavailable(RuntimeError):
    """The native data path cannot run here (its jars are not built, or no JVM); the message says how to fix it."""


class NativeJobFailed(RuntimeError):
    """The Spark job of the native path failed as a whole (not one partition: those come back as results)."""


# --------------------------------------------------------------------------------------------------
# What the JVM is told (pure)


def client_properties(cluster: "Cluster", timeout_s: float = 60.0) -> dict[str, str]:
    """The HBase client configuration that reaches `cluster` (hbase-site.xml's names): its ZooKeeper quorum and
    znode parent, the RPC timeout, the local address its RPC leaves from (`client_bind_address`), and on a
    Kerberized cluster the client's keytab login, its krb5.conf, and the servers' and ZooKeeper's principals (the
    executors log in from the keytab themselves: docs/secured-clusters.md)."""
    props = {
        "hbase.zookeeper.quorum": cluster.zk_hosts,
        "hbase.zookeeper.property.clientPort": str(cluster.zk_port),
        "zookeeper.znode.parent": cluster.znode_parent,
        "hbase.rpc.timeout": str(int(timeout_s * 1000)),
        "hbase.client.scanner.timeout.period": str(int(max(timeout_s, 60.0) * 1000)),
    }
    if cluster.client_bind_address:  # HBase's client has no setting for it: jvm/ BoundRpcClient binds its sockets
        props["hbase.rpc.client.impl"] = BOUND_RPC_CLIENT
        props["hbase-migration.rpc.client.bind.address"] = cluster.client_bind_address
    security = cluster.security
    if security is not None and security.kerberos:
        props.update({
            "hadoop.security.authentication": "kerberos",
            "hbase.security.authentication": "kerberos",
            "hbase.client.keytab.principal": security.principal or "",
            "hbase.client.keytab.file": security.keytab or "",
        })
        if security.krb5_conf:  # the JVM's java.security.krb5.conf, set by Connections before the keytab login
            props["hbase-migration.krb5.conf"] = security.krb5_conf
        if security.hbase_principal:
            props["hbase.master.kerberos.principal"] = security.hbase_principal
            props["hbase.regionserver.kerberos.principal"] = security.hbase_principal
        # The RPC's SASL QOP: every one offered, strongest first, and the server's hbase.rpc.protection picks (the
        # connection's thrift_qop is its Thrift gateways', not its region servers': on the secured bed the gateways
        # take auth-conf while the RPC takes authentication, and a client insisting on privacy there fails with
        # "No common protection layer between client and server")
        props["hbase.rpc.protection"] = "privacy,integrity,authentication"
        if security.zookeeper_principal:
            props["zookeeper.sasl.client"] = "true"
            props["zookeeper.sasl.client.username"] = security.zookeeper_principal.split("/")[0].split("@")[0]
    return props


def cluster_json(cluster: "Cluster", timeout_s: float = 60.0, **overrides: str) -> dict[str, Any]:
    """A cluster as the JVM side takes it (`ClusterSpec`): its name and client properties."""
    props = client_properties(cluster, timeout_s)
    props.update(overrides)
    return {"name": cluster.name, "properties": props}


def _families(options: Any) -> list[list[str]]:
    return [[s.decode("utf-8"), d.decode("utf-8")] for s, d in options.families]


def _read_fields(options: Any) -> dict[str, Any]:
    return {
        "table": options.table, "target_table": options.target_table, "families": _families(options),
        "start_ms": options.start_time_ms, "end_ms": options.end_time_ms, "versions": options.versions or 0,
        "scan_batch_rows": options.scan_batch_rows, "scan_batch_cells": options.scan_batch_cells,
        # a scanner call brings about scan_call_cells cells: at ~100 bytes a cell, and never less than 1 MiB
        "max_result_bytes": max(1 << 20, options.scan_call_cells * 100),
    }


def family_rules(families: Mapping[bytes, Any]) -> dict[str, dict[str, Any]]:
    """{family: {versions, keep_deleted_cells}} from `NativeMeta.families`' detail (or bare VERSIONS)."""
    out = {}
    for name, rule in families.items():
        key = name.decode("utf-8") if isinstance(name, bytes) else name
        out[key] = dict(rule) if isinstance(rule, Mapping) else {"versions": int(rule), "keep_deleted_cells": False}
    return out


def copy_spec(source: "Cluster", target: "Cluster", options: Any, source_families: Mapping[bytes, Any],
              source_cluster_id: str | None) -> dict[str, Any]:
    """What every copy task of one table is given (the partitions come apart)."""
    spec = _read_fields(options)
    spec.update({
        "source": cluster_json(source, options.timeout_s), "target": cluster_json(target, options.timeout_s),
        "source_families": family_rules(source_families), "source_cluster_id": source_cluster_id,
        "write_batch_bytes": options.write_batch_bytes, "rows_per_s": options.rows_per_s,
        "bytes_per_s": options.bytes_per_s, "load_url": options.load_url, "log_every_s": options.log_every_s,
    })
    return spec


def verify_spec(source: "Cluster", target: "Cluster", options: Any, source_families: Mapping[bytes, Any],
                target_families: Mapping[bytes, Any], per_family: bool = False) -> dict[str, Any]:
    """What every verify task of one table is given. `per_family`: renames reorder the families in a row, so the
    source is read one family per scan and merged in the target's order (`verify.renames_reorder`)."""
    spec = _read_fields(options)
    spec.update({
        "source": cluster_json(source, options.timeout_s), "target": cluster_json(target, options.timeout_s),
        "source_families": family_rules(source_families), "target_families": family_rules(target_families),
        "level": options.level, "recompare_sleep_s": options.recompare_sleep_s,
        "recompare_rounds": options.recompare_rounds, "max_diff_rows": options.max_diff_rows,
        "sample_limit": options.sample_limit,
        "per_family": per_family,
    })
    return spec


def hash_spec(cluster: "Cluster", side: str, options: Any, families: Mapping[bytes, Any],
              per_family: bool = False) -> dict[str, Any]:
    """What every hash task of one side of a verification by hashes is given (issue 41, `HashTask`): that side's
    cluster and family rules only (the other side's job is beside the other cluster)."""
    spec = _read_fields(options)
    spec.update({side: cluster_json(cluster, options.timeout_s), f"{side}_families": family_rules(families),
                 "hash_side": side, "per_family": per_family})
    return spec


# --------------------------------------------------------------------------------------------------
# The jars


def hbase_version() -> str:
    """The HBase whose client this checkout's build uses: $HBASE_MIGRATION_HBASE_VERSION, else jvm/pom.xml's."""
    if os.environ.get(VERSION_ENV):
        return os.environ[VERSION_ENV]
    import xml.etree.ElementTree as ET

    if not (JVM_DIR / "pom.xml").is_file():  # an installed package: the Java is built from a checkout
        raise NativeUnavailable(
            f"the native data path's jars are not part of the installed package: build them in a checkout of its "
            f"version (`make jvm`) and set ${CLASSPATH_ENV} to them (docs/install.md)")
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    props = ET.parse(JVM_DIR / "pom.xml").getroot().find("m:properties", ns)
    return props.find("m:hbase.version", ns).text.strip()


def classpath() -> list[str]:
    """The native path's jars: ours first, then HBase's client and its shaded third parties. From
    $HBASE_MIGRATION_JVM_CLASSPATH, else this checkout's build (`make bootstrap`: jvm/target/<version>/)."""
    given = os.environ.get(CLASSPATH_ENV)
    if given:
        jars = [j for j in given.split(os.pathsep) if j]
        where = f"${CLASSPATH_ENV}"
    else:
        built = JVM_DIR / "target" / hbase_version()
        listed = built / "dependencies.txt"
        if not listed.is_file():
            raise NativeUnavailable(
                f"the native data path's jars are not built for HBase {hbase_version()} ({built}): run `make "
                f"bootstrap` (or `make jvm`), or set ${CLASSPATH_ENV} to the jars of an installed "
                "build")
        jars = [str(built / "hbase-migration-jvm.jar"),
                *[j for j in listed.read_text().strip().split(os.pathsep) if j]]
        where = str(built)
    missing = [j for j in jars if not os.path.isfile(j)]
    if missing:
        raise NativeUnavailable(f"the native data path's jars named by {where} are missing ({missing[0]} and "
                                f"{len(missing) - 1} more): build them again (make bootstrap)")
    return jars


def available() -> bool:
    try:
        classpath()
    except NativeUnavailable:
        return False
    return True


# --------------------------------------------------------------------------------------------------
# The driver's JVM


_lock = threading.Lock()
_bridges: dict[int, "Bridge"] = {}  # id(py4j gateway) -> its bridge
_added: set[str] = set()  # Spark application ids the jars were added to


class Bridge:
    """`Driver` (the JVM side's entry point) in the Spark driver's JVM, loaded through a class loader of its own
    over the native jars."""

    def __init__(self, gateway: Any, jars: Sequence[str]):
        jvm = gateway.jvm
        parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        if jars:
            urls = gateway.new_array(jvm.java.net.URL, len(jars))
            for i, jar in enumerate(jars):
                urls[i] = jvm.java.io.File(jar).toURI().toURL()
            self.loader = jvm.java.net.URLClassLoader(urls, parent)
        else:  # on the driver's class path already (spark-submit --jars), and shipped to the executors with it
            self.loader = parent
        self.driver = self.loader.loadClass(DRIVER_CLASS).getDeclaredConstructor(
            gateway.new_array(jvm.java.lang.Class, 0)).newInstance(gateway.new_array(jvm.java.lang.Object, 0))
        self.jars = list(jars)

    def call(self, method: str, *args: Any) -> Any:
        """`Driver.<method>(*args)`; a Java exception becomes a RuntimeError of one line."""
        from py4j.protocol import Py4JJavaError

        try:
            return getattr(self.driver, method)(*args)
        except Py4JJavaError as e:
            raise RuntimeError(_java_error(e)) from None


def _java_error(e: Any) -> str:
    """A Java exception as one line: its class and message (and its root cause's)."""
    ex = e.java_exception
    text = f"{ex.getClass().getSimpleName()}: {ex.getMessage()}"
    cause = ex.getCause()
    while cause is not None and cause.getCause() is not None and cause.getCause() != cause:
        cause = cause.getCause()
    if cause is not None:
        text += f" (caused by {cause.getClass().getSimpleName()}: {cause.getMessage()})"
    return " ".join(text.split())


def bridge(conf: Mapping[str, str] | None = None) -> Bridge:
    """The bridge in this process's Spark driver JVM: the JVM spark-submit started (its py4j gateway), one a Spark
    session of this process started, or, when there is none yet, a new one (started with `conf`, as the session
    that follows in this process will use it). The jars: `classpath()`, else those spark-submit --jars put on the
    driver's class path (the operators ship them so: a driver in a YARN container has no checkout)."""
    from pyspark import SparkConf, SparkContext

    try:
        jars = classpath()
    except NativeUnavailable:
        if not _submitted_with_jars():
            raise
        jars = []
    with _lock:
        if SparkContext._gateway is None:
            SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list((conf or {}).items())))
        gateway = SparkContext._gateway
        found = _bridges.get(id(gateway))
        if found is None:
            found = _bridges[id(gateway)] = Bridge(gateway, jars)
        return found


def _submitted_with_jars() -> bool:
    """Whether spark-submit was given our jar (--jars), for a driver started by it: `spark.jars`, or on YARN
    `spark.yarn.dist.jars` (what --jars becomes there; a cluster-mode driver's container has them localized on its
    class path, and spark.jars may not name them)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    conf = SparkConf()
    return any("hbase-migration-jvm" in (conf.get(key, "") or "") for key in ("spark.jars", "spark.yarn.dist.jars"))


def add_jars(sc: Any, jars: Sequence[str]) -> None:
    """Ship the native jars to the application's executors (once per application; none given: spark-submit
    --jars shipped them)."""
    if not jars:
        return
    with _lock:
        if sc.applicationId in _added:
            return
        given = set(filter(None, (sc.getConf().get("spark.jars", "") or "").split(",")))
        for jar in jars:
            if jar not in given and f"file:{jar}" not in given:
                sc._jsc.sc().addJar(jar)
        _added.add(sc.applicationId)


class NativeMeta:
    """A native cluster's metadata through the driver's JVM, the `families`/`regions` a data path offers (for
    `check_tables` and the plan), plus what the native tasks need: each family's KEEP_DELETED_CELLS, the
    cluster's id."""

    kind = "native"

    def __init__(self, cluster: "Cluster", timeout_s: float = 60.0, conf: Mapping[str, str] | None = None):
        self.cluster = cluster
        self.bridge = bridge(conf)
        self.json = json.dumps(cluster_json(cluster, timeout_s))
        self._families: dict[str, dict[bytes, dict[str, Any]]] = {}

    def __enter__(self) -> "NativeMeta":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        pass  # the JVM's connection is shared by every call of this driver

    def family_rules(self, table: str) -> dict[bytes, dict[str, Any]]:
        """family -> {versions, keep_deleted_cells}; {} when the table does not exist."""
        if table not in self._families:
            found = json.loads(self.bridge.call("families", self.json, table))
            self._families[table] = {k.encode("utf-8"): v for k, v in found.items()}
        return self._families[table]

    def families(self, table: str) -> dict[bytes, int]:
        return {k: int(v["versions"]) for k, v in self.family_rules(table).items()}

    def regions(self, table: str) -> list[Region]:
        return [Region(bytes.fromhex(r["start_key"]), bytes.fromhex(r["end_key"]), bytes.fromhex(r["name"]),
                       r["host"]) for r in json.loads(self.bridge.call("regions", self.json, table))]

    def cluster_id(self) -> str:
        return str(self.bridge.call("clusterId", self.json))


def probe(cluster: "Cluster", timeout_s: float = 10.0, conf: Mapping[str, str] | None = None) -> str:
    """Whether HBase's own client reaches `cluster`'s region servers from this driver: "" when the server holding
    hbase:meta answers a read, else why not (one line). A client that does not speak HBase's RPC (a stand-in, a
    firewall) fails within `timeout_s` and a few retries."""
    ms = str(int(timeout_s * 1000))
    spec = cluster_json(cluster, timeout_s, **{"hbase.client.retries.number": "2", "hbase.client.pause": "200",
                                               "hbase.client.operation.timeout": ms,
                                               "hbase.client.meta.operation.timeout": ms,
                                               "zookeeper.session.timeout": ms, "zookeeper.recovery.retry": "1"})
    return str(bridge(conf).call("probe", json.dumps(spec)))


# --------------------------------------------------------------------------------------------------
# Running the tasks


def run_tasks(sc: Any, kind: str, spec: Mapping[str, Any], items: Sequence[Mapping[str, Any]],
              on_done: Callable[[list[dict]], None] | None = None, *, slices: int | None = None,
              on_heartbeat: Callable[[], None] | None = None, heartbeat_s: float = 30.0, poll_s: float = 1.0,
              job_group: str | None = None, places: set | None = None) -> list[dict[str, Any]]:
    """Run `kind` ("copy", "verify", "sample") over `items` in Spark tasks of the JVM side (in `slices` tasks,
    each its share in turn; None: one per item), each task preferring the hosts of its items' region servers.
    `on_done(results)` here as tasks end, `on_heartbeat()` every `heartbeat_s`. Returns every result dict, in item
    order. Interrupted (SIGTERM, Ctrl-C), the job is cancelled before the exception goes on; a failure of the job
    as a whole raises `NativeJobFailed`. `places` (a set), when given, gets where each task ran: (host, YARN
    container or '', the jar), as executors.py's Python tasks give theirs."""
    if not items:
        return []
    b = bridge()
    add_jars(sc, b.jars)
    group = job_group or f"hbase-migration-native-{kind}-{uuid.uuid4().hex[:8]}"
    run = b.call("start", sc._jsc, kind, json.dumps(spec), json.dumps(list(items)), int(slices or 0), group)
    found: dict[int, dict] = {}

    def take(result: dict) -> int:
        where = result.pop("where", None) or {}
        if places is not None and where:
            places.add((where.get("host", ""), where.get("container", ""), where.get("code", "")))
        return int(result.pop("position"))

    def drain() -> None:
        fresh = json.loads(run.poll())
        for result in fresh:
            found[take(result)] = result
        if fresh and on_done is not None:
            on_done(fresh)

    last_beat = time.monotonic()
    try:
        while not run.waitFor(int(poll_s * 1000)):
            drain()
            if on_heartbeat is not None and time.monotonic() - last_beat >= heartbeat_s:
                last_beat = time.monotonic()
                on_heartbeat()
    except BaseException:
        try:
            run.cancel()
        except Exception as e:  # the JVM may be gone with the interrupted driver
            log.warning("cancelling the native %s job failed: %s", kind, e)
        raise
    finally:
        try:
            drain()
        except Exception:  # already failing: the original error is the one to report
            pass
    failure = run.failure()
    if failure:
        raise NativeJobFailed(f"the native {kind} job failed: {failure}")
    for result in json.loads(run.results()):
        found.setdefault(take(result), result)
    missing = [i for i in range(len(items)) if i not in found]
    if missing:
        raise NativeJobFailed(f"the native {kind} job ended without the results of {len(missing)} partition(s) "
                              f"(first: #{missing[0]})")
    return [found[i] for i in range(len(items))]
