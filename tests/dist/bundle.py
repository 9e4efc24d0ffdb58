"""Running the built app bundle the way a user would: outside any virtualenv, clean HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
# Another build to test (default: dist/ctx): a one-dir bundle folder as unpacked or
# installed (/opt/ctx, the Windows install folder), or an installed ctx.app.
ENV_BUNDLE = "CTX_DIST_BUNDLE"
PASSPHRASE = "smoke test passphrase"
T = TypeVar("T")


def bundle_dir() -> Path:
    return Path(os.environ.get(ENV_BUNDLE) or REPO / "dist" / "ctx")


def exe_name(name: str) -> str:
    return name + ".exe" if os.name == "nt" else name


def layout(top: Path) -> tuple[Path, list[Path]]:
    """(folder of the executables, folders of the bundled files) of a bundle or a .app."""
    if top.suffix == ".app":
        contents = top / "Contents"
        return contents / "MacOS", [contents / "Frameworks", contents / "Resources"]
    return top, [top / "_internal"]


def require_bundle() -> Path:
    top = bundle_dir()
    if not (layout(top)[0] / exe_name("ctx")).is_file():
        pytest.skip(f"no app bundle at {top} (make dist)")
    return top


def clean_env(home: Path, runtime: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: no virtualenv, no PYTHONPATH, no CTX_HOME, a fresh HOME."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(runtime), "CTX_PASSPHRASE": PASSPHRASE}
    if os.name == "nt":  # what Windows programs need to start; the profile is the clean HOME
        root = os.environ.get("SystemRoot", r"C:\Windows")
        env.update({"SystemRoot": root, "PATH": rf"{root}\System32;{root}",
                    "USERPROFILE": str(home), "APPDATA": str(home / "AppData" / "Roaming"),
                    "LOCALAPPDATA": str(home / "AppData" / "Local"),
                    "TEMP": str(home / "Temp"), "TMP": str(home / "Temp"),
                    # platformdirs asks the shell for known folders, not the environment
                    "CTX_HOME": str(home / "AppData" / "Local" / "ctx")})
        (home / "Temp").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


class Bundle:
    """``top``: the whole build (folder or .app); ``root``: its executables' folder."""

    def __init__(self, top: Path, home: Path, runtime: Path) -> None:
        self.top, self.home, self.runtime = top, home, runtime
        self.root, self.data_dirs = layout(top)
        self.env = clean_env(home, runtime)

    def find(self, rel: str) -> Path | None:
        """A bundled file or folder (``PySide6``, ``licenses/LICENSE``), wherever it lives."""
        return next((d / rel for d in self.data_dirs if (d / rel).exists()), None)

    @property
    def data_dir(self) -> Path:  # the platform's default data dir under the clean HOME
        if sys.platform == "darwin":
            return self.home / "Library" / "Application Support" / "ctx"
        if os.name == "nt":
            return self.home / "AppData" / "Local" / "ctx"
        return self.home / ".local" / "share" / "ctx"

    def run(self, *args: str, exe: str = "ctx", timeout: float = 240,
            input: str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.root / exe_name(exe)), *args], check=False, cwd=self.home,
                              env=env or self.env, capture_output=True, text=True,
                              timeout=timeout, input=input)

    def start(self, *args: str, exe: str = "ctx", env: dict[str, str] | None = None
              ) -> subprocess.Popen[str]:
        return subprocess.Popen([str(self.root / exe_name(exe)), *args], cwd=self.home,
                                env=env or self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[str, str]:
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def wait_for(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """``check()``'s first true value (typed, so a checker sees what it is)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def files_containing(root: Path, needle: bytes) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle`` (plain or UTF-16)."""
    variants = (needle, needle.decode().encode("utf-16-le"))
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(v in data for v in variants):
                hits.append(path)
    return hits
