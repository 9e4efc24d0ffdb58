"""What the model gets when transcripts are indexed: texts longest first, each once,
and of a tool call the start of its result."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine
from engine.flows.vector_rebuild import vault_vectors
from engine.ingest.embedtext import embed_text
from engine.recall import embedview
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
    assert stats.chunks == len(chunks) and len(model.calls) > 1
    # every distinct view once (a code chunk is embedded with its session title above it)
    assert len(seen) == len(set(seen)) == len({embedview.embed_view(c.kind, c.text)
                                               for c in chunks})
    sizes = [counter.count(t) for t in seen]
    assert sizes == sorted(sizes, reverse=True)


def test_a_tool_chunk_is_embedded_by_the_start_of_its_result() -> None:
    _, chunks = whole(LARGE)
    tools = [c for c in chunks if c.kind == "tool"]
    long_input = next(c for c in tools if len(c.text.partition("\nResult")[0]) > 200)
    view = embed_text("title", "", "tool", long_input.text)
    assert view.startswith("Result") and len(view) <= embedview.TOOL_EMBED_CHARS
    assert long_input.text.partition("\nResult")[0] not in view  # the call's input is not
    for c in chunks:
        if c.kind != "tool":  # other transcript chunks: the whole text
            assert embed_text("title", c.heading, c.kind, c.text) in (
                c.text, f"title > {c.heading}\n{c.text}" if c.heading else f"title\n{c.text}")


def test_vectors_are_found_again_by_rebuild_and_ranking(data_dir: Path) -> None:
    """The view is a function of the stored chunk: a vector-store rebuild (and the
    ranking's cache look-up, same key) finds every vector without the model."""
    model = Recording()
    with ContextEngine.open(data_dir, embedder=model) as eng:  # type: ignore[arg-type]
        eng.sync([str(transcript(LARGE))])
        seen = [t for call in model.calls for t in call]
        assert not any(t.startswith("Tool ") for t in seen)
        assert any(t.startswith("Result") for t in seen)
        ids, _, embedded = vault_vectors(eng.rt.vault, model)  # type: ignore[arg-type]
        assert len(ids) == eng.status().chunks and embedded == 0
