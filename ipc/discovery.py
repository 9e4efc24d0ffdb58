"""Finding the live server of a data dir: its connection file, checked to be current.

Above both the connection file (``ipc.connection``) and the client
(``ipc.client``): a file left behind by a killed server is recognised and
removed when its pid is gone, or now belongs to another process (the file
records the server's process start time), or its socket vanished; where start
times cannot be read, the server must answer a ping within a second.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine import CtxError, resolve_data_dir
from ipc.client import Client
from ipc.connection import (
    ConnectionInfo,
    candidate_paths,
    pid_alive,
    process_started,
    read_connection_file,
    remove_connection_file,
)
from ipc.errors import ProtocolError

__all__ = ["PROBE_TIMEOUT_S", "find_live"]

PROBE_TIMEOUT_S = 1.0  # ping answered by the server's socket thread; only where start
# times cannot be read (an old file, or a platform without /proc or ps)


def _socket_missing(info: ConnectionInfo) -> bool:
    if info["transport"] != "ipc":
        return False
    return not Path(info["endpoint"][len("ipc://"):]).exists()


def _answers_ping(info: ConnectionInfo, timeout: float) -> bool:
    """Whether the server in ``info`` answers a ping, signed with its key, within ``timeout``."""
    try:
        with Client(info, timeout=timeout, retries=0, rediscover=lambda: None) as client:
            client.call("ping")
    except (CtxError, OSError):
        return False
    return True


def find_live(data_dir: str | os.PathLike[str] | None = None, *,
              probe_timeout: float = PROBE_TIMEOUT_S) -> ConnectionInfo | None:
    """The connection info of the live server for ``data_dir``, or None.

    A file is stale, and removed, when its pid is gone, when that pid now
    belongs to another process (its start time differs from the recorded
    one), when its ipc socket vanished, or when it is malformed. Where the
    start time cannot be compared (a file without one, a platform without
    /proc or ps), a ping must come back within ``probe_timeout`` seconds;
    a file that fails it is skipped but left in place (the server may only
    be slow).
    """
    root = resolve_data_dir(data_dir)
    for path in candidate_paths(root):
        try:
            info = read_connection_file(path)
        except FileNotFoundError:
            continue
        except ProtocolError:
            remove_connection_file(path)
            continue
        except OSError:
            continue
        if Path(info["data_dir"]) != root:
            continue
        if not pid_alive(info["pid"]) or _socket_missing(info):
            remove_connection_file(path, pid=info["pid"])
            continue
        recorded = info.get("started")
        current = process_started(info["pid"]) if recorded is not None else None
        if recorded is not None and current is not None:
            if current != recorded:  # the pid was reused by another process
                remove_connection_file(path, pid=info["pid"])
                continue
            return info
        if _answers_ping(info, probe_timeout):
            return info
    return None
