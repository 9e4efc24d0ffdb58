"""Checks the tray app makes before Qt starts: a display to draw on, a UTF-8 locale.

Without a display, Qt's xcb plugin aborts the process (exit 134) with a
message about missing xcb libraries; the app says instead that there is no
display and that ``ctx serve`` runs the engine headless. The check connects to
the display's socket the way Qt would, so a stale ``$DISPLAY`` (an ssh session
without X forwarding, a closed Xvfb) is caught as well as an unset one.

Qt wants a UTF-8 ``LC_CTYPE`` and, finding "C" (a bare container, a service,
the bundled app, which Python's own C-locale coercion does not reach), it
switches to one itself and prints a warning. Doing the same switch first,
through the environment Qt reads, keeps the result and drops the warning.
No Qt import here.
"""

from __future__ import annotations

import locale
import os
import socket
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path

CONNECT_TIMEOUT_S = 1.0
X_TCP_BASE = 6000  # X display N listens on TCP port 6000 + N


# Probe connections kept open until Qt has connected (``release_probes``): an X server
# with no other client (a bare Xvfb) resets itself when its last client leaves, and a
# probe closed at once made Qt's own connection fail during that reset (SIGABRT).
_probes: list[socket.socket] = []


def _unix_connects(address: str, *, keep: bool = False) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(address)
    except OSError:
        sock.close()
        return False
    if keep:
        _probes.append(sock)
    else:
        sock.close()
    return True


def release_probes() -> None:
    """Close the display probes' connections (once Qt holds its own)."""
    while _probes:
        _probes.pop().close()


def x_display_reachable(display: str) -> bool:
    """Whether an X server answers at ``display`` ("[host]:N[.screen]")."""
    host, _, rest = display.rpartition(":")
    number = rest.split(".", 1)[0]
    if not number.isdigit():
        return False
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        # Linux X servers listen on an abstract socket too; either will do
        return _unix_connects("\0" + path, keep=True) or _unix_connects(path, keep=True)
    try:
        _probes.append(socket.create_connection((host, X_TCP_BASE + int(number)),
                                                timeout=CONNECT_TIMEOUT_S))
        return True
    except OSError:
        return False


def wayland_reachable(name: str, env: Mapping[str, str]) -> bool:
    path = Path(name)
    if not path.is_absolute():
        runtime = env.get("XDG_RUNTIME_DIR")
        if not runtime:
            return False
        path = Path(runtime) / name
    return _unix_connects(str(path))


def display_problem(env: Mapping[str, str] | None = None, system: str | None = None
                    ) -> str | None:
    """Why Qt would find no display here, or None when it will (or cannot be told)."""
    env = os.environ if env is None else env
    system = system or sys.platform
    if not system.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None  # macOS and Windows always have one; a chosen platform (offscreen) wins
    wayland, x11 = env.get("WAYLAND_DISPLAY", ""), env.get("DISPLAY", "")
    if not wayland and not x11:
        return "no display ($DISPLAY and $WAYLAND_DISPLAY are unset)"
    if wayland and wayland_reachable(wayland, env):
        return None
    if x11 and x_display_reachable(x11):
        return None
    tried = ([f"Wayland display {wayland!r}"] if wayland else []) + (
        [f"X display {x11!r}"] if x11 else [])
    return f"no display (cannot connect to the {' or the '.join(tried)})"


def prefer_utf8_locale(env: MutableMapping[str, str] | None = None) -> str | None:
    """Make the character set UTF-8 where it is not, as Qt would; the locale chosen, or None.

    Tries the current locale with a UTF-8 encoding (de_DE -> de_DE.UTF-8), then
    C.UTF-8. Sets it where Qt will read it: LC_ALL if that is set (it overrides
    the rest), else LC_CTYPE; language, dates and messages stay as they were.
    """
    env = os.environ if env is None else env
    if os.name != "posix" or sys.platform == "darwin":
        return None  # Windows has no such check; on macOS Qt switches silently
    # what setlocale(LC_ALL, "") will give Qt: the first of these set; an unknown one is "C"
    current = env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or "C"
    saved = locale.setlocale(locale.LC_CTYPE)
    try:
        try:
            locale.setlocale(locale.LC_CTYPE, current)
        except locale.Error:
            current = locale.setlocale(locale.LC_CTYPE, "C")
        if locale.nl_langinfo(locale.CODESET).replace("-", "").lower() == "utf8":
            return None
        base = current.split(".", 1)[0].split("@", 1)[0]
        for candidate in dict.fromkeys([f"{base}.UTF-8", "C.UTF-8", "C.utf8"]):
            try:
                locale.setlocale(locale.LC_CTYPE, candidate)
            except locale.Error:
                continue
            env["LC_ALL" if env.get("LC_ALL") else "LC_CTYPE"] = candidate
            return candidate
        return None
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)
