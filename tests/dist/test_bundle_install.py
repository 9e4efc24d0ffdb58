"""The built app as installed and removed (marker ``dist``; skipped without a bundle).

Its licences; the tray app without a display; `ctx uninstall-integrations` run by the
bundle against what the bundle set up; `install-user.sh` from a folder whose path has
a space, and its `--remove`. Runs against dist/ctx or an installed build
(``CTX_DIST_BUNDLE``), with a clean HOME.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dist.bundle import Bundle, require_bundle, stop, wait_for

pytestmark = [pytest.mark.dist, pytest.mark.timeout(600)]
LICENCES = ("LICENSE", "Qt-NOTICE.txt", "LGPL-3.0.txt", "GPL-3.0.txt", "MiniLM-NOTICE.txt",
            "Apache-2.0.txt", "THIRD-PARTY-NOTICES.txt")


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bundle]:
    top = require_bundle()
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "xdg-run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    yield Bundle(top, home, runtime)


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_licences_ship(bundle: Bundle) -> None:
    folder = bundle.find("licenses")
    assert folder is not None, "no licenses folder in the bundle"
    for name in LICENCES:
        assert (folder / name).is_file() and (folder / name).stat().st_size > 500, name
    notices = (folder / "THIRD-PARTY-NOTICES.txt").read_text(encoding="utf-8")
    listed = {_norm(line[2:].split(" ", 1)[0]) for line in notices.splitlines()
              if line.startswith("- ")}
    for dist in ("PySide6-Essentials", "shiboken6", "onnxruntime", "numpy", "chromadb",
                 "pyzmq", "Python"):
        assert _norm(dist) in listed, dist
    # every distribution whose metadata the bundle carries is in the notices
    for data in bundle.data_dirs:
        for info in data.glob("*.dist-info"):
            name = info.name.removesuffix(".dist-info").rsplit("-", 1)[0]
            assert _norm(name) in listed or name == "ctx", name


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland: Linux")
def test_the_tray_app_without_a_display_says_what_to_do(bundle: Bundle) -> None:
    env = {k: v for k, v in bundle.env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = bundle.run(exe="ctx-app", env=env, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)  # not Qt's abort (134)
    assert "no display" in proc.stderr and "ctx serve" in proc.stderr
    assert "Detected locale" not in proc.stderr


def test_uninstall_takes_out_what_the_bundle_set_up(bundle: Bundle) -> None:
    init = bundle.run("init")
    assert init.returncode == 0, init.stderr
    hooks = bundle.run("hook", "install")
    assert hooks.returncode == 0, hooks.stderr
    settings = bundle.home / ".claude" / "settings.json"
    assert "hook session-start" in settings.read_text()
    server = bundle.start("serve")
    try:
        from ipc.remote import connect

        remote = wait_for(lambda: connect(bundle.data_dir, timeout=5.0), 120, "ctx serve")
        remote.close()
        proc = bundle.run("uninstall-integrations", "--installed-at", str(bundle.top))
        assert proc.returncode == 0, proc.stderr
        assert server.wait(timeout=60) == 0
    finally:
        stop(server)
    out = proc.stdout
    assert f"stopped the ctx engine serving {bundle.data_dir}" in out
    assert "removed the claude SessionStart hook" in out and "removed the codex MCP" in out
    # the clean HOME had none of the agents' files: ctx made them, and with its entries
    # out nothing is left in them, so they go (not `{}` and an empty TOML), backups too
    for made in (settings, bundle.home / ".codex" / "config.toml", bundle.home / ".claude.json"):
        assert not made.exists(), made
    assert not list(bundle.home.rglob("*.ctx-backup"))
    assert (bundle.data_dir / "vault.db").exists()  # the data stays


@pytest.mark.skipif(os.name != "posix", reason="install-user.sh: Linux tarball")
def test_install_user_script_from_a_path_with_a_space(bundle: Bundle, tmp_path: Path) -> None:
    script = bundle.top / "install-user.sh"
    if not script.exists():
        pytest.skip("this build has no install-user.sh (not the Linux tarball)")
    apps = tmp_path / "My Apps"
    apps.mkdir()
    (apps / "ctx").symlink_to(bundle.top)  # the unpacked tarball, as the user placed it
    env = dict(bundle.env, PATH=f"{bundle.home}/.local/bin:/usr/bin:/bin")
    run = subprocess.run([str(apps / "ctx" / "install-user.sh")], env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    desktop = bundle.home / ".local" / "share" / "applications" / "ctx.desktop"
    assert f'Exec="{apps}/ctx/ctx-app"' in desktop.read_text()
    version = subprocess.run(["ctx", "--version"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)
    assert version.returncode == 0 and version.stdout.startswith("ctx "), version.stderr
    assert subprocess.run(["ctx", "hook", "install", "claude"], env=env, capture_output=True,
                          timeout=120, check=False).returncode == 0
    removed = subprocess.run([str(apps / "ctx" / "install-user.sh"), "--remove"], env=env,
                             capture_output=True, text=True, timeout=120, check=False)
    assert removed.returncode == 0, removed.stderr
    assert "removed the claude SessionStart hook" in removed.stdout
    leftovers = [p for p in (bundle.home / ".local").rglob("*")
                 if p.is_file() or p.is_symlink()]
    assert not [p for p in leftovers if "share/ctx" not in p.as_posix()], leftovers
