"""fetch_jmx over a real local HTTP socket: the query, retries on 5xx, no retry on 4xx, clear errors."""
from __future__ import annotations

import json

import pytest

from hbase_migration.replication.metrics import REPLICATION_BEAN, JmxFormatError, JmxUnavailable, fetch_jmx
from tests.unit.clusters.test_hdfs_http import closed_port, scripted_http

BODY = json.dumps({"beans": [{"name": REPLICATION_BEAN, "source.1.sizeOfLogQueue": 1}]})


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_asks_for_the_replication_bean_and_retries_5xx():
    with scripted_http([(500, "jmx cache busy"), (200, BODY)]) as (url, seen):
        payload = fetch_jmx("127.0.0.1", port_of(url), timeout_s=5, attempts=2, backoff_s=0.01)
    assert payload == json.loads(BODY)
    assert seen == [("/jmx", {"qry": "Hadoop:service=HBase,name=RegionServer,sub=Replication"})] * 2


def test_gives_up_after_the_last_attempt_naming_the_server():
    with scripted_http([(503, "down")] * 3) as (url, seen):
        port = port_of(url)
        with pytest.raises(JmxUnavailable, match=rf"region server 127.0.0.1:{port}: /jmx unreadable after 3 "
                                                 r"attempt\(s\): HTTP 503: down"):
            fetch_jmx("127.0.0.1", port, timeout_s=5, attempts=3, backoff_s=0.01)
    assert len(seen) == 3


def test_4xx_is_not_retried():
    with scripted_http([(400, "malformed ObjectName")]) as (url, seen):
        with pytest.raises(JmxUnavailable, match=r"answered HTTP 400: malformed ObjectName"):
            fetch_jmx("127.0.0.1", port_of(url), attempts=3, backoff_s=0.01)
    assert len(seen) == 1


def test_a_body_that_is_not_json():
    with scripted_http([(200, "<html>")]) as (url, _):
        with pytest.raises(JmxFormatError, match=r"/jmx answered a body that is not JSON: '<html>'"):
            fetch_jmx("127.0.0.1", port_of(url))


def test_connection_refused_names_the_server():
    port = closed_port()
    with pytest.raises(JmxUnavailable, match=rf"region server 127.0.0.1:{port}: /jmx unreadable after 2 "
                                             r"attempt\(s\): ConnectionError"):
        fetch_jmx("127.0.0.1", port, timeout_s=2, attempts=2, backoff_s=0.01)


@pytest.mark.parametrize("args, message", [
    (("", 16030), "host is required"),
    (("rs1", 0), "info_port must be an integer port within 1..65535, got 0"),
    (("rs1", "16030"), "info_port must be an integer port within 1..65535, got '16030'"),
    (("rs1", 16030, 0), "timeout_s must be positive, got 0"),
    (("rs1", 16030, 1.0, 0), "attempts must be an integer >= 1, got 0"),
])
def test_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        fetch_jmx(*args)
