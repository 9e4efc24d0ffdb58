"""config.toml round trips: validated by the engine's config before anything is written."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from desktop import config_io
from engine import load_config
from engine.config_base import bounds_of
from engine.errors import ConfigError


def test_write_then_read_back_and_engine_accepts_it(tmp_path: Path) -> None:
    raw = config_io.with_values({"ipc": {"workers": 3}}, {
        "packing.mode": "dense_cached", "tiers.recent_days": 3.5,
        "ingest.watched_folders": (str(tmp_path / "notes"),), "desktop.start_at_login": True,
        "desktop.appearance": "dark", "store.chroma_url": 'http://h:1/"q"\\'})
    settings = config_io.write(tmp_path, raw)
    assert settings.engine.packing.mode == "dense_cached"
    back = config_io.read(tmp_path)
    assert back.raw == settings.raw and back.raw["ipc"] == {"workers": 3}
    assert back.engine.ingest.watched_folders == (str(tmp_path / "notes"),)
    assert back.desktop.start_at_login is True and back.desktop.appearance == "dark"
    cfg = load_config(tmp_path, environ={})  # the engine opens a store with this file
    assert cfg.tiers.recent_days == 3.5 and cfg.store.chroma_url == 'http://h:1/"q"\\'
    assert (tmp_path / "config.toml").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(("values", "needle"), [
    ({"tiers.recent_days": 40.0, "tiers.old_days": 30.0}, "recent_days <= old_days"),
    ({"packing.mode": "turbo"}, "packing.mode"),
    ({"packing.max_item_tokens": 0}, "max_item_tokens"),
    ({"store.vector_backend": "cloud"}, "store.vector_backend"),
    ({"ingest.watched_folders": ["relative/dir"]}, "not an absolute path"),
    ({"store.vector_backend": "http", "store.chroma_url": "chroma.local:80oo"},
     "store.chroma_url"),
    ({"desktop.appearance": "sepia"}, "desktop.appearance"),
    ({"desktop.default_budget": 0}, "desktop.default_budget"),
    ({"desktop.colour": "red"}, "desktop.colour"),
])
def test_invalid_value_shows_its_message_and_writes_nothing(
        tmp_path: Path, values: dict[str, object], needle: str) -> None:
    tmp_path = tmp_path / "data"
    tmp_path.mkdir()
    path = tmp_path / "config.toml"
    path.write_text("[packing]\nmode = \"fast\"\n", encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(ConfigError) as err:
        config_io.write(tmp_path, config_io.with_values(config_io.read_raw(tmp_path), values))
    assert needle in err.value.message
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left


@pytest.mark.parametrize("budget", [0, 1_000_001, 2.5, "big", True])
def test_the_default_budget_is_a_bounded_field(budget: object) -> None:
    """[desktop] default_budget's range is a shared bounded field (engine.bounded), as
    every config section states it: whole numbers 1..1000000, else a ConfigError naming
    the key (2.5 passed before, and "big" was a TypeError)."""
    with pytest.raises(ConfigError) as caught:
        config_io.DesktopSettings(default_budget=budget)  # type: ignore[arg-type]  # refused
    assert caught.value.details["key"] == "desktop.default_budget"
    assert "an integer between 1 and 1000000" in caught.value.message
    assert "default_budget" in bounds_of(config_io.DesktopSettings)


def test_broken_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[packing\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_io.read(tmp_path)


def test_dumps_round_trips_awkward_values() -> None:
    data = {"a": {"b": {"c": [1, 2.5, "x\ty\n\u0001"], "t": True}}, "top": "v"}
    assert tomllib.loads(config_io.dumps(data)) == data


def test_an_old_desktop_watched_folders_list_moves_to_ingest(tmp_path: Path) -> None:
    """A config.toml from before the move keeps working; the next write moves the list."""
    (tmp_path / "config.toml").write_text(
        '[desktop]\nwatched_folders = ["/srv/notes"]\ndefault_budget = 900\n',
        encoding="utf-8")
    settings = config_io.read(tmp_path)
    assert settings.engine.ingest.watched_folders == ("/srv/notes",)
    assert settings.desktop.default_budget == 900
    config_io.write(tmp_path, config_io.with_values(config_io.read_raw(tmp_path),
                                                    {"desktop.default_budget": 800}))
    written = tomllib.loads((tmp_path / "config.toml").read_text(encoding="utf-8"))
    assert written == {"desktop": {"default_budget": 800},
                       "ingest": {"watched_folders": ["/srv/notes"]}}


def test_a_setting_is_reset_by_removing_its_key(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n'
        '[packing]\nmode = "fast"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        config_io.read(tmp_path)
    assert err.value.details["key"] == "store.chroma_url"
    assert config_io.without_key(tmp_path, "store.chroma_url") is None
    assert config_io.read(tmp_path).engine.store.vector_backend == "http"
    config_io.without_key(tmp_path, "store.vector_backend")
    assert config_io.read_raw(tmp_path) == {"packing": {"mode": "fast"}}  # empty table gone
    kept = config_io.without_key(tmp_path, None)
    assert kept is not None and kept.read_text(encoding="utf-8").startswith("[packing]")
    assert not (tmp_path / "config.toml").exists()
