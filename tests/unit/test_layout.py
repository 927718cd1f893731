"""The library's rooms: every import (also those inside functions) flows from a room to a room below it, and no
module imports itself back through others (README "Layout")."""
from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "hbase_migration"
# Bottom to top; rooms on one level do not import each other. The CLI (__main__) sits on top of them all.
LEVEL = {"clusters": 0, "ledger": 0, "replication": 1, "data": 2, "migration": 3, "__main__": 4}


def modules() -> dict[str, Path]:
    out = {}
    for path in LIBRARY.rglob("*.py"):
        parts = ["hbase_migration", *path.relative_to(LIBRARY).with_suffix("").parts]
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                           for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in mods and t != name}
    return graph


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_every_module_lives_in_a_room():
    loose = [m for m in modules() if room(m) not in LEVEL and m != "hbase_migration"]
    assert loose == []


def test_imports_flow_down_only():
    upward = sorted(f"{m} -> {t}" for m, targets in import_graph().items() for t in targets
                    if room(m) in LEVEL and room(t) in LEVEL and room(m) != room(t)
                    and LEVEL[room(t)] >= LEVEL[room(m)])
    assert upward == []


def test_no_circle():
    assert circles(import_graph()) == []


def test_the_checker_sees_a_circle_and_an_upward_import():
    graph = {"hbase_migration.clusters.a": {"hbase_migration.data.b"}, "hbase_migration.data.b":
             {"hbase_migration.clusters.a"}}
    assert circles(graph) == [set(graph)]
    assert LEVEL[room("hbase_migration.data.b")] > LEVEL[room("hbase_migration.clusters.a")]


def test_the_library_imports_nothing_of_the_rooms_the_distribution_maps_above_it():
    """`hbase_migration.operators`, `.plugins` (Airflow's layer), `.jobs` (spark-submit targets) sit on top of the
    library although they share its name (pyproject.toml's package-dir)."""
    above = ("hbase_migration.operators", "hbase_migration.plugins", "hbase_migration.jobs")
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"{name} -> {n}" for n in names if n.startswith(above)]
    assert found == []
