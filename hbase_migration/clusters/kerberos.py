"""The toolkit's Kerberos credentials in this process: from its keytab, renewed before they expire.

python-gssapi over MIT Kerberos. One `KeytabLogin` per (principal, keytab) per process, in a MEMORY ticket cache
of its own (a MEMORY cache is per process and per name: two principals never share one). Measured on MIT 1.20:
a credentials handle acquired with a `client_keytab` gets a first ticket from the keytab, but is NOT refreshed
when its ticket expires (new contexts then fail with "Ticket expired"); so the toolkit renews itself, as
Hadoop's UGI does: once 80% of a ticket's life has passed, the next caller gets credentials in a fresh cache
with a new ticket from the keytab. Contexts already established (a Thrift SASL session, a ZooKeeper session)
are not affected: MIT does not expire a context's wrap/unwrap with its ticket, and each new connection starts
from the current credentials.

Subprocesses (the HBase shell) get a FILE ticket cache of their own in a private directory, filled from the
keytab and replaced (atomically) before it expires, also while a shell runs.

Nothing here logs, returns or keeps a keytab's contents or a token: only names, paths and lifetimes.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator

from hbase_migration.clusters.security import (
    KerberosProblem,
    Security,
    SecurityConfigError,
    explain,
    gss_text,
    keytab_principals,
    local_file,
)

if TYPE_CHECKING:
    import gssapi

log = logging.getLogger(__name__)

RENEW_AT = 0.8  # renew once this share of a ticket's life has passed (Hadoop UGI's TICKET_RENEW_WINDOW)


class KerberosError(RuntimeError):
    """Authentication could not be done; the message names the principal, the endpoint and the fix.

    Not a ConnectionError: retrying with the same credentials would fail the same way (thrift.is_transient
    leaves it alone, so it surfaces at once)."""

    def __init__(self, message: str, problem: KerberosProblem | None = None):
        super().__init__(message)
        self.problem = problem

    @property
    def kind(self) -> str:
        return self.problem.kind if self.problem else "other"


def failure(what: str, error: BaseException | str, client: str | None, target: str | None = None) -> KerberosError:
    """A KerberosError for `what` (e.g. "SASL GSSAPI to the Thrift gateway localhost:9090") failing with `error`:
    cause and fix from `security.explain`."""
    text = gss_text(error.gen_message() if hasattr(error, "gen_message") else str(error))
    problem = explain(text, client, target)
    who = f" as {client}" if client else ""
    to = f" for {target}" if target else ""
    return KerberosError(f"{what}{who}{to} failed: {problem.cause} ({text.strip()}). Fix: {problem.fix}", problem)


# --------------------------------------------------------------------------------------------------
# krb5.conf: MIT reads KRB5_CONFIG each time it builds a context, for the whole process

_conf_lock = threading.Lock()
_conf_chosen: tuple[str, str] | None = None  # (path, the cluster that named it)


def use_krb5_conf(path: str | None, cluster: str) -> None:
    """Make `path` this process's krb5.conf. Both connections of a run name the same file (it may list both
    realms) or none: MIT Kerberos has one configuration per process."""
    global _conf_chosen
    if path is None:
        return
    resolved = os.path.realpath(local_file(path, f"cluster {cluster!r}: krb5_conf"))
    with _conf_lock:
        if _conf_chosen is None or _conf_chosen[0] == resolved:
            if os.environ.get("KRB5_CONFIG") != resolved:
                os.environ["KRB5_CONFIG"] = resolved
            _conf_chosen = (resolved, _conf_chosen[1] if _conf_chosen else cluster)
            return
        raise SecurityConfigError(
            f"cluster {cluster!r}: krb5_conf {resolved} differs from {_conf_chosen[0]} named by cluster "
            f"{_conf_chosen[1]!r}: one process has one Kerberos configuration; name the same krb5.conf (listing "
            "both realms and the trust between them) in both connections, or leave krb5_conf unset in both")


def forget_krb5_conf() -> None:
    """Let the next cluster name another krb5.conf (tests that start KDCs of their own one after the other; a
    process serving one run never needs it)."""
    global _conf_chosen
    with _conf_lock:
        _conf_chosen = None


def krb5_conf_in_use() -> str | None:
    return _conf_chosen[0] if _conf_chosen else os.environ.get("KRB5_CONFIG")


def _principal_name(principal: str) -> "gssapi.Name":
    import gssapi

    return gssapi.Name(principal, gssapi.NameType.kerberos_principal)


# --------------------------------------------------------------------------------------------------
# The process's login


class KeytabLogin:
    """Credentials of `principal` from `keytab` (a local path) in this process, renewed by `credentials()`."""

    def __init__(self, principal: str, keytab: str, clock: Any = time.time):
        self.principal = principal
        self.keytab = keytab
        self._clock = clock
        self._lock = threading.Lock()
        self._creds: Any = None
        self._renew_at = 0.0
        self._expires = 0.0
        self._generation = 0
        self._tag = hashlib.sha1(f"{principal}\0{keytab}".encode()).hexdigest()[:12]
        self.renewals = 0  # how many times a new ticket was fetched after the first (the renewal test reads it)

    def __repr__(self) -> str:
        return f"KeytabLogin({self.principal!r}, keytab={self.keytab!r})"

    def check_keytab(self) -> None:
        """The keytab holds the principal (read from the file: names only), else KerberosError saying so."""
        try:
            held = keytab_principals(self.keytab)
        except (OSError, SecurityConfigError) as e:
            raise KerberosError(f"keytab {self.keytab} cannot be read: {e}. Fix: point the keytab extra at the "
                                f"keytab of {self.principal}, readable by this user (mode 600)") from None
        if self.principal not in held:
            problem = KerberosProblem("bad_key", f"keytab {self.keytab} does not hold {self.principal}",
                                      f"export it: kadmin: ktadd -k {self.keytab} -norandkey {self.principal}")
            raise KerberosError(f"keytab {self.keytab} does not hold {self.principal} (it holds: "
                                f"{', '.join(held) or 'nothing'}). Fix: {problem.fix}", problem)

    def credentials(self) -> "gssapi.Credentials":
        """Initiator credentials with a ticket that has at least a fifth of its life left."""
        with self._lock:
            if self._creds is None or self._clock() >= self._renew_at:
                self._acquire()
            return self._creds

    @property
    def expires(self) -> float:
        return self._expires

    def _acquire(self) -> None:
        import gssapi

        if self._creds is None:
            self.check_keytab()
        self._generation += 1
        store = {"client_keytab": self.keytab, "ccache": f"MEMORY:hbase-migration-{self._tag}-{self._generation}"}
        started = self._clock()
        try:
            creds = gssapi.Credentials(name=_principal_name(self.principal), usage="initiate", store=store)
            lifetime = creds.lifetime
        except gssapi.exceptions.GSSError as e:
            error = failure(f"getting a ticket from keytab {self.keytab}", e, self.principal)
            if error.kind == "bad_key":
                self.check_keytab()  # a more precise message when the keytab lacks the principal
            raise error from None
        if self._creds is not None:
            self.renewals += 1
        self._creds = creds
        self._expires = started + lifetime
        self._renew_at = started + RENEW_AT * lifetime
        log.info("kerberos: %s has a ticket from keytab %s, valid %ds (renewed after %ds)", self.principal,
                 self.keytab, lifetime, int(RENEW_AT * lifetime))

    def initiate(self, target: str, *, mutual: bool = True, integrity: bool = False) -> "gssapi.SecurityContext":
        """A GSSAPI initiator context for the service principal `target` (full name with realm)."""
        import gssapi

        flags = []
        if mutual:
            flags.append(gssapi.RequirementFlag.mutual_authentication)
        if integrity:
            flags += [gssapi.RequirementFlag.integrity, gssapi.RequirementFlag.confidentiality]
        return gssapi.SecurityContext(name=_principal_name(target), creds=self.credentials(), usage="initiate",
                                      flags=flags)

    def service_ticket(self, target: str, what: str) -> None:
        """Ask the KDC for a ticket to `target` (across realms through the trust), as a connection would.
        Raises KerberosError naming `what` (the endpoint) and the fix."""
        import gssapi

        try:
            self.initiate(target).step()
        except gssapi.exceptions.GSSError as e:
            raise failure(f"getting a service ticket for {what}", e, self.principal, target) from None


_logins: dict[tuple[str, str], KeytabLogin] = {}
_logins_lock = threading.Lock()


def login(security: Security, cluster: str = "") -> KeytabLogin:
    """This process's login for the security's principal and keytab (one per pair; the keytab found where
    Spark shipped it when its path is not local)."""
    if not security.kerberos:
        raise ValueError("login: the cluster is not Kerberized (no principal)")
    use_krb5_conf(security.krb5_conf, cluster)
    return _one_per_keytab(_logins, KeytabLogin, security, cluster)


def _one_per_keytab(registry: dict, make: Any, security: Security, cluster: str) -> Any:
    """`registry`'s object for the security's (principal, keytab), made by `make(principal, keytab)` the first
    time: one per pair in this process."""
    keytab = os.path.realpath(local_file(security.keytab, f"cluster {cluster!r}: keytab"))
    key = (security.principal, keytab)
    with _logins_lock:
        found = registry.get(key)
        if found is None:
            found = registry[key] = make(security.principal, keytab)
        return found


# --------------------------------------------------------------------------------------------------
# A FILE ticket cache for subprocesses


class ShellTicketCache:
    """A ticket cache file of the toolkit's own (private directory, mode 700) for one principal, filled from the
    keytab: `KRB5CCNAME` for the HBase shell. Replaced atomically with a fresh ticket once 80% of the current
    one's life has passed; `kept_fresh()` also does that while a shell runs."""

    def __init__(self, principal: str, keytab: str, clock: Any = time.time):
        self.principal = principal
        self.keytab = keytab
        self._clock = clock
        self._lock = threading.Lock()
        self.directory = tempfile.mkdtemp(prefix="hbase-migration-krb5cc-")
        os.chmod(self.directory, 0o700)
        self.path = os.path.join(self.directory, "ccache")
        self._renew_at = 0.0
        self.expires = 0.0
        self.fills = 0
        atexit.register(shutil.rmtree, self.directory, True)

    def refresh(self) -> None:
        """A new ticket in the cache file, unless the one there has more than a fifth of its life left."""
        import gssapi

        with self._lock:
            if self._clock() < self._renew_at:
                return
            fresh = self.path + ".new"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(fresh)
            started = self._clock()
            try:
                creds = gssapi.Credentials(name=_principal_name(self.principal), usage="initiate",
                                           store={"client_keytab": self.keytab, "ccache": f"FILE:{fresh}"})
                lifetime = creds.lifetime
            except gssapi.exceptions.GSSError as e:
                raise failure(f"filling the shell's ticket cache from keytab {self.keytab}", e,
                              self.principal) from None
            os.chmod(fresh, 0o600)
            os.replace(fresh, self.path)  # a shell reading the old file sees it whole, or the new one
            self.expires = started + lifetime
            self._renew_at = started + RENEW_AT * lifetime
            self.fills += 1

    def env(self) -> dict[str, str]:
        """The subprocess's Kerberos environment: this cache, and the process's krb5.conf for MIT tools and, since
        Java does not read KRB5_CONFIG, for the shell's JVM (`-Djava.security.krb5.conf` in HBASE_SHELL_OPTS)."""
        env = {"KRB5CCNAME": f"FILE:{self.path}"}
        conf = krb5_conf_in_use()
        if conf:
            env["KRB5_CONFIG"] = conf
            opts = os.environ.get("HBASE_SHELL_OPTS", "")
            if "java.security.krb5.conf" not in opts:
                env["HBASE_SHELL_OPTS"] = f"{opts} -Djava.security.krb5.conf={conf}".strip()
        return env

    @contextlib.contextmanager
    def kept_fresh(self) -> Iterator[dict[str, str]]:
        """The environment for a subprocess, the cache renewed in the background until the block ends."""
        self.refresh()
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(max(1.0, self._renew_at - self._clock())):
                try:
                    self.refresh()
                except KerberosError as e:  # the shell keeps its current ticket; its own error will say more
                    log.warning("kerberos: renewing the shell's ticket cache failed: %s", e)

        thread = threading.Thread(target=renew, name="krb5cc-renewer", daemon=True)
        thread.start()
        try:
            yield self.env()
        finally:
            stop.set()
            thread.join()


_caches: dict[tuple[str, str], ShellTicketCache] = {}


def shell_cache(security: Security, cluster: str = "") -> ShellTicketCache:
    login(security, cluster).check_keytab()
    return _one_per_keytab(_caches, ShellTicketCache, security, cluster)
