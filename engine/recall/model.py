"""Normalized transcript data, and the file-reading helpers both parsers share.

A transcript parser reads a JSONL file written by a coding agent and returns a
``ParseResult``: what it learned about the session (``SessionInfo``), the
events it found (``TranscriptEvent``), how many lines it could not use, where
it stopped, and the state it needs to resume from there when the file grows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

from engine.errors import REJECT_UNREADABLE, FileRejected
from engine.recall.spans import strip_private

AgentName = Literal["claude", "codex"]
AGENTS: tuple[str, ...] = ("claude", "codex")
ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")
EVENT_TYPES: tuple[str, ...] = ("text", "thinking", "tool_call", "tool_result", "summary")
# Why a tool call or a turn did not go as planned. Only the kinds in
# REAL_FAILURE_KINDS count as failures: a user declining a tool ("rejected")
# and a harness refusing a malformed call before running it ("tool_use_error")
# are recorded but are not the agent's or the code's failure; nor is a call whose result
# the transcript never recorded ("no_result": the next request came first), nor one
# whose result had not come where the file ended ("pending": the session stopped there,
# or the agent is still running it; see ``ParseResult.pending``).
ERROR_KINDS: tuple[str, ...] = (
    "tool_error", "nonzero_exit", "rejected", "tool_use_error", "interrupted", "aborted",
    "no_result", "pending",
)
REAL_FAILURE_KINDS = frozenset({"tool_error", "nonzero_exit", "interrupted", "aborted"})

USER_SHELL = "user shell"  # the tool of a shell command the user ran ("!cmd"), not the agent
HEAD_BYTES = 4096  # bytes hashed to notice a rewritten file
STATE_VERSION = 1


@dataclass(frozen=True)
class SessionInfo:
    """One transcript's session: who, where, on which branch, with which model."""

    session_id: str
    project: str | None  # folder name of the working directory (the repository)
    cwd: str | None
    branch: str | None  # latest git branch seen in the session
    model: str | None  # latest model seen in the session
    started_at: float | None  # epoch seconds of the first timestamped line
    agent: str  # "claude" | "codex"
    is_subagent: bool = False
    parent_session: str | None = None
    title: str | None = None  # a trusted session summary, when the file has one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionInfo:
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__}
        return cls(**fields)


@dataclass(frozen=True)
class TranscriptEvent:
    """One normalized event of a transcript.

    ``ref`` identifies the event inside its session and never changes when the
    file grows (a line uuid plus block index for Claude, the line's byte offset
    for Codex); chunk keys are built from it and from tool ids. ``prompt`` is
    the user request the event belongs to (carried across incremental parses),
    so that every chunk can say what was being asked. ``model`` and ``branch``
    are the values in force at this point of the session.
    """

    role: str  # one of ROLES
    type: str  # one of EVENT_TYPES
    text: str
    ref: str
    offset: int  # byte offset of the source line in the file
    timestamp: float | None = None
    message_id: str | None = None
    uuid: str | None = None
    tool: str | None = None
    tool_input: str | None = None  # JSON text, or the raw string when it is not JSON
    tool_use_id: str | None = None
    is_error: bool = False
    error_kind: str | None = None  # one of ERROR_KINDS
    exit_code: int | None = None
    prompt: str | None = None
    model: str | None = None
    branch: str | None = None
    intent: str | None = None  # of a tool result: the assistant's words just before the call
    turn: int | None = None  # which request of the session it answers (1, 2, ...)

    @property
    def failure(self) -> bool:
        """True when the event records a real failure (see REAL_FAILURE_KINDS)."""
        return self.error_kind in REAL_FAILURE_KINDS


@dataclass(frozen=True)
class ParseResult:
    """What one parse of a transcript (whole, or from an offset) produced.

    ``end_offset`` points just after the last complete line read (see
    ``read_complete_lines``: a last line with no newline counts when it is a whole
    record); a trailing partial line is left for the next parse. ``state`` is JSON-serializable and
    is passed back as ``state=`` with ``start_offset=end_offset`` to continue.
    It holds fragments of user text (the pending request, pending tool inputs),
    so it must be stored like content: encrypted, after ``apply_privacy``.

    ``pending``: the calls still waiting for their result at ``end_offset`` (the
    file's last call, when the session stopped there or the agent is running it),
    each as a result event of error kind ``"pending"`` (a running command's output so
    far as its text). They are not ``events``: the state still holds these calls, so
    the parse that reads their result (or the next request) emits them for good, and
    a sync stores these apart, replacing them at each later sync of the file.
    """

    info: SessionInfo
    events: tuple[TranscriptEvent, ...]
    bad_lines: int
    skipped_lines: int
    end_offset: int
    head_hash: str
    state: dict[str, Any] = field(default_factory=dict)
    pending: tuple[TranscriptEvent, ...] = ()


# ---------------------------------------------------------------- file helpers


def read_complete_lines(path: Path, start_offset: int) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines from ``start_offset`` on, each with its byte offset.

    Returns the lines and the offset just after the last one taken. A line is
    complete when a newline ends it, or when it is the file's last line, has no
    newline, and parses as a whole JSON object: many agents (and copies of
    their files) leave the last record unterminated. Bytes after the last
    newline that do not parse (a record still being written) are not consumed;
    the next read starts at them again.

    An unterminated record taken now is never taken twice: the next read starts
    just after it, so a newline the writer appends later reads as an empty line
    (skipped), and bytes appended to that same line (nothing valid can continue
    a whole JSON object but blanks) read as a line of their own: blanks are
    skipped, anything else is a line of its own, a record if it parses, else a
    bad line.
    """
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, start_offset))
            data = fh.read()
    except OSError as exc:
        raise FileRejected(str(path), REJECT_UNREADABLE) from exc
    last_nl = data.rfind(b"\n")
    lines: list[tuple[int, bytes]] = []
    pos = 0
    while pos <= last_nl:
        nl = data.index(b"\n", pos)
        lines.append((start_offset + pos, data[pos:nl]))
        pos = nl + 1
    tail = data[last_nl + 1:]
    if tail.strip() and _whole_record(tail):
        lines.append((start_offset + last_nl + 1, tail))
        return lines, start_offset + len(data)
    return lines, start_offset + last_nl + 1


def _whole_record(raw: bytes) -> bool:
    """True when ``raw`` is one whole JSON object (a record nobody is still writing)."""
    if not raw.rstrip().endswith(b"}"):  # cheap: a record cut mid-write rarely ends so
        return False
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError: a cut
        return False  # inside a multi-byte character


def head_hash(path: Path, end_offset: int) -> str:
    """sha256 of the file's first ``min(HEAD_BYTES, end_offset)`` bytes.

    Only the part already consumed is hashed, so a small file that grows keeps
    its hash and a later sync can append instead of re-reading it.
    """
    n = min(HEAD_BYTES, max(0, end_offset))
    try:
        with path.open("rb") as fh:
            data = fh.read(n)
    except OSError as exc:
        raise FileRejected(str(path), REJECT_UNREADABLE) from exc
    return hashlib.sha256(data).hexdigest()


def load_json_line(raw: bytes) -> Any:
    """Decode one JSONL line; raises ValueError when it is not valid JSON."""
    return json.loads(raw.decode("utf-8", errors="replace"))


def parse_timestamp(value: Any) -> float | None:
    """ISO-8601 text or epoch seconds/milliseconds -> epoch seconds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:  # transcripts write UTC
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def project_from_cwd(cwd: str | None) -> str | None:
    """The project name for a working directory: its folder name.

    A git worktree kept in ``<repo>/.worktrees/<name>`` belongs to ``<repo>``.
    """
    if not cwd:
        return None
    pure = PureWindowsPath(cwd) if ("\\" in cwd and "/" not in cwd) else PurePosixPath(cwd)
    parts = [p for p in pure.parts if p not in ("/", "\\")]
    if not parts:
        return None
    if len(parts) >= 3 and parts[-2] == ".worktrees":
        return parts[-3]
    return parts[-1] or None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def tail_text(text: str, limit: int) -> str:
    """The last ``limit`` characters at most, cut at whitespace so no token is split."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    space = cut.find(" ")
    return cut[space + 1:] if 0 <= space < limit // 2 else cut


def cap_text(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at whitespace so no token is split."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    return cut[:space] if space > limit // 2 else cut


# ------------------------------------------------------------------- detection

_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                          "compacted"})
_CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot",
                           "progress", "queue-operation"})


def detect_agent(path: Path, max_lines: int = 50) -> AgentName | None:
    """Which agent wrote this transcript, from its first lines; None if unknown."""
    try:
        with path.open("rb") as fh:
            data = fh.read(256 * 1024)
    except OSError:
        return None
    for raw in data.split(b"\n")[:max_lines]:
        if not raw.strip():
            continue
        try:
            obj = load_json_line(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind in _CODEX_TYPES and isinstance(obj.get("payload"), dict):
            return "codex"
        if "sessionId" in obj or kind in _CLAUDE_TYPES:
            return "claude"
    return None


# -------------------------------------------------------------- parser driver

MAX_PROMPT_CHARS = 4000  # the pending request kept in state
MAX_TOOL_INPUT_CHARS = 4000  # a pending tool call's input kept in state
MAX_PENDING_TOOLS = 512
MAX_INTENT_CHARS = 300  # the end of the assistant's words before a tool call (its intent)
# A line whose shape a parser cannot use, or nested past Python's recursion limit
# (json.loads raises RecursionError on it): skipped and counted, never a stopped sync.
_LINE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError,
                OverflowError)


def _cap_input(tool_input: str) -> str:
    """A tool input short enough to keep in state, still valid JSON when it was."""
    if len(tool_input) <= MAX_TOOL_INPUT_CHARS:
        return tool_input
    try:
        data = json.loads(tool_input)
    except ValueError:
        return cap_text(tool_input, MAX_TOOL_INPUT_CHARS)
    if isinstance(data, dict):
        each = max(200, MAX_TOOL_INPUT_CHARS // max(1, len(data)))
        data = {k: cap_text(v, each) if isinstance(v, str) else v for k, v in data.items()}
        shorter = json.dumps(data, ensure_ascii=False)
        if len(shorter) <= MAX_TOOL_INPUT_CHARS:
            return shorter
    return cap_text(tool_input, MAX_TOOL_INPUT_CHARS)


class LineParser:
    """Shared driver of the transcript parsers.

    Reads the complete lines after ``start_offset``, hands each JSON object to
    ``handle_line`` and collects events. A line that is not JSON, not an
    object, or whose shape ``handle_line`` rejects (returns False or raises a
    lookup/type error) is counted in ``bad_lines`` and skipped; a line that is
    understood but yields no event is counted in ``skipped_lines``.
    Subclasses keep everything they need to resume in ``self.state``.
    """

    agent: str = ""

    def __init__(self, path: Path, state: dict[str, Any] | None) -> None:
        self.path = path
        if (isinstance(state, dict) and state.get("v") == STATE_VERSION
                and state.get("agent") == self.agent):
            self.state: dict[str, Any] = json.loads(json.dumps(state))  # deep, JSON-clean copy
        else:
            self.state = self.fresh_state()
        self.events: list[TranscriptEvent] = []
        self.ts: float | None = None  # timestamp of the line being handled
        self.prompt_key = "prompt"  # state slot of the request the current line answers

    def fresh_state(self) -> dict[str, Any]:
        return {"v": STATE_VERSION, "agent": self.agent, "info": {}, "prompt": None,
                "model": None, "branch": None, "pending": {}}

    def handle_line(self, obj: dict[str, Any], offset: int) -> bool:  # pragma: no cover
        """Use one line; False when its shape is not what this format writes."""
        raise NotImplementedError

    def run(self, start_offset: int) -> ParseResult:
        lines, end = read_complete_lines(self.path, start_offset)
        bad = skipped = 0
        for offset, raw in lines:
            if not raw.strip():
                skipped += 1
                continue
            try:
                obj = load_json_line(raw)
            except (ValueError, RecursionError):
                bad += 1
                continue
            if not isinstance(obj, dict):
                bad += 1
                continue
            before = len(self.events)
            try:
                self.ts = parse_timestamp(obj.get("timestamp"))
                info = self.state["info"]
                if self.ts is not None and info.get("started_at") is None:
                    info["started_at"] = self.ts
                ok = self.handle_line(obj, offset)
            except _LINE_ERRORS:
                ok = False
            if not ok:
                del self.events[before:]
                bad += 1
            elif len(self.events) == before:
                skipped += 1
        return ParseResult(info=self.build_info(), events=tuple(self.events), bad_lines=bad,
                           skipped_lines=skipped, end_offset=end,
                           head_hash=head_hash(self.path, end), state=self.state,
                           pending=tuple(self.pending_events()))

    def pending_events(self) -> list[TranscriptEvent]:
        """The calls still waiting for their result, each as a result event of kind
        ``"pending"``: what ``ParseResult.pending`` holds. Built from the state alone
        (it changes nothing), so a file read whole or piece by piece gives the same."""
        return [self.pending_event(call_id, as_dict(call))
                for call_id, call in self.state["pending"].items()]

    def pending_event(self, call_id: str, call: dict[str, Any]) -> TranscriptEvent:
        """One pending call as a result event: at the call's own line, with the request
        of its turn (none when a later request came since: the state keeps only the
        current one)."""
        slot = "side_prompt" if call.get("side") else "prompt"
        turn_slot = "side_turn" if call.get("side") else "turn"
        turn = self.state.get(turn_slot)
        asked = call.get("turn", turn)  # a call remembered before "turn" was kept: this one
        at, ts = call.get("at"), call.get("ts")
        return TranscriptEvent(
            role="tool", type="tool_result", text=as_str(call.get("out")) or "",
            ref=f"{call_id}:pending",
            offset=at if isinstance(at, int) else 0,
            timestamp=ts if isinstance(ts, (int, float)) else None,
            tool=as_str(call.get("name")), tool_input=as_str(call.get("input")),
            tool_use_id=call_id, error_kind="pending",
            prompt=self.state.get(slot) if asked == turn else None,
            model=self.state.get("model"), branch=self.state.get("branch"),
            intent=as_str(call.get("intent")), turn=asked if isinstance(asked, int) else None)

    def build_info(self) -> SessionInfo:
        info = self.state["info"]
        cwd = info.get("cwd")
        return SessionInfo(
            session_id=info.get("session_id") or self.path.stem,
            project=project_from_cwd(cwd), cwd=cwd, branch=self.state.get("branch"),
            model=self.state.get("model"), started_at=info.get("started_at"), agent=self.agent,
            is_subagent=bool(info.get("is_subagent")), parent_session=info.get("parent_session"),
            title=info.get("title"),
        )

    # helpers for subclasses

    def emit(self, role: str, type_: str, text: str, ref: str, offset: int,
             **fields: Any) -> TranscriptEvent:
        fields.setdefault("timestamp", self.ts)
        fields.setdefault("prompt", self.state.get(self.prompt_key))
        fields.setdefault("turn", self.state.get(self._turn_key))
        event = TranscriptEvent(role=role, type=type_, text=text, ref=ref, offset=offset,
                                model=self.state.get("model"), branch=self.state.get("branch"),
                                **fields)
        self.events.append(event)
        if role == "assistant" and type_ in ("text", "thinking") and text.strip():
            # private spans go before the cut: a cut could leave half a span unrecognized
            said = " ".join(strip_private(text).split())
            self.state[self._intent_key] = tail_text(said, MAX_INTENT_CHARS) or None
        return event

    @property
    def _turn_key(self) -> str:
        """State slot of the number of the current request (its turn)."""
        return "side_turn" if self.prompt_key == "side_prompt" else "turn"

    @property
    def _intent_key(self) -> str:
        """State slot of the assistant's latest words in the current request."""
        return "side_intent" if self.prompt_key == "side_prompt" else "intent"

    def remember_call(self, call_id: str, name: str | None, tool_input: str | None,
                      offset: int) -> None:
        pending: dict[str, Any] = self.state["pending"]
        pending[call_id] = {"name": name, "input": _cap_input(tool_input or ""), "ts": self.ts,
                            "out": "", "intent": self.state.get(self._intent_key),
                            "at": offset, "turn": self.state.get(self._turn_key)}
        if self.prompt_key == "side_prompt":
            pending[call_id]["side"] = True
        while len(pending) > MAX_PENDING_TOOLS:
            pending.pop(next(iter(pending)))

    def set_prompt(self, text: str) -> str:
        """Make ``text`` the request that following events answer; returns it as kept."""
        kept = cap_text(text, MAX_PROMPT_CHARS)
        self.state[self.prompt_key] = kept
        self.state[self._intent_key] = None  # a new request: nothing said toward it yet
        self.state[self._turn_key] = int(self.state.get(self._turn_key) or 0) + 1
        return kept
