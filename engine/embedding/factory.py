"""Pick the embedder named by config: "minilm", "fake[:dim]", or a local model path."""

from __future__ import annotations

from pathlib import Path

from engine.config import EmbeddingConfig
from engine.embedding.base import Embedder
from engine.errors import ConfigError


def make_embedder(cfg: EmbeddingConfig) -> Embedder:
    model = cfg.model.strip()
    if model == "fake" or model.startswith("fake:"):
        from engine.embedding.fake import FakeEmbedder

        dim = int(model.split(":", 1)[1]) if ":" in model else 384
        return FakeEmbedder(dim)
    from engine.embedding.minilm import (
        MINILM_SHA256,
        SentenceTransformerEmbedder,
        minilm_path,
    )

    if model in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        return SentenceTransformerEmbedder(
            minilm_path(), name="all-MiniLM-L6-v2", expected_sha256=MINILM_SHA256,
            device=cfg.device, batch_size=cfg.batch_size, threads=cfg.threads)
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError("embedding.model must be 'minilm', 'fake' or a local model folder")
    return SentenceTransformerEmbedder(path.resolve(), name=f"local:{path.name}",
                                       expected_sha256=None, device=cfg.device,
                                       batch_size=cfg.batch_size, threads=cfg.threads)
