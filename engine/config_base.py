"""Building frozen config dataclasses from plain dicts, strictly.

Unknown keys and values of the wrong type are rejected with a ConfigError that
names the key. A number's range is declared once, on its field (``bounded``), and
checked by ``check_bounds``, which each section's ``__post_init__`` calls first;
what a section checks beyond that (choices, paths, one field against another) it
writes itself.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.errors import ConfigError

T = TypeVar("T")
_BOUNDS = "bounds"


@dataclass(frozen=True)
class Bounds:
    """A number's allowed range: ``lo`` and ``hi`` (None: no bound), each closed unless
    ``lo_open`` / ``hi_open``; NaN is never inside."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def holds(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return not (self.hi is not None and (value >= self.hi if self.hi_open
                                             else value > self.hi))

    def text(self) -> str:
        """The range as an error message says it ("between 1 and 1000", "in (0, 1]")."""
        lo, hi = _num(self.lo), _num(self.hi)
        if self.lo is not None and self.hi is not None:
            if not (self.lo_open or self.hi_open):
                return f"between {lo} and {hi}"
            return f"in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {lo}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {hi}"
        return "a number"


def _num(value: float | None) -> str:
    return str(int(value)) if value is not None and value == int(value) else str(value)


def bounded(default: Any, lo: float | None = None, hi: float | None = None, *,
            lo_open: bool = False, hi_open: bool = False) -> Any:
    """A config field holding a number in a range, checked by ``check_bounds``: the one
    place a section states a range (``lane_depth: int = bounded(50, 1, 1000)``)."""
    return field(default=default,
                 metadata={_BOUNDS: Bounds(lo, hi, lo_open=lo_open, hi_open=hi_open)})


def bounds_of(cls: Any) -> dict[str, Bounds]:
    """Each bounded field of config dataclass ``cls`` (an instance or a class) and its range."""
    return {f.name: f.metadata[_BOUNDS] for f in dataclasses.fields(cls)
            if _BOUNDS in f.metadata}


def check_values(table: Any, lo: float, hi: float, key: str) -> None:
    """Refuse a table (``name = number``) with a value outside [lo, hi] or not a number,
    naming ``key.name`` (per-kind weights, lane weights, live priors)."""
    limits = Bounds(lo, hi)
    if not isinstance(table, Mapping):
        raise ConfigError(f"{key}: expected a table of numbers", key=key)
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not limits.holds(value):
            raise ConfigError(f"{key}.{name} must be {limits.text()}", key=f"{key}.{name}")


def check_bounds(obj: Any, section: str) -> None:
    """Refuse a bounded field of ``obj`` outside its range (or not a number; an integer
    field takes integers only), with a ConfigError naming ``section.field``."""
    for f in dataclasses.fields(obj):
        limits = f.metadata.get(_BOUNDS)
        if limits is None:
            continue
        value = getattr(obj, f.name)
        integer = f.type in (int, "int")
        kinds = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not limits.holds(value):
            key = f"{section}.{f.name}"
            what = "an integer " if integer else ""
            raise ConfigError(f"{key} must be {what}{limits.text()}", key=key)


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError as exc:
                errors.append(exc)
        raise errors[0] if errors else ConfigError(f"{where}: unsupported value")
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            allowed = ", ".join(repr(a) for a in typing.get_args(hint))
            raise ConfigError(f"{where}: must be one of {allowed}", key=where)
        return value
    if origin is frozenset or hint is frozenset:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
            raise ConfigError(f"{where}: expected a list", key=where)
        return frozenset(value)
    if origin is tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list", key=where)
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        return tuple(_coerce(v, inner, f"{where}[]") for v in value)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a table", key=where)
        args = typing.get_args(hint)
        inner = args[1] if len(args) == 2 else Any
        return {k: _coerce(v, inner, f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        return from_dict(hint, value, where)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false", key=where)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer", key=where)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number", key=where)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string", key=where)
        return value
    return value


def from_dict(cls: type[T], data: Any, where: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, rejecting unknown keys and wrong types."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or cls.__name__}: expected a table", key=where)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        names = ", ".join(f"{where}.{k}" if where else k for k in unknown)
        raise ConfigError(f"unknown config key: {names}", keys=unknown)
    kwargs = {
        name: _coerce(value, hints[name], f"{where}.{name}" if where else name)
        for name, value in data.items()
    }
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        if where and "key" not in exc.details and "keys" not in exc.details:
            exc.details["key"] = where  # at least the section whose check refused it
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where or cls.__name__}: {exc}") from exc


def to_dict(obj: Any) -> Any:
    """Plain-data view of a config dataclass (tuples become lists)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    if isinstance(obj, (tuple, list, frozenset, set)):
        if isinstance(obj, (frozenset, set)):
            return sorted(to_dict(v) for v in obj)
        return [to_dict(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge two plain config dicts (override wins)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
