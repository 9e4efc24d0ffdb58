"""`ctx hook`: install ctx into coding agents, and the hook command they run.

``ctx hook install [claude|codex|all] [--dry-run]`` writes the agents'
settings (see ``ipc.cli.agent_config``); ``ctx hook uninstall`` takes them out.

``ctx hook session-start`` is what Claude Code's SessionStart hook runs. It
never fails a session: whatever happens it exits 0 within ``DEADLINE_S`` and
prints only Claude Code's documented JSON on stdout::

    {"hookSpecificOutput": {"hookEventName": "SessionStart",
                            "additionalContext": "<what this session should know>"},
     "systemMessage": "ctx: <what went wrong and how to fix it>"}   # only when needed

The context comes from the running engine (the app or ``ctx serve``); when none
runs, the hook starts one in the background (which then syncs the transcript
folders) and says so. Sync never runs inside the hook's time: the hook sends
the engine a ``sync`` request and leaves without waiting for it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

DEADLINE_S = 1.5  # the hook answers within 2 s; Python's start-up and imports come first


def deadline_s() -> float:
    """Seconds the hook may work ($CTX_HOOK_DEADLINE_S, for slow machines and tests)."""
    try:
        return min(60.0, max(0.3, float(os.environ.get("CTX_HOOK_DEADLINE_S", DEADLINE_S))))
    except ValueError:
        return DEADLINE_S


def add_hook_parser(sub: Any) -> None:
    s = sub.add_parser("hook", help="install ctx into coding agents; the hooks they run")
    hs = s.add_subparsers(dest="hook_cmd", required=True, metavar="ACTION")
    for name, text in (("install", "write ctx into the agents' settings (idempotent)"),
                       ("uninstall", "remove what `ctx hook install` wrote")):
        a = hs.add_parser(name, help=text)
        a.add_argument("agent", nargs="?", choices=("claude", "codex", "all"), default="all")
        a.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
        a.add_argument("--home", help=argparse.SUPPRESS)  # tests: a stand-in for ~
        if name == "install":
            a.add_argument("--budget", type=int, default=4000,
                           help="token budget of the context the hook adds (default 4000)")
    a = hs.add_parser("session-start", help="the SessionStart hook (reads the event on stdin)")
    a.add_argument("--budget", type=int, default=4000)


def run_hook(args: argparse.Namespace) -> int:
    if args.hook_cmd == "session-start":
        return session_start(args)
    return _install(args)


# -- install / uninstall --------------------------------------------------------------------

def _install(args: argparse.Namespace) -> int:
    from ipc.cli import agent_config as ac

    agents = ("claude", "codex") if args.agent == "all" else (args.agent,)
    home = Path(args.home).expanduser() if args.home else Path.home()
    if args.hook_cmd == "install":
        data_dir = args.data_dir or os.environ.get("CTX_HOME")
        changes = ac.install(agents, home=home, cmd=ac.ctx_command(data_dir),
                             budget=args.budget, dry_run=args.dry_run)
    else:
        changes = ac.uninstall(agents, home=home, dry_run=args.dry_run)
    verb = "would write" if args.dry_run else "wrote"
    for ch in changes:
        if not ch.changed:
            if args.hook_cmd == "install":
                print(f"{ch.agent}: {ch.note}: already up to date in {ch.path}")
            else:  # the note says 'removed': nothing was
                what = ch.note.removesuffix(" removed")
                where = (f"not in {ch.path}" if ch.before is not None
                         else f"{ch.path} does not exist")
                print(f"{ch.agent}: {what}: nothing to remove ({where})")
            continue
        if ch.after is None:
            print(f"{ch.agent}: {ch.note}: {'would remove' if args.dry_run else 'removed'} "
                  f"{ch.path} (ctx made it, and nothing else is in it)")
        else:
            print(f"{ch.agent}: {ch.note}: {verb} {ch.path}"
                  + ("" if args.dry_run or ch.before is None or args.hook_cmd == "uninstall"
                     else f" (previous content kept in {ch.path.name}.ctx-backup)"))
        if args.dry_run:
            _show_diff(ch.before, ch.after, str(ch.path))
    return 0


def _show_diff(before: str | None, after: str | None, name: str) -> None:
    """A unified diff labelled by what the file is: now, after the change, new or removed."""
    import difflib

    sys.stdout.writelines(difflib.unified_diff(
        (before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True),
        f"{name} (now)" if before is not None else f"{name} (no such file yet)",
        f"{name} (after)" if after is not None else f"{name} (removed)"))


# -- session-start --------------------------------------------------------------------------

_LATE = {  # what the watchdog says, by the step the hook was in when time ran out
    "probe": "reading the store's state took too long (is the data dir on a slow disk?)",
    "start": "its engine is starting in the background; memory is added from the next "
             "session",
    "engine": "the engine did not answer within 2 s (busy indexing?); check `ctx status`",
}


class _Answer:
    """Prints the hook's JSON exactly once, from the work or from the watchdog."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done = False
        self.stage = "probe"

    def emit(self, context: str, message: str | None = None) -> bool:
        with self._lock:
            if self.done:
                return False
            self.done = True
            out: dict[str, Any] = {"hookSpecificOutput": {
                "hookEventName": "SessionStart", "additionalContext": context}}
            if message:
                out["systemMessage"] = message
            try:
                sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            return True


def _read_event() -> dict[str, Any]:
    """The hook's input JSON (session_id, cwd, source...); {} when absent or unreadable."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return {}
        import select

        if hasattr(select, "select") and not select.select([sys.stdin], [], [], 0.2)[0]:
            return {}
        data = json.loads(sys.stdin.read(1 << 20) or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def session_start(args: argparse.Namespace) -> int:
    answer = _Answer()
    limit = deadline_s()
    end = time.monotonic() + limit

    def watchdog() -> None:
        if answer.emit("", f"ctx: no session memory this time: {_LATE[answer.stage]}."):
            os._exit(0)
    timer = threading.Timer(limit + 0.15, watchdog)
    timer.daemon = True
    timer.start()
    try:
        context, message = _session_context(args, end, answer)
        answer.emit(context, message)
    except BaseException as exc:  # noqa: BLE001 - a hook never fails the agent's session
        answer.emit("", _fix_message(exc))
    finally:
        timer.cancel()
    return 0


def _session_context(args: argparse.Namespace, end: float, answer: _Answer
                     ) -> tuple[str, str | None]:
    from engine import probe_store
    from ipc.discovery import find_live

    event = _read_event()
    cwd = Path(str(event.get("cwd") or os.getcwd()))
    info = find_live(args.data_dir)
    fresh = False
    if info is None:
        probe = probe_store(args.data_dir, unlock=True)  # a wrong key is said now, not later
        root = probe.data_dir
        if probe.key == "none":
            return "", _fix_message(probe.problem)
        answer.stage = "start"
        info = _start_or_wait(root, probe.locked, end)
        if isinstance(info, str):
            return "", info
        fresh = True
    answer.stage = "engine"
    from ipc.remote import RemoteEngine

    remaining = max(0.1, end - time.monotonic() - 0.05)
    engine = RemoteEngine(info, timeout=remaining, retries=0)
    try:
        result = engine.recall(auto=True, cwd=str(cwd), budget=args.budget,
                               fmt="context")
    finally:
        engine.close()
    if not fresh:
        _fire_sync(info, end)
    return result.context or "", None


def _start_or_wait(root: Path, locked: bool, end: float) -> Any:
    """The server's info, or the message to show when it cannot answer in time."""
    from engine import CtxError
    from ipc.autostart import ensure_server
    from ipc.discovery import find_live

    if locked:  # an engine starting up, or another process with the store open
        while time.monotonic() < end - 0.3:
            info = find_live(root)
            if info is not None:
                return info
            time.sleep(0.05)
        return ("ctx: another ctx process holds the store (an ingest run with --local?), so "
                "no session memory this time; it comes back when that process ends. Run "
                "ingests without --local so they go through the engine.")
    from ipc.autostart import last_engine_error

    failed_before = last_engine_error(root)
    try:
        return ensure_server(root, deadline=end - 0.3, sync_on_start=True)
    except CtxError as exc:
        if exc.details.get("reason") != "starting":
            raise
        if failed_before is not None:  # it is starting again, but it failed last time
            return _fix_message(failed_before).replace("this time:", "this time (the "
                                                        "background engine failed last time):")
        return ("ctx: started its engine in the background (first run: it loads the model "
                "and indexes your sessions); memory is added from the next session.")


def _fire_sync(info: Any, end: float) -> None:
    """Ask the engine to index new transcripts, without waiting for it (it runs after we leave)."""
    import zmq

    from ipc.endpoints import needs_ipv6
    from ipc.session import Session

    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.REQ)
        _, frames = Session(info["key"].encode("utf-8")).pack("sync", {})
        if needs_ipv6(info["endpoint"]):
            sock.setsockopt(zmq.IPV6, 1)
        sock.connect(info["endpoint"])
        sock.send_multipart(frames, zmq.NOBLOCK)
        sock.close(linger=max(50, int((end - time.monotonic()) * 1000)))
    except zmq.ZMQError:
        pass
    finally:
        ctx.term()


def _fix_message(exc: BaseException | None) -> str:
    """A short systemMessage saying what went wrong and what to do (no user text)."""
    from engine import CtxError

    if isinstance(exc, CtxError):
        from ipc.fixes import fix_for

        return f"ctx: no session memory this time: {fix_for(exc)}."
    kind = type(exc).__name__ if exc is not None else "unknown"
    return (f"ctx: no session memory this time: the hook failed ({kind}); "
            "run `ctx hook session-start < /dev/null` in a terminal to see why.")
