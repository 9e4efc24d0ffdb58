"""The [ipc] table of config.toml reaches the server, validated by the ipc package."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from ipc.serve import ipc_config


def test_ipc_table_from_config_file(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text("[ipc]\nworkers = 2\ntimeout_s = 3.5\n")
    with ContextEngine.open(data_dir) as eng:
        cfg = ipc_config(eng)
    assert cfg.workers == 2 and cfg.timeout_s == 3.5


def test_unknown_ipc_key_is_an_error(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text("[ipc]\nworkerz = 2\n")
    with ContextEngine.open(data_dir) as eng, pytest.raises(ConfigError, match="ipc.workerz"):
        ipc_config(eng)
