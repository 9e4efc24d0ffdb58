"""Where ctx keeps its files: the data dir (overridable) and the runtime dir."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "ctx"
ENV_HOME = "CTX_HOME"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: the flag value, else $CTX_HOME, else the platform user data dir."""
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser().resolve()
    return Path(platformdirs.user_data_dir(APP, appauthor=False)).resolve()


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) readable by the owner alone."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)
    return path


def vault_path(root: Path) -> Path:
    return root / "vault.db"


def vectors_path(root: Path) -> Path:
    return root / "vectors"


def keyfile_path(root: Path) -> Path:
    return root / "key.json"


def config_path(root: Path) -> Path:
    return root / "config.toml"


def lock_path(root: Path) -> Path:
    return root / "engine.lock"
