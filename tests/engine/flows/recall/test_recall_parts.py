"""The parts of a call or request (a call's whole output, stored beside its own chunk)
in recall's ranking: found by their words, not by the vector lane, and ranked after
chunks that score about as well (recall.part_vector, recall.part_penalty)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.parts import demoted, is_part
from engine.flows.search.ranking import Ranked, rank_query
from engine.recall.config import RecallConfig
from engine.store.vault.core import ChunkRow
from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines

RARE = "zephyrquartz"  # a word only the middle of the long output holds


def _row(cid: int, part: str | None) -> ChunkRow:
    meta = {"session": "s", "turn": 0, **({"part": part} if part else {})}
    return ChunkRow(cid, 1, cid, "tool", "", "x", 1, 0, None, meta, "s.jsonl", "s",
                    "transcript", None, None)


def _session(engine: ContextEngine, tmp_path: Path) -> None:
    claude = ClaudeLines()
    lines = [f"PASS tests/test_export.py::test_case_{i} exporter handles rows" for i in range(300)]
    lines[150] = f"WARN the {RARE} exporter dropped a column in test_case_150"
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_lines(folder / "s.jsonl", [
        claude.user("run the exporter tests"),
        claude.assistant([tool_use("t1", "Bash", {"command": "pytest -v tests/test_export.py"})],
                         msg_id="m1"),
        claude.tool_result("t1", "\n".join(lines)),
        claude.assistant([text("The exporter tests pass.")], msg_id="m2"),
    ])
    engine.sync([str(folder)])


def test_a_part_ranks_below_a_chunk_that_scores_about_as_well() -> None:
    rows = {1: _row(1, "output"), 2: _row(2, None), 3: _row(3, "request")}
    ranked: list[Ranked] = [(1, 0.50, {}), (2, 0.48, {}), (3, 0.30, {})]
    assert [c for c, _, _ in demoted(ranked, rows, 0.05)] == [2, 1, 3]
    assert [c for c, _, _ in demoted(ranked, rows, 0.0)] == [1, 2, 3]
    assert is_part(rows[1]) and not is_part(rows[2])


def test_parts_are_found_by_their_words_not_by_the_vector_lane(engine: ContextEngine,
                                                               tmp_path: Path) -> None:
    _session(engine, tmp_path)
    rt = engine.rt
    res, _, _ = rank_query(rt, f"{RARE} exporter", 10, expand_session=True,
                           vector_keeps=lambda row: not is_part(row))
    assert res.lanes["vector"], "the vector lane still finds the call's own chunks"
    assert not any(is_part(res.rows[c]) for c in res.lanes["vector"])
    keyword_parts = [c for c in res.lanes["keyword"] if is_part(res.rows[c])]
    assert keyword_parts, "the part holding the rare word is found by its words"
    # and recall (the default: parts out of the vector lane) shows that part's line
    hits = engine.recall(f"{RARE} exporter", k=5).hits
    assert hits is not None
    assert any(RARE in h.excerpt for h in hits)


def test_without_the_setting_parts_are_in_the_vector_lane(engine: ContextEngine,
                                                          tmp_path: Path) -> None:
    """The check above can fail: unfiltered, the vector lane does return parts."""
    _session(engine, tmp_path)
    res, _, _ = rank_query(engine.rt, f"{RARE} exporter", 10, expand_session=True)
    assert any(is_part(res.rows[c]) for c in res.lanes["vector"])


def test_part_penalty_is_bounded() -> None:
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(RecallConfig(), part_penalty=2.0)
    assert "recall.part_penalty" in str(err.value)
