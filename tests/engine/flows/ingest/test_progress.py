"""What a job tells while it runs (issue 21): progress within a large file, the job a
queued one waits behind, why a folder gave nothing, which source already holds a text,
and a transcript index's progress within one large session."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from engine.api import Event, JobChanged, JobSnapshot, SourceRef
from engine.facade import ContextEngine
from engine.flows.ingest.vector_stage import STEP_TEXTS


def _big(path: Path, paragraphs: int) -> Path:
    para = "The tide tables of harbour {i} list high and low water for every day. " * 20
    path.write_text("\n\n".join(para.format(i=i) for i in range(paragraphs)))
    return path


def test_progress_moves_within_one_large_file(engine: ContextEngine, tmp_path: Path) -> None:
    big = _big(tmp_path / "tides.md", 300)
    seen: list[tuple[str, int, int]] = []

    def record(event: Event) -> None:
        if isinstance(event, JobChanged) and event.job.kind == "paths":
            seen.append((event.job.stage, event.job.files_done, event.job.embedded))

    engine.subscribe(record)
    snap = engine.wait(engine.ingest(paths=[str(big)]), timeout=120)
    assert snap.state == "done" and snap.files_done == 1 and snap.to_embed == snap.chunks
    assert snap.chunks > 3 * STEP_TEXTS
    during = sorted({e for stage, files, e in seen if stage == "vectors" and files == 1})
    # the one file's chunks get their vectors step by step, not all at its end
    assert len(during) >= 3 and during[-1] == snap.chunks
    assert all(b - a <= STEP_TEXTS for a, b in itertools.pairwise(during))


def test_a_queued_job_says_which_job_it_waits_behind(engine: ContextEngine,
                                                     tmp_path: Path) -> None:
    engine.pause_ingestion()
    try:
        first = engine.ingest(paths=[str(_big(tmp_path / "a.md", 5))])
        second = engine.ingest(text="A second note, queued behind the first.")
        snap = engine.job(second)
        assert snap.state == "queued" and snap.behind == first and snap.waiting == "job"
        assert engine.job(first).waiting == "paused"
    finally:
        engine.resume_ingestion()
    assert engine.wait(second, timeout=60).state == "done"
    assert engine.job(second).behind == "" and engine.job(second).waiting == ""


def test_a_folder_that_gitignore_empties_says_so(engine: ContextEngine, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "out").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*\n")
    (repo / "notes.md").write_text("# Notes\n\nWords.\n")
    (repo / "out" / "out.txt").write_text("output\n")
    snap = engine.wait(engine.ingest(paths=[str(repo)]), timeout=60)
    assert snap.state == "done" and snap.files_total == 0
    assert snap.ignored == {"gitignore": 3}  # .gitignore, notes.md, out/ (.git: a fixed exclude)


def test_the_same_text_under_another_title_names_the_source_that_holds_it(
        engine: ContextEngine) -> None:
    first = engine.wait(engine.ingest(text="Moorings are checked at dawn.", title="Dawn"))
    again = engine.wait(engine.ingest(text="Moorings are checked at dawn.", title="Other"))
    assert first.state == again.state == "done" and again.files_unchanged == 1
    assert again.sources == () and again.existing == (SourceRef(first.sources[0], "Dawn"),)


def test_a_file_with_the_content_of_another_names_it(engine: ContextEngine,
                                                     tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Ropes\n\nSame words in two files.\n")
    first = engine.wait(engine.ingest(paths=[str(tmp_path / "a.md")]), timeout=60)
    (tmp_path / "b.md").write_text("# Ropes\n\nSame words in two files.\n")
    twin = engine.wait(engine.ingest(paths=[str(tmp_path / "b.md")]), timeout=60)
    assert twin.existing == (SourceRef(first.sources[0], "a.md"),)


def test_a_transcript_index_moves_within_its_one_large_file(data_dir: Path,
                                                            tmp_path: Path) -> None:
    """`recall --index` of one large session: its job's count moves chunk by chunk in the
    vector stage, not only when the file ends (issue 21: 11 of 15 files for minutes)."""
    from engine.recall import embedview
    from tests.engine.recall.recall_helpers import transcript, whole

    folder = tmp_path / "sessions"
    folder.mkdir()
    big_name = "claude/obra__episodic-memory__large-conversation.jsonl"
    big = transcript(big_name)
    shutil.copyfile(big, folder / big.name)
    seen: list[JobSnapshot] = []

    def record(event: Event) -> None:
        if isinstance(event, JobChanged) and event.job.kind == "sync":
            seen.append(event.job)

    with ContextEngine.open(data_dir) as eng:
        eng.subscribe(record)
        result = eng.recall(index=[str(folder)])
    assert result.indexed is not None and result.indexed.files == 1
    vectors = [j for j in seen if j.stage == "vectors"]
    assert vectors and all(j.files_done == j.files_total == 1 for j in vectors)
    during = sorted({j.embedded for j in vectors})
    assert vectors[-1].to_embed > 3 * STEP_TEXTS and during[-1] == vectors[-1].to_embed
    # the one file's chunks get their vectors step by step, each step a job update: a step
    # embeds STEP_TEXTS distinct texts, and chunks with the same text (a long output's
    # parts share their head's view) are done with it, so bound by the most chunks that
    # many texts can carry
    assert len(during) >= 3
    per_text = sorted(Counter(embedview.embed_view(c.kind, c.text)
                              for c in whole(big_name)[1]).values(), reverse=True)
    most = sum(per_text[:STEP_TEXTS])
    assert most < vectors[-1].to_embed  # else the bound proves nothing
    assert all(b - a <= most for a, b in itertools.pairwise(during))
