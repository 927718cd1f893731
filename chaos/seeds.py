"""`python -m chaos.seeds DIR`: the table of a `make chaos-seeds` run, one row per seed from DIR/<seed>.json (the
last stdout line of each `python -m chaos`): the backend, faults fired of those planned and by kind, attempts,
differences, wall time and status. Exit 0 when every seed's status is success; a seed without a summary counts as
failed."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def summary_of(path: Path) -> dict | None:
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def fired_by_kind(summary: dict) -> str:
    """"rs_kill 2, zk_expire 1" for the faults that fired, kinds in the order of their first."""
    counts: dict[str, int] = {}
    for f in summary.get("faults", []):
        if f.get("fired"):
            counts[f["kind"]] = counts.get(f["kind"], 0) + 1
    return ", ".join(f"{k} {n}" for k, n in counts.items()) or "-"


def rows(directory: Path) -> list[tuple]:
    out = []
    for path in sorted(directory.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else 1 << 30):
        s = summary_of(path)
        if s is None:
            out.append((path.stem, "-", "-", "-", "-", "-", "-", "no summary (see its .log)"))
            continue
        fired = s.get("faults_fired", 0)
        planned = len(s.get("faults", []))
        backend = s.get("backend", "minihbase") + (f" {s['hbase_version']}" if s.get("hbase_version") else "")
        status = s.get("status", "success" if s.get("ok") else "failed")
        out.append((path.stem, backend, f"{fired}/{planned}", fired_by_kind(s), len(s.get("attempts", [])),
                    s.get("differences"), s.get("wall_time_s"), status))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python -m chaos.seeds DIR (the directory `make chaos-seeds` wrote)", file=sys.stderr)
        return 2
    table = rows(Path(args[0]))
    print("| seed | backend | faults fired | fired by kind | attempts | differences | wall time (s) | status |")
    print("|---|---|---|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(str(c) for c in row) + " |")
    return 0 if table and all(r[-1] == "success" for r in table) else 1


if __name__ == "__main__":
    sys.exit(main())
