"""HBase's Thrift IDLs as thriftpy2 modules: Thrift1's `Hbase.thrift` (the module happybase generates) and
Thrift2's `hbase2.thrift` (the toolkit's own copy of HBase's IDL, beside this file). Read with pkgutil, so they
also load from the zip the Spark jobs ship to their executors.
"""
from __future__ import annotations

import io
import pkgutil
from typing import Any

THRIFT2_MODULE = "hbase_migration_thrift2_thrift"  # thriftpy2 wants the suffix; thrift.is_transient names it too
_thrift2: Any = None


def hbase_thrift() -> Any:
    """The thriftpy2 module happybase generated from Hbase.thrift (TScan, Mutation, ...)."""
    import happybase  # noqa: F401  (loads and registers the Hbase_thrift module)
    import Hbase_thrift

    return Hbase_thrift


def hbase2() -> Any:
    """The Thrift2 module (TScan, TPut, THBaseService...)."""
    global _thrift2
    if _thrift2 is None:
        import thriftpy2

        text = pkgutil.get_data("hbase_migration.clusters", "hbase2.thrift").decode("utf-8")
        _thrift2 = thriftpy2.load_fp(io.StringIO(text), module_name=THRIFT2_MODULE)
    return _thrift2
