"""Reading and writing ``config.toml`` in the data dir, validated before a byte is written.

The engine's settings are checked by the engine's own typed config
(``engine.load_config``), so the Settings panel shows the engine's messages.
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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import Config, ConfigError, load_config

CONFIG_NAME = "config.toml"
DEFAULT_BUDGET = 1500


@dataclass(frozen=True)
class DesktopSettings:
    """The app's own settings: the ``[desktop]`` table of config.toml."""

    watched_folders: tuple[str, ...] = ()
    start_at_login: bool = False
    default_budget: int = DEFAULT_BUDGET  # the Retrieved items panel's budget at start

    def __post_init__(self) -> None:
        if not 1 <= self.default_budget <= 1_000_000:
            raise ConfigError("desktop.default_budget must be between 1 and 1000000",
                              key="desktop.default_budget")
        seen: set[str] = set()
        for folder in self.watched_folders:
            if not folder.strip():
                raise ConfigError("desktop.watched_folders: an entry is empty",
                                  key="desktop.watched_folders")
            if not Path(folder).expanduser().is_absolute():
                raise ConfigError(f"desktop.watched_folders: {folder} is not an absolute path",
                                  key="desktop.watched_folders")
            if folder in seen:
                raise ConfigError(f"desktop.watched_folders: {folder} is listed twice",
                                  key="desktop.watched_folders")
            seen.add(folder)

    def to_dict(self) -> dict[str, Any]:
        return {"watched_folders": list(self.watched_folders),
                "start_at_login": self.start_at_login, "default_budget": self.default_budget}


def desktop_settings(table: Mapping[str, Any] | None) -> DesktopSettings:
    """Build DesktopSettings from a ``[desktop]`` table, rejecting unknown keys and bad types."""
    table = dict(table or {})
    known = {"watched_folders", "start_at_login", "default_budget"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError("unknown config key: " + ", ".join(f"desktop.{k}" for k in unknown),
                          keys=unknown)
    folders = table.get("watched_folders", [])
    if not isinstance(folders, (list, tuple)) or not all(isinstance(f, str) for f in folders):
        raise ConfigError("desktop.watched_folders: expected a list of paths",
                          key="desktop.watched_folders")
    login = table.get("start_at_login", False)
    if not isinstance(login, bool):
        raise ConfigError("desktop.start_at_login: expected true or false",
                          key="desktop.start_at_login")
    budget = table.get("default_budget", DEFAULT_BUDGET)
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise ConfigError("desktop.default_budget: expected an integer",
                          key="desktop.default_budget")
    return DesktopSettings(tuple(folders), login, budget)


@dataclass(frozen=True)
class Settings:
    """What config.toml says: the raw tables, the engine's typed view and the app's."""

    raw: dict[str, Any] = field(default_factory=dict)
    engine: Config = field(default_factory=Config)
    desktop: DesktopSettings = field(default_factory=DesktopSettings)


def config_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / CONFIG_NAME


def read_raw(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The tables of config.toml as written (no defaults, no environment); {} if absent."""
    path = config_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.__class__.__name__})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc


def validate(raw: Mapping[str, Any]) -> Settings:
    """Check ``raw`` as the engine and the app would read it; raises ConfigError."""
    data = {k: v for k, v in raw.items()}
    engine_cfg = load_config(None, environ={}, overrides=data)
    return Settings(dict(data), engine_cfg, desktop_settings(engine_cfg.desktop))


def read(data_dir: str | os.PathLike[str]) -> Settings:
    """config.toml, validated (raises ConfigError with the config's own message)."""
    return validate(read_raw(data_dir))


def write(data_dir: str | os.PathLike[str], raw: Mapping[str, Any]) -> Settings:
    """Validate ``raw`` and only then replace config.toml with it, atomically."""
    settings = validate(raw)
    text = dumps(settings.raw)
    if tomllib.loads(text) != _plain(settings.raw):
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
    return settings


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
