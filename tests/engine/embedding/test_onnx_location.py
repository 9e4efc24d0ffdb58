"""The ONNX export lives with the install, so every HOME that runs it finds it; without
one, the engine says it runs on torch and why, never silently (issue 21)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from engine.embedding import onnx_export as X
from engine.embedding import onnx_files as F
from engine.embedding.config import EmbeddingConfig
from engine.embedding.factory import backend_reason, make_embedder
from engine.embedding.lazy_embedder import LazyEmbedder
from tests.engine.embedding.test_onnx_files import _fake_export

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An install prefix of its own (its data dir), and a user cache that is empty."""
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path",
                        lambda name, *a, **k: str(tmp_path / "venv") if name == "data"
                        else real(name, *a, **k))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delattr(sys, "frozen", raising=False)
    return tmp_path / "venv"


def test_every_home_of_an_install_finds_its_export(prefix: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    export = _fake_export(F.install_export_dir())
    assert export.is_relative_to(prefix)
    for home in ("alice", "bob"):
        monkeypatch.setenv("HOME", str(tmp_path / home))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / home / ".cache"))
        assert F.find_export(EmbeddingConfig()) == export
        assert backend_reason(EmbeddingConfig()) == f"onnx: the export in {export}"


def test_the_export_step_writes_into_the_install(prefix: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert X.default_target() == F.install_export_dir()
    prefix.mkdir()
    prefix.chmod(0o500)
    try:
        if os.access(prefix, os.W_OK):
            pytest.skip("running as a user who writes anywhere (root)")
        assert X.default_target() == F.user_export_dir()
        assert "not writable" in capsys.readouterr().err
    finally:
        prefix.chmod(0o700)


def test_without_an_export_the_reason_says_torch_and_why(prefix: Path) -> None:
    assert F.find_export(EmbeddingConfig()) is None
    reason = LazyEmbedder(EmbeddingConfig()).backend_reason
    assert reason.startswith("torch: no ONNX export") and "onnx_export" in reason
    assert backend_reason(EmbeddingConfig(backend="torch")) == "torch: embedding.backend is torch"
    assert backend_reason(EmbeddingConfig(model="fake")) == ""


def test_ctx_status_names_the_backend_and_why(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTX_EMBEDDER": "minilm",
           "XDG_CACHE_HOME": str(tmp_path / "empty-cache")}
    r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "--local", "status"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if "model backend:" in ln]
    reason = line.split("model backend:", 1)[1].strip()
    assert reason.startswith("onnx: the export in") or "no ONNX export" in reason


@pytest.mark.integration
def test_falling_back_to_torch_is_a_warning(prefix: Path, caplog: pytest.LogCaptureFixture
                                            ) -> None:
    with caplog.at_level(logging.WARNING):
        emb = make_embedder(EmbeddingConfig())
    try:
        assert getattr(emb, "backend", "torch") == "torch"
        assert any("no ONNX export" in r.getMessage() for r in caplog.records)
    finally:
        close = getattr(emb, "close", None)
        if close is not None:
            close()
