"""Kerberos on every channel of a secured minihbase cluster (see `server.ClusterSecurity`), and the stack it runs
on (`stack.SecureStack`: KDC, keytabs, TLS, SASL ZooKeeper). Shares no code with the toolkit, which secures its
side of each channel on its own: each side is the other's check.

An unsecured cluster imports none of it (python-gssapi and friends are loaded only for a secured one), so the
plain `up` stays as it was.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minihbase.config import ClusterConfig
    from minihbase.security.server import ClusterSecurity


def cluster_security(config: "ClusterConfig") -> "ClusterSecurity | None":
    """The cluster's security (its `security` settings checked, keytabs and all), None when unsecured."""
    if not getattr(config, "security", None):
        return None
    from minihbase.security.server import ClusterSecurity

    return ClusterSecurity(config)
