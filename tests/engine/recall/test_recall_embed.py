"""What the model gets when transcripts are indexed: texts longest first, each once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine
from engine.tokens import TokenCounter
from tests.engine.recall.recall_helpers import transcript, whole

LARGE = "claude/obra__episodic-memory__large-conversation.jsonl"


class Recording:
    """The fake model, keeping the texts of each call."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(384)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_model_steps_take_the_texts_longest_first(data_dir: Path) -> None:
    counter = TokenCounter.shared()
    _, chunks = whole(LARGE)
    in_file_order = [counter.count(c.text) for c in chunks]
    assert in_file_order != sorted(in_file_order, reverse=True)  # else this proves nothing
    model = Recording()
    with ContextEngine.open(data_dir, embedder=model) as eng:  # type: ignore[arg-type]
        stats = eng.sync([str(transcript(LARGE))])
    seen = [t for call in model.calls for t in call]
    assert stats["chunks"] == len(chunks) and len(model.calls) > 1
    # every distinct text once (a code chunk is embedded with its session title above it)
    assert len(seen) == len(set(seen)) == len({c.text for c in chunks})
    sizes = [counter.count(t) for t in seen]
    assert sizes == sorted(sizes, reverse=True)
