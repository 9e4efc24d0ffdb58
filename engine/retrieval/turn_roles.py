"""Which chunk of a session answers what the question asks: the question's shape says
which role it wants, and recall prefers the chunks of that role.

A question about a past session asks for one part of it: what came of the work (the
session's closing summary), what a tool showed (a call's result), which command ran or
which tool was used (the call itself). Fusion and the transcript profile find the
session well, but within it they rank by the words the question shares with each
chunk, and every chunk of a turn quotes its request. So each question is read for:

- ``ending``: it asks what came of the work ("in the end", "how did it end", "what
  came of"): the session's closing summary (its last reply) is wanted;
- ``output``: it asks what a tool showed or returned ("what did it print", "the
  output", "what did git say"): a call with its result, or the whole output;
- ``call``: it asks which command, search or edit ("which command", "how did I run"):
  a call;
- a tool it names ("which skill did I launch", "what did I search online"): the
  calls of that tool (its name's words, or the words ``TOOL_WORDS`` gives it).

Each chunk of such a role gets ``TurnRoleConfig``'s bonus for it added to its rerank
score (never more than one bonus per kind of role).

And each of a session's words is read once: a reply and every tool call made after it
quote the same assistant words (a call's chunk leads with them as why it ran), so they
share those words' match to the question and come up together, one slot each, above
the rest of the session. ``repeat_penalties`` lowers each chunk after the first that
leads with the same words (``said``) by ``TurnRoleConfig.repeat_penalty`` for every
one above it: the next best different chunk (another call's result, another turn) is
read before the second copy. Pure functions of plain data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.errors import ConfigError


def _words(*items: str) -> tuple[str, ...]:
    return tuple(w for item in items for w in item.split())


# Words a user says for the tools of Claude Code and Codex besides their names' own
# words (their documentation's verbs for what each tool does). Hand-written.
TOOL_WORDS: Mapping[str, tuple[str, ...]] = {
    "Bash": ("command", "shell", "terminal", "ran", "run"),
    "shell": ("command", "terminal", "ran", "run"),
    "exec_command": ("shell", "terminal", "ran", "run"),
    "user shell": ("command", "terminal", "ran", "run"),
    "Grep": ("search", "searched", "grep", "grepped", "looked"),
    "Glob": ("search", "searched", "find", "found", "files"),
    "Read": ("read", "opened", "looked"),
    "Edit": ("edit", "edited", "changed", "change", "modified", "replaced"),
    "MultiEdit": ("edit", "edited", "changed", "modified"),
    "Write": ("wrote", "write", "created", "file"),
    "apply_patch": ("edit", "edited", "changed", "patch", "patched", "created"),
    "WebSearch": ("online", "web", "searched", "googled", "internet"),
    "web_search": ("online", "web", "searched", "googled", "internet"),
    "WebFetch": ("fetched", "downloaded", "page", "url"),
    "Task": ("agent", "agents", "subagent", "delegated"),
    "Skill": ("skill", "launched", "slash"),
    "TodoWrite": ("todo", "todos", "plan"),
    "update_plan": ("plan", "todo"),
}


@dataclass(frozen=True)
class TurnRoleConfig:
    """The question shapes (regex fragments matched as whole words, case-insensitive)
    and the bonus each role's chunks get. Cues: written from how English asks about an
    outcome, about what a tool printed and about a command (general usage, not taken
    from the benchmark's questions). Bonuses (added to a rerank score, a transcript chunk's
being at most 1): their origin is at ``RecallConfig.turn_roles``."""

    ending: tuple[str, ...] = (*_words(
        r"outcome\w* ended eventually finally final conclu\w* verdict"), r"came\s+of",
        r"come\s+of", r"in\s+the\s+end", r"end\s+up", r"ended\s+up", r"at\s+the\s+end",
        r"how\s+did\s+(?:it|that|this|the\s+\w+)\s+(?:end|go|turn\s+out)",
        r"turn(?:ed)?\s+out", r"where\s+did\s+(?:we|i|it)\s+(?:land|leave)")
    output: tuple[str, ...] = (*_words(
        r"output\w* print\w* printed returned return\w* stdout stderr log\w* say said",
        r"says showed shown report\w* listed exist\w* existed"),
        r"what\s+did\s+\w+\s+show", r"error\s+message\w*")
    call: tuple[str, ...] = _words(
        r"command\w* invocation invok\w* ran run flag\w* argument\w* options? search\w*",
        r"query queried grep\w* edit\w* launch\w*")
    ending_bonus: float = 0.05
    output_bonus: float = 0.0
    call_bonus: float = 0.0
    named_bonus: float = 0.05
    # Subtracted from a chunk's score for each better chunk of its session that leads
    # with the same assistant words (``repeat_penalties``). Dev split, `python -m
    # bench.recall_quality --split dev` ranks as a scratch A/B on one engine (2026-11-28,
    # 10,613 chunks, load 3-5): 0 / 0.01 / 0.02 / 0.05 / 0.1 / 1: hit@5 0.647 / 0.647 /
    # 0.655 / 0.655 / 0.655 / 0.655, hit@8 (the agent's k) 0.697 / 0.714 / 0.714 / 0.714 /
    # 0.714 / 0.714, hit@10 0.714 / 0.714 / 0.714 / 0.714 / 0.723 / 0.723; at 0.1 23
    # questions' answers moved up and none down (0.1 and 1 order the same).
    repeat_penalty: float = 0.1
    _compiled: Mapping[str, re.Pattern[str]] = field(default_factory=dict, compare=False,
                                                     repr=False)

    def __post_init__(self) -> None:
        for name in ("ending_bonus", "output_bonus", "call_bonus", "named_bonus",
                     "repeat_penalty"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"recall.turn_roles.{name} must be in 0..1",
                                  key=f"recall.turn_roles.{name}")
        compiled = {name: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
                    for name, words in (("ending", self.ending), ("output", self.output),
                                        ("call", self.call)) if words}
        object.__setattr__(self, "_compiled", compiled)

    def asks(self, query: str) -> dict[str, bool]:
        """Which of ending / output / call the question asks about."""
        return {name: rx.search(query) is not None for name, rx in self._compiled.items()}

    def wanted(self, query: str, tools: set[str]) -> bool:
        """Whether the question asks for a role that has a bonus (``tools``: the tools
        of the chunks ranked); when not, no chunk's score changes."""
        asks = self.asks(query)
        return bool((asks.get("ending") and self.ending_bonus)
                    or (asks.get("output") and self.output_bonus)
                    or (asks.get("call") and self.call_bonus)
                    or (self.named_bonus and named_tools(query, tools)))

    @property
    def on(self) -> bool:
        return any((self.ending_bonus, self.output_bonus, self.call_bonus, self.named_bonus))


_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_QWORD = re.compile(r"[a-z]+")


def tool_words(tool: str) -> frozenset[str]:
    """The words that name ``tool``: its name's own ("WebSearch": web, search;
    "exec_command": exec, command) and ``TOOL_WORDS``'s. An MCP tool
    (``mcp__server__name``) is named by its last part's words."""
    name = tool.rsplit("__", 1)[-1]
    own = {w.lower() for w in _SPLIT.findall(name) if len(w) >= 3}
    return frozenset(own | set(TOOL_WORDS.get(tool, ())))


def named_tools(query: str, tools: set[str]) -> set[str]:
    """The ``tools`` whose words the question uses."""
    asked = set(_QWORD.findall(query.lower()))
    return {t for t in tools if tool_words(t) & asked}


@dataclass(frozen=True)
class RoleChunk:
    """What the roles read of a ranked chunk."""

    kind: str
    session: str | None
    ordinal: int
    tool: str | None = None
    part: str | None = None  # "input", "output" or "request" for a part of a call/request


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
        if asks.get("output") and tool and c.part in (None, "output"):
            bonus += cfg.output_bonus
        if asks.get("call") and tool and c.part in (None, "input"):
            bonus += cfg.call_bonus
        if tool and c.tool in named and c.part in (None, "input"):
            bonus += cfg.named_bonus
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


def repeat_penalties(chunks: list[tuple[str | None, str | None]], penalty: float
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
