"""python -m deploy: start, inspect and stop a deployment (Airflow with Celery workers, Redis, PostgreSQL and a
Spark standalone cluster) in a working directory.

    python -m deploy up     --workdir .state/deploy [--spark-workers 2] [--celery-workers 2] [--foreground]
    python -m deploy status --workdir .state/deploy
    python -m deploy down   --workdir .state/deploy

`up` prints the deployment's description (API URL, where the admin's password is, ports, the Spark master's
UI) as JSON and returns, leaving the services running (with --foreground it stays until Ctrl-C or SIGTERM and
then stops everything). `down` stops every process the deployment recorded and checks that none is left.
Exit status: 0 ok, 1 failure (`status`: something recorded is no longer running, or nothing runs).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

DEFAULT_WORKDIR = Path(__file__).resolve().parents[1] / ".state" / "deploy"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deploy", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("up", "status", "down"):
        s = sub.add_parser(name)
        s.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    up = sub.choices["up"]
    up.add_argument("--spark-workers", type=int, default=2)
    up.add_argument("--celery-workers", type=int, default=2)
    up.add_argument("--worker-concurrency", type=int, default=1, help="task slots per Celery worker")
    up.add_argument("--foreground", action="store_true", help="stay until Ctrl-C/SIGTERM, then stop everything")
    args = p.parse_args(argv)
    workdir = args.workdir.resolve()

    if args.command == "up":
        from deploy.deployment import Deployment

        dep = Deployment.start(workdir, spark_workers=args.spark_workers, celery_workers=args.celery_workers,
                               worker_concurrency=args.worker_concurrency)
        print(json.dumps(dep.describe(), indent=2, sort_keys=True), flush=True)
        if args.foreground:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            try:
                signal.pause()
            except (KeyboardInterrupt, SystemExit):
                pass
            finally:
                dep.stop()
        return 0

    if args.command == "status":
        from deploy.processes import leftovers, recorded_sessions

        sessions = recorded_sessions(workdir)
        running = leftovers(workdir)
        state_file = workdir / "deployment.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        report = {"workdir": str(workdir), "api_url": state.get("api_url"),
                  "services": {name: ("running" if name in running else "stopped") for _, name in sessions}}
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0 if sessions and len(running) == len(sessions) else 1

    from deploy.deployment import stop_workdir
    from deploy.processes import leftovers

    was = stop_workdir(workdir)
    left = leftovers(workdir)
    print(json.dumps({"stopped": sorted(was), "left": left}, sort_keys=True))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
