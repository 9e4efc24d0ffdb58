"""kill -9 in the middle of a large ingestion: the store opens, sources are whole or absent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine.facade import ContextEngine

CHILD = textwrap.dedent("""
    import sys
    from engine.facade import ContextEngine
    eng = ContextEngine.open(sys.argv[1])
    def show(event):
        if event.kind == "job":
            sys.stdout.write(f"progress {event.job.files_done}\\n")
            sys.stdout.flush()
    eng.subscribe(show)
    eng.wait(eng.ingest(paths=[sys.argv[2]]))
    print("finished", flush=True)
""")


@pytest.mark.slow
def test_kill_during_ingest_leaves_whole_sources(tmp_path: Path, data_dir: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    para = "Paragraph {i}.{j} talks about harbours, tides, ropes and sails in detail. " * 6
    for i in range(400):
        body = "\n\n".join(para.format(i=i, j=j) for j in range(6))
        (docs / f"doc{i:03}.md").write_text(f"# Doc {i}\n\n{body}\n")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data_dir), str(docs)],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ),
                            cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    killed_at = None
    try:
        for line in proc.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "progress" and int(parts[1]) >= 40:
                proc.send_signal(signal.SIGKILL)
                killed_at = int(parts[1])
                break
            if time.monotonic() > deadline or parts[:1] == ["finished"]:
                break
    finally:
        if proc.poll() is None and killed_at is None:
            proc.kill()
        proc.wait(30)
        proc.stdout.close()
    assert killed_at is not None, "ingestion finished before it could be killed"

    with ContextEngine.open(data_dir) as eng:
        rt = eng.rt
        assert rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'")[0][0] == 0
        for sid, n_chunks in rt.vault._query("SELECT id, n_chunks FROM sources"):
            stored = rt.vault._query("SELECT count(*) FROM chunks WHERE source_id = ?", (sid,))
            assert stored[0][0] == n_chunks
        status = eng.status()
        assert status.vectors == status.chunks
        assert killed_at <= status.sources < 400
        assert eng.search("harbours and tides", k=5)
        job = eng.wait(eng.ingest(paths=[str(docs)]))
        assert job.state == "done"
        assert eng.status().sources == 400
