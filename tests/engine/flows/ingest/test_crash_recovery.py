"""kill -9 in the middle of a large ingestion: the store opens, and every source is
absent, keyword-ready (stored, its vectors not made) or fully ready; an interrupted
vector stage resumes at the next open's warm-up, from the embedding cache."""

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
            j = event.job
            sys.stdout.write(f"progress {j.files_done} {j.stage or '-'} {j.embedded}\\n")
            sys.stdout.flush()
    eng.subscribe(show)
    eng.wait(eng.ingest(paths=[sys.argv[2]]))
    print("finished", flush=True)
""")


def _kill_when(data_dir: Path, docs: Path, stage: str, at: int) -> int:
    """Run the child; SIGKILL it once it reports ``stage`` with ``at`` or more files
    (keyword) or chunks embedded (vectors). Returns what it had reported."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data_dir), str(docs)],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ),
                            cwd=Path(__file__).resolve().parents[4])
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    killed_at = None
    try:
        for line in proc.stdout:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "progress" and parts[2] == stage:
                count = int(parts[1] if stage == "keyword" else parts[3])
                if count >= at:
                    proc.send_signal(signal.SIGKILL)
                    killed_at = count
                    break
            if time.monotonic() > deadline or parts[:1] == ["finished"]:
                break
    finally:
        if proc.poll() is None and killed_at is None:
            proc.kill()
        proc.wait(30)
        proc.stdout.close()
    assert killed_at is not None, "ingestion finished before it could be killed"
    return killed_at


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["keyword", "vectors"])
def test_kill_during_ingest_leaves_whole_sources(tmp_path: Path, data_dir: Path,
                                                 stage: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    para = "Paragraph {i}.{j} talks about harbours, tides, ropes and sails in detail. " * 6
    for i in range(400):
        body = "\n\n".join(para.format(i=i, j=j) for j in range(6))
        (docs / f"doc{i:03}.md").write_text(f"# Doc {i}\n\n{body}\n")
    killed_at = _kill_when(data_dir, docs, stage, 40 if stage == "keyword" else 200)

    with ContextEngine.open(data_dir) as eng:
        rt = eng.rt
        assert rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'")[0][0] == 0
        for sid, n_chunks in rt.vault._query("SELECT id, n_chunks FROM sources"):
            stored = rt.vault._query("SELECT count(*) FROM chunks WHERE source_id = ?", (sid,))
            assert stored[0][0] == n_chunks
        status = eng.status()
        # whole sources, each keyword-ready or fully ready; vectors for the ready ones only
        assert status.vectors == status.chunks - status.chunks_waiting
        stages = {s.stage for s in eng.sources()}
        if stage == "keyword":
            assert killed_at <= status.sources < 400 and stages == {"keyword"}
        else:  # every file was stored before the vectors began; some got theirs
            assert status.sources == 400 and stages == {"keyword", "ready"}
            assert 0 < status.sources_waiting < 400
        hits = eng.search("harbours and tides", k=5)
        assert hits and {h.stage for h in hits} <= stages  # found, their stage told
        for h in hits:
            assert ("vector" in h.lanes) == (h.stage == "ready") or h.stage == "ready"
        eng.warm_up(background=False)  # the interrupted vector stage resumes
        resumed = [j for j in eng.jobs() if j.kind == "vectors"]
        assert len(resumed) == 1
        done = eng.wait(resumed[0].id, timeout=120)
        assert done.state == "done" and done.embedded == done.to_embed == status.chunks_waiting
        status = eng.status()
        assert status.vectors == status.chunks and status.sources_waiting == 0
        job = eng.wait(eng.ingest(paths=[str(docs)]))
        assert job.state == "done"
        assert eng.status().sources == 400
        assert eng.status().vectors == eng.status().chunks
