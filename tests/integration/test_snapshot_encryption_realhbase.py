"""Encrypted families and the snapshot path, on real HBase (realhbase: both clusters run HBase's
KeyStoreKeyProvider with one master key, realhbase/config.py).

A snapshot moves an encrypted family's HFiles as they are: each file's data key is wrapped with the source's master
key, which a target holding another key cannot unwrap. So the CLI refuses such a table before the snapshot is
taken, naming the families and the ways on (the scan copy, or the operator's word that the target has the key),
and changes nothing; with that word given (`--same-master-key`), and true here, the export and the clone work and
every version reads back. The verdicts read the clusters without toolkit code (tests/snapshot_bed.py).
"""
from __future__ import annotations

import pytest

from tests.snapshot_bed import (
    exists,
    listing,
    read_file,
    shell_ok,
    snapshot_cli,
    summary_of,
    thrift2,
    unique,
)

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow]

PLAIN = b"plain-text-that-must-not-show-%06d"


def _encrypted_table(bed, rows: int, flush: bool = True) -> tuple[str, dict, dict]:
    endpoints = bed.endpoints()
    dc1, dc2 = endpoints["dc1"], endpoints["dc2"]
    table = unique("snapenc_")
    shell_ok(bed, "dc1", [
        f"create '{table}', {{NAME => 'e', VERSIONS => 2, ENCRYPTION => 'AES'}}, "
        f"{{NAME => 'k', ENCRYPTION => 'AES', ENCRYPTION_KEY => 'a-family-key-16b'}}, {{NAME => 'p'}}"])
    client = thrift2(dc1)
    try:
        for version in range(2):
            client.put(table, [(b"r%06d" % i, {b"e:v": PLAIN % i, b"k:v": b"k%d" % i, b"p:v": b"p%d" % i},
                                4_000_000 + version) for i in range(rows)])
    finally:
        client.close()
    if flush:  # HFiles to export (the refusal reads the schema only: one shell session fewer)
        shell_ok(bed, "dc1", [f"flush '{table}'"])
    return table, dc1, dc2


def test_an_encrypted_family_is_refused_before_the_snapshot_naming_it_and_the_fix(realhbase, tmp_path):
    table, dc1, dc2 = _encrypted_table(realhbase, 50, flush=False)
    copy_id = unique("enc-")
    done = snapshot_cli(dc1, dc2, table, f"sqlite:///{tmp_path / 'ledger.db'}", "--copy-id", copy_id,
                        log=tmp_path / "cli.log")
    err = (tmp_path / "cli.log").read_text(errors="replace")
    assert done.returncode == 2 and done.stdout == "", err[-3000:]
    line = next(x for x in err.splitlines() if x.startswith("python -m hbase_migration snapshot-export: error:"))
    assert ("refused before the snapshot is taken, nothing changed: initial_copy: "
            f"{table} has encrypted families 'e' (ENCRYPTION => 'AES'), 'k' (ENCRYPTION => 'AES'): ") in line, line
    assert "'p'" not in line and "Copy it by scan" in line and "--same-master-key" in line, line
    from hbase_migration.data.snapshot_export import snapshot_name

    name = snapshot_name(copy_id, table)
    assert not exists(dc1, f"/hbase/.hbase-snapshot/{name}")  # nothing taken
    assert not exists(dc2, f"/hbase/.hbase-migration-staging/{name}") and not listing(
        dc2, f"/hbase/archive/data/default/{table}")  # nothing copied
    assert not exists(dc2, f"/hbase/data/default/{table}")


@pytest.mark.full
def test_with_the_master_key_attested_an_encrypted_table_exports_and_clones(realhbase, tmp_path):
    """The second of a kind (a whole export and clone, minutes): make test-full."""
    from demo.workload import compare

    table, dc1, dc2 = _encrypted_table(realhbase, 1000)
    done = snapshot_cli(dc1, dc2, table, f"sqlite:///{tmp_path / 'ledger.db'}", "--copy-id", unique("enc-"),
                        "--same-master-key", log=tmp_path / "cli.log")
    err = (tmp_path / "cli.log").read_text(errors="replace")
    assert done.returncode == 0, err[-4000:]
    assert summary_of(done.stdout)["cloned"]
    # the files crossed as they were, encrypted: no value of family e shows in their bytes on the target
    archived = [p for p in listing(dc2, f"/hbase/archive/data/default/{table}") if "/e/" in p and "/.links-" not in p]
    assert archived
    for path in archived:
        data = read_file(dc2, path)
        assert PLAIN % 1 not in data and b"plain-text-that-must-not-show" not in data, path
    src, dst = thrift2(dc1), thrift2(dc2)
    try:
        cmp = compare(src, dst, table).as_dict()
    finally:
        src.close()
        dst.close()
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] == 1000, cmp
    assert cmp["target_cells"] == 1000 * 4, cmp  # e: two versions; k and p: one each (VERSIONS 1)
    described = shell_ok(realhbase, "dc2", [f"describe '{table}'"])
    assert described.count("ENCRYPTION => 'AES'") == 2, described
