"""Long operations are jobs done in steps (issue 32): a delete hides what it names at
once and removes it a step at a time while reads go on, resumes after a stop, and
gives space back when large; `compact` gives back what deletes freed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.api import Event, JobChanged
from engine.facade import ContextEngine
from engine.flows.keeping import compaction, deleting


def _folder(tmp_path: Path, n: int, word: str = "harbour") -> Path:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(n):
        (folder / f"doc{i:03d}.md").write_text(
            f"# Doc {i}\n\n" + "\n\n".join(f"The {word} note {i}.{p} tells of tides and "
                                          f"ropes at some length. " * 8 for p in range(12)))
    return folder


def _pause_when_deleting(eng: ContextEngine, files: int) -> None:
    """Pause the writer (once) when a delete job has removed ``files`` sources."""
    paused: list[bool] = []

    def listen(event: Event) -> None:
        if isinstance(event, JobChanged) and event.job.kind == "delete" and not paused \
                and event.job.files_done >= files and event.job.state == "running":
            paused.append(True)
            eng.pause_ingestion()
    eng.subscribe(listen)


def test_a_delete_is_a_job_in_steps_that_reads_pass(data_dir: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deleting, "DELETE_STEP_CHUNKS", 8)  # many steps for a small store
    monkeypatch.setattr(deleting, "STEP_CHUNKS_MAX", 8)
    folder = _folder(tmp_path, 12)
    keep = tmp_path / "keep.md"
    keep.write_text("# Keep\n\nThe lighthouse keeper's log stays.\n")
    with ContextEngine.open(data_dir) as eng:
        assert eng.wait(eng.ingest(paths=[str(folder), str(keep)]), 60).state == "done"
        before = eng.status()
        _pause_when_deleting(eng, 3)
        result = eng.delete(str(folder), wait=False)
        assert result.deleted == 12 and result.job
        snap = eng.job(result.job)
        while not (snap.files_done >= 3 and eng._jobs.paused):  # stopped between steps
            snap = eng.wait(result.job, timeout=0.05)
        snap = eng.job(result.job)
        assert snap.kind == "delete" and snap.state == "running"
        assert 3 <= snap.files_done < snap.files_total == 12 and snap.chunks > 0
        # meanwhile every read answers, and none sees what is being deleted
        status = eng.status()
        assert status.sources == 1 and status.chunks < before.chunks
        assert [s.uri for s in eng.sources()] == [str(keep)]
        assert all("many" not in h.path for h in eng.search("harbour tides ropes", k=20))
        assert eng.audit(limit=5) is not None
        eng.resume_ingestion()
        done = eng.wait(result.job, timeout=60)
        assert done.state == "done" and done.files_done == 12
        assert done.chunks == before.chunks - eng.status().chunks
        assert eng.status().vectors == eng.status().chunks
        left = eng.rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'")
        assert left[0][0] == 0


def test_delete_steps_are_sized_by_their_time() -> None:
    """A step that took longer than STEP_S makes the next one smaller, a quick one makes
    it bigger (half way, in ratio, to the count that fits), always within the bounds:
    under load a step stays short, so a read or a write waits for one short step."""
    aim, first = deleting.STEP_S, deleting.DELETE_STEP_CHUNKS
    assert deleting.next_step(first, aim) == first
    slower = deleting.next_step(first, 4 * aim)
    assert slower == first // 2
    assert deleting.next_step(first, aim / 4) == 2 * first
    assert deleting.next_step(first, 1000 * aim) == deleting.STEP_CHUNKS_MIN
    assert deleting.next_step(first, 0.0) == deleting.STEP_CHUNKS_MAX
    limit = first
    for _ in range(12):  # steps that stay slow keep shrinking it to the floor
        limit = deleting.next_step(limit, aim * limit / 8)
    assert limit < 16


def test_a_delete_cut_short_is_finished_at_the_next_open(data_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(deleting, "DELETE_STEP_CHUNKS", 8)
    monkeypatch.setattr(deleting, "STEP_CHUNKS_MAX", 8)
    folder = _folder(tmp_path, 6)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(folder)]), 60)
        _pause_when_deleting(eng, 2)
        job = eng.delete(str(folder), wait=False).job
        while not eng._jobs.paused:
            eng.wait(job, timeout=0.05)
        eng.cancel_job(job)
        eng.resume_ingestion()
        assert eng.wait(job, timeout=30).state == "cancelled"
        assert eng.status().sources == 0  # hidden at once, whatever is left of them
        assert eng.rt.vault._query(
            "SELECT count(*) FROM sources WHERE state = 'deleting'")[0][0] > 0
    with ContextEngine.open(data_dir) as eng:
        [resumed] = [j for j in eng.jobs() if j.kind == "delete"]
        assert eng.wait(resumed.id, timeout=60).state == "done"
        assert eng.rt.vault._query("SELECT count(*) FROM sources")[0][0] == 0
        assert eng.rt.vault._query("SELECT count(*) FROM chunks")[0][0] == 0
        assert eng.status().vectors == 0


def _vault_files(root: Path) -> int:
    return sum((root / n).stat().st_size for n in ("vault.db", "vault.db-wal")
               if (root / n).exists())


def test_compact_gives_space_back(data_dir: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, 40)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(folder)]), 120)
        eng.delete(str(folder))
        pages, free = eng.rt.vault.free_pages()
        assert free > 0  # a delete frees pages; the file keeps its size
        size = _vault_files(data_dir)
        result = eng.compact()
        assert result.job and eng.job(result.job).kind == "compact"
        assert result.bytes_after < result.bytes_before
        assert eng.rt.vault.free_pages()[1] == 0 and eng.rt.vault.free_pages()[0] < pages
        assert eng.rt.vault.incremental()  # from now on, in steps
        assert _vault_files(data_dir) < size
        assert os.path.getsize(data_dir / "vault.db-wal") < 8 * 4096  # cut (then audit rows)
        # a second store's worth, deleted and compacted again: in steps this time
        (tmp_path / "b").mkdir()
        other = _folder(tmp_path / "b", 20, "anchor")
        eng.wait(eng.ingest(paths=[str(other)]), 120)
        eng.delete(str(other))
        assert eng.rt.vault.free_pages()[1] > 0
        again = eng.compact()
        assert again.bytes_after < again.bytes_before and eng.rt.vault.free_pages()[1] == 0


def test_a_large_delete_compacts_by_itself(data_dir: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deleting, "AUTO_COMPACT_CHUNKS", 50)
    folder = _folder(tmp_path, 20)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(folder)]), 120)
        done = eng.wait(eng.delete(str(folder)).job, 10)
        assert done.chunks >= 50 and done.bytes_total > done.bytes > 0
        assert eng.rt.vault.free_pages()[1] == 0
        assert os.path.getsize(data_dir / "vault.db-wal") < 8 * 4096  # cut (then audit rows)
    assert compaction.AUTO_COMPACT_CHUNKS >= 1000  # the real threshold stays for big deletes
