"""Spark job: the file-copying part of a table's snapshot export (docs/snapshot-export.md).

    spark-submit jobs/snapshot_export.py --source CLUSTER --target CLUSTER --table T --copy-id ID
        --ledger-url-file FILE (a file holding the ledger's URL; --ledger-url URL only without a password)
        [--snapshot NAME] [--tasks N] [--task-bytes-per-s N] [--bytes-per-s N] [--checksum auto|hdfs|md5]
        [--max-load ...] [--critical-load ...]
    python jobs/snapshot_export.py --master 'local[2]' ...   (the same, without spark-submit)

The snapshot is taken before (the operator, through the source's shell) and cloned after; this job needs only HTTP
to both clusters' NameNodes and DataNodes (WebHDFS): it copies the snapshot's manifest into the target's
`.hbase-snapshot/.tmp/<name>`, then every file into the target's `archive/`, balanced over Spark tasks by size,
each file recorded in the ledger as it finishes (a re-run skips it). The last stdout line is the JSON summary.
Exit 0: every file copied and verified; 1: the export stopped (what is left where is said; re-run to resume);
2: bad arguments (nothing changed).
"""
import sys

# Run as a script (spark-submit's target): `hbase_migration` is the installed package's, or the zip's that
# the operator ships with --py-files (a driver in a YARN container).
from hbase_migration.data import jobargs
from hbase_migration.data.executors import SparkExecutor
from hbase_migration.data.snapshot_export import export_main


def _spark(app_name, ns):
    return SparkExecutor(app_name, ns.master, jobargs.spark_conf(ns.conf), ns.log_level)


def main(argv=None) -> int:
    return export_main(sys.argv[1:] if argv is None else argv, _spark, prog="snapshot_export.py", job=True)


if __name__ == "__main__":
    sys.exit(main())
