"""Moved to `bedkit.security.tls`: this name stays an alias of it for older imports."""
import sys

from bedkit.security import tls

sys.modules[__name__] = tls
