"""Start the ctx engine in the background, or wait behind the process that holds the store.

A command that needs the model should not load it itself (seconds, every
time) nor fail with ``store_locked`` because another process has the store
open. Instead:

- a server already runs for the data dir: use it;
- the store is free: spawn ``ctx serve --idle-timeout N`` detached (its own
  session, stdin closed, stdout and stderr to ``logs/engine.log`` in the data
  dir, which holds ids, counts and timings only), say so once on stderr, and
  wait until its connection file appears;
- another process holds the store (an ingest run with ``--local``, an engine
  still starting): wait until a server appears or the lock is released, then
  go on as above; give up with ``store_locked`` after ``wait_s``.

The engine stops by itself after ``idle_timeout`` seconds without calls.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from engine import UPGRADE_LOGGER, CtxError, StoreLocked, error_from_dict
from ipc.connection import ConnectionInfo
from ipc.discovery import find_live
from ipc.errors import ServerUnavailable

__all__ = ["DEFAULT_IDLE_S", "engine_log_path", "ensure_server", "spawn_engine"]

DEFAULT_IDLE_S = 1800  # a background engine stops after 30 idle minutes
_ESTIMATE_FILE = "engine-start.json"  # the last start-up time (a number, no content)
_POLL_S = 0.05

Notice = Callable[[str], None]


def engine_log_path(root: Path) -> Path:
    return root / "logs" / "engine.log"


def idle_timeout_s() -> int:
    """Seconds a background engine waits for a call before it stops ($CTX_ENGINE_IDLE_S)."""
    try:
        return max(1, int(os.environ.get("CTX_ENGINE_IDLE_S", DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def _package_root() -> str:
    import ipc

    return str(Path(ipc.__file__).resolve().parents[1])


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = _package_root()
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([root, *parts])
    return env


def spawn_engine(root: Path, *, idle_timeout: int | None = None,
                 sync_on_start: bool = False) -> subprocess.Popen[bytes]:
    """``ctx serve`` for ``root``, detached from this process and its terminal."""
    log_path = engine_log_path(root)
    log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    from engine import resolve_data_dir as default_root

    # the caller's own resolution ($CTX_HOME, the default) creates a store on first use;
    # an explicit --data-dir must hold one already (see ipc.cli.backend.open_engine)
    where = [] if default_root(None) == root else ["--data-dir", str(root)]
    cmd = [sys.executable, "-m", "ipc.cli.main", *where, "serve",
           "--idle-timeout", str(idle_timeout or idle_timeout_s())]
    if sync_on_start:
        cmd.append("--sync-on-start")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        kwargs: dict[str, Any] = {}
        if os.name == "posix":
            kwargs["start_new_session"] = True
        else:  # pragma: no cover - Windows
            kwargs["creationflags"] = (subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
                                       | subprocess.DETACHED_PROCESS)  # type: ignore[attr-defined]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=str(root), env=_child_env(), close_fds=True, **kwargs)
    # reap it when it ends (no zombie while this process lives, e.g. `ctx mcp`)
    threading.Thread(target=proc.wait, name="ctx-engine-reaper", daemon=True).start()
    return proc


def _estimate(root: Path) -> float:
    try:
        return float(json.loads((root / _ESTIMATE_FILE).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 5.0


def _record_estimate(root: Path, seconds: float) -> None:
    """Owner-only from its creation on, as every file of the data dir."""
    path = root / _ESTIMATE_FILE
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"seconds": round(seconds, 2)}))
        os.chmod(path, 0o600)  # one written before this rule


def _child_error(root: Path, since: int) -> CtxError | None:
    """The error a failed ``ctx serve`` wrote (its last ``{"error": ...}`` line), if any."""
    tail = _log_tail(engine_log_path(root), since)
    for line in reversed(tail.splitlines()):
        if line.startswith('{"error"'):
            with contextlib.suppress(ValueError, TypeError, KeyError):
                return error_from_dict(json.loads(line)["error"])
    return None


# How ``ctx serve`` (ipc.cli.main's log format, "LEVEL logger: message") writes a line of
# the store's upgrade at its open to the engine's log.
UPGRADE_LINE = f"INFO {UPGRADE_LOGGER}: "
SERVING_LINE = "ctx: serving "  # what a background engine that started writes (cmd_serve)


def last_engine_error(root: Path) -> CtxError | None:
    """The error the last background engine stopped with: the log's last ``{"error": ...}``
    line (``ctx serve`` writes it, then its human line), unless an engine started after
    it (a later "ctx: serving" line)."""
    path = engine_log_path(root)
    try:
        size = path.stat().st_size
    except OSError:
        return None
    for line in reversed(_log_tail(path, max(0, size - 16384)).splitlines()):
        if line.startswith(SERVING_LINE):
            return None
        if line.startswith('{"error"'):
            with contextlib.suppress(ValueError, TypeError, KeyError):
                return error_from_dict(json.loads(line)["error"])
    return None


def tell_upgrades(path: Path, since: int, say: Notice) -> int:
    """Say the engine's store-upgrade lines written to its log after ``since`` (byte
    offset), while a command waits for it to start: an upgrade of a big store takes
    seconds. Only the lines the upgrade's logger wrote, as ``ctx serve`` formats them
    (``UPGRADE_LINE``: schema numbers and times, never a user's text). Returns how far the
    log was read (whole lines; one still being written is read next time)."""
    data = _log_bytes(path, since)
    whole = data[:data.rfind(b"\n") + 1]
    for raw in whole.splitlines():
        line = raw.decode("utf-8", "replace")
        if line.startswith(UPGRADE_LINE):
            say("ctx: " + line[len(UPGRADE_LINE):])
    return since + len(whole)


def _log_tail(path: Path, since: int) -> str:
    return _log_bytes(path, since).decode("utf-8", "replace")


def _log_bytes(path: Path, since: int) -> bytes:
    """The engine's log from byte ``since`` on (none when there is no log yet)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(since)
            return fh.read()
    except OSError:
        return b""


class _SpawnLock:
    """Held by the one process that starts the engine; others wait for its server."""

    def __init__(self, root: Path) -> None:
        self.path = root / "engine-start.lock"
        self._fh: IO[str] | None = None

    def try_acquire(self) -> bool:
        import fcntl

        fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held while starting
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        self._fh = fh
        return True

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _store_free(root: Path) -> bool:
    from engine import probe_store

    return not probe_store(root).locked


def ensure_server(root: Path, *, wait_s: float = 120.0, notice: Notice | None = None,
                  sync_on_start: bool = False, deadline: float | None = None
                  ) -> ConnectionInfo:
    """The live server of ``root``, started in the background when none runs.

    Raises StoreLocked when another process keeps the store past ``wait_s``,
    the engine's own error (KeyUnavailable, WrongKey...) when it cannot start,
    and ServerUnavailable when it does not come up in time.
    """
    say = notice or (lambda _msg: None)
    end = deadline if deadline is not None else time.monotonic() + wait_s
    waiting_said = False
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    while True:
        info = find_live(root)
        if info is not None:
            return info
        if _store_free(root):
            starter = _SpawnLock(root)
            if starter.try_acquire():
                try:
                    info = _start(root, end, say, sync_on_start)
                finally:
                    starter.release()
                if info is not None:
                    return info
                continue  # the store was taken meanwhile: wait behind its holder
        if not waiting_said:
            say("ctx: another ctx process holds the store; waiting for it...")
            waiting_said = True
        if time.monotonic() >= end:
            raise StoreLocked(f"another ctx process kept this data dir open: {root}")
        time.sleep(_POLL_S * 4)


def _start(root: Path, end: float, say: Notice, sync_on_start: bool) -> ConnectionInfo | None:
    """Spawn the engine and wait for it; None when it lost the store to another process."""
    if find_live(root) is not None:
        return find_live(root)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_size = engine_log_path(root).stat().st_size if engine_log_path(root).exists() else 0
    say(f"ctx: starting the ctx engine in the background (one-time, ~{_estimate(root):.0f}s)...")
    t0 = time.monotonic()
    proc = spawn_engine(root, sync_on_start=sync_on_start)
    told = log_size  # the engine's log read so far for what a user waits on (upgrades)
    while True:
        told = tell_upgrades(engine_log_path(root), told, say)
        info = find_live(root)
        if info is not None and info["pid"] == proc.pid:
            tell_upgrades(engine_log_path(root), told, say)  # its last lines too
            _record_estimate(root, time.monotonic() - t0)
            return info
        code = proc.poll()
        if code is not None:
            tell_upgrades(engine_log_path(root), told, say)
            err = _child_error(root, log_size)
            if isinstance(err, StoreLocked):
                return None
            if err is not None:
                raise err
            raise ServerUnavailable(f"the background engine exited with code {code}; "
                                    f"see {engine_log_path(root)}", exit_code=code)
        if time.monotonic() >= end:
            raise ServerUnavailable(f"the background engine is still starting; "
                                    f"see {engine_log_path(root)}", reason="starting")
        time.sleep(_POLL_S)
