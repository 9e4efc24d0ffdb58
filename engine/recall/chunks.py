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
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigError
from engine.recall.model import ParseResult, SessionInfo, TranscriptEvent
from engine.tokens import TokenCounter
from engine.types import ChunkDraft

RECALL_CHUNK_KINDS = ("turn_pair", "thinking", "code", "tool")
ACKNOWLEDGED = "acknowledged_mistake"  # chunk error_kind of a self-acknowledged mistake

DEFAULT_MISTAKE_PATTERNS: tuple[str, ...] = (
    r"\bI made (?:a|an|the) (?:mistake|error)\b",
    r"\bmy (?:mistake|bad)\b",
    r"\bthat (?:was|is) (?:wrong|incorrect|my (?:mistake|error|fault))\b",
    r"\bI was wrong\b",
    r"\bI apologi[sz]e\b",
    r"\bsorry (?:about|for) (?:that|the confusion|the mistake)\b",
    r"\byou'?re (?:absolutely |completely |totally )?right[,.!]?\s+(?:I\b|I'|my\b)",
    r"\bI (?:incorrectly|mistakenly|wrongly)\b",
    r"\bI introduced (?:a|an|the|this) (?:bug|regression|error)\b",
    r"\bwait,? that'?s (?:wrong|not right)\b",
)


@dataclass(frozen=True)
class RecallChunkConfig:
    """Sizes and rules of transcript chunks (tokens are cl100k tokens)."""

    max_tokens: int = 400  # hard limit of every chunk
    question_tokens: int = 100  # the user request quoted in a turn pair
    context_question_tokens: int = 40  # the request quoted above a thinking chunk
    tool_input_tokens: int = 120  # tool input summary
    tool_output_tokens: int = 120  # tool output: its head and, mostly, its tail
    code_context_tokens: int = 60  # the sentence introducing a code block
    min_thinking_tokens: int = 16  # shorter reasoning (a bare heading) is skipped
    max_parts: int = 32  # a longer answer, reasoning or code block is cut after this many
    skip_sibling_errors: bool = True
    mistake_patterns: tuple[str, ...] = DEFAULT_MISTAKE_PATTERNS  # regexes, case-insensitive

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> ConfigError:
            return ConfigError(f"recall.chunks.{key}: {why}", key=key)

        if not 64 <= self.max_tokens <= 8192:
            raise bad("max_tokens", "must be between 64 and 8192")
        for key in ("question_tokens", "context_question_tokens", "tool_input_tokens",
                    "tool_output_tokens", "code_context_tokens", "max_parts"):
            if getattr(self, key) < 1:
                raise bad(key, "must be at least 1")
        for key in ("question_tokens", "context_question_tokens", "code_context_tokens"):
            if getattr(self, key) > self.max_tokens // 2:
                raise bad(key, "must be at most half of max_tokens")
        if self.tool_input_tokens + self.tool_output_tokens + 32 > self.max_tokens:
            raise bad("tool_output_tokens", "tool input and output must fit in max_tokens")
        if self.min_thinking_tokens < 0:
            raise bad("min_thinking_tokens", "must not be negative")
        try:
            _mistake_regex(tuple(self.mistake_patterns))
        except re.error as exc:
            raise bad("mistake_patterns", "a pattern is not a valid regular expression") from exc


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
    builder = _Builder(result.info, cfg, counter, start_ordinal)
    for event in result.events:
        if event.type == "tool_result":
            builder.tool(event)
        elif event.type == "thinking":
            builder.thinking(event)
        elif event.type == "text" and event.role == "assistant":
            builder.answer(event)
        elif event.type == "text" and event.error_kind in ("interrupted", "aborted"):
            builder.interrupted(event)
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
        }
        meta.update(extra)
        self.chunks.append(ChunkDraft(
            text=text, ordinal=self.start + len(self.chunks), tokens=tokens, kind=kind,
            heading=heading, start=event.offset, time=event.timestamp, meta=meta,
        ))

    def _parts(self, first: str, later: str, body: str) -> list[str]:
        budget = self.cfg.max_tokens - max(self.counter.count(first), self.counter.count(later))
        pieces = split_text(self.counter, body, max(16, budget - 2))[: self.cfg.max_parts]
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
            self._add("code", head + fence_open + piece + fence_close, event,
                      self._key("code", f"{event.ref}#{index}.{part}"), failure=False,
                      error_kind=None, heading=language or "", language=language)

    def tool(self, event: TranscriptEvent) -> None:
        if (self.cfg.skip_sibling_errors and event.error_kind == "tool_use_error"
                and "sibling tool call errored" in event.text.lower()):
            return
        name = event.tool or "unknown"
        summary = summarize_input(event.tool_input)
        summary = self.counter.truncate(summary, self.cfg.tool_input_tokens)
        output = head_tail(self.counter, clean_output(event.text), self.cfg.tool_output_tokens)
        if output:
            result = f"Result{_status(event)}: {output}"
        elif event.error_kind in ("rejected", "interrupted", "aborted"):
            result = f"Result{_status(event)}"
        else:
            result = f"Result{_status(event)}: (no output)"
        text = f"Tool {name}: {summary}\n{result}"
        self._add("tool", text, event, self._key("tool", event.tool_use_id or event.ref),
                  failure=event.failure, error_kind=event.error_kind, heading=name, tool=name,
                  exit_code=event.exit_code)


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
    if event.exit_code is not None:
        return f" (exit {event.exit_code})"
    if kind is not None:
        return " (error)"
    return ""


# ----------------------------------------------------------- text helpers

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FILE_EXT = re.compile(r"\b[\w./-]+\.([A-Za-z0-9]{1,5})\b")
_LANG_ALIASES = {
    "py": "python", "python3": "python", "js": "javascript", "jsx": "javascript",
    "mjs": "javascript", "ts": "typescript", "tsx": "typescript", "sh": "bash",
    "shell": "bash", "zsh": "bash", "console": "bash", "shell-session": "bash",
    "yml": "yaml", "rb": "ruby", "rs": "rust", "golang": "go", "md": "markdown",
    "ex": "elixir", "exs": "elixir", "kt": "kotlin", "c++": "cpp", "cs": "csharp",
    "ps1": "powershell", "txt": "text", "plaintext": "text", "h": "c", "hpp": "cpp",
}
_EXT_LANGS = {
    "py", "js", "jsx", "mjs", "ts", "tsx", "rs", "go", "java", "rb", "ex", "exs", "sh",
    "json", "yaml", "yml", "toml", "sql", "html", "css", "c", "h", "cpp", "hpp", "swift",
    "kt", "php", "heex", "vue", "svelte", "scala", "lua", "zig",
}
# Tool input keys shown first, in this order; the first one present is shown bare.
_SALIENT = ("command", "cmd", "pattern", "query", "url", "file_path", "path", "notebook_path",
            "description", "subagent_type", "prompt", "todos", "plan", "explanation",
            "old_string", "new_string", "content")
# Tool input keys that say how, not what: left out of the summary.
_PLUMBING = frozenset({"workdir", "cwd", "timeout", "timeout_ms", "yield_time_ms",
                       "max_output_tokens", "run_in_background", "shell", "login", "tty"})


@dataclass(frozen=True)
class CodeBlock:
    """One fenced code block of an answer, with the sentence that introduces it."""

    language: str | None
    code: str
    context: str


def _language(info: str, context: str) -> str | None:
    tag = info.strip().lstrip("{.").split(":")[0].split(",")[0].strip("}").lower()
    if tag:
        return _LANG_ALIASES.get(tag, tag)
    for ext in reversed(_FILE_EXT.findall(context)):
        if ext.lower() in _EXT_LANGS:
            return _LANG_ALIASES.get(ext.lower(), ext.lower())
    return None


def _context_line(lines: list[str]) -> str:
    for line in lines:
        text = line.replace("**", "").replace("__", "").strip().strip("*_#>-").strip()
        if text and not text.startswith("[code"):
            pieces = [p for p in _SENTENCE_END.split(text) if p.strip()]
            last = pieces[-1] if pieces else text
            return last if len(last.split()) >= 3 else text
    return ""


def split_code(text: str) -> tuple[str, list[CodeBlock]]:
    """(prose with each code block replaced by a short placeholder, the blocks)."""
    lines = text.split("\n")
    prose: list[str] = []
    blocks: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            prose.append(lines[i])
            i += 1
            continue
        fence = opening.group(1)
        j = i + 1
        while j < len(lines):
            closing = _FENCE_CLOSE.match(lines[j])
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                break
            j += 1
        body = "\n".join(lines[i + 1:j]).strip("\n")
        context = _context_line(reversed(prose[-3:])) or _context_line(lines[j + 1:j + 4])
        language = _language(opening.group(2), context)
        if body.strip():
            blocks.append(CodeBlock(language, body, context))
            n = body.count("\n") + 1
            prose.append(f"[code: {language}, {n} lines]" if language else f"[code: {n} lines]")
        i = j + 1
    return "\n".join(prose), blocks


def split_text(counter: TokenCounter, text: str, budget: int, *,
               lines_only: bool = False) -> list[str]:
    """``text`` cut into pieces of at most ``budget`` tokens.

    Cuts fall between paragraphs where possible, then between lines, and only
    inside a line that is longer than the budget on its own.
    """
    if counter.count(text) <= budget:
        return [text]
    units: list[tuple[str, str]] = []  # (separator before, unit)
    paragraphs = [text] if lines_only else re.split(r"\n[ \t]*\n+", text)
    sizes = [counter.count(p) for p in paragraphs]  # (count_batch spawns threads)
    for p_index, (paragraph, size) in enumerate(zip(paragraphs, sizes, strict=True)):
        first_sep = "\n\n" if p_index else ""
        if not lines_only and size <= budget:
            units.append((first_sep, paragraph))
            continue
        lines = paragraph.split("\n")
        line_sizes = [counter.count(line) for line in lines]
        for l_index, (line, line_size) in enumerate(zip(lines, line_sizes, strict=True)):
            sep = first_sep if l_index == 0 else "\n"
            while line_size > budget:
                head = counter.truncate(line, budget) or line[:1]
                units.append((sep, head))
                line, sep = line[len(head):], ""
                line_size = counter.count(line)
            units.append((sep, line))
    # Pack by summed unit sizes (one token per separator), then check each piece
    # for real: merges across a boundary rarely change the count.
    pieces: list[str] = []
    current, used = "", 0
    for (sep, unit), size in zip(units, [counter.count(u) for _, u in units], strict=True):
        cost = size + (1 if sep else 0)
        if current and used + cost <= budget:
            current, used = current + sep + unit, used + cost
        else:
            if current:
                pieces.append(current)
            current, used = unit, size
    if current:
        pieces.append(current)
    out: list[str] = []
    for piece in pieces:
        while counter.count(piece) > budget:
            head = counter.truncate(piece, budget) or piece[:1]
            out.append(head)
            piece = piece[len(head):]
        out.append(piece)
    return [p for p in out if p.strip()] or [counter.truncate(text, budget)]


def clean_output(text: str) -> str:
    """Tool output without terminal escapes, carriage-return redraws or blank runs."""
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def tail_tokens(counter: TokenCounter, text: str, n: int) -> str:
    """The longest suffix of ``text`` of at most ``n`` tokens (never a split character)."""
    if n <= 0 or not text:
        return ""
    tokens = counter.encode(text)
    if len(tokens) <= n:
        return text
    tail = counter.decode(tokens[-n:]).lstrip("\ufffd")
    while tail and (counter.count(tail) > n or not text.endswith(tail)):
        tail = tail[1:]
    return tail


def head_tail(counter: TokenCounter, text: str, n: int) -> str:
    """``text`` if it fits in ``n`` tokens, else its head and (mostly) its tail.

    Errors and summaries sit at the end of command output, so the tail gets
    two thirds of the room.
    """
    if len(text) > 40 * n:  # bound the tokenizer's work on huge outputs
        text = text[: 12 * n] + "\n" + text[-24 * n:]
    if counter.count(text) <= n:
        return text
    marker = "\n…\n"
    room = n - counter.count(marker) - 1
    head = counter.truncate(text, room // 3)
    tail = tail_tokens(counter, text, room - room // 3)
    return head + marker + tail


def _argv(value: list[Any]) -> str:
    args = [str(a) for a in value]
    if len(args) >= 3 and args[1] in ("-lc", "-c") and args[0].rsplit("/", 1)[-1].endswith("sh"):
        return args[2]
    return shlex.join(args)


def _render_value(key: str, value: Any) -> str:
    if key in ("command", "cmd") and isinstance(value, list):
        return _argv(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        items = []
        for item in value:
            label = item.get("content") or item.get("step") or item.get("title")
            if not isinstance(label, str):
                return json.dumps(value, ensure_ascii=False)
            status = item.get("status")
            items.append(f"[{status}] {label}" if isinstance(status, str) else label)
        return "; ".join(items)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def summarize_input(raw: str | None) -> str:
    """A readable one-glance summary of a tool call's input (JSON or text)."""
    if not raw or not raw.strip():
        return ""
    try:
        data = json.loads(raw)
    except ValueError:
        if raw.lstrip().startswith("*** Begin Patch"):
            files = [line[4:] for line in raw.splitlines()
                     if line.startswith(("*** Update File:", "*** Add File:", "*** Delete File:",
                                         "*** Move to:"))]
            return "; ".join(files) + "\n" + raw
        return raw.strip()
    if isinstance(data, list):
        return _argv(data) if all(isinstance(v, str) for v in data) else raw.strip()
    if not isinstance(data, dict):
        return str(data)
    order = {key: i for i, key in enumerate(_SALIENT)}
    items = sorted((kv for kv in data.items()
                    if kv[1] not in (None, "", [], {}) and kv[0] not in _PLUMBING),
                   key=lambda kv: order.get(kv[0], len(order)))
    parts = []
    for i, (key, value) in enumerate(items):
        rendered = _render_value(key, value)
        if i == 0 and key in order:
            parts.append(rendered)
        else:
            parts.append(f"{key}={' '.join(rendered.split())}")
    return "; ".join(parts)
