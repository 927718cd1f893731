"""Conformance of a recovered replication queue: `status 'replication'`'s `Recovered Queue:` variant and the
queue znodes after a source region server dies (SIGKILL) while a DISABLED peer holds its WALs, so the queue
another region server claims stays there to be seen. The killed region server is started again afterwards (the
session's bed is shared).

Two shell calls on dc1 a backend (a table and the peer; then the status, the peer removed, the table dropped).
"""
from __future__ import annotations

import re

import pytest

from tests.conformance.conftest import Backend, observe, server_host
from tests.conformance.normalise import mask, split_statements, status_blocks
from tests.conformance.test_replication import znode_snapshot
from tests.conformance.zk_probes import split_metadata
from tests.polling import wait_for

# make test-full: a region server killed on each backend (minutes on real HBase); make test's conformance runs
# the rest of the suite, and its real region server kill is test_toolkit_realhbase.py's (during catch-up).
pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.full]

PEER, TABLE, VICTIM = "conffo", "conf_fo", 1  # VICTIM: the slot of the dc1 region server killed
STATUS = "status 'replication'"
AFTER = [STATUS, f"remove_peer '{PEER}'", f"disable '{TABLE}'", f"drop '{TABLE}'"]


@pytest.fixture(scope="module")
def failover(backend: Backend):
    ep = backend.endpoints()
    masks, host = backend.masks(), server_host(backend)  # taken before the kill: the dead server keeps its name
    dead = ep["dc1"]["region_servers"][VICTIM]["servername"]
    backend.shell_ok("dc1", [f"create '{TABLE}', {{NAME => 'cf', REPLICATION_SCOPE => 1}}",
                             f"add_peer '{PEER}', CLUSTER_KEY => '{ep['dc2']['cluster_key']}', STATE => 'DISABLED', "
                             f"TABLE_CFS => {{'{TABLE}' => []}}"])
    backend.kill_rs("dc1", VICTIM)
    try:
        recovered = f"{PEER}-{dead}"

        def claimed():
            snap = znode_snapshot(backend, "dc1")["replication"]
            return snap if any(p.split("/")[-1] == recovered for p in snap) else None

        queues = wait_for(claimed, timeout=180, interval=1,
                          what=f"{backend.name}: {dead}'s queue of {PEER} claimed by a live region server")
        proc = backend.shell("dc1", AFTER)
    finally:
        backend.start_rs("dc1", VICTIM)
    yield {"queues": queues, "proc": proc, "masks": masks, "host": host, "dead": dead}


def test_recovered_queue_in_status(request, backend, failover):
    assert failover["proc"].returncode == 0, failover["proc"].stdout[-2000:]
    outputs, _ = split_statements(failover["proc"].stdout, AFTER)
    body = [mask(line, failover["masks"], failover["host"]) for line in outputs[0].body]
    header, blocks = status_blocks(body)
    # the recovered queue's line: present, named `<peer>-<dead server>`
    assert any(f"Recovered Queue: {PEER}-<dc1 rs{VICTIM}>" in line for block in blocks for line in block), blocks
    # the disabled peer's queues hold every WAL since it was added: as many as rolled meanwhile (1 or 2 seen on
    # HBase, whose live region server rolls as the dead one's regions move to it): at least 1, then masked
    sizes = [int(n) for block in blocks for line in block for n in re.findall(r"SizeOfLogQueue=(\d+)", line)]
    assert len(sizes) == 2 and min(sizes) >= 1, sizes
    blocks = [tuple(re.sub(r"SizeOfLogQueue=\d+", "SizeOfLogQueue=<n>", line) for line in block) for block in blocks]
    observe(request, backend, (header, blocks), lambda v: v[1])


def test_recovered_queue_znodes(request, backend, failover):
    """The claimed queue under the live server: `<peer>-<dead server>`, its WAL nodes (names: the dead server's
    WALs) and their data; the dead server's own node gone."""
    got = {}
    for rel, (data, ephemeral) in failover["queues"].items():
        if not rel.startswith("rs/"):
            continue
        path = re.sub(r"(<dc1 rs\d encoded>)\.\d{13}", r"\1.<ms>", mask(rel, failover["masks"], failover["host"]))
        header, payload = split_metadata(data)
        got[path] = (header is not None, "empty" if not payload else payload[:4], ephemeral)
    observe(request, backend, got, lambda v: any(f"{PEER}-<dc1 rs{VICTIM}>" in p for p in v))
