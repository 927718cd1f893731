"""The copy and verify Spark jobs, submitted with SparkSubmitOperator.

The operators add what the migration needs around a plain spark-submit: the clusters in their wire form passed to
the job (addresses, principals and file paths; no secret lives in an HBase connection), for Kerberized clusters
their keytab and krb5.conf shipped with the job (`--files`), the toolkit's code shipped with it (`--py-files`: one
zip of `hbase_migration`, its `jobs` and the ledger's SQL, so a driver in a YARN container imports nothing from the
worker's installation), the ledger for resume and results, the job's JSON summary returned as XCom (the driver keeps
it in the ledger under a key this task chose: it reaches the task from a driver in any container; the ledger's URL,
which may hold its database's password, goes in a file only its owner can read, shipped with `--files` and named on
the command line, never the URL itself), and, for the copy, the library's oldWALs watchdog that samples the source's
quota while the job runs and applies the quota policy on a breach.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Sequence

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException, TaskDeferred

from hbase_migration import jobs
from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK
from hbase_migration.operators.hooks import HBaseClusterHook

# The spark-submit targets, found through the package: site-packages' hbase_migration/jobs/ in an installed
# distribution, the checkout's jobs/ under an editable install.
JOBS = Path(jobs.__file__).resolve().parent
COPY_JOB = str(JOBS / "copy_table.py")
VERIFY_JOB = str(JOBS / "verify_table.py")

_COMMON_PARAMS = """
    :param table: the source table.
    :param source_conn_id: the source cluster's Airflow connection.
    :param target_conn_id: the target cluster's Airflow connection.
    :param target_table: the table on the target (default: the source table's name).
    :param start_time_ms: only cells with timestamp >= this (ms since the epoch); None: from the first.
    :param end_time_ms: only cells with timestamp < this; None: everything (verify too: future timestamps
        included).
    :param families: families to cover, CopyTable style (`cf1`, `src:dst` renames); None: every family.
    :param versions: versions per column: None (every version each family keeps), or the newest N.
    :param ledger_run_id: the run whose ledger records the phase, the partitions and the results (None: none).
    :param spark_conn_id: the Spark connection (master, deploy mode, ...) the job is submitted to.
"""


def cluster_json(conn_id: str) -> str:
    """The cluster behind a connection in its wire form, as the jobs take it (`--source '{...}'`). Built and
    validated here, so a bad connection fails before spark-submit starts. No secret lives in it."""
    return json.dumps(HBaseClusterHook(conn_id).get_cluster().to_dict(), sort_keys=True)


def _second_name(path: str, dest: str) -> str:
    """`path` under the name `dest` (in a private temporary folder): a hard link (the same file, no copy of what it
    holds), or where the two are on different file systems a copy readable by its owner only (mode 0600)."""
    try:
        os.link(path, dest)
    except OSError:
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
            out.write(src.read())
    return dest


class _HBaseJobOperator(SparkSubmitOperator):
    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "source_conn_id", "target_conn_id",
                                      "table", "target_table", "start_time_ms", "end_time_ms", "versions",
                                      "families", "ledger_run_id")

    def __init__(self, *, table: str, source_conn_id: str = "hbase_source", target_conn_id: str = "hbase_target",
                 target_table: str | None = None, start_time_ms: int | None = None, end_time_ms: int | None = None,
                 versions: int | None = None, families: Sequence[str] | str | None = None,
                 ledger_run_id: str | None = None, spark_conn_id: str = "spark_default", deferrable: bool = True,
                 **kwargs) -> None:
        # in a mapped task group `table` is the group's argument, known when the task runs (`_run` names the job)
        kwargs.setdefault("name", f"{self.job_kind}-{table}" if isinstance(table, str) else self.job_kind)
        super().__init__(application=self.application_path, conn_id=spark_conn_id, **kwargs)
        self.deferrable = deferrable
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.table = table
        self.target_table = target_table
        self.start_time_ms = start_time_ms
        self.end_time_ms = end_time_ms
        self.versions = versions
        self.families = families
        self.ledger_run_id = ledger_run_id

    job_kind = ""
    application_path = ""
    _breach: str | None = None  # a quota breach the watchdog reported (the copy's)
    # `data_path: auto` resolved once per task (`_clusters`); the snapshot export reads no cells through it
    resolves_data_path = True
    _pair: tuple[Any, Any] | None = None
    _data_path_why: str | None = None
    # spark.yarn.maxAppAttempts on YARN (None: YARN's yarn.resourcemanager.am.max-attempts, 2 by default). A second
    # attempt starts when the first one's driver exits non-zero or its container is lost (cluster mode: the driver
    # runs in the application master's container), and runs the job again from its start.
    yarn_max_app_attempts: int | None = None

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        """The job's argv; `summary` holds `summary_ledger_url_file` (the name of the shipped file holding the
        ledger's URL, for the job's own ledger too) and `summary_key` for the argv builder."""
        raise NotImplementedError

    def _repairs(self) -> bool:
        """Whether the job repairs (the native path has no repair: `auto` then stays on Thrift)."""
        return False

    def _clusters(self) -> tuple[Any, Any]:
        """The source and target as this task's jobs get them: `data_path: auto` resolved once, here, before
        spark-submit (hbase_migration/data/datapath/auto.py), and said in one log line. The probe runs on this
        worker: where the driver runs in client mode; in cluster mode the driver's container is not known before
        the submission, so this worker stands in for it (and neither mode probes from the executors' hosts)."""
        if self._pair is None:
            source = HBaseClusterHook(self.source_conn_id).get_cluster()
            target = HBaseClusterHook(self.target_conn_id).get_cluster()
            if self.resolves_data_path:
                import socket

                from hbase_migration.data.datapath.auto import resolve

                where = f"the Airflow worker {socket.gethostname()}"
                if self._spark_target()[1] == "cluster":
                    where += " (Spark cluster mode: the driver's container could not be probed before submission)"
                resolved_source, resolved_target, choice = resolve(source, target, repair=self._repairs(),
                                                                   where=where)
                if choice is not None:
                    self.log.info("%s", choice.line(source, target))
                    self._data_path_why = choice.reason
                source, target = resolved_source, resolved_target
            self._pair = (source, target)
        return self._pair

    def _wire_pair(self) -> tuple[str, str]:
        """Both clusters' wire form (`cluster_json`'s), `auto` resolved."""
        return tuple(json.dumps(c.to_dict(), sort_keys=True) for c in self._clusters())  # type: ignore[return-value]

    def _spark_target(self) -> tuple[str, str | None, dict[str, Any]]:
        """(master, deploy mode, extra) the Spark connection names, read as SparkSubmitHook reads them ('' when the
        connection cannot be read: the hook then reports it itself)."""
        from airflow.sdk import BaseHook

        try:
            conn = BaseHook.get_connection(self._conn_id)
        except Exception:
            return "", self._deploy_mode, {}
        if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
            master = conn.host
        else:
            master = f"{conn.conn_type}://{conn.host or ''}"
        extra = conn.extra_dejson or {}
        return master, self._deploy_mode or extra.get("deploy-mode"), extra

    def _spark_kerberos(self, tmp: str, extra: dict[str, Any], deploy_mode: str | None) -> None:
        """A Kerberized YARN: spark-submit logs in as `principal` from `keytab` (--principal/--keytab: the operator's
        own, else the Spark connection's extras `principal` and `keytab_path`; the provider's extra `keytab` is a
        keytab's base64 content and stays the provider's business) and obtains the HDFS delegation tokens the
        application's containers use; in cluster mode YARN's AM gets the keytab to log in again.

        Checked before anything is submitted: both given, the keytab holds the principal (else a clear refusal,
        not spark-submit's "Unable to obtain password from user"). Spark refuses to ship one file twice: in
        cluster mode the keytab goes to the AM only, and a connection's keytab of the same path in `--files` is
        refused ("Attempt to add ... multiple times to the distributed cache", a symbolic link included: Spark
        resolves it), so spark-submit then gets the keytab under a second name in the task's temporary folder
        (`_second_name`: a hard link, else a private copy, removed with the folder after the job).
        Cluster mode followed through the ResourceManager's REST API: SPNEGO as that principal (the extra
        `yarn_spnego_principal`, HTTP/_HOST@REALM), through the toolkit's one SPNEGO client."""
        from hbase_migration.clusters.kerberos import KerberosError, KeytabLogin

        principal = self.principal or extra.get("principal")
        keytab = self.keytab or extra.get("keytab_path")
        if not principal and not keytab:
            return
        if not (principal and keytab):
            if principal and extra.get("keytab"):  # the provider's base64 keytab: it writes and passes it itself
                return
            raise AirflowFailException(
                f"Spark on a Kerberized YARN: both a principal and a keytab are needed (got principal "
                f"{principal!r}, keytab {keytab!r}): set the operator's principal/keytab or the Spark "
                f"connection {self._conn_id!r}'s extras principal and keytab_path")
        try:
            KeytabLogin(principal, keytab).check_keytab()
        except KerberosError as e:
            raise AirflowFailException(f"Spark on a Kerberized YARN (connection {self._conn_id!r}): spark-submit "
                                       f"would not log in: {e}") from None
        name = os.path.basename(keytab)
        self.principal, self.keytab = principal, keytab
        if name in {os.path.basename(f) for f in (self.files or "").split(",") if f}:
            self.keytab = _second_name(keytab, os.path.join(tmp, f"spark-submit-{name}"))
        if deploy_mode == "cluster" and self._yarn_rm_auth is None and extra.get("yarn_spnego_principal"):
            from hbase_migration.clusters import kerberos
            from hbase_migration.clusters.security import Security
            from hbase_migration.clusters.spnego import SpnegoAuth

            krb5 = next((s.krb5_conf for s in self._kerberized() if s.krb5_conf), None)
            login = kerberos.login(Security(principal=principal, keytab=keytab, krb5_conf=krb5), "spark")
            self._yarn_rm_auth = SpnegoAuth(login, extra["yarn_spnego_principal"])

    def _kerberized(self) -> list[Any]:
        """The Kerberized connections' security (source, target)."""
        found = []
        for conn_id in (self.source_conn_id, self.target_conn_id):
            security = HBaseClusterHook(conn_id).get_cluster().security
            if security is not None and security.kerberos:
                found.append(security)
        return found

    def _follow_yarn_application(self, deploy_mode: str | None) -> None:
        """YARN cluster mode with the provider's durable default: spark-submit returns once the application is
        accepted and the task follows it through the ResourceManager's REST API (the Spark connection's extra
        `yarn_resourcemanager_webapp_address`); a retried task then reconnects to an application still running
        instead of submitting a second one, and reads the summary it keeps under the same key."""
        if deploy_mode == "cluster" and getattr(self, "durable", False) and not self._yarn_track_via_rm_api:
            self._yarn_track_via_rm_api = True

    def _yarn_attempts(self) -> None:
        """The job's `yarn_max_app_attempts` as spark-submit's conf, unless the operator was given one."""
        if self.yarn_max_app_attempts is not None:
            self.conf = {"spark.yarn.maxAppAttempts": str(self.yarn_max_app_attempts), **(self.conf or {})}

    def _python_env(self, on_yarn: bool) -> None:
        """The driver and local executors must run the Python that has happybase. Elsewhere than YARN this
        worker's interpreter, with the package installed in it, is the job's (local[*], a standalone cluster on
        the same hosts). On
        YARN the job runs from what it ships and `spark.pyspark.python` (spark-defaults.conf, or the operator's
        `conf`) names the nodes' interpreter: PYTHONPATH is emptied for spark-submit, because Spark's YARN client
        hands the submitting process's PYTHONPATH on to the driver's and the executors' containers, and a
        checkout or package there would hide a zip that lacks a module."""
        env = dict(self.env_vars or {})
        if on_yarn:
            env.setdefault("PYTHONPATH", "")
        else:
            if "PYSPARK_PYTHON" not in env and "PYSPARK_PYTHON" not in os.environ:
                env["PYSPARK_PYTHON"] = sys.executable
        self.env_vars = env

    def _ship_code(self, tmp: str) -> None:
        """The toolkit's code goes with the job (spark-submit --py-files): `hbase_migration` with its `jobs` (the
        spark-submit targets import them) and the ledger's SQL, zipped from this worker's installed package into
        the task's temporary folder. The driver, wherever it runs, and every executor import them from there; files the
        operator was given in `py_files` stay, after it."""
        from hbase_migration.data.executors import package_zip

        shipped = package_zip(("hbase_migration", "hbase_migration.jobs"), dest_dir=tmp)
        given = [f for f in (self.py_files or "").split(",") if f]
        self.py_files = ",".join([shipped, *given])

    def _ship_jvm(self) -> None:
        """The native data path (either cluster's `data_path` native): its jars go with the job (spark-submit
        --jars, on the driver's and the executors' class paths), so a driver in a YARN container, far from this
        worker's installation, finds them there too (hbase_migration/data/datapath/native.py `bridge`)."""
        clusters = self._clusters()
        if not any(c.uses_native for c in clusters):
            return
        from hbase_migration.data.datapath.native import classpath

        given = [j for j in (self.jars or "").split(",") if j]
        self.jars = ",".join([*classpath(), *[j for j in given if j not in classpath()]])

    def _ship_credentials(self) -> None:
        """Kerberized clusters: their keytab and krb5.conf go with the job (spark-submit --files), so executors on
        hosts without them find them where Spark put them (hbase_migration.clusters.security.local_file: the container's
        working directory on YARN, SparkFiles' directory elsewhere) and log in from the keytab themselves."""
        from airflow.sdk import conf

        if not conf.getboolean("hbase_migration", "ship_credentials", fallback=True):
            return
        wanted = []
        for security in self._kerberized():
            wanted += [security.keytab, security.krb5_conf]
        files = [f for f in (self.files or "").split(",") if f]
        files += [f for f in dict.fromkeys(w for w in wanted if w) if f not in files]
        self.files = ",".join(files) or None

    def _ship_ledger_url(self, tmp: str, url: str) -> str:
        """The ledger's URL (a PostgreSQL one holds its password) never goes on spark-submit's command line, which
        `ps`, Spark's UI and YARN's application page show: it is written into a file readable by its owner only
        (0600) in the task's temporary folder, removed after the job, and shipped with the job (`--files`: YARN
        keeps such a file private to the application's user); the job reads it by its name
        (`jobargs.read_ledger_url_file`). Returns that name."""
        from hbase_migration.data.jobargs import write_ledger_url_file

        path = write_ledger_url_file(url, tmp)
        name = os.path.basename(path)
        files = [f for f in (self.files or "").split(",") if f and os.path.basename(f) != name]
        self.files = ",".join([*files, path])
        return name

    def summary_key(self, context: Context) -> str:
        """The key the job's summary is kept under in the ledger: the task instance (DAG, run, task, map index),
        the same for each of its tries (a retry that reconnects to the YARN application of an earlier try reads
        that application's summary); without a task instance (a bare `execute`), a random one."""
        ti = context.get("ti") if hasattr(context, "get") else None
        if ti is None:
            return f"{self.job_kind}/{self.table}/{self.task_id}/{uuid.uuid4().hex}"
        return "/".join(str(p) for p in (self.job_kind, self.table, ti.dag_id, ti.run_id, ti.task_id,
                                         getattr(ti, "map_index", -1)))

    def _take_summary(self, url: str, key: str) -> dict[str, Any] | None:
        """The summary the driver kept under `key` (None: it wrote none), removed from the ledger."""
        from hbase_migration.data.progress import retry_transient
        from hbase_migration.ledger.store import Ledger

        def take() -> dict[str, Any] | None:
            with Ledger.open(url) as ledger:
                return ledger.take_job_summary(key)

        try:
            return retry_transient(take, f"reading the {self.job_kind} summary", 60.0)
        except Exception as e:  # the job's outcome (its exit status) still decides; the summary is then missing
            self.log.error("the %s summary could not be read from the ledger (key %s): %s", self.job_kind, key, e)
            return None

    def _run(self, context: Context) -> dict[str, Any]:
        from hbase_migration.operators.ledger import ledger_url

        if self.name == self.job_kind:
            self.name = f"{self.job_kind}-{self.table}"
        with tempfile.TemporaryDirectory(prefix=f"hbase-{self.job_kind}-") as tmp:
            url, key = ledger_url(), self.summary_key(context)
            self.application_args = self._prepare({"summary_ledger_url_file": self._ship_ledger_url(tmp, url),
                                                   "summary_key": key})
            master, deploy_mode, extra = self._spark_target()
            on_yarn = master.startswith("yarn")
            if on_yarn:
                self._follow_yarn_application(deploy_mode)
                self._yarn_attempts()
            self._python_env(on_yarn)
            self._ship_code(tmp)
            self._ship_jvm()
            self._ship_credentials()
            given = (self.principal, self.keytab, self._yarn_rm_auth)  # this try's own: not kept for another
            self._spark_kerberos(tmp, extra, deploy_mode)
            error: Exception | None = None
            try:
                super().execute(context)
            except Exception as e:  # the summary (if written) says why; re-raised below
                error = e
            finally:
                self.principal, self.keytab, self._yarn_rm_auth = given
            summary = self._take_summary(url, key)
        if summary is not None and self._data_path_why:  # beside each `data_path` the summary shows
            summary["data_path_why"] = self._data_path_why
            for detail in (summary.get("tables") or {}).values():
                if isinstance(detail, dict):
                    detail.setdefault("data_path_why", self._data_path_why)
        if summary and summary.get("spark"):
            spark = summary["spark"]
            self.log.info("Spark application %s (%s, %s mode): driver %s, executors %s", spark.get("application_id"),
                          spark.get("master"), spark.get("deploy_mode"), spark.get("driver"), spark.get("executors"))
        return self._finish(summary, error)

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        raise NotImplementedError

    # -- a cluster-mode application waited for in the triggerer (issue 42) ---------------------------------------

    def poll_until_complete(self, external_id: Any, context: Context) -> None:
        """YARN cluster mode, deferrable (the default): once spark-submit has handed the application to YARN, the
        wait goes to the triggerer (`SparkYarnApplicationTrigger`: the ResourceManager's REST API, and for the
        copy the run's oldWALs watchdog) and no worker slot is held while YARN runs it; `execute_complete` then
        reads the job's summary as a wait in the worker would. Elsewhere, the provider's own wait."""
        hook = self._hook
        if self.deferrable and hook is not None and hook._is_yarn_cluster_mode:
            from hbase_migration.operators.triggers import SparkYarnApplicationTrigger

            self.log.info("YARN application %s submitted: waiting for it in the triggerer", external_id)
            self.defer(trigger=SparkYarnApplicationTrigger(
                self._conn_id, str(external_id), poll_interval_s=max(float(self._status_poll_interval), 10.0),
                spnego=self._spnego_args(), watchdog=self._watchdog_args()), method_name="execute_complete")
        return super().poll_until_complete(external_id, context)

    def _spnego_args(self) -> dict[str, Any] | None:
        """How the triggerer authenticates to a Kerberized ResourceManager: the paths and names this try used (the
        keytab's path, never its content)."""
        pattern = getattr(self._yarn_rm_auth, "principal_pattern", None)
        if not pattern:
            return None
        krb5 = next((s.krb5_conf for s in self._kerberized() if s.krb5_conf), None)
        login = self._yarn_rm_auth.login  # the keytab as the connection names it: spark-submit's second name
        return {"principal": login.principal, "keytab": login.keytab,  # is removed with the try's folder
                "krb5_conf": krb5, "principal_pattern": pattern}

    def _watchdog_args(self) -> dict[str, Any] | None:
        """What the triggerer's oldWALs watchdog needs: a copy's or a snapshot export's with a peer (the jobs that
        run while their peer pins WALs); None: no watchdog."""
        if not getattr(self, "peer_id", None):
            return None
        from airflow.sdk import conf

        return {"cluster": HBaseClusterHook(self.source_conn_id).get_cluster().to_dict(), "peer_id": self.peer_id,
                # enable_peer enables the peer only once its tables exist there (migration.enable_gate)
                "target": HBaseClusterHook(self.target_conn_id).get_cluster().to_dict(),
                "policy": self.quota_policy, "mark": float(self.quota_mark), "ledger_run_id": self.ledger_run_id,
                "interval_s": float(self.watchdog_interval_s or conf.getfloat("hbase_migration", "watchdog_interval_s",
                                                                               fallback=30.0))}

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        from hbase_migration.operators.ledger import ledger_url

        status, app = event.get("status"), event.get("application_id")
        self.log.info("YARN application %s ended: %s %s", app, status, event.get("diagnostics") or "")
        error: Exception | None = None
        if status == "quota_breach":
            self._breach = event.get("message")
        elif status != "SUCCEEDED":
            error = AirflowException(f"YARN application {app} {status}: {event.get('diagnostics') or ''}".strip())
        self._after_deferred_wait()
        return self._finish(self._take_summary(ledger_url(), self.summary_key(context)), error)

    def _after_deferred_wait(self) -> None:
        """What `execute` would have done after the wait (the copy: its own switch hold released)."""

    def _ledger_phase(self, phase: str, status: str, detail: Any = None) -> None:
        if not self.ledger_run_id:
            return
        from hbase_migration.operators.ledger import open_ledger

        if isinstance(detail, dict):  # the headline figures; per-partition results stay in the task log
            detail = {k: v for k, v in detail.items() if k not in ("partition_results", "differing_rows_sample")}
        with open_ledger() as ledger:
            ledger.set_phase(self.ledger_run_id, self.table, phase, status,
                             None if detail is None else json.dumps(detail, sort_keys=True, default=str))


class HBaseCopyTableOperator(_HBaseJobOperator):
    __doc__ = """Copies one table with the PySpark CopyTable (jobs/copy_table.py), keeping every cell's timestamp.

    One Spark task per source region (big regions split further). Finished partitions are recorded in the
    ledger under this run, so a retry skips them. Deletes are not copied: the replication backlog since T0
    carries them. Beside the job, the library's oldWALs watchdog samples the source's quota every
    `watchdog_interval_s` and records each reading in the ledger; when `quota_mark` is reached the
    `quota_policy` acts (`fail`: kill the job and fail; `enable_peer`: enable the peer early so the cleaner can
    free shipped WALs, and go on).

    :param peer_id: the run's peer (enabled by the `enable_peer` policy); None: the quota is not watched.
    :param quota_policy: `fail` or `enable_peer`, on oldWALs quota pressure.
    :param quota_mark: the fraction of an oldWALs quota that counts as pressure.
    :param watchdog_interval_s: seconds between two oldWALs (and peer lag) readings; None: `[hbase_migration]
        watchdog_interval_s`, default 30.
    :param rows_per_s: rows read from the source per second and partition task (0/None: no limit).
    :param max_load: load throttle, `metric=threshold,...` of the source region servers' /jmx (sub=IPC gauges,
        sub=Server latencies, `write_p99_ms`/`read_p99_ms`): the copy slows down when a server reaches one.
        None/empty: no slow-down.
    :param critical_load: load throttle: the copy pauses while a server is past one of these. None: never pauses.
    :param max_pause_s: load throttle: paused this long, the task fails saying why (finished partitions stay
        recorded; a retry resumes).
    :param load_sample_s: load throttle: seconds between two samples of the source (taken by the Spark driver).
    :param copy_id: the name finished partitions are recorded under (default: `ledger_run_id`).
    :param hold_switches: turn the source's split/merge switch and normalizer off while the job runs and restore
        what was found (`hbase_migration.data.switches`: counted in the ledger across concurrent copies of the source;
        the last one restores). Done here, not in the job: its driver may run where no HBase shell
        is.""" + _COMMON_PARAMS

    job_kind = "copy"
    application_path = COPY_JOB
    template_fields: Sequence[str] = (*_HBaseJobOperator.template_fields, "peer_id", "quota_policy",
                                      "quota_mark", "rows_per_s", "copy_id", "max_load", "critical_load",
                                      "max_pause_s", "hold_switches")
    ui_color = "#fce8b2"

    def __init__(self, *, peer_id: str | None = None, quota_policy: str = "fail",
                 quota_mark: float = DEFAULT_QUOTA_MARK, watchdog_interval_s: float | None = None,
                 rows_per_s: float | None = None, copy_id: str | None = None, max_load: str | None = None,
                 critical_load: str | None = None, max_pause_s: float | None = None,
                 load_sample_s: float | None = None, hold_switches: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hold_switches = hold_switches
        self.max_load = max_load
        self.critical_load = critical_load
        self.max_pause_s = max_pause_s
        self.load_sample_s = load_sample_s
        self.peer_id = peer_id
        self.quota_policy = quota_policy
        self.quota_mark = quota_mark
        self.watchdog_interval_s = watchdog_interval_s
        self.rows_per_s = rows_per_s
        self.copy_id = copy_id
        self._breach: str | None = None

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        from hbase_migration.data.jobargs import copy_job_args

        copy_id = self.copy_id or self.ledger_run_id
        return copy_job_args(
            *self._wire_pair(), self.table,
            target_table=self.target_table, start_time_ms=self.start_time_ms, end_time_ms=self.end_time_ms,
            versions=self.versions, families=self.families, rows_per_s=self.rows_per_s, copy_id=copy_id,
            ledger_url_file=summary["summary_ledger_url_file"] if copy_id else None, max_load=self.max_load,
            critical_load=self.critical_load, max_pause_s=self.max_pause_s, load_sample_s=self.load_sample_s,
            **summary)

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.quota import Watchdog, check_policy
        from hbase_migration.operators.ledger import ledger_url

        try:
            check_policy(self.quota_policy)
        except ValueError as e:
            raise AirflowFailException(str(e)) from None
        self._ledger_phase("copy", "running")
        hold = self._hold_switches(context)
        watchdog = None
        deferred = False
        try:
            if self.peer_id:
                from airflow.sdk import conf

                interval = self.watchdog_interval_s or conf.getfloat("hbase_migration", "watchdog_interval_s",
                                                                     fallback=30.0)
                watchdog = Watchdog(HBaseClusterHook(self.source_conn_id).get_cluster(), self.peer_id,
                                    self.quota_policy, self.quota_mark, interval,
                                    ledger_url() if self.ledger_run_id else None, self.ledger_run_id,
                                    on_fail=self._on_quota_fail, logger=self.log,
                                    target=HBaseClusterHook(self.target_conn_id).get_cluster()).start()
            return self._run(context)
        except TaskDeferred:  # the application runs on: its hold stays until execute_complete
            deferred = True
            raise
        finally:
            if watchdog is not None:
                watchdog.stop()  # the triggerer's watchdog takes over a deferred wait
            if hold is not None and self._releases_own_hold and not deferred:  # else release_switches does
                try:
                    hold.__exit__(None, None, None)
                except Exception as e:  # the copy's own outcome stands; the hold stays for release_switches
                    self.log.error("the source's switches were not restored: %s", e)

    def _hold_switches(self, context: Context) -> Any:
        """The switch hold of this copy (None when off); a refusal fails the task without a retry, a shell that did
        not answer fails the attempt (retried)."""
        if not self.hold_switches:
            self.log.info("hold_switches is off: the source's split/merge and normalizer switches are left as they are")
            return None
        from hbase_migration.data.switches import SwitchError, SwitchHold
        from hbase_migration.operators.ledger import ledger_url

        copy_id = self.copy_id or self.ledger_run_id or context["run_id"]
        hold = SwitchHold(HBaseClusterHook(self.source_conn_id).get_cluster(), ledger_url(),
                          self._switch_holder(copy_id), self.ledger_run_id, logger=self.log)
        try:
            return hold.__enter__()
        except SwitchError as e:
            self._ledger_phase("copy", "failed", {"error": str(e)})
            from hbase_migration.clusters.reachability import unreachable

            if unreachable(e):  # the shell or the master did not answer: the task's retry takes the hold again
                raise
            raise AirflowFailException(f"copy of {self.table} not started: {e}") from e

    def _after_deferred_wait(self) -> None:
        if self._releases_own_hold and self.hold_switches:
            self._release_own_hold(self._switch_holder(self.copy_id or self.ledger_run_id or ""))

    def _release_own_hold(self, holder: str) -> None:
        from hbase_migration.data.switches import release
        from hbase_migration.operators.ledger import open_ledger

        try:
            with open_ledger() as ledger:
                release(HBaseClusterHook(self.source_conn_id).get_cluster(), ledger, holder, logger=self.log)
        except Exception as e:  # the copy's own outcome stands; the hold stays for release_switches
            self.log.error("the source's switches were not restored: %s", e)

    def _switch_holder(self, copy_id: str) -> str:
        """In a migration run every table's copy shares the run's hold, released by its release_switches task once
        all copies have ended (no shell call per table; a real shell is a JVM start); alone, a copy's own (a
        batch's copy: the batch's, `hbase_migration.operators.batch`)."""
        from hbase_migration.data.switches import holder_name

        return holder_name(copy_id, None if self.ledger_run_id else self.table)

    @property
    def _releases_own_hold(self) -> bool:
        return not self.ledger_run_id

    def _on_quota_fail(self, message: str) -> None:
        self._breach = message
        self.on_kill()

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary:
            self.log.info("copy summary: %s", json.dumps(summary, sort_keys=True))
        if self._breach:
            self._ledger_phase("copy", "failed", {"quota_breach": self._breach})
            # Not retried: a retry would meet the same quota. The peer stays as it is (see state_left_behind).
            raise AirflowFailException(f"copy of {self.table} stopped: {self._breach}")
        load = (summary or {}).get("load_control") or {}
        if load:
            self.log.info("load throttle: %s samples, %s slow, %s paused, lowest factor %s, last: %s (%s)",
                          load.get("samples"), load.get("slow_samples"), load.get("paused_samples"),
                          load.get("min_factor"), load.get("final_state"), load.get("reason"))
        if load.get("aborted"):
            self._ledger_phase("copy", "failed", summary)
            raise AirflowException(f"copy of {self.table} gave up, the source stayed overloaded: {load.get('reason')}. "
                                   "Finished partitions are recorded; a retry resumes with the others")
        if error is not None:
            self._ledger_phase("copy", "failed", summary or {"error": str(error)})
            raise AirflowException(f"copy of {self.table} failed (finished partitions are kept; a retry "
                                   f"resumes): {error}") from error
        self._ledger_phase("copy", "success", summary)
        return summary or {}


class HBaseVerifyTableOperator(_HBaseJobOperator):
    __doc__ = """Verifies one table (jobs/verify_table.py): both sides read at once and merge-joined by row key,
    every version of every cell compared (row, family, qualifier, timestamp, value), bounded to cells older than
    `end_time_ms` (default: none, every timestamp, future ones included), differing rows re-compared after
    `recompare_sleep_s` for edits in flight.
    Fails when any row differs; the result (counts and a sample of differing keys) goes to the ledger.

    :param recompare_sleep_s: pause before differing rows are compared again (edits in flight).
    :param level: `content` (every cell) or `rows` (row counts only).
    :param repair: make the differing rows equal on the target (source versions put with their timestamps,
        target-only versions deleted; off by default: verification is read-only). The task then succeeds when
        every repaired row reads back equal.
    :param ledger_phase: the ledger phase it is recorded as (`verify`; the cut-over's check after the switch:
        `post_verify`).
    :param verify_method: `cells`, `hash` (leaves hashed beside each cluster, only the differing ones compared by
        cells: hbase_migration/data/hashverify.py) or `auto` (hash when the source table's store files, read from
        its region servers' /jmx, reach `hash_min_bytes`).
    :param hash_leaf_bytes: bytes of cells per leaf; `skew_margin_ms`: the hash's time bound is the verification's
        start minus this.
    :param spark_source_conn_id: hash: the Spark connection beside the source (its job plans the leaves and
        hashes the source); `spark_target_conn_id`: beside the target (its job hashes the target and compares the
        differing leaves by cells, and its summary is the verdict). Either given: two jobs, one on each, meeting in
        the ledger; neither: one job on `spark_conn_id` with both sides.
    :param source_remote_conn_id: the source as the target's datacenter reaches it (what the job beside the
        target reads of it); None: `source_conn_id`.""" + _COMMON_PARAMS

    job_kind = "verify"
    application_path = VERIFY_JOB
    # One attempt: a verification's exit status 1 is its verdict (rows differ), not a crash, and YARN would start
    # the application again on it: a second verification (with `repair`, of rows the first one repaired), whose
    # summary replaces the first's under the task's key, so what was found and repaired is lost. A lost driver is
    # retried by the task (verify is read-only unless `repair`, and a repair is idempotent). The copy and the
    # snapshot export keep YARN's attempts: a second one resumes from the ledger.
    yarn_max_app_attempts = 1
    template_fields: Sequence[str] = (*_HBaseJobOperator.template_fields, "recompare_sleep_s", "level", "repair",
                                      "verify_method", "hash_leaf_bytes", "hash_min_bytes", "skew_margin_ms",
                                      "spark_source_conn_id", "spark_target_conn_id", "source_remote_conn_id")
    ui_color = "#d2e3fc"

    def __init__(self, *, recompare_sleep_s: Any = 5.0, level: str = "content", repair: bool = False,
                 ledger_phase: str = "verify", verify_method: str = "cells", hash_leaf_bytes: int | None = None,
                 hash_min_bytes: int | None = None, skew_margin_ms: int | None = None,
                 spark_source_conn_id: str | None = None, spark_target_conn_id: str | None = None,
                 source_remote_conn_id: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.recompare_sleep_s = recompare_sleep_s
        self.level = level
        self.repair = repair
        self.ledger_phase = ledger_phase
        self.verify_method = verify_method
        self.hash_leaf_bytes = hash_leaf_bytes
        self.hash_min_bytes = hash_min_bytes
        self.skew_margin_ms = skew_margin_ms
        self.spark_source_conn_id = spark_source_conn_id
        self.spark_target_conn_id = spark_target_conn_id
        self.source_remote_conn_id = source_remote_conn_id
        self._method = verify_method
        self._side: dict[str, Any] = {}  # hash_side, exchange_key, started_ms of a job that runs one side
        self._source_side: _HashSourceSideJob | None = None

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        from hbase_migration.data.jobargs import verify_job_args

        return verify_job_args(
            *self._wire_pair(), self.table,
            target_table=self.target_table, start_time_ms=self.start_time_ms, end_time_ms=self.end_time_ms,
            versions=self.versions, families=self.families, level=self.level, recompare_sleep_s=self.recompare_sleep_s,
            repair=self.repair, method=self._method, hash_leaf_bytes=self.hash_leaf_bytes,
            hash_min_bytes=self.hash_min_bytes, skew_margin_ms=self.skew_margin_ms,
            source_remote=self._remote_json(), **self._side, **summary)

    def _repairs(self) -> bool:
        return bool(self.repair)

    def _remote_json(self) -> str | None:
        """`source_remote_conn_id`'s wire form, on the source's resolved data path when it says auto."""
        if not self.source_remote_conn_id:
            return None
        from hbase_migration.data.datapath.auto import follow

        remote = follow(HBaseClusterHook(self.source_remote_conn_id).get_cluster(), self._clusters()[0])
        return json.dumps(remote.to_dict(), sort_keys=True)

    def _resolve_method(self) -> str:
        """`auto`: hash when the source table's store files (its region servers' /jmx, read from here: a few small
        HTTP answers) reach `hash_min_bytes`, else cells; said in the log."""
        from hbase_migration.data.leafhash import choose_method

        if self.verify_method not in ("auto", "cells", "hash"):
            raise AirflowFailException(f"verify_method must be auto, cells or hash, got {self.verify_method!r}")
        size = None
        if self.verify_method == "auto":
            from hbase_migration.migration.region_metrics import table_region_bytes

            sizes = table_region_bytes(HBaseClusterHook(self.source_conn_id).get_cluster(), self.table)
            size = None if sizes is None else sum(sizes.values())
        method, why = choose_method(self.verify_method, size, self.hash_min_bytes or (1 << 30))
        self.log.info("verify %s by %s (%s)", self.table, method, why)
        return method

    def execute(self, context: Context) -> dict[str, Any]:
        self._ledger_phase(self.ledger_phase, "running")
        self._method = self._resolve_method()
        if self._method == "hash" and (self.spark_source_conn_id or self.spark_target_conn_id):
            return self._run_both_sides(context)
        return self._run(context)

    def _run_both_sides(self, context: Context) -> dict[str, Any]:
        """Two Spark jobs, one beside each cluster: the source's side (`_HashSourceSideJob`, submitted to
        `spark_source_conn_id`) in a thread, the target's (this operator's own submission, to
        `spark_target_conn_id`), meeting in the ledger under a key of this try. Whichever ends first having failed
        tells the other through the ledger (`abort`), so neither waits for a side that is gone."""
        import threading
        import time as _time

        from hbase_migration.data.hashverify import LedgerExchange
        from hbase_migration.operators.ledger import ledger_url

        ti = context.get("ti") if hasattr(context, "get") else None
        key = f"{self.summary_key(context)}/try{getattr(ti, 'try_number', 0)}/{uuid.uuid4().hex[:8]}"
        started_ms = int(_time.time() * 1000)
        exchange = LedgerExchange(ledger_url(), f"hash-exchange/{key}", "operator")
        side = {"hash_side": "source", "exchange_key": key, "started_ms": started_ms}
        self._clusters()  # resolved once, before either side's job is prepared
        self._source_side = _HashSourceSideJob(parent=self, side=side,
                                               conn_id=self.spark_source_conn_id or self._conn_id)
        box: dict[str, Any] = {}

        def source_side() -> None:
            try:
                box["summary"] = self._source_side._run(context)
            except BaseException as e:  # the target's side is told; the task fails below
                box["error"] = e
                exchange.abort(f"the source's side job failed: {e}")

        thread = threading.Thread(target=source_side, name="hash-source-side-job", daemon=True)
        thread.start()
        self._side = {**side, "hash_side": "target"}
        if self.spark_target_conn_id:
            self._conn_id = self.spark_target_conn_id
        try:
            result = self._run(context)
        finally:
            if thread.is_alive():
                exchange.abort("the target's side job ended")
            thread.join()
        if "error" in box:
            raise AirflowException(f"verify of {self.table}: the source's side job failed: {box['error']}")
        return result

    def on_kill(self) -> None:
        if self._source_side is not None:
            self._source_side.on_kill()
        super().on_kill()

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        from hbase_migration.data.verify import ledger_counts, repaired_clean

        repaired = bool(summary) and self.repair and repaired_clean(summary)
        if summary and self.ledger_run_id and summary.get("level") == "content":
            from hbase_migration.operators.ledger import open_ledger

            samples = [] if repaired else [k.encode("latin-1") for keys in
                                           (summary.get("differing_rows_sample") or {}).values() for k in keys]
            with open_ledger() as ledger:  # repaired: recorded as left (clean), the repair is in the phase's summary
                ledger.verification(
                    self.ledger_run_id, self.table, window_start_ms=summary.get("start_time_ms") or 0,
                    window_end_ms=summary.get("end_time_ms"), sample_keys=samples,
                    **ledger_counts(summary, repaired))
        if summary:
            self.log.info("verify summary: %s", json.dumps(summary, sort_keys=True))
        if summary and summary.get("identical"):
            self._ledger_phase(self.ledger_phase, "success", summary)
            return summary
        if repaired:
            self.log.warning("verify of %s found differences and repaired them (read back equal): %s; versions: %s",
                             self.table, json.dumps(summary["repair"]),
                             json.dumps(summary.get("differing_versions_sample")))
            self._ledger_phase(self.ledger_phase, "success", summary)
            return summary
        self._ledger_phase(self.ledger_phase, "failed", summary or {"error": str(error)})
        if summary:
            raise AirflowException(
                f"verify of {self.table}: {summary.get('content_different')} rows differ in content, "
                f"{summary.get('only_in_source')} only in the source, {summary.get('only_in_target')} only in "
                f"the target; sample: {json.dumps(summary.get('differing_rows_sample'))}; differing versions: "
                f"{json.dumps(summary.get('differing_versions_sample'))}")
        raise AirflowException(f"verify of {self.table} failed: {error}") from error


class _HashSourceSideJob(_HBaseJobOperator):
    """The source's side of a verification by hashes, as a Spark job of its own beside the source (submitted by
    `HBaseVerifyTableOperator` from its task, not a task itself): plans the leaves, hashes the source, answers the
    target's side's re-checks through the ledger. Its summary is its figures; the verdict is the target's."""

    job_kind = "verify-source-side"
    application_path = VERIFY_JOB
    yarn_max_app_attempts = 1

    def __init__(self, *, parent: HBaseVerifyTableOperator, side: dict[str, Any], conn_id: str, **_: Any) -> None:
        # (`**_`: what BaseOperator's metaclass passes, default_args; the job takes everything from its parent)
        super().__init__(task_id=f"{parent.task_id}.source_side", table=parent.table,
                         source_conn_id=parent.source_conn_id, target_conn_id=parent.target_conn_id,
                         target_table=parent.target_table, start_time_ms=parent.start_time_ms,
                         end_time_ms=parent.end_time_ms, versions=parent.versions, families=parent.families,
                         spark_conn_id=conn_id, name=f"verify-{parent.table}-source-side")
        self.parent, self.side = parent, side

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        from hbase_migration.data.jobargs import verify_job_args

        p = self.parent
        return verify_job_args(
            *p._wire_pair(), p.table, target_table=p.target_table,
            start_time_ms=p.start_time_ms, end_time_ms=p.end_time_ms, versions=p.versions, families=p.families,
            recompare_sleep_s=p.recompare_sleep_s, method="hash", hash_leaf_bytes=p.hash_leaf_bytes,
            skew_margin_ms=p.skew_margin_ms, **self.side, **summary)

    def _clusters(self) -> tuple[Any, Any]:
        return self.parent._clusters()

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary:
            self.log.info("hash verify, source side: %s", json.dumps(summary, sort_keys=True))
        if error is not None:
            raise AirflowException(f"the source's side of the hash verification of {self.table} failed: {error}")
        return summary or {}
