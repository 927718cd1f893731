"""The clusters a demo runs on: realhbase (real Apache HBase and HDFS from Maven Central's jars, the default) or
minihbase (the fast stand-in, `--stand-in`), driven through the same verbs (`up`, `endpoints --json`, `down`).

A test session that already runs a realhbase test bed hands its workdir in (`reuse`): the demo then neither
starts nor stops it, and keeps to its own tables and peer.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
BACKENDS = ("realhbase", "minihbase")


class TestBed:
    """One backend's two clusters (dc1, dc2) under `workdir`."""

    __test__ = False  # not a pytest class

    def __init__(self, kind: str, workdir: Path, *, zookeeper: str | None = None, config: Path | None = None,
                 secure: bool = False, reuse: bool = False, yarn: bool = False) -> None:
        if kind not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {kind!r}")
        if config is not None and kind != "minihbase":
            raise ValueError("a clusters.toml configures minihbase only")
        if yarn and kind != "realhbase":
            raise ValueError("YARN runs on realhbase only (realhbase up --yarn)")
        self.kind, self.workdir, self.zookeeper, self.config = kind, Path(workdir), zookeeper, config
        self.secure, self.reuse, self.yarn = secure, reuse, yarn

    def _run(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run([PY, "-m", self.kind, *args, "--workdir", str(self.workdir)], cwd=REPO,
                              capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{self.kind} {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return proc.stdout

    def up(self) -> None:
        if self.reuse:
            return
        self._run("up", *(["--secure"] if self.secure else []), *(["--yarn"] if self.yarn else []),
                  *(["--zookeeper", self.zookeeper] if self.zookeeper else []),
                  *(["--config", str(self.config)] if self.config else []))

    def described(self) -> dict[str, Any]:
        """`endpoints --json`: {"clusters": {"dc1": ..., "dc2": ...}[, "security": ...]}, the same schema on
        both backends."""
        return json.loads(self._run("endpoints", "--json"))

    def down(self) -> None:
        if not self.reuse:
            self._run("down", check=False)

    def version(self, endpoint: dict[str, Any]) -> str | None:
        """HBase's version on realhbase (minihbase imitates no single release)."""
        return endpoint.get("hbase_version") if self.kind == "realhbase" else None
