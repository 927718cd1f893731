"""`python -m hbase_migration copy|verify` in-process (partitions on threads, no Spark): exit 0 on a clean copy,
1 when verify finds a difference (named in the JSON summary), 2 on a usage error with nothing written."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def cli(args, dc1, dc2):
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "AIRFLOW_CONN_SRC": dc1.connection_json, "AIRFLOW_CONN_DST": dc2.connection_json}
    proc = subprocess.run([sys.executable, "-m", "hbase_migration", *args, "--workers", "2", "--json"],
                          env=env, capture_output=True, text=True, cwd=REPO, timeout=600)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
    return proc.returncode, json.loads(last) if last.startswith("{") else {}, proc.stderr


def test_copy_then_verify_then_a_difference(minihbase_pair):
    dc1, dc2 = minihbase_pair
    table = "cli_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1}}, split_keys=[b"r0500"])
    conn = dc1.connection()
    with conn.table(table).batch(batch_size=500) as b:
        for i in range(1000):
            b.put(b"r%04d" % i, {b"d:v": b"%d" % i})
    conn.close()

    rc, summary, err = cli(["copy", "--source", "src", "--target", "dst", "--table", table], dc1, dc2)
    assert rc == 0, err[-3000:]
    assert summary["rows"] == 1000 and summary["failed_partitions"] == 0

    rc, summary, err = cli(["verify", "--source", "src", "--target", "dst", "--table", table], dc1, dc2)
    assert rc == 0 and summary["identical"] is True and summary["matching"] == 1000, err[-3000:]

    target = dc2.connection()
    target.table(table).put(b"r0042", {b"d:v": b"changed"})
    target.close()
    rc, summary, err = cli(["verify", "--source", "src", "--target", "dst", "--table", table], dc1, dc2)
    assert rc == 1, err[-3000:]
    assert summary["content_different"] == 1
    assert summary["differing_rows_sample"]["content_different"] == ["r0042"]


def test_usage_error_is_exit_2(minihbase_pair):
    dc1, dc2 = minihbase_pair
    rc, _, err = cli(["copy", "--source", "src", "--target", "dst", "--table", "no_such_table"], dc1, dc2)
    assert rc == 2 and "no_such_table" in err


def test_onto_itself_is_refused_but_another_table_of_the_same_cluster_is_copied(minihbase_pair):
    dc1, dc2 = minihbase_pair
    table = "self_" + uuid.uuid4().hex[:6]
    dc1.create_table(table, {"d": {"max_versions": 3}}, split_keys=[b"r5"])
    dc1.create_table(table + "_new", {"d": {"max_versions": 3}}, split_keys=[b"r5"])
    conn = dc1.connection()
    for i in range(10):
        for ts in (100, 200):
            conn.table(table).put(b"r%d" % i, {b"d:v": b"%d@%d" % (i, ts)}, timestamp=ts)

    def cells(name):
        t = conn.table(name)
        return {row: t.cells(row, b"d:v", versions=5, include_timestamp=True) for row, _ in t.scan()}

    before = cells(table)
    for kind in ("verify", "copy"):  # one wrong connection id: never "identical", never a rewrite of itself
        rc, summary, err = cli([kind, "--source", "src", "--target", "src", "--table", table], dc1, dc2)
        assert rc == 2 and summary == {}, err[-2000:]
        assert err.strip().startswith("error: target: 'src' is the source cluster 'src'") and "onto itself" in err
    assert cells(table) == before

    # Within one cluster to another table (CopyTable's --new.name): copied with every version and timestamp.
    rc, summary, err = cli(["copy", "--source", "src", "--target", "src", "--table", table, "--target-table",
                            table + "_new"], dc1, dc2)
    assert rc == 0 and summary["rows"] == 10 and summary["cells"] == 20, err[-3000:]
    assert cells(table + "_new") == before
    rc, summary, err = cli(["verify", "--source", "src", "--target", "src", "--table", table, "--target-table",
                            table + "_new"], dc1, dc2)
    assert rc == 0 and summary["identical"] is True, err[-3000:]
    conn.close()
