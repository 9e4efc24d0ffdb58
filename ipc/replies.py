"""Error replies as they go on the wire: without caller text.

The engine's errors name ids, counts, paths and config keys; several of those
come from the request itself (a job id asked for, an unknown config key, a
path). Nothing the caller sent is ever repeated over the wire, so before an
engine error leaves the server, :func:`wire_error` withholds its message and
drops each detail that repeats any text of the request. It also gives every
``invalid_input`` family error a ``details.field`` (the request's parameter
path). A failure that was not a CtxError is the engine's ``internal_error``
(2008), in a call (the server makes it) or in a job (the engine records it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from engine import CtxError, InvalidInput, qualified_field
from ipc.protocol import METHODS
from ipc.session import dumps

__all__ = ["caller_strings", "error_body", "wire_error"]

_MAX_STRINGS = 200_000  # a request holds far fewer; past this, everything is withheld


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


def caller_strings(params: Any) -> set[str] | None:
    """Every non-empty string (values and keys) in a request, schema constants aside.

    None when there are too many to compare (then every engine message is withheld).
    """
    out: set[str] = set()
    stack: list[Any] = [params]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item and item not in _CONSTANTS:
                out.add(item)
                if len(out) > _MAX_STRINGS:
                    return None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _repeats(text: str, strings: Iterable[str]) -> bool:
    """Whether ``text`` contains one of ``strings`` (short ones only as a whole word)."""
    for s in strings:
        if len(s) > len(text) or s not in text:
            continue
        if len(s) >= 4 or re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text):
            return True
    return False


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


def wire_error(error: CtxError, method: str, params: Any) -> CtxError:
    """``error`` fit for the wire: no caller text, and a field on invalid input.

    The caller's own values (a query, a path, a job id, an unknown key) are never
    repeated: a reply may be logged or shown where the caller's text must not go, and
    a value the caller sent may be a secret. Schema names are not the caller's text, so
    "the query is empty" and ``details.field`` ``search.query`` pass unchanged.
    """
    strings = caller_strings(params)
    message = error.message
    details = dict(error.details)
    field = details.pop("field", None)
    if strings is None or _repeats(message, strings):
        message = f"{error.name}: message withheld (it would repeat text from the request)"
    if strings is None:
        details = {k: v for k, v in details.items() if isinstance(v, (int, float, bool))}
    else:
        details = {k: v for k, v in details.items() if not _repeats(_flat(v), strings)}
    if field is not None or isinstance(error, InvalidInput):
        field = qualified_field(field, method)
        details["field"] = field if schema_path(field) else method
    if message == error.message and details == error.details:
        return error
    out = CtxError.__new__(type(error))
    CtxError.__init__(out, message, **details)
    return out
