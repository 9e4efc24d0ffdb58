"""What the model gets when transcripts are indexed: texts longest first, each once,
and of a tool call the start of its result."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine
from engine.flows.keeping.vector_rebuild import vault_vectors
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


def test_model_steps_take_the_texts_longest_first(data_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the chunks' own vectors only: recall.adapt's fit, queued after a sync, embeds its
    # query-side texts through the same model (tests/engine/flows/recall/test_recall_adapt.py)
    monkeypatch.setenv("CTX__RECALL__ADAPT", "false")
    counter = TokenCounter.shared()
    _, chunks = whole(LARGE)
    in_file_order = [counter.count(c.text) for c in chunks]
    assert in_file_order != sorted(in_file_order, reverse=True)  # else this proves nothing
    model = Recording()
    with ContextEngine.open(data_dir, embedder=model) as eng:
        stats = eng.sync([str(transcript(LARGE))])
    seen = [t for call in model.calls for t in call]
    assert stats.chunks == len(chunks) and len(model.calls) > 1
    # every distinct view once (a code chunk is embedded with its session title above it)
    assert len(seen) == len(set(seen)) == len({embedview.embed_view(c.kind, c.text)
                                               for c in chunks})
    sizes = [counter.count(t) for t in seen]
    assert sizes == sorted(sizes, reverse=True)


def test_a_tool_chunk_is_embedded_by_its_intent_call_start_and_result_start() -> None:
    _, chunks = whole(LARGE)
    tools = [c for c in chunks if c.kind == "tool" and "\nAssistant: " in c.text]
    long_input = next(c for c in tools if len(c.text.partition("\nResult")[0]) > 400)
    view = embed_text("title", "", "tool", long_input.text)
    intent = next(ln for ln in long_input.text.split("\n") if ln.startswith("Assistant: "))
    call = next(ln for ln in long_input.text.split("\n") if ln.startswith("Tool "))
    assert view.startswith(intent[:embedview.TOOL_VIEW_CHARS["Assistant: "]])
    assert call[:embedview.TOOL_VIEW_CHARS["Tool "]] in view and call not in view
    assert "\nResult" in view and "User: " not in view  # the session finds the request
    assert len(view) < len(long_input.text)
    for c in chunks:  # a reply or reasoning: without the request quoted above it
        if c.kind in ("turn_pair", "thinking"):
            assert embed_text("title", c.heading, c.kind, c.text) == (
                c.text.partition("\n")[2] if c.text.startswith("User: ") else c.text)


def test_vectors_are_found_again_by_rebuild_and_ranking(data_dir: Path) -> None:
    """The view is a function of the stored chunk: a vector-store rebuild (and the
    ranking's cache look-up, same key) finds every vector without the model."""
    model = Recording()
    with ContextEngine.open(data_dir, embedder=model) as eng:
        eng.sync([str(transcript(LARGE))])
        seen = [t for call in model.calls for t in call]
        assert not any(t.startswith("User: ") for t in seen)
        assert any(t.startswith("Assistant: ") and "\nTool " in t for t in seen)
        ids, _, embedded = vault_vectors(eng.rt.vault, model)
        assert len(ids) == eng.status().chunks and embedded == 0
