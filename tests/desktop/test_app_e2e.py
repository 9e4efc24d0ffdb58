"""End to end: the real app process under Xvfb, with a real tray host (trayer) and without.

A user's paths only: the app is started as ``python -m desktop.app``; it is driven by
later launches (``--ingest``, ``--pause``, ``--quit``, as ``ctx app`` does), by the
keyboard (xdotool types into its windows) and by a separate process that asks for a
build over ZeroMQ. What it shows is read from X itself: the icon window docked in
trayer's panel, its pixels (the look), the windows mapped; and from ``--status``.

Covered here (issue 22): the first run opens the window; quit then an immediate
relaunch starts the app; a bad setting cannot lock the user out; the tray's look
follows the state (ingesting, paused, attention, idle).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.icons import COLORS
from tests.dist.xsession import XSession, icon_docked, x_tree

pytestmark = [pytest.mark.gui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SIBLING = """
import json, sys
from ipc.remote import connect
e = connect(sys.argv[1], timeout=30)
r = e.build_context("lighthouse tides", budget=200)
print(json.dumps({"tokens": r.total_tokens, "items": len(r.items),
                  "sources": [i.source for i in r.items]}))
"""
PROBE = """
import json, sys
from ipc.remote import connect
e = connect(sys.argv[1], timeout=30)
print(json.dumps({"sources": [s.to_dict() for s in e.sources()],
                  "hits": [h.to_dict() for h in e.search("harbours and tides", k=5)]}))
"""
# A sibling with a long call in flight (a transcript sync, queued behind paused ingestion):
# the server gives it time to finish before it stops (ipc.drain_timeout_s), so the quitting
# app takes seconds, as a busy one does.
WAITER = """
import sys
from ipc.remote import connect
e = connect(sys.argv[1], timeout=60)
print("asking", flush=True)
try:
    e.sync(paths=[sys.argv[2]])
except Exception as exc:
    print(type(exc).__name__, flush=True)
"""
# The pixels of an X window (the docked icon), by colour: what the person sees.
GRAB = """
import json, sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(["ctx-e2e-grab"])
img = app.primaryScreen().grabWindow(int(sys.argv[1], 16)).toImage()
counts = {}
for y in range(img.height()):
    for x in range(img.width()):
        name = img.pixelColor(x, y).name()
        counts[name] = counts.get(name, 0) + 1
print(json.dumps(counts))
"""
MISSING = [b for b in ("Xvfb", "trayer", "xwininfo", "xdotool") if shutil.which(b) is None]
needs_x = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (apt: xvfb "
                                                   "trayer x11-utils xdotool)")


class Display:
    """An Xvfb server on a free display number (Xvfb picks it: -displayfd), no tray host."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            # -noreset: as a desktop session's server, it stays as it is when its last
            # client leaves (a bare Xvfb resets then, and a relaunch connecting in that
            # moment got SIGABRT from Qt: seen once when the first app quit)
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten",
             "tcp", "-noreset"], pass_fds=(write,), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as fh:
            number = fh.readline().strip()
        if not number:
            self.proc.kill()
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="ctxe2e-"))
    runtime.chmod(0o700)
    out = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    out.update({"PYTHONPATH": str(REPO), "XDG_RUNTIME_DIR": str(runtime),
                "CTX_RUNTIME_DIR": str(runtime), "CTX_EMBEDDER": "fake",
                "CTX_PASSPHRASE": "an e2e passphrase", "CTX__KEYS__SCRYPT_N": "1024"})
    yield out
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def tray_session(env: dict[str, str]) -> Iterator[XSession]:
    with XSession() as session:
        env["DISPLAY"] = session.display
        yield session


def app_cmd(data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "desktop.app", "--data-dir", str(data_dir), *extra]


def launch(data_dir: Path, env: dict[str, str], log: Path, *extra: str
           ) -> subprocess.Popen[str]:
    with log.open("a") as out:
        return subprocess.Popen(app_cmd(data_dir, *extra), env=env, stdout=out, stderr=out,
                                text=True)


def tell(data_dir: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(app_cmd(data_dir, *flags), check=False, env=env, capture_output=True,
                          text=True, timeout=120)


def status(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    done = tell(data_dir, env, "--status")
    return json.loads(done.stdout) if done.stdout.strip() else {"ok": False}


def wait_status(data_dir: Path, env: dict[str, str], proc: subprocess.Popen[str],
                pred: Callable[[dict[str, Any]], bool], timeout: float = 180.0
                ) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the app exited early ({proc.returncode})"
        last = status(data_dir, env)
        if last.get("ok") and pred(last):
            return last
        time.sleep(0.3)
    raise AssertionError(f"app status never matched; last: {last}")


def stop(procs: list[subprocess.Popen[Any]]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def xdotool(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["xdotool", *args], check=False, env=env, capture_output=True,
                          text=True, timeout=30)
    return done.stdout.strip()


def focus(env: dict[str, str], title: str) -> str:
    """Give the keyboard to the window named ``title`` (found as it maps); its id."""
    wid = xdotool(env, "search", "--sync", "--onlyvisible", "--name", f"^{title}$")
    wid = wid.splitlines()[0]
    xdotool(env, "windowfocus", "--sync", wid)
    time.sleep(0.3)
    return wid


def keep_recovery_key(env: dict[str, str]) -> None:
    """The first run's recovery key dialog, by keyboard: from Copy, Tab twice to "I have
    kept my recovery key", Space, then Tab twice to Continue and Return."""
    focus(env, "Your recovery key")
    for key in ("Tab", "Tab", "space", "Tab", "Tab", "Return"):
        xdotool(env, "key", key)
        time.sleep(0.1)


def icon_window(display: str) -> str | None:
    """The id of the ctx icon docked in trayer's panel, from the X tree."""
    lines = x_tree(display).splitlines()
    for i, line in enumerate(lines):
        if '("panel" "trayer")' in line:
            indent = len(line) - len(line.lstrip())
            for child in lines[i + 1:]:
                if len(child) - len(child.lstrip()) <= indent:
                    break
                if '"ctx":' in child:
                    return child.split()[0]
    return None


def icon_colours(env: dict[str, str], display: str) -> dict[str, int]:
    wid = icon_window(display)
    assert wid is not None, "no ctx icon in trayer's panel"
    grab = subprocess.run([sys.executable, "-c", GRAB, wid], check=True, env=env,
                          capture_output=True, text=True, timeout=60)
    return json.loads(grab.stdout.strip().splitlines()[-1])


def shows(env: dict[str, str], display: str, look: str, timeout: float = 60.0) -> None:
    """Wait until the docked icon's pixels carry ``look``'s colour (as X has them)."""
    want = COLORS[look].lower()
    deadline = time.monotonic() + timeout
    counts: dict[str, int] = {}
    while time.monotonic() < deadline:
        counts = icon_colours(env, display)
        if counts.get(want, 0) >= 20:
            return
        time.sleep(0.3)
    raise AssertionError(f"the icon never looked {look} ({want}); colours: "
                         f"{sorted(counts.items(), key=lambda kv: -kv[1])[:4]}")


@needs_x
def test_first_run_opens_the_window(tray_session: XSession, env: dict[str, str],
                                    tmp_path: Path) -> None:
    """No store, no key in the environment: the set-up dialog, typed into as a person
    would; "Create store", the recovery key kept, ends with the window shown beside the
    tray icon."""
    del env["CTX_PASSPHRASE"]
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"  # no keychain here
    data_dir = tmp_path / "data"
    app = launch(data_dir, env, tmp_path / "app.log")
    try:
        wait_status(data_dir, env, app, lambda s: s["state"] == "needs_setup")
        focus(env, "Set up ctx")  # the passphrase field has the focus
        xdotool(env, "type", "--delay", "20", "a long enough passphrase")
        xdotool(env, "key", "Tab")
        xdotool(env, "type", "--delay", "20", "a long enough passphrase")
        xdotool(env, "key", "Return")  # Create store
        keep_recovery_key(env)
        ready = wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        assert ready["tray"]["visible"] and icon_docked(tray_session.tree())
        assert ready["window"]["visible"] is True and ready["window"]["page"] is None
        assert xdotool(env, "search", "--onlyvisible", "--name", "^ctx$")  # mapped in X
        assert tell(data_dir, env, "--quit").returncode == 0
        assert app.wait(120) == 0
    finally:
        stop([app])


@needs_x
def test_quit_then_an_immediate_relaunch_starts_the_app(env: dict[str, str],
                                                        tmp_path: Path) -> None:
    display = Display()
    env["DISPLAY"] = display.display
    data_dir = tmp_path / "data"
    log = tmp_path / "app.log"
    procs: list[subprocess.Popen[str]] = []
    try:
        first = launch(data_dir, env, log, "--no-tray")
        procs.append(first)
        before = wait_status(data_dir, env, first, lambda s: s["state"] == "ready")
        folder = tmp_path / "notes"
        folder.mkdir()
        (folder / "tides.md").write_text("# Tides\n\nSpring tides follow the new moon.\n")
        assert tell(data_dir, env, "--pause").returncode == 0
        waiter = subprocess.Popen([sys.executable, "-c", WAITER, str(data_dir), str(folder)],
                                  env=env, stdout=subprocess.PIPE, text=True)
        procs.append(waiter)
        assert waiter.stdout is not None and waiter.stdout.readline().strip() == "asking"
        wait_status(data_dir, env, first, lambda s: s["jobs"]["active"] >= 1)  # in flight
        assert tell(data_dir, env, "--quit").returncode == 0
        second = launch(data_dir, env, log, "--no-tray")  # at once, as `ctx app` would
        procs.append(second)
        after = wait_status(data_dir, env, second, lambda s: s["state"] == "ready")
        assert after["pid"] == second.pid != before["pid"]
        assert first.wait(60) == 0
        assert after["window"]["visible"] is True
        text = log.read_text()
        assert "the running app is quitting: starting once it is gone" in text
        assert tell(data_dir, env, "--quit").returncode == 0
        assert second.wait(120) == 0
        waiter.communicate(timeout=60)  # its sync was stopped by the quit: it says so
    finally:
        stop(procs)
        display.close()


@needs_x
def test_a_bad_setting_cannot_lock_the_user_out(env: dict[str, str], tmp_path: Path) -> None:
    """The issue's own reproduction: backend http, URL chroma.local:80oo. The window says
    why and offers the way out; the keyboard takes it; the store opens."""
    display = Display()
    env["DISPLAY"] = display.display
    data_dir = tmp_path / "data"
    log = tmp_path / "app.log"
    app = launch(data_dir, env, log, "--no-tray")  # make the store, then break a setting
    try:
        wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        assert tell(data_dir, env, "--quit").returncode == 0 and app.wait(120) == 0
        (data_dir / "config.toml").write_text(
            '[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n',
            encoding="utf-8")
        app = launch(data_dir, env, log, "--no-tray")
        broken = wait_status(data_dir, env, app, lambda s: s["state"] == "error")
        page = broken["window"]["page"]
        assert broken["window"]["visible"] and "Chroma server URL" in page["detail"]
        assert page["buttons"] == ["Settings...", "Reset \u201cChroma server URL\u201d", "Try again",
                                   "Quit"]
        focus(env, "ctx")  # the keyboard is on Settings...: Tab to the reset, Space
        xdotool(env, "key", "Tab", "space")  # Reset "Chroma server URL"
        again = wait_status(data_dir, env, app, lambda s: s["state"] == "error" and
                            "Use the default vector store" in s["window"]["page"]["buttons"])
        assert "vector" in again["window"]["page"]["detail"].lower()  # nothing listens there
        time.sleep(0.5)
        xdotool(env, "key", "Tab", "space")  # Use the default vector store
        wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        assert "store" not in (data_dir / "config.toml").read_text(encoding="utf-8")
        assert tell(data_dir, env, "--quit").returncode == 0
        assert app.wait(120) == 0
    finally:
        stop([app])
        display.close()


@needs_x
def test_the_tray_look_follows_the_state(tray_session: XSession, env: dict[str, str],
                                         tmp_path: Path) -> None:
    """Idle, ingesting, paused, attention (with its reason), and idle again once seen,
    as the icon's own pixels in trayer's panel show them."""
    data_dir = tmp_path / "data"
    app = launch(data_dir, env, tmp_path / "app.log")
    display = tray_session.display
    try:
        wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        shows(env, display, "idle")
        folder = tmp_path / "inbox"
        folder.mkdir()
        for i in range(400):
            (folder / f"note{i:03d}.md").write_text(f"# Note {i}\n\n" + "Harbour tides. " * 400)
        (folder / "scan.json").write_text("{\"tide\": [1, 2")  # one file that fails (a binary one is a skip)
        assert tell(data_dir, env, "--ingest", str(folder)).returncode == 0
        wait_status(data_dir, env, app, lambda s: s["tray"]["look"] == "ingesting")
        shows(env, display, "ingesting")
        assert tell(data_dir, env, "--pause").returncode == 0
        paused = wait_status(data_dir, env, app, lambda s: s["tray"]["look"] == "paused")
        assert paused["tray"]["tooltip"].startswith("ctx: ingestion paused")
        shows(env, display, "paused")
        assert tell(data_dir, env, "--resume").returncode == 0
        done = wait_status(data_dir, env, app, lambda s: s["jobs"]["active"] == 0 and
                           s["jobs"]["total"] >= 1, timeout=300)
        assert done["tray"]["look"] == "attention"
        assert done["tray"]["tooltip"] == \
            "ctx: needs attention, inbox: 1 file could not be ingested"
        assert done["tray"]["balloons"] == 1  # one balloon for the job, not two
        shows(env, display, "attention")
        assert tell(data_dir, env).returncode == 0  # a launch brings the window: seen
        seen = wait_status(data_dir, env, app, lambda s: s["tray"]["look"] == "idle")
        assert seen["tray"]["tooltip"] == "ctx: ready" and seen["window"]["visible"]
        shows(env, display, "idle")
        assert tell(data_dir, env, "--quit").returncode == 0
        assert app.wait(120) == 0
    finally:
        stop([app])


@needs_x
@pytest.mark.parametrize("with_tray", [True, False], ids=["trayer", "no-tray-host"])
def test_real_app_under_xvfb(with_tray: bool, env: dict[str, str], tmp_path: Path) -> None:
    session: XSession | None = None
    display: Display | None = None
    if with_tray:
        session = XSession().__enter__()
        env["DISPLAY"] = session.display
    else:
        display = Display()
        env["DISPLAY"] = display.display
    data_dir = tmp_path / "data"
    log = tmp_path / "app.log"
    app = launch(data_dir, env, log)
    try:
        ready = wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        if with_tray:
            assert ready["tray"] == {**ready["tray"], "available": True, "used": True,
                                     "visible": True}
            deadline = time.monotonic() + 30
            while not icon_docked(x_tree(env["DISPLAY"])):
                assert time.monotonic() < deadline, "no ctx icon inside trayer's panel"
                time.sleep(0.2)
        else:
            assert ready["tray"]["available"] is False and ready["tray"]["used"] is False
            assert not icon_docked(x_tree(env["DISPLAY"]))
        assert ready["window"]["visible"] is True  # a first run shows the window either way
        assert ready["ipc"]

        folder = tmp_path / "notes"
        folder.mkdir()
        for i in range(3):
            (folder / f"note{i}.md").write_text(f"# Note {i}\n\nThe lighthouse keeper {i} "
                                                "logs the tides every evening.\n" * 4)
        second = tell(data_dir, env, "--ingest", str(folder))
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["ok"] is True
        after = wait_status(data_dir, env, app, lambda s: s["jobs"]["done"] >= 1
                            and not s["jobs"]["active"])
        assert after["jobs"]["chunks"] >= 3

        sibling = subprocess.run([sys.executable, "-c", SIBLING, str(data_dir)], check=False,
                                 env=env, capture_output=True, text=True, timeout=120)
        assert sibling.returncode == 0, sibling.stderr
        built = json.loads(sibling.stdout)
        assert 0 < built["tokens"] <= 200 and built["items"] >= 1
        assert any(s.startswith(str(folder)) for s in built["sources"])
        assert status(data_dir, env)["server"]["requests_served"] >= 1

        conn_files = list(Path(env["CTX_RUNTIME_DIR"]).rglob("ctx-*.json"))
        assert len(conn_files) == 1
        assert tell(data_dir, env, "--quit").returncode == 0
        assert app.wait(120) == 0
        assert not any(f.exists() for f in conn_files)
        text = log.read_text()
        assert ("tray shown" if with_tray else "window shown") in text
        assert "state loading" in text or "state ready" in text
        assert "state stopped" in text and "exit 0" in text
    finally:
        stop([app])
        if session is not None:
            session.__exit__(None, None, None)
        if display is not None:
            display.close()


def test_kill_9_loses_nothing_and_a_relaunch_works(env: dict[str, str], tmp_path: Path) -> None:
    """kill -9 in the middle of an ingestion: the next launch takes over the stale
    single-instance socket and connection file, opens the store, every source stored
    before the kill is whole and searchable, and the killed job is listed to resume."""
    env = {**env, "QT_QPA_PLATFORM": "offscreen"}  # window mode; no display needed
    data_dir = tmp_path / "data"
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(150):
        (folder / f"doc{i:03d}.md").write_text(f"# Doc {i}\n\n" + f"Paragraph {i} about "
                                               "harbours and tides. " * 120)
    app = subprocess.Popen(app_cmd(data_dir, "--ingest", str(folder)), env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_status(data_dir, env, app, lambda s: s["jobs"]["total"] >= 1 and  # type: ignore[arg-type]
                    s["jobs"]["chunks"] > 0)
        app.kill()  # SIGKILL: no cleanup at all
        app.wait(30)
        again = subprocess.Popen(app_cmd(data_dir), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            wait_status(data_dir, env, again, lambda s: s["state"] == "ready")  # type: ignore[arg-type]
            probe = subprocess.run([sys.executable, "-c", PROBE, str(data_dir)], check=False,
                                   env=env, capture_output=True, text=True, timeout=120)
            assert probe.returncode == 0, probe.stderr
            seen = json.loads(probe.stdout)
            stored = seen["sources"]
            assert stored, "sources stored before the kill are kept"
            assert all(s["n_chunks"] > 0 for s in stored)  # none half-written
            assert seen["hits"] and {h["source_id"] for h in seen["hits"]} <= {
                s["id"] for s in stored}
            assert tell(data_dir, env, "--quit").returncode == 0
            assert again.wait(120) == 0
        finally:
            if again.poll() is None:
                again.kill()
    finally:
        if app.poll() is None:
            app.kill()
