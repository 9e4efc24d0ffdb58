"""Two fresh stores of the same files, fed in other batches, hold the same vectors to the
bit and rank the same (issue 35: a store must not depend on how its texts were batched,
hence on the machine's load). The real model, as the engine runs it (ONNX where the
export is installed: int8 documents, whose activations were once quantized per batch)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from engine.embedding.base import Embedder
from engine.facade import ContextEngine

pytestmark = pytest.mark.integration

TOPICS = ["the build cache", "a failing migration", "the login form", "vector snapshots",
          "the release checklist", "keyboard shortcuts", "a flaky network test"]
QUERIES = ["why did the migration fail", "how is the snapshot sealed", "release steps"]


def write_files(folder: Path) -> list[Path]:
    """Markdown files of uneven sections (one line to a long paragraph), so that the
    model's batches differ in length and padding between the two ways of feeding them."""
    folder.mkdir()
    out = []
    for i, topic in enumerate(TOPICS):
        parts = [f"# Notes on {topic}\n"]
        for s in range(1 + i % 4):
            words = " ".join(f"{topic} step {s} detail {w}" for w in range(1 + (i * 7 + s) % 40))
            parts.append(f"## Part {s}\n\n{words}.\n")
        path = folder / f"note{i}.md"
        path.write_text("\n".join(parts), encoding="utf-8")
        out.append(path)
    return out


def vectors_and_ranks(eng: ContextEngine
                      ) -> tuple[dict[bytes, bytes], list[list[tuple[str, float]]]]:
    """Every chunk's vector bytes keyed by a hash of its embedding input, and each query's
    hits as (text, score) (chunk ids differ between the stores: texts do not)."""
    from engine.store.vault.rebuild import embed_inputs

    rt = eng.rt
    vecs: dict[bytes, bytes] = {}
    after = 0
    while page := embed_inputs(rt.vault, after, 500):
        got = rt.vectors.vectors([r.id for r in page])
        for r in page:
            key = hashlib.sha256(repr(tuple(r)[1:]).encode("utf-8")).digest()
            vecs[key] = np.asarray(got[r.id], dtype="<f4").tobytes()
        after = page[-1].id
    ranks = [[(h.text, h.score) for h in eng.search(q, k=8)]
             for q in QUERIES]
    return vecs, ranks


def test_two_fresh_stores_fed_in_other_batches_hold_the_same_vectors(
        tmp_path: Path, minilm: Embedder) -> None:

    files = write_files(tmp_path / "docs")
    with ContextEngine.open(tmp_path / "a", embedder=minilm) as eng:
        eng.wait(eng.ingest(paths=[str(tmp_path / "docs")]))  # all in one job
        a, ranks_a = vectors_and_ranks(eng)
    with ContextEngine.open(tmp_path / "b", embedder=minilm) as eng:
        for f in reversed(files):  # one file a job, the other way round
            eng.wait(eng.ingest(paths=[str(f)]))
        b, ranks_b = vectors_and_ranks(eng)
    assert len(a) > len(files)
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, f"{len(differ)} of {len(a)} vectors differ between the two stores"
    assert ranks_a == ranks_b
