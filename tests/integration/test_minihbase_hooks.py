"""The hooks replication (minihbase part 2) builds on, exercised through a real cluster process: an extension
installed from the cluster's settings sees WAL rolls and archives, serves `POST /replicateWALEntry` on the
region servers' RPC ports, writes replicated edits with their cluster ids, and vetoes log-cleaner deletions.

`install` below runs inside the cluster process (`extensions = ["tests.integration.test_minihbase_hooks:install"]`).
"""
from __future__ import annotations

import pytest
import requests

from minihbase.wal import read_entries
from tests.polling import wait_for

pytestmark = pytest.mark.integration

EXTENSION = "tests.integration.test_minihbase_hooks:install"


def install(cluster) -> None:
    """A miniature replication plug-in: records events, applies shipped edits, pins WALs against cleaning."""
    from minihbase.cells import Cell
    from minihbase.httpserver import Response

    events: list = []
    pinned: set = set()

    class Pin:
        def is_file_deletable(self, status: dict) -> bool:
            return status["name"] not in pinned

    cluster.master.log_cleaner.delegates.append(Pin())

    def on_rs(rs) -> None:
        rs.wal.roll_listeners.append(lambda old, new: events.append(["roll", rs.servername, old, new]))
        rs.wal.archive_listeners.append(lambda old, new: events.append(["archive", rs.servername, old, new]))

        def replicate(request):
            body = request.json()
            rows = [[Cell(r.encode(), f.encode(), q.encode(), ts, 4, v.encode())] for r, f, q, ts, v in body["rows"]]
            rs.apply_replicated(body["table"].encode(), rows, body["cluster_ids"])
            return Response(200, {"applied": len(rows)})

        def pin(request):
            pinned.update(request.json()["names"])
            return Response(200, {"pinned": sorted(pinned)})

        rs.rpc.route("POST", "/replicateWALEntry", replicate)
        rs.rpc.route("POST", "/pin", pin)
        rs.rpc.route("GET", "/events", lambda request: Response(200, events))

    cluster.rs_init_hooks.append(on_rs)



def test_extension_hooks(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, extensions=[EXTENSION], log_cleaner_ttl_s=0.5,
                                log_cleaner_interval_s=0.5)
    rs = cluster.region_servers[0]
    rpc = f"http://{rs['host']}:{rs['port']}"
    events = requests.get(f"{rpc}/events", timeout=10).json()
    assert events[0][:3] == ["roll", rs["servername"], None]  # the first WAL is seen too
    first_wal = events[0][3]

    conn = cluster.connection()
    conn.create_table("t", {"cf": {}})
    conn.table("t").put(b"local", {b"cf:q": b"from a client"})
    source_ids = ["0b1e5b49-6f5e-4bd4-a1d3-0c2f5e2a9a11"]
    reply = requests.post(f"{rpc}/replicateWALEntry", json={
        "table": "t", "rows": [["shipped", "cf", "q", 1234, "from dc0"]], "cluster_ids": source_ids}, timeout=10)
    assert reply.json() == {"applied": 1}
    assert conn.table("t").row(b"shipped", include_timestamp=True) == {b"cf:q": (b"from dc0", 1234)}

    wal = cluster.local_rootdir / first_wal.split("/hbase/", 1)[1]
    by_row = {c.row: e.cluster_ids for e, _ in read_entries(wal.read_bytes()) for c in e.cells}
    assert by_row == {b"local": [cluster.cluster_id], b"shipped": source_ids}

    first_name = first_wal.rsplit("/", 1)[1]
    requests.post(f"{rpc}/pin", json={"names": [first_name]}, timeout=10)
    cluster.flush("t")
    cluster.roll_wals()
    archived = wait_for(lambda: [e for e in requests.get(f"{rpc}/events", timeout=10).json()
                                 if e[0] == "archive" and e[2] == first_wal], what="the archive event")
    assert archived[0][3].endswith(f"/hbase/oldWALs/{first_name}")
    # The TTL has long passed, but the pinning delegate vetoes: the file stays while later ones go.
    cluster.roll_wals()
    wait_for(lambda: len(list((cluster.local_rootdir / "oldWALs").iterdir())) == 1 or None, what="cleaning")
    cluster.run_log_cleaner()
    assert [p.name for p in (cluster.local_rootdir / "oldWALs").iterdir()] == [first_name]
    conn.close()
