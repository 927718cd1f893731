"""Moved to `bedkit.security.stack`: this name stays an alias of it for older imports."""
import sys

from bedkit.security import stack

sys.modules[__name__] = stack
