"""bench.fit_rank over several question files (``--questions A,B``): the files are named by
letter or path, a chunk answers as bench.recall_quality judges a hit, the CV keeps each
session's questions of every file in one fold, and each file's figures are its own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench import fit_rank as fr


def test_question_files_by_letter_or_path(tmp_path: Path) -> None:
    own = tmp_path / "mine.json"
    own.write_text("{}")
    files = fr.question_files(f"A,B,{own}")
    assert [f.name for f in files] == ["recall_questions.json", "recall_questions_b.json",
                                       "mine.json"]
    assert all(f.is_file() for f in files)
    with pytest.raises(FileNotFoundError, match="--questions: no file"):
        fr.question_files(str(tmp_path / "nowhere.json"))


def test_a_chunk_answers_as_a_recall_hit_does() -> None:
    label = fr.transcript_label({"sid": "s1", "evidence": ["npm  RUN build", "exit 2"]})
    row = SimpleNamespace  # what the label reads of a window row
    assert label(row(id=7, meta={"session": "s1"}, text="$ npm run\n build ok")) == ("7", 1)
    assert label(row(id=8, meta={"session": "s2"}, text="npm run build")) == ("8", 0)
    assert label(row(id=9, meta={"session": "s1"}, text="exit 1")) == ("9", 0)


def _query(answer_at: int, n: int = 12) -> list[tuple[str, int, dict[str, float]]]:
    """A window of ``n`` candidates in fused order whose answer is the ``answer_at``-th
    by similarity (similarity falls with the index, fused rises)."""
    return [(str(i), int(i == answer_at), {"fused": i / n, "similarity": 1 - i / n})
            for i in range(n)]


def _dump(name: str, sessions: list[str], answer_at: list[int]) -> dict[str, Any]:
    return {"kind": "transcript", "split": name, "queries": [_query(a) for a in answer_at],
            "n_relevant": [1] * len(sessions), "groups": sessions, "sets": [[name, len(sessions)]]}


SESSIONS_A = ["s1", "s2", "s3", "s4", "s5"]
SESSIONS_B = ["s1", "s1", "s3", "s6", "s7", "s8"]  # s1 and s3 are asked about in both


def _two_sets() -> dict[str, Any]:
    return fr.merge_dumps([_dump("a.json", SESSIONS_A, [0, 2, 6, 0, 1]),
                           _dump("b.json", SESSIONS_B, [4, 0, 9, 3, 0, 1])])


def test_merged_files_keep_their_order_and_names() -> None:
    dump = _two_sets()
    assert dump["split"] == "a.json + b.json"
    assert len(dump["queries"]) == len(dump["groups"]) == len(dump["n_relevant"]) == 11
    assert fr.set_names(dump) == ["a.json"] * 5 + ["b.json"] * 6


def test_the_cv_keeps_a_sessions_questions_of_every_file_in_one_fold() -> None:
    dump = _two_sets()
    prep = fr.Prepared(dump)
    sessions = SESSIONS_A + SESSIONS_B
    group_of = {id(it): g for it, g in zip(prep.items, sessions, strict=True)}
    trained: list[set[str]] = []

    def fitter(p: fr.Prepared) -> tuple[dict[str, float], list[str]]:
        seen = [group_of[id(it)] for it in p.items]
        for g in set(seen):  # a session is trained on with all its questions, or none
            assert seen.count(g) == sessions.count(g), g
        trained.append(set(seen))
        return {"similarity": 1.0}, []

    cv = fr.cross_validate(prep, dump, fitter, folds=3)
    assert cv is not None and trained
    assert len(trained) == 9  # 3 folds x 3 seeds: one fit per fold, however many figures


def test_each_files_figures_are_its_own() -> None:
    """With weights that do not depend on the training folds, the CV's figures are the
    fixed weights' figures, overall and per file."""
    dump = _two_sets()
    prep = fr.Prepared(dump)
    w = {"similarity": 1.0}
    cv = fr.cross_validate(prep, dump, lambda p: (w, []), folds=3)
    fixed = fr.figures(prep, dump, w)
    assert cv is not None
    assert {m: cv[m] for m in ("hit@5", "mrr@10")} == fixed["all"]
    assert cv["by_set"] == {"a.json": fixed["a.json"], "b.json": fixed["b.json"]}
    # a: answers at 1, 3, 7, 1, 2 by similarity; b: 5, 1, 10, 4, 1, 2
    assert fixed["a.json"] == {"hit@5": 0.8, "mrr@10": round((1 + 1 / 3 + 1 / 7 + 1 + 1 / 2) / 5,
                                                              4)}
    assert fixed["b.json"]["hit@5"] == round(5 / 6, 4)
    assert np.isclose(fixed["all"]["hit@5"], 9 / 11, atol=1e-4)
