"""`ctx uninstall-integrations`: undo what ctx set up outside its data dir, and say what.

What the app or the CLI may have added beyond the data dir (which is kept):
the running tray app and engine (``ctx serve``, started by hand or in the
background) and any other process of this install; the start-at-login item
(XDG autostart entry, LaunchAgent, or the Windows Run value); the Claude Code
hook and MCP entries and the Codex MCP entry that ``ctx hook install`` wrote,
with the ``*.ctx-backup`` copies made while writing them. Uninstallers run
this first: the .deb's prerm (``--all-users``, as root), ``install-user.sh
--remove`` and the Windows uninstaller (which also takes its PATH entry out).

``--installed-at PATH`` (repeatable) limits it to what points at one
installation (its folder, its links), so removing the app leaves a pip
install's hooks alone. Each step prints one line; ``--report FILE`` writes the
same lines to a file too (the Windows uninstaller shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Say = Callable[[str], None]
STOP_WAIT_S = 15.0
_STRING_ESCAPES = {"\\": "\\", "s": " ", "n": "\n", "t": "\t", "r": "\r"}
FIRST_USER_UID, LAST_USER_UID = 1000, 60000  # Debian's range of ordinary accounts


def add_uninstall_parser(sub: Any) -> None:
    s = sub.add_parser("uninstall-integrations",
                       help="undo what ctx set up outside its data dir (processes, login item, "
                            "agent hooks and MCP entries); the data dir is kept")
    s.add_argument("--installed-at", action="append", default=[], metavar="PATH",
                   help="only what points at this installation (folder or link; repeatable)")
    s.add_argument("--all-users", action="store_true",
                   help="as root: do it for every user account (package removal)")
    s.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    s.add_argument("--report", metavar="FILE", help="also write the report to FILE")
    s.add_argument("--json", action="store_true")
    s.add_argument("--home", help=argparse.SUPPRESS)  # tests: a stand-in for ~
    s.set_defaults(handler=run_uninstall)


def points_at(text: str, roots: Sequence[str]) -> bool:
    """True when ``text`` (a command line or file) names one of ``roots`` (or none are given)."""
    if not roots:
        return True
    for root in roots:
        start = text.find(root)
        while start >= 0:
            after = text[start + len(root):start + len(root) + 1]
            if after in ("", "/", "\\", " ", '"', "'", "\n", ","):
                return True
            start = text.find(root, start + 1)
    return False


def _roots(paths: Sequence[str]) -> list[str]:
    """The paths as given and as resolved (a link in /usr/bin names its target too)."""
    out: list[str] = []
    for p in paths:
        for form in (str(Path(p).expanduser().absolute()), str(Path(p).expanduser().resolve())):
            if form not in out:
                out.append(form)
    return out


# -- processes --------------------------------------------------------------------------------

def _ask_app(data_dir: Path, flag: str) -> dict[str, Any] | None:
    """The running tray app's answer to ``ctx-desktop --status`` / ``--quit`` (the app's
    own program talks to its single-instance socket); None when no app answers."""
    from engine import CtxError
    from ipc.cli.launch import desktop_command

    try:
        command = [*desktop_command(), "--data-dir", str(data_dir), flag]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30,
                              check=False)
    except (CtxError, OSError, subprocess.TimeoutExpired):
        return None  # no desktop app in this install, or it does not answer
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(ValueError):
            reply = json.loads(line)
            return reply if isinstance(reply, dict) else None
    return {"ok": True} if done.returncode == 0 and flag == "--quit" else None


def _stop_app(data_dir: Path, dry: bool, say: Say) -> None:
    status = _ask_app(data_dir, "--status")
    if not status or not status.get("ok"):
        return
    pid = int(status.get("pid") or 0)
    if dry:
        say(f"would stop the ctx app (pid {pid})")
        return
    _ask_app(data_dir, "--quit")
    say(f"stopped the ctx app (pid {pid})" if _wait_gone([pid]) else
        f"asked the ctx app (pid {pid}) to quit; it is still running")


def _stop_engine(data_dir: Path, dry: bool, say: Say) -> None:
    from ipc.discovery import find_live
    from ipc.remote import RemoteEngine

    info = find_live(data_dir)
    if info is None:
        return
    if dry:
        say(f"would stop the ctx engine serving {data_dir} (pid {info['pid']})")
        return
    engine = RemoteEngine(info, timeout=10.0, retries=0)
    try:
        engine.shutdown()
    except Exception as exc:  # noqa: BLE001 - the process sweep below still stops it
        say(f"the ctx engine (pid {info['pid']}) did not take the shutdown ({type(exc).__name__})")
    finally:
        engine.close()
    if _wait_gone([info["pid"]]):
        say(f"stopped the ctx engine serving {data_dir} (pid {info['pid']})")


def _pid_alive(pid: int) -> bool:
    from ipc.connection import pid_alive

    return bool(pid_alive(pid))


def _wait_gone(pids: Sequence[int], timeout: float = STOP_WAIT_S) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(_pid_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return not any(_pid_alive(p) for p in pids)


def install_processes(roots: Sequence[str]) -> list[tuple[int, str]]:
    """(pid, executable) of this user's processes running a program of ``roots``.

    Never this process or its parent, and never the Python interpreter a pip install
    runs on (other programs share it): only a bundle's own executable is matched.
    """
    own = {os.getpid(), os.getppid()}
    interpreter = "" if getattr(sys, "frozen", False) else os.path.realpath(sys.executable)
    found: list[tuple[int, str]] = []
    proc = Path("/proc")
    if proc.is_dir():
        uid = os.getuid()
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) in own:
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
                exe = os.readlink(entry / "exe")
            except OSError:
                continue
            if exe != interpreter and points_at(exe, roots):
                found.append((int(entry.name), exe))
    elif sys.platform == "darwin":  # no /proc: ps gives each process's executable path
        out = subprocess.run(["ps", "-x", "-o", "pid=,comm="], capture_output=True, text=True,
                             check=False).stdout
        for line in out.splitlines():
            pid_text, _, exe = line.strip().partition(" ")
            exe = exe.strip()
            if (pid_text.isdigit() and int(pid_text) not in own and exe != interpreter
                    and points_at(exe, roots)):
                found.append((int(pid_text), exe))
    return sorted(found)


def _stop_processes(roots: Sequence[str], dry: bool, say: Say) -> None:
    if not roots or os.name != "posix":
        return  # Windows: the uninstaller closes what still runs from its folder
    found = install_processes(roots)
    for pid, exe in found:
        if dry:
            say(f"would stop ctx process {pid} ({exe})")
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue
    if dry or not found:
        return
    pids = [pid for pid, _ in found]
    if not _wait_gone(pids):
        for pid in pids:
            if _pid_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    for pid, exe in found:
        say(f"stopped ctx process {pid} ({exe})")


# -- login item, agents -----------------------------------------------------------------------

def desktop_exec_args(value: str) -> list[str]:
    """The arguments of a Desktop Entry Exec value: string escapes first, then its quoting."""
    text = re.sub(r"\\([\\sntr])", lambda m: _STRING_ESCAPES[m.group(1)], value)
    args: list[str] = []
    current, quoted, i = "", False, 0
    while i < len(text):
        c = text[i]
        if quoted and c == "\\" and i + 1 < len(text) and text[i + 1] in '"`$\\':
            current, i = current + text[i + 1], i + 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == " " and not quoted:
            if current:
                args.append(current)
            current = ""
        else:
            current += c
        i += 1
    if current:
        args.append(current)
    return [a.replace("%%", "%") for a in args]


def _login_command(item: Any) -> str:
    """The command line of an enabled login item, its quoting undone."""
    import plistlib

    path = item.path
    if path is None:  # Windows: the Run value holds the command line as is
        return str(item.registry.get("ctx") or "")
    data = path.read_bytes()
    if path.suffix == ".plist":
        return " ".join(plistlib.loads(data).get("ProgramArguments", []))
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("Exec="):
            return " ".join(desktop_exec_args(line[5:]))
    return ""


def _login_item(home: Path, roots: Sequence[str], dry: bool, say: Say) -> None:
    from ipc.login_item import RUN_KEY, RUN_VALUE, Autostart  # pure Python, no Qt

    item = Autostart(home=home, command=["ctx"])
    if not item.enabled():
        return
    path = item.path
    where = str(path) if path is not None else f"HKCU\\{RUN_KEY}\\{RUN_VALUE}"
    if not points_at(_login_command(item), roots):
        say(f"left the login item {where}: it starts another ctx installation")
        return
    if dry:
        say(f"would remove the login item {where}")
        return
    item.disable()
    say(f"removed the login item {where}")


def _agent_entries(home: Path, roots: Sequence[str], dry: bool, say: Say) -> None:
    from ipc.cli import agent_config as ac

    steps = ((ac.claude_hook_change, (home, ["ctx"], 0, True)),
             (ac.claude_mcp_change, (home, ["ctx"], True)),
             (ac.codex_mcp_change, (home, ["ctx"], True)))
    for make, args in steps:
        try:
            change = make(*args)
        except Exception as exc:  # noqa: BLE001 - an unreadable file is reported, not fatal
            say(f"could not read an agent's settings ({type(exc).__name__}: {exc})")
            continue
        what = change.note.replace(" removed", "")
        if change.changed:
            if not points_at(change.before or "", roots):
                say(f"left the {change.agent} {what} in {change.path}: it runs another ctx")
                continue
            if dry:
                say(f"would remove the {change.agent} {what} from {change.path}")
                continue
            ac.apply([change])
            say(f"removed the {change.agent} {what} from {change.path}"
                + (", and the file: ctx had made it and nothing else is in it"
                   if change.after is None else ""))
        backup = change.path.with_name(change.path.name + ac.BACKUP_SUFFIX)
        if backup.exists() and not dry and (change.changed or not roots):
            backup.unlink()
            say(f"removed {backup} (the copy ctx kept while editing)")


# -- the command ------------------------------------------------------------------------------

def uninstall(*, home: Path, data_dir: Path, roots: Sequence[str], dry: bool, say: Say) -> None:
    _stop_app(data_dir, dry, say)
    _stop_engine(data_dir, dry, say)
    _stop_processes(roots, dry, say)
    _login_item(home, roots, dry, say)
    _agent_entries(home, roots, dry, say)


# What an account that used ctx has under its home (Linux, where --all-users runs: the .deb).
_STATE_PATHS = (".local/share/ctx", ".config/ctx", ".config/autostart/ctx.desktop",
                ".claude/settings.json.ctx-backup", ".claude.json.ctx-backup",
                ".codex/config.toml.ctx-backup")
_AGENT_FILES = (".claude/settings.json", ".claude.json", ".codex/config.toml")


def has_ctx_state(home: Path, runtime: Path | None = None) -> bool:
    """Whether the account of ``home`` has anything of ctx: a data dir or config, a login
    item, an agent file that names ctx, a runtime folder. The prerm acts only for those."""
    if any((home / rel).exists() for rel in _STATE_PATHS):
        return True
    if runtime is not None and (runtime / "ctx").exists():
        return True
    for rel in _AGENT_FILES:
        try:
            text = (home / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "ctx" in text:
            return True
    return False


def _for_all_users(args: argparse.Namespace, say: Say) -> int:
    """Run this command as each user account with a home (root only)."""
    import pwd

    if os.geteuid() != 0:
        say("--all-users needs root")
        return 2
    base = ([sys.executable] if getattr(sys, "frozen", False)
            else [sys.executable, "-m", "ipc.cli.main"])
    cmd = [*base, "uninstall-integrations", *(f"--installed-at={p}" for p in args.installed_at),
           *(["--dry-run"] if args.dry_run else [])]
    code = 0
    for user in pwd.getpwall():
        ordinary = FIRST_USER_UID <= user.pw_uid < LAST_USER_UID or user.pw_uid == 0
        if not ordinary or not Path(user.pw_dir).is_dir():
            continue
        if not has_ctx_state(Path(user.pw_dir), runtime=Path(f"/run/user/{user.pw_uid}")):
            continue  # never ran ctx: nothing to undo, and nothing is made for it
        env = {"HOME": user.pw_dir, "USER": user.pw_name, "LOGNAME": user.pw_name,
               "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        runtime = Path(f"/run/user/{user.pw_uid}")
        if runtime.is_dir():
            env["XDG_RUNTIME_DIR"] = str(runtime)
        if not getattr(sys, "frozen", False):
            env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        try:
            proc = subprocess.run(cmd, env=env, cwd=user.pw_dir, user=user.pw_uid,
                                  group=user.pw_gid, extra_groups=[], capture_output=True,
                                  text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            say(f"user {user.pw_name}: failed ({type(exc).__name__})")
            code = 1
            continue
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.strip():
                say(f"user {user.pw_name}: {line.removeprefix('ctx: ')}")
        code = code or proc.returncode
    return code


def run_uninstall(args: argparse.Namespace) -> int:
    lines: list[str] = []

    def say(text: str) -> None:
        lines.append(text)
        if not args.json:
            print(f"ctx: {text}", flush=True)

    if args.all_users:
        code = _for_all_users(args, say)
    else:
        from engine import probe_store

        home = Path(args.home).expanduser() if args.home else Path.home()
        data_dir = probe_store(args.data_dir).data_dir
        uninstall(home=home, data_dir=data_dir, roots=_roots(args.installed_at),
                  dry=args.dry_run, say=say)
        if not lines:
            say("nothing of ctx was set up outside its data dir")
        if data_dir.exists():
            say(f"your data is kept in {data_dir} (delete that folder to remove it too)")
        code = 0
    if args.json:
        print(json.dumps({"ok": code == 0, "report": lines}))
    if args.report:
        Path(args.report).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return code
