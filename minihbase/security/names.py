"""Moved to `bedkit.security.names`: this name stays an alias of it for older imports."""
import sys

from bedkit.security import names

sys.modules[__name__] = names
