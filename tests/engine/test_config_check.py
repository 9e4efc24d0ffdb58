"""One validation for config: every value that would stop the store from opening is
refused when the config is built (``engine.config.check``, ``load_config``, Settings),
with the owning part's message and the key in ``details["key"]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.config import Config, check, load_config
from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.store.config import chroma_endpoint


def _refused(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        check(data)
    return caught.value


@pytest.mark.parametrize("url, why", [
    ("ftp://10.0.0.5:8000", "http:// or https://"),
    ("10.0.0.5:8000", "http:// or https://"),
    ("http://", "no host"),
    ("http://:8000", "no host"),
    ("http://10.0.0.5:99999", "port"),
    ("http://10.0.0.5:0", "port"),
    ("http://10.0.0.5:eighty", "port"),
])
def test_a_chroma_url_the_store_cannot_reach_is_refused_by_the_config(url: str, why: str
                                                                       ) -> None:
    err = _refused({"store": {"vector_backend": "http", "chroma_url": url}})
    assert err.details["key"] == "store.chroma_url"
    assert "store.chroma_url" in err.message and why in err.message


def test_the_url_is_read_only_for_the_http_backend() -> None:
    cfg = check({"store": {"vector_backend": "embedded", "chroma_url": "not a url"}})
    assert cfg.store.chroma_url == "not a url"


def test_open_and_config_read_the_same_endpoint() -> None:
    assert chroma_endpoint("http://10.0.0.5") == ("10.0.0.5", 8000, False)
    assert chroma_endpoint("https://chroma.example") == ("chroma.example", 443, True)
    assert chroma_endpoint(" http://[::1]:9000/ ") == ("::1", 9000, False)
    cfg = check({"store": {"vector_backend": "http", "chroma_url": "https://h:8443"}})
    assert chroma_endpoint(cfg.store.chroma_url).port == 8443


def test_a_store_with_a_bad_url_in_its_file_is_refused_at_open_and_left_as_it_was(
        data_dir: Path) -> None:
    ContextEngine.open(data_dir).close()
    before = sorted(p.relative_to(data_dir) for p in data_dir.rglob("*"))
    (data_dir / "config.toml").write_text(
        '[store]\nvector_backend = "http"\nchroma_url = "http://host:70000"\n')
    with pytest.raises(ConfigError) as caught:
        ContextEngine.open(data_dir)
    assert caught.value.details["key"] == "store.chroma_url"
    after = sorted(p.relative_to(data_dir) for p in data_dir.rglob("*"))
    assert after == sorted([*before, Path("config.toml")])
    (data_dir / "config.toml").unlink()
    ContextEngine.open(data_dir).close()  # the store itself is untouched


@pytest.mark.parametrize("data, key", [
    ({"embedding": {"model": "/nowhere/model"}}, "embedding.model"),
    ({"embedding": {"model": "fake:x"}}, "embedding.model"),
    ({"embedding": {"backend": "onnx", "device": "cuda"}}, "embedding.device"),
    ({"embedding": {"onnx_dir": "/nowhere/export"}}, "embedding.onnx_dir"),
    ({"search": {"cross_encoder_path": "/nowhere/cross"}}, "search.cross_encoder_path"),
    ({"recall": {"folders": ["relative/transcripts"]}}, "recall.folders"),
    ({"recall": {"folders": [""]}}, "recall.folders"),
    ({"recall": {"auto_budget": -1}}, "recall.auto_budget"),
    ({"tiers": {"mode": "sometimes"}}, "tiers.mode"),
    ({"tiers": {"recent_days": 40.0, "old_days": 30.0}}, "tiers.old_days"),
    ({"tiers": {"recent_days": -1.0}}, "tiers.recent_days"),
    ({"tiers": {"gist": 0.7, "full": 0.6}}, "tiers.full"),
    ({"tiers": {"query_boost": float("nan")}}, "tiers.query_boost"),
    ({"store": {"vector_backend": "cloud"}}, "store.vector_backend"),
    ({"store": {"vault_cache_mb": 0}}, "store.vault_cache_mb"),
    ({"search": {"lane_depth": 0}}, "search.lane_depth"),
    ({"keys": {"scrypt_n": 1000}}, "keys.scrypt_n"),
    ({"rerank": {"window": 0}}, "rerank.window"),
    ({"packing": {"live_max_share": 0.0}}, "packing.live_max_share"),
    ({"surrogates": {"redundancy": 2.0}}, "surrogates.redundancy"),
    ({"rerank": {"profiles": {"document": {"fused": 11.0}}}}, "rerank.profiles.document.fused"),
])
def test_each_refused_value_names_its_key(data: dict[str, Any], key: str) -> None:
    err = _refused(data)
    assert err.details["key"] == key
    assert key.split(".")[0] in err.message


def test_paths_that_exist_and_absolute_folders_pass(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    cfg = check({"embedding": {"model": str(model), "onnx_dir": str(tmp_path)},
                 "search": {"cross_encoder_path": str(model)},
                 "recall": {"folders": [str(tmp_path / "not-yet"), "~/transcripts"]}})
    assert cfg.embedding.model == str(model)
    assert cfg.recall.folders == (str(tmp_path / "not-yet"), "~/transcripts")


def test_check_is_what_load_config_builds(tmp_path: Path) -> None:
    data = {"search": {"rrf_k": 30}, "tiers": {"mode": "age_only"}}
    assert check(data) == load_config(None, environ={}, overrides=data)
    assert check({}) == Config()
    with pytest.raises(ConfigError):
        check(["not", "a", "table"])  # type: ignore[arg-type]


def test_watched_folders_are_checked_by_the_ingest_section() -> None:
    assert check({"ingest": {"watched_folders": ["/srv/notes"]}}).ingest.watched_folders == (
        "/srv/notes",)
    for bad, why in ((["notes"], "not an absolute path"), ([""], "empty"),
                     (["/a", "/a"], "twice"), ("/a", "expected a list")):
        err = _refused({"ingest": {"watched_folders": bad}})
        assert err.details["key"].startswith("ingest.watched_folders") and why in err.message


def test_watched_folders_of_an_old_desktop_table_still_work(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[desktop]\nwatched_folders = ["/srv/notes"]\n'
                                          "default_budget = 900\n")
    cfg = load_config(tmp_path, environ={})
    assert cfg.ingest.watched_folders == ("/srv/notes",)
    assert cfg.desktop == {"default_budget": 900}
    err = _refused({"desktop": {"watched_folders": ["/a"]},
                    "ingest": {"watched_folders": ["/b"]}})
    assert err.details["key"] == "desktop.watched_folders"
    assert "keep the list under [ingest]" in err.message
