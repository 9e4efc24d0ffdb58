"""The engine lets go of a model it loaded itself when it closes, never of one it was given."""

from __future__ import annotations

from pathlib import Path

from engine.embedding.fake import FakeEmbedder
from engine.embedding.lazy_embedder import LazyEmbedder
from engine.facade import ContextEngine


class ClosingFake(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_an_engines_own_model_is_released_at_close(data_dir: Path) -> None:
    eng = ContextEngine.open(data_dir)
    emb = eng.rt.embedder
    assert isinstance(emb, LazyEmbedder)
    assert emb.encode(["warm the model"]).shape == (1, 384)
    assert emb.loaded and emb.backend == "fake"
    eng.close()
    assert not emb.loaded and emb.backend is None


def test_a_callers_model_is_left_open(data_dir: Path) -> None:
    given = ClosingFake()
    eng = ContextEngine.open(data_dir, embedder=given)
    eng.close()
    assert given.closed == 0
    assert given.encode(["still usable"]).shape == (1, 384)
