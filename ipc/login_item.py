"""Start ctx at login, the usual way on each OS.

- Linux and other XDG desktops: ``$XDG_CONFIG_HOME/autostart/ctx.desktop``.
- macOS: a LaunchAgent, ``~/Library/LaunchAgents/dev.ctx.desktop.plist`` (RunAtLoad).
- Windows: the ``ctx`` value under ``HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run``.

The OS, home dir, environment and (on Windows) registry are injectable so that
every path is tested on any machine. Pure Python, no Qt: the app's Settings turn it on
and off, ``ctx uninstall-integrations`` removes it, so it sits in ipc/ itself, below both
front ends (desktop/ imports nothing of ipc/cli/: tests/test_boundaries.py).
"""

from __future__ import annotations

import importlib
import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

APP_ID = "dev.ctx.desktop"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "ctx"


class RunRegistry(Protocol):
    """The HKCU Run key: get, set and delete one string value."""

    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


class WinRegistry:  # pragma: no cover - Windows only
    """HKCU\\...\\Run through winreg."""

    def get(self, name: str) -> str | None:
        winreg: Any = importlib.import_module("winreg")  # Windows only: untyped here

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                return str(winreg.QueryValueEx(key, name)[0])
        except FileNotFoundError:
            return None

    def set(self, name: str, value: str) -> None:
        winreg: Any = importlib.import_module("winreg")  # Windows only: untyped here

        with winreg.CreateKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            winreg.SetValueEx(key, name, 0, winreg.REG_SZ, value)

    def delete(self, name: str) -> None:
        winreg: Any = importlib.import_module("winreg")  # Windows only: untyped here

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0,
                                winreg.KEY_SET_VALUE) as key:
                winreg.DeleteValue(key, name)
        except FileNotFoundError:
            pass


def default_command() -> list[str]:
    """How to start the app: the installed ``ctx-desktop`` script, else this Python."""
    script = shutil.which("ctx-desktop")
    return [script] if script else [sys.executable, "-m", "desktop.app"]


def _platform(system: str | None) -> str:
    name = (system or sys.platform).lower()
    if name.startswith("win"):
        return "windows"
    if name in ("darwin", "macos", "mac"):
        return "macos"
    return "linux"


class Autostart:
    """Whether ctx starts at login, and the switch to change it."""

    def __init__(self, *, system: str | None = None, home: Path | None = None,
                 env: Mapping[str, str] | None = None, command: Sequence[str] | None = None,
                 registry: RunRegistry | None = None) -> None:
        self.system = _platform(system)
        self.home = Path(home) if home is not None else Path.home()
        self.env = dict(os.environ if env is None else env)
        self.command = list(command) if command else default_command()
        self._registry = registry

    @property
    def registry(self) -> RunRegistry:
        if self._registry is None:
            self._registry = WinRegistry()
        return self._registry

    @property
    def path(self) -> Path | None:
        """The file that turns autostart on (None on Windows, where it is a registry value)."""
        if self.system == "linux":
            base = self.env.get("XDG_CONFIG_HOME") or str(self.home / ".config")
            return Path(base) / "autostart" / "ctx.desktop"
        if self.system == "macos":
            return self.home / "Library" / "LaunchAgents" / f"{APP_ID}.plist"
        return None

    def enabled(self) -> bool:
        if self.system == "windows":
            return self.registry.get(RUN_VALUE) is not None
        path = self.path
        return path is not None and path.exists()

    def set_enabled(self, on: bool) -> None:
        if on:
            self.enable()
        else:
            self.disable()

    def enable(self) -> None:
        if self.system == "windows":
            self.registry.set(RUN_VALUE, subprocess.list2cmdline(self.command))
            return
        path = self.path
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.desktop_entry() if self.system == "linux" else self.launch_agent()
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def disable(self) -> None:
        if self.system == "windows":
            self.registry.delete(RUN_VALUE)
            return
        path = self.path
        if path is not None and path.exists():
            path.unlink()

    def desktop_entry(self) -> bytes:
        """An XDG autostart entry (Desktop Entry Specification 1.5)."""
        exec_line = " ".join(_desktop_quote(a) for a in self.command)
        lines = ["[Desktop Entry]", "Type=Application", "Version=1.5", "Name=ctx",
                 "Comment=Local context engine (tray)", f"Exec={exec_line}",
                 "Terminal=false", "X-GNOME-Autostart-enabled=true", "Categories=Utility;", ""]
        return "\n".join(lines).encode("utf-8")

    def launch_agent(self) -> bytes:
        plist: dict[str, Any] = {"Label": APP_ID, "ProgramArguments": list(self.command),
                                 "RunAtLoad": True, "ProcessType": "Interactive"}
        return plistlib.dumps(plist)


def _desktop_quote(arg: str) -> str:
    """Quote one Exec argument as the Desktop Entry Specification asks."""
    if arg and all(c.isalnum() or c in "/-_.=:+,@" for c in arg):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") \
        .replace("$", "\\$")
    return f'"{escaped}"'


__all__ = ["Autostart", "RunRegistry", "default_command"]
