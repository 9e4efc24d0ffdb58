"""Which chunk of a session answers what the question asks: the question's shape says
which role it wants, and recall prefers the chunks of that role.

A question about a past session asks for one part of it: what came of the work (the
session's closing summary), what a tool showed (a call's result), which command ran or
which tool was used (the call itself). Fusion and the transcript profile find the
session well, but within it they rank by the words the question shares with each
chunk, and every chunk of a turn quotes its request. So each question is read for:

- ``ending``: it asks what came of the work ("in the end", "how did it end", "what
  came of"): the session's closing summary (its last reply) is wanted;
- ``output``: it asks what a run showed or returned ("what did the test run report",
  "which case failed", "what error did it hit", "how long did it take"): a call with
  its result, the whole output, or a code block of a reply (the output it quotes);
- ``call``: it asks how something was done, which command or which argument ("how did
  we check", "how was it pushed", "which command", "which paths did we stage"; not "what
  did we add", whose answer is as often a reply): a call, or its input;
- a tool it names ("which skill did I launch", "what did I search online"): the
  calls of that tool (its name's words, or the words ``TOOL_WORDS`` gives it);
- ``cause``: it asks why something failed ("why did lint fail", "what was wrong with",
  "what made it hang"): the chunk whose own assistant words say a cause ("the issue
  is", "failed because", "there it is": a reply, the reasoning or a call's reason, not the
  request it quotes nor a tool's output) is wanted: the diagnosis after an error,
  rather than the error itself.

Each chunk of such a role gets ``TurnRoleConfig``'s bonus for it added to its rerank
score (never more than one bonus per kind of role).

And each of a session's words is read once: a reply and every tool call made after it
quote the same assistant words (a call's chunk leads with them as why it ran), so they
share those words' match to the question and come up together, one slot each, above
the rest of the session. ``repeat_penalties`` lowers each chunk after the first that
leads with the same words (``said``) by ``TurnRoleConfig.repeat_penalty`` for every
one above it: the next best different chunk (another call's result, another turn) is
read before the second copy (off by default: it did not carry over to a second question
set, docs/tuning.md).

And a question that opens with what was going on and then asks ("When the analytics
setup was timed stage by stage, how long did closing the client take?": ``context_and_ask``)
restates the turn's request in its context, which every chunk of that turn quotes or
answers alike; the ask is what one of them holds. ``ask_shortfalls`` lowers each chunk of
a turn by how much less it leans to the ask (its similarity to the ask less its similarity
to the context) than the turn's chunk that leans most (``TurnRoleConfig.ask_weight``; off
by default: docs/tuning.md). Pure functions of plain data.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from engine.retrieval.config import TurnRoleConfig
from engine.retrieval.lexicon import asks_shown, commands_of, named_tools


@dataclass(frozen=True)
class RoleChunk:
    """What the roles read of a ranked chunk."""

    kind: str
    session: str | None
    ordinal: int
    tool: str | None = None
    part: str | None = None  # "input", "output" or "request" for a part of a call/request
    diagnosis: bool = False  # its own assistant words say a cause (``assistant_words``)
    commands: frozenset[str] = frozenset()  # a shell call's programs (``lexicon.commands_of``)


# a reply's code block (engine.recall.chunks.SESSION_CODE): where a reply quotes a run's output
QUOTED_OUTPUT = "session_code"


def role_bonuses(query: str, chunks: list[RoleChunk], cfg: TurnRoleConfig) -> list[float]:
    """Each chunk's bonus for the roles the question asks for (0 when it asks none).
    The closing summary is its session's last reply among ``chunks`` (a whole reply,
    not a request stored whole)."""
    if not cfg.on or not chunks:
        return [0.0] * len(chunks)
    asks = cfg.asks(query)
    named = (named_tools(query, {c.tool for c in chunks if c.tool}) if cfg.named_bonus
             else set())
    last: dict[str, int] = {}
    if asks.get("ending") and cfg.ending_bonus:
        for c in chunks:
            if c.kind == "turn_pair" and c.part is None and c.session is not None:
                last[c.session] = max(last.get(c.session, c.ordinal), c.ordinal)
    out = []
    for c in chunks:
        bonus = 0.0
        tool = c.kind == "tool"
        if c.session is not None and last.get(c.session) == c.ordinal and c.kind == "turn_pair":
            bonus += cfg.ending_bonus
        if asks.get("output") and (tool and c.part in (None, "output")
                                   or c.kind == QUOTED_OUTPUT):
            bonus += cfg.output_bonus
        if asks.get("call") and tool and c.part in (None, "input"):
            bonus += cfg.call_bonus
        if tool and c.tool in named and c.part in (None, "input"):
            bonus += cfg.named_bonus
        if asks.get("cause") and c.diagnosis:
            bonus += cfg.cause_bonus
        if cfg.shown_bonus and c.commands and asks_shown(query, c.commands):
            bonus += cfg.shown_bonus
        out.append(bonus)
    return out


REPLY = "Assistant: "  # a reply's, or a call's reason's, line (engine.recall.chunks)
SAID_CHARS = 60  # the words compared: a call quotes its reason cut to 60 tokens (chunks)


def said(kind: str, text: str) -> str | None:
    """The assistant words ``text`` leads with, flattened and cut to ``SAID_CHARS``: of a
    reply ("User: ...\nAssistant: <reply>") its start, of a tool call ("...Assistant:
    <why>\nTool Bash: ...") the words before the call; None for a chunk that quotes no
    reply (a part, a continuation, reasoning, code)."""
    if text.startswith("User: "):  # the request it quotes, one line
        text = text.partition("\n")[2]
    if not text.startswith(REPLY):
        return None
    body = text[len(REPLY):]
    if kind == "tool":
        body = body.split("\nTool ", 1)[0]
    words = " ".join(body.split()).rstrip("…").rstrip()
    return words[:SAID_CHARS] or None


def repeat_penalties(chunks: Sequence[tuple[str | None, str | None]], penalty: float
                     ) -> list[float]:
    """For ``chunks`` (each its session and ``said`` words, best first): ``penalty`` times
    the number of chunks above it of the same session that lead with the same words."""
    seen: dict[tuple[str | None, str], int] = {}
    out = []
    for session, words in chunks:
        if words is None or not penalty:
            out.append(0.0)
            continue
        n = seen.get((session, words), 0)
        seen[(session, words)] = n + 1
        out.append(penalty * n)
    return out


SHELLS = frozenset({"Bash", "shell", "exec_command", "user shell"})


def call_commands(kind: str, text: str, tool: str | None, part: str | None
                  ) -> frozenset[str]:
    """The programs a shell call's chunk ran (its "Tool Bash: <command>" line); none for
    another tool, a part of a call, or any other chunk."""
    if kind != "tool" or part is not None or tool not in SHELLS:
        return frozenset()
    head = f"\nTool {tool}: "
    at = text.find(head)
    if at < 0 and text.startswith(head[1:]):
        at, head = 0, head[1:]
    if at < 0:
        return frozenset()
    line = text[at + len(head):].split("\nResult", 1)[0]
    return commands_of(line)


def own_text(text: str) -> str:
    """A chunk's own lines: its text without the request it quotes ("User: ..."; a chunk
    that holds a request whole is its own)."""
    if text.startswith("User: "):
        return text.partition("\n")[2]
    return text


def assistant_words(kind: str, text: str, part: str | None = None) -> str:
    """The assistant's own words in a chunk: a reply's, the reasoning's, a call's reason
    (its "Assistant:" line); "" for a part of a call or request, code, or a call with no
    reason (a tool's output is not the assistant's words)."""
    if part is not None or kind not in ("turn_pair", "thinking", "tool"):
        return ""
    body = own_text(text)
    if not body.startswith("Assistant"):
        return ""
    return body.split("\nTool ", 1)[0] if kind == "tool" else body


# a question's ask after a context clause: ", what/how/why/did ... ?" ends it (general English)
_ASK = re.compile(r",\s+((?:what|which|how|why|where|who|whose|when|did|do|does|was|were|is|"
                  r"are|had|has|have|could|can|would|should)\b[^,]*)$", re.IGNORECASE)


def context_and_ask(query: str) -> tuple[str, str] | None:
    """A question that opens with a context clause, split: (the context, the ask), as in
    "After the fix to the wrappers, how were both scripts checked?" -> ("After the fix to
    the wrappers", "how were both scripts checked"); None for one that does not."""
    text = query.strip().rstrip("?!. ")
    m = _ASK.search(text)
    if m is None:
        return None
    context = text[: m.start()].strip().rstrip(",").strip()
    return (context, m.group(1).strip()) if context else None


def ask_shortfalls(groups: Sequence[Hashable | None], leans: Sequence[float | None],
                   weight: float) -> list[float]:
    """For chunks each with its turn (``groups``; None: not compared, never lowered) and
    its lean to the question's ask (``leans``: its similarity to the ask less its
    similarity to the context; None: unknown, not compared): ``weight`` times how much
    less it leans than the chunk of its turn that leans most."""
    best: dict[Hashable, float] = {}
    for g, lean in zip(groups, leans, strict=True):
        if g is not None and lean is not None:
            best[g] = max(best.get(g, lean), lean)
    return [weight * (best[g] - lean) if weight and g is not None and lean is not None
            else 0.0 for g, lean in zip(groups, leans, strict=True)]
