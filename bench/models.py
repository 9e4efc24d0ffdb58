"""Which model a bench embeds with, and the part of a cached store's name it decides."""

from __future__ import annotations

from typing import Any


def embedding_config(**settings: Any) -> Any:
    """An ``EmbeddingConfig`` of ``settings`` over the environment's CTX__EMBEDDING__*
    (backend, onnx_dir, document_precision, ...), as the engine itself would read them."""
    from engine import load_config

    return load_config(None, overrides={"embedding": settings}).embedding


def vectors_tag(embedder: Any) -> str:
    """The model's name, and "-int8docs" when its documents come from the int8 model
    (``embedding.document_precision``): the two write different vectors under one name.
    "-alone" on the ONNX backend: since 2026-11-28 it runs every text alone, so stores
    cached before hold vectors that depended on their batch (bench.embed_determinism)."""
    tag = str(embedder.name).replace("/", "_")
    if getattr(embedder, "document_precision", "float32") == "int8":
        tag += "-int8docs"
    if getattr(embedder, "backend", "") == "onnx":
        tag += "-alone"
    return tag
