"""Spark job: prove a copy. Row counts, range hashes, bisection to a row diff, re-compare, optional repair.

    spark-submit jobs/verify_table.py --source CLUSTER --target CLUSTER --table T [--target-table T2]
        [--end-time-ms MS] [--start-time-ms MS] [--families ...] [--level rows|content]
        [--recompare-sleep-s S] [--repair]
    python jobs/verify_table.py --master 'local[2]' ...

One task per source region (as VerifyReplication's mappers). Cells newer than the cutoff (--end-time-ms,
default: when the job starts) are not compared, so edits in flight do not count. The last stdout line is
the JSON result; exit 0: identical; 1: differences (or a failed partition, or a cluster that does not answer);
2: bad arguments or tables, or the source table itself as the target (one line, nothing was read).
Read-only unless --repair is given.
"""
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs import spark_job  # noqa: E402


def main(argv=None) -> int:
    return spark_job.main("verify", argv)


if __name__ == "__main__":
    sys.exit(main())
