"""packaging/check_uninstall.sh, the release jobs' uninstall check, run here on the pip
install: it sets up a store, hooks, a login item and a running `ctx serve`, uninstalls,
and fails on anything left. So the check itself is known to work before a release runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist.bundle import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG autostart")]


def test_the_release_uninstall_check_passes_on_the_pip_install(tmp_path: Path) -> None:
    scripts = Path(sys.prefix) / "bin"
    if not (scripts / "ctx").is_file() or shutil.which("sh") is None:
        pytest.skip(f"no ctx console script in {scripts}")
    home, runtime = tmp_path / "home", tmp_path / "xdg-run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    env = {"HOME": str(home), "PATH": f"{scripts}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(REPO)}
    run = subprocess.run(["sh", str(REPO / "packaging" / "check_uninstall.sh"), str(scripts),
                          str(scripts / "ctx"), str(scripts / "ctx-desktop")], env=env,
                         capture_output=True, text=True, timeout=500, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "login item, hooks and entries removed, data kept" in run.stdout
    assert not (home / ".config" / "autostart" / "ctx.desktop").exists()
    assert not (home / ".claude").exists() and not (home / ".codex").exists()
    assert (home / ".local" / "share" / "ctx" / "vault.db").exists()
    assert os.listdir(runtime) in ([], ["ctx"])
