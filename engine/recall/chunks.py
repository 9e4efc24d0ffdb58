"""Transcript events -> recall chunks: turn pairs, thinking, code and tool calls.

Each chunk is self-contained readable text ("User: ...\\nAssistant: ...",
"Tool Bash: <cmd>\\nResult (exit 1): ...") of at most ``max_tokens`` tokens,
with metadata (session, project, branch, model, agent, failure flag, tool,
language) and a stable ``key`` built from message and tool ids. A chunk is
made from events of one parse only (the parser carries the pending request
and pending tool calls across parses), so parsing a growing file piece by
piece yields the same chunks, with the same keys, as parsing it whole.

Failures: tool errors, non-zero exits, interrupted or aborted turns, and
answers in which the assistant acknowledges a mistake (``mistake_patterns``).
A user declining a tool ("rejected") and a harness refusing a malformed call
("tool_use_error") keep their error kind but are not failures; harness
"sibling tool call errored" results (the call never ran) make no chunk.
"""

from __future__ import annotations

import functools
import re

from engine.recall.chunk_text import (
    clean_output,
    compact_gutter,
    head_tail,
    render_input,
    split_code,
    split_text,
    summarize_input,
)
from engine.recall.config import RecallChunkConfig
from engine.recall.model import ParseResult, SessionInfo, TranscriptEvent
from engine.tokens import TokenCounter
from engine.types import ChunkDraft

# A code block quoted in a session is "session_code", never a document's "code": a kind
# filter of sessions never picks up ingested source files (issue 31).
SESSION_CODE = "session_code"
RECALL_CHUNK_KINDS = ("turn_pair", "thinking", SESSION_CODE, "tool")
ACKNOWLEDGED = "acknowledged_mistake"  # chunk error_kind of a self-acknowledged mistake

@functools.lru_cache(maxsize=8)
def _mistake_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


def acknowledges_mistake(text: str, cfg: RecallChunkConfig) -> bool:
    """True when ``text`` matches one of ``cfg.mistake_patterns``."""
    regex = _mistake_regex(tuple(cfg.mistake_patterns))
    return bool(regex and regex.search(text.replace("\u2019", "'")))


def transcript_chunks(result: ParseResult, cfg: RecallChunkConfig, counter: TokenCounter, *,
                      start_ordinal: int = 0) -> list[ChunkDraft]:
    """The recall chunks of ``result``'s events, in event order.

    ``start_ordinal`` is the number of chunks already stored for this session
    (ordinals continue from it on an incremental sync). Apply
    ``privacy.apply_privacy`` to ``result`` first.
    """
    return _chunks_of(result.info, result.events, cfg, counter, start_ordinal)


def pending_chunks(result: ParseResult, cfg: RecallChunkConfig, counter: TokenCounter, *,
                   start_ordinal: int) -> list[ChunkDraft]:
    """The chunks of the calls still waiting for their result where ``result`` stopped
    (``ParseResult.pending``): each call's chunk says "Result (pending)" (with a running
    command's output so far). ``start_ordinal``: right after ``result``'s own chunks.
    Their keys are the keys the call's chunk will have once its result (or the next
    request) comes: a sync stores them apart and replaces them then."""
    return _chunks_of(result.info, result.pending, cfg, counter, start_ordinal)


def _chunks_of(info: SessionInfo, events: tuple[TranscriptEvent, ...], cfg: RecallChunkConfig,
               counter: TokenCounter, start_ordinal: int) -> list[ChunkDraft]:
    builder = _Builder(info, cfg, counter, start_ordinal)
    for event in events:
        if event.type == "tool_result":
            builder.tool(event)
        elif event.type == "tool_call":
            builder.tool_input(event)
        elif event.type == "thinking":
            builder.thinking(event)
        elif event.type == "text" and event.role == "assistant":
            builder.answer(event)
        elif event.type == "text" and event.error_kind in ("interrupted", "aborted"):
            builder.interrupted(event)
        elif event.type == "text" and event.role == "user":
            builder.request(event)
    return builder.chunks


class _Builder:
    def __init__(self, info: SessionInfo, cfg: RecallChunkConfig, counter: TokenCounter,
                 start_ordinal: int) -> None:
        self.info = info
        self.cfg = cfg
        self.counter = counter
        self.start = start_ordinal
        self.chunks: list[ChunkDraft] = []

    # ------------------------------------------------------------- helpers

    def _key(self, kind: str, ref: str) -> str:
        return f"{self.info.agent}:{self.info.session_id}:{kind}:{ref}"

    def _question(self, prompt: str | None, limit: int) -> str:
        if not prompt or not prompt.strip():
            return ""
        text = " ".join(prompt.split())  # quoted as context: layout does not matter
        cut = self.counter.truncate(text, limit)
        return cut if cut == text else cut.rstrip() + " …"

    def _add(self, kind: str, text: str, event: TranscriptEvent, key: str, *, failure: bool,
             error_kind: str | None, heading: str = "", **extra: object) -> None:
        tokens = self.counter.count(text)
        if tokens > self.cfg.max_tokens:
            text = self.counter.truncate(text, self.cfg.max_tokens)
            tokens = self.counter.count(text)
        meta: dict[str, object] = {
            "session": self.info.session_id, "project": self.info.project,
            "branch": event.branch, "model": event.model, "agent": self.info.agent,
            "failure": failure, "error_kind": error_kind, "tool": None, "key": key,
            "is_subagent": self.info.is_subagent, "parent_session": self.info.parent_session,
            "turn": event.turn,
        }
        meta.update(extra)
        self.chunks.append(ChunkDraft(
            text=text, ordinal=self.start + len(self.chunks), tokens=tokens, kind=kind,
            heading=heading, start=event.offset, time=event.timestamp, meta=meta,
        ))

    def _parts(self, first: str, later: str, body: str, max_parts: int | None = None
               ) -> list[str]:
        budget = self.cfg.max_tokens - max(self.counter.count(first), self.counter.count(later))
        pieces = split_text(self.counter, body, max(16, budget - 2))[
            : max_parts or self.cfg.max_parts]
        return [(first if i == 0 else later) + piece for i, piece in enumerate(pieces)]

    # -------------------------------------------------------------- kinds

    def answer(self, event: TranscriptEvent) -> None:
        prose, blocks = split_code(event.text)
        prose = prose.strip()
        question = self._question(event.prompt, self.cfg.question_tokens)
        user = f"User: {question}\n" if question else ""
        ack = acknowledges_mistake(prose, self.cfg)
        if prose:
            texts = self._parts(f"{user}Assistant: ", f"{user}Assistant (continued): ", prose)
            for n, text in enumerate(texts):
                self._add("turn_pair", text, event, self._key("turn_pair", f"{event.ref}#{n}"),
                          failure=ack, error_kind=ACKNOWLEDGED if ack else None)
        for i, block in enumerate(blocks):
            self._code(event, i, block.language, block.code, block.context)

    def interrupted(self, event: TranscriptEvent) -> None:
        question = self._question(event.prompt, self.cfg.question_tokens)
        if not question:
            return
        what = "interrupted by the user" if event.error_kind == "interrupted" else "turn aborted"
        self._add("turn_pair", f"User: {question}\nAssistant: [{what}]", event,
                  self._key("turn_pair", f"{event.ref}#0"), failure=True,
                  error_kind=event.error_kind)

    def request(self, event: TranscriptEvent) -> None:
        """A request longer than every chunk of its turn quotes (``context_question_tokens``:
        a turn with tool calls but no answer quotes no more), whole."""
        body = event.text.strip()
        quoted = self.cfg.context_question_tokens
        if not body or self.counter.count(" ".join(body.split())) <= quoted:
            return
        texts = self._parts("User (request): ", "User (request, continued): ", body)
        for n, text in enumerate(texts):
            self._add("turn_pair", text, event, self._key("turn_pair", f"{event.ref}#request{n}"),
                      failure=False, error_kind=None, part="request")

    def tool_input(self, event: TranscriptEvent) -> None:
        """A call's whole input, when its summary does not fit the call's chunk."""
        rendered = render_input(event.tool_input)
        if not self.cfg.max_tool_parts or self.counter.count(rendered) <= self.cfg.tool_input_tokens:
            return
        name = event.tool or "unknown"
        texts = self._parts(f"Tool {name} (input): ", f"Tool {name} (input, continued): ",
                            rendered, self.cfg.max_tool_parts)
        for n, text in enumerate(texts):
            self._add("tool", text, event,
                      self._key("tool", f"{event.tool_use_id or event.ref}:input#{n}"),
                      failure=False, error_kind=None, heading=name, tool=name, part="input")

    def _tool_output(self, event: TranscriptEvent, name: str, output: str, what: str) -> None:
        """A result's whole output, when the call's chunk shows only its head and tail."""
        output = compact_gutter(output)
        texts = self._parts(f"Tool {name} ({what}): ", f"Tool {name} ({what}, continued): ",
                            output, self.cfg.max_tool_parts)
        for n, text in enumerate(texts):  # the call's own chunk counts its failure, once
            self._add("tool", text, event,
                      self._key("tool", f"{event.tool_use_id or event.ref}:output#{n}"),
                      failure=False, error_kind=event.error_kind, heading=name,
                      tool=name, exit_code=event.exit_code, part="output")

    def thinking(self, event: TranscriptEvent) -> None:
        body = event.text.strip()
        if self.counter.count(body) < self.cfg.min_thinking_tokens:
            return
        question = self._question(event.prompt, self.cfg.context_question_tokens)
        user = f"User: {question}\n" if question else ""
        texts = self._parts(f"{user}Assistant (thinking): ",
                            f"{user}Assistant (thinking, continued): ", body)
        for n, text in enumerate(texts):
            self._add("thinking", text, event, self._key("thinking", f"{event.ref}#{n}"),
                      failure=False, error_kind=None)

    def _code(self, event: TranscriptEvent, index: int, language: str | None, code: str,
              context: str) -> None:
        context = self.counter.truncate(context, self.cfg.code_context_tokens)
        title = f"Code ({language})" if language else "Code"
        head = f"{title}: {context}\n" if context else f"{title}:\n"
        fence_open, fence_close = f"```{language or ''}\n", "\n```"
        fixed = self.counter.count(head + fence_open + fence_close)
        pieces = split_text(self.counter, code, max(16, self.cfg.max_tokens - fixed - 2),
                            lines_only=True)[: self.cfg.max_parts]
        for part, piece in enumerate(pieces):
            self._add(SESSION_CODE, head + fence_open + piece + fence_close, event,
                      self._key("code", f"{event.ref}#{index}.{part}"), failure=False,
                      error_kind=None, heading=language or "", language=language)

    def tool(self, event: TranscriptEvent) -> None:
        if (self.cfg.skip_sibling_errors and event.error_kind == "tool_use_error"
                and "sibling tool call errored" in event.text.lower()):
            return
        name = event.tool or "unknown"
        summary = summarize_input(event.tool_input)
        summary = self.counter.truncate(summary, self.cfg.tool_input_tokens)
        whole = clean_output(event.text)
        output = head_tail(self.counter, whole, self.cfg.tool_output_tokens)
        if output:
            result = f"Result{_status(event)}: {output}"
        elif event.error_kind in ("rejected", "interrupted", "aborted", "no_result", "pending"):
            result = f"Result{_status(event)}"
        else:
            result = f"Result{_status(event)}: (no output)"
        question = self._question(event.prompt, self.cfg.context_question_tokens)
        intent = self._question(event.intent, self.cfg.tool_intent_tokens)
        why = (f"User: {question}\n" if question else "") + (
            f"Assistant: {intent}\n" if intent else "")
        text = f"{why}Tool {name}: {summary}\n{result}"
        self._add("tool", text, event, self._key("tool", event.tool_use_id or event.ref),
                  failure=event.failure, error_kind=event.error_kind, heading=name, tool=name,
                  exit_code=event.exit_code)
        if output != whole and self.cfg.max_tool_parts:
            self._tool_output(event, name, whole, "output")


def _status(event: TranscriptEvent) -> str:
    kind = event.error_kind
    if kind == "rejected":
        return " (rejected by the user)"
    if kind == "tool_use_error":
        return " (refused by the harness)"
    if kind == "interrupted":
        return " (interrupted)"
    if kind == "aborted":
        return " (aborted)"
    if kind == "no_result":
        return " (none recorded)"
    if kind == "pending":  # where the transcript ended: the session stopped, or runs it
        return " (pending)"
    if event.exit_code is not None:
        return f" (exit {event.exit_code})"
    if kind is not None:
        return " (error)"
    return ""
