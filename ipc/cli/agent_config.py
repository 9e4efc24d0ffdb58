"""Install ctx into coding agents' settings, and take it out again, without harming the rest.

- Claude Code: a ``SessionStart`` hook in ``~/.claude/settings.json`` that runs
  ``<absolute ctx> hook session-start``, and the MCP server in ``~/.claude.json``
  (user scope: the root ``mcpServers``, what ``claude mcp add -s user ctx --
  <ctx> mcp`` writes).
- Codex: the MCP server as ``[mcp_servers.ctx]`` in ``~/.codex/config.toml``.

Every change parses the file, merges, and writes atomically (temp file,
fsync, rename) after copying the old file to ``<name>.ctx-backup``; a file
that does not parse is left alone and reported. Installing twice changes
nothing; uninstalling removes only what ctx wrote, and a file ctx made that
holds nothing else afterwards goes too (with its folder, when ctx made that and
it is empty), never a file the user had, even an empty one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import ConfigError

__all__ = ["Change", "ctx_command", "install", "uninstall"]

SERVER_NAME = "ctx"
BACKUP_SUFFIX = ".ctx-backup"  # the copy apply() keeps of a file before it rewrites it
HOOK_MARK = "hook session-start"
MADE_FOLDERS = frozenset({".claude", ".codex"})  # the agents' folders ctx may have made
HOOK_TIMEOUT_S = 10  # what Claude Code waits at most; the hook answers within 2 s anyway


@dataclass
class Change:
    """One settings file: what it holds now and what it will hold."""

    agent: str
    path: Path
    before: str | None
    after: str | None
    note: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def ctx_command(data_dir: str | None = None) -> list[str]:
    """The absolute command that runs this ctx (agents run hooks without the user's PATH)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "ctx" and argv0.exists():
        cmd = [str(argv0.absolute())]
    else:
        cmd = [str(Path(sys.executable).absolute()), "-m", "ipc.cli.main"]
    if data_dir:
        cmd += ["--data-dir", str(Path(data_dir).expanduser().absolute())]
    return cmd


def _shell_join(argv: Sequence[str]) -> str:
    import shlex

    return shlex.join(argv)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"{path} is not valid JSON: fix or move it, then run this again",
                          path=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object", path=str(path))
    return data


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- Claude Code: the SessionStart hook -------------------------------------------------------

def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_MARK in str(hook.get("command", ""))


def _without_our_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get("SessionStart"), list):
        return settings
    groups = []
    for group in hooks["SessionStart"]:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [h for h in group["hooks"] if not _is_ours(h)]
            if not kept:
                continue
            group = {**group, "hooks": kept}
        groups.append(group)
    hooks = dict(hooks)
    if groups:
        hooks["SessionStart"] = groups
    else:
        hooks.pop("SessionStart")
    out = dict(settings)
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks")
    return out


def claude_hook_change(home: Path, cmd: list[str], budget: int, remove: bool) -> Change:
    path = home / ".claude" / "settings.json"
    before = _read(path)
    settings = _without_our_hooks(_load_json(path, before))
    if not remove:
        hook = {"type": "command", "timeout": HOOK_TIMEOUT_S,
                "command": _shell_join([*cmd, "hook", "session-start", "--budget", str(budget)])}
        hooks = dict(settings.get("hooks") or {})
        hooks["SessionStart"] = [*list(hooks.get("SessionStart") or []), {"hooks": [hook]}]
        settings = {**settings, "hooks": hooks}
    after = _dump_json(settings) if (settings or before is not None) else None
    if before is not None and _load_json(path, before) == settings:
        after = before  # nothing to do: keep the file byte for byte
    elif remove and not settings and _made_by_ctx(path, _has_our_hook):
        after = None  # nothing else is in it, and ctx made it: it goes
    return Change("claude", path, before, after,
                  "SessionStart hook" + (" removed" if remove else ""))


# -- MCP server entries ---------------------------------------------------------------------

def claude_mcp_change(home: Path, cmd: list[str], remove: bool) -> Change:
    path = home / ".claude.json"
    before = _read(path)
    data = _load_json(path, before)
    servers = dict(data.get("mcpServers") or {})
    if remove:
        servers.pop(SERVER_NAME, None)
    else:
        servers[SERVER_NAME] = {"type": "stdio", "command": cmd[0], "args": [*cmd[1:], "mcp"],
                                "env": {}}
    new = dict(data)
    if servers:
        new["mcpServers"] = servers
    else:
        new.pop("mcpServers", None)
    if new == data:
        after = before
    elif remove and not new and _made_by_ctx(path, _has_our_claude_server):
        after = None
    else:
        after = _dump_json(new)
    return Change("claude", path, before, after, "MCP server" + (" removed" if remove else ""))


_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_without_table(text: str, name: str) -> str:
    """``text`` without the table ``[name]`` (and its sub-tables), comments elsewhere kept."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        m = _TABLE.match(line)
        if m:
            table = m.group(1).replace('"', "").replace("'", "").replace(" ", "")
            skipping = table == name or table.startswith(name + ".")
        if not skipping:
            out.append(line)
    return "".join(out)


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def codex_mcp_change(home: Path, cmd: list[str], remove: bool) -> Change:
    path = home / ".codex" / "config.toml"
    before = _read(path)
    text = before or ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise ConfigError(f"{path} is not valid TOML: fix or move it, then run this again",
                          path=str(path)) from None
    name = f"mcp_servers.{SERVER_NAME}"
    body = _toml_without_table(text, name)
    if not remove:
        if body and not body.endswith("\n"):
            body += "\n"
        if body.strip():
            body += "\n"
        args = ", ".join(_toml_str(a) for a in [*cmd[1:], "mcp"])
        body += (f"[{name}]\ncommand = {_toml_str(cmd[0])}\nargs = [{args}]\n")
    parsed = tomllib.loads(body)  # never write what we could not read back
    if not remove and parsed.get("mcp_servers", {}).get(SERVER_NAME, {}).get("command") != cmd[0]:
        raise ConfigError(f"{path}: could not add [{name}] cleanly", path=str(path))
    if before is not None and tomllib.loads(before) == parsed:
        body = before
    after = body if (body or before is not None) else None
    if (remove and after != before and not parsed and not body.strip()
            and _made_by_ctx(path, _has_our_codex_server)):
        after = None
    return Change("codex", path, before, after, "MCP server" + (" removed" if remove else ""))


# -- files ctx made -------------------------------------------------------------------------

def _has_our_hook(text: str) -> bool:
    data = json.loads(text)
    return isinstance(data, dict) and _without_our_hooks(data) != data


def _has_our_claude_server(text: str) -> bool:
    data = json.loads(text)
    return isinstance(data, dict) and SERVER_NAME in (data.get("mcpServers") or {})


def _has_our_codex_server(text: str) -> bool:
    return SERVER_NAME in tomllib.loads(text).get("mcp_servers", {})


def _made_by_ctx(path: Path, holds_ours: Callable[[str], bool]) -> bool:
    """Whether ``path``, about to hold nothing but an empty object, is a file ctx made.

    apply() copies a file to ``<name>.ctx-backup`` before it rewrites it, so a file with
    no backup was made by ctx, and so was one whose backup is ctx's own earlier edit (it
    holds ctx's entry). A backup without them is the user's own file: kept, even empty.
    """
    backup = _read(path.with_name(path.name + BACKUP_SUFFIX))
    if backup is None:
        return True
    try:
        return holds_ours(backup)
    except ValueError:  # an unreadable backup: not ours to judge, keep the file
        return False


# -- applying ---------------------------------------------------------------------------------

def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    tmp = path.with_name(f".{path.name}.ctx-tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def apply(changes: Sequence[Change]) -> None:
    """Write each changed file, after keeping a copy of its old content as ``*.ctx-backup``.

    A change to nothing (``after`` None: a file ctx made, now empty) removes the file,
    its backup, and its folder when that is left empty and is not the home itself.
    """
    for ch in changes:
        if not ch.changed:
            continue
        if ch.after is None:
            _remove_made(ch.path)
            continue
        if ch.path.exists():
            shutil.copy2(ch.path, ch.path.with_name(ch.path.name + BACKUP_SUFFIX))
        _write_atomic(ch.path, ch.after)


def _remove_made(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.with_name(path.name + BACKUP_SUFFIX).unlink(missing_ok=True)
    folder = path.parent
    if folder.name in MADE_FOLDERS:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            pass


def remove_backups(changes: Sequence[Change]) -> list[Path]:
    """Delete the ``*.ctx-backup`` copies of the files an uninstall rewrote (each holds the
    file as it was with ctx's entries in it: nothing of the user's that the file lacks)."""
    gone = []
    for ch in changes:
        backup = ch.path.with_name(ch.path.name + BACKUP_SUFFIX)
        if ch.changed and backup.exists():
            backup.unlink()
            gone.append(backup)
    return gone


def plan(agents: Sequence[str], *, home: Path, cmd: list[str], budget: int,
         remove: bool) -> list[Change]:
    changes: list[Change] = []
    if "claude" in agents:
        changes.append(claude_hook_change(home, cmd, budget, remove))
        changes.append(claude_mcp_change(home, cmd, remove))
    if "codex" in agents:
        changes.append(codex_mcp_change(home, cmd, remove))
    return changes


def install(agents: Sequence[str], *, home: Path, cmd: list[str], budget: int = 4000,
            dry_run: bool = False) -> list[Change]:
    changes = plan(agents, home=home, cmd=cmd, budget=budget, remove=False)
    if not dry_run:
        apply(changes)
    return changes


def uninstall(agents: Sequence[str], *, home: Path, dry_run: bool = False) -> list[Change]:
    """Take ctx's entries out; a file ctx made and left empty goes, with the backups."""
    changes = plan(agents, home=home, cmd=["ctx"], budget=0, remove=True)
    if not dry_run:
        apply(changes)
        remove_backups(changes)
    return changes
