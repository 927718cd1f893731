"""Moved to `bedkit.zookeeper`: this name stays an alias of it for older imports."""
import sys

from bedkit import zookeeper

sys.modules[__name__] = zookeeper
