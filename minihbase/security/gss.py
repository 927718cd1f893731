"""Moved to `bedkit.security.gss`: this name stays an alias of it for older imports."""
import sys

from bedkit.security import gss

sys.modules[__name__] = gss
