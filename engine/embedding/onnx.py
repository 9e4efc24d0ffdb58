"""MiniLM on onnxruntime and ``tokenizers``: sentence-transformers' vectors without torch.

The export (see ``onnx_export``) carries mean pooling and L2 normalisation in
its graph, so a run returns the sentence embedding itself. Tokenising matches
sentence-transformers: texts are stripped, cut at the model's max_seq_length
(256 word pieces) and padded to the longest text of the batch. The float32
model's vectors equal sentence-transformers' within 1e-5 cosine (checked at
export and in tests), so they are recorded under the same model name and a
store moves between a pip install (torch) and the app bundle (ONNX).

Documents (chunks being stored) may run on a second session, the export's int8
model (``onnx_precision``): 1.4-1.5x faster on this project's 2-core machine,
its vectors at cosine 0.994 of the float32 model's on average.
Queries run on the float32 model, so a query's vector is sentence-transformers'
own and a store written this way is read by the torch backend as well (its
document vectors are close to, not equal to, torch's); ``query_precision
= "int8"`` runs them on the int8 model too (half the time, a
little lower recall). ``embedding.document_precision`` picks float32 for
documents too.

One onnxruntime session holds the float32 weights once; the int8 session loads
on the first text it embeds (the first document batch, or the first query with
int8 queries; both loaded, ingesting 1 MB of prose peaks at 377 MB
RSS, ``bench.ingest_mem``). It runs each call on one intra-op thread: a query (a few
short texts) is fastest that way, and on a busy 2-core machine more threads
multiply its tail latency.

Every text runs alone, unpadded: a text's vector is the same, to the bit,
whatever texts it was embedded with (``bench.embed_determinism``). Batched, it
was not: the int8 model quantises each MatMul's activations with one scale per
run, taken over every text of the batch and its padding (cosine 0.99 to the
text's vector alone), and even the float32 model's mean pooling (a ReduceSum
over the sequence) adds in another order once a run holds more than one text
(last bits). Batches form by timing (the writer paces its steps), so two builds
of the same data stored different vectors and ranked a few queries differently.
Long texts ran alone before too (batches were bounded by 256 padded word
pieces), and a run has no padding to compute now, so chunk-sized texts embed as
fast; short ones lose the batch's amortised overhead (the figures are in
docs/performance.md). More than a query's few texts are spread over ``threads``
worker threads, longest first, since a session serves concurrent runs and
releases the GIL while it runs. Without onnxruntime's memory arena and with
glibc's heap kept from holding freed buffers (``heap.cap_heap_retention``),
memory goes back after every text.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from engine.embedding.heap import cap_heap_retention
from engine.embedding.onnx_files import (
    INT8_FILE,
    MODEL_NAME,
    ONNX_FILE,
    TOKENIZER_FILE,
    int8_usable,
    verify_export,
)
from engine.errors import ConfigError, IntegrityError

_log = logging.getLogger(__name__)
SMALL_BATCH = 4  # a query: up to this many texts of up to SMALL_TOKENS word pieces in all,
SMALL_TOKENS = 256  # run one by one in the caller's thread; anything more is spread over workers


def _session(path: Path) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = False
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # errors only: nothing about the user's input is logged
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


def _cores() -> int:
    """Cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


class OnnxEmbedder:
    backend = "onnx"

    def __init__(self, folder: Path, *, dim: int, max_seq_length: int, threads: int = 0,
                 int8_file: Path | None = None, int8_documents: bool = True,
                 int8_queries: bool = False, recheck: bool = False) -> None:
        """Load the files in ``folder`` as they are; :meth:`open` checks them first.

        ``int8_file``: the export's int8 model, loaded on first use, for
        :meth:`encode_documents` when ``int8_documents`` and for :meth:`encode` when
        ``int8_queries``; without it everything runs on the float32 model. ``recheck``:
        check the export again before that load (:meth:`open` passes it; an export
        being made has no manifest yet)."""
        try:
            import onnxruntime  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are dependencies of chromadb
            raise ConfigError("embedding.backend 'onnx' needs onnxruntime and tokenizers"
                              ) from exc
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        cap_heap_retention()
        self.name = MODEL_NAME
        self.dim = dim
        self.folder = folder
        self._workers = threads or _cores()
        self._tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self._tok.enable_truncation(max_length=max_seq_length)
        self._tok.no_padding()  # each batch is padded to its own longest text in _run
        self._session = _session(folder / ONNX_FILE)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._int8_file = int8_file
        self._int8_documents = int8_documents
        self._int8_queries = int8_queries
        self._int8_session: Any = None
        self._recheck = recheck
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def document_precision(self) -> str:
        """"int8" when documents run on the int8 model, else "float32"."""
        return "int8" if self._int8_file is not None and self._int8_documents else "float32"

    @property
    def query_precision(self) -> str:
        """"int8" when queries (every :meth:`encode`) run on the int8 model, else "float32"."""
        return "int8" if self._int8_file is not None and self._int8_queries else "float32"

    @classmethod
    def open(cls, folder: Path, *, threads: int = 0, document_precision: str = "int8",
             query_precision: str = "float32") -> OnnxEmbedder:
        """The export in ``folder``, once it passes :func:`verify_export` (IntegrityError).

        Documents (queries) run on its int8 model when it has one and
        ``document_precision`` (``query_precision``) is "int8"."""
        man = verify_export(folder)
        docs, queries = document_precision == "int8", query_precision == "int8"
        int8 = folder / INT8_FILE if int8_usable(man) and (docs or queries) else None
        if queries and int8 is None:
            _log.warning("embedding.query_precision int8: the ONNX export has no usable int8 "
                         "model, so queries are embedded in float32 (python -m "
                         "engine.embedding.onnx_export --if-missing makes a current export)")
        return cls(folder, dim=man.dim, max_seq_length=man.max_seq_length,
                   threads=threads, int8_file=int8, int8_documents=docs, int8_queries=queries, recheck=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="ctx-embed")
            return self._pool

    def _int8(self) -> Any:
        """The int8 session, loaded on first use after its file is checked again (the
        export may have been replaced since it was opened). When it cannot load, its texts
        fall back to the float32 model (and the precisions say so)."""
        if self._int8_file is None:
            return self._session
        with self._lock:
            if self._int8_session is None:
                try:
                    if self._recheck:
                        man = verify_export(self.folder)
                        if not int8_usable(man):
                            raise IntegrityError("the export no longer has an int8 model")
                    self._int8_session = _session(self._int8_file)
                except Exception as exc:  # noqa: BLE001 - any failure: float32 serves
                    _log.warning("int8 model unavailable (%s); texts are embedded by the "
                                 "float32 model", type(exc).__name__)
                    self._int8_file = None
                    return self._session
            return self._int8_session

    def _run(self, enc: Any, session: Any) -> np.ndarray:
        """One session run over one tokenised text, unpadded: its vector."""
        ids = np.asarray([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "token_type_ids": np.zeros_like(ids)}
        out = session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        return np.asarray(out[0], dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (queries, and anything but documents to store): from the
        float32 model unless queries run on the int8 one."""
        return self._encode(texts, self._int8() if self._int8_queries else self._session)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts to store: from the int8 model unless documents run on float32."""
        return self._encode(texts, self._int8() if self._int8_documents else self._session)

    def _encode(self, texts: Sequence[str], session: Any) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encs = self._tok.encode_batch([str(t).strip() for t in texts])
        if self._workers == 1 or (len(encs) <= SMALL_BATCH
                                  and sum(len(e.ids) for e in encs) <= SMALL_TOKENS):
            for i, enc in enumerate(encs):
                out[i] = self._run(enc, session)
            return out
        # Longest first, so that the workers finish together.
        order = sorted(range(len(encs)), key=lambda i: (-len(encs[i].ids), i))
        runs = self._executor().map(lambda i: self._run(encs[i], session), order)
        for i, vec in zip(order, runs, strict=True):
            out[i] = vec
        return out

    def close(self) -> None:
        """Stop the worker threads (they also end with the process)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
