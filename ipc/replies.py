"""Error replies as they go on the wire: to their caller, saying what is wrong.

A reply goes only to the caller whose request it answers (the ROUTER sends it back
on that request's identity), so an engine error's message and details may name
the caller's own input: a path it typed, a job id it asked for, an unknown config
key. They say what ``--local`` says, in the same words. No secret travels: no wire
method takes a passphrase or a key (they are given to the engine's own process),
and :func:`wire_error` withholds a message or detail that would repeat one of the
server's own secrets (its connection key). Every ``invalid_input`` family error
gets a ``details.field`` (the request's parameter path, schema names only). A
failure that was not a CtxError is the engine's ``internal_error`` (2008), in a
call (the server makes it) or in a job (the engine records it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from engine import CtxError, InvalidInput, qualified_field
from ipc.session import dumps
from ipc.wire import METHODS

__all__ = ["error_body", "schema_path", "wire_error"]


def error_body(error: CtxError) -> dict[str, Any]:
    """The reply body for ``error``; details that are not JSON are left out."""
    data = error.to_dict()
    try:
        dumps(data)
    except (TypeError, ValueError):
        data["details"] = {}
    return {"ok": False, "error": data}


def _schema_constants() -> frozenset[str]:
    """Strings the schemas themselves define (method and parameter names, field names,
    choices): repeating them repeats no caller text, though the caller sent them too."""
    out: set[str] = set(METHODS)
    out.update(name for spec in METHODS.values() for name in spec.params)
    stack = [f for spec in METHODS.values() for f in spec.params.values()]
    while stack:
        f = stack.pop()
        out.update(f.choices or ())
        out.update(f.fields or {})
        stack.extend((f.fields or {}).values())
        if f.items is not None:
            stack.append(f.items)
    return frozenset(out)


_CONSTANTS = _schema_constants()


def _flat(value: Any) -> str:
    try:
        return dumps(value).decode("utf-8", "replace") if not isinstance(value, str) else value
    except (TypeError, ValueError):
        return repr(value)


_PATH_PART = re.compile(r"\[\d+\]|<key>")


def schema_path(field: Any) -> bool:
    """Whether ``field`` is a path made of schema names and list indexes only
    (``build_context.live[3].kind``): it names a place, never the caller's text."""
    if not isinstance(field, str) or not field:
        return False
    return all(part in _CONSTANTS for part in _PATH_PART.sub("", field).split("."))


def wire_error(error: CtxError, method: str, secrets: Iterable[str] = ()) -> CtxError:
    """``error`` fit for its caller: what is wrong, a field on invalid input, no secret.

    The message and details pass as the engine wrote them (they may name the caller's
    own values: the reply goes only to that caller). One that contains any of
    ``secrets`` (the server's connection key) is withheld or left out.
    """
    held = [s for s in secrets if s]
    message = error.message
    details = dict(error.details)
    field = details.pop("field", None)
    if any(s in message for s in held):
        message = f"{error.name}: message withheld (it would repeat a secret)"
    details = {k: v for k, v in details.items() if not any(s in _flat(v) for s in held)}
    if field is not None or isinstance(error, InvalidInput):
        field = qualified_field(field, method)
        details["field"] = field if schema_path(field) else method
    if message == error.message and details == error.details:
        return error
    out = CtxError.__new__(type(error))
    CtxError.__init__(out, message, **details)
    return out
