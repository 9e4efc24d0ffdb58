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

# Origin: bench/transcripts_recall.py (28 questions on the shared transcripts, real
# MiniLM), 2026-11-23, issue 11: whole tool chunks embedded: hit@5 0.821, hit@10 0.893,
# MRR 0.578; this view (120): 0.857, 0.893, 0.586; 60 characters: 0.821, 0.929, 0.561;
# the input's first 40 characters above the result's first 120: 0.821, 0.893, 0.606
# (tool word pieces 45.6k). Views with more of the input (the chunk's first 200
# characters, head and tail, its first 96 or 128 word pieces) lost one or two
# questions at hit@5. Tool chunks' word pieces fell from 118.7k to 31.3k (all chunks:
# 232k -> 145k). The questions ask about what was said, not about tool output: the
# keyword lane finds that. Tool chunks with the same result start share a vector
# (1018 -> 818 distinct on the shared transcripts: "(no output)", todo updates).
# None embeds the whole chunk.
TOOL_EMBED_CHARS: int | None = 120
RESULT = "\nResult"  # engine.recall.chunks writes "Tool <name>: <input>\nResult…"


def embed_view(kind: str, text: str) -> str:
    """The part of a transcript chunk of ``kind`` that the model embeds."""
    limit = TOOL_EMBED_CHARS
    if kind != "tool" or limit is None:
        return text
    _, found, rest = text.partition(RESULT)
    body = RESULT[1:] + rest if found else text
    return body[:limit]
