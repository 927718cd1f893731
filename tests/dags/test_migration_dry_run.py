"""The trigger form's dry run sizes the migration before anything starts: `airflow dags test` of
hbase_table_migration with `dry_run` logs the sizing and the projection, records them in the ledger (the
dashboard's run page shows them), and changes nothing: no peer, no target table, no scratch table, the source's
switches as they were."""
import uuid

import pytest

from tests.dags.airflow_run import airflow_env, dags_test
from tests.hbase_data import SPLITS, spread_key

pytestmark = [pytest.mark.integration, pytest.mark.dags]


def test_a_dry_run_shows_the_sizing_and_changes_nothing(minihbase_pair, tmp_path):
    from hbase_migration.ledger.store import ALL_TABLES, Ledger

    dc1, dc2 = minihbase_pair
    table = "dry_" + uuid.uuid4().hex[:6]
    dc1.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=SPLITS[:3])
    conn = dc1.connection(timeout=60000)
    with conn.table(table).batch(batch_size=1000) as b:
        for i in range(1200):
            b.put(spread_key(i), {b"d:v": b"%d" % i})
    conn.close()
    dc1.flush(table)
    switches = dc1.switches()
    peer_id = "dry_" + uuid.uuid4().hex[:6]
    ledger = tmp_path / "ledger.db"
    conf = {"tables": [table], "peer_id": peer_id, "dry_run": True, "copy_tasks": 3,
            "bulk_loads": "none"}
    rc = dags_test("hbase_table_migration", conf, airflow_env(dc1, dc2, ledger), tmp_path / "dag.log")
    log = (tmp_path / "dag.log").read_text()
    assert rc == 0, log[-5000:]
    assert f"  {table}: 4 regions" in log and "with 3 partitions at once" in log
    assert "[ok  ] copy_projection: projected copy" in log

    with Ledger.open(f"sqlite:///{ledger}") as led:
        run = next(r for r in led.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
        sizing = led.run_sizings(run["run_id"])
    assert set(sizing) == {table, ALL_TABLES}
    assert sizing[table]["figures"]["regions"] == 4 and sizing[table]["figures"]["sample"]["complete"]
    assert sizing[ALL_TABLES]["figures"]["projection"]["copy_tasks"] == 3
    assert sizing[ALL_TABLES]["figures"]["verdict"]["ok"] is True

    assert [t["name"] for t in dc2._control("/control/tables")["tables"]
            if t["name"] == table or t["name"].startswith("hbase_migration_")] == []
    assert peer_id not in str(dc1._control("/control/replication-status"))
    assert dc1.switches() == switches
