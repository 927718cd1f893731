from types import SimpleNamespace

import pytest

from hbase_migration.migration.health import PeerHealth, WatchThresholds, evaluate

NOW = 1_700_000_000.0
TH = WatchThresholds(max_disabled_s=3600, alert_lag_ms=60_000, quota_mark=0.8, min_exhaustion_s=86_400)


def quota(fraction=0.1, projected=None, rate=100.0):
    binding = SimpleNamespace(kind="space", path="/hbase", fraction_used=fraction)
    return SimpleNamespace(usage=SimpleNamespace(binding=binding), projected_exhaustion_s=projected,
                           growth_bytes_per_s=rate)


def test_healthy_pair_has_no_finding():
    peers = (PeerHealth("p1", "ENABLED", NOW - 10, "hbase_migration", {"max_age_ms": 100}),
             PeerHealth("p2", "DISABLED", NOW - 60, None))
    assert evaluate(peers, quota(), None, TH, NOW) == ()


@pytest.mark.parametrize("peers, q, error, subject, fragment", [
    ((PeerHealth("p", "DISABLED", NOW - 7200, None),), quota(), None, "peer p", "DISABLED for 7200s"),
    ((PeerHealth("p", "ENABLED", NOW, None, {"max_age_ms": 90_000}),), quota(), None, "peer p",
     "ageOfLastShippedOp 90000 ms"),
    ((), quota(fraction=0.85), None, "oldWALs", "85.0% used"),
    ((), quota(projected=3600.0), None, "oldWALs", "exhausted in 3600s"),
    ((), None, "cannot read oldWALs", "oldWALs", "cannot read"),
])
def test_breaches(peers, q, error, subject, fragment):
    findings = evaluate(peers, q, error, TH, NOW)
    assert [(f.level, f.subject) for f in findings] == [("breach", subject)]
    assert fragment in findings[0].message


def test_recovered_queues_warn_only():
    peers = (PeerHealth("p", "ENABLED", NOW, None, {"max_age_ms": 1, "recovered_queues": 2}),)
    assert [f.level for f in evaluate(peers, quota(), None, TH, NOW)] == ["warn"]
