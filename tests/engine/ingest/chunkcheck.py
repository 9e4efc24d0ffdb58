"""The chunker's hard invariants, checked in one place for every chunking test."""

from __future__ import annotations

from engine.ingest.config import ChunkingConfig
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument


def assert_chunk_invariants(doc: LoadedDocument, cfg: ChunkingConfig,
                            chunks: list[ChunkDraft], counter: TokenCounter) -> list[int]:
    """Assert every invariant; return the token sizes of the overlaps found."""
    text = doc.text
    covered = bytearray(len(text) + 1)
    overlaps: list[int] = []
    prev: ChunkDraft | None = None
    for n, chunk in enumerate(chunks):
        assert chunk.ordinal == n
        assert chunk.text, "empty chunk"
        assert chunk.text.strip(), "whitespace-only chunk"
        assert not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        assert text[chunk.start:chunk.start + len(chunk.text)] == chunk.text, "not a slice"
        assert chunk.tokens == counter.count(chunk.text)
        assert chunk.tokens <= cfg.max_tokens
        # A slice of a Python str never splits a code point; it must also survive UTF-8.
        assert chunk.text.encode("utf-8").decode("utf-8") == chunk.text
        if prev is not None:
            assert chunk.start > prev.start, "chunks out of order"
            prev_end = prev.start + len(prev.text)
            if chunk.start < prev_end:
                overlap = counter.count(text[chunk.start:prev_end])
                assert overlap <= prev.tokens // 2, "overlap above half a chunk"
                overlaps.append(overlap)
        covered[chunk.start:chunk.start + len(chunk.text)] = b"\x01" * len(chunk.text)
        prev = chunk
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"{len(missing)} non-whitespace characters not covered"
    return overlaps
