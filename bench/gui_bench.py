"""Desktop app benchmark (not a test): launch times and GUI event-loop stalls under load.

1. Launch: the real app process (``python -m desktop.app``) under Xvfb, with trayer
   as the tray host and without one; time from process start to the tray icon
   (docked in trayer's panel, seen by ``xwininfo``) or the window, and to engine
   ready. Target: first icon or window within 1 s.
2. Stalls: the app in this process (tray and main window with every panel, under
   Xvfb), a 5 ms timer measuring its own lateness, first idle (the baseline),
   then while a ~5k-chunk folder is ingested through the window's ingest path
   and other processes send 200 build_context calls over ZeroMQ at once.
   Target: no stall over 50 ms.

3. Filter: the Sources panel over a real store of ``--sources`` (2,000) small files;
   each keystroke of a filter typed into it, timed from the key to the table
   repainted (median, p95), against the old QTableWidget redraw (every cell set,
   ResizeToContents) on ``--baseline-sources`` rows as the baseline in the same run.
   Target: 100 ms at most per keystroke.

``python -m bench.gui_bench [--runs 3] [--chunks 5000] [--builds 200] [--clients 4]
[--sources 2000] [--skip-launch] [--skip-stalls] [--skip-filter]``.
Uses the fake embedder unless ``--embedder minilm``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.corpus import corpus_files
from bench.stats import pct, table
from tests.dist import xsession
from tests.dist.xsession import icon_docked

REPO = Path(__file__).resolve().parents[1]
PASSPHRASE = "gui bench passphrase"
CLIENT = """
import json, sys, time
from ipc.remote import connect
e = connect(sys.argv[1], timeout=60)
queries = ["how are files opened", "parse the arguments", "thread pool executor",
           "unicode text encoding", "socket timeout", "date and time formats"]
out = []
for i in range(int(sys.argv[2])):
    t = time.perf_counter()
    e.build_context(queries[i % len(queries)], budget=800)
    out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
"""


class Xvfb:
    def __init__(self) -> None:
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten",
             "tcp"], pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as fh:
            self.display = ":" + fh.readline().strip()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def x_tree(env: dict[str, str]) -> str:
    return xsession.x_tree(env.get("DISPLAY"))


def window_mapped(tree: str) -> bool:
    return any('"ctx": ("' in ln and "x" in ln and "1x1+" not in ln and "trayer" not in ln
               for ln in tree.splitlines())


def base_env(runtime: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    env.update({"PYTHONPATH": str(REPO), "XDG_RUNTIME_DIR": str(runtime),
                "CTX_RUNTIME_DIR": str(runtime), "CTX_EMBEDDER": embedder,
                "CTX_PASSPHRASE": PASSPHRASE,
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "ANONYMIZED_TELEMETRY": "False"})
    return env


BARE = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget
app = QApplication(["ctx"])
app.setApplicationName("ctx")
if sys.argv[1] == "tray":
    pix = QPixmap(22, 22)
    pix.fill(QColor("#2563EB"))
    shown = QSystemTrayIcon(QIcon(pix))
else:
    shown = QWidget()
    shown.setWindowTitle("ctx")
    shown.resize(1100, 720)
shown.show()
print("ctx-app: " + sys.argv[1] + " shown", file=sys.stderr, flush=True)
QTimer.singleShot(2000, app.quit)
app.exec()
"""


def launch_once(data_dir: Path, env: dict[str, str], tray: bool, *, bare: bool = False
                ) -> dict[str, float]:
    """Seconds from process start to shown (log line), visible (X says so) and ready.

    ``bare``: a minimal PySide6 program showing a tray icon or an empty window, the
    baseline for what any Qt app costs on this machine."""
    cmd = ([sys.executable, "-c", BARE, "tray" if tray else "window"] if bare else
           [sys.executable, "-m", "desktop.app", "--data-dir", str(data_dir)])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    marks: dict[str, float] = {}

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            now = time.perf_counter() - t0
            if "tray shown" in line or "window shown" in line:
                marks.setdefault("shown", now)
            elif "state ready" in line:
                marks.setdefault("ready", now)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    seen = icon_docked if tray else window_mapped
    while "visible" not in marks and time.monotonic() < deadline:
        if seen(x_tree(env)):
            marks["visible"] = time.perf_counter() - t0
        else:
            time.sleep(0.01)
    if bare:
        proc.wait(60)
        reader.join(5)
        return marks
    while "ready" not in marks and time.monotonic() < deadline:
        time.sleep(0.02)
    subprocess.run([sys.executable, "-m", "desktop.app", "--data-dir", str(data_dir), "--quit"],
                   env=env, capture_output=True, timeout=60, check=False)
    proc.wait(120)
    reader.join(5)
    return marks


def bench_launch(args: argparse.Namespace, work: Path, env: dict[str, str]) -> list[list[Any]]:
    data_dir = work / "launch-data"
    from engine import init_store

    os.environ["CTX_PASSPHRASE"] = env["CTX_PASSPHRASE"]
    init_store(data_dir, passphrase=PASSPHRASE, use_keychain=False)
    rows = []
    for tray in (True, False):
        xvfb = Xvfb()
        run_env = {**env, "DISPLAY": xvfb.display}
        trayer = None
        try:
            if tray:
                trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "right",
                                           "--width", "10", "--height", "24"], env=run_env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                while '("panel" "trayer")' not in x_tree(run_env):
                    time.sleep(0.1)
            bare = [launch_once(data_dir, run_env, tray, bare=True) for _ in range(args.runs)]
            runs = [launch_once(data_dir, run_env, tray) for _ in range(args.runs)]
        finally:
            if trayer is not None:
                trayer.terminate()
                trayer.wait(10)
            xvfb.close()
        base = [r["visible"] * 1000 for r in bare if "visible" in r]
        base_med = pct(base, 50) if base else float("nan")
        rows.append(["tray" if tray else "window", "bare PySide6 baseline: visible (X)",
                     len(base), base_med, max(base, default=float("nan")), 1.0])
        for key, label in (("shown", "shown (app log)"), ("visible", "visible (X)"),
                           ("ready", "engine ready")):
            values = [r[key] * 1000 for r in runs if key in r]
            med = pct(values, 50) if values else float("nan")
            rows.append(["tray" if tray else "window", label, len(values), med,
                         max(values, default=float("nan")),
                         med / base_med if key != "ready" and base else float("nan")])
    return rows


def make_corpus(folder: Path, chunks: int) -> int:
    """Copy real text files until about ``chunks`` chunks (~1.4 KB each) are there."""
    folder.mkdir(parents=True, exist_ok=True)
    budget, n = chunks * 1400, 0
    for path in corpus_files(max_bytes=60_000):
        if budget <= 0:
            break
        size = path.stat().st_size
        shutil.copyfile(path, folder / f"{n:05d}{path.suffix}")
        budget -= size
        n += 1
    return n


class StallProbe:
    """A 5 ms timer recording how late each tick comes (ms)."""

    def __init__(self) -> None:
        from desktop.qt import Qt, QTimer

        self.samples: list[float] = []
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0

    def start(self) -> None:
        self.samples = []
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return self.samples

    def _tick(self) -> None:
        now = time.perf_counter()
        self.samples.append(max(0.0, (now - self.last) * 1000 - 5))
        self.last = now


def run_loop_until(qapp: Any, done: Any, timeout: float) -> None:
    from desktop.qt import QTimer

    deadline = time.monotonic() + timeout
    check = QTimer()
    check.setInterval(50)
    check.timeout.connect(lambda: qapp.quit() if done() or time.monotonic() > deadline
                          else None)
    check.start()
    qapp.exec()
    check.stop()


def bench_stalls(args: argparse.Namespace, work: Path, env: dict[str, str]) -> list[list[Any]]:
    xvfb = Xvfb()
    trayer = None
    os.environ.update(env)
    os.environ["DISPLAY"] = xvfb.display
    try:
        trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--width",
                                   "10", "--height", "24"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        while '("panel" "trayer")' not in x_tree(dict(os.environ)):
            time.sleep(0.1)
        corpus = work / "corpus"
        files = make_corpus(corpus, args.chunks)
        from desktop.app import App
        from desktop.qt import QApplication

        found = QApplication.instance()
        qapp = found if isinstance(found, QApplication) else QApplication(["gui_bench"])
        app = App(qapp, work / "stall-data")
        app.start()
        run_loop_until(qapp, lambda: app.host.engine_ready, 300)
        if not args.no_window:
            app.show_window()
        probe = StallProbe()
        probe.start()
        run_loop_until(qapp, lambda: False, args.idle_s)
        idle = probe.stop()

        probe.start()
        app.ingest([str(corpus)])
        per_client = args.builds // args.clients
        clients = [subprocess.Popen([sys.executable, "-c", CLIENT, str(work / "stall-data"),
                                     str(per_client)], env=dict(os.environ),
                                    stdout=subprocess.PIPE, text=True)
                   for _ in range(args.clients)]
        t0 = time.perf_counter()

        def finished() -> bool:
            jobs = app.host.jobs.values()
            ingested = bool(jobs) and all(j.final for j in jobs)
            return ingested and all(c.poll() is not None for c in clients)
        run_loop_until(qapp, finished, 1800)
        busy = probe.stop()
        elapsed = time.perf_counter() - t0
        builds: list[float] = []
        for c in clients:
            out, _ = c.communicate(timeout=60)
            builds += json.loads(out or "[]")
        chunks = sum(int(j.get("chunks") or 0) for j in app.host.jobs.values())
        app.quit()
        run_loop_until(qapp, lambda: app.host.state == "stopped", 120)
    finally:
        if trayer is not None:
            trayer.terminate()
            trayer.wait(10)
        xvfb.close()
    print(f"\nload: {files} files, {chunks} chunks ingested, {len(builds)} IPC builds from "
          f"{args.clients} processes, {elapsed:.1f} s", flush=True)
    rows = [["idle (baseline)", len(idle), pct(idle, 50), pct(idle, 99), max(idle, default=0)],
            ["ingest + IPC builds", len(busy), pct(busy, 50), pct(busy, 99),
             max(busy, default=0)]]
    if builds:
        rows.append(["(IPC build latency)", len(builds), pct(builds, 50), pct(builds, 99),
                     max(builds)])
    return rows


FILTER_KEYS = "styles/sty"


def old_redraw(table: Any, rows: list[Any], words: list[str]) -> None:
    """The Sources panel before the table model: every cell set on each keystroke."""
    from desktop.widgets import cell, fmt_int, fmt_time

    shown = [s for s in rows if all(w in (s.title + s.kind + s.uri).lower() for w in words)]
    table.setSortingEnabled(False)
    table.setRowCount(len(shown))
    for row, s in enumerate(shown):
        table.setItem(row, 0, cell(s.title or s.uri, tip=s.uri, data=s.id))
        table.setItem(row, 1, cell(s.kind))
        table.setItem(row, 2, cell(fmt_int(s.n_chunks), number=s.n_chunks))
        table.setItem(row, 3, cell(fmt_int(s.tokens), number=s.tokens))
        table.setItem(row, 4, cell(fmt_time(s.ingested_at), number=s.ingested_at or 0))
        table.setItem(row, 5, cell(s.uri, tip=s.uri))
    table.setSortingEnabled(True)


def bench_filter(args: argparse.Namespace, work: Path, env: dict[str, str]) -> list[list[Any]]:
    """Keystroke-to-repaint in the Sources filter (see the module docstring)."""
    os.environ.update(env)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    folder = work / "filter-corpus"
    for i in range(args.sources):
        kind = "style" if i % 2 else "lexer"  # like pygments: styles/ and lexers/
        sub = folder / f"pkg{i % 40:02d}" / f"{kind}s"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{kind}_{i:04d}.md").write_text(f"# Module {i}\n\nNotes on style number {i}.\n",
                                             encoding="utf-8")
    from desktop.host import EngineHost
    from desktop.panels.sources import SourcesPanel
    from desktop.qt import QApplication
    from desktop.widgets import make_table
    from engine import init_store

    qapp = QApplication.instance() or QApplication(["gui_bench"])
    data_dir = work / "filter-data"
    init_store(data_dir, passphrase=PASSPHRASE, use_keychain=False)
    host = EngineHost(data_dir, serve=False)
    host.start()
    run_loop_until(qapp, lambda: host.engine_ready, 300)
    t0 = time.perf_counter()
    done: list[Any] = []
    host.run(lambda e: e.wait(e.ingest(paths=[str(folder)])), success=done.append)
    run_loop_until(qapp, lambda: bool(done), 1800)
    ingest_s = time.perf_counter() - t0
    panel = SourcesPanel(host)
    panel.resize(1100, 600)
    panel.show()
    run_loop_until(qapp, lambda: panel.rows() >= args.sources, 300)

    def timed(key: Any, repaint: Any) -> list[float]:
        out = []
        for ch in FILTER_KEYS:
            t = time.perf_counter()
            key(ch)
            qapp.processEvents()
            repaint()
            out.append((time.perf_counter() - t) * 1000)
        return out

    rows = []
    for _ in range(args.runs):
        panel.filter.clear()
        qapp.processEvents()
        rows += timed(panel.filter.insert, panel.table.viewport().repaint)
    result = [[f"table model, {panel.model.rowCount()} shown of {len(panel.sources)}",
               len(rows), pct(rows, 50), pct(rows, 95), max(rows), 1.0]]
    old = make_table([c for c in ("Title", "Kind", "Chunks", "Tokens", "Ingested",
                                  "Location")], stretch=0)
    old.resize(1100, 600)
    old.show()
    sample = panel.sources[:args.baseline_sources]
    typed = [""]

    def old_key(ch: str) -> None:
        typed[0] += ch
        old_redraw(old, sample, typed[0].lower().split())
    base = timed(old_key, old.viewport().repaint)
    result.append([f"old QTableWidget redraw, {len(sample)} sources", len(base),
                   pct(base, 50), pct(base, 95), max(base), pct(base, 50) / pct(rows, 50)])
    old.close()
    panel.close()
    host.shutdown(wait=True)
    print(f"\nstore: {len(panel.sources)} sources ingested in {ingest_s:.1f} s; "
          f"typed {FILTER_KEYS!r} x {args.runs}", flush=True)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--chunks", type=int, default=5000)
    p.add_argument("--builds", type=int, default=200)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--idle-s", type=float, default=3.0)
    p.add_argument("--embedder", default="fake", choices=("fake", "minilm"))
    p.add_argument("--no-window", action="store_true", help="stalls with the tray only")
    p.add_argument("--skip-launch", action="store_true")
    p.add_argument("--skip-stalls", action="store_true")
    p.add_argument("--skip-filter", action="store_true")
    p.add_argument("--sources", type=int, default=2000)
    p.add_argument("--baseline-sources", type=int, default=200)
    args = p.parse_args()
    missing = [b for b in ("Xvfb", "trayer", "xwininfo") if shutil.which(b) is None]
    if missing and not (args.skip_launch and args.skip_stalls):
        sys.exit(f"gui_bench needs {', '.join(missing)} (apt: xvfb trayer x11-utils)")
    work = Path(tempfile.mkdtemp(prefix="ctx-guibench-"))
    runtime = Path(tempfile.mkdtemp(prefix="ctxgb-"))
    runtime.chmod(0o700)
    env = base_env(runtime, args.embedder)
    try:
        if not args.skip_launch:
            print("\nLaunch (ms from process start; target: shown within 1000 ms)")
            print(table(["mode", "milestone", "runs", "median", "max", "x baseline"],
                        bench_launch(args, work, env)), flush=True)
        if not args.skip_stalls:
            rows = bench_stalls(args, work, env)
            print("\nGUI event loop lateness of a 5 ms timer (ms; target: max under 50 ms)")
            print(table(["phase", "samples", "p50", "p99", "max"], rows), flush=True)
        if not args.skip_filter:
            rows = bench_filter(args, work, env)
            print(f"\nSources filter: keystroke to repaint (ms; target: 100 ms at most); "
                  f"load {os.getloadavg()[0]:.1f}")
            print(table(["table", "keys", "median", "p95", "max", "x model"], rows),
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
