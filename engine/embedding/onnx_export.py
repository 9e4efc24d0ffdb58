"""Export the shipped MiniLM weights to ONNX, locally, and prove the export equal.

Build-time (the app bundle) or once per pip install::

    python -m engine.embedding.onnx_export            # into the install's data dir
    python -m engine.embedding.onnx_export --out DIR  # anywhere (the bundle build)

The default target is ``onnx_files.install_export_dir()`` (``share/ctx/onnx`` in the
venv or prefix), found by every user and HOME that runs this install; when it cannot
be written, the user cache dir (found by this user only, said so on stderr).

Needs torch, transformers and sentence-transformers (the pip install has
them; the bundle does not, and needs none of them at run time). The weights
are hash-checked first; the exported graph is the BERT encoder followed by
mean pooling and L2 normalisation, which is what sentence-transformers'
modules.json for all-MiniLM-L6-v2 does. It is stored with float16 weights
(computing in float32), and quantised into the int8 document model
(``onnx_precision``). Before the manifest is written the float32 model must
match sentence-transformers on the probe set (each text alone and all as one
padded batch) with cosine >= MIN_PROBE_COSINE, else nothing is installed; an
int8 model below MIN_INT8_PROBE_COSINE is left out (documents then embed in
float32). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.embedding.minilm import MINILM_SHA256, minilm_path, verify_weights
from engine.embedding.onnx import OnnxEmbedder
from engine.embedding.onnx_files import (
    INT8_FILE,
    MANIFEST_FILE,
    MANIFEST_VERSION,
    MIN_INT8_PROBE_COSINE,
    MIN_PROBE_COSINE,
    MODEL_NAME,
    ONNX_FILE,
    TOKENIZER_FILE,
    Manifest,
    current_export,
    install_export_dir,
    sha256_file,
    user_export_dir,
)
from engine.embedding.onnx_precision import quantize_int8, store_float16
from engine.errors import IntegrityError

OPSET = 17
# Fixed probe texts: short, long (past the 256 word-piece cut), empty, blank,
# accented and non-Latin script, emoji, code, digits, mixed case, odd spacing.
PROBE_TEXTS: tuple[str, ...] = (
    "",
    "   ",
    "hello",
    "  leading and trailing spaces  ",
    "The quick brown fox jumps over the lazy dog.",
    "What did we decide about the retry policy for the client?",
    "Ünïcödé naïve café, Ελληνικά, русский текст, 東京の天気, 한국어 😀",
    ("def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n"
     "            return fn()\n        except TimeoutError:\n            continue\n"),
    "Version 2.13.0 shipped on 2026-11-22 at 09:30 UTC; 42% of 1,024 runs passed.",
    "MIXED case AND Punctuation!!! ... ??? (brackets) [more] {braces}",
    "tabs\tand\nnew\nlines\r\nin one text",
    " ".join(f"token{i % 97} word{i % 13}" for i in range(300)),
    "A short one.",
)


class _Pooled:  # built lazily: torch is imported only when exporting
    @staticmethod
    def build(model: Any) -> Any:
        import torch

        class Pooled(torch.nn.Module):
            """BERT, then mean pooling over the attention mask, then L2 normalisation."""

            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(mean, p=2.0, dim=1)

        return Pooled(model).eval()


def _shape(model_dir: Path) -> tuple[int, int]:
    """(embedding dim, max word pieces per text) as sentence-transformers uses them."""
    bert = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    sbert = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return int(bert["hidden_size"]), int(sbert["max_seq_length"])


def _export_graph(model_dir: Path, target: Path) -> None:
    import warnings

    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                      attn_implementation="eager")
    wrapped = _Pooled.build(model.eval())
    sample = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "sequence"}
            for name in ("input_ids", "attention_mask", "token_type_ids")}
    axes["sentence_embedding"] = {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes about constant Python conditions
        torch.onnx.export(wrapped, (sample, sample, torch.zeros_like(sample)), str(target),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["sentence_embedding"], dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False)


def reference_vectors(model_dir: Path, texts: Sequence[str]) -> np.ndarray:
    """sentence-transformers' own vectors for ``texts`` (CPU, normalised)."""
    from engine.embedding.minilm import SentenceTransformerEmbedder

    st = SentenceTransformerEmbedder(model_dir, name=MODEL_NAME, expected_sha256=MINILM_SHA256,
                                     device="cpu")
    return st.encode(list(texts))


def probe_cosine(embedder: OnnxEmbedder, reference: np.ndarray,
                 texts: Sequence[str] = PROBE_TEXTS, *, documents: bool = False) -> float:
    """Worst cosine between ``embedder`` and ``reference``, texts alone and as one batch
    (with ``documents``, of its document model)."""
    encode = embedder.encode_documents if documents else embedder.encode
    alone = np.stack([encode([t])[0] for t in texts])
    batch = encode(list(texts))
    return float(min((alone * reference).sum(1).min(), (batch * reference).sum(1).min()))


def _versions() -> dict[str, str]:
    import onnx  # torch.onnx.export needs it; its version goes into the manifest
    import onnxruntime
    import tokenizers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
            "tokenizers": tokenizers.__version__}


def export(out_dir: Path, model_dir: Path | None = None) -> Manifest:
    """Export MiniLM into ``out_dir`` (replaced atomically) and return its manifest.

    Raises IntegrityError when the weights fail their hash or the export its
    probe check; ``out_dir`` is then left as it was.
    """
    source = model_dir or minilm_path()
    verify_weights(source, MINILM_SHA256)
    out_dir = out_dir.expanduser().resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    try:
        full, int8_full = stage / "float32.onnx", stage / "int8-float32.onnx"
        _export_graph(source, full)
        quantize_int8(full, int8_full)
        store_float16(int8_full, stage / INT8_FILE)  # its tables, biases, scales
        store_float16(full, stage / ONNX_FILE)
        full.unlink()
        int8_full.unlink()
        shutil.copyfile(source / TOKENIZER_FILE, stage / TOKENIZER_FILE)
        dim, seq = _shape(source)
        candidate = OnnxEmbedder(stage, dim=dim, max_seq_length=seq, threads=1,
                                 int8_file=stage / INT8_FILE)
        reference = reference_vectors(source, PROBE_TEXTS)
        worst = probe_cosine(candidate, reference)
        if worst < MIN_PROBE_COSINE:
            raise IntegrityError(f"ONNX export differs from sentence-transformers: worst probe "
                                 f"cosine {worst:.7f} < {MIN_PROBE_COSINE}")
        worst8 = probe_cosine(candidate, reference, documents=True)
        int8 = ""
        if worst8 >= MIN_INT8_PROBE_COSINE:
            int8 = sha256_file(stage / INT8_FILE)
        else:  # documents embed in float32 with this export
            (stage / INT8_FILE).unlink()
        man = Manifest(version=MANIFEST_VERSION, model_name=MODEL_NAME, dim=candidate.dim,
                       max_seq_length=seq, source_sha256=MINILM_SHA256,
                       onnx_sha256=sha256_file(stage / ONNX_FILE),
                       tokenizer_sha256=sha256_file(stage / TOKENIZER_FILE),
                       probe_min_cosine=worst, opset=OPSET, exported_with=_versions(),
                       int8_sha256=int8, int8_probe_min_cosine=worst8)
        (stage / MANIFEST_FILE).write_text(man.to_json(), encoding="utf-8")
        del candidate
        if out_dir.exists():
            shutil.rmtree(out_dir)
        stage.rename(out_dir)
        return man
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def default_target() -> Path:
    """The install's data dir when it can be written, else the user cache dir (with a note:
    other users and HOMEs of this install will not find the export there)."""
    target = install_export_dir()
    probe = target.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK):
        return target
    fallback = user_export_dir()
    sys.stderr.write(f"note: {probe} is not writable; exporting into {fallback}, which only "
                     "this user's HOME finds (run this step as the install's owner to share "
                     "it)\n")
    return fallback


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.embedding.onnx_export",
                                description="Export the shipped MiniLM to ONNX (offline).")
    p.add_argument("--out", type=Path, default=None,
                   help=f"target folder (default: {install_export_dir()})")
    p.add_argument("--model-dir", type=Path, default=None,
                   help="sentence-transformers folder (default: the shipped MiniLM)")
    p.add_argument("--if-missing", action="store_true",
                   help="keep an export already there when it passes its checks")
    args = p.parse_args(argv)
    out = args.out or default_target()
    # An export that is absent, damaged or of an older version is made afresh.
    if args.if_missing and args.model_dir is None and current_export(out) is not None:
        sys.stdout.write(json.dumps({"out": str(out), "reused": True}) + "\n")
        return 0
    try:
        man = export(out, args.model_dir)
    except IntegrityError as exc:
        sys.stderr.write(f"export failed: {exc}\n")
        return 1
    sys.stdout.write(json.dumps({"out": str(out), "onnx_sha256": man.onnx_sha256,
                                 "probe_min_cosine": man.probe_min_cosine,
                                 "bytes": (out / ONNX_FILE).stat().st_size,
                                 "int8_sha256": man.int8_sha256,
                                 "int8_probe_min_cosine": man.int8_probe_min_cosine}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
