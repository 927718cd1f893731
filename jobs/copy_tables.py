"""Spark job: copy a batch's tables in one application (hbase_migration/data/batch.py), each table as
jobs/copy_table.py would copy it alone.

    spark-submit jobs/copy_tables.py --tables T1 T2 ... [--batch NAME] [--tables-at-once N]
        <copy_table.py's options but --table/--target-table>

The last stdout line is the batch's JSON summary (each table's under `tables`). Exit 0: every table done and
clean; 1: a table failed, or a cluster does not answer; 2: bad arguments, or a table refused (one line
naming each; nothing was written).
"""
import sys

# Run as a script (spark-submit's target): `hbase_migration` is the installed package's, or the zip's that
# the operator ships with --py-files (a driver in a YARN container).
from hbase_migration.data.batch import batch_main
from hbase_migration.jobs.spark_job import _spark


def main(argv=None) -> int:
    return batch_main("copy", sys.argv[1:] if argv is None else argv, _spark)


if __name__ == "__main__":
    sys.exit(main())
