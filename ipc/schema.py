"""The tiny schema validator behind ipc.wire's method tables.

A :class:`Field` describes one value; :func:`check` raises the field's error
class naming where the value sits (``details.field``, always a path made of
schema names and list indexes, never of caller text). :func:`check_text`
refuses strings that cannot be encoded as UTF-8 (lone surrogates, which JSON
escapes such as ``"\\ud800"`` can carry) anywhere in a value, keys included,
with ``not_utf8`` (1007). Nothing here does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine import CtxError, InvalidInput, NotUtf8
from ipc.errors import ProtocolError

__all__ = ["Field", "check", "check_text"]


@dataclass(frozen=True)
class Field:
    """One value's schema. ``kind``: str, int, number, bool, date, list, object or any
    (``date``: epoch seconds, a number, or an ISO 8601 date string).

    ``lo``/``hi`` bound numbers; ``min_len``/``max_len`` bound string lengths
    (characters) and list lengths (items). For objects, ``fields`` lists known
    keys and ``extra`` says whether others are allowed. ``error`` is the class
    raised when the value is wrong, so a bad budget is ``invalid_budget`` on the
    wire exactly as it would be in process; ``len_error`` (default ``error``)
    is raised instead when only the length is over ``max_len``.
    """

    kind: str
    required: bool = False
    nullable: bool = False
    lo: float | None = None
    hi: float | None = None
    min_len: int = 0
    max_len: int | None = None
    choices: tuple[str, ...] | None = None
    items: Field | None = None
    fields: Mapping[str, Field] | None = None
    extra: bool = True
    error: type[CtxError] = InvalidInput
    len_error: type[CtxError] | None = None


def check(value: Any, spec: Field, where: str) -> None:
    """Raise ``spec.error`` naming ``where`` unless ``value`` fits ``spec``.

    Messages and details name the place (``where``) and the schema's bounds,
    never the caller's value or an unknown key.
    """
    def fail(why: str, **extra: Any) -> None:
        raise spec.error(f"{where}: {why}", field=where, **extra)

    if value is None:
        if not spec.nullable:
            fail("must not be null")
        return
    kind = spec.kind
    if kind == "any":
        return
    if kind == "bool":
        if not isinstance(value, bool):
            fail("expected true or false")
    elif kind in ("int", "number"):
        ok = int if kind == "int" else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok):
            fail("expected an integer" if kind == "int" else "expected a number")
        if isinstance(value, float) and not math.isfinite(value):
            fail("expected a finite number")
        if (spec.lo is not None and value < spec.lo) or (spec.hi is not None and value > spec.hi):
            fail(f"must be between {_num(spec.lo)} and {_num(spec.hi)}")
    elif kind == "date":
        if not _is_date(value):
            fail("expected epoch seconds or an ISO 8601 date")
    elif kind == "str":
        if not isinstance(value, str):
            fail("expected a string")
        _check_len(len(value), spec, where, "characters")
        if spec.choices is not None and value not in spec.choices:
            fail("must be one of " + ", ".join(spec.choices))
    elif kind == "list":
        if not isinstance(value, list):
            fail("expected a list")
        _check_len(len(value), spec, where, "items")
        if spec.items is not None:
            for i, item in enumerate(value):
                check(item, spec.items, f"{where}[{i}]")
    elif kind == "object":
        _check_object(value, spec, where, fail)
    else:  # a schema bug, not a caller error
        raise ProtocolError(f"{where}: schema has unknown kind {kind}")


def _check_object(value: Any, spec: Field, where: str, fail: Callable[..., None]) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        fail("expected an object")
    known = spec.fields or {}
    if not spec.extra:
        unknown = sum(1 for key in value if key not in known)
        if unknown:
            fail(f"{unknown} unknown field{'s' if unknown > 1 else ''} (allowed: "
                 f"{', '.join(known) or 'none'})", reason="unknown_field", unknown=unknown,
                 allowed=list(known))
    for name, sub in known.items():
        if name in value:
            check(value[name], sub, f"{where}.{name}")
        elif sub.required:
            raise sub.error(f"{where}.{name}: required", field=f"{where}.{name}")


def _is_date(value: Any) -> bool:
    """A finite number (epoch seconds) or a string ``datetime.fromisoformat`` reads, as
    the engine reads a live item's ``captured_at`` and a turn's ``time``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return False
        return True
    return False


def _num(x: float | None) -> str:
    return "any" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def _check_len(n: int, spec: Field, where: str, unit: str) -> None:
    if n < spec.min_len:
        raise spec.error(f"{where}: must have at least {spec.min_len} {unit}", field=where)
    if spec.max_len is not None and n > spec.max_len:
        error = spec.len_error or spec.error
        raise error(f"{where}: must have at most {spec.max_len} {unit}", field=where,
                    limit=spec.max_len)


def check_text(value: Any, where: str, names: frozenset[str] = frozenset()) -> None:
    """NotUtf8 (1007) naming the first place in ``value`` holding a string that is not UTF-8.

    Walks lists and objects without recursion, so a deeply nested value cannot
    overflow the stack; object keys are checked as well as values. The path in
    ``details.field`` uses a key only when it is one of the schema's ``names``.
    """
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _utf8_ok(item):
                raise NotUtf8(f"{path}: text is not valid UTF-8 (a lone surrogate)", field=path)
        elif isinstance(item, dict):
            for key, sub in item.items():
                label = key if key in names else "<key>"
                if isinstance(key, str) and not _utf8_ok(key):
                    raise NotUtf8(f"{path}: a key is not valid UTF-8 (a lone surrogate)",
                                  field=path)
                stack.append((sub, f"{path}.{label}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item))


def _utf8_ok(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
