"""A real MIT KDC (Debian's `krb5kdc`) on loopback, as HBase's own tests run MiniKdc.

One `krb5kdc` process serves every realm (one database each, created with `kdb5_util`), on a free port over
TCP (and UDP; the generated krb5.conf makes clients use TCP). With `cross_realm=True`, every pair of realms
trusts each other both ways: `krbtgt/B@A` and `krbtgt/A@B` exist in both databases with the same keys, as two
datacenters' KDCs joined by a cross-realm trust hold them. `cross_realm` may instead list one-way trusts as
`(client realm, service realm)` pairs: `("DC2.TEST", "DC1.TEST")` creates only `krbtgt/DC1.TEST@DC2.TEST`, so
DC2's principals reach DC1's services and DC1's principals get nothing in DC2.
Principals are created with random keys and reach their users as keytabs (`kadmin.local ktadd -norandkey`, so
exporting a keytab twice gives the same keys).

    kdc = Kdc(workdir, realms=("DC1.TEST", "DC2.TEST"), ticket_lifetime_s=600).start()
    kdc.add_principal("hbase/localhost@DC1.TEST")
    kdc.keytab(["hbase/localhost@DC1.TEST"], workdir / "hbase.keytab")
    os.environ.update(kdc.env())      # KRB5_CONFIG for this process and its children
    kdc.stop()

Nothing here is a bypass: the KDC is the only way to a ticket, and every service checks tickets against it.
"""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterable, Sequence, Union

KRB5KDC = "/usr/sbin/krb5kdc"
KDB5_UTIL = "/usr/sbin/kdb5_util"
KADMIN_LOCAL = "/usr/sbin/kadmin.local"
DEFAULT_REALMS = ("DC1.TEST", "DC2.TEST")


class KdcError(RuntimeError):
    """The KDC could not be set up or started; the message names the command and its output."""


def kerberos_installed() -> bool:
    return all(os.access(p, os.X_OK) for p in (KRB5KDC, KDB5_UTIL, KADMIN_LOCAL))


def _free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (the KDC listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
    raise KdcError("no port free for both TCP and UDP on 127.0.0.1")


def realm_of(principal: str) -> str:
    if "@" not in principal:
        raise KdcError(f"principal {principal!r} has no realm (name@REALM)")
    return principal.rsplit("@", 1)[1]


def krb5_conf_text(realms: Sequence[str], port: int, ticket_lifetime_s: int, renew_lifetime_s: int,
                   default_realm: str | None = None) -> str:
    """The client configuration: every realm on the one KDC, no DNS and no host canonicalisation (principals
    name their host as given, so `hbase/localhost@DC1.TEST` is asked for as written), TCP only."""
    realm_lines = "".join(f"  {r} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n" for r in realms)
    return (
        "[libdefaults]\n"
        f"  default_realm = {default_realm or realms[0]}\n"
        "  dns_lookup_realm = false\n"
        "  dns_lookup_kdc = false\n"
        "  dns_canonicalize_hostname = false\n"
        "  rdns = false\n"
        "  udp_preference_limit = 1\n"
        f"  ticket_lifetime = {ticket_lifetime_s}s\n"
        f"  renew_lifetime = {renew_lifetime_s}s\n"
        "  forwardable = true\n"
        "  clockskew = 300\n"
        "[realms]\n" + realm_lines
    )


def kdc_conf_text(workdir: Path, realms: Sequence[str], port: int, ticket_lifetime_s: int,
                  renew_lifetime_s: int) -> str:
    realm_lines = "".join(
        f"  {r} = {{\n"
        f"    database_name = {workdir / r / 'principal'}\n"
        f"    key_stash_file = {workdir / r / 'stash'}\n"
        f"    acl_file = {workdir / 'kadm5.acl'}\n"
        f"    max_life = {ticket_lifetime_s}s\n"
        f"    max_renewable_life = {renew_lifetime_s}s\n"
        "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
        "  }\n"
        for r in realms
    )
    return (
        "[kdcdefaults]\n"
        f"  kdc_listen = 127.0.0.1:{port}\n"
        f"  kdc_tcp_listen = 127.0.0.1:{port}\n"
        "[realms]\n" + realm_lines
        + f"[logging]\n  kdc = FILE:{workdir / 'kdc.log'}\n"
    )


Trusts = Union[bool, Iterable[tuple[str, str]]]


def trust_pairs(realms: Sequence[str], cross_realm: Trusts) -> set[tuple[str, str]]:
    """`(client realm, service realm)` pairs: every ordered pair for True, none for False."""
    if cross_realm is True:
        return {(a, b) for a in realms for b in realms if a != b}
    if cross_realm is False or cross_realm is None:
        return set()
    pairs = {tuple(p) for p in cross_realm}
    for pair in pairs:
        if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(realms):
            raise KdcError(f"cross-realm trust {pair!r} must be (client realm, service realm), two different "
                           f"realms among {tuple(realms)}")
    return pairs


class Kdc:
    """One MIT KDC for `realms` on 127.0.0.1, its files in `workdir` (`krb5.conf`, `kdc.conf`, databases,
    `kdc.log`, `kdc.pid`)."""

    def __init__(self, workdir: Path, realms: Sequence[str] = DEFAULT_REALMS, cross_realm: Trusts = True,
                 ticket_lifetime_s: int = 3600, renew_lifetime_s: int = 86400, port: int | None = None):
        if not realms:
            raise KdcError("a KDC needs at least one realm")
        for r in realms:
            if not r or r != r.upper() or "@" in r or "/" in r:
                raise KdcError(f"realm {r!r} must be an upper-case name such as DC1.TEST")
        if ticket_lifetime_s < 10:
            raise KdcError(f"ticket_lifetime_s must be at least 10, got {ticket_lifetime_s}")
        self.workdir = Path(workdir)
        self.realms = tuple(realms)
        self.trusts = trust_pairs(self.realms, cross_realm)
        self.cross_realm = bool(self.trusts)
        self.ticket_lifetime_s = int(ticket_lifetime_s)
        self.renew_lifetime_s = int(max(renew_lifetime_s, ticket_lifetime_s))
        self.port = port
        self.process: subprocess.Popen | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.workdir / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        return self.workdir / "kdc.conf"

    def env(self) -> dict[str, str]:
        """What a process needs to use this KDC: its krb5.conf (and, for kadmin.local, its kdc.conf)."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _run(self, argv: Sequence[str], what: str) -> str:
        env = {**os.environ, **self.env()}
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=60)
        if proc.returncode != 0:
            raise KdcError(f"{what} failed ({argv[0]} exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
        return proc.stdout

    def kadmin(self, realm: str, query: str) -> str:
        out = self._run([KADMIN_LOCAL, "-r", realm, "-q", query], f"kadmin.local -r {realm} -q {query.split()[0]}")
        # kadmin.local reports most failures on stdout/stderr with exit 0: look for them.
        for line in out.splitlines():
            if ": " in line and ("while" in line or "does not exist" in line):
                raise KdcError(f"kadmin.local -r {realm}: {line.strip()}")
        return out

    def _create(self) -> None:
        if not kerberos_installed():
            raise KdcError(f"MIT Kerberos KDC not installed (need {KRB5KDC}, {KDB5_UTIL}, {KADMIN_LOCAL}): "
                           "run `make bootstrap` (apt-get install krb5-kdc krb5-admin-server krb5-user)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or _free_port()
        self.krb5_conf.write_text(krb5_conf_text(self.realms, self.port, self.ticket_lifetime_s,
                                                 self.renew_lifetime_s))
        self.kdc_conf.write_text(kdc_conf_text(self.workdir, self.realms, self.port, self.ticket_lifetime_s,
                                               self.renew_lifetime_s))
        (self.workdir / "kadm5.acl").write_text("")
        for realm in self.realms:
            if (self.workdir / realm / "principal").exists():
                continue  # kept across restarts of the same workdir (keytabs stay valid)
            (self.workdir / realm).mkdir(parents=True, exist_ok=True)
            self._run([KDB5_UTIL, "create", "-s", "-r", realm, "-P", secrets.token_urlsafe(24)],
                      f"kdb5_util create -r {realm}")
            self._add_trusts(realm)

    def restore_trusts(self) -> None:
        """Every trust of the KDC that is missing from a database added again, with its first keys (a test
        deletes one to show a missing trust)."""
        for realm in self.realms:
            self._add_trusts(realm)

    def _add_trusts(self, created: str) -> None:
        """For each trust (A, B) involving the realm just created: krbtgt/B@A in both databases with the same
        keys (one password per pair of realms, generated once and kept in the workdir so a realm created later
        joins with the same keys)."""
        for client, service in sorted(self.trusts):
            if created not in (client, service):
                continue
            pw_file = self.workdir / f"trust-{'-'.join(sorted((client, service)))}.secret"
            if not pw_file.exists():
                pw_file.write_text(secrets.token_urlsafe(24))
                pw_file.chmod(0o600)
            password = pw_file.read_text()
            principal = f"krbtgt/{service}@{client}"
            for realm in (client, service):
                if (self.workdir / realm / "principal").exists() and not self.has_principal(principal, realm=realm):
                    self.kadmin(realm, f"addprinc -pw {password} {principal}")

    def has_principal(self, principal: str, realm: str | None = None) -> bool:
        out = self._run([KADMIN_LOCAL, "-r", realm or realm_of(principal), "-q", f"getprinc {principal}"],
                        "kadmin.local getprinc")
        return "Principal: " in out

    def add_principal(self, principal: str) -> None:
        """Create `principal` (name@REALM) with a random key; nothing when it exists already."""
        realm = realm_of(principal)
        if realm not in self.realms:
            raise KdcError(f"principal {principal!r}: realm {realm} is not served by this KDC ({self.realms})")
        if not self.has_principal(principal):
            self.kadmin(realm, f"addprinc -randkey {principal}")

    def keytab(self, principals: Iterable[str], path: Path) -> Path:
        """A keytab holding `principals` (created first if needed), mode 600. Rewritten, never appended."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        for principal in principals:
            self.add_principal(principal)
            self.kadmin(realm_of(principal), f"ktadd -k {path} -norandkey {principal}")
        path.chmod(0o600)
        return path

    def start(self, timeout: float = 20.0) -> "Kdc":
        self._create()
        log = open(self.workdir / "krb5kdc.out", "ab")
        argv = [KRB5KDC, "-n", "-P", str(self.workdir / "kdc.pid")]
        for realm in self.realms:
            argv += ["-r", realm]
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env={**os.environ, **self.env()}, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise KdcError(f"krb5kdc exited with {self.process.returncode}; see {self.workdir / 'kdc.log'}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise KdcError(f"krb5kdc did not listen on 127.0.0.1:{self.port} within {timeout}s")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def __enter__(self) -> "Kdc":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
