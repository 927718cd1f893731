"""A run's tables in batches, each with its own peer (issue 42). Pure: the plan, the peers' ids, the order.

Why batches: one peer for every table is added before the first copy and enabled after the last, so the source's
WALs stay pinned in oldWALs for the whole copy of every table, and one failed table holds back the catch-up of all
the others. A batch's peer is added DISABLED just before its own copies and enabled as soon as its tables are on
the target: its WALs are pinned for its own copy only, and a failed table fails its batch while the others go on.
At most `batches_at_once` batches copy side by side (each holds a "slot" in the ledger from its peer's addition to
the end of its copies), which bounds the pinned backlog and the load on the source.

How tables are batched: as the operator lists them (`batches`: each item a comma-separated list of the run's
tables, every table in exactly one), else by size: largest first (the longest copies start first), a batch filled
until it would pass `batch_max_tables` tables or `batch_max_bytes` bytes of store files (the sizing's figures; a
table not sized counts as 0, a table larger than the cap goes alone). A run of a few tables is one batch, whose
peer is the run's `peer_id` itself; with more, batch k's peer is `<peer_id>_b<k>`.

The defaults cut by bytes: a batch's fixed cost (two Spark applications, its peer's shell sessions: about two
minutes, bench/bench_many_tables.py) is noise against the copy of 1 TiB (hours), and the WALs it pins are what its
copy's hours write. Small tables share a batch up to 300 of them (one Spark application plans them all); 40 TB in
300 tables is about 40 batches, 300 tables of a few MB each one batch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from hbase_migration.replication.model import normalize_table, validate_peer_id

DEFAULT_MAX_TABLES = 300
DEFAULT_MAX_BYTES = 1 << 40  # 1 TiB of store files
PEER_SUFFIX = re.compile(r"^(?P<base>.+)_b(?P<k>\d+)$")


@dataclass(frozen=True)
class Batch:
    index: int  # 0-based: the mapped task group's map index
    name: str  # "b1", "b2", ...
    peer_id: str
    tables: tuple[str, ...]
    bytes: int  # the store files' bytes the sizing found (0: not sized)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "batch": self.name, "peer_id": self.peer_id, "tables": list(self.tables),
                "bytes": self.bytes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Batch":
        return cls(int(data["index"]), data["batch"], data["peer_id"], tuple(data["tables"]), int(data.get("bytes", 0)))


def peer_ids(peer_id: str, count: int) -> list[str]:
    """The batches' peers: the run's own id for one batch, `<peer_id>_b1`... for more (pure)."""
    if count == 1:
        return [peer_id]
    return [f"{peer_id}_b{k}" for k in range(1, count + 1)]


def is_batch_peer(peer_id: str, base: str) -> bool:
    """Whether `peer_id` is one of a run's batch peers, the run's peer id being `base`."""
    m = PEER_SUFFIX.match(peer_id)
    return peer_id == base or (m is not None and m.group("base") == base)


def parse_listed(value: Any) -> tuple[tuple[str, ...], ...]:
    """The operator's listing: a list of comma-separated table lists (or of lists), blanks dropped (pure).
    ValueError names what is wrong."""
    if value in (None, "", [], ()):
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"must be a list of batches, each 'table1,table2,...', got {value!r}")
    out = []
    for item in value:
        names = item.split(",") if isinstance(item, str) else item
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"each batch must be 'table1,table2,...', got {item!r}")
        tables = tuple(normalize_table(n.strip()) for n in names if n.strip())
        if tables:
            out.append(tables)
    return tuple(out)


def check_listed(listed: Sequence[Sequence[str]], tables: Sequence[str]) -> None:
    """Every table of the run in exactly one listed batch, and nothing else (ValueError naming the first)."""
    seen: dict[str, int] = {}
    for k, batch in enumerate(listed, 1):
        for t in batch:
            if t not in tables:
                raise ValueError(f"batch {k} names {t!r}, which is not one of the run's tables")
            if t in seen:
                raise ValueError(f"{t!r} is in batch {seen[t]} and batch {k}: give each table one batch")
            seen[t] = k
    missing = [t for t in tables if t not in seen]
    if listed and missing:
        raise ValueError(f"{missing[0]!r} is in no batch: list every table of the run (or no batch at all, to "
                         "batch them by size)")


def plan(tables: Sequence[str], peer_id: str, *, sizes: Mapping[str, int | None] | None = None,
         listed: Sequence[Sequence[str]] = (), max_tables: int = DEFAULT_MAX_TABLES,
         max_bytes: int = DEFAULT_MAX_BYTES) -> list[Batch]:
    """The run's batches (pure): as `listed`, else by size (module docstring). `max_bytes` 0: no byte cap."""
    if max_tables < 1:
        raise ValueError(f"max_tables must be at least 1, got {max_tables}")
    sizes = dict(sizes or {})
    size = {t: int(sizes.get(t) or 0) for t in tables}
    if listed:
        check_listed(listed, tables)
        groups = [list(b) for b in listed]
    else:
        order = sorted(tables, key=lambda t: (-size[t], tables.index(t)))
        groups, current, current_bytes = [], [], 0
        for t in order:
            full = len(current) >= max_tables or (max_bytes and current and current_bytes + size[t] > max_bytes)
            if full:
                groups.append(current)
                current, current_bytes = [], 0
            current.append(t)
            current_bytes += size[t]
        if current:
            groups.append(current)
    peers = peer_ids(peer_id, len(groups))
    for p in peers:
        validate_peer_id(p)  # `<peer_id>_b<k>` must stay within HBase's 64 characters
    return [Batch(k, f"b{k + 1}", peers[k], tuple(g), sum(size[t] for t in g)) for k, g in enumerate(groups)]


def sizes_from_sizing(sizings: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Each table's store file and memstore bytes from the ledger's sizing rows (`run_sizings`), where sized."""
    out = {}
    for table, row in sizings.items():
        figures = (row or {}).get("figures") or {}
        if "store_file_bytes" in figures:
            out[table] = int(figures.get("store_file_bytes") or 0) + int(figures.get("memstore_bytes") or 0)
    return out


def failed_batches(failed_tasks: Sequence[str], group: str = "batch") -> list[int]:
    """The map indexes of the batches with a failed task, from Airflow's `<group>.<task>_<map index>` keys."""
    found = set()
    for key in failed_tasks:
        m = re.match(rf"^{re.escape(group)}\.[^.]+_(\d+)$", key)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)
