"""How a recalled turn is shown to an agent: its text (the request, then the turn's
chunks that answer best, within a budget), one line that places it, and the excerpt
that answers.

The line says which session (its id's first 8 characters), when, on which branch,
and what came of the turn the chunk belongs to (``turn_outcome``); the excerpt is
the run of the text's lines that holds most of the question's words, cut to a
token budget, with the request it answered quoted short above it. ``compose_turn``
makes a turn's text from its chunks (best first): the request once, then each
chunk without the request it quotes. Pure functions of plain data, tested without
a store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.tokens import TokenCounter

_WORD = re.compile(r"[a-z0-9_]{3,}")
# a call line's share of an excerpt, least tokens of a cut line: hand-set (docs/tuning.md)
CALL_SHARE = 0.34
MIN_LINE = 12
# a quoted request's share of an excerpt when it answers: hand-set (docs/tuning.md)
REQUEST_SHARE = 0.5
_CALL = re.compile(r"Tool [^:\n]{1,80}: ")  # a tool call's line (engine.recall.chunks)
# the head of a part of a call's input or output: "Tool Bash (output, continued): "
_PART_HEAD = re.compile(r"Tool [^:\n]{1,80} \((?:input|output)[^)\n]*\): ")
REQUEST_PREFIX = "User (request"  # a chunk that holds a long request whole (no reply)
# for a part's text and its call's, what a line's words are worth to the question
Weigher = Callable[[str, str], Callable[[str], float]]
_REPLY = re.compile(r"^Assistant(?: \([^)]*\))?: ", re.MULTILINE)


@dataclass(frozen=True)
class TurnChunk:
    """What the outcome reads of one chunk of a turn, in session order."""

    kind: str
    failure: bool
    error_kind: str | None
    tool: str | None
    text: str


def _short(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _reply_of(text: str) -> str:
    """The assistant's words in a reply chunk (after its quoted request)."""
    match = _REPLY.search(text)
    return text[match.end():] if match else text


def turn_outcome(chunks: Sequence[TurnChunk], limit: int = 90) -> str:
    """What came of a turn: its failures, then how its last reply begins."""
    failed = [c for c in chunks if c.failure]
    last = next((c for c in reversed(chunks) if c.kind == "turn_pair"
                 and not c.text.startswith(REQUEST_PREFIX)), None)
    parts = []
    if failed:
        worst = failed[-1]
        what = worst.error_kind or "failure"
        parts.append(f"{len(failed)} failed ({what}{', ' + worst.tool if worst.tool else ''})")
    if last is not None:
        reply = _reply_of(last.text)
        if reply.strip().startswith("["):  # "[interrupted by the user]"
            parts.append(reply.strip())
        else:
            parts.append("ended: " + _short(reply, limit))
    return "; ".join(parts) if parts else "no reply recorded"


def hit_line(meta: Mapping[str, object], time: float | None, outcome: str) -> str:
    """``session · date · branch · outcome`` in one line."""
    session = str(meta.get("session") or "-")
    when = (datetime.fromtimestamp(time, tz=UTC).strftime("%Y-%m-%d %H:%M")
            if time is not None else "----------")
    branch = str(meta.get("branch") or "-")
    flag = "FAILED · " if meta.get("failure") else ""
    return f"{session[:8]} · {when} · {branch} · {flag}{outcome}"


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _cut_line(counter: TokenCounter, line: str, tokens: int) -> str:
    """``line`` cut to ``tokens`` tokens, an ellipsis marking the cut."""
    if counter.count(line) <= tokens:
        return line
    return counter.truncate(line, max(1, tokens - 1)).rstrip() + "…"


def excerpt(text: str, query: str, counter: TokenCounter, budget: int,
            request_tokens: int = 24) -> str:
    """The lines of ``text`` that answer ``query`` best, within ``budget`` tokens.

    The request line ("User: ...") is quoted first, cut to ``request_tokens`` (to
    ``REQUEST_SHARE`` of the budget when it holds more query words than any other line); then
    the window of consecutive lines holding the most query words (the earliest such
    window), grown line by line, below then above, while whole lines fit; what room is
    left then shows the start of the next line below (else above) when that is at least
    ``MIN_LINE`` tokens. A tool call's line ("Tool Edit: ...", its input summed up)
    takes at most ``CALL_SHARE`` of the room, so that a long input (an Edit's old and
    new text) does not keep its result out.
    """
    if counter.count(text) <= budget:
        return text
    lines = text.split("\n")
    asked = _words(query)
    head = ""
    if lines and lines[0].startswith("User: "):
        request, lines = lines[0], lines[1:]
        said = max((len(asked & _words(line)) for line in lines), default=0)
        if len(asked & _words(request)) > said:  # the request is what answers
            request_tokens = max(request_tokens, int(budget * REQUEST_SHARE))
        head = counter.truncate(request, request_tokens)
        head = head if head == request else head.rstrip() + " …"
    room = budget - (counter.count(head + "\n") if head else 0)
    if not lines:
        return head
    cap = max(MIN_LINE, int(room * CALL_SHARE))
    lines = [_cut_line(counter, ln, cap) if _CALL.match(ln) else ln for ln in lines]
    scores = [len(asked & _words(line)) for line in lines]
    best = max(range(len(lines)), key=lambda i: (scores[i], -i))
    used = counter.count(lines[best])
    if used >= room:  # one long line: its start
        body = counter.truncate(lines[best], max(room, 1))
    else:
        body = _grown(lines, best, best, used, counter, room)
    out = f"{head}\n{body}" if head else body
    while counter.count(out) > budget:  # joins can merge tokens: never past the budget
        out = counter.truncate(out, budget)
    return out


def _grown(lines: Sequence[str], lo: int, hi: int, used: int, counter: TokenCounter,
           room: int) -> str:
    """``lines[lo:hi + 1]`` (``used`` tokens) grown line by line, below then above, while
    whole lines fit in ``room`` tokens; what room is left then shows the start of the
    next line below (else above) when that is at least ``MIN_LINE`` tokens."""
    grown = True
    while grown:
        grown = False
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(lines) and used + counter.count(lines[j] + "\n") <= room:
                used += counter.count(lines[j] + "\n")
                lo, hi = min(lo, j), max(hi, j)
                grown = True
    shown = list(lines[lo:hi + 1])
    left = room - used - 1
    if left >= MIN_LINE and hi + 1 < len(lines):  # the start of the next line
        shown.append(_cut_line(counter, lines[hi + 1], left))
    elif left >= MIN_LINE and lo > 0:
        shown.insert(0, _cut_line(counter, lines[lo - 1], left))
    return "\n".join(shown)


def densest(text: str, weigh: Callable[[str], float], counter: TokenCounter, budget: int
            ) -> str | None:
    """The lines of ``text`` where the question's words fall thickest, within ``budget``
    tokens: of the runs of consecutive lines that fit, the one whose lines' weights
    (``weigh``: what a line's words are worth to the question) sum highest (the earliest
    such run), less the lines that weigh nothing at its ends, then grown around as
    ``excerpt`` grows its best line. A line longer than the budget counts as its start.
    None when no line weighs anything."""
    lines = [_cut_line(counter, ln, budget) for ln in text.split("\n")]
    weights = [weigh(ln) for ln in lines]
    if not any(w > 0 for w in weights):
        return None
    cost = [counter.count(ln + "\n") for ln in lines]
    best, top = (0, 0), 0.0
    lo, used, total = 0, 0, 0.0
    for hi, (w, c) in enumerate(zip(weights, cost, strict=True)):
        used, total = used + c, total + w
        while used - 1 > budget and lo < hi:
            used, total, lo = used - cost[lo], total - weights[lo], lo + 1
        if total > top:
            top, best = total, (lo, hi)
    lo, hi = best
    while weights[lo] <= 0:
        lo += 1
    while weights[hi] <= 0:
        hi -= 1
    return _grown(lines, lo, hi, sum(cost[lo:hi + 1]) - 1, counter, budget)


def written(body: str) -> str:
    """What a call's input wrote (``engine.recall.chunk_text.render_input``'s layout):
    an Edit's new text without the old text it replaced (from "new_string:" on), a
    patch without its removed lines ("-..."); any other input as it is."""
    lines = body.split("\n")
    if "new_string:" in lines:
        at = lines.index("new_string:")
        start = lines.index("old_string:") if "old_string:" in lines[:at] else 0
        return "\n".join(lines[:start] + lines[at:])
    if any(ln.startswith("+") and not ln.startswith("+++") for ln in lines):
        return "\n".join(ln for ln in lines if not ln.startswith("-") or ln.startswith("---"))
    return body


def part_lines(text: str, query: str, counter: TokenCounter, budget: int,
               known: str = "", weigher: Weigher | None = None) -> str:
    """The lines of a part of a call's input or output (``text``, "Tool Bash (output):
    ...") that answer ``query`` best, within ``budget`` tokens, led by the part's head
    ("Tool Bash (output): … ") when they do not start with it: shown under the call's
    own chunk, they say what they are. Of an input, what it wrote (``written``): the
    call's own chunk sums up the old text already. With ``weigher`` (for the part's
    lines and the call's own text, what a line's words are worth to the question:
    ``recall.part_lines_by`` "weight"), the lines where they fall thickest
    (``densest``); else, or when no line weighs anything, the ``excerpt`` by the query's
    words that the call's own text (``known``) lacks, when the part holds any: the
    words it shares with its call are on every line of a test run."""
    head = _PART_HEAD.match(text)
    if head is None:
        return excerpt(text, query, counter, budget)
    whole = text[head.end():]
    if "(input" in head.group(0):
        whole = written(whole)
    new = (_words(query) - _words(known)) & _words(whole)
    if new:
        query = " ".join(sorted(new))
    if counter.count(head.group(0) + whole) <= budget:
        return head.group(0) + whole
    lead = head.group(0) + "… "
    room = max(1, budget - counter.count(lead))
    body = densest(whole, weigher(whole, known), counter, room) if weigher is not None else None
    if body is None:
        body = excerpt(whole, query, counter, room)
    if _from_start(whole, body):
        lead = head.group(0)  # they start where the part does
    out = lead + body
    while counter.count(out) > budget:  # joins can merge tokens: never past the budget
        out = counter.truncate(out, budget)
    return out


def _from_start(whole: str, body: str) -> bool:
    """Whether ``body``, lines of ``whole`` as an excerpt shows them (a line cut short
    ends in "…"; the last may just stop), are its first lines: line by line, not by the
    first line alone (a blank line, or one that begins as the first does, stands
    anywhere)."""
    shown = body.split("\n")
    return all(got == line or (line.startswith(got.rstrip("…").rstrip())
                               and (got.endswith("…") or i == len(shown) - 1))
               for i, (got, line) in enumerate(zip(shown, whole.split("\n"))))


def own_lines(text: str) -> str:
    """A chunk's text without the request it quotes (its first line, "User: ...")."""
    if text.startswith("User: "):
        _, nl, rest = text.partition("\n")
        return rest if nl else ""
    return text


def compose_turn(texts: Sequence[str], query: str, counter: TokenCounter, budget: int,
                 request_tokens: int = 40, min_part: int = 24) -> tuple[str, int]:
    """One turn's text from its chunks' ``texts`` (best first), within ``budget`` tokens:
    the request once (the first "User:" line among them, cut to ``request_tokens``),
    then each chunk's own lines in that order while they fit; the first that no longer
    fits gives its ``excerpt`` in the room left (when at least ``min_part`` tokens).
    Returns the text and how many chunks it draws on."""
    request = next((t.partition("\n")[0] for t in texts if t.startswith("User: ")), "")
    if request:
        cut = counter.truncate(request, request_tokens)
        request = cut if cut == request else cut.rstrip() + " …"
    parts = [request] if request else []
    used = counter.count(request) if request else 0
    drawn = 0
    for text in texts:
        own = own_lines(text).strip("\n")
        if not own.strip():
            drawn += 1
            continue
        size = counter.count(own) + (1 if parts else 0)
        if used + size <= budget:
            parts.append(own)
            used += size
            drawn += 1
            continue
        room = budget - used - 1
        if room >= min_part:
            parts.append(excerpt(own, query, counter, room))
            drawn += 1
        break
    out = "\n".join(parts)
    while counter.count(out) > budget:  # joins can merge tokens: never past the budget
        out = counter.truncate(out, budget)
    return out, drawn
