"""Reading and writing ``config.toml`` in the data dir, validated before a byte is written.

The engine's settings are checked by the engine's own check (``engine.check_config``,
what store open runs), so the Settings panel shows the engine's messages.
The desktop's own settings live in the file's ``[desktop]`` table and are
checked here (``DesktopSettings``). A file that fails either check is never
written: the previous one stays as it was. Writes are atomic (a temporary file
in the same folder, then a rename) and owner-only.

The writer knows the plain TOML that ctx's config uses (tables, strings,
numbers, booleans, lists of scalars); comments in a hand-edited file are not
kept, every value is.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import Config, ConfigError, bounded, check_bounds, check_config

CONFIG_NAME = "config.toml"
DEFAULT_BUDGET = 1500


APPEARANCES = ("system", "light", "dark")


@dataclass(frozen=True)
class DesktopSettings:
    """The app's own settings: the ``[desktop]`` table of config.toml."""

    start_at_login: bool = False
    default_budget: int = bounded(DEFAULT_BUDGET, 1, 1_000_000)  # Retrieved items' at start
    appearance: str = "system"  # light, dark, or what the system says

    def __post_init__(self) -> None:
        check_bounds(self, "desktop")
        if self.appearance not in APPEARANCES:
            raise ConfigError("desktop.appearance: must be one of 'system', 'light', 'dark'",
                              key="desktop.appearance")

    def to_dict(self) -> dict[str, Any]:
        return {"start_at_login": self.start_at_login, "default_budget": self.default_budget,
                "appearance": self.appearance}


def desktop_settings(table: Mapping[str, Any] | None) -> DesktopSettings:
    """Build DesktopSettings from a ``[desktop]`` table, rejecting unknown keys and bad types."""
    table = dict(table or {})
    known = {"start_at_login", "default_budget", "appearance"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError("unknown config key: " + ", ".join(f"desktop.{k}" for k in unknown),
                          keys=unknown)
    login = table.get("start_at_login", False)
    if not isinstance(login, bool):
        raise ConfigError("desktop.start_at_login: expected true or false",
                          key="desktop.start_at_login")
    budget = table.get("default_budget", DEFAULT_BUDGET)
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise ConfigError("desktop.default_budget: expected an integer",
                          key="desktop.default_budget")
    appearance = table.get("appearance", "system")
    if not isinstance(appearance, str):
        raise ConfigError("desktop.appearance: expected a string", key="desktop.appearance")
    return DesktopSettings(login, budget, appearance)


@dataclass(frozen=True)
class Settings:
    """What config.toml says: the raw tables, the engine's typed view and the app's."""

    raw: dict[str, Any] = field(default_factory=dict)
    engine: Config = field(default_factory=Config)
    desktop: DesktopSettings = field(default_factory=DesktopSettings)


def config_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / CONFIG_NAME


def read_raw(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The tables of config.toml as written (no defaults, no environment); {} if absent.
    An old file's ``[desktop] watched_folders`` is read as ``[ingest] watched_folders``
    (where it lives now): the next write puts it there."""
    path = config_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.__class__.__name__})") from exc
    try:
        return _moved(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc


def _moved(raw: dict[str, Any]) -> dict[str, Any]:
    desktop, ingest = raw.get("desktop"), raw.get("ingest", {})
    if not isinstance(desktop, dict) or "watched_folders" not in desktop \
            or not isinstance(ingest, dict) or "watched_folders" in ingest:
        return raw  # nothing moved (or both set: the engine's check names the fix)
    rest = {k: v for k, v in desktop.items() if k != "watched_folders"}
    return {**raw, "ingest": {**ingest, "watched_folders": desktop["watched_folders"]},
            "desktop": rest}


def validate(raw: Mapping[str, Any]) -> Settings:
    """Check ``raw`` as store open would (``engine.check_config``) and the app's own
    ``[desktop]`` table; raises ConfigError with the config's own message."""
    data = _moved(dict(raw))
    engine_cfg = check_config(data)
    return Settings(data, engine_cfg, desktop_settings(engine_cfg.desktop))


def read(data_dir: str | os.PathLike[str]) -> Settings:
    """config.toml, validated (raises ConfigError with the config's own message)."""
    return validate(read_raw(data_dir))


def write(data_dir: str | os.PathLike[str], raw: Mapping[str, Any]) -> Settings:
    """Validate ``raw`` and only then replace config.toml with it, atomically."""
    settings = validate(raw)
    _write_unchecked(data_dir, settings.raw)
    return settings


def _write_unchecked(data_dir: str | os.PathLike[str], raw: Mapping[str, Any]) -> None:
    text = dumps(raw)
    if tomllib.loads(text) != _plain(raw):
        raise ConfigError("config.toml: a value cannot be written as TOML")
    path = config_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if os.name == "posix":
            os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def without_key(data_dir: str | os.PathLike[str], key: str | None) -> Path | None:
    """Put a setting back to its default: remove dotted ``key`` from config.toml (a table
    left empty goes too). ``key`` None: the whole file is set aside (renamed, kept for the
    person to read) and every setting is back to its default. Returns where the old file
    was kept, if it was."""
    path = config_path(data_dir)
    if key is None:
        if not path.exists():
            return None
        kept = path.with_name(f"config.toml.{time.strftime('%Y%m%d-%H%M%S')}.bad")
        os.replace(path, kept)
        return kept
    raw = read_raw(data_dir)
    parts = key.split(".")
    node: Any = raw
    trail: list[tuple[dict[str, Any], str]] = []
    for part in parts[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return None
        trail.append((node, part))
        node = node[part]
    if not isinstance(node, dict) or parts[-1] not in node:
        return None
    del node[parts[-1]]
    for parent, name in reversed(trail):
        if not parent[name]:
            del parent[name]
    _write_unchecked(data_dir, raw)
    return None


def with_values(raw: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``raw`` with dotted keys set (``{"packing.mode": "fast"}``)."""
    out: dict[str, Any] = _copy(raw)
    for dotted, value in values.items():
        node = out
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = list(value) if isinstance(value, tuple) else value
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# -- a small TOML writer ---------------------------------------------------------------------
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def dumps(data: Mapping[str, Any]) -> str:
    """TOML for nested tables of scalars and lists of scalars."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(data: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, Mapping)]
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for key, value in scalars:
        lines.append(f"{_key(key)} = {_value(value, '.'.join([*path, key]))}")
    for key, value in tables:
        _table(value, [*path, key], lines)


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"{where}: must be a finite number", key=where)
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v, where) for v in value) + "]"
    raise ConfigError(f"{where}: a {type(value).__name__} cannot be written", key=where)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
