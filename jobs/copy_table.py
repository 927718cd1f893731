"""Spark job: copy an HBase table to another cluster, keeping every cell's timestamp (a PySpark CopyTable).

    spark-submit jobs/copy_table.py --source CLUSTER --target CLUSTER --table T [--target-table T2]
        [--start-time-ms MS] [--end-time-ms MS] [--families cf1 src:dst]
        [--savepoint FILE | --ledger-url URL | --ledger-url-file FILE]
    python jobs/copy_table.py --master 'local[2]' ...   (the same, without spark-submit)

A ledger URL holding a password is refused on the command line: it goes in a file only its owner can read, named by
--ledger-url-file (a bare name is also looked for among the files shipped with --files, as the operator ships it).

The driver checks both tables, plans one partition per source region (big regions split at sampled keys
with --rows-per-partition), drops the partitions the savepoint/ledger already holds, and runs one task per
remaining partition; each finished partition is recorded while the job runs. The last stdout line is the
JSON summary; logs go to stderr. Exit 0: every partition copied; 1: some failed (re-run to retry them,
finished ones are skipped), or a cluster does not answer; 2: bad arguments or tables, or the source table as
the target on the same cluster (one line, nothing was written).
"""
import sys

# Run as a script (spark-submit's target): `hbase_migration` is the installed package's, or the zip's that
# the operator ships with --py-files (a driver in a YARN container).
from hbase_migration.jobs import spark_job


def main(argv=None) -> int:
    return spark_job.main("copy", argv)


if __name__ == "__main__":
    sys.exit(main())
