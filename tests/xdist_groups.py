"""`make test`'s two pytest-xdist workers: which tests go to one worker together.

Every test that uses the real HBase test bed is one unit of work (the bed starts once, in the worker that runs them,
and stops after the last: tests/realhbase_fixtures.py), every test that uses the secured real bed another; every
other test goes with the rest of its file (a file's module fixtures, a minihbase pair or a Spark session, are then
set up once). Units are handed out in the order collected (`--no-loadscope-reorder`): the plain bed's first, so its
worker starts on it at once, then the secured bed's, which the other worker takes, then the files after them.

pytest-xdist's own `--dist loadgroup` renames `item._nodeid`, which pytest 9 no longer reads (a node's id is
`item._id` there), so its groups never form. Here the workers write each test's unit to a file the controller's
scheduler reads (`pytest_xdist_make_scheduler`, pytest-xdist's documented hook); the tests keep their own ids.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

ENV = "TESTS_XDIST_UNITS"  # the file, named by the controller before it starts its workers (they inherit it)


def unit_of(item) -> str:
    from tests.realhbase_fixtures import _uses_bed, _uses_secure_bed

    if _uses_secure_bed(item):
        return "realhbase-secure"
    return "realhbase" if _uses_bed(item) else item.nodeid.split("::")[0]


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    fd, path = tempfile.mkstemp(prefix="xdist-units-", suffix=".json")
    os.close(fd)
    os.environ[ENV] = config._xdist_units = path


def pytest_unconfigure(config):
    path = getattr(config, "_xdist_units", None)
    if path:
        Path(path).unlink(missing_ok=True)
        os.environ.pop(ENV, None)


@pytest.hookimpl(trylast=True)  # after the bed's tests are sorted first
def pytest_collection_modifyitems(config, items):
    worker, path = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(ENV)
    if not worker or not path:
        return
    # Every worker collects the same tests: whichever writes last writes the same mapping, whole (a rename).
    Path(f"{path}.{worker}").write_text(json.dumps({item.nodeid: unit_of(item) for item in items}))
    os.replace(f"{path}.{worker}", path)


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        """LoadScopeScheduling over the units the workers wrote (read once every worker has collected)."""

        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:
                self.units = json.loads(Path(os.environ[ENV]).read_text())
            return self.units.get(nodeid) or nodeid.split("::")[0]

    return Units(config, log)
