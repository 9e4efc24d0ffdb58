"""install-user.sh without a built bundle: a stand-in bundle folder whose `ctx` runs this
checkout's real CLI, in a folder whose path holds a space, a dollar and a quote.

The menu entry's Exec must name that path as one argument (Desktop Entry
Specification quoting); `--remove` must first undo what ctx set up for that
folder (here: the Claude Code hook and the login item) and say so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ipc.cli import agent_config as ac
from ipc.cli.uninstall_cmd import desktop_exec_args as parse_exec  # what --remove reads
from ipc.login_item import Autostart
from tests.dist.test_platform_paths import PACKAGING, REPO

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a POSIX shell script")


def _fake_bundle(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "share").mkdir()
    for src in (PACKAGING / "linux" / "ctx.desktop", PACKAGING / "icons" / "ctx.png",
                PACKAGING / "icons" / "ctx.svg"):
        shutil.copy(src, folder / "share" / src.name)
    shutil.copy(PACKAGING / "linux" / "install-user.sh", folder / "install-user.sh")
    for name, module in (("ctx", "ipc.cli.main"), ("ctx-app", "desktop.app")):
        exe = folder / name
        exe.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m {module} '
                       '"$@"\n')
        exe.chmod(0o755)
    return folder


def test_exec_is_quoted_and_remove_undoes_the_integrations(tmp_path: Path) -> None:
    here = _fake_bundle(tmp_path / 'My Apps $HOME "x"' / "ctx")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("XDG_BIN_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    run = subprocess.run([str(here / "install-user.sh")], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    assert "ctx installed" in run.stdout
    entry = (home / ".local/share/applications/ctx.desktop").read_text()
    exec_line = next(ln for ln in entry.splitlines() if ln.startswith("Exec="))
    assert parse_exec(exec_line.removeprefix("Exec=")) == [str(here / "ctx-app")]
    if shutil.which("desktop-file-validate"):
        subprocess.run(["desktop-file-validate", str(home / ".local/share/applications/"
                                                          "ctx.desktop")], check=True)
    link = home / ".local" / "bin" / "ctx"
    assert link.is_symlink() and link.resolve() == (here / "ctx").resolve()

    # what this installation set up, and what another one did
    ac.install(("claude",), home=home, cmd=[str(link)])
    ac.install(("codex",), home=home, cmd=["/opt/other/ctx"])
    Autostart(system="linux", home=home, env={"XDG_CONFIG_HOME": str(home / ".config")},
              command=[str(here / "ctx-app")]).enable()
    removed = subprocess.run([str(here / "install-user.sh"), "--remove"], env=env,
                             capture_output=True, text=True, timeout=120, check=True)
    out = removed.stdout
    assert "removed the claude SessionStart hook" in out
    assert "removed the login item" in out and "left the codex MCP server" in out
    assert "ctx removed from" in out
    assert not (home / ".config" / "autostart" / "ctx.desktop").exists()
    # ctx made ~/.claude/settings.json here, and with its hook out nothing is left in it
    assert not (home / ".claude").exists()
    assert "mcp_servers.ctx" in (home / ".codex" / "config.toml").read_text()
    assert not list((home / ".local").rglob("ctx*"))


def test_parse_exec_follows_the_specification() -> None:
    assert parse_exec('"/a b/c" --x') == ["/a b/c", "--x"]
    assert parse_exec(r'"/a \\$b"') == ["/a $b"]  # the file holds \\$
    assert parse_exec(r'"/q\\"x"') == ['/q"x']
    assert parse_exec(r'"/back\\\\slash"') == ["/back\\slash"]


def test_says_how_to_reach_ctx_when_its_folder_is_not_on_path(tmp_path: Path) -> None:
    """~/.local/bin is on PATH only from the next login on most systems: the script says
    so, and what to type now; with the folder on PATH it says nothing more."""
    here = _fake_bundle(tmp_path / "apps" / "ctx")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": "/usr/bin:/bin"}
    env.pop("XDG_BIN_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    run = subprocess.run([str(here / "install-user.sh")], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    bin_dir = home / ".local" / "bin"
    assert f"{bin_dir} is not on your PATH yet" in run.stdout
    assert f'export PATH="{bin_dir}:$PATH"' in run.stdout
    on_path = subprocess.run([str(here / "install-user.sh")], capture_output=True, text=True,
                             env=dict(env, PATH=f"{bin_dir}:/usr/bin:/bin"), timeout=60,
                             check=True)
    assert "not on your PATH" not in on_path.stdout


def test_a_release_build_without_a_maintainer_stops_before_building() -> None:
    """DEB_MAINTAINER is checked first, not 20 minutes in at the .deb step."""
    if not sys.platform.startswith("linux") or shutil.which("bash") is None:
        pytest.skip("the Linux build script")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DEB_MAINTAINER", "DEBFULLNAME", "DEBEMAIL")}
    run = subprocess.run(["bash", str(REPO / "scripts" / "build-dist.sh")], capture_output=True,
                         text=True, timeout=120, check=False,
                         env=dict(env, CI="true", PYTHON=sys.executable, DIST="/nonexistent"))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DEB_MAINTAINER" in run.stderr
    assert "ONNX export" not in run.stdout  # nothing was built
