"""The embedding part's config: which model, which runtime, how many threads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
    batch_size: int = 64  # torch only: the ONNX backend runs every text alone (onnx.py)
    device: str = "auto"  # auto | cpu | cuda | mps (torch); onnx runs on the CPU
    query_cache_size: int = 1024
    threads: int = 0  # threads for batches; 0 = one per core
    # torch only (the ONNX backend runs every text alone, so that its vector does not
    # depend on its batch: engine/embedding/onnx.py). Measured when ONNX batched too:
    # Padded tokens (texts x longest) per model run. 256 = one chunk of 256 word pieces, or
    # several short texts. On 2 cores (onnx, two runs at once), against 512 and 1024: 1 MB
    # of prose peaks at 372 / 404 / 425 MB RSS and takes 54 / 60 / 80 s
    # (python -m bench.ingest_mem --cases prose_1mb --backends onnx, with
    # CTX__EMBEDDING__MAX_BATCH_TOKENS set); long texts embed at 26 / 24 / 21 per second
    # (2026-11-22, load 1.5).
    max_batch_tokens: int = 256
    # int8 documents: 1.49x (a second run, 07:51: 1.39x) the float32 speed on SciFact chunk texts, vectors at
    # cosine 0.994 of the float32 ones on average (0.989 at worst), and SciFact train
    # quality (1,500 abstracts, every 2nd claim, 200/240/0 chunks, queries on float32)
    # float32 vs int8 documents: nDCG@10 0.852 vs 0.849, Recall@100 0.993 vs 0.993, in
    # payload @500/1000/2000 0.859/0.891/0.926 vs 0.864/0.891/0.926 (``python -m
    # bench.embed_precision --quality``, 2026-11-23, 2-core AVX2 machine, load 0.6-1.8).
    # Full corpus with int8 documents, all 809 claims (``python -m bench.scifact``,
    # 2026-11-23): nDCG@10 0.752 vs RRF 0.716 in the same run (float32 documents, the
    # day before: 0.751 vs 0.713). LoCoMo test (``python -m bench.locomo --split test``)
    # recall@10 / ctx@1000 / ctx@2000: 0.732 / 0.845 / 0.895 with int8 documents, 0.727 /
    # 0.844 / 0.894 with float32 (same code otherwise); transcripts hit@5 (``python -m
    # bench.transcripts_recall``, 28 questions): 0.821 vs 0.857 (one question, ranked
    # 6-10 instead of <= 5).
    document_precision: Literal["int8", "float32"] = "int8"
    # Queries on the int8 model too (ONNX only; torch always embeds float32): a query
    # embeds in about half the time (SciFact claims, one at a time: p50 6.8 vs 12.5 ms,
    # p95 10.8 vs 18.5; cosine 0.992 to the float32 vector), but ranks a little worse on
    # every benchmark, so float32 stays the default. float32 vs int8 queries, same code
    # and stores, 2026-11-23: LoCoMo dev recall@10 0.792 vs 0.787, ctx@1000 0.874 vs
    # 0.873 (``python -m bench.locomo --split dev``); SciFact train nDCG@10 0.750 vs
    # 0.748, RRF margin +0.033 vs +0.030 (``python -m bench.scifact``); transcripts hit@5
    # 0.821 vs 0.786, one question (``python -m bench.transcripts_recall``); LoCoMo test,
    # checked after: recall@10 0.764 vs 0.759, ctx@1000 0.858 vs 0.861, ctx@2000 0.904
    # both. Set CTX__EMBEDDING__QUERY_PRECISION for the benches.
    query_precision: Literal["int8", "float32"] = "float32"

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 4096:
            raise ConfigError("embedding.batch_size must be between 1 and 4096",
                              key="embedding.batch_size")
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
        if not 256 <= self.max_batch_tokens <= 1_000_000:
            raise ConfigError("embedding.max_batch_tokens must be between 256 and 1000000",
                              key="embedding.max_batch_tokens")
        for key in ("query_cache_size", "threads"):
            if getattr(self, key) < 0:
                raise ConfigError(f"embedding.{key} must be >= 0", key=f"embedding.{key}")
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
