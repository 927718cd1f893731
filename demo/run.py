"""The demo migration on the embedded default: `make demo` (or `python -m demo.run`).

Starts ZooKeeper and two real HBase clusters dc1 and dc2 (realhbase: Apache HBase and HDFS from Maven Central's
jars, fetched on first use; `--stand-in` runs on minihbase, the project's fast stand-in, instead), creates and
loads sample tables on dc1 (several
multi-region tables whose families keep 1, 2 or 3 versions, rows written with several versions at old
timestamps), keeps a writer doing puts, new versions, old-timestamp puts, row, column and single-version deletes
on dc1 throughout, runs the `hbase_table_migration` DAG through `airflow dags test`, stops the writer once the
catch-up has drained, waits for the last edits to ship, compares every version of every column of both sides
independently (a plain Thrift2 client of HBase's IDL, no toolkit code), prints a JSON summary on its last line,
and stops everything it started. `--data-path thrift1` gives the toolkit Thrift1-only connections (the
fallback for clusters without `hbase thrift2`).

With `--secure` (`make demo-secure`) the clusters are secured (`realhbase up --secure`; with `--stand-in`
minihbase's `up --secure`): a real KDC with two realms and a trust, a SASL ZooKeeper, Kerberized HDFS, dc1's
gateways with SASL GSSAPI and QOP auth-conf, dc2's in HTTP mode with SPNEGO over TLS, SPNEGO on every /jmx and
WebHDFS, a shell that needs a ticket. The toolkit authenticates with the connections' security extras; the
demo's own writer and comparison authenticate as each realm's hbase admin without toolkit code (demo/secure.py).
The summary's `security` section says how each channel authenticated: the toolkit's connections, what its
preflight found at every endpoint, and the comparison client.

With `--spark yarn` (or `yarn-client`) the DAG's Spark jobs (copy, snapshot export, verify) are submitted to the
test bed's YARN (`realhbase up --yarn`: a ResourceManager and a NodeManager beside dc2's HDFS) in cluster mode (the
driver in a YARN container too) or client mode: the DAG's Spark connection (`spark_default`) is then the bed's
`spark_yarn` (`spark_yarn_client`) connection, and spark-submit reads the bed's HADOOP_CONF_DIR and SPARK_CONF_DIR.
The summary names each job's YARN application and the containers its driver and executors ran in.
With `--secure` too (real HBase: `realhbase up --secure --yarn`) that YARN is Kerberized: the connection's extras
`principal` and `keytab_path` are spark-submit's --principal/--keytab (hbase-migration@DC1.TEST; the HDFS
delegation tokens of dc2's NameNode go to the containers), the jobs log in to HBase, HDFS and ZooKeeper from the
keytab shipped with them, and the operators follow each cluster-mode application through the ResourceManager's
REST API with SPNEGO; the summary's `spark.kerberos` names the principals.

With `--cluster` (`make demo-cluster`) the same migration runs as production runs it (`deploy/`): Airflow's
API server, scheduler, DAG processor, triggerer and Celery workers (Redis broker, PostgreSQL metadata database
and ledger), a Spark standalone cluster (a master, two workers), the run triggered through the REST API. The
summary has the same keys plus `deployment`: which Celery worker ran each mapped task, the states of
`wait_drained` (deferred: served by the triggerer) and each Spark application's executors.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


SPARK_MODES = {"local": None, "yarn": ("spark_yarn", "cluster"), "yarn-client": ("spark_yarn_client", "client")}


class UsageError(ValueError):
    """Bad input to the demo, found before it changed anything (exit 2, one line)."""


def log(msg: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def shell(endpoint: dict, statements: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(endpoint["shell_command"], input="\n".join(statements) + "\n", capture_output=True,
                          text=True, cwd=REPO, env=None if env is None else {**os.environ, **env})
    if proc.returncode != 0:
        raise RuntimeError(f"shell on {endpoint['name']} failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return proc.stdout


def create_source_tables(endpoint: dict, tables, env: dict[str, str] | None = None,
                         kept_in_memstores: Sequence[str] = ()) -> None:
    """The demo's tables on dc1. `kept_in_memstores`: tables whose regions never flush by age (HBase's periodic
    flush of an edit older than `hbase.regionserver.optionalcacheflushinterval`, the bed's 5 minutes, off for
    them), so that in a run where other tables are flushed to go by snapshot, `initial_copy` auto still finds no
    store file of theirs and copies them by scan, however slowly a loaded machine reaches preflight."""
    from hbase_migration.migration.schema import (
        ruby_string,  # the demo's set-up may use the toolkit; the check does not
    )

    statements = []
    for t in tables:
        fams = ", ".join(f"{{NAME => '{f}', VERSIONS => {o.get('max_versions', 1)}, REPLICATION_SCOPE => 1}}"
                         for f, o in t.families.items())
        splits = ", ".join(ruby_string(k) for k in t.split_keys)
        conf = (", CONFIGURATION => {'hbase.regionserver.optionalcacheflushinterval' => '0'}"
                if t.name in kept_in_memstores else "")
        statements.append(f"create '{t.name}', {fams}, SPLITS => [{splits}]{conf}")
    shell(endpoint, statements, env)


def toolkit_connection(endpoint: dict, data_path: str) -> str:
    """The cluster's Airflow connection for the toolkit: with its Thrift2 gateways, or Thrift1 only; `auto`: the
    connection's default (native where the region servers answer HBase RPC, else Thrift2)."""
    conn = json.loads(json.dumps(endpoint["connection"]))
    if data_path == "thrift1":
        conn["extra"].pop("thrift2_servers", None)
    if data_path in ("native", "thrift2"):  # native: copy and verify with HBase's own client, small reads Thrift2
        conn["extra"]["data_path"] = data_path
    return json.dumps(conn)


def store_files_reported(endpoint: dict, tables: Sequence[str], data_path: str, timeout_s: float = 180.0) -> None:
    """Wait until dc1's region servers report store files for every table in `tables`: the sizing that
    initial_copy auto decides by reads the regions' /jmx metrics, which HBase refreshes every 45 s
    (MetricsRegionWrapperImpl), so a table flushed just now still shows 0 bytes there and would go by scan."""
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.migration.region_metrics import fetch_region_metrics

    cluster = cluster_from_text("dc1", toolkit_connection(endpoint, data_path))
    deadline, sizes = time.monotonic() + timeout_s, {}
    while time.monotonic() < deadline:
        metrics, _errors = fetch_region_metrics(cluster, list(tables))
        sizes = {t: sum(m.store_file_size for m in metrics if m.table == t) for t in tables}
        if all(sizes.values()):
            log(f"store files reported by dc1's region servers: {sizes}")
            return
        time.sleep(2)
    raise RuntimeError(f"dc1's region servers reported no store files for {sizes} within {timeout_s:.0f} s of the "
                       "flush: initial_copy auto would copy them by scan")


def admin_login(endpoints: dict, name: str) -> tuple[str, str] | None:
    """(principal, keytab) of the cluster's hbase admin on a secured cluster (`endpoints --json` names every
    principal's keytab); None on an open one."""
    cluster = endpoints["clusters"][name]
    realm = (cluster.get("security") or {}).get("realm")
    if not realm:
        return None
    principal = f"hbase@{realm}"
    return principal, endpoints["security"]["keytabs"][principal]


SECURITY_CHECKS = re.compile(r"\[(ok  |FAIL|warn)\] ((?:source|target)_(?:kerberos_login|authentication|thrift_qop)"
                             r"|clock_skew|krb5_conf): (.*?)(?:\s+\[[\w.]+\]\s+loc=\S+)?$")


def security_summary(endpoints: dict, conns: dict[str, str], logins: dict, dag_log: Path | None) -> dict[str, Any]:
    """How each channel authenticated: the toolkit's connections (as it reads them), what its preflight found at
    every endpoint (from the run's log), and the demo's own comparison client."""
    from demo import secure
    from hbase_migration.clusters.cluster import Cluster

    toolkit = {}
    for conn_id, text in conns.items():
        conn = json.loads(text)
        toolkit[conn_id] = Cluster.from_connection(conn_id, conn["host"], conn["port"], conn["extra"]).describe()[
            "security"]
    checks = {}
    if dag_log is not None and dag_log.exists():
        for line in dag_log.read_text(errors="replace").splitlines():
            m = SECURITY_CHECKS.search(line)
            if m:
                checks[m.group(2)] = ("ok: " if m.group(1) == "ok  " else f"{m.group(1).strip()}: ") + m.group(3)
    client = {name: secure.describe(endpoints["clusters"][name]["connection"]["extra"], login[0])
              for name, login in logins.items() if login}
    return {"toolkit": toolkit, "preflight": checks, "comparison_client": client,
            "kdc": {k: endpoints["security"].get(k) for k in ("realms", "kdc", "cross_realm_trust",
                                                               "ticket_lifetime_s")}}


def spark_settings(spark: str, cores: int, described: dict) -> tuple[dict[str, str], dict[str, Any]]:
    """The environment `airflow dags test` needs for the DAG's Spark connection (`spark_default`) and what the
    summary says of it. `local`: local[cores]. `yarn` / `yarn-client`: the bed's `spark_yarn` / `spark_yarn_client`
    connection, HADOOP_CONF_DIR and SPARK_CONF_DIR (`endpoints --json`'s `yarn`); UsageError when the bed runs no
    YARN."""
    if SPARK_MODES.get(spark) is None:
        master = f"local[{cores}]"
        return ({"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": master})},
                {"mode": "local", "master": master})
    conn_id, deploy_mode = SPARK_MODES[spark]
    yarn = described.get("yarn") or {}
    if not (yarn.get("resourcemanager", {}).get("alive") and yarn.get("nodemanager", {}).get("alive")):
        raise UsageError(f"--spark {spark}: the test bed runs no YARN (ResourceManager alive: "
                         f"{yarn.get('resourcemanager', {}).get('alive')}, NodeManager alive: "
                         f"{yarn.get('nodemanager', {}).get('alive')}): add it with `python -m realhbase up --yarn "
                         "--workdir W` (it joins clusters already up), or leave --testbed out")
    conn = yarn["connections"][conn_id]
    summary = {"mode": "yarn", "deploy_mode": deploy_mode, "connection": conn_id,
               "resourcemanager": yarn["resourcemanager"]["web_ui"]}
    if yarn.get("security"):  # a Kerberized YARN: spark-submit logs in from the connection's principal/keytab_path
        extra = conn.get("extra") or {}
        extra = json.loads(extra) if isinstance(extra, str) else extra
        summary["kerberos"] = {"principal": extra.get("principal"),
                               "yarn_spnego_principal": extra.get("yarn_spnego_principal")}
    return ({"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(conn),
             "HADOOP_CONF_DIR": yarn["hadoop_conf_dir"], "SPARK_CONF_DIR": yarn["spark_conf_dir"]}, summary)


def job_spark(phase: dict | None) -> dict[str, Any] | None:
    """Where a job of a table's phase ran (its summary's `spark`: application, driver's and executors'
    containers), as the ledger keeps it in the phase's detail; None: no Spark job, or no summary."""
    try:
        return json.loads((phase or {}).get("detail") or "{}").get("spark")
    except ValueError:
        return None


def job_detail(phase: dict | None) -> dict[str, Any]:
    """A table's phase's job summary as the ledger keeps it ({} when there is none)."""
    try:
        return json.loads((phase or {}).get("detail") or "{}")
    except ValueError:
        return {}


def wait_for_catch_up(ledger_url: str, run_id_prefix: str, timeout_s: float,
                      dag: subprocess.Popen) -> float | None:
    """Poll the run ledger until the migration's catch-up phase has succeeded; its end time (epoch s).
    None when the run failed or ended first."""
    from hbase_migration.ledger.store import Ledger

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and dag.poll() is None:
        try:
            with Ledger.open(ledger_url) as ledger:
                for run in ledger.recent_runs(5):
                    if not run["run_id"].startswith(run_id_prefix):
                        continue
                    phase = ledger.run_summary(run["run_id"])["phases"].get("*", {}).get("catch_up")
                    if phase and phase.get("status") == "success":
                        return phase.get("ended_ms", 0) / 1000.0
                    if run.get("status") == "failed":
                        return None
        except Exception:  # the ledger may not exist yet
            pass
        time.sleep(2)
    return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    from demo.backends import TestBed
    from demo.workload import LiveWriter, Thrift2, chosen_tables, compare, load

    spark_mode = getattr(args, "spark", None) or "local"
    check_spark(spark_mode, bool(getattr(args, "cluster", False)),
                bool(getattr(args, "stand_in", False)) or getattr(args, "real", True) is False,
                bool(getattr(args, "secure", False)))
    if args.data_path == "native" and (getattr(args, "stand_in", False) or getattr(args, "real", True) is False):
        raise UsageError("--data-path native cannot go with --stand-in: minihbase speaks no HBase RPC (HBase's own "
                         "client reaches real region servers only)")
    on_yarn = SPARK_MODES[spark_mode] is not None
    workdir = Path(args.workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    started = time.monotonic()
    # `real=False` (the tests' spelling of --stand-in) keeps minihbase's clusters, secured or not.
    stand_in = bool(getattr(args, "stand_in", False)) or getattr(args, "real", True) is False
    backend = "minihbase" if stand_in else "realhbase"
    testbed_dir = getattr(args, "testbed", None)
    peer_id = getattr(args, "peer_id", None) or "demo"
    cluster_mode = bool(getattr(args, "cluster", False))
    extra: dict[str, Any] = {}
    from demo.cluster import clusters_toml, gateway_settings

    gateways = gateway_settings() if cluster_mode and backend == "minihbase" else {}
    if cluster_mode:
        extra["gateways"] = gateways or "one Thrift1 and one Thrift2 gateway per cluster"
    # On a ZooKeeper shared with other runs (the tests'), znode parents of this run's own: a peer an earlier
    # run left would otherwise be found by this one's add_peer.
    config = clusters_toml(workdir, gateways, unique_parents=bool(args.zookeeper)) if backend == "minihbase" else None
    secured = bool(getattr(args, "secure", False))
    bed = TestBed(backend, Path(testbed_dir) if testbed_dir else workdir / backend, zookeeper=args.zookeeper,
                  config=config, secure=secured, reuse=bool(testbed_dir), yarn=on_yarn)
    log(f"{'using the running' if testbed_dir else 'starting ZooKeeper and'} {backend} dc1/dc2 in {bed.workdir}"
        + (" (secured: KDC, SASL, SPNEGO, TLS)" if secured else "")
        + (" with YARN beside dc2" if on_yarn else "")
        + (" (the first run resolves HBase's jars with Maven)" if backend == "realhbase" and not testbed_dir else ""))
    bed.up()
    writer = None
    own_deployment = None
    try:
        described = bed.described()
        spark_env, spark_summary = spark_settings(spark_mode, args.cores, described)  # before any change
        endpoints = described["clusters"]
        dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
        logins = {name: admin_login(described, name) for name in ("dc1", "dc2")} if secured else {}
        shell_env = None
        if secured:
            from demo.secure import kinit_env

            os.environ["KRB5_CONFIG"] = described["security"]["krb5_conf"]  # the demo's own Kerberos clients
            shell_env = kinit_env(*logins["dc1"], described["security"].get("krb5_conf"), workdir / "tickets")
        tables = chosen_tables(args.rows, getattr(args, "table_prefix", None) or "", getattr(args, "tables", None))
        by_snapshot = [t.name for t in tables if t.name.removeprefix(getattr(args, "table_prefix", None) or "")
                       in (getattr(args, "snapshot", None) or ())]
        log(f"creating {len(tables)} tables on dc1 and loading {sum(t.rows for t in tables)} rows")
        create_source_tables(dc1, tables, shell_env,
                             kept_in_memstores=[t.name for t in tables if t.name not in by_snapshot] if by_snapshot
                             else ())
        client = Thrift2(dc1, login=logins.get("dc1"))
        for t in tables:
            load(client, t)
        client.close()
        if by_snapshot:  # their store files then reach the threshold of 1 byte; the others' rows stay in memstores
            log(f"flushing {', '.join(by_snapshot)} on dc1: initial_copy auto copies it by snapshot, the others by "
                "scan")
            shell(dc1, [f"flush '{name}'" for name in by_snapshot], shell_env)
            store_files_reported(dc1, by_snapshot, args.data_path)
        ledger_url = f"sqlite:///{workdir / 'ledger.db'}"
        env = {**os.environ,
               "AIRFLOW_HOME": str(REPO), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
               "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # spark-submit, airflow
               "AIRFLOW_CONN_HBASE_SOURCE": toolkit_connection(dc1, args.data_path),
               "AIRFLOW_CONN_HBASE_TARGET": toolkit_connection(dc2, args.data_path),
               "AIRFLOW__HBASE_MIGRATION__LEDGER_URL": ledger_url, **spark_env}
        if on_yarn:  # the nodes' Python is spark-defaults.conf's spark.pyspark.python
            env.pop("PYSPARK_PYTHON", None)
            log(f"Spark jobs go to YARN ({spark_summary['deploy_mode']} mode): ResourceManager "
                f"{spark_summary['resourcemanager']}, HADOOP_CONF_DIR {env['HADOOP_CONF_DIR']}")
        from deploy import spark_jvm

        if on_yarn:
            # HADOOP_CONF_DIR joins the class path, which voids the class archive; -Xmx: spark-submit's own heap in
            # cluster mode (in client mode the launcher's -Xmx of spark.driver.memory comes after it and wins)
            # A Kerberized YARN: spark-submit's JVM reads the bed's krb5.conf (an operator's host: /etc/krb5.conf)
            # and logs in from the connection's keytab, not from a ticket cache of the demo's
            krb5 = ((described.get("yarn") or {}).get("security") or {}).get("krb5_conf")
            env["SPARK_SUBMIT_OPTS"] = " ".join([*spark_jvm.FLAGS, "-Xmx256m",
                                                 *([f"-Djava.security.krb5.conf={krb5}"] if krb5 else [])])
            if krb5:
                env.pop("KRB5CCNAME", None)
        spark_jvm.with_submit_opts(env)  # the demo's short jobs: a quicker driver JVM
        deleted_before = []
        if getattr(args, "pre_t0_deletes", 0):
            from demo.workload import delete_rows

            client = Thrift2(dc1, login=logins.get("dc1"))
            deleted_before = delete_rows(client, tables, args.pre_t0_deletes)
            client.close()
            log(f"deleted {len(deleted_before)} rows before T0; the writer puts to them at older timestamps")
        writer = LiveWriter(lambda: Thrift2(dc1, login=logins.get("dc1")), tables,
                            ops_per_second=args.write_rate, deleted_before=deleted_before).start()
        log(f"live writer started ({args.write_rate:.0f} ops/s: puts, new versions, old-timestamp puts, row, "
            "column and single-version deletes)")
        conf = {"tables": [t.name for t in tables], "peer_id": peer_id, "expected_copy_s": 600,
                # the beds do not replicate bulk loads (hbase.replication.bulkload.enabled) and none are made
                "bulk_loads": "none", "recompare_sleep_s": 5, "stable_samples": 3, "max_lag_ms": 30_000, "canary": True,
                # HBase's version retention can leave an extra old version on the target (docs/data-path.md
                # "Versions"): verify names it, and repairs it (exact-version deletes) only because the demo asks.
                # (the native path copies the delete markers and verifies raw: it has no repair)
                "repair": args.repair and args.data_path != "native"}
        if by_snapshot:
            conf.update(initial_copy="auto", snapshot_threshold_bytes=1)
        if cluster_mode:  # each table a batch of its own, side by side: the Celery workers share the copies
            conf.update(batches=[t.name for t in tables], batches_at_once=len(tables))
        run_id = None
        if cluster_mode:
            from demo.cluster import evidence, run_on_deployment

            dep = getattr(args, "deployment", None)
            if dep is None:
                from deploy import Deployment

                log(f"starting the deployment in {workdir / 'deploy'}: PostgreSQL, Redis, a Spark master and "
                    f"{args.spark_workers} workers, Airflow with {args.celery_workers} Celery workers")
                dep = own_deployment = Deployment.start(workdir / "deploy", spark_workers=args.spark_workers,
                                                        celery_workers=args.celery_workers)
                log(f"deployment up in {sum(dep.timings.values()):.0f}s: API {dep.airflow.api_url}, Spark master "
                    f"UI {dep.spark.master_ui_url}")
            ledger_url = dep.ledger_url
            spark_summary = {"mode": "standalone", "master": dep.spark.master_url}
            stopped: dict[str, Any] = {}

            def caught_up() -> None:
                stopped["stats"] = writer.stop()
                log(f"catch-up drained; writer stopped after {stopped['stats'].as_dict()}")

            outcome = run_on_deployment(dep, conf, json.loads(toolkit_connection(dc1, args.data_path)),
                                        json.loads(toolkit_connection(dc2, args.data_path)), caught_up,
                                        args.timeout_s, log)
            stats = stopped["stats"]
            run_id = outcome["run_id"]
            rc = 0 if outcome["state"] == "success" else 1
            log(f"run {run_id} ended {outcome['state']}")
            extra["deployment"] = evidence(dep, outcome)
        else:
            dag_log = workdir / "dags-test.log"
            log(f"running hbase_table_migration with `airflow dags test` (log: {dag_log})")
            with open(dag_log, "w") as out:
                dag = subprocess.Popen([str(Path(PY).parent / "airflow"), "dags", "test", "hbase_table_migration",
                                        "-c", json.dumps(conf)], cwd=REPO, env=env, stdout=out,
                                       stderr=subprocess.STDOUT)
                wait_for_catch_up(ledger_url, "manual__", args.timeout_s, dag)
                stats = writer.stop()
                log(f"catch-up drained; writer stopped after {stats.as_dict()}")
                rc = dag.wait(timeout=args.timeout_s)
            log(f"airflow dags test exited {rc}")
        log("waiting for the last edits to ship, then comparing every row of both sides")
        if rc == 0:
            subprocess.run([PY, "-m", "hbase_migration", "lag", "--source", "hbase_source", "--peer-id", peer_id,
                            "--watch", "--interval-s", "2", "--watch-timeout-s", "300", "--json"], env=env,
                           cwd=REPO, capture_output=True)
        src, dst = Thrift2(dc1, login=logins.get("dc1")), Thrift2(dc2, login=logins.get("dc2"))
        from hbase_migration.ledger.store import Ledger

        with Ledger.open(ledger_url) as ledger:
            run_id = run_id or next(r["run_id"] for r in ledger.recent_runs(5)
                                    if r["dag_id"] == "hbase_table_migration")
            summary = ledger.run_summary(run_id)
            initial = ledger.initial_copy_summary(run_id)
        catch_up = summary["phases"].get("*", {}).get("catch_up") or {}
        per_table = {}
        for t in tables:
            cmp = compare(src, dst, t.name)
            copied = summary["copy"]["tables"].get(t.name, {})
            verified = summary["verification"].get(t.name, [])
            copy_phase = summary["phases"].get(t.name, {}).get("copy") or {}
            verify_detail = json.loads((summary["phases"].get(t.name, {}).get("verify") or {}).get("detail") or "{}")
            per_table[t.name] = {
                "initial_copy": (initial["methods"].get(t.name) or {}).get("method", "scan"),
                "snapshot_export": initial["exports"].get(t.name),
                "rows_copied": copied.get("rows"),
                "cells_copied": copied.get("cells"),
                "copy_s": round((copy_phase.get("duration_ms") or 0) / 1000, 1),
                # enable_peer -> wait_drained: the backlog kept since T0, shipped until drained (all tables share it)
                "catch_up_s": round((catch_up.get("duration_ms") or 0) / 1000, 1) if catch_up else None,
                # a repair that read back equal records the table as it left it (clean): its report says it repaired
                "verification": ("repaired" if verified and (verify_detail.get("repair") or {}).get("rows_repaired")
                                 else "clean" if verified and verified[-1].get("clean") else
                                 "repaired" if verify_detail.get("repair") and verified else
                                 "differences" if verified else "not run"),
                "versions_found_different": verify_detail.get("differing_versions_sample", []),
                "repair": verify_detail.get("repair"),
                # the Spark application of each job and where its driver and executors ran (YARN: containers)
                "spark": {"copy": job_spark(copy_phase),
                          "verify": job_spark(summary["phases"].get(t.name, {}).get("verify"))},
                "independent_comparison": cmp.as_dict(),
                # the data path each job ran on, and the delete markers the copy carried (native: raw)
                "data_paths": {"copy": job_detail(copy_phase).get("data_path"),
                               "verify": verify_detail.get("data_path")},
                "delete_markers_copied": job_detail(copy_phase).get("delete_markers"),
            }
        src.close()
        dst.close()
        return {"demo": "hbase_table_migration", "backend": backend, "hbase_version": bed.version(dc1),
                "data_path": args.data_path, "dag_exit_code": rc, "run_id": run_id,
                "deleted_before_t0": [[t, r.decode("latin-1")] for t, r, _f, _ms in deleted_before],
                "run_status": summary["run"].get("status"), "writer": stats.as_dict(), "spark": spark_summary,
                # what the catch-up sensor saw, poll by poll, as the ledger recorded it
                "catch_up": {"lag_samples": summary["lag"]["samples"],
                             "max_age_of_last_shipped_op_ms": summary["lag"]["max_age_of_last_shipped_op_ms"],
                             "max_size_of_log_queue": summary["lag"]["max_size_of_log_queue"]},
                "wall_time_s": round(time.monotonic() - started, 1), "tables": per_table,
                "differences": sum(v["independent_comparison"]["differences"] for v in per_table.values()),
                **({"security": security_summary(
                    described, {"hbase_source": env["AIRFLOW_CONN_HBASE_SOURCE"],
                                "hbase_target": env["AIRFLOW_CONN_HBASE_TARGET"]}, logins,
                    None if cluster_mode else workdir / "dags-test.log")} if secured else {}),
                **extra}
    finally:
        if writer is not None:
            writer.stop()
        if own_deployment is not None:
            log("stopping the deployment")
            own_deployment.stop()
        if not testbed_dir:
            log(f"stopping {backend} and ZooKeeper")
        bed.down()


def check_spark(spark: str, cluster: bool, stand_in: bool, secure: bool) -> None:
    """UsageError when `--spark` cannot go with the other options."""
    if spark not in SPARK_MODES:
        raise UsageError(f"--spark {spark!r}: choose one of {', '.join(SPARK_MODES)}")
    if SPARK_MODES[spark] is None:
        return
    # --secure goes with it on real HBase: `realhbase up --secure --yarn` runs a Kerberized YARN beside dc2
    clash = ("--cluster (its Spark is the deployment's standalone cluster)" if cluster else
             "--stand-in (minihbase runs no YARN)" if stand_in else None)
    if clash:
        raise UsageError(f"--spark {spark} cannot go with {clash}")


def main(argv: list[str] | None = None) -> int:
    from demo.workload import table_names

    p = argparse.ArgumentParser(prog="python -m demo.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows loaded in all (default 100000)")
    p.add_argument("--write-rate", type=float, default=100.0, help="live writer ops/s")
    p.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    p.add_argument("--timeout-s", type=float, default=3600.0)
    p.add_argument("--workdir", help="default: .state/demo (.state/demo-cluster with --cluster)")
    p.add_argument("--zookeeper", help="use this ZooKeeper (HOST:PORT) instead of starting one")
    p.add_argument("--repair", action=argparse.BooleanOptionalAction, default=True,
                   help="let the migration's verify repair what still differs after its re-compare (default on)")
    p.add_argument("--pre-t0-deletes", type=int, default=0,
                   help="delete this many rows of each table before T0; the writer then puts to them at older "
                        "timestamps (masked on the source: the interplay the native path's raw copy removes)")
    p.add_argument("--data-path", choices=("thrift2", "thrift1", "native", "auto"), default="thrift2",
                   help="how the toolkit reaches the clusters: their Thrift2 gateways (default), Thrift1 only, "
                        "native: copy and verify with HBase's own client in Spark's JVMs (real HBase only), or auto "
                        "(the connections' default: native where the region servers answer HBase RPC)")
    p.add_argument("--stand-in", action="store_true",
                   help="run on minihbase, the project's fast stand-in, instead of real HBase (realhbase)")
    p.add_argument("--testbed", help="the workdir of a realhbase test bed that is already up: use it, do not stop "
                                     "it (give --table-prefix and --peer-id of this run's own)")
    p.add_argument("--table-prefix", default="", help="prefix of the demo's table names (default none)")
    p.add_argument("--tables", type=table_names, metavar="NAME,...",
                   help="only these of the demo's tables (users, orders, events; default all three)")
    p.add_argument("--peer-id", default="demo", help="the migration's replication peer (default demo)")
    p.add_argument("--snapshot", type=table_names, metavar="NAME,...",
                   help="copy these tables by snapshot (exported over WebHDFS, cloned on dc2) and the others by "
                        "scan, in one run: initial_copy auto, the demo flushing these after loading (real HBase)")
    p.add_argument("--secure", action="store_true",
                   help="secured clusters (realhbase up --secure; with --stand-in minihbase's): Kerberos in two "
                        "realms, SASL, SPNEGO, TLS")
    p.add_argument("--cluster", action="store_true",
                   help="run on the production-shaped deployment (Celery workers, Spark standalone; see deploy/)")
    p.add_argument("--spark", choices=tuple(SPARK_MODES), default="local",
                   help="where the DAG's Spark jobs run: local[--cores] (default); yarn: the test bed's YARN in "
                        "cluster mode (realhbase up --yarn; with --testbed, a bed whose YARN is up), yarn-client: "
                        "the same in client mode; with --secure a Kerberized YARN (realhbase up --secure --yarn)")
    p.add_argument("--spark-workers", type=int, default=2, help="--cluster: Spark standalone workers (1 core each)")
    p.add_argument("--celery-workers", type=int, default=2, help="--cluster: Celery workers")
    args = p.parse_args(argv)
    args.workdir = args.workdir or str(REPO / ".state" / ("demo-cluster" if args.cluster else
                                                          "demo-secure" if args.secure else "demo"))
    try:
        result = run(args)
    except UsageError as e:
        print(f"demo.run: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, sort_keys=True), flush=True)
    ok = result["dag_exit_code"] == 0 and result["run_status"] == "success" and result["differences"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
