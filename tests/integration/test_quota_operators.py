"""The oldWALs quota check refuses a copy when headroom is short, and the watchdog sensor fires when oldWALs'
quota crosses its mark: both against minihbase's WebHDFS and real HDFS-style quotas."""
import pytest
import requests
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from operators.checks import OldWalsQuotaCheckOperator
from operators.sensors import OldWalsWatchdogSensor

pytestmark = pytest.mark.integration


def space_consumed(cluster, path="/hbase"):
    r = requests.get(f"{cluster.webhdfs_url}/webhdfs/v1{path}", params={"op": "GETCONTENTSUMMARY"}, timeout=10)
    return r.json()["ContentSummary"]["spaceConsumed"]


@pytest.fixture
def quota_cluster(minihbase_factory, monkeypatch):
    cluster = minihbase_factory("quota")
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", cluster.connection_json)
    return cluster


def test_quota_check_passes_with_room(quota_cluster):
    quota_cluster.set_quota("/hbase", space_bytes=space_consumed(quota_cluster) * 100)
    result = OldWalsQuotaCheckOperator(task_id="q", expected_copy_s=60, sample_gap_s=0.5).execute({})
    assert result["decision"]["ok"] is True
    assert result["sample"]["usage"]["constraints"], "the cluster's /hbase quota should be seen"


def test_quota_check_refuses_when_headroom_is_short(quota_cluster):
    used = space_consumed(quota_cluster)
    # A quota barely above what is used: past the 80% high-water mark (no write happens during the check).
    quota_cluster.set_quota("/hbase", space_bytes=int(used / 0.85) + 1)
    with pytest.raises(AirflowFailException, match="oldWALs headroom too short: .*space quota on /hbase"):
        OldWalsQuotaCheckOperator(task_id="q", expected_copy_s=60, sample_gap_s=0.5).execute({})


class CopyRunning:
    """Airflow's task-instance API as the sensor uses it (`get_task_states`), for a run whose copy still runs."""

    dag_id, run_id = "hbase_table_migration", "run1"

    def get_task_states(self, dag_id, task_ids, run_ids):
        return {"run1": {"copy_0": "running", "copy_1": "success"}}


def test_watchdog_fails_loudly_when_oldwals_crosses_its_mark(quota_cluster):
    used = space_consumed(quota_cluster)
    sensor = OldWalsWatchdogSensor(task_id="w", peer_id="mig1", watch_task_ids=["copy"], mark_fraction=0.8)
    quota_cluster.set_quota("/hbase", space_bytes=used * 100)  # 1% used: below the mark, the copy runs on
    assert sensor.poke({"ti": CopyRunning()}) is False
    quota_cluster.set_quota("/hbase", space_bytes=int(used / 0.9) + 1)  # 90% used: past the mark
    with pytest.raises(AirflowException, match="oldWALs quota breach .* Peer mig1 is left as it is"):
        sensor.poke({"ti": CopyRunning()})
