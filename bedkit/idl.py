"""HBase's Thrift IDLs, beside this file: Thrift1's `Hbase.thrift` (HBase's, as happybase vendors it) and Thrift2's
`hbase2.thrift` (written from HBase's wire types). The stand-in's gateways serve them; both beds' readiness
probes and the tests' plain clients speak them."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
THRIFT1 = HERE / "Hbase.thrift"
THRIFT2 = HERE / "hbase2.thrift"


def thrift_modules(prefix: str):
    """(Thrift1 module, Thrift2 module) loaded by thriftpy2 under names of the caller's (`prefix`): each caller
    gets modules of its own, as thriftpy2 keys its cache by module name."""
    import thriftpy2

    return (thriftpy2.load(str(THRIFT1), module_name=f"{prefix}_Hbase_thrift"),
            thriftpy2.load(str(THRIFT2), module_name=f"{prefix}_hbase2_thrift"))
