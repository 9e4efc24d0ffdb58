"""The ONNX export's lookup, manifest and hash checks, and the backend choice (no model)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from engine.config import Config, load_config
from engine.embedding import onnx_files as F
from engine.embedding.config import EmbeddingConfig
from engine.embedding.factory import choose_backend, make_embedder
from engine.errors import ConfigError, IntegrityError


def _fake_export(folder: Path, **changes: object) -> Path:
    """A folder shaped like an export: small stand-in files and a manifest matching them."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / F.ONNX_FILE).write_bytes(b"not really onnx " * 64)
    (folder / F.INT8_FILE).write_bytes(b"not really int8 " * 32)
    (folder / F.TOKENIZER_FILE).write_text('{"version": "1.0"}', encoding="utf-8")
    man = F.Manifest(version=F.MANIFEST_VERSION, model_name=F.MODEL_NAME, dim=384,
                     max_seq_length=256, source_sha256=F.MINILM_SHA256,
                     onnx_sha256=F.sha256_file(folder / F.ONNX_FILE),
                     tokenizer_sha256=F.sha256_file(folder / F.TOKENIZER_FILE),
                     probe_min_cosine=0.9999999, opset=17, exported_with={"torch": "x"},
                     int8_sha256=F.sha256_file(folder / F.INT8_FILE),
                     int8_probe_min_cosine=0.98)
    man = dataclasses.replace(man, **changes)  # type: ignore[arg-type]
    (folder / F.MANIFEST_FILE).write_text(man.to_json(), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(F, "install_export_dir", lambda: tmp_path / "install" / F.MODEL_NAME)
    monkeypatch.delattr(sys, "_MEIPASS", raising=False)
    monkeypatch.delattr(sys, "frozen", raising=False)


def test_a_matching_export_verifies(tmp_path: Path) -> None:
    man = F.verify_export(_fake_export(tmp_path / "ok"))
    assert man.model_name == "all-MiniLM-L6-v2" and man.dim == 384


@pytest.mark.parametrize("victim", [F.ONNX_FILE, F.TOKENIZER_FILE, F.INT8_FILE])
def test_a_changed_file_fails_its_hash(tmp_path: Path, victim: str) -> None:
    folder = _fake_export(tmp_path / "x")
    with open(folder / victim, "ab") as fh:
        fh.write(b" ")
    with pytest.raises(IntegrityError, match="sha256"):
        F.verify_export(folder)


@pytest.mark.parametrize("changes", [
    {"source_sha256": "0" * 64},       # exported from other weights
    {"model_name": "other-model"},
    {"probe_min_cosine": 0.999},       # did not match sentence-transformers
    {"version": 99},
])
def test_a_manifest_that_does_not_vouch_for_minilm_is_refused(tmp_path: Path,
                                                              changes: dict[str, object]) -> None:
    with pytest.raises(IntegrityError):
        F.verify_export(_fake_export(tmp_path / "x", **changes))


def test_a_manifest_with_missing_or_extra_keys_is_refused(tmp_path: Path) -> None:
    folder = _fake_export(tmp_path / "x")
    raw = json.loads((folder / F.MANIFEST_FILE).read_text())
    raw.pop("onnx_sha256")
    (folder / F.MANIFEST_FILE).write_text(json.dumps(raw))
    with pytest.raises(IntegrityError, match="manifest"):
        F.verify_export(folder)


@pytest.mark.parametrize("victim", [F.ONNX_FILE, F.INT8_FILE])
def test_missing_model_file_is_an_integrity_error(tmp_path: Path, victim: str) -> None:
    folder = _fake_export(tmp_path / "x")
    (folder / victim).unlink()
    with pytest.raises(IntegrityError, match="incomplete"):
        F.verify_export(folder)


def test_an_int8_model_below_the_floor_is_not_used_but_the_export_loads(tmp_path: Path) -> None:
    man = F.verify_export(_fake_export(tmp_path / "x", int8_probe_min_cosine=0.9))
    assert man.int8_sha256 and not F.int8_usable(man)
    assert F.int8_usable(F.verify_export(_fake_export(tmp_path / "y")))


def test_an_export_without_an_int8_model_needs_no_int8_file(tmp_path: Path) -> None:
    folder = _fake_export(tmp_path / "x", int8_sha256="", int8_probe_min_cosine=0.0)
    (folder / F.INT8_FILE).unlink()
    assert F.verify_export(folder).int8_sha256 == ""


def test_a_version_1_export_still_loads_but_not_with_version_2_keys(tmp_path: Path) -> None:
    folder = _fake_export(tmp_path / "x")
    raw = json.loads((folder / F.MANIFEST_FILE).read_text())
    raw["version"] = 1
    (folder / F.MANIFEST_FILE).write_text(json.dumps(raw))
    with pytest.raises(IntegrityError, match="manifest"):  # a v1 manifest has no int8 keys
        F.verify_export(folder)
    for key in ("int8_sha256", "int8_probe_min_cosine"):
        raw.pop(key)
    (folder / F.MANIFEST_FILE).write_text(json.dumps(raw))
    man = F.verify_export(folder)
    assert man.version == 1 and man.int8_sha256 == ""  # documents then embed in float32


def test_lookup_order_config_then_bundle_then_install_then_user_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = EmbeddingConfig()
    assert F.find_export(cfg) is None
    user = _fake_export(F.user_export_dir())
    assert user.is_relative_to(tmp_path / "cache")
    assert F.find_export(cfg) == user
    installed = _fake_export(F.install_export_dir())
    assert F.find_export(cfg) == installed
    bundle = tmp_path / "bundle" / "_internal"
    _fake_export(bundle / F.BUNDLE_SUBDIR)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    assert F.bundle_root() == bundle
    assert F.find_export(cfg) == bundle / F.BUNDLE_SUBDIR
    mine = _fake_export(tmp_path / "mine")
    assert F.find_export(EmbeddingConfig(onnx_dir=str(mine))) == mine


def test_meipass_alone_is_not_a_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert F.bundle_root() is None


def test_configured_folder_without_an_export_is_a_config_error(tmp_path: Path) -> None:
    _fake_export(F.user_export_dir())  # present, but the user named another folder
    with pytest.raises(ConfigError, match="onnx_dir"):
        F.find_export(EmbeddingConfig(onnx_dir=str(tmp_path / "empty")))


@pytest.mark.parametrize(("backend", "device", "found", "expected"), [
    ("auto", "auto", True, "onnx"),
    ("auto", "cpu", True, "onnx"),
    ("auto", "auto", False, "torch"),
    ("auto", "cuda", True, "torch"),
    ("torch", "auto", True, "torch"),
    ("onnx", "cpu", True, "onnx"),
])
def test_backend_choice(backend: str, device: str, found: bool, expected: str) -> None:
    cfg = EmbeddingConfig(backend=backend, device=device)  # type: ignore[arg-type]
    assert choose_backend(cfg, Path("/x") if found else None) == expected


@pytest.mark.parametrize(("device", "found"), [("cpu", False), ("mps", True)])
def test_onnx_backend_that_cannot_run_is_a_config_error(device: str, found: bool) -> None:
    with pytest.raises(ConfigError):
        choose_backend(EmbeddingConfig(backend="onnx", device=device),
                       Path("/x") if found else None)


def test_factory_refuses_onnx_without_an_export_and_for_other_models(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no ONNX export"):
        make_embedder(EmbeddingConfig(model="minilm", backend="onnx"))
    with pytest.raises(ConfigError, match="MiniLM only"):
        make_embedder(EmbeddingConfig(model=str(tmp_path), backend="onnx"))


def test_factory_refuses_a_tampered_export(tmp_path: Path) -> None:
    folder = _fake_export(tmp_path / "x", onnx_sha256="f" * 64)
    with pytest.raises(IntegrityError):
        make_embedder(EmbeddingConfig(backend="onnx", onnx_dir=str(folder)))


def test_fake_embedder_ignores_the_backend() -> None:
    assert make_embedder(EmbeddingConfig(model="fake", backend="onnx")).name == "fake-hash-384"


def test_backend_is_validated_from_toml_and_environment(data_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError):
        Config().with_overrides({"embedding": {"backend": "tensorflow"}})
    monkeypatch.setenv("CTX__EMBEDDING__BACKEND", '"onnx"')
    assert load_config(data_dir).embedding.backend == "onnx"


def test_document_precision_is_validated(monkeypatch: pytest.MonkeyPatch,
                                         data_dir: Path) -> None:
    assert Config().embedding.document_precision == "int8"
    with pytest.raises(ConfigError, match="document_precision"):
        Config().with_overrides({"embedding": {"document_precision": "int4"}})
    monkeypatch.setenv("CTX__EMBEDDING__DOCUMENT_PRECISION", '"float32"')
    assert load_config(data_dir).embedding.document_precision == "float32"


def test_current_export_is_a_checked_export_of_todays_version(tmp_path: Path) -> None:
    folder = _fake_export(tmp_path / "x")
    assert F.current_export(folder) is not None
    assert F.current_export(tmp_path / "absent") is None
    raw = json.loads((folder / F.MANIFEST_FILE).read_text())
    for key in ("int8_sha256", "int8_probe_min_cosine"):
        raw.pop(key)
    raw["version"] = 1
    (folder / F.MANIFEST_FILE).write_text(json.dumps(raw))
    assert F.verify_export(folder).version == 1
    assert F.current_export(folder) is None  # older: an export step makes it afresh
