"""Moved to `bedkit.security.zk`: this name stays an alias of it for older imports."""
import sys

from bedkit.security import zk

sys.modules[__name__] = zk
