"""The deployment's generated configuration and environment (no process is started)."""
import configparser
import stat
from pathlib import Path

from deploy.airflow import REPO, AirflowServices
from deploy.deployment import base_env


def _services(tmp_path, **kwargs):
    return AirflowServices(tmp_path, {"PATH": "/usr/bin"}, sql_alchemy_conn="postgresql+psycopg://postgres:s3cret-pg@127.0.0.1:5/airflow",
                           broker_url="redis://:s3cret-broker@127.0.0.1:6/0",
                           result_backend="redis://:s3cret-broker@127.0.0.1:6/1",
                           ledger_url="postgresql://postgres:s3cret-pg@127.0.0.1:5/ledger", **kwargs)


def test_airflow_cfg_is_the_repositorys_with_the_deployments_settings_and_no_secret(tmp_path):
    services = _services(tmp_path, celery_workers=2, heartbeat_timeout_s=30)
    services.write_home()
    text = (services.home / "airflow.cfg").read_text()
    cfg = configparser.RawConfigParser(interpolation=None)
    cfg.read_string(text)
    assert cfg["core"]["executor"] == "CeleryExecutor"
    assert cfg["core"]["dags_folder"] == str(REPO / "dags")
    assert cfg["core"]["plugins_folder"] == str(services.home / "plugins")  # the dashboard: by entry point
    assert cfg["core"]["hostname_callable"] == "deploy.hostname.get_hostname"
    assert cfg["core"]["execution_api_server_url"] == f"http://127.0.0.1:{services.api_port}/execution/"
    assert cfg["api"]["host"] == "127.0.0.1" and cfg["api"]["port"] == str(services.api_port)
    # The PostgreSQL URLs hold the server's password: read through *_cmd options, as the broker's is.
    assert "sql_alchemy_conn" not in cfg["database"] and "sql_alchemy_conn_async" not in cfg["database"]
    assert cfg["database"]["sql_alchemy_conn_cmd"] == cfg["database"]["sql_alchemy_conn_async_cmd"] == \
        f"cat {services.secrets / 'sql_alchemy_conn'}"
    assert cfg["scheduler"]["task_instance_heartbeat_timeout"] == "30"
    # A worker lost after taking a task's message: the task is requeued after 90 s, not the default 600 s; the
    # default pool has the workers' slots, so a task is queued only when a worker can take it.
    assert cfg["scheduler"]["task_queued_timeout"] == "90"
    assert cfg["core"]["default_pool_task_slot_count"] == "2"
    assert "ledger_url" not in cfg["hbase_migration"]
    assert cfg["hbase_migration"]["ledger_url_cmd"] == f"cat {services.secrets / 'ledger_url'}"
    assert cfg["hbase_migration"]["ledger_conn_id"] == ""
    # Settings of the repository's file that the deployment does not change are kept.
    assert cfg["core"]["load_examples"] == "False"
    assert cfg["triggerer"]["capacity"] == "50"
    # Secrets are read through *_cmd options from files only the owner reads; none is in the file itself.
    assert "s3cret-broker" not in text and "s3cret-pg" not in text
    assert "fernet_key" not in cfg["core"] and cfg["core"]["fernet_key_cmd"].startswith("cat ")
    assert "broker_url" not in cfg["celery"] and cfg["celery"]["broker_url_cmd"].startswith("cat ")
    secrets = services.secrets
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    for name in ("fernet_key", "api_secret_key", "jwt_secret", "broker_url", "result_backend", "passwords.json",
                 "sql_alchemy_conn", "ledger_url"):
        assert stat.S_IMODE((secrets / name).stat().st_mode) == 0o600, name
    assert (secrets / "broker_url").read_text().strip() == "redis://:s3cret-broker@127.0.0.1:6/0"
    assert (secrets / "ledger_url").read_text().strip() == "postgresql://postgres:s3cret-pg@127.0.0.1:5/ledger"
    assert services.admin_password and len(services.admin_password) >= 16


def test_each_deployment_gets_secrets_of_its_own(tmp_path):
    a, b = _services(tmp_path / "a"), _services(tmp_path / "b")
    a.write_home()
    b.write_home()
    for name in ("fernet_key", "api_secret_key", "jwt_secret", "passwords.json"):
        assert (a.secrets / name).read_text() != (b.secrets / name).read_text(), name


def test_services_environment_drops_the_callers_airflow_settings(monkeypatch):
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", "{}")
    monkeypatch.setenv("AIRFLOW_HOME", "/elsewhere")
    monkeypatch.setenv("HBASE_MIGRATION_LEDGER_URL", "sqlite:///x.db")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = base_env({"EXTRA": "1"})
    assert not any(k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "HBASE_MIGRATION_")) for k in env)
    assert "AIRFLOW_HOME" not in env
    assert env["PYTHONPATH"] == str(REPO) and env["SPARK_LOCAL_IP"] == "127.0.0.1" and env["EXTRA"] == "1"


def test_cluster_demo_derives_clusters_toml_with_gateways_and_parents_of_its_own(tmp_path):
    import tomllib

    from demo.cluster import clusters_toml

    assert clusters_toml(tmp_path, {}, unique_parents=False) is None
    path = clusters_toml(tmp_path, {"thrift_gateways": 2}, unique_parents=True)
    data = tomllib.loads(Path(path).read_text())
    assert data["defaults"]["thrift_gateways"] == 2
    parents = [c["znode_parent"] for c in data["clusters"].values()]
    assert len(parents) == 2 and all(p.startswith(("/hbase-dc1-", "/hbase-dc2-")) for p in parents), parents
