"""OpenAI Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``) -> events.

Format notes that shaped this parser (versions 0.40 to 0.125):

- Every line is ``{timestamp, type, payload}``. ``session_meta`` names the
  session, cwd and git branch; ``turn_context`` the model in force.
- ``response_item`` lines are what the model saw and said: assistant
  ``message``s, ``reasoning`` (readable summary and/or ``encrypted_content``,
  which is skipped), ``function_call`` / ``custom_tool_call`` and their
  ``*_output``, ``web_search_call``. User-role items also carry injected
  context (environment, AGENTS.md, IDE state), so typed requests are taken
  from ``event_msg/user_message`` instead.
- Tool outputs are a JSON string ``{output, metadata: {exit_code}}`` (shell,
  up to 0.58), or plain text with a ``Process exited with code N`` header
  (unified exec, 0.104+), or plain words ("Plan updated", "patch rejected by
  user", "failed in sandbox ... exit code: 2").
- Unified exec may answer "Process running with session ID N": the command's
  outcome then arrives through later ``write_stdin`` polls or an
  ``exec_command_end`` event; they are folded into the original call.
- ``turn_aborted`` marks an interrupted turn. Some rollouts are sanitized
  upstream, so names and arguments may be arbitrary text, not JSON.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from engine.recall.model import (
    USER_SHELL,
    LineParser,
    ParseResult,
    as_dict,
    as_str,
)

_IDE_REQUEST = "## My request for Codex:"
# The user's own shell command ("!cmd" in the TUI), written as a user message of its own
# with the command and its result; stored as a call of the user's (tool USER_SHELL).
_SHELL_FRAGMENT = re.compile(r"<user_shell_command>\s*<command>\n?(.*?)\n?</command>\s*"
                         r"<result>\n?(.*?)\n?</result>", re.DOTALL)
_SHELL_EXIT = re.compile(r"^Exit code:? (-?\d+)\s*$", re.MULTILINE)
_SHELL_HEADER = re.compile(r"^(?:Exit code:? -?\d+|Duration: .*|Output:)\s*$\n?", re.MULTILINE)
_INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
                      "<user_shell_command>", "<permissions instructions>")
_INJECTED_KINDS = ("environment_context", "user_instructions")
_EXITED = re.compile(r"^Process exited with code (-?\d+)\s*$", re.MULTILINE)
_RUNNING = re.compile(r"^Process running with session ID (\d+)\s*$", re.MULTILINE)
_OUTPUT_HEADER = re.compile(r"^Output:\n?", re.MULTILINE)
_SANDBOX_EXIT = re.compile(r"exit code:? (-?\d+)")
_HARNESS_FAILED = re.compile(r"^[\w ]{1,40} failed: ")
_SEARCH_TOOLS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
MAX_PROCS = 256
MAX_CLOSED = 256
MAX_OUT_CHARS = 32000  # a running command's output kept in state between polls


def parse_codex(path: Path, *, start_offset: int = 0,
                state: dict[str, Any] | None = None) -> ParseResult:
    """Parse a Codex rollout from ``start_offset`` (0: the whole file).

    Same contract as ``parse_claude``: resume with the previous ``state`` and
    ``end_offset``; malformed lines are counted, never raised.
    """
    return _CodexParser(Path(path), state).run(start_offset)


def _clean_request(message: str) -> str:
    """The typed request inside a user message, without IDE context."""
    if _IDE_REQUEST in message:
        message = message.split(_IDE_REQUEST, 1)[1]
    message = message.strip()
    return "" if message.startswith(_INJECTED_PREFIXES) else message


def _cap_out(text: str) -> str:
    if len(text) <= MAX_OUT_CHARS:
        return text
    return text[: MAX_OUT_CHARS // 4] + "\n…\n" + text[-(MAX_OUT_CHARS * 3 // 4):]


def _decode_output(output: Any) -> tuple[str, int | None, str | None, str | None]:
    """(text, exit_code, running process id, error_kind) of one tool output."""
    if isinstance(output, dict):
        text = as_str(output.get("content")) or as_str(output.get("output")) or ""
        kind = "tool_error" if output.get("success") is False else None
        return text, None, None, kind
    if isinstance(output, list):
        parts = [as_str(as_dict(p).get("text")) or "" for p in output]
        return "\n".join(p for p in parts if p), None, None, None
    text = output if isinstance(output, str) else ""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            meta = as_dict(data.get("metadata"))
            code = meta.get("exit_code")
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            kind = "nonzero_exit" if exit_code not in (None, 0) else None
            return data["output"], exit_code, None, kind
    header = _OUTPUT_HEADER.search(text)
    head = text[: header.start()] if header else text
    exited, running = _EXITED.search(head), _RUNNING.search(head)
    if exited or running:
        body = text[header.end():] if header else ""
        exit_code = int(exited.group(1)) if exited else None
        kind = "nonzero_exit" if exit_code not in (None, 0) else None
        return body, exit_code, (running.group(1) if running and not exited else None), kind
    lowered = stripped.lower()
    if lowered.startswith("failed in sandbox"):
        code_match = _SANDBOX_EXIT.search(stripped)
        exit_code = int(code_match.group(1)) if code_match else None
        return text, exit_code, None, "nonzero_exit" if exit_code else "tool_error"
    if "rejected by user" in lowered and len(stripped) < 200:
        return text, None, None, "rejected"
    if lowered in ("aborted", "aborted by user"):
        return text, None, None, "interrupted"
    if _HARNESS_FAILED.match(stripped):
        return text, None, None, "tool_use_error"
    return text, None, None, None


def _command_text(tool_input: str | None) -> str:
    try:
        args = as_dict(json.loads(tool_input or ""))
    except ValueError:
        return ""
    command = args.get("cmd") or args.get("command")
    if isinstance(command, list):
        parts = [str(c) for c in command]
        return parts[2] if len(parts) >= 3 and parts[1] in ("-lc", "-c") else " ".join(parts)
    return command if isinstance(command, str) else ""


def _no_match(tool_input: str | None, exit_code: int | None, output: str) -> bool:
    """A search that found nothing (grep/rg exit 1, no output): not a failure."""
    if exit_code != 1 or output.strip():
        return False
    lexer = shlex.shlex(_command_text(tool_input), posix=True, punctuation_chars=True)
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes
        return False
    program = ""
    for i, token in enumerate(tokens):  # the last command of a pipeline or a list
        if i == 0 or tokens[i - 1] in ("|", "||", "&&", ";", "&"):
            program = token
    return program.rsplit("/", 1)[-1] in _SEARCH_TOOLS


def _find_parent(source: dict[str, Any]) -> str | None:
    for key, value in source.items():
        if "parent" in key and isinstance(value, str):
            return value
        if isinstance(value, dict):
            found = _find_parent(value)
            if found:
                return found
    return None


class _CodexParser(LineParser):
    agent = "codex"

    def fresh_state(self) -> dict[str, Any]:
        state = super().fresh_state()
        state.update(procs={}, stdin={}, closed=[])
        return state

    def handle_line(self, obj: dict[str, Any], offset: int) -> bool:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            return False
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "turn_context":
            model = as_str(payload.get("model"))
            if model:
                self.state["model"] = model
            cwd = as_str(payload.get("cwd"))
            if cwd and not self.state["info"].get("cwd"):
                self.state["info"]["cwd"] = cwd
        elif kind == "response_item":
            self._item(payload, offset)
        elif kind == "event_msg":
            self._event(payload, offset)
        elif kind == "compacted":
            message = as_str(payload.get("message")) or ""
            if message.strip():
                self.emit("system", "summary", message.strip(), f"@{offset}", offset)
        return True

    def _meta(self, payload: dict[str, Any]) -> None:
        info = self.state["info"]
        if info.get("session_id"):
            return
        info["session_id"] = as_str(payload.get("id"))
        info["cwd"] = as_str(payload.get("cwd")) or info.get("cwd")
        branch = as_str(as_dict(payload.get("git")).get("branch"))
        if branch and branch != "HEAD":
            self.state["branch"] = branch
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            info["is_subagent"] = True
            info["parent_session"] = _find_parent(source)

    # -------------------------------------------------------- response items

    def _item(self, payload: dict[str, Any], offset: int) -> None:
        kind = payload.get("type")
        ref = f"@{offset}"
        if kind == "message" and payload.get("role") == "user":
            content = payload.get("content")
            blocks = content if isinstance(content, list) else [{"text": content}]
            for block in blocks:
                said = as_str(as_dict(block).get("text")) or ""
                for n, match in enumerate(_SHELL_FRAGMENT.finditer(said)):
                    self._user_shell(match.group(1), match.group(2), f"{ref}:{n}", offset)
        elif kind == "message" and payload.get("role") == "assistant":
            content = payload.get("content")
            blocks = content if isinstance(content, list) else [{"text": content}]
            text = "\n".join(as_str(as_dict(b).get("text")) or "" for b in blocks).strip()
            if text:
                self.emit("assistant", "text", text, ref, offset,
                          message_id=as_str(payload.get("id")))
        elif kind == "reasoning":
            parts = [as_str(as_dict(s).get("text")) or "" for s in payload.get("summary") or []]
            content = payload.get("content")
            if isinstance(content, list):
                parts += [as_str(as_dict(c).get("text")) or "" for c in content]
            text = "\n\n".join(p.strip() for p in parts if p.strip())
            if text:  # encrypted-only reasoning has nothing readable
                self.emit("assistant", "thinking", text, ref, offset,
                          message_id=as_str(payload.get("id")))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(payload, kind, ref, offset)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(as_str(payload.get("call_id")), payload.get("output"), ref, offset)
        elif kind == "web_search_call":
            action = as_dict(payload.get("action"))
            self.emit("tool", "tool_result", as_str(payload.get("status")) or "", ref, offset,
                      tool="web_search", tool_input=json.dumps(action, ensure_ascii=False),
                      tool_use_id=as_str(payload.get("id")))

    def _user_shell(self, command: str, result: str, ref: str, offset: int) -> None:
        exited = _SHELL_EXIT.search(result)
        tool_input = json.dumps({"command": command.strip()}, ensure_ascii=False)
        call_id = f"shell{ref}"
        self.emit("user", "tool_call", "", ref, offset, tool=USER_SHELL, tool_input=tool_input,
                  tool_use_id=call_id)
        self.emit("tool", "tool_result", _SHELL_HEADER.sub("", result).strip("\n"), ref, offset,
                  tool=USER_SHELL, tool_input=tool_input, tool_use_id=call_id,
                  exit_code=int(exited.group(1)) if exited else None)

    def _call(self, payload: dict[str, Any], kind: str, ref: str, offset: int) -> None:
        call_id = as_str(payload.get("call_id")) or as_str(payload.get("id"))
        name = as_str(payload.get("name")) or ("shell" if kind == "local_shell_call" else None)
        raw = {"function_call": payload.get("arguments"), "custom_tool_call": payload.get("input"),
               "local_shell_call": payload.get("action")}[kind]
        args = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        if name == "write_stdin" and call_id:
            try:
                process = str(as_dict(json.loads(args)).get("session_id"))
            except ValueError:
                process = ""
            target = self.state["procs"].get(process)
            if target:  # a poll of a running command: its output belongs to that command
                polls = self.state["stdin"]
                polls[call_id] = target
                while len(polls) > MAX_PROCS:
                    polls.pop(next(iter(polls)))
                self.emit("assistant", "tool_call", "", ref, offset, tool=name, tool_input=args,
                          tool_use_id=call_id)
                return
        if call_id:
            self.remember_call(call_id, name, args, offset)
        self.emit("assistant", "tool_call", "", ref, offset, tool=name, tool_input=args,
                  tool_use_id=call_id)

    def _output(self, call_id: str | None, output: Any, ref: str, offset: int) -> None:
        text, exit_code, running, kind = _decode_output(output)
        pending: dict[str, Any] = self.state["pending"]
        target = self.state["stdin"].pop(call_id, None) if call_id else None
        if target is not None:
            call = pending.get(target)
            if kind == "tool_use_error":
                return  # the poll itself was refused
            if call is None:  # the command's end event closed it: what this poll read
                if text.strip():  # (the model saw it) is stored as the poll's own result;
                    # the command's outcome is its own chunk's, not counted twice
                    self.emit("tool", "tool_result", text, ref, offset, tool_use_id=call_id,
                              tool="write_stdin", exit_code=exit_code)
                return
            before = call.get("out", "")
            glue = "\n" if before and text and not before.endswith("\n") else ""
            whole = before + glue + text
            end = as_dict(call.get("end"))  # the command's end event came before this poll
            if exit_code is None and end:
                exit_code = end.get("code") if isinstance(end.get("code"), int) else None
                kind = kind or ("nonzero_exit" if exit_code not in (None, 0) else None)
                whole = whole if len(whole) >= len(end.get("text") or "") else end["text"]
            if exit_code is not None or end:  # the last poll's output is kept whole
                self._close(target, whole, exit_code, kind, ref, offset)
            else:
                call["out"] = _cap_out(whole)
            return
        call = pending.get(call_id) if call_id else None
        if call is None or not call_id:  # no call without an id
            if call_id in self.state["closed"]:
                return
            self.emit("tool", "tool_result", text, ref, offset, tool_use_id=call_id,
                      is_error=kind is not None, error_kind=kind, exit_code=exit_code)
            return
        if running is not None:
            call["out"] = _cap_out(text)
            procs = self.state["procs"]
            procs[running] = call_id
            while len(procs) > MAX_PROCS:
                procs.pop(next(iter(procs)))
            return
        self._close(call_id, text, exit_code, kind, ref, offset)

    def _close(self, call_id: str, text: str, exit_code: int | None, kind: str | None,
               ref: str, offset: int) -> None:
        call = as_dict(self.state["pending"].pop(call_id, None))
        if kind == "nonzero_exit" and _no_match(as_str(call.get("input")), exit_code, text):
            kind = None
        closed = self.state["closed"]
        closed.append(call_id)
        del closed[:-MAX_CLOSED]
        self.emit("tool", "tool_result", text, ref, offset, tool=as_str(call.get("name")),
                  tool_input=as_str(call.get("input")), tool_use_id=call_id,
                  is_error=kind is not None, error_kind=kind, exit_code=exit_code,
                  intent=as_str(call.get("intent")))

    # ---------------------------------------------------------------- events

    def _event(self, payload: dict[str, Any], offset: int) -> None:
        kind = payload.get("type")
        ref = f"@{offset}"
        if kind == "user_message":
            if payload.get("kind") in _INJECTED_KINDS:
                return
            text = _clean_request(as_str(payload.get("message")) or "")
            if text:
                kept = self.set_prompt(text)
                self.emit("user", "text", text, ref, offset, prompt=kept)
        elif kind == "turn_aborted":
            reason = as_str(payload.get("reason")) or "aborted"
            error_kind = "interrupted" if reason == "interrupted" else "aborted"
            self.emit("system", "text", f"turn aborted: {reason}", ref, offset, is_error=True,
                      error_kind=error_kind)
        elif kind == "exec_command_end":
            call_id = as_str(payload.get("call_id"))
            if not call_id or call_id not in self.state["pending"]:
                return
            code = payload.get("exit_code")
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            text = (as_str(payload.get("aggregated_output"))
                    or as_str(payload.get("formatted_output"))
                    or "\n".join(filter(None, (as_str(payload.get("stdout")),
                                               as_str(payload.get("stderr"))))))
            if call_id in self.state["stdin"].values():
                # a poll's output is on its way: what the model saw, often longer than
                # the end event's copy; the poll closes the call with both in hand
                self.state["pending"][call_id]["end"] = {"code": exit_code, "text": text}
                return
            self._close(call_id, text, exit_code,
                        "nonzero_exit" if exit_code not in (None, 0) else None, ref, offset)
