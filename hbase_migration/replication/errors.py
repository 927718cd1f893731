"""Errors of the peer-admin engine. Each message names the peer, what was found and what was asked."""
from __future__ import annotations

from typing import Any


class PeerAdminError(RuntimeError):
    """A peer operation could not be done; nothing was changed unless the message says otherwise."""


class PeerNotFound(PeerAdminError, LookupError):
    """The peer id does not exist on the cluster."""


class PeerConflict(PeerAdminError):
    """The peer exists in a way that forbids the operation (someone else's, or another config)."""


class PeerNotOurs(PeerConflict):
    """A change to a peer without this toolkit's owner mark, refused; `force` would allow it. `what` is the
    refusal without the advice, for callers that name their own way to force (the CLI's `--force`)."""

    def __init__(self, message: str, what: str):
        super().__init__(message)
        self.what = what


class PeerStateMismatch(PeerAdminError):
    """After a change, ZooKeeper does not show the expected peer; `found` is what it shows."""

    def __init__(self, message: str, found: Any = None):
        super().__init__(message)
        self.found = found
