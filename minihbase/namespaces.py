"""Namespaces (HBase's TableNamespaceManager in small) and the master's switches (split, merge, normalizer).

Namespaces: `default` and `hbase` always exist; others are created and dropped explicitly, with their
configuration map (`create_namespace 'ns1', {'PROPERTY' => 'VALUE'}`), and kept in `<rootdir>/.namespaces.json`
(HBase keeps them in the hbase:namespace table; the file is written only once a namespace is created). A table
in a namespace that does not exist is refused (`NamespaceNotFoundException`); only an empty namespace can be
dropped, and never a reserved one (ConstraintException, as DeleteNamespaceProcedure words it).

Switches live where HBase 2.x keeps them, so they survive a restart and any ZooKeeper client can read them:
`<parent>/switch/split` and `<parent>/switch/merge` hold PBUF `SwitchState { optional bool enabled = 1 }`,
`<parent>/normalizer` PBUF `RegionNormalizerState { optional bool normalizer_on = 1 }`. An absent znode reads
as on (SplitOrMergeTracker / RegionNormalizerTracker default to true).
"""
from __future__ import annotations

import json
import posixpath
import re
import threading
from typing import TYPE_CHECKING, Iterable

from minihbase import znodes
from minihbase.errors import ConstraintException, JavaIllegalArgument, NamespaceExist, NamespaceNotFound

if TYPE_CHECKING:
    from minihbase.hdfs import MiniHDFS

BUILTIN = ("default", "hbase")
_LEGAL = re.compile(r"^[A-Za-z0-9_]+$")


def validate_namespace(name: str) -> str:
    """`TableName.isLegalNamespaceName`."""
    if not isinstance(name, str) or not name:
        raise JavaIllegalArgument("Namespace name must not be empty")
    if not _LEGAL.match(name):
        index, bad = next((i, c) for i, c in enumerate(name) if not (c.isalnum() or c == "_"))
        raise JavaIllegalArgument(f"Illegal character <{bad}> at {index}. Namespaces may only contain "
                                  f"'alphanumeric characters' from any language and digits: {name}")
    return name


class Namespaces:
    def __init__(self, fs: "MiniHDFS", rootdir: str):
        self.fs = fs
        self.path = posixpath.join(rootdir, ".namespaces.json")
        self.lock = threading.RLock()
        self._namespaces: dict[str, dict[str, str]] = {name: {} for name in BUILTIN}

    def load(self, table_namespaces: Iterable[str]) -> None:
        """The saved namespaces, plus those of tables already on disk (a workdir older than namespaces)."""
        with self.lock:
            if self.fs.exists(self.path):
                self._namespaces.update(json.loads(self.fs.read_file(self.path)))
            for name in table_namespaces:
                self._namespaces.setdefault(name, {})

    def _save(self) -> None:
        custom = {k: v for k, v in self._namespaces.items() if k not in BUILTIN}
        self.fs.write_file(self.path, json.dumps(custom, sort_keys=True).encode(), overwrite=True)

    def names(self) -> list[str]:
        with self.lock:
            return sorted(self._namespaces)

    def get(self, name: str) -> dict[str, str]:
        with self.lock:
            if name not in self._namespaces:
                raise NamespaceNotFound(name)
            return dict(self._namespaces[name])

    def require(self, name: str) -> None:
        self.get(name)

    def create(self, name: str, configuration: dict[str, str] | None = None) -> None:
        validate_namespace(name)
        with self.lock:
            if name in self._namespaces:
                raise NamespaceExist(name)
            self._namespaces[name] = dict(configuration or {})
            try:
                self._save()
            except Exception:
                del self._namespaces[name]
                raise

    def drop(self, name: str, tables: int) -> None:
        with self.lock:
            if name not in self._namespaces:
                raise NamespaceNotFound(name)
            if name in BUILTIN:
                raise ConstraintException(f"Reserved namespace {name} cannot be removed.")
            if tables:
                raise ConstraintException(f"Only empty namespaces can be removed. Namespace {name} has {tables} "
                                          "tables")
            config = self._namespaces.pop(name)
            try:
                self._save()
            except Exception:
                self._namespaces[name] = config
                raise


# ---------------------------------------------------------------------------------------------- switches
SWITCHES = {"split": "switch/split", "merge": "switch/merge", "normalizer": "normalizer"}


class Switches:
    """The split, merge and normalizer switches in ZooKeeper (HBase's bytes), read through on every use."""

    def __init__(self, zk, znode_parent: str, ident: str):
        self.zk = zk
        self.parent = znode_parent
        self.ident = ident
        self.lock = threading.Lock()

    def _path(self, name: str) -> str:
        if name not in SWITCHES:
            raise JavaIllegalArgument(f"unknown switch {name!r} (split, merge, normalizer)")
        return f"{self.parent}/{SWITCHES[name]}"

    def enabled(self, name: str) -> bool:
        path = self._path(name)
        if self.zk is None or self.zk.exists(path) is None:
            return True
        data, _ = self.zk.get(path)
        return decode_switch(data)

    def set(self, name: str, enabled: bool) -> bool:
        """Set a switch; returns its previous value (what `splitormerge_switch`/`normalizer_switch` print)."""
        path = self._path(name)
        with self.lock:
            previous = self.enabled(name)
            data = znodes.with_metadata(znodes.PB_MAGIC + znodes.pb_varint(1, int(bool(enabled))), ident=self.ident)
            if self.zk.exists(path) is None:
                self.zk.create(path, data, makepath=True)
            else:
                self.zk.set(path, data)
            return previous

    def state(self) -> dict[str, bool]:
        return {name: self.enabled(name) for name in SWITCHES}


def decode_switch(data: bytes) -> bool:
    """`SwitchState` / `RegionNormalizerState` after the ZKMetadata header and PBUF magic; field 1 absent = on."""
    if data and data[0] == 0xFF:
        length = int.from_bytes(data[1:5], "big")
        data = data[5 + length:]
    if data.startswith(znodes.PB_MAGIC):
        data = data[len(znodes.PB_MAGIC):]
    if len(data) >= 2 and data[0] == 0x08:
        return data[1] != 0
    return True
