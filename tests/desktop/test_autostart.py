"""Start at login on each OS, with the OS, home dir and registry injected."""

from __future__ import annotations

import configparser
import plistlib
import shlex
from pathlib import Path

from ipc.login_item import APP_ID, RUN_VALUE, Autostart

CMD = ["/opt/ctx dir/bin/ctx-desktop", "--data-dir", "/home/u/my data"]


class FakeRegistry:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


def test_linux_writes_and_removes_an_xdg_autostart_entry(tmp_path: Path) -> None:
    auto = Autostart(system="linux", home=tmp_path, env={}, command=CMD)
    assert auto.path == tmp_path / ".config" / "autostart" / "ctx.desktop"
    assert not auto.enabled()
    auto.enable()
    assert auto.enabled()
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(auto.path)
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application" and section["Name"] == "ctx"
    assert shlex.split(section["Exec"]) == CMD
    auto.enable()  # again: same file, no error
    auto.disable()
    assert not auto.enabled() and not auto.path.exists()
    auto.disable()  # already off


def test_linux_follows_xdg_config_home(tmp_path: Path) -> None:
    auto = Autostart(system="linux", home=tmp_path, env={"XDG_CONFIG_HOME": str(tmp_path / "c")},
                     command=["ctx-desktop"])
    auto.set_enabled(True)
    assert (tmp_path / "c" / "autostart" / "ctx.desktop").exists()


def test_macos_writes_a_launch_agent(tmp_path: Path) -> None:
    auto = Autostart(system="darwin", home=tmp_path, command=CMD)
    assert auto.path == tmp_path / "Library" / "LaunchAgents" / f"{APP_ID}.plist"
    auto.enable()
    plist = plistlib.loads(auto.path.read_bytes())
    assert plist["Label"] == APP_ID and plist["ProgramArguments"] == CMD
    assert plist["RunAtLoad"] is True
    assert auto.enabled()
    auto.set_enabled(False)
    assert not auto.path.exists()


def test_windows_sets_the_run_registry_value(tmp_path: Path) -> None:
    registry = FakeRegistry()
    home = tmp_path / "home"
    home.mkdir()
    auto = Autostart(system="win32", home=home, command=[r"C:\Program Files\ctx\ctx.exe"],
                     registry=registry)
    assert auto.path is None and not auto.enabled()
    auto.enable()
    assert registry.values[RUN_VALUE] == r'"C:\Program Files\ctx\ctx.exe"'
    assert auto.enabled()
    auto.disable()
    assert RUN_VALUE not in registry.values and not auto.enabled()
    assert not any(home.iterdir())  # nothing written to disk on Windows


def test_default_command_starts_the_app() -> None:
    auto = Autostart(system="linux")
    assert auto.command[-1] in ("desktop.app",) or auto.command[0].endswith("ctx-desktop")
