"""The README and the pages under docs/ point at what exists: every relative link resolves to a file (and, with an
anchor, to a heading of it), every repository path they name in backticks exists, every page is reachable from the
README, and the README's layout names every module of the library (README "Layout")."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
# Paths named in backticks are checked when they start with one of the repository's own folders.
FOLDERS = ("hbase_migration/", "operators/", "dags/", "plugins/", "jobs/", "sql/", "tests/", "bench/", "chaos/",
           "deploy/", "demo/", "minihbase/", "realhbase/", "docs/", "scripts/")

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: links reduced to their text, lower case, punctuation dropped (`_` and `-`
    kept), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(prose(page.read_text())):
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    return LINK.findall(CODE_SPAN.sub("", prose(page.read_text())))


def test_the_pages_exist():
    assert REPO / "README.md" in PAGES
    assert len(PAGES) > 1, "no page under docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            shown = resolved.relative_to(REPO) if REPO in resolved.parents else resolved
            broken.append(f"{target}: no such file {shown}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor} in {resolved.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_named_exists(page: Path):
    missing = []
    for span in CODE_SPAN.findall(prose(page.read_text())):
        token = re.match(r"[\w./*-]+", span.strip())
        if token is None or not token.group(0).startswith(FOLDERS):
            continue
        name = token.group(0).rstrip(".")
        if not (list(REPO.glob(name)) if "*" in name else (REPO / name).exists()):
            missing.append(name)
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {', '.join(missing)}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(REPO / "README.md") if t.startswith("docs/")}
    unlinked = [p.name for p in PAGES if p.parent.name == "docs" and p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {', '.join(unlinked)}"


def layout_paths() -> set[str]:
    """The paths the README's layout names: an entry is a line indented less than the description column, its
    names before the first double space; a name ending in `/` is a folder whose entries are indented deeper."""
    section = (REPO / "README.md").read_text().partition("\n## Layout\n")[2]
    block = FENCE.search(section)
    assert block, "README.md has no Layout section with a code block"
    named: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, folder path)
    for line in block.group(0).splitlines()[1:-1]:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= 12:  # a description's continuation
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        for name in re.split(r"\s{2,}", line.strip())[0].split(" "):
            named.add(parent + name)
            if name.endswith("/"):
                stack.append((indent, parent + name))
    return named


def test_the_readme_layout_names_every_module_of_the_library():
    named = layout_paths()
    library = REPO / "hbase_migration"
    modules = [p for p in library.rglob("*") if p.suffix in (".py", ".thrift") and p.name != "__init__.py"]
    rooms = [p for p in library.rglob("*") if p.is_dir() and (p / "__init__.py").exists()]
    expected = {str(p.relative_to(REPO)) for p in modules} | {f"{p.relative_to(REPO)}/" for p in rooms}
    missing = sorted(expected - named)
    assert not missing, f"README.md's layout does not name: {', '.join(missing)}"
    gone = sorted(n for n in named if n.startswith("hbase_migration/") and not (REPO / n).exists())
    assert not gone, f"README.md's layout names what does not exist: {', '.join(gone)}"
