"""Conversations: rendering, validation, and one chunk per turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.errors import InvalidInput
from engine.ingest.chunking import chunk_document
from engine.ingest.config import ChunkingConfig
from engine.ingest.conversation import load_conversation
from engine.tokens import TokenCounter
from tests.engine.ingest.chunkcheck import assert_chunk_invariants

COUNTER = TokenCounter.shared()
CFG = ChunkingConfig()
LOCOMO = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo" / "locomo10.json"

TURNS: list[dict[str, Any]] = [
    {"speaker": "Ana", "text": "Did you get the tickets?", "id": "D1:1", "time": 100.0},
    {"speaker": "Ben", "text": "Yes, two of them.", "id": "D1:2",
     "image_caption": "a photo of two tickets"},
    {"speaker": "Ana", "text": "Great!\nSee you there.", "id": "D1:3", "time": 160.0},
]


def test_rendering_and_turn_offsets() -> None:
    doc = load_conversation(TURNS, title="Chat", uri="conv:1", session_time=90.0)
    assert doc.kind == "conversation" and doc.fmt == "conversation"
    assert doc.text == ("Ana: Did you get the tickets?\n"
                        "Ben: Yes, two of them. [image: a photo of two tickets]\n"
                        "Ana: Great!\nSee you there.")
    assert doc.created_at == 90.0 and doc.title == "Chat" and doc.uri == "conv:1"
    turns = doc.meta["turns"]
    assert [t["id"] for t in turns] == ["D1:1", "D1:2", "D1:3"]
    assert [t["speaker"] for t in turns] == ["Ana", "Ben", "Ana"]
    assert [t["time"] for t in turns] == [100.0, None, 160.0]
    for turn, raw in zip(turns, TURNS, strict=True):
        assert doc.text[turn["start"]:turn["end"]].startswith(f"{raw['speaker']}: {raw['text']}")


def test_one_chunk_per_turn() -> None:
    doc = load_conversation(TURNS, title="Chat", uri="conv:1", session_time=90.0)
    chunks = chunk_document(doc, CFG, COUNTER)
    assert_chunk_invariants(doc, CFG, chunks, COUNTER)
    assert len(chunks) == 3
    assert [c.kind for c in chunks] == ["turn"] * 3
    assert [c.meta for c in chunks] == [{"speaker": "Ana", "turn_id": "D1:1"},
                                        {"speaker": "Ben", "turn_id": "D1:2"},
                                        {"speaker": "Ana", "turn_id": "D1:3"}]
    assert [c.time for c in chunks] == [100.0, 90.0, 160.0]  # session time fills the gap
    assert chunks[2].text == "Ana: Great!\nSee you there."


def test_created_at_without_session_time_is_the_first_turn_time() -> None:
    doc = load_conversation(TURNS, title="Chat", uri="conv:1", session_time=None)
    assert doc.created_at == 100.0
    assert chunk_document(doc, CFG, COUNTER)[1].time is None


def test_long_turn_is_split_into_exact_slices() -> None:
    long_text = " ".join(f"Sentence number {i} of a very long monologue." for i in range(120))
    turns: list[dict[str, object]] = [{"speaker": "Ana", "text": "short"}, {"speaker": "Ben", "text": long_text,
                                                   "id": "t2", "time": 5.0}]
    doc = load_conversation(turns, title="Chat", uri="conv:2", session_time=None)
    chunks = chunk_document(doc, CFG, COUNTER)
    assert_chunk_invariants(doc, CFG, chunks, COUNTER)
    assert len(chunks) > 2
    assert chunks[0].text == "Ana: short"
    assert all(c.meta == {"speaker": "Ben", "turn_id": "t2"} and c.time == 5.0
               for c in chunks[1:])
    assert chunks[1].text.startswith("Ben: Sentence number 0")


@pytest.mark.parametrize(("turns", "index"), [
    ([{"speaker": "A", "text": "ok"}, {"text": "no speaker"}], 1),
    ([{"speaker": "A"}], 0),
    ([{"speaker": "A", "text": "ok"}, {"speaker": "B", "text": 5}], 1),
    ([{"speaker": 3, "text": "hi"}], 0),
    ([{"speaker": "  ", "text": "hi"}], 0),
    ([{"speaker": "A", "text": "hi", "time": "yesterday"}], 0),
    ([{"speaker": "A", "text": "hi", "image_caption": 1}], 0),
    ([{"speaker": "A", "text": "ok"}, "not a mapping"], 1),
])
def test_bad_turns_name_their_index(turns: list, index: int) -> None:
    with pytest.raises(InvalidInput) as info:
        load_conversation(turns, title="t", uri="u", session_time=None)
    assert info.value.details["turn"] == index
    assert f"turn {index}" in str(info.value)
    for turn in turns:
        if isinstance(turn, dict) and isinstance(turn.get("text"), str):
            assert turn["text"] not in str(info.value)


def test_no_turns_is_invalid() -> None:
    with pytest.raises(InvalidInput):
        load_conversation([], title="t", uri="u", session_time=None)


def test_real_dialogue_session() -> None:
    """One LoCoMo session (dev split), read at run time from the shared data folder."""
    if not LOCOMO.exists():
        pytest.skip(f"shared data not found at {LOCOMO}")
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]["conversation"]
    turns = [{"speaker": t["speaker"], "text": t["text"], "id": t["dia_id"],
              **({"image_caption": t["blip_caption"]} if t.get("blip_caption") else {})}
             for t in sample["session_1"]]
    doc = load_conversation(turns, title="session 1", uri="locomo:0:1", session_time=1.0)
    chunks = chunk_document(doc, CFG, COUNTER)
    assert_chunk_invariants(doc, CFG, chunks, COUNTER)
    assert [c.meta["turn_id"] for c in chunks] == [t["id"] for t in turns]
    for chunk, turn in zip(chunks, turns, strict=True):
        assert chunk.text.startswith(f"{turn['speaker']}: ")
        if "image_caption" in turn:
            assert chunk.text.endswith(f"[image: {' '.join(turn['image_caption'].split())}]")
