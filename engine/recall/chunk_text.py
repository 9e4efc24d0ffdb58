"""Text helpers for recall chunks: code blocks, splitting, tool output and tool input.

Pure functions over strings used by :mod:`engine.recall.chunks`: fenced code
blocks taken out of an answer (with their language and introducing sentence),
text cut into token-bounded pieces, tool output cleaned of terminal escapes
and shortened to its head and tail, and a tool call's input summarized for
reading at a glance.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.tokens import TokenCounter

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
PLUMBING = frozenset({"workdir", "cwd", "timeout", "timeout_ms", "yield_time_ms",
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


def _context_line(lines: Iterable[str]) -> str:
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


_GUTTER = re.compile(r"^ +(\d+)(→|\t)", re.MULTILINE)


def compact_gutter(text: str) -> str:
    """A file listing's line-number gutter without its padding ("   12→x" -> "12→x"):
    a sixth fewer tokens on the file reads of the shared sessions, nothing lost."""
    return _GUTTER.sub(r"\1\2", text)


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
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "; ".join(value)  # search queries, paths: as written, not JSON-escaped
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
    order, items = _salient_items(data)
    parts = []
    for i, (key, value) in enumerate(items):
        rendered = _render_value(key, value)
        if i == 0 and key in order:
            parts.append(rendered)
        else:
            parts.append(f"{key}={' '.join(rendered.split())}")
    return "; ".join(parts)



def _salient_items(data: dict[str, Any]) -> tuple[dict[str, int], list[tuple[str, Any]]]:
    """A tool input's keys in reading order (``_SALIENT`` first), empty values and plumbing
    left out; with the order's index of each salient key."""
    order = {key: i for i, key in enumerate(_SALIENT)}
    items = sorted((kv for kv in data.items()
                    if kv[1] not in (None, "", [], {}) and kv[0] not in PLUMBING),
                   key=lambda kv: order.get(kv[0], len(order)))
    return order, items

def render_input(raw: str | None) -> str:
    """A tool call's whole input, laid out to read: ``summarize_input``'s order, but each
    value whole and with its own lines (an Edit's old and new text, a Write's content)."""
    if not raw or not raw.strip():
        return ""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.strip()
    if not isinstance(data, dict):
        return summarize_input(raw)
    order, items = _salient_items(data)
    parts = []
    for i, (key, value) in enumerate(items):
        rendered = _render_value(key, value).strip("\n")
        if i == 0 and key in order:
            parts.append(rendered)
        elif "\n" in rendered:
            parts.append(f"{key}:\n{rendered}")
        else:
            parts.append(f"{key}={rendered}")
    return "\n".join(parts)
