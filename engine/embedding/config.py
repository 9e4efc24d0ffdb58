"""The embedding part's config: which model, which runtime, how many threads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError

MINILM_NAMES = ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which model embeds text, and with which runtime.

    ``model``: "minilm" (the shipped weights), "fake" (tests), or a local
    sentence-transformers folder path. ``backend``: "torch" runs
    sentence-transformers; "onnx" runs MiniLM exported to ONNX (onnxruntime and
    ``tokenizers``, the same query vectors, recorded under the same model name;
    documents run on its int8 copy unless ``document_precision`` says float32); "auto"
    takes ONNX when an exported model is found (the app bundle ships one; a pip
    install gets one from ``python -m engine.embedding.onnx_export``) and the
    device is the CPU, else torch. ``onnx_dir``: a folder holding an export,
    searched before the bundle and the user cache dir. ``document_precision``:
    "int8" embeds documents (not queries) with the ONNX export's int8 model when
    it has one, "float32" with the float32 model (see ``engine.embedding.onnx``);
    ``query_precision`` the same for queries (float32 by default).
    The vault's embedding cache keys vectors by model name and text, not precision:
    after a switch, texts embedded before keep their cached vectors.
    """

    model: str = "minilm"
    backend: Literal["auto", "torch", "onnx"] = "auto"
    onnx_dir: str = ""
    batch_size: int = bounded(64, 1, 4096)  # torch only: the ONNX backend runs every text alone (onnx.py)
    device: str = "auto"  # auto | cpu | cuda | mps (torch); onnx runs on the CPU
    query_cache_size: int = bounded(1024, 0)
    threads: int = bounded(0, 0)  # threads for batches; 0 = one per core
    # padded tokens per model run, torch only: bench.ingest_mem (docs/tuning.md)
    max_batch_tokens: int = bounded(256, 256, 1_000_000)
    # int8 documents: bench.embed_precision --quality, bench.scifact, bench.locomo (docs/tuning.md)
    document_precision: Literal["int8", "float32"] = "int8"
    # float32 queries: int8 ranks a little worse on every benchmark (docs/tuning.md).
    query_precision: Literal["int8", "float32"] = "float32"

    def __post_init__(self) -> None:
        check_bounds(self, "embedding")
        if self.device not in ("auto", "cpu", "cuda", "mps"):
            raise ConfigError("embedding.device must be auto, cpu, cuda or mps",
                              key="embedding.device")
        if self.backend not in ("auto", "torch", "onnx"):
            raise ConfigError("embedding.backend must be auto, torch or onnx",
                              key="embedding.backend")
        for key in ("document_precision", "query_precision"):
            if getattr(self, key) not in ("int8", "float32"):
                raise ConfigError(f"embedding.{key} must be int8 or float32",
                                  key=f"embedding.{key}")
        self._check_model()
        if self.onnx_dir and not Path(self.onnx_dir).expanduser().is_dir():
            raise ConfigError("embedding.onnx_dir is not a folder (one that holds an ONNX "
                              "export of the model)", key="embedding.onnx_dir")

    def _check_model(self) -> None:
        """The model is the shipped MiniLM, the fake one, or a local model folder that
        exists; the ONNX backend runs the shipped MiniLM on the CPU only."""
        model = self.model.strip()
        fake = model == "fake" or model.startswith("fake:")
        if fake:
            size = model.partition(":")[2]
            if size and not (size.isdigit() and 1 <= int(size) <= 8192):
                raise ConfigError("embedding.model 'fake:N' needs N from 1 to 8192",
                                  key="embedding.model")
            return
        if model not in MINILM_NAMES:
            if not model or not Path(model).expanduser().is_dir():
                raise ConfigError("embedding.model must be 'minilm', 'fake' or a local model "
                                  "folder", key="embedding.model")
            if self.backend == "onnx":
                raise ConfigError("embedding.backend 'onnx' serves the shipped MiniLM only",
                                  key="embedding.backend")
        if self.backend == "onnx" and self.device in ("cuda", "mps"):
            raise ConfigError("embedding.backend 'onnx' runs on the CPU; set device to auto or "
                              "cpu, or backend to torch", key="embedding.device")
