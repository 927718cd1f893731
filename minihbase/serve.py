"""`python -m minihbase serve --cluster NAME --workdir W --zookeeper HOST:PORT`: run one cluster in this process.

Reads `<W>/<NAME>/config.json`, starts the cluster, writes `endpoints.json` once ready (and again whenever it
changes, e.g. after a region server restart), and stops gracefully on SIGTERM or `POST /control/shutdown`.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

from minihbase.config import ClusterConfig
from minihbase.httpserver import Response


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def run(name: str, workdir: Path, zk_hosts: str) -> int:
    from minihbase.cluster import MiniHBaseCluster

    d = Path(workdir) / name
    logging.basicConfig(filename=d / "cluster.log", level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    log = logging.getLogger("minihbase.serve")
    (d / "serve.pid").write_text(str(os.getpid()))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cluster = None
    try:
        config = ClusterConfig.from_json((d / "config.json").read_text())
        cluster = MiniHBaseCluster(config, Path(workdir), zk_hosts)
        cluster.control.route("POST", "/control/shutdown", lambda r: (stop.set(), Response(200, {"stopping": True}))[1])
        cluster.start()
    except Exception as e:
        log.exception("cluster %s failed to start", name)
        (d / "serve.error").write_text(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        (d / "serve.pid").unlink(missing_ok=True)
        if cluster is not None:
            try:
                cluster.stop()
            except Exception:
                log.exception("stopping the half-started cluster %s", name)
        return 1
    last = None
    try:
        while not stop.is_set():
            endpoints = cluster.endpoints()
            endpoints["pid"] = os.getpid()
            if endpoints != last:
                _write_json(d / "endpoints.json", endpoints)
                last = endpoints
            stop.wait(0.5)
    finally:
        log.info("cluster %s stopping", name)
        (d / "endpoints.json").unlink(missing_ok=True)
        try:
            cluster.stop()
        finally:
            (d / "serve.pid").unlink(missing_ok=True)
            log.info("cluster %s stopped", name)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
