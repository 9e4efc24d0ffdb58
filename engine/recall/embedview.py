"""What the embedding model reads of a transcript chunk: all of it, but of a tool call
only the start of its result.

A tool chunk ("Tool Bash: <input>\\nResult (exit 1): <output head … tail>") is
half the chunks of a coding session and half the word pieces the model
computes, and the model is nearly all of the time a cold sync takes. Its
vector is made from the first ``TOOL_EMBED_CHARS`` characters of its result
line ("Result (exit 1): npm ERR! …"); the keyword lane indexes the whole
chunk (the command, paths, the output's tail), and recall shows all of it.
Measured, the tool input made a tool chunk's vector worse, not better: a
vector of the call's input (cut short) pulled tool chunks above the answers
in the vector lane.

A pure function of a chunk's kind and stored text, so that every place that
needs a chunk's vector again (the vector-store rebuild, the ranking's look-up
in the embedding cache; see ``engine.ingest.embedtext.embed_text``) finds the
same one.
"""

from __future__ import annotations

# tool result characters embedded (None: all): bench.transcripts_recall (docs/tuning.md)
TOOL_EMBED_CHARS: int | None = 120
RESULT = "\nResult"  # engine.recall.chunks writes "…Tool <name>: <input>\nResult…"
# a tool call's view, each part's characters: recall dev, recall_quality (docs/tuning.md)
TOOL_VIEW_CHARS: dict[str, int] = {"Assistant: ": 240, "Tool ": 100}


def embed_view(kind: str, text: str) -> str:
    """The part of a transcript chunk of ``kind`` that the model embeds."""
    limit = TOOL_EMBED_CHARS
    if kind in ("turn_pair", "thinking") and text.startswith("User: "):
        _, nl, rest = text.partition("\n")
        return rest if nl and rest.strip() else text
    if kind != "tool" or limit is None:
        return text
    head, found, rest = text.partition(RESULT)
    body = RESULT[1:] + rest if found else ""
    parts = []
    for line in head.split("\n"):
        for prefix, chars in TOOL_VIEW_CHARS.items():
            if line.startswith(prefix):
                parts.append(line[:chars])
                break
    if not found and not parts:
        return text[:limit]
    return "\n".join([*parts, body[:limit]] if body else parts)
