"""The connection file: how a client finds the running server of a data dir.

A server writes ``ctx-<tag>.json`` (``tag`` = a hash of the resolved data dir)
into the user runtime dir, readable by the owner alone, written atomically, and
removes it on a clean exit. When the runtime dir is not usable (missing, not
ours, open to others) the data dir is used instead. This module reads, writes
and removes the file and tells whether its process still runs; which file
names a live server (a ping where that cannot be told) is ``ipc.discovery``'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import sys
import warnings
from pathlib import Path
from typing import NotRequired, TypedDict

import platformdirs

from engine import resolve_data_dir
from ipc.errors import ProtocolError
from ipc.wire import PROTOCOL_VERSION

__all__ = [
    "ConnectionInfo", "candidate_paths", "connection_file_path", "default_endpoint",
    "make_info", "pid_alive", "process_started", "read_connection_file",
    "remove_connection_file", "runtime_dir", "write_connection_file",
]

ENV_RUNTIME_DIR = "CTX_RUNTIME_DIR"
_MAX_FILE_BYTES = 64 * 1024
_MAX_IPC_PATH = 100  # bytes; AF_UNIX sun_path is 104 (macOS) or 108 (Linux) with the NUL


class ConnectionInfo(TypedDict):
    """What a client needs to reach a server; the JSON content of a connection file."""

    endpoint: str  # "ipc:///run/user/1000/ctx/ctx-<tag>.sock" or "tcp://127.0.0.1:PORT"
    key: str  # HMAC key: 64 hex characters; its UTF-8 bytes key HMAC-SHA256
    pid: int  # the server process
    protocol_version: str  # "1.0"
    transport: str  # "ipc" | "tcp"
    data_dir: str  # the resolved data dir the server owns
    started: NotRequired[str]  # the server process's start time (opaque): tells pid reuse


def data_dir_tag(data_dir: str | os.PathLike[str] | None) -> str:
    """A short stable name for a data dir (16 hex digits of SHA-256 of its resolved path)."""
    root = str(resolve_data_dir(data_dir))
    return hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _private_dir_usable(path: Path) -> bool:
    """Create ``path`` owner-only if needed; True when it is ours alone and writable."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.name == "posix":
            st = path.stat()
            if st.st_uid != os.getuid():
                return False
            if st.st_mode & 0o077:
                os.chmod(path, 0o700)
        return path.is_dir() and os.access(path, os.W_OK | os.X_OK)
    except OSError:
        return False


def runtime_dir() -> Path | None:
    """The usable user runtime dir for ctx ($CTX_RUNTIME_DIR, else platformdirs), or None."""
    override = os.environ.get(ENV_RUNTIME_DIR)
    if override:
        path = Path(override).expanduser()
    else:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            try:
                path = Path(platformdirs.user_runtime_dir("ctx", appauthor=False))
            except OSError:  # its last resort, $TMPDIR/runtime-UID, is another's or no folder
                return None  # then the data dir holds the file (docs/wire.md section 1)
    return path.resolve() if _private_dir_usable(path) else None


def _file_name(data_dir: str | os.PathLike[str] | None) -> str:
    return f"ctx-{data_dir_tag(data_dir)}.json"


def connection_file_path(data_dir: str | os.PathLike[str] | None) -> Path:
    """Where a server for ``data_dir`` writes its connection file (runtime dir, else data dir)."""
    root = resolve_data_dir(data_dir)
    base = runtime_dir() or root
    return base / _file_name(root)


def candidate_paths(data_dir: str | os.PathLike[str] | None) -> list[Path]:
    """Every place a connection file for ``data_dir`` may be, most likely first."""
    root = resolve_data_dir(data_dir)
    out = [connection_file_path(root), root / _file_name(root)]
    return list(dict.fromkeys(out))


def default_endpoint(data_dir: str | os.PathLike[str] | None) -> str:
    """``ipc://`` socket beside the connection file on POSIX, else a free localhost port.

    Falls back to TCP on POSIX too when the socket path would be too long for
    AF_UNIX. ``tcp://127.0.0.1:*`` asks ZeroMQ to bind a free port.
    """
    if os.name == "posix":
        sock = connection_file_path(data_dir).with_suffix(".sock")
        if len(os.fsencode(sock)) <= _MAX_IPC_PATH:
            return f"ipc://{sock}"
    return "tcp://127.0.0.1:*"


def transport_of(endpoint: str) -> str:
    return endpoint.split("://", 1)[0]


def make_info(endpoint: str, key: str, data_dir: str | os.PathLike[str] | None) -> ConnectionInfo:
    """A ConnectionInfo for this process."""
    info = ConnectionInfo(endpoint=endpoint, key=key, pid=os.getpid(),
                          protocol_version=PROTOCOL_VERSION, transport=transport_of(endpoint),
                          data_dir=str(resolve_data_dir(data_dir)))
    started = process_started(os.getpid())
    if started is not None:
        info["started"] = started
    return info


def write_connection_file(info: ConnectionInfo, path: Path | None = None) -> Path:
    """Write ``info`` owner-only (0600) and atomically (temp file, then rename); returns the path.

    The temp file is created with O_EXCL so nothing else can own it or have it
    open; readers see the old file or the whole new one, never a partial one.
    """
    path = path or connection_file_path(info["data_dir"])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            if os.name == "posix":
                os.fchmod(fh.fileno(), 0o600)
            fh.write(json.dumps(dict(info), indent=1).encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def read_connection_file(path: Path) -> ConnectionInfo:
    """Parse and check a connection file; ProtocolError when malformed, OSError when unreadable."""
    with open(path, "rb") as fh:
        raw = fh.read(_MAX_FILE_BYTES + 1)
    if len(raw) > _MAX_FILE_BYTES:
        raise ProtocolError(f"connection file too large: {path}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(f"connection file is not JSON: {path}") from None
    types = {"endpoint": str, "key": str, "pid": int, "protocol_version": str,
             "transport": str, "data_dir": str}
    if not isinstance(data, dict):
        raise ProtocolError(f"connection file is not an object: {path}")
    for name, typ in types.items():
        value = data.get(name)
        if not isinstance(value, typ) or isinstance(value, bool) or value in ("", None):
            raise ProtocolError(f"connection file field {name} missing or wrong: {path}")
    if data["transport"] not in ("ipc", "tcp"):
        raise ProtocolError(f"connection file transport unknown: {path}")
    info: ConnectionInfo = ConnectionInfo(**{k: data[k] for k in types})  # type: ignore[typeddict-item]
    started = data.get("started")
    if started is not None:
        if not isinstance(started, str) or not 0 < len(started) <= 256:
            raise ProtocolError(f"connection file field started wrong: {path}")
        info["started"] = started
    return info


def remove_connection_file(path: Path, *, pid: int | None = None) -> bool:
    """Remove ``path``; with ``pid``, only if the file still names that pid. True if removed."""
    try:
        if pid is not None:
            try:
                if read_connection_file(path)["pid"] != pid:
                    return False
            except ProtocolError:
                pass
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (never signals it)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        return _pid_alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: a killed but unreaped process still answers kill(0)
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _pid_alive_windows(pid: int) -> bool:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return bool(kernel32.GetLastError() == 5)  # ERROR_ACCESS_DENIED: exists, not ours
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def process_started(pid: int) -> str | None:
    """An opaque token for when process ``pid`` started, or None where it cannot be read.

    Two processes that reuse one pid have different tokens (a pid is reused
    only long after its first process ended, well past the clock's 10 ms
    resolution). The token names the pid too, so a file whose token belongs to
    another pid is stale as well. Linux reads /proc (boot id, start time in
    clock ticks since boot); other POSIX systems ask ``ps``.
    """
    if pid <= 0:
        return None
    if sys.platform.startswith("linux"):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
            ticks = stat.rsplit(")", 1)[1].split()[19]
            boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        except (OSError, IndexError):
            return None
        return f"linux:{boot}:{pid}:{ticks}"
    if os.name == "posix":  # pragma: no cover - macOS and the BSDs
        try:
            done = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True,
                                  text=True, timeout=2, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        out = done.stdout.strip()
        return f"ps:{pid}:{out}" if done.returncode == 0 and out else None
    return None
