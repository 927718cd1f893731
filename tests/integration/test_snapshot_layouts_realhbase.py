"""The snapshot export and clone of the three store-file layouts a snapshot can hold beside plain HFiles, on real
HBase and HDFS (realhbase), each compared every version of every column against the source afterwards:

- a MOB family: its MOB files live under `mobdir/`, and a MOB compaction during the export makes HBase archive the
  snapshot's MOB files (`archive/`), where the export must find them (HBASE-16841: MOB data lost through
  snapshots); the MOB values are read back on the target, again once its cleaner chore has had every chance to
  delete what the clone does not protect;
- reference files: a region split whose daughters are not yet compacted (HBASE-28806: ExportSnapshot failing on
  reference files); the parent's files are what the export copies;
- HFileLinks: a table cloned from a snapshot of another table, that table then dropped (its files in `archive/`,
  kept by the links' back-references), and the clone written to since.

Each runs the CLI (`python -m hbase_migration snapshot-export`: the snapshot, the export by Spark, the clone) on
tables of its own; each takes minutes of real JVMs on two shared cores: `full` (make test's end-to-end migration
already exports a table by snapshot). The verdicts read the clusters without toolkit code (tests/snapshot_bed.py,
demo/workload.py's Thrift2 comparison, WebHDFS through urllib).
"""
from __future__ import annotations

import hashlib
import os
import re
import signal
import time

import pytest

from tests.snapshot_bed import (
    compare_sides,
    exists,
    listing,
    shell_ok,
    snapshot_cli,
    summary_of,
    thrift2,
    unique,
    wait_ledger,
)

pytestmark = [pytest.mark.integration, pytest.mark.realhbase, pytest.mark.slow, pytest.mark.full]

HFILE = r"[0-9a-f]{32}"
REFERENCE = re.compile(rf"^{HFILE}\.[0-9a-f]{{32}}$")  # <referred hfile>.<parent region> (StoreFileInfo)
LINK = re.compile(rf"^[\w][-\w.]*=[0-9a-f]{{32}}-{HFILE}$")  # <table>=<region>-<hfile> (HFileLink)


def _endpoints(bed) -> tuple[dict, dict]:
    endpoints = bed.endpoints()
    return endpoints["dc1"], endpoints["dc2"]


def _put(endpoint: dict, table: str, rows: list) -> None:
    client = thrift2(endpoint)
    try:
        for i in range(0, len(rows), 100):
            client.put(table, rows[i:i + 100])
    finally:
        client.close()


def _row(i: int) -> bytes:
    return b"%02x-%06d" % ((i * 2654435761) % 256, i)  # spread over every region


def _ledger_files(ledger_url: str, copy_id: str, table: str) -> dict:
    from hbase_migration.ledger.store import Ledger

    with Ledger.open(ledger_url) as ledger:
        return ledger.snapshot_files(copy_id, table)


def _files(endpoint: dict, directory: str) -> dict[str, dict]:
    """Every file under `directory`, by path, without the back-reference directories (`.links-*`)."""
    return {p: s for p, s in listing(endpoint, directory).items() if "/.links-" not in p}


def mob_region(table: str) -> str:
    """The encoded name of a table's MOB region (MobUtils.getMobRegionInfo: start key `.mob`, region id 0): the MD5
    of `<table>,.mob,0` (RegionInfo.createRegionName)."""
    return hashlib.md5(f"{table},.mob,0".encode()).hexdigest()


def _cleaner_ttl_s(endpoint: dict) -> float:
    """The target's hbase.master.hfilecleaner.ttl as its master runs it (/conf), in seconds."""
    import urllib.request
    import xml.etree.ElementTree as ET

    master = endpoint["master"]
    with urllib.request.urlopen(f"http://{master['host']}:{master['info_port']}/conf", timeout=30) as r:
        root = ET.fromstring(r.read())
    values = {p.findtext("name"): p.findtext("value") for p in root.iter("property")}
    return int(values.get("hbase.master.hfilecleaner.ttl") or 300000) / 1000.0


@pytest.mark.timeout(1800)  # the export paused until HBase archived the MOB files, then the cleaners' TTL waited
def test_a_mob_family_exports_and_clones_with_its_mob_files_from_mobdir_and_archive(realhbase, tmp_path):
    dc1, dc2 = _endpoints(realhbase)
    table = unique("snapmob_")
    shell_ok(realhbase, "dc1", [
        f"create '{table}', {{NAME => 'd', VERSIONS => 3}}, "
        f"{{NAME => 'm', VERSIONS => 3, IS_MOB => true, MOB_THRESHOLD => 1024}}, SPLITS => ['40', '80', 'c0']"])
    # three flushes of 4 regions: 12 MOB files of ~300 KB (values past MOB_THRESHOLD), store files holding their
    # references, small values kept in the store files, three versions of each cell
    for version in range(3):
        _put(dc1, table, [(_row(i), {b"m:blob": os.urandom(6000), b"m:small": b"s%d" % version,
                                     b"d:v": b"v%d-%d" % (version, i)}, 1_000_000 + version) for i in range(200)])
        shell_ok(realhbase, "dc1", [f"flush '{table}'"])
    mobdir = f"/hbase/mobdir/data/default/{table}/{mob_region(table)}/m"
    assert len(_files(dc1, mobdir)) >= 4, listing(dc1, mobdir)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("mob-")
    snapshot_mob = set(_files(dc1, mobdir))
    # one task at 10 KiB/s: the MOB files (the largest) go first, about 30 s each. Once the first is copied the
    # export is paused (SIGSTOP of its process group: the driver, Spark's JVM, its workers) until HBase has archived
    # every MOB file of the snapshot, so the rest are read from archive/ whatever the machine's speed
    proc = snapshot_cli(dc1, dc2, table, ledger_url, "--copy-id", copy_id, "--workers", "1",
                        "--bytes-per-s", str(10 << 10), wait=False, log=tmp_path / "cli.log")
    archived_mob = f"/hbase/archive/data/default/{table}/{mob_region(table)}/m"
    try:
        wait_ledger(ledger_url, lambda led: len(led.snapshot_files(copy_id, table)) >= 1, 900,
                    "a first file finished", proc)
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            mob_done = [p for p in _ledger_files(ledger_url, copy_id, table) if f"/{mob_region(table)}/m/" in p]
            # a major compaction rewrites the MOB cells into new MOB files (hbase.mob.compaction.type full); the
            # old ones, the snapshot's, are archived by the MOB cleaner chore (the bed runs it every 10 s on files a
            # minute old: realhbase/config.py)
            shell_ok(realhbase, "dc1", [f"major_compact '{table}'"])
            deadline = time.monotonic() + 600
            while set(_files(dc1, mobdir)) & snapshot_mob and time.monotonic() < deadline:
                time.sleep(2)
            assert not set(_files(dc1, mobdir)) & snapshot_mob, "HBase archived not every MOB file in 10 minutes"
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        assert len(mob_done) < len(snapshot_mob), (mob_done, snapshot_mob)  # some still to copy, from archive/
        assert _files(dc1, archived_mob), listing(dc1, archived_mob)
        stdout, _ = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-4000:]
    summary = summary_of(stdout)
    assert summary["cloned"] and summary["copied_twice"] == [], summary
    mob_rows = {path: row for path, row in _ledger_files(ledger_url, copy_id, table).items()
                if f"/{mob_region(table)}/m/" in path}
    where = sorted({row["found_in"] for row in mob_rows.values()})
    assert where == ["archive", "mobdir"], (where, mob_rows)  # both of the MOB files' homes were read
    cmp = compare_sides(dc1, dc2, table)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] == 200, cmp
    assert cmp["source_cells"] == cmp["target_cells"] == 200 * 9, cmp  # 200 rows: three versions of three columns
    # The MOB values are the target's own reads of the exported files in archive/. A clone holds its MOB files
    # as HFileLinks in its mobdir, which HBase's MOB cleaner chore archives as unreferenced (2.6.4; a minute on this
    # bed, an hour and a day by default), taking their back-references with them: the imported snapshot must stay
    # to keep the files (HBASE-16841's kind of loss: the first run of this test, which deleted it, read
    # FileNotFoundException from the target 80 s after the clone). Once HBase's MOB cleaner and its HFileCleaner
    # have run past the TTL on every file the export wrote, every value must still read.
    assert exists(dc2, f"/hbase/.hbase-snapshot/{summary['snapshot']}"), summary
    assert summary["snapshots_deleted"] is False and "MOB compaction" in summary["target_snapshot_kept"], summary
    ttl = _cleaner_ttl_s(dc2)
    newest = max(s["modificationTime"] for s in _files(dc2, f"/hbase/archive/data/default/{table}").values()) / 1000
    time.sleep(max(0.0, newest + ttl + 60 - time.time()))  # both cleaner chores run every 10 s on the bed
    again = compare_sides(dc1, dc2, table)
    assert again["differences"] == 0 and again["target_cells"] == 200 * 9, again


def test_reference_files_of_a_split_not_yet_compacted_export_and_clone(realhbase, tmp_path):
    dc1, dc2 = _endpoints(realhbase)
    table = unique("snapref_")
    # compactions off for this table: the split's daughters keep their reference files (a region server would
    # otherwise compact them away within seconds of the split)
    shell_ok(realhbase, "dc1", [f"create '{table}', {{NAME => 'd', VERSIONS => 3}}, COMPACTION_ENABLED => false"])
    for version in range(2):
        _put(dc1, table, [(_row(i), {b"d:v": os.urandom(500)}, 2_000_000 + version) for i in range(2000)])
        shell_ok(realhbase, "dc1", [f"flush '{table}'"])
    shell_ok(realhbase, "dc1", [f"split '{table}', '80'"])
    data = f"/hbase/data/default/{table}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        references = [p for p in _files(dc1, data) if REFERENCE.match(p.rsplit("/", 1)[1])]
        if len(references) >= 4:  # two files of the parent, referred to by each daughter
            break
        time.sleep(2)
    assert len(references) >= 4, sorted(_files(dc1, data))
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("ref-")
    done = snapshot_cli(dc1, dc2, table, ledger_url, "--copy-id", copy_id, log=tmp_path / "cli.log")
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert done.returncode == 0, log[-4000:]
    summary = summary_of(done.stdout)
    assert summary["cloned"], summary
    # what was copied: the parent region's files the references point to, once each
    parents = {p.rsplit("/", 1)[1].split(".")[1] for p in references}
    copied = _ledger_files(ledger_url, copy_id, table)
    assert len(parents) == 1 and all(path.split("/")[3] in parents for path in copied), (parents, sorted(copied))
    assert len(copied) == len({p.rsplit("/", 1)[1].split(".")[0] for p in references}) == 2, sorted(copied)
    # the clone holds reference files too (restored from the manifest), pointing at the exported parent's files
    target_refs = [p for p in _files(dc2, data) if "." in p.rsplit("/", 1)[1]]
    assert len(target_refs) >= 4, sorted(_files(dc2, data))
    cmp = compare_sides(dc1, dc2, table)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] == 2000, cmp
    assert cmp["source_cells"] == cmp["target_cells"] == 4000, cmp


def test_a_table_of_hfilelinks_into_a_dropped_table_exports_and_clones(realhbase, tmp_path):
    dc1, dc2 = _endpoints(realhbase)
    origin, table = unique("snaporig_"), unique("snaplink_")
    shell_ok(realhbase, "dc1", [f"create '{origin}', {{NAME => 'd', VERSIONS => 3}}, SPLITS => ['80']"])
    for version in range(2):
        _put(dc1, origin, [(_row(i), {b"d:v": b"o%d-%d" % (version, i)}, 3_000_000 + version) for i in range(1000)])
        shell_ok(realhbase, "dc1", [f"flush '{origin}'"])
    # the table exported is a clone of the origin (its store files are HFileLinks); the origin is then dropped,
    # its files archived and kept by the links' back-references; the clone has files of its own since
    shell_ok(realhbase, "dc1", [f"snapshot '{origin}', '{origin}_s'", f"clone_snapshot '{origin}_s', '{table}'",
                                f"delete_snapshot '{origin}_s'", f"disable '{origin}'", f"drop '{origin}'"])
    _put(dc1, table, [(_row(i), {b"d:v": b"new-%d" % i}, 3_000_010) for i in range(500, 1500)])
    shell_ok(realhbase, "dc1", [f"flush '{table}'"])
    names = [p.rsplit("/", 1)[1] for p in _files(dc1, f"/hbase/data/default/{table}")]
    assert sum(bool(LINK.match(n)) for n in names) >= 4 and any(re.fullmatch(HFILE, n) for n in names), names
    assert not exists(dc1, f"/hbase/data/default/{origin}")
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    copy_id = unique("link-")
    done = snapshot_cli(dc1, dc2, table, ledger_url, "--copy-id", copy_id, log=tmp_path / "cli.log")
    log = (tmp_path / "cli.log").read_text(errors="replace")
    assert done.returncode == 0, log[-4000:]
    assert summary_of(done.stdout)["cloned"]
    copied = _ledger_files(ledger_url, copy_id, table)
    linked = {p: r for p, r in copied.items() if p.startswith(f"data/default/{origin}/")}
    assert len(linked) >= 4 and {r["found_in"] for r in linked.values()} == {"archive"}, copied
    assert any(p.startswith(f"data/default/{table}/") for p in copied), copied
    # on the target the origin's files sit in archive/ under the origin's name, where the clone's links look
    assert all(exists(dc2, f"/hbase/archive/{p}") for p in linked)
    cmp = compare_sides(dc1, dc2, table)
    assert cmp["differences"] == 0 and cmp["source_rows"] == cmp["target_rows"] == 1500, cmp
    assert cmp["source_cells"] == cmp["target_cells"] == 1000 * 2 + 1000, cmp

