"""Pick the embedder named by config: "minilm", "fake[:dim]", or a local model path.

MiniLM runs on torch (sentence-transformers) or on onnxruntime (an ONNX
export of the same weights); ``embedding.backend`` chooses, "auto" taking
ONNX when an export is found and the device is the CPU. Both record the same
model name, since their float32 query vectors are equal (ONNX embeds documents,
and queries when ``embedding.query_precision`` asks, with its int8 model: see
``engine.embedding.onnx``; torch embeds everything in float32).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from engine.embedding.base import Embedder
from engine.embedding.config import MINILM_NAMES, EmbeddingConfig
from engine.errors import ConfigError

_log = logging.getLogger(__name__)


def choose_backend(cfg: EmbeddingConfig, export: Path | None) -> str:
    """"onnx" or "torch" for MiniLM, given the export found (or None). Pure."""
    if cfg.backend == "onnx":
        if export is None:
            raise ConfigError("embedding.backend is 'onnx' but no ONNX export was found; run "
                              "python -m engine.embedding.onnx_export", key="embedding.backend")
        return "onnx"  # (EmbeddingConfig refuses onnx on a cuda or mps device)
    if cfg.backend == "torch":
        return "torch"
    return "onnx" if export is not None and cfg.device in ("auto", "cpu") else "torch"


NO_EXPORT = ("no ONNX export of MiniLM was found, so it runs on torch (about twice the "
             "memory); make one with `python -m engine.embedding.onnx_export` (the install "
             "step, `make setup`, does)")


def backend_reason(cfg: EmbeddingConfig) -> str:
    """Which runtime ``cfg``'s model runs on, and why, in one line (``ctx status``, the
    Health panel); cheap: no model is loaded. "" for the fake model."""
    model = cfg.model.strip()
    if model == "fake" or model.startswith("fake:"):
        return ""
    if model not in MINILM_NAMES:
        return "torch: a local model folder runs on sentence-transformers"
    if cfg.backend == "torch":
        return "torch: embedding.backend is torch"
    from engine.embedding.onnx_files import find_export

    try:
        export = find_export(cfg)
    except ConfigError as exc:
        return f"none: {exc.message}"
    if export is not None and cfg.device in ("auto", "cpu"):
        return f"onnx: the export in {export}"
    if export is not None:
        return f"torch: embedding.device is {cfg.device} (ONNX runs on the CPU only)"
    return "torch: " + NO_EXPORT


def make_embedder(cfg: EmbeddingConfig) -> Embedder:
    model = cfg.model.strip()
    if model == "fake" or model.startswith("fake:"):
        from engine.embedding.fake import FakeEmbedder

        dim = int(model.split(":", 1)[1]) if ":" in model else 384
        return FakeEmbedder(dim)
    if model in MINILM_NAMES:
        from engine.embedding.onnx_files import find_export

        export = find_export(cfg) if cfg.backend != "torch" else None
        if choose_backend(cfg, export) == "onnx":
            from engine.embedding.onnx import OnnxEmbedder

            assert export is not None
            return OnnxEmbedder.open(export, threads=cfg.threads,
                                    document_precision=cfg.document_precision,
                                    query_precision=cfg.query_precision)
    if cfg.query_precision == "int8":
        _log.warning("embedding.query_precision int8 needs the ONNX export; this model runs "
                     "on torch, so queries are embedded in float32")
    from engine.embedding.minilm import (
        MINILM_SHA256,
        SentenceTransformerEmbedder,
        minilm_path,
    )

    if model in MINILM_NAMES:
        if cfg.backend == "auto" and cfg.device in ("auto", "cpu"):
            _log.warning("embedding: %s", NO_EXPORT)  # never silently: ctx status says it too
        return _torch_or_explain(lambda: SentenceTransformerEmbedder(
            minilm_path(), name="all-MiniLM-L6-v2", expected_sha256=MINILM_SHA256,
            device=cfg.device, batch_size=cfg.batch_size, threads=cfg.threads,
        max_batch_tokens=cfg.max_batch_tokens))
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError("embedding.model must be 'minilm', 'fake' or a local model folder")
    return _torch_or_explain(lambda: SentenceTransformerEmbedder(
        path.resolve(), name=f"local:{path.name}", expected_sha256=None, device=cfg.device,
        batch_size=cfg.batch_size, threads=cfg.threads, max_batch_tokens=cfg.max_batch_tokens))


def _torch_or_explain(load: Callable[[], Embedder]) -> Embedder:
    """Run ``load``; a missing torch stack (the app bundle has none) is a ConfigError."""
    try:
        return load()
    except ImportError as exc:
        raise ConfigError("this install has no torch/sentence-transformers and no ONNX export "
                          "of the model; reinstall, or run python -m engine.embedding.onnx_export",
                          key="embedding.backend") from exc
