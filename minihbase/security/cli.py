"""`python -m minihbase up --secure` and what `down` and `endpoints` do for a secured instance.

    up --secure [--workdir W] [--ticket-lifetime-s 3600] [--no-cross-realm-trust] [--security-config F]

starts, in W: the MIT KDC (kdc/: realms DC1.TEST and DC2.TEST, cross-realm trust both ways unless
--no-cross-realm-trust), every principal's keytab (keytabs/), the CA and server certificate (tls/), the SASL
ZooKeeper (zookeeper/) and clusters.toml's clusters (--config) secured as clusters-secure.toml (--security-config)
says; `security.json` describes it all for `endpoints --json`. `down` stops the clusters, ZooKeeper and the KDC
and returns once each has exited.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import sys
import time
import tomllib
from pathlib import Path

from minihbase import process
from minihbase.config import ClusterConfig, ConfigError, load_clusters

PATH_KEYS = {"krb5_conf", "hbase_keytab", "spnego_keytab", "ssl_cert", "ssl_key", "ssl_ca", "client_keytab"}


def load_security(path: Path, configs: dict[str, ClusterConfig]) -> dict[str, dict]:
    """Each cluster's `[clusters.<name>.security]` table; every cluster must have one, without paths."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from None
    tables = {name: (body or {}).get("security") for name, body in data.get("clusters", {}).items()}
    out = {}
    for name in configs:
        security = tables.get(name)
        if not security or not security.get("realm"):
            raise ConfigError(f"{path}: cluster {name} has no [clusters.{name}.security] table with a realm; a "
                              "secured instance secures every cluster")
        paths = PATH_KEYS & set(security)
        if paths:
            raise ConfigError(f"{path}: [clusters.{name}.security] sets {', '.join(sorted(paths))}; `up --secure` "
                              "creates the keytabs and certificates and fills in their paths")
        out[name] = dict(security)
    return out


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def cmd_up_secure(args) -> int:
    from bedkit.kdc import KdcError
    from bedkit.security.gss import KerberosError
    from bedkit.security.stack import SecureStack

    workdir = args.workdir
    if args.zookeeper:
        print("minihbase up --secure: --zookeeper cannot be used with --secure (the secured clusters need the SASL "
              "ZooKeeper `up --secure` starts, zookeeper/localhost@DC1.TEST)", file=sys.stderr)
        return 2
    try:
        configs = load_clusters(args.config)
        security = load_security(args.security_config, configs)
    except ConfigError as e:
        print(f"minihbase up: {e}", file=sys.stderr)
        return 2
    running = process.running_clusters(workdir)
    if running and set(configs) <= set(running):
        return 0
    if running:
        print(f"minihbase up: clusters {', '.join(running)} already run under {workdir}; "
              f"run `python -m minihbase down --workdir {workdir}` first", file=sys.stderr)
        return 1
    workdir.mkdir(parents=True, exist_ok=True)
    instance_file = workdir / "instance.json"
    instance = json.loads(instance_file.read_text()) if instance_file.exists() else {}
    port = instance.get("zookeeper_port") if instance.get("secure") else None
    stack = SecureStack(workdir, ticket_lifetime_s=args.ticket_lifetime_s, cross_realm=not args.no_cross_realm_trust,
                        zookeeper_port=port if port and _port_free(port) else None)
    try:
        stack.start()
        secured = {}
        for name, config in configs.items():
            choices = dict(security[name])
            realm = choices.pop("realm")
            settings = stack.cluster_security(realm, thrift_qop=choices.pop("thrift_qop", None),
                                              thrift_http=choices.pop("thrift_http", False),
                                              thrift_ssl=choices.pop("thrift_ssl", False), **choices)
            secured[name] = dataclasses.replace(config, security=settings)
    except (KdcError, KerberosError, RuntimeError, ValueError, ConfigError) as e:
        stack.stop()
        print(f"minihbase up --secure failed: {e}", file=sys.stderr)
        return 1
    procs = {}
    try:
        for name, config in secured.items():
            procs[name] = process.spawn(config, workdir, stack.zookeeper.hosts)
        for name in secured:
            process.wait_ready(workdir, name, procs[name], args.timeout)
    except process.MiniHBaseError as e:
        for name, proc in procs.items():
            process.stop(workdir, name, proc, timeout=20)
        stack.stop()
        print(f"minihbase up failed: {e}", file=sys.stderr)
        return 1
    instance_file.write_text(json.dumps({
        "zookeeper": stack.zookeeper.hosts, "zookeeper_owned": True, "zookeeper_port": stack.zookeeper.port,
        "clusters": sorted(secured), "config": str(args.config), "secure": True,
        "security_config": str(args.security_config), "kdc_pid": stack.kdc.process.pid,
    }, indent=1))
    (workdir / "security.json").write_text(json.dumps(stack.describe(), indent=1, sort_keys=True))
    return 0


def security_summary(workdir: Path) -> dict | None:
    """The instance's `security` entry of `endpoints --json` (None for an unsecured instance)."""
    path = Path(workdir) / "security.json"
    instance = Path(workdir) / "instance.json"
    try:
        if not json.loads(instance.read_text()).get("secure"):
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def kdc_pid(workdir: Path) -> int | None:
    """The instance's krb5kdc (its pid file, checked against the process's command line)."""
    pid_file = Path(workdir) / "kdc" / "kdc.pid"
    try:
        pid = int(pid_file.read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if argv and argv[0].endswith(b"krb5kdc") and str(pid_file).encode() in argv else None


def stop_kdc(workdir: Path, timeout: float = 15.0) -> bool:
    """Stop the instance's KDC and wait until it has exited (SIGKILL after `timeout`). False if still running."""
    pid = kdc_pid(workdir)
    if pid is None:
        return True
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while process.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not process.pid_alive(pid):
            break
    (Path(workdir) / "kdc" / "kdc.pid").unlink(missing_ok=True)
    return not process.pid_alive(pid)


def down_kdc(workdir: Path) -> int:
    """`down`'s last step: the KDC (after the clusters, which authenticate their shutdown with it)."""
    if stop_kdc(workdir):
        return 0
    print(f"minihbase down: the KDC of {workdir} is still running after SIGKILL", file=sys.stderr)
    return 1
