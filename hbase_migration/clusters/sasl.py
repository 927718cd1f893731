"""SASL GSSAPI (RFC 4752), client side, on python-gssapi: for ZooKeeper (through kazoo's pure-sasl) and for
HBase's Thrift gateways (through `thrift_transports.TSaslClientTransport`).

The exchange: GSSAPI context tokens until the context is established (with mutual authentication), then the
security layer: the server sends wrap(1 byte of offered QOP bits | 3 bytes of its max buffer), the client answers
wrap(1 byte of the chosen QOP bit | 3 bytes of its max buffer | authorization id), as Java's GssKrb5Client does.
The client takes the QOP it is told to and nothing else: a gateway offering another one is refused with both
named (`QopMismatch`), before any data is sent.

pure-sasl's own GSSAPI mechanism needs pykerberos and can only name host-based services; `ZooKeeperGssapi` is
registered under a name of its own (`MECHANISM`), so pure-sasl's "GSSAPI" stays what it is for any other user in
the process. ZooKeeper never sees the name: its SASL packets carry only tokens.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from hbase_migration.clusters.security import QOP_BITS, qops_from_bits, server_principal

if TYPE_CHECKING:
    from hbase_migration.clusters.kerberos import KeytabLogin

MAX_BUFFER = 0xFFFFFF  # the largest message this client accepts (RFC 4752: 3 bytes); Thrift messages can be big
MECHANISM = "GSSAPI-hbase-migration"
_PREFERENCE = ("auth-conf", "auth-int", "auth")


class SaslError(RuntimeError):
    """The SASL exchange failed; the message names the endpoint and the fix."""


class SaslConnectionLost(SaslError, ConnectionError):
    """The server closed the connection during the negotiation: another gateway (or a retry) may do."""


class QopMismatch(SaslError):
    def __init__(self, endpoint: str, offered: Sequence[str], wanted: Sequence[str]):
        self.endpoint = endpoint
        self.offered = tuple(offered)
        self.wanted = tuple(wanted)
        super().__init__(
            f"{endpoint} offers SASL QOP {', '.join(offered) or 'none'} but the connection asks for "
            f"{', '.join(wanted)} (thrift_qop). Fix: set thrift_qop to the gateway's hbase.thrift.security.qop "
            f"({'/'.join(offered)}), or change the gateway's")


def security_layer_reply(offer: bytes, wanted: Sequence[str], authzid: str, endpoint: str,
                         max_buffer: int = MAX_BUFFER) -> tuple[str, bytes]:
    """The client's answer to the server's security-layer offer (both unwrapped), and the QOP chosen (pure)."""
    if len(offer) != 4:
        raise SaslError(f"{endpoint}: the server's SASL security-layer offer is {len(offer)} bytes, not 4")
    offered = qops_from_bits(offer[0])
    chosen = next((q for q in _PREFERENCE if q in wanted and q in offered), None)
    if chosen is None:
        raise QopMismatch(endpoint, offered, wanted)
    size = 0 if chosen == "auth" else max_buffer  # RFC 4752: 0 without a security layer
    return chosen, bytes([QOP_BITS[chosen]]) + size.to_bytes(3, "big") + authzid.encode("utf-8")


class GssapiSaslClient:
    """One SASL GSSAPI negotiation as `login`'s principal with the service principal `target`.

    `initial()` gives the first token; `step(challenge)` each answer until `complete`; then `wrap`/`unwrap`
    protect messages as the chosen `qop` says (nothing for auth, integrity for auth-int, encryption for
    auth-conf)."""

    def __init__(self, login: "KeytabLogin", target: str, qops: Sequence[str], endpoint: str):
        self.login = login
        self.target = target
        self.wanted = tuple(qops)
        self.endpoint = endpoint
        self.offered: tuple[str, ...] = ()
        self.qop: str | None = None
        self.complete = False
        self._ctx: Any = None

    def _gss(self, what: str, fn: Any, *args: Any) -> Any:
        import gssapi

        from hbase_migration.clusters.kerberos import failure

        try:
            return fn(*args)
        except gssapi.exceptions.GSSError as e:
            raise failure(f"SASL GSSAPI {what} with {self.endpoint}", e, self.login.principal, self.target) \
                from None

    def initial(self) -> bytes:
        self._ctx = self._gss("start", lambda: self.login.initiate(self.target, integrity=True))
        return self._gss("start", self._ctx.step) or b""

    def step(self, challenge: bytes) -> bytes:
        if self.complete:
            raise SaslError(f"{self.endpoint}: the server sent more SASL data after the negotiation completed")
        if not self._ctx.complete:
            return self._gss("context", self._ctx.step, challenge) or b""
        offer = self._gss("security layer", self._ctx.unwrap, challenge).message
        self.offered = qops_from_bits(offer[0]) if offer else ()
        self.qop, reply = security_layer_reply(offer, self.wanted, self.login.principal, self.endpoint)
        self.complete = True
        return self._gss("security layer", self._ctx.wrap, reply, False).message

    def wrap(self, data: bytes) -> bytes:
        if self.qop == "auth":
            return data
        return self._gss("wrap", self._ctx.wrap, data, self.qop == "auth-conf").message

    def unwrap(self, data: bytes) -> bytes:
        if self.qop == "auth":
            return data
        result = self._gss("unwrap", self._ctx.unwrap, data)
        if self.qop == "auth-conf" and not result.encrypted:
            raise SaslError(f"{self.endpoint}: QOP auth-conf was agreed but the server sent a message that is not "
                            "encrypted")
        return result.message


# --------------------------------------------------------------------------------------------------
# kazoo: a pure-sasl mechanism


def zookeeper_mechanism() -> type:
    """The pure-sasl mechanism class, registered once under `MECHANISM`."""
    import puresasl.mechanisms as mechanisms

    found = mechanisms.mechanisms.get(MECHANISM)
    if found is not None:
        return found

    class ZooKeeperGssapi(mechanisms.Mechanism):
        """kazoo passes `sasl_options` as keyword arguments: `login` (a KeytabLogin), `principal_pattern` (the
        ZooKeeper servers', `_HOST` expanded for the host kazoo connected to) and `errors` (a list that receives
        the failure, since kazoo reports only "Unknown error")."""

        name = MECHANISM
        score = 100
        allows_anonymous = False
        uses_plaintext = False
        active_safe = True

        def __init__(self, sasl: Any, login: "KeytabLogin", principal_pattern: str, errors: list, **props: Any):
            super().__init__(sasl)
            target = server_principal(principal_pattern, sasl.host)
            self._errors = errors
            self._client = GssapiSaslClient(login, target, ("auth",), f"ZooKeeper {sasl.host}")
            self._started = False

        @property
        def complete(self) -> bool:  # type: ignore[override]
            return self._client.complete

        def process(self, challenge: bytes | None = None) -> bytes:
            try:
                if not self._started:
                    self._started = True
                    return self._client.initial()
                return self._client.step(challenge or b"")
            except Exception as e:
                self._errors.append(e)
                raise

        def wrap(self, outgoing: bytes) -> bytes:
            return self._client.wrap(outgoing)

        def unwrap(self, incoming: bytes) -> bytes:
            return self._client.unwrap(incoming)

    mechanisms.mechanisms[MECHANISM] = ZooKeeperGssapi
    return ZooKeeperGssapi
