"""GSSAPI (Kerberos 5) for the test beds' servers and their own clients, on python-gssapi over MIT Kerberos.

- Credentials: an initiator from a keytab (`client_keytab`, kept in a MEMORY ccache of this process, refilled
  from the keytab by MIT Kerberos when the ticket expires, as a long-running HBase daemon re-logs in from its
  keytab), or from the ticket cache a user filled with `kinit` (`KRB5CCNAME`: the shell); an acceptor from a
  service keytab, bound to one principal (a ticket for another principal is refused: "Wrong principal").
- Principals are always named in full with their realm (GSS_KRB5_NT_PRINCIPAL_NAME), never as host-based
  services: both realms' servers live on `localhost`, so a `[domain_realm]` mapping could not tell them apart.
- `_HOST` in a principal pattern is expanded as HBase's `SecurityUtil.getServerPrincipal` does: the canonical
  host name of the address, lower case (127.0.0.1 -> localhost).
"""
from __future__ import annotations

import base64
import functools
import socket
import threading
from dataclasses import dataclass

import gssapi
import gssapi.exceptions

KRB5 = gssapi.MechType.kerberos
SPNEGO = gssapi.OID.from_int_seq("1.3.6.1.5.5.2")
_FLAGS = (gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
          | gssapi.RequirementFlag.confidentiality | gssapi.RequirementFlag.out_of_sequence_detection)


class KerberosError(Exception):
    """A Kerberos step failed; the message names the principals involved and GSSAPI's reason."""


@functools.lru_cache(maxsize=64)
def canonical_host(host: str) -> str:
    """`InetAddress.getCanonicalHostName()`, lower case (the host itself when it does not resolve)."""
    try:
        return socket.gethostbyaddr(host)[0].lower()
    except OSError:
        return host.lower()


def expand_host(pattern: str, host: str) -> str:
    """`hbase/_HOST@DC1.TEST` at 127.0.0.1 -> `hbase/localhost@DC1.TEST`."""
    return pattern.replace("_HOST", canonical_host(host)) if "_HOST" in pattern else pattern


def split_principal(principal: str) -> tuple[list[str], str | None]:
    """`hbase/localhost@DC1.TEST` -> (["hbase", "localhost"], "DC1.TEST")."""
    name, at, realm = principal.rpartition("@")
    if not at:
        name, realm = principal, None
    return name.split("/"), realm or None


def gss_reason(e: Exception) -> str:
    """GSSAPI's own text (major and minor status), on one line."""
    if isinstance(e, gssapi.exceptions.GSSError):
        try:
            text = e.gen_message()
        except Exception:
            text = str(e)
    else:
        text = str(e)
    return " ".join(text.split())


def principal_name(principal: str) -> gssapi.Name:
    return gssapi.Name(principal, gssapi.NameType.kerberos_principal)


_ccache_ids: dict[tuple[str, str], str] = {}
_ccache_lock = threading.Lock()


def keytab_credentials(principal: str, keytab: str) -> gssapi.Credentials:
    """Initiator credentials of `principal` from its keytab (a MEMORY ccache per principal and keytab in this
    process: tickets are fetched once, then reused and refreshed from the keytab as they expire)."""
    with _ccache_lock:
        ccache = _ccache_ids.setdefault((principal, str(keytab)), f"MEMORY:bedkit-{len(_ccache_ids)}")
    try:
        return gssapi.Credentials(name=principal_name(principal), usage="initiate",
                                  store={"client_keytab": str(keytab), "ccache": ccache})
    except gssapi.exceptions.GSSError as e:
        raise KerberosError(f"cannot log in as {principal} from keytab {keytab}: {gss_reason(e)}") from None


def ticket_cache_credentials() -> gssapi.Credentials:
    """The user's credentials from the default ticket cache (`KRB5CCNAME`); KerberosError when there is no
    valid ticket-granting ticket (none, or expired)."""
    try:
        creds = gssapi.Credentials(usage="initiate")
        if creds.lifetime is not None and creds.lifetime <= 0:
            raise KerberosError("the ticket in the ticket cache has expired")
        return creds
    except gssapi.exceptions.GSSError as e:
        raise KerberosError(gss_reason(e)) from None


def acceptor_credentials(principal: str, keytab: str) -> gssapi.Credentials:
    try:
        return gssapi.Credentials(name=principal_name(principal), usage="accept", store={"keytab": str(keytab)})
    except gssapi.exceptions.GSSError as e:
        raise KerberosError(f"cannot accept as {principal} with keytab {keytab}: {gss_reason(e)}") from None


def initiate(creds: gssapi.Credentials, target: str, mech=KRB5) -> gssapi.SecurityContext:
    return gssapi.SecurityContext(name=principal_name(target), creds=creds, usage="initiate", mech=mech,
                                  flags=_FLAGS)


def accept(creds: gssapi.Credentials) -> gssapi.SecurityContext:
    return gssapi.SecurityContext(creds=creds, usage="accept")


@dataclass(frozen=True)
class Negotiated:
    """An accepted SPNEGO/Kerberos token: who the client is and the token to send back (mutual auth)."""
    principal: str
    out_token: bytes | None


def accept_token(creds: gssapi.Credentials, token: bytes) -> Negotiated:
    """Accept one single-round-trip token (SPNEGO or raw Kerberos, as HTTP Negotiate carries them)."""
    ctx = accept(creds)
    try:  # python-gssapi may defer a step's error to the next use of the context
        out = ctx.step(token)
        complete = ctx.complete
        initiator = str(ctx.initiator_name) if complete else None
    except gssapi.exceptions.GSSError as e:
        raise KerberosError(gss_reason(e)) from None
    if not complete:
        raise KerberosError("the token did not establish a security context in one round trip")
    return Negotiated(initiator, out)


def negotiate_header(creds: gssapi.Credentials, target: str, mech=SPNEGO) -> str:
    """`Negotiate <base64 token>` for a request to a service whose principal is `target` (a SPNEGO token, as
    browsers and Hadoop clients send; `mech=KRB5` a raw Kerberos one, which acceptors take too and whose
    refusals say more)."""
    try:
        token = initiate(creds, target, mech=mech).step()
    except gssapi.exceptions.GSSError as e:
        raise KerberosError(f"cannot get a ticket for {target}: {gss_reason(e)}") from None
    return "Negotiate " + base64.b64encode(token).decode("ascii")


def credentials_principal(creds: gssapi.Credentials) -> str:
    return str(creds.name)
