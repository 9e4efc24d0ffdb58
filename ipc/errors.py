"""Errors of the wire layer, part of ctx's one exception hierarchy.

Each class has a stable numeric ``code`` (2000-2099) and ``name`` so that a
client in any language can tell them apart without reading messages, exactly
like the engine's own errors (which keep 1000-1999). Importing this module
registers the classes with the engine's ``error_from_dict``, so a client
rebuilds them from a reply's ``error`` object. ``InternalError`` (2008) is the
engine's own (a bug, in a call or in a job); it is named here too because the
wire tells it apart like the rest.
"""

from __future__ import annotations

from engine import CtxError, InternalError

__all__ = [
    "BadSignature",
    "InternalError",
    "IpcError",
    "IpcTimeout",
    "KeyMismatch",
    "MessageTooLarge",
    "ProtocolError",
    "Replayed",
    "ServerUnavailable",
    "UnknownMethod",
]


class IpcError(CtxError):
    """Base class of every error raised by ``ipc``."""

    code, name = 2000, "ipc_error"


class ProtocolError(IpcError):
    """A message is malformed: frames, JSON, header fields or protocol version."""

    code, name = 2001, "protocol_error"


class BadSignature(ProtocolError):
    """A message is unsigned or its HMAC-SHA256 signature does not match the key."""

    code, name = 2002, "bad_signature"


class Replayed(ProtocolError):
    """A message id was seen before, or its date is outside the accepted window."""

    code, name = 2003, "replayed"


class MessageTooLarge(ProtocolError):
    """A message (all frames together) exceeds the configured maximum size."""

    code, name = 2004, "message_too_large"


class UnknownMethod(ProtocolError):
    """The header names a method the server does not offer."""

    code, name = 2005, "unknown_method"


class IpcTimeout(IpcError):
    """No reply arrived within the timeout, after every retry."""

    code, name = 2006, "ipc_timeout"


class ServerUnavailable(IpcError):
    """No live server for a data dir, or the server is shutting down or saturated."""

    code, name = 2007, "server_unavailable"


class KeyMismatch(BadSignature):
    """Client side: a reply cannot be verified with the connection's key.

    The server at that endpoint holds another key: it restarted (each start
    makes a new key) and a client kept the old connection file. The server
    cannot have acted on the request (it could not verify it either). Read
    the connection file again (``find_live``) and retry; ``Client`` does so
    itself before raising this.
    """

    code, name = 2009, "key_mismatch"
