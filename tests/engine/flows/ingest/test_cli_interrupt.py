"""Ctrl-C during `ctx ingest` (a real process, a real SIGINT): stop at a safe point,
say what was kept, exit 130; the store holds exactly that (issue 10)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.api import SourceInfo
from engine.errors import StoreLocked
from engine.facade import ContextEngine

REPO = Path(__file__).resolve().parents[4]
N_FILES = 3000


def _read_until(fd: int, pattern: re.Pattern[str], proc: subprocess.Popen[bytes],
                deadline: float) -> str:
    seen = ""
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096).decode("utf-8", "replace")
            except OSError:
                break
            if pattern.search(seen):
                return seen
    return seen


def _stored(data_dir: Path, background: bool) -> tuple[list[SourceInfo], Any]:
    """The sources stored, read from the background engine (then stopped) or the store."""
    if not background:
        with ContextEngine.open(data_dir) as eng:
            assert eng.rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'"
                                      )[0][0] == 0
            return eng.sources(), eng.rt.vectors.count()
    from ipc.remote import connect

    remote = connect(data_dir)
    assert remote is not None, "the background engine the CLI started is gone"
    try:
        return remote.sources(), remote.status().vectors
    finally:
        remote.shutdown()
        remote.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the engine lets go of the store
            try:
                ContextEngine.open(data_dir).close()
                break
            except StoreLocked:
                time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["local", "background-engine"])
def test_sigint_stops_at_a_safe_point_and_exits_130(tmp_path: Path, data_dir: Path,
                                                     background: bool) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    para = "Paragraph {i}.{j} is about harbours, tides, ropes and sails in some detail. " * 5
    # enough files for the job to outlast the 2 s before progress shows (fake embedder)
    for i in range(N_FILES):
        body = "\n\n".join(para.format(i=i, j=j) for j in range(3))
        (docs / f"doc{i:04}.md").write_text(f"# Doc {i}\n\n{body}\n")
    # stderr on a pseudo-terminal: the CLI draws its progress line there.
    master, slave = pty.openpty()
    local = [] if background else ["--local"]
    # A suite started in the background by a non-interactive shell runs with SIGINT
    # ignored, which a child inherits; with Python's own handler here, the child
    # starts with the default and turns SIGINT into KeyboardInterrupt as in a terminal.
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", *local, "ingest",
                                 str(docs)], cwd=REPO, env=dict(os.environ),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    finally:
        signal.signal(signal.SIGINT, before)
    os.close(slave)
    try:
        # the keyword stage ("storing: N/3000 files") or the vector stage, after 2 s
        progress = re.compile(rf"storing: [1-9]\d*/{N_FILES} files|meaning-search \d+%")
        seen = _read_until(master, progress, proc, time.monotonic() + 120)
        assert progress.search(seen), f"no progress seen: {seen[-300:]!r}"
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(60)
        seen += _read_until(master, re.compile(r"files not finished"), proc,
                            time.monotonic() + 5)
        try:
            while select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 4096).decode("utf-8", "replace")
        except OSError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        os.close(master)
        assert proc.stdout is not None
        proc.stdout.close()
    assert rc == 130, seen[-500:]
    assert "terminate called" not in seen and "Traceback" not in seen
    m = re.search(r"interrupted: kept (\d+) sources \((\d+) chunks\)", seen)
    assert m, seen[-500:]
    kept, chunks = int(m.group(1)), int(m.group(2))
    sources, vectors = _stored(data_dir, background)
    assert len(sources) == kept and 0 < kept <= N_FILES  # all: stopped in the vector stage
    assert sum(s.n_chunks for s in sources) == chunks
    assert vectors <= chunks  # what was stored and not embedded yet waits for its vectors
    with ContextEngine.open(data_dir) as eng:
        # The rest goes in on the next run; what was kept counts as unchanged, and the
        # run's vector stage makes the vectors the stop left out.
        snap = eng.wait(eng.ingest(paths=[str(docs)]), timeout=600)
        assert snap.state == "done" and snap.files_unchanged == kept
        assert len(eng.sources()) == N_FILES
        status = eng.status()
        assert status.vectors == status.chunks and status.sources_waiting == 0
