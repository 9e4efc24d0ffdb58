from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import Config, load_config
from engine.errors import ConfigError


def test_defaults_and_roundtrip() -> None:
    cfg = Config()
    again = Config().with_overrides(cfg.to_dict())
    assert again == cfg
    assert cfg.embedding.model == "minilm"


def test_toml_file_and_env_override(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[search]\nrrf_k = 30\n[embedding]\nbatch_size = 8\n')
    cfg = load_config(tmp_path, environ={"CTX__SEARCH__LANE_DEPTH": "20", "CTX_EMBEDDER": "fake"})
    assert cfg.search.rrf_k == 30
    assert cfg.search.lane_depth == 20
    assert cfg.embedding.batch_size == 8
    assert cfg.embedding.model == "fake"


def test_unknown_key_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[search]\nrrf_kk = 30\n")
    with pytest.raises(ConfigError, match="search.rrf_kk"):
        load_config(tmp_path, environ={})


def test_unknown_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nonsense"):
        load_config(tmp_path, environ={}, overrides={"nonsense": {"a": 1}})


@pytest.mark.parametrize("override, match", [
    ({"search": {"rrf_k": 0}}, "rrf_k"),
    ({"embedding": {"batch_size": "many"}}, "batch_size"),
    ({"store": {"vector_backend": "mysql"}}, "vector_backend"),
    ({"keys": {"scrypt_n": 1000}}, "scrypt_n"),
    ({"search": {"dedupe_threshold": 2.0}}, "dedupe_threshold"),
])
def test_out_of_range_values_rejected(override: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Config().with_overrides(override)


def test_bad_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[search\n")
    with pytest.raises(ConfigError, match="TOML"):
        load_config(tmp_path, environ={})
