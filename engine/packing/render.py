"""Renderers for a packed context: plain text, markdown and JSON.

A rendered context is a concatenation of blocks: an optional ``head``, then for
each group (live context, memory, conversation) an optional group header and
its item blocks, then an optional ``foot``.

Items that share a source header (same source, kind, title and time: the turns
of one chat session, the chunks of one section of a file) are rendered as one
*run*: the header once, then each item's body, in their order in the source.
A turn of some 35 tokens would otherwise carry a header of some 20. Inside a
run, one-line bodies are separated by a newline and others by a blank line;
the last item of a run ends with the renderer's ``sep`` and the last item of
the context with ``last_sep``. The JSON renderer does not group (``grouped``
is false): each item is one object with its own fields, as before.

The layout is chosen so that token counts add up exactly: every block ends
with a newline (after a non-space character) and every block starts with a
non-space character or with spaces that lead to text (never a blank line).
cl100k's pre-tokenizer always splits after such a newline, so the tokens of
the whole string are the sum of the tokens of its blocks, and the packer can
count each block once instead of re-encoding the whole context. The packer
still counts the final string once to prove it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

FORMATS = ("text", "markdown", "json")

# Group titles in rendering order.
GROUP_ORDER = ("live", "memory", "conversation")
_GROUP_TITLES = {"live": "Live context", "memory": "Memory", "conversation": "Conversation"}

# Item kinds rendered as fenced code in markdown (live kinds without "live:").
_FENCED_KINDS = frozenset({"code", "session_code", "tool", "terminal", "active_file", "selection"})

_SPACE_RE = re.compile(r"[\s\x00-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]+")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LEADING_BLANK_RE = re.compile(r"\A(?:[ \t]*\n)+")
_MANY_BLANK_RE = re.compile(r"\n{3,}")
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_BACKTICKS_RE = re.compile(r"`+")
_SEP_RE = re.compile(r"[\\/]")

MAX_SOURCE_CHARS = 60
MAX_TITLE_CHARS = 80


@dataclass(frozen=True)
class BlockView:
    """What an item header shows; every field is already one clean line."""

    label: str  # "section", "summary:gist", "live:active_file", "conversation"
    source: str  # short source: file name, host, session
    title: str  # "" when absent or equal to the source
    when: str  # "YYYY-MM-DD HH:MM UTC" or ""
    lang: str | None = None  # None: prose; "" or a tag: code (fenced in markdown)
    lines: str = ""  # "12-40": the lines of ``source`` the item holds, or ""


def clean_line(text: str, max_chars: int) -> str:
    """One line of at most ``max_chars`` characters: whitespace and controls collapsed."""
    line = _SPACE_RE.sub(" ", fix_surrogates(text)).strip()
    if len(line) > max_chars:
        line = line[: max_chars - 1].rstrip() + "…"
    return line


def fix_surrogates(text: str) -> str:
    """Replace lone surrogates (not encodable as UTF-8) with U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE_RE.sub("\ufffd", text)
    return text


def normalize_body(text: str) -> str:
    """Item text as rendered: LF newlines, no control characters, no outer blank lines.

    Runs of blank lines are folded to one and trailing whitespace is removed
    (the latter is what keeps block token counts additive).
    """
    if not text:
        return ""
    text = fix_surrogates(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_RE.sub("", text)
    text = _LEADING_BLANK_RE.sub("", text.rstrip())
    if "\n\n\n" in text:
        text = _MANY_BLANK_RE.sub("\n\n", text)
    return text


def short_source(source: str) -> str:
    """A short, readable name for a source: file name, URL host and last segment, or id."""
    src = clean_line(source, 4 * MAX_SOURCE_CHARS)
    if "://" in src:
        rest = src.split("://", 1)[1]
        host, _, path = rest.partition("/")
        last = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        src = f"{host}/…/{last}" if last and "/" in path.rstrip("/") else rest.rstrip("/")
    elif src.startswith("text:"):
        src = src[:13]
    elif "/" in src or "\\" in src:
        parts = [p for p in _SEP_RE.split(src) if p]
        src = parts[-1] if parts else src
    return clean_line(src, MAX_SOURCE_CHARS)


def short_path(path: str) -> str:
    """A file's path as a header shows it: one clean line, its start elided when long
    (the end, which names the file, is what a reader needs)."""
    line = clean_line(path, 4 * MAX_SOURCE_CHARS)
    if len(line) <= MAX_SOURCE_CHARS:
        return line
    tail = line[-(MAX_SOURCE_CHARS - 1):]
    cut = tail.find("/")
    return "…" + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)


def line_span(lines: tuple[int, int] | None) -> str:
    """``12-40`` for lines 12 to 40 (``12`` for one line); "" when unknown."""
    if lines is None:
        return ""
    first, last = lines
    return str(first) if first == last else f"{first}-{last}"


def format_time(t: float | None) -> str:
    """``YYYY-MM-DD HH:MM UTC`` for epoch seconds; "" when unknown or out of range."""
    if t is None or not math.isfinite(t):
        return ""
    try:
        d = datetime.fromtimestamp(t, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d} {d.hour:02d}:{d.minute:02d} UTC"


def code_lang(kind: str, source: str) -> str | None:
    """Fence language for code-like kinds (from the file extension), else None."""
    base = kind.split(":", 1)[-1]
    if base not in _FENCED_KINDS:
        return None
    if base == "tool" or "." not in source:
        return ""
    ext = source.rsplit(".", 1)[-1].lower()
    return ext if ext.isascii() and ext.isalnum() and len(ext) <= 8 else ""


class Renderer:
    """Base renderer: subclasses define the block layout of one format."""

    name = "text"
    sep = "\n\n"  # after every item block but the last
    last_sep = ""  # after the last item block
    inner_sep = "\n"  # between one-line items of one run
    grouped = True  # items that share a header are rendered as one run

    def head(self, now: str) -> str:
        """Opening text; ``now`` is the formatted current time or ""."""
        return f"[now · {now}]\n\n" if now else ""

    def foot(self) -> str:
        return ""

    def group(self, section: str) -> str:
        return f"=== {_GROUP_TITLES[section]} ===\n"

    def block(self, view: BlockView, body: str) -> str:
        return f"{self._header(view)}\n{body}" if body else self._header(view)

    def run_header(self, view: BlockView) -> str:
        """The header a run of items opens with ("" when items carry their own)."""
        return self._header(view) + "\n"

    def item(self, view: BlockView, body: str) -> str:
        """One item inside a run (its body; code is fenced where the format fences)."""
        return body

    def item_sep(self, item: str, last_in_run: bool) -> str:
        """What follows a rendered item: a newline after a one-line item that another
        item of its run follows, else ``sep``."""
        if not last_in_run and "\n" not in item:
            return self.inner_sep
        return self.sep

    @staticmethod
    def _fields(view: BlockView) -> str:
        where = f"{view.source}:{view.lines}" if view.lines and view.source else view.source
        return " · ".join(f for f in (view.label, where, view.when) if f)

    def _header(self, view: BlockView) -> str:
        head = f"[{self._fields(view)}]"
        return f"{head} {view.title}" if view.title else head


class MarkdownRenderer(Renderer):
    """``##`` group headings, ``###`` item headings, fenced code for code-like kinds."""

    name = "markdown"

    def head(self, now: str) -> str:
        return f"_Now: {now}_\n\n" if now else ""

    def group(self, section: str) -> str:
        return f"## {_GROUP_TITLES[section]}\n\n"

    def _header(self, view: BlockView) -> str:
        head = f"### {self._fields(view)}"
        return f"{head} — {view.title}" if view.title else head

    def block(self, view: BlockView, body: str) -> str:
        head = self._header(view)
        if view.lang is None:
            return f"{head}\n{body}" if body else head
        return f"{head}\n{self.item(view, body)}"

    def item(self, view: BlockView, body: str) -> str:
        if view.lang is None:
            return body
        longest = max((len(m) for m in _BACKTICKS_RE.findall(body)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}{view.lang}\n{body}\n{fence}"


class JsonRenderer(Renderer):
    """A compact JSON document ``{"now":…,"items":[{kind,source,title,time,text},…]}``.

    One item per line, so that items can be counted (and cut) one by one; the
    whole string is always valid JSON.
    """

    name = "json"
    sep = ",\n"
    last_sep = "\n"
    inner_sep = ",\n"
    grouped = False

    def head(self, now: str) -> str:
        stamp = f'"now":{json.dumps(now)},' if now else ""
        return '{' + stamp + '"items":[\n'

    def foot(self) -> str:
        return "]}"

    def group(self, section: str) -> str:
        return ""

    def block(self, view: BlockView, body: str) -> str:
        obj: dict[str, str] = {"kind": view.label, "source": view.source}
        if view.lines:
            obj["lines"] = view.lines
        if view.title:
            obj["title"] = view.title
        if view.when:
            obj["time"] = view.when
        obj["text"] = body
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    def run_header(self, view: BlockView) -> str:
        return ""

    def item(self, view: BlockView, body: str) -> str:
        return self.block(view, body)

    def item_sep(self, item: str, last_in_run: bool) -> str:
        return self.sep


_RENDERERS: dict[str, Renderer] = {
    "text": Renderer(), "markdown": MarkdownRenderer(), "json": JsonRenderer(),
}


def get_renderer(fmt: str) -> Renderer:
    """The renderer of one of FORMATS."""
    return _RENDERERS[fmt]
