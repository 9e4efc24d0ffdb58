"""A source stored for the keyword lanes whose vectors are not made yet is ranked on
what is known of it: its similarity is the window's median, not 0, so that a word only
the new file holds finds it first even where older chunks are near the query."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine
from engine.retrieval.query import analyze_query
from engine.retrieval.rerank import RerankCandidate, rerank

WORD = "quillharbourmarkb"


class HeldEmbedder(FakeEmbedder):
    """The fake embedder, reading the new word as the old one (as MiniLM found the older
    notes' near-identical word 0.7 similar), and holding the call that embeds the new
    file until ``gate`` opens."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.gate = threading.Event(), threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if any("harbour crane" in t for t in texts):
            self.entered.set()
            self.gate.wait(30)
        return super().encode([t.replace(WORD, "quillharbourmarka") for t in texts])


def test_unknown_similarity_is_the_windows_median_not_zero() -> None:
    near: list[RerankCandidate[int | str]] = [RerankCandidate(id=i, text=f"Note {i}: quillharbourmarka", fused=0.02,
                            similarity=0.7) for i in range(5)]
    new: RerankCandidate[int | str] = RerankCandidate(id="new", text=f"Note: {WORD} and the rest", fused=0.02,
                          similarity=None, keyword=3.0)
    ranked = rerank(analyze_query(WORD), [*near, new])
    assert ranked[0][0] == "new"
    assert ranked[0][2]["similarity"] == 0.7


def test_a_file_waiting_for_its_vectors_is_found_by_its_own_word(
        data_dir: Path, tmp_path: Path) -> None:
    # Older notes share most of the word's letters (so the vector lane finds them near
    # the query); the new file holds the word itself, its vectors held back.
    old = tmp_path / "old"
    old.mkdir()
    for i in range(12):
        (old / f"old{i}.md").write_text(f"quillharbourmarka {i}")
    new = tmp_path / "new.md"
    new.write_text(f"# Note {WORD}\n\nA new note about the harbour crane, the ropes of the "
                   "quay, the tides at dawn and the boats that came in late.")
    emb = HeldEmbedder()
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        assert eng.wait(eng.ingest(paths=[str(old)])).state == "done"
        job = eng.ingest(paths=[str(new)])
        assert emb.entered.wait(30)  # stored for the keyword lanes, its vector held
        try:
            hits = eng.search(WORD, k=3)
            assert hits[0].stage == "keyword" and WORD in hits[0].text
        finally:
            emb.gate.set()
        assert eng.wait(job, timeout=30).state == "done"
        assert eng.search(WORD, k=1)[0].stage == "ready"
