"""MiniLM on onnxruntime and ``tokenizers``: sentence-transformers' vectors without torch.

The export (see ``onnx_export``) carries mean pooling and L2 normalisation in
its graph, so a run returns the sentence embedding itself. Tokenising matches
sentence-transformers: texts are stripped, cut at the model's max_seq_length
(256 word pieces) and padded to the longest text of the batch. The vectors
equal sentence-transformers' within 1e-5 cosine (checked at export and in
tests), so they are recorded under the same model name and a store moves
between a pip install (torch) and the app bundle (ONNX).

Threads: a query (a few short texts) runs on one thread, in its own session;
with more, its tail latency on a busy machine grows several-fold. Larger
batches run in a second session with ``threads`` intra-op threads, made on
first use (ingestion), with thread spinning off so that an idle pool does not
burn the cores the rest of the app needs, and without onnxruntime's memory
arena, which would keep the peak of the largest batch (a batch of 64 long
chunks: RSS 1.2 GB with it, 0.3 GB without, about a fifth slower).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.embedding.onnx_files import MODEL_NAME, ONNX_FILE, TOKENIZER_FILE, verify_export
from engine.errors import ConfigError

SMALL_BATCH = 4  # up to this many texts run on the one-thread query session


def _session(path: Path, threads: int, *, arena: bool) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = arena
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # errors only: nothing about the user's input is logged
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    backend = "onnx"

    def __init__(self, folder: Path, *, dim: int, max_seq_length: int, batch_size: int = 64,
                 threads: int = 0) -> None:
        """Load the files in ``folder`` as they are; :meth:`open` checks them first."""
        try:
            import onnxruntime  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are dependencies of chromadb
            raise ConfigError("embedding.backend 'onnx' needs onnxruntime and tokenizers"
                              ) from exc
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.name = MODEL_NAME
        self.dim = dim
        self.folder = folder
        self.batch_size = batch_size
        self._batch_threads = threads or max(1, os.cpu_count() or 1)
        self._tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self._tok.enable_truncation(max_length=max_seq_length)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._query = _session(folder / ONNX_FILE, 1, arena=True)
        self._inputs = {i.name for i in self._query.get_inputs()}
        self._batch: Any = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, folder: Path, *, batch_size: int = 64, threads: int = 0) -> OnnxEmbedder:
        """The export in ``folder``, once it passes :func:`verify_export` (IntegrityError)."""
        man = verify_export(folder)
        return cls(folder, dim=man.dim, max_seq_length=man.max_seq_length,
                   batch_size=batch_size, threads=threads)

    def _batch_session(self) -> Any:
        if self._batch_threads == 1:
            return self._query
        with self._lock:
            if self._batch is None:
                self._batch = _session(self.folder / ONNX_FILE, self._batch_threads, arena=False)
            return self._batch

    def _run(self, session: Any, texts: list[str]) -> np.ndarray:
        enc = self._tok.encode_batch(texts)
        feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                 "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                 "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
        out = session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        return np.asarray(out, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clean = [str(t).strip() for t in texts]
        if len(clean) <= SMALL_BATCH:
            return self._run(self._query, clean)
        session = self._batch_session()
        # Longest first, as sentence-transformers does, so that each batch pads little.
        order = sorted(range(len(clean)), key=lambda i: -len(clean[i]))
        out = np.empty((len(clean), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._run(session, [clean[i] for i in idx])
        return out
