# One entry point for set-up, tests and the demo. Every target bootstraps what it needs, idempotently:
# a second run installs nothing. Nothing started here is left running.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
SPARK_CDS := .state/spark-cds/spark-driver.jsa
PY := $(VENV)/bin/python
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar
JAVAC := /usr/bin/javac
MVN := /usr/bin/mvn
REDIS_SERVER := /usr/bin/redis-server
KRB5KDC := /usr/sbin/krb5kdc
FAKETIME := /usr/bin/faketime
CHROMEDRIVER := /usr/bin/chromedriver

export AIRFLOW_HOME := $(CURDIR)
export SPARK_LOCAL_IP := 127.0.0.1
export PYTHONPATH := $(CURDIR)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help bootstrap bootstrap-parts packages hbase-jars jvm lint test test-full test-unit test-integration test-deploy test-realhbase test-versions test-yarn test-sync-replication \
	demo demo-cluster demo-secure chaos chaos-seeds realhbase-up realhbase-down deploy-up deploy-down bench lock clean

help:
	@echo "make test   bootstrap (ZooKeeper, JDK + Maven, .venv, Airflow DB), lint, the tests: every kind once, real"
	@echo "            HBase included (pytest -m 'not full'); make test-full: every test"
	@echo "make demo   run the demo migration on two real HBase clusters (realhbase; DEMO_ARGS=--stand-in: minihbase)"
	@echo "make demo-cluster  the same demo on the production-shaped deployment (Celery workers, Redis, PostgreSQL,"
	@echo "                   Spark standalone master + 2 workers), triggered through Airflow's REST API"
	@echo "make demo-secure   the same demo on secured clusters (Kerberos in two realms, SASL, SPNEGO, TLS)"
	@echo "make chaos  the cluster demo on real HBase under a seeded nemesis (CHAOS_ARGS=\"--seed 7 --faults rs_kill,...\";"
	@echo "            --stand-in: on minihbase),"
	@echo "            checked independently; JSON summary (every fault, its phase and time to recover) last"
	@echo "make deploy-up / deploy-down  start / stop that deployment in .state/deploy (python -m deploy)"
	@echo "make bench  print benchmark figures"
	@echo "make lock   re-resolve requirements into constraints.txt"

# The Python stack and HBase's jars are fetched side by side (both mostly wait on the network).
bootstrap: packages
	@$(MAKE) --no-print-directory -j2 --output-sync=target bootstrap-parts

bootstrap-parts: $(VENV)/.provider .airflow/airflow.db .airflow/secrets hbase-jars jvm $(SPARK_CDS)
	@:

# Debian's packages the project runs, each named by a file it installs; those missing are installed in one apt-get
# call (one index update, one dpkg run: a fresh machine lacks most of them):
#   zookeeper, libslf4j-java, default-jre-headless   ZooKeeper (the jar and slf4j-simple) and a JRE to run it
#   openjdk-17-jdk-headless, maven     javac compiles realhbase's launcher; Maven resolves HBase's and Hadoop's jars
#                                      from Maven Central into ~/.cache/realhbase
#   krb5-kdc, krb5-admin-server, krb5-user, libkrb5-dev   MIT Kerberos: the KDC secured clusters use, kadmin.local,
#                                      kinit/klist, and the headers PyPI's gssapi builds against (no Linux wheel)
#   faketime                           a secured cluster's clock 6 minutes ahead (the security preflight's test)
#   chromium, chromium-driver          the dashboard's browser test (selenium drives them headless)
#   postgresql                         the ledger's PostgreSQL tests and the deployment's metadata database (each
#                                      starts its own throw-away server on a free port)
#   redis-server                       the deployment's Celery broker (deploy/ starts its own on a free port)
# A server a package's install starts (the KDC, PostgreSQL, Redis) is stopped again: tests start their own.
PACKAGES := $(ZOOKEEPER_JAR)=zookeeper,libslf4j-java,default-jre-headless $(JAVAC)=openjdk-17-jdk-headless \
	$(MVN)=maven $(KRB5KDC)=krb5-kdc,krb5-admin-server,krb5-user,libkrb5-dev $(FAKETIME)=faketime \
	$(CHROMEDRIVER)=chromium,chromium-driver /usr/lib/postgresql/*/bin/initdb=postgresql $(REDIS_SERVER)=redis-server

packages:
	@missing=""; for entry in $(PACKAGES); do \
	  ls $${entry%%=*} >/dev/null 2>&1 || missing="$$missing $$(echo $${entry#*=} | tr , ' ')"; done; \
	if [ -n "$$missing" ]; then \
	  command -v apt-get >/dev/null || { echo "apt-get not found: install Debian's$$missing by hand"; exit 1; }; \
	  echo "apt-get install$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  for s in krb5-kdc krb5-admin-server postgresql redis-server; do service $$s stop >/dev/null 2>&1 || true; done; \
	fi; for entry in $(PACKAGES); do ls $${entry%%=*} >/dev/null 2>&1 || { echo "$${entry%%=*} missing after apt-get"; exit 1; }; done

# The pinned stack, installed with the recorded resolution (constraints.txt) so every machine gets the same set.
# By uv (PyPI), which downloads and builds in parallel: 108 s on a fresh machine where pip took 509 s (the same
# set; pyspark's and gssapi's source distributions are built either way). As pip here: the system's certificate
# store (pip's PIP_CERT), a 180 s read timeout (PIP_DEFAULT_TIMEOUT).
UV := uv==0.13.9
$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt | packages
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(UV)
	UV_HTTP_TIMEOUT=180 $(VENV)/bin/uv pip install -q --native-tls --python $(PY) -r requirements.txt \
	  -r requirements-dev.txt -c constraints.txt
	$(PY) -c "import pyspark, airflow; assert pyspark.__version__ == '4.2.0', pyspark.__version__"
	@touch $@

# This checkout installed as the distribution (pyproject.toml), editable: the package names it maps from the
# top-level rooms (hbase_migration.operators <- operators/, .jobs, .plugins, .sql) resolve to this checkout's folders
# through setuptools' editable finder, and Airflow finds the provider (the `hbase` connection type) and the dashboard
# plugin by their entry points, the CLI is .venv/bin/hbase-migration (docs/install.md). Again when pyproject.toml
# changes (a new subpackage, an entry point).
$(VENV)/.provider: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --force-reinstall -e .
	@rm -rf build hbase_migration.egg-info  # its entry points, found on PYTHONPATH, would register all twice
	@touch $@

.airflow/airflow.db: $(VENV)/.provider airflow.cfg deploy/pools.json
	@mkdir -p .airflow
	$(VENV)/bin/airflow db migrate >.airflow/db-migrate.log 2>&1 || { tail -20 .airflow/db-migrate.log; exit 1; }
	$(VENV)/bin/airflow pools import deploy/pools.json >>.airflow/db-migrate.log 2>&1 || { tail -20 .airflow/db-migrate.log; exit 1; }
	@touch $@

# HBase's and Hadoop's jars for the real test bed (realhbase/jars.py: Maven Central into ~/.cache/realhbase, ~210 MB,
# keyed by pom.xml); at once when the cache holds them. The system Python: realhbase/jars.py needs no package.
hbase-jars: | packages
	@$(PYTHON) -c "from realhbase import jars; jars.resolve(progress=False)" || { \
	  echo "hbase-jars: Maven could not resolve HBase's jars (the line above says which); make test-realhbase retries"; exit 1; }

# The native data path's Java (jvm/: HBase's client in Spark's JVMs), built by Maven against the test bed's HBase and
# Hadoop versions into jvm/target/<version>/ (realhbase/jars.py `build_jvm`, keyed by its pom and sources; its JUnit
# tests run in the build). The system Python, as hbase-jars.
jvm: hbase-jars
	@$(PYTHON) -c "from realhbase import jars; jars.build_jvm(progress=False)" || { \
	  echo "jvm: Maven could not build jvm/ (the line above says why); the native data path is unavailable"; exit 1; }

# The Spark driver's class data sharing archive for the tests' and the demo's short jobs (deploy/spark_jvm.py: about
# 40% of a C1 driver's start-up CPU); without it they only start slower.
$(SPARK_CDS): $(VENV)/.provider
	@$(VENV)/bin/python -c 'from deploy import spark_jvm; spark_jvm.main()' || echo "spark-cds: no archive (the line above says why); Spark jobs start slower"

# Generated once per checkout, never committed; airflow.cfg reads them through *_cmd options.
.airflow/secrets:
	@mkdir -p $@ && chmod 700 $@
	@$(PYTHON) -c "import secrets,base64; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())" > $@/fernet_key
	@$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(32))" > $@/api_secret_key
	@$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(32))" > $@/jwt_secret

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

# Tests use their own temporary ZooKeeper, realhbase and minihbase under .state/pytest; anything still running from
# there afterwards is a leak, reported and ended. `make test` runs each kind of test once (real HBase included);
# `make test-full` adds the tests marked `full` (docs/testing.md says which and why).
PYTEST = rm -rf .state/pytest && mkdir -p .state && $(VENV)/bin/pytest --basetemp=.state/pytest
LEFTOVERS = rc=$$?; scripts/no-leftovers .state/pytest || rc=1; exit $$rc
# Two pytest-xdist workers: one runs the real-HBase tests (one unit of work: the bed starts once, in that worker),
# the other the rest, file by file, in the order collected (tests/xdist_groups.py); much of a test's time is waiting
# on a JVM or a DAG.
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --no-loadscope-reorder)

test: bootstrap lint
	$(PYTEST) -m "not full" $(XDIST) $(PYTEST_ARGS); $(LEFTOVERS)

test-full: bootstrap lint
	$(PYTEST) $(XDIST) $(PYTEST_ARGS); $(LEFTOVERS)

# Only the tests against real HBase (marker realhbase).
test-realhbase: bootstrap
	$(PYTEST) -m realhbase $(PYTEST_ARGS); $(LEFTOVERS)

# The Spark jobs on the test bed's YARN (a ResourceManager and a NodeManager beside dc2's HDFS): copy and verify in
# client and cluster mode through the Airflow operators, the copy's driver container killed mid-copy (YARN's second
# attempt resumes from the ledger), the migration DAG end to end in cluster mode with a live writer, and copy and
# verify on a Kerberized YARN beside the secured bed (up --secure --yarn: --principal/--keytab; a bed of its own),
# and there the migration DAG end to end in cluster mode, snapshot export included (a bed of its own too)
# (marked full: also in test-full, not in test).
test-yarn: bootstrap
	$(PYTEST) tests/integration/test_spark_yarn_realhbase.py tests/dags/test_migration_yarn_realhbase.py \
	  tests/integration/test_spark_yarn_secure_realhbase.py tests/dags/test_migration_yarn_secure_realhbase.py \
	  $(PYTEST_ARGS); \
	  $(LEFTOVERS)

# The real-HBase tests on other HBase releases (REALHBASE_VERSION; pom.xml pins the default). 3.0.0-alpha-4 is the
# newest 3.x whose jars the registry serves whole (realhbase/README.md); 3.0.0's are not all there.
test-versions: bootstrap
	@for v in $(or $(VERSIONS),2.5.13-hadoop3 3.0.0-alpha-4); do echo "== HBase $$v"; \
	  REALHBASE_VERSION=$$v $(MAKE) --no-print-directory test-realhbase || exit 1; done

# HBase's synchronous replication on real HBase 3.x (2.x has none: the tests skip there, saying why): the failover
# with the source datacenter SIGKILLed mid-writes, and the planned switch, by hand-run statements and through the
# toolkit's executor (`sync-replication run`: the cut-over with a live writer, its rollback, the failover, bad
# starts refused) (docs/cutover.md).
test-sync-replication: bootstrap
	export REALHBASE_VERSION=3.0.0-alpha-4; $(PYTEST) tests/integration/test_sync_replication_realhbase.py \
	  tests/integration/test_sync_cutover_realhbase.py $(PYTEST_ARGS); \
	  $(LEFTOVERS)

# Two real HBase clusters to use by hand in .state/realhbase (`python -m realhbase endpoints --json` says where).
realhbase-up: bootstrap
	$(PY) -m realhbase up

realhbase-down:
	$(PY) -m realhbase down

test-unit: bootstrap
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

test-integration: bootstrap
	$(PYTEST) tests/integration $(PYTEST_ARGS); $(LEFTOVERS)

# The demo migration on the embedded default; its last stdout line is the JSON summary. Leaves nothing running.
demo: bootstrap
	$(PY) -m demo.run $(DEMO_ARGS)

# The same demo on the production-shaped deployment (deploy/): Airflow's API server, scheduler, DAG processor,
# triggerer and Celery workers (Redis, PostgreSQL), a Spark standalone cluster; same JSON summary, last line.
demo-cluster: bootstrap
	$(PY) -m demo.run --cluster $(DEMO_ARGS)

# The same demo on secured real clusters (`realhbase up --secure`; DEMO_ARGS=--stand-in: minihbase's): a KDC with
# two realms and a trust, Kerberized HDFS, SASL ZooKeeper, SASL auth-conf gateways on dc1, HTTP mode with SPNEGO over
# TLS on dc2; the summary's `security` section says how
# each channel authenticated.
demo-secure: bootstrap
	$(PY) -m demo.run --secure $(DEMO_ARGS)

# The cluster demo on real HBase (CHAOS_ARGS=--stand-in: minihbase) under a seeded nemesis (chaos/): faults on real
# processes and through TCP fault proxies at random moments of every phase, an independent
# comparison of every version afterwards; its last stdout line is the JSON summary. Leaves nothing running.
chaos: bootstrap
	$(PY) -m chaos $(CHAOS_ARGS)

# Seeded chaos runs one after another (SEEDS="1 2 3"; default 1 to 20), every fault kind; each run's JSON
# summary in .state/chaos-seeds/<seed>.json, a table of them at the end.
chaos-seeds: bootstrap
	@mkdir -p .state/chaos-seeds; for s in $(or $(SEEDS),$(shell seq 1 20)); do \
	  $(PY) -m chaos --seed $$s --faults all $(CHAOS_ARGS) > .state/chaos-seeds/$$s.json 2> .state/chaos-seeds/$$s.log; \
	  echo "seed $$s: exit $$?"; done; $(PY) -m chaos.seeds .state/chaos-seeds

# Only the tests on the production-shaped deployment.
test-deploy: bootstrap
	$(PYTEST) -m deployment $(PYTEST_ARGS); $(LEFTOVERS)

# A deployment to use by hand (API URL and the admin's password file printed as JSON); `make deploy-down` stops it.
deploy-up: bootstrap
	$(PY) -m deploy up --workdir .state/deploy

deploy-down:
	$(PY) -m deploy down --workdir .state/deploy

bench: bootstrap
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Re-resolve from scratch in a throw-away venv and record the result (run after changing requirements*.txt).
lock:
	rm -rf .state/lockvenv && $(PYTHON) -m venv .state/lockvenv
	.state/lockvenv/bin/pip install -q -r requirements.txt -r requirements-dev.txt
	{ echo "# Full resolved set of a clean install of requirements.txt + requirements-dev.txt (Python 3.11)."; \
	  echo "# Regenerate with: make lock (Airflow's published constraints cannot be fetched here)."; \
	  .state/lockvenv/bin/pip freeze; } > constraints.txt
	rm -rf .state/lockvenv

clean:
	rm -rf .state .airflow/logs .pytest_cache .ruff_cache
