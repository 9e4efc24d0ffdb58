"""Screenshots of the real app as a person sees it: the real process (``python -m
desktop.app``, the real MiniLM model, a real ingest) under Xvfb with trayer as the tray
host, the screen itself grabbed.

    python scripts/tray_screenshots.py [--out docs/screenshots] [--tone light|dark]

Writes ``tray-<look>-<tone>.png`` (the corner with trayer's panel: idle, ingesting,
paused, attention with its balloon), ``screen-first-run``, ``screen-ready``,
``screen-locked`` (unlock dialog over the window) and ``screen-bad-setting`` (the
window's way out of a setting that stops the store from opening). Needs Xvfb, trayer,
xdotool and the model's files (nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.dist.xsession import XSession

PASSPHRASE = "screenshots only, not a secret"
# The screen's top-right corner: trayer's panel, the tooltip and the balloon under it.
CORNER = (1280 - 800, 0, 800, 170)  # wide enough for the longest tooltip (paused, vectors)
ICON = (1280 - 12, 12)  # the icon's centre in trayer's panel (top right, 24 px high)
GRAB = """
import sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(["ctx-shot"])
x, y, w, h = (int(v) for v in sys.argv[2:6])
if not app.primaryScreen().grabWindow(0, x, y, w, h).save(sys.argv[1]):
    raise SystemExit("could not write " + sys.argv[1])
"""


class Shots:
    """One X session, one data dir, the app launched and driven as a person would."""

    def __init__(self, session: XSession, work: Path, out: Path, tone: str) -> None:
        self.out, self.tone, self.work = out, tone, work
        self.data_dir = work / "data"
        runtime = work / "run"
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items()
               if k not in ("QT_QPA_PLATFORM", "CTX_EMBEDDER", "CTX_PASSPHRASE")}
        env.update({"PYTHONPATH": str(REPO), "DISPLAY": session.display,
                    "XDG_RUNTIME_DIR": str(runtime), "CTX_RUNTIME_DIR": str(runtime),
                    "HOME": str(work / "home"), "XDG_CONFIG_HOME": str(work / "config"),
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                    "HF_HUB_OFFLINE": "1", "CTX__KEYS__SCRYPT_N": "1024"})
        self.env = env
        self.log = (work / "app.log").open("a")
        self.apps: list[subprocess.Popen[str]] = []

    def launch(self, *extra: str, passphrase: bool = True) -> subprocess.Popen[str]:
        env = dict(self.env, CTX_PASSPHRASE=PASSPHRASE) if passphrase else self.env
        proc = subprocess.Popen([sys.executable, "-m", "desktop.app", "--data-dir",
                                 str(self.data_dir), *extra], env=env, stdout=self.log,
                                stderr=self.log, text=True)
        self.apps.append(proc)
        return proc

    def tell(self, *flags: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "desktop.app", "--data-dir",
                               str(self.data_dir), *flags], env=self.env, check=False,
                              capture_output=True, text=True, timeout=120)
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {"ok": False}

    def wait(self, pred: Callable[[dict[str, Any]], bool], what: str,
             timeout: float = 300) -> dict[str, Any]:
        deadline, last = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            last = self.tell("--status")
            if last.get("ok") and pred(last):
                return last
            time.sleep(0.3)
        raise SystemExit(f"timed out waiting for {what}; last status: {last}")

    def settle(self, still: float = 3.0, timeout: float = 120) -> None:
        """Until the tray's tooltip has not changed for ``still`` seconds: a tooltip Qt
        shows is not redrawn, so one shown before the last step's progress would be
        older than the card grabbed after it."""
        deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
        while time.monotonic() < deadline:
            tip = self.tell("--status").get("tray", {}).get("tooltip")
            if tip != last:
                last, since = tip, time.monotonic()
            elif time.monotonic() - since >= still:
                return
            time.sleep(0.3)
        raise SystemExit(f"the tray's tooltip kept changing: {last}")

    def xdotool(self, *args: str) -> str:
        return subprocess.run(["xdotool", *args], env=self.env, check=False,
                              capture_output=True, text=True, timeout=30).stdout

    def focus(self, name: str) -> None:
        deadline = time.monotonic() + 60
        while not (wid := self.xdotool("search", "--onlyvisible", "--name", name).split()):
            if time.monotonic() > deadline:
                raise SystemExit(f"no window named {name}")
            time.sleep(0.2)
        self.xdotool("windowactivate", "--sync", wid[0])
        self.xdotool("windowfocus", "--sync", wid[0])

    def hover_icon(self) -> None:
        """The pointer on the tray icon: its tooltip shows (what it says, in the shot)."""
        self.xdotool("mousemove", str(ICON[0] - 4), str(ICON[1] + 4))
        time.sleep(0.3)
        self.xdotool("mousemove", str(ICON[0]), str(ICON[1]))  # a move inside: Qt's hover
        time.sleep(2.5)

    def unhover(self) -> None:
        self.xdotool("mousemove", "600", "780")

    def grab(self, name: str, region: tuple[int, int, int, int] = (0, 0, 1280, 800)) -> None:
        time.sleep(0.8)  # the last paint reaches the X server
        path = self.out / f"{name}-{self.tone}.png"
        subprocess.run([sys.executable, "-c", GRAB, str(path), *map(str, region)],
                       env=self.env, check=True, timeout=60)
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)

    def quit(self) -> None:
        self.tell("--quit")
        for proc in self.apps:
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.apps.clear()

    def close(self) -> None:
        for proc in self.apps:
            if proc.poll() is None:
                proc.kill()
        self.log.close()


def documents(work: Path) -> Path:
    """A folder with real text (this repository's docs and code), a file skipped on purpose
    and one that fails (the tray's attention and its balloon are for a real failure only)."""
    inbox = work / "home" / "Documents" / "project-notes"
    inbox.mkdir(parents=True)
    for path in [REPO / "README.md", REPO / "docs" / "architecture.md",
                 *sorted((REPO / "engine").rglob("*.py"))[:40]]:
        target = inbox / path.relative_to(REPO).as_posix().replace("/", "_")
        shutil.copy(path, target)
    (inbox / "scan-export.txt").write_bytes(bytes(range(256)) * 64)  # binary, named as text
    (inbox / "moved-away.md").symlink_to(work / "gone.md")  # a broken link: a failure
    return inbox


def run(shots: Shots) -> None:
    config = {"desktop": {"appearance": shots.tone}}
    shots.data_dir.mkdir(parents=True)
    (shots.data_dir / "config.toml").write_text(
        f'[desktop]\nappearance = "{config["desktop"]["appearance"]}"\n', encoding="utf-8")
    # First run: no store, no key in the environment: the set-up dialog.
    shots.launch(passphrase=False)
    shots.wait(lambda s: s["state"] == "needs_setup", "the set-up dialog")
    shots.focus("Set up ctx")
    shots.xdotool("type", "--delay", "10", PASSPHRASE)
    shots.xdotool("key", "Tab")
    shots.xdotool("type", "--delay", "10", PASSPHRASE)
    shots.grab("screen-first-run")
    shots.xdotool("key", "Return")
    shots.focus("Your recovery key")  # kept (the box), then Continue, by keyboard
    for key in ("Tab", "Tab", "space", "Tab", "Tab", "Return"):
        shots.xdotool("key", key)
        time.sleep(0.1)
    shots.wait(lambda s: s["state"] == "ready", "ready after set-up")
    shots.hover_icon()
    shots.grab("tray-idle", CORNER)
    shots.unhover()
    shots.grab("screen-ready")
    inbox = documents(shots.work)
    shots.tell("--ingest", str(inbox))
    shots.wait(lambda s: s["tray"]["look"] == "ingesting", "ingesting")
    shots.hover_icon()
    shots.grab("tray-ingesting", CORNER)
    shots.unhover()
    shots.tell("--pause")
    shots.wait(lambda s: s["tray"]["look"] == "paused", "paused")
    shots.settle()  # the step under way when Pause came ends first: the tooltip then holds
    shots.hover_icon()
    shots.grab("tray-paused", CORNER)
    shots.unhover()
    shots.grab("screen-paused")
    shots.tell("--resume")
    shots.wait(lambda s: s["jobs"]["active"] == 0 and s["tray"]["look"] == "attention",
               "the job to end", timeout=900)
    shots.grab("tray-attention", CORNER)  # with its balloon
    shots.quit()
    # Locked: a launch without the passphrase in the environment.
    shots.launch(passphrase=False)
    shots.wait(lambda s: s["state"] == "locked", "locked")
    shots.tell()  # bring the window, as a click on the icon does
    shots.grab("screen-locked")
    shots.hover_icon()
    shots.grab("tray-locked", CORNER)
    shots.unhover()
    shots.quit()
    # A setting that stops the store from opening (issue 22's own reproduction).
    (shots.data_dir / "config.toml").write_text(
        f'[desktop]\nappearance = "{shots.tone}"\n\n[store]\nvector_backend = "http"\n'
        'chroma_url = "chroma.local:80oo"\n', encoding="utf-8")
    shots.launch()
    shots.wait(lambda s: s["state"] == "error", "the error page")
    shots.tell()
    shots.grab("screen-bad-setting")
    shots.quit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--tone", choices=("light", "dark"), action="append")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for tone in args.tone or ["light", "dark"]:
        with tempfile.TemporaryDirectory(prefix="ctx-tray-shots-") as tmp, \
                XSession() as session:
            shots = Shots(session, Path(tmp), out, tone)
            try:
                run(shots)
            finally:
                shots.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
