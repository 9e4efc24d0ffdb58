"""The ONNX embedder against sentence-transformers, with a fresh export of the shipped weights.

Integration: exports MiniLM (torch, about 15 s on an idle core) once per session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.embedding import onnx_files as F
from engine.embedding.base import Embedder
from engine.embedding.config import EmbeddingConfig
from engine.embedding.factory import make_embedder
from engine.embedding.onnx import OnnxEmbedder
from engine.embedding.onnx_export import PROBE_TEXTS, export
from engine.errors import IntegrityError

pytestmark = pytest.mark.integration

EXTRA = [f"note {i}: " + "the build report lists sizes and start-up times " * (i % 7)
         for i in range(40)]


@pytest.fixture(scope="session")
def onnx_export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("onnx") / "minilm"
    man = export(out)
    assert man.probe_min_cosine >= F.MIN_PROBE_COSINE
    return out


@pytest.fixture
def onnx_embedder(onnx_export_dir: Path) -> Iterator[OnnxEmbedder]:
    emb = OnnxEmbedder.open(onnx_export_dir, threads=2)
    yield emb
    emb.close()


def test_export_records_what_it_was_made_from(onnx_export_dir: Path) -> None:
    man = F.verify_export(onnx_export_dir)
    assert man.source_sha256 == F.MINILM_SHA256
    assert man.onnx_sha256 == F.sha256_file(onnx_export_dir / F.ONNX_FILE)
    assert man.dim == 384 and man.max_seq_length == 256
    assert not list(onnx_export_dir.parent.glob(".*tmp*"))  # staging folder gone


def test_vectors_equal_sentence_transformers(onnx_embedder: OnnxEmbedder,
                                            minilm_torch: Embedder) -> None:
    texts = list(PROBE_TEXTS) + EXTRA
    ref = minilm_torch.encode(texts)
    batch = onnx_embedder.encode(texts)  # one text a run, on 2 workers
    alone = np.stack([onnx_embedder.encode([t])[0] for t in texts])
    assert batch.shape == ref.shape == (len(texts), 384) and batch.dtype == np.float32
    assert float((batch * ref).sum(1).min()) >= 0.99999
    assert float((alone * ref).sum(1).min()) >= 0.99999
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_concurrent_runs_give_the_same_vectors(onnx_export_dir: Path,
                                                                minilm_torch: Embedder) -> None:
    texts = list(PROBE_TEXTS) + EXTRA + ["word " * 400]  # the last one is cut at 256 pieces
    ref = minilm_torch.encode(texts)
    emb = OnnxEmbedder.open(onnx_export_dir, threads=3)
    try:
        got = emb.encode(texts)
    finally:
        emb.close()
    assert float((got * ref).sum(1).min()) >= 0.99999


def test_auto_picks_the_export_under_minilms_name(onnx_export_dir: Path,
                                                  minilm_torch: Embedder) -> None:
    emb = make_embedder(EmbeddingConfig(onnx_dir=str(onnx_export_dir)))
    assert isinstance(emb, OnnxEmbedder)
    assert emb.name == minilm_torch.name == "all-MiniLM-L6-v2"
    torch_emb = make_embedder(EmbeddingConfig(backend="torch", onnx_dir=str(onnx_export_dir)))
    assert not isinstance(torch_emb, OnnxEmbedder)


def test_a_store_moves_between_torch_and_onnx(data_dir: Path, minilm_torch: Embedder,
                                              onnx_export_dir: Path) -> None:
    from engine.facade import ContextEngine

    docs = data_dir.parent / "docs"
    docs.mkdir()
    (docs / "retry.md").write_text("# Retry policy\n\nThe client retries three times with "
                                   "exponential backoff, then reports a timeout.\n")
    (docs / "tray.md").write_text("# Tray\n\nThe tray icon turns amber while ingesting.\n")
    eng = ContextEngine.open(data_dir, embedder=minilm_torch)
    try:
        eng.wait(eng.ingest(paths=[str(docs)]))
        before = [h.chunk_id for h in eng.search("how often does the client retry?", k=2)]
        assert eng.status().model_backend == "torch"
    finally:
        eng.close()
    eng = ContextEngine.open(data_dir, embedder=OnnxEmbedder.open(onnx_export_dir))
    try:
        after = [h.chunk_id for h in eng.search("how often does the client retry?", k=2)]
        assert eng.status().model == "all-MiniLM-L6-v2"
        assert eng.status().model_backend == "onnx"
        assert eng.status().model_document_precision == "int8"
    finally:
        eng.close()
    assert after == before


def test_a_corrupted_export_is_refused_at_load(onnx_export_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(onnx_export_dir, tmp_path / "copy"))
    data = bytearray((copy / F.ONNX_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / F.ONNX_FILE).write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="sha256"):
        OnnxEmbedder.open(copy)


def test_the_export_stores_float16_weights_and_an_int8_document_model(
        onnx_export_dir: Path) -> None:
    import onnx

    man = F.verify_export(onnx_export_dir)
    assert man.version == F.MANIFEST_VERSION
    assert man.int8_sha256 == F.sha256_file(onnx_export_dir / F.INT8_FILE)
    assert F.MIN_INT8_PROBE_COSINE <= man.int8_probe_min_cosine < F.MIN_PROBE_COSINE
    full = onnx.load(str(onnx_export_dir / F.ONNX_FILE))
    big = [i for i in full.graph.initializer if np.prod(i.dims) >= 1024]
    assert big and all(i.data_type == onnx.TensorProto.FLOAT16 for i in big)
    tables = [n for n in full.graph.node if n.op_type == "Gather" and n.input[0].endswith("__f16")]
    assert len(tables) >= 2  # word and position embeddings: float16 rows, widened after
    int8 = onnx.load(str(onnx_export_dir / F.INT8_FILE))
    assert sum(i.data_type == onnx.TensorProto.INT8 for i in int8.graph.initializer) >= 36
    assert (onnx_export_dir / F.ONNX_FILE).stat().st_size < 50e6  # float32 storage: 90 MB


def test_documents_run_on_int8_and_queries_stay_exact(onnx_export_dir: Path,
                                                      minilm_torch: Embedder) -> None:
    texts = list(PROBE_TEXTS) + EXTRA
    ref = minilm_torch.encode(texts)
    emb = OnnxEmbedder.open(onnx_export_dir, threads=2)
    exact = OnnxEmbedder.open(onnx_export_dir, threads=2, document_precision="float32")
    try:
        assert emb.document_precision == "int8" and exact.document_precision == "float32"
        docs = emb.encode_documents(texts)
        cos = (docs * ref).sum(1)
        assert float(cos.min()) >= F.MIN_INT8_PROBE_COSINE
        assert float(cos.min()) < 0.9999  # really another model, not the float32 one
        assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
        assert float((emb.encode(texts) * ref).sum(1).min()) >= 0.99999  # queries: exact
        assert float((exact.encode_documents(texts) * ref).sum(1).min()) >= 0.99999
        assert emb.encode_documents([]).shape == (0, 384)
    finally:
        emb.close()
        exact.close()


def test_ingest_stores_int8_document_vectors_and_search_finds_them(
        data_dir: Path, onnx_export_dir: Path) -> None:
    from engine.embedding.base import encode_documents
    from engine.facade import ContextEngine
    from engine.ingest.embedtext import embed_text

    emb = OnnxEmbedder.open(onnx_export_dir)
    text = "The client retries three times with exponential backoff, then reports a timeout."
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        eng.ingest(text=text, title="Retry policy", external_id="note:retry", wait=True)
        hit = eng.search("how often does the client retry?", k=1)[0]
        stored = eng.rt.vectors.vectors([hit.chunk_id])[hit.chunk_id]
    view = embed_text("Retry policy", "", "text", text)
    assert float(stored @ encode_documents(emb, [view])[0]) >= 0.99999
    assert float(stored @ emb.encode([view])[0]) < 0.9999  # not the float32 model's vector
    emb.close()


def test_the_lazy_embedder_hands_documents_to_the_int8_model(onnx_export_dir: Path) -> None:
    from engine.embedding.lazy_embedder import LazyEmbedder

    texts = EXTRA[:6]
    lazy = LazyEmbedder(EmbeddingConfig(onnx_dir=str(onnx_export_dir)))
    exact = LazyEmbedder(EmbeddingConfig(onnx_dir=str(onnx_export_dir),
                                         document_precision="float32"))
    direct = OnnxEmbedder.open(onnx_export_dir)
    try:
        assert lazy.document_precision is None  # not loaded yet
        assert np.allclose(lazy.encode_documents(texts), direct.encode_documents(texts),
                           atol=1e-6)
        assert lazy.document_precision == "int8"
        assert np.allclose(exact.encode_documents(texts), direct.encode(texts), atol=1e-6)
        assert not np.allclose(lazy.encode_documents(texts), lazy.encode(texts), atol=1e-4)
    finally:
        for e in (lazy, exact, direct):
            e.close()


def test_queries_run_on_the_int8_model_when_configured(onnx_export_dir: Path,
                                                      data_dir: Path) -> None:
    from engine.embedding.lazy_embedder import LazyEmbedder
    from engine.facade import ContextEngine

    texts = EXTRA[:4]
    both = LazyEmbedder(EmbeddingConfig(onnx_dir=str(onnx_export_dir), query_precision="int8"))
    only_queries = OnnxEmbedder.open(onnx_export_dir, document_precision="float32",
                                     query_precision="int8")
    plain = OnnxEmbedder.open(onnx_export_dir)
    try:
        assert both.query_precision is None  # not loaded yet
        int8 = plain.encode_documents(texts)
        assert np.allclose(both.encode(texts), int8, atol=1e-6)
        assert (both.query_precision, both.document_precision) == ("int8", "int8")
        assert np.allclose(only_queries.encode(texts), int8, atol=1e-6)
        assert np.allclose(only_queries.encode_documents(texts), plain.encode(texts), atol=1e-6)
        assert (only_queries.query_precision, only_queries.document_precision) == (
            "int8", "float32")
        assert plain.query_precision == "float32"
        assert not np.allclose(plain.encode(texts), int8, atol=1e-4)
    finally:
        for e in (both, only_queries, plain):
            e.close()
    with ContextEngine.open(data_dir, embedder=OnnxEmbedder.open(
            onnx_export_dir, query_precision="int8")) as eng:
        eng.ingest(text="Backups run nightly at two.", title="ops", wait=True)
        assert eng.search("when do backups run?", k=1)
        status = eng.status()
        assert (status.model_query_precision, status.model_document_precision) == (
            "int8", "int8")


def test_a_version_1_export_embeds_documents_in_float32(
        onnx_export_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import json
    import shutil

    old = Path(shutil.copytree(onnx_export_dir, tmp_path / "v1"))
    (old / F.INT8_FILE).unlink()
    raw = json.loads((old / F.MANIFEST_FILE).read_text())
    for key in ("int8_sha256", "int8_probe_min_cosine"):
        raw.pop(key)
    raw["version"] = 1
    (old / F.MANIFEST_FILE).write_text(json.dumps(raw))
    emb = OnnxEmbedder.open(old)
    try:
        assert emb.document_precision == "float32"
        assert np.array_equal(emb.encode_documents(EXTRA[:3]), emb.encode(EXTRA[:3]))
    finally:
        emb.close()
    assert "query_precision" not in caplog.text
    with caplog.at_level("WARNING"):
        asked = OnnxEmbedder.open(old, query_precision="int8")
    try:  # int8 queries were asked for and cannot be had: said, and reported
        assert asked.query_precision == "float32"
        assert "query_precision int8: the ONNX export has no usable int8 model" in caplog.text
    finally:
        asked.close()


def test_an_int8_model_that_fails_at_load_leaves_documents_to_float32(
        onnx_export_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import shutil

    copy = Path(shutil.copytree(onnx_export_dir, tmp_path / "copy"))
    emb = OnnxEmbedder.open(copy)  # checked here; the int8 session loads on first use
    try:
        assert emb.document_precision == "int8"
        with open(copy / F.INT8_FILE, "ab") as fh:  # replaced or damaged since
            fh.write(b"\0")
        with caplog.at_level("WARNING"):
            docs = emb.encode_documents(EXTRA[:3])
        assert emb.document_precision == "float32"
        assert np.array_equal(docs, emb.encode(EXTRA[:3]))
        assert "int8 model unavailable (IntegrityError)" in caplog.text
    finally:
        emb.close()


@pytest.mark.parametrize("precision", ["int8", "float32"])
def test_a_texts_vector_is_the_same_to_the_bit_in_any_batch(onnx_export_dir: Path,
                                                           precision: str) -> None:
    """Documents and queries: each text alone, all at once, in batches of 2, 3 and 7, in
    reverse and shuffled order, on one worker and on three: the same bytes every time (a
    vector must not depend on which texts were embedded beside it, nor on the thread)."""
    import random

    texts = list(PROBE_TEXTS) + EXTRA + ["word " * 400, "a b c", "short note"]
    order = list(range(len(texts)))
    random.Random(3).shuffle(order)
    one = OnnxEmbedder.open(onnx_export_dir, threads=1, document_precision=precision,
                            query_precision=precision)
    three = OnnxEmbedder.open(onnx_export_dir, threads=3, document_precision=precision,
                              query_precision=precision)
    try:
        assert one.document_precision == one.query_precision == precision
        for encode in (one.encode_documents, one.encode, three.encode_documents):
            alone = np.stack([encode([t])[0] for t in texts])
            runs = {"all": encode(texts)}
            for size in (2, 3, 7):
                runs[f"batches of {size}"] = np.concatenate(
                    [encode(texts[i:i + size]) for i in range(0, len(texts), size)])
            runs["reversed"] = encode(texts[::-1])[::-1]
            shuffled = np.empty_like(alone)
            shuffled[order] = encode([texts[i] for i in order])
            runs["shuffled"] = shuffled
            for name, got in runs.items():
                same = [i for i in range(len(texts)) if got[i].tobytes() == alone[i].tobytes()]
                assert len(same) == len(texts), (name, np.abs(got - alone).max())
        assert np.array_equal(three.encode_documents(texts), one.encode_documents(texts))
    finally:
        one.close()
        three.close()
