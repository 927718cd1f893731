"""minihbase's own clients of a secured cluster: the test harness (`MiniCluster`), the CLI (`kill-rs`,
`endpoints`, ...) and `down` authenticate to the control API with the cluster's hbase service keytab, as HBase's
own tools run as the hbase user, never by a bypass.

A process may talk to clusters of different KDCs (tests with several stacks): each call points the Kerberos
library at the cluster's krb5.conf for its duration (KRB5_CONFIG is read whenever a context is made).
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

Auth = Callable[[str], dict[str, str]]
_env_lock = threading.RLock()


@contextlib.contextmanager
def krb5_config(path: str | None):
    """KRB5_CONFIG = `path` for the duration (restored after); nothing when `path` is empty."""
    if not path:
        yield
        return
    with _env_lock:
        previous = os.environ.get("KRB5_CONFIG")
        os.environ["KRB5_CONFIG"] = str(path)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("KRB5_CONFIG", None)
            else:
                os.environ["KRB5_CONFIG"] = previous


def service_auth(security: dict, host: str) -> Auth | None:
    """Authorization headers for requests to a cluster's HTTP servers as its hbase service principal (keytab);
    None for an unsecured cluster. The target is the cluster's SPNEGO principal at the request's host."""
    if not security:
        return None
    from bedkit.security import gss  # only for secured clusters: python-gssapi stays unloaded otherwise

    principal = gss.expand_host(security.get("hbase_principal") or f"hbase/_HOST@{security['realm']}", host)
    keytab = security.get("hbase_keytab")
    spnego = security.get("spnego_principal") or f"HTTP/_HOST@{security['realm']}"
    krb5 = security.get("krb5_conf")

    def headers(url: str) -> dict[str, str]:
        target = gss.expand_host(spnego, urlsplit(url).hostname or host)
        with krb5_config(krb5):
            return {"Authorization": gss.negotiate_header(gss.keytab_credentials(principal, keytab), target)}
    return headers


def cluster_auth(workdir: Path, name: str) -> Auth | None:
    """`service_auth` of the cluster `name` under `workdir` (its config.json), None when unsecured or unknown."""
    try:
        config = json.loads((Path(workdir) / name / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return service_auth(config.get("security") or {}, config.get("host", "127.0.0.1"))
