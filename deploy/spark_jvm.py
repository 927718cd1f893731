"""The Spark driver's JVM on a small machine: the options the tests, the demo and this deployment give spark-submit
(through SPARK_SUBMIT_OPTS, which Spark's launcher adds to the driver's command line) for their short jobs.

Measured on two cores (a `local[2]` job summing a 4-partition RDD, `spark-submit` wall and CPU):
  JDK defaults                                    17-19 s wall, 24-28 s CPU
  C1 only (-XX:TieredStopAtLevel=1), serial GC    13-14 s wall, 13-14 s CPU
  the same with a class data sharing archive      8.5-9 s wall, 7.5-8 s CPU
A job of the tests or the demo lasts seconds to a minute: the JIT's second tier and the parallel collector's
threads cost more than they return there. The toolkit's operators set none of this: production jobs (hours of
copying) keep the JDK's defaults, and so does `make bench`.

The archive (`-XX:SharedArchiveFile`) holds the classes a first job loaded; `main()` (the bootstrap's
`spark-cds` part) writes it once per venv. A missing or stale archive (another JDK, another
pyspark) only costs the speed-up: the JVM then loads its classes as usual, without a word on stdout.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = REPO / ".state" / "spark-cds" / "spark-driver.jsa"
# The JVM's own warnings go to stderr, never into a job's stdout.
FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xlog:disable", "-Xlog:all=warning:stderr"]

_TRAINING_JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("spark-cds").getOrCreate()
rdd = spark.sparkContext.parallelize(range(1000), 4)
print(rdd.mapPartitions(lambda rows: [sum(rows)]).collect(), rdd.map(lambda x: (x % 7, x)).reduceByKey(max).count())
spark.stop()
"""


def submit_opts(archive: Path = ARCHIVE) -> str:
    """SPARK_SUBMIT_OPTS for a short job: C1 only, serial GC, and the archive when there is one."""
    return " ".join(FLAGS + ([f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []))


def with_submit_opts(env: dict[str, str], archive: Path = ARCHIVE) -> dict[str, str]:
    """`env` with SPARK_SUBMIT_OPTS set, unless it sets its own."""
    env.setdefault("SPARK_SUBMIT_OPTS", submit_opts(archive))
    return env


def dump(archive: Path = ARCHIVE, python: str = sys.executable) -> Path:
    """Run the training job once with `-XX:ArchiveClassesAtExit` and keep the archive (written beside, renamed
    into place: a JVM mapping it never sees half a file)."""
    from deploy.spark import spark_home

    archive.parent.mkdir(parents=True, exist_ok=True)
    part = archive.with_suffix(".jsa.part")
    part.unlink(missing_ok=True)
    home = spark_home()
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "spark_cds_training.py"
        job.write_text(_TRAINING_JOB)
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": python,
               "SPARK_SUBMIT_OPTS": " ".join(FLAGS + [f"-XX:ArchiveClassesAtExit={part}"])}
        env.pop("SPARK_CONF_DIR", None)  # the class path must be the one the jobs have: Spark's jars alone
        proc = subprocess.run([str(home / "bin" / "spark-submit"), "--master", "local[2]", str(job)], env=env,
                              capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not part.is_file():
        raise RuntimeError(f"spark-cds: the training job failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    os.replace(part, archive)
    return archive


def main() -> None:
    """The bootstrap's `spark-cds` part (Makefile)."""
    print(f"spark-cds: {dump()} ({ARCHIVE.stat().st_size >> 20} MiB)")
