"""Recall: coding-agent session transcripts (Claude Code, Codex) as searchable memory.

The pure half lives here: parsers that turn a transcript file (or the bytes
appended to it since the last sync) into normalized events
(``claude.parse_claude``, ``codex.parse_codex``, ``model.detect_agent``), the
privacy filter applied to those events (``privacy.apply_privacy``), the chunk
extraction that turns events into ``turn_pair`` / ``thinking`` / ``code`` /
``tool`` chunks with stable keys (``chunks.transcript_chunks``), what the
embedding model reads of each (``embedview.embed_view``), and the
incremental-sync decision (``syncplan.plan``); ``config`` holds the [recall]
section. Beside them: ``spans`` (``<private>`` spans, removed alike by the parsers and
the privacy pass), ``chunk_text`` (the string helpers of the chunk extraction),
``present`` (how a recalled turn is shown to an agent: its text, its line, its excerpt),
``asked_from`` (the project of the folder a recall is asked from) and ``coverage``
(which lines of a transcript some stored chunk holds). Nothing here touches the store:
the sync, auto recall and the recall call are the room ``engine.flows.recall``
(``sync``, ``auto``, ``entry``).
"""
