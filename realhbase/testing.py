"""The test bed's Python API under the name tests and the demo use: `RealHBase(workdir, zookeeper_hosts=None)`
with `.up()`, `.endpoints()`, `.kill_rs()`, `.start_rs()`, `.shell()`, `.set_quota()`, `.roll_wals()`, `.down()`."""
from realhbase.jars import RealHBaseError
from realhbase.testbed import RealHBase

__all__ = ["RealHBase", "RealHBaseError"]
