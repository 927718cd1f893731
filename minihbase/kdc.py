"""Moved to `bedkit.kdc`: this name stays an alias of it for older imports."""
import sys

from bedkit import kdc

sys.modules[__name__] = kdc
