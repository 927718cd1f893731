"""A stand-in for one copy task's oldWALs watchdog, run as its own process by the NameNode call-count test
(tests/integration/test_oldwals_watch_realhbase.py): it starts the library's `Watchdog` exactly as the copy and
export operators do (the run's ledger, the run id, the source cluster), until the file `stop` appears.

    python tests/watchdog_task.py CLUSTER_JSON LEDGER_URL RUN_ID PEER_ID INTERVAL_S STOP_FILE OUT_FILE

OUT_FILE is created once the watchdog runs, and gets one JSON line at the end: the readings this watchdog took,
the ones it acted on, its WebHDFS calls.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str]) -> int:
    from hbase_migration.data.executors import configure_logging
    from hbase_migration.data.jobargs import cluster_from_text

    configure_logging("INFO")  # the watchdog's lines on stderr (the test keeps them per task)
    from hbase_migration.migration.quota import Watchdog

    cluster_json, ledger_url, run_id, peer_id, interval, stop_file, out_file = argv
    cluster = cluster_from_text("source", cluster_json)
    dog = Watchdog(cluster, peer_id or None, "fail", 0.8, float(interval), ledger_url, run_id).start()
    Path(out_file).touch()
    while not os.path.exists(stop_file):
        time.sleep(0.1)
    dog.stop(timeout_s=60)
    Path(out_file).write_text(json.dumps({"samples": dog.samples, "seen": dog.seen, "calls": dog.calls}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
