"""Conversations (chat sessions) as documents with one chunk per turn.

A conversation is rendered one turn per line as ``Speaker: text`` (plus
`` [image: caption]`` when the turn carried an image), so its text reads
naturally in a context payload, and each turn's offsets, id, speaker and time
are kept in ``doc.meta["turns"]``. Chunking then cuts exactly at turns, which
is what retrieval over dialogue wants: a hit names who said what, and when.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import InvalidInput
from engine.ingest.chunkpack import split_span
from engine.ingest.config import ChunkingConfig
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument


def _time(value: Any, index: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"turn {index}: 'time' must be epoch seconds", turn=index)
    return float(value)


def _turn(raw: Any, index: int) -> tuple[str, str, str | None, float | None, str | None]:
    """(speaker, text, id, time, caption) of one turn, or InvalidInput naming its index."""
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"turn {index} is not a mapping", turn=index)
    speaker, text = raw.get("speaker"), raw.get("text")
    if not isinstance(speaker, str) or not speaker.strip():
        raise InvalidInput(f"turn {index}: 'speaker' must be a non-empty string", turn=index)
    if not isinstance(text, str):
        raise InvalidInput(f"turn {index}: 'text' must be a string", turn=index)
    turn_id = raw.get("id")
    if turn_id is not None and not isinstance(turn_id, str | int):
        raise InvalidInput(f"turn {index}: 'id' must be a string", turn=index)
    caption = raw.get("image_caption")
    if caption is not None and not isinstance(caption, str):
        raise InvalidInput(f"turn {index}: 'image_caption' must be a string", turn=index)
    return (" ".join(speaker.split()), text.replace("\r\n", "\n").replace("\r", "\n"),
            None if turn_id is None else str(turn_id), _time(raw.get("time"), index),
            " ".join(caption.split()) if caption else None)


def load_conversation(
    turns: Sequence[Mapping[str, Any]],
    *,
    title: str,
    uri: str,
    session_time: float | None,
) -> LoadedDocument:
    """Render ``turns`` as a conversation document (kind and fmt "conversation").

    Each turn needs "speaker" and "text" strings and may carry "id", "time"
    (epoch seconds) and "image_caption". A bad turn raises InvalidInput whose
    message and ``details["turn"]`` give its index (never its text).
    ``created_at`` is ``session_time``, else the earliest turn time.
    """
    if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
        raise InvalidInput("turns must be a list of mappings")
    if not turns:
        raise InvalidInput("a conversation needs at least one turn")
    if session_time is not None and (isinstance(session_time, bool) or not isinstance(
            session_time, int | float) or not math.isfinite(session_time)):
        raise InvalidInput("session_time must be epoch seconds")
    session = float(session_time) if session_time is not None else None
    lines: list[str] = []
    meta_turns: list[dict[str, Any]] = []
    pos = 0
    for index, raw in enumerate(turns):
        speaker, text, turn_id, when, caption = _turn(raw, index)
        line = f"{speaker}: {text}"
        if caption:
            line += f" [image: {caption}]"
        lines.append(line)
        meta_turns.append({"id": turn_id, "speaker": speaker, "start": pos,
                           "end": pos + len(line), "time": when})
        pos += len(line) + 1
    times = [t["time"] for t in meta_turns if t["time"] is not None]
    created = session if session is not None else (min(times) if times else None)
    return LoadedDocument(
        uri=uri, kind="conversation", title=title, text="\n".join(lines), fmt="conversation",
        created_at=created, meta={"turns": meta_turns, "session_time": session},
    )


def chunk_conversation(doc: LoadedDocument, cfg: ChunkingConfig, counter: TokenCounter
                       ) -> list[ChunkDraft]:
    """One "turn" chunk per turn (a turn over ``max_tokens`` is cut into exact slices)."""
    turns = doc.meta.get("turns")
    if not isinstance(turns, list):
        raise InvalidInput("conversation document has no turn offsets")
    session = doc.meta.get("session_time", doc.created_at)
    text = doc.text
    drafts: list[ChunkDraft] = []
    for turn in turns:
        start, end = int(turn["start"]), int(turn["end"])
        when = turn.get("time")
        meta = {"speaker": turn.get("speaker"), "turn_id": turn.get("id")}
        time = float(when) if when is not None else session
        piece_text = text[start:end].strip()
        if not piece_text:
            continue
        tokens = counter.count(piece_text)
        if tokens <= cfg.max_tokens:
            offset = start + (len(text[start:end]) - len(text[start:end].lstrip()))
            spans = [(offset, offset + len(piece_text), tokens)]
        else:
            spans = split_span(text, start, end, cfg, counter)
        for s, e, t in spans:
            drafts.append(ChunkDraft(text=text[s:e], ordinal=len(drafts), tokens=t, kind="turn",
                                     start=s, time=time, meta=dict(meta)))
    return drafts
