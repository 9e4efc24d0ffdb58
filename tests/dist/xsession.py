"""An Xvfb display with a tray host (trayer), for the bundle's smoke test and benchmark."""

from __future__ import annotations

import os
import subprocess
import time
from types import TracebackType
from typing import Self


def x_tree(display: str | None = None) -> str:
    """``xwininfo -root -tree`` of ``display`` (default: $DISPLAY)."""
    env = dict(os.environ, DISPLAY=display) if display else dict(os.environ)
    return subprocess.run(["xwininfo", "-root", "-tree"], check=False, env=env,
                          capture_output=True, text=True, timeout=20).stdout


def icon_docked(tree: str, name: str = "ctx") -> bool:
    """True when a window named ``name`` is a child of trayer's panel in an X ``tree``."""
    lines = tree.splitlines()
    for i, line in enumerate(lines):
        if '("panel" "trayer")' in line:
            indent = len(line) - len(line.lstrip())
            for child in lines[i + 1:]:
                if len(child) - len(child.lstrip()) <= indent:
                    break
                if f'"{name}":' in child:
                    return True
    return False

class XSession:
    """Xvfb on a free display (it picks one: -displayfd) with ``trayer`` as the tray host."""

    def __init__(self) -> None:
        self.display = ""
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Self:
        read, write = os.pipe()
        self._procs.append(subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten",
             "tcp"], pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        os.close(write)
        with os.fdopen(read) as fh:
            number = fh.readline().strip()
        if not number:
            self.__exit__(None, None, None)
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number}"
        # On a loaded machine trayer has exited at start now and then (seen once in the
        # smoke test at load 8.5): start it again, a few times, before giving up.
        tray = self._start_trayer()
        starts, deadline = 1, time.monotonic() + 60
        while '("panel" "trayer")' not in self.tree():
            if tray.poll() is not None and starts < 3:
                tray, starts = self._start_trayer(), starts + 1
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"trayer did not start ({starts} tries)")
            time.sleep(0.1)
        return self

    def _start_trayer(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            ["trayer", "--edge", "top", "--align", "right", "--height", "24", "--widthtype",
             "request"], env=dict(os.environ, DISPLAY=self.display),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._procs.append(proc)
        return proc

    def tree(self) -> str:
        return x_tree(self.display)

    def tray_has_icon(self, name: str = "ctx") -> bool:
        """True when a window named ``name`` is a child of trayer's panel (icon docked)."""
        return icon_docked(self.tree(), name)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for proc in reversed(self._procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
