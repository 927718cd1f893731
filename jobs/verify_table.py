"""Spark job: prove a copy. Row counts, or every version of every cell merge-joined, re-compare, optional repair.

    spark-submit jobs/verify_table.py --source CLUSTER --target CLUSTER --table T [--target-table T2]
        [--end-time-ms MS] [--start-time-ms MS] [--families ...] [--level rows|content]
        [--recompare-sleep-s S] [--repair]
    python jobs/verify_table.py --master 'local[2]' ...

One task per source region (as VerifyReplication's mappers). Cells at or after --end-time-ms are not compared;
without it every cell is, future timestamps included (edits in flight then differ at first: --recompare-sleep-s
compares the differing rows again). The last stdout line is the JSON result; exit 0: identical; 1: differences
(or a failed partition, or a cluster that does not answer); 2: bad arguments or tables, or the source table
itself as the target (one line, nothing was read).
Read-only unless --repair is given.
"""
import sys

# Run as a script (spark-submit's target): `hbase_migration` is the installed package's, or the zip's that
# the operator ships with --py-files (a driver in a YARN container).
from hbase_migration.jobs import spark_job


def main(argv=None) -> int:
    return spark_job.main("verify", argv)


if __name__ == "__main__":
    sys.exit(main())
