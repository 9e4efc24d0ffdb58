"""Compact, budgeted text for agents: search hits, recall hits, source lists.

Every tool result is plain text whose cl100k token count never exceeds the
budget the agent asked for: whole entries are kept while they fit, the first
that does not is cut at a token boundary, and the rest is left out with a
one-line note saying how many (so the agent can ask for more).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from engine import RecallHit, RecallResult, SearchHit, SourceInfo
from ipc.places import place

if TYPE_CHECKING:
    from engine import TokenCounter

SNIPPET_TOKENS = 160  # at most this many tokens of text per search hit


def counter() -> TokenCounter:
    from engine import TokenCounter

    return TokenCounter.shared()


def _cut(text: str, tokens: int) -> str:
    """``text`` cut to at most ``tokens`` tokens (an ellipsis marks a cut)."""
    tc = counter()
    if tc.count(text) <= tokens:
        return text
    if tokens <= 1:
        return ""
    return tc.truncate(text, tokens - 1).rstrip() + "…"


def fit(entries: Iterable[str], budget: int, *, header: str = "", what: str = "results"
        ) -> str:
    """Join ``entries`` under ``header`` within ``budget`` tokens (see the module doc)."""
    tc = counter()
    items = list(entries)
    out = header
    used = tc.count(out)
    for i, entry in enumerate(items):
        piece = ("\n" if out else "") + entry
        cost = tc.count(out + piece) - used
        if used + cost <= budget:
            out += piece
            used += cost
            continue
        left = len(items) - i
        note = f"\n[{left} more {what} left out to stay within {budget} tokens]"
        note_cost = tc.count(out + note) - used
        room = budget - used - note_cost
        if room > 20:
            part = _cut(piece, room)
            if part.strip() and tc.count(out + part + note) <= budget:
                out += part
                left -= 1
                note = (f"\n[{left} more {what} left out to stay within {budget} tokens]"
                        if left else "")
        if note and tc.count(out + note) <= budget:
            out += note
        break
    while tc.count(out) > budget:  # joins can merge tokens; never exceed the budget
        out = _cut(out, budget)
    return out


def _when(ts: float | None) -> str:
    return "-" if not ts else datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def hit_entries(hits: Sequence[SearchHit]) -> list[str]:
    out = []
    for i, h in enumerate(hits, 1):
        meta = h.meta
        # a recall hit: where it sits, then the lines that answer: its excerpt as the engine
        # sized it for the budget the recall was asked with
        if isinstance(h, RecallHit) and h.line:
            out.append(h.entry(i))
            continue
        where = " · ".join(x for x in (meta.get("project"), meta.get("branch")) if x)
        flag = " FAILED" if meta.get("failure") else ""
        if h.path:  # a file: where it is, under the folder it was ingested from
            name = place(h) + (f" {h.heading}" if h.heading else "")
            where = f"in {h.root}" if h.root else where
        else:
            name = f"{h.title} ({h.source})"
        head = (f"{i}. [{h.kind}{flag}] {name} ({where + '; ' if where else ''}"
                f"{_when(h.time)}; score {h.score:.3f})")
        out.append(head + "\n   " + _cut(_one_line(h.text), SNIPPET_TOKENS))
    return out


def recall_entries(result: RecallResult) -> list[str]:
    """A recall query's hits as the engine sized them for its budget, then a note of the
    hits it left out (the engine kept room for it)."""
    out = hit_entries(result.hits or ())
    if result.omitted and out:
        out.append(result.omitted_note())
    return out


def recall_text(result: RecallResult, budget: int) -> str:
    """A recall query's answer within ``budget`` tokens (``recall_entries``, joined)."""
    if not result.hits:
        return (f"no hit fits in {budget} tokens: ask again with a larger budget"
                if result.omitted else "no results")
    return fit(recall_entries(result), budget, what="hits")


def source_entries(rows: Sequence[SourceInfo]) -> list[str]:
    """One line a source; a coding session is one, its parts (one a sync) counted."""
    return [f"{s.id}. [{s.kind}] {s.title or s.uri} — {s.uri} ({s.n_chunks} chunks"
            f"{f' from {s.segments} syncs' if s.segments > 1 else ''}, "
            f"{_when(s.ingested_at)})"
            for s in rows]
