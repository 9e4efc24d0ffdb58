"""bench.recall_linevec: a tool call's detail view holds what its embedding view cuts
(the description of a long command first, an edit's new text, never its old text), and
while the bench runs recall reads each chunk's similarity as the mix of its two views:
in the vector lane (a chunk only its detail matches joins the candidates) and in the
rerank's similarities; the engine's own functions come back afterwards."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench import recall_linevec as rl
from engine import lab

LONG_BASH = ("Tool Bash: GOOS=windows golangci-lint run ./cmd/entire/cli/telemetry/... "
             "./cmd/entire/cli/strategy/... --timeout 5m; description=Run linter targeting Windows")


def test_the_view_cut_is_the_products() -> None:
    assert lab.recall_embedview.TOOL_VIEW_CHARS["Tool "] == rl.VIEW_TOOL_CHARS


def test_a_long_tool_line_gets_a_detail_view_with_its_description_first() -> None:
    text = f"User: lint it\nAssistant: Let me lint.\n{LONG_BASH}\nResult (exit 0): ok"
    assert len(LONG_BASH) > rl.VIEW_TOOL_CHARS  # the view cuts its description
    got = rl.line_detail(text)
    assert got is not None
    assert got.startswith("Tool Bash: description=Run linter targeting Windows; GOOS=windows")
    assert rl.line_detail("User: x\nTool Bash: ls -la\nResult (exit 0): a") is None


def test_an_edit_detail_drops_the_old_text() -> None:
    line = ("Tool Edit: /repo/docker/Containerfile; old_string=RUN apk add curl; "
            "new_string=RUN apk update && apk upgrade && apk add curl ca-certificates; "
            "replace_all=false")
    got = rl.line_detail(f"User: x\n{line}\nResult: updated")
    assert got is not None and "old_string" not in got and "apk upgrade" in got
    part = ("Tool Edit (input): /repo/docker/Containerfile\nold_string:\nRUN apk add curl\n"
            "new_string:\nRUN apk update && apk upgrade")
    assert rl.part_detail(part) == "Tool Edit: new_string:\nRUN apk update && apk upgrade"
    assert rl.part_detail("Tool Read (output): 1 package main") is None


def test_detail_texts_take_parts_only_in_the_part_variant() -> None:
    rows = [SimpleNamespace(id=1, kind="tool", meta={}, text=f"User: x\n{LONG_BASH}"),
            SimpleNamespace(id=2, kind="tool", meta={"part": "input"},
                            text="Tool Write (input): /a.py\nprint('hi')"),
            SimpleNamespace(id=3, kind="turn_pair", meta={}, text=f"User: x\n{LONG_BASH}")]
    assert sorted(rl.detail_texts(rows, "line")) == [1]
    assert sorted(rl.detail_texts(rows, "line+part")) == [1, 2]


def _unit(i: int, dim: int = 4) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def _runtime() -> Any:
    vectors = lab.MemoryVectors(4, dead=lambda _sid: [])
    vectors.add([1, 2, 3], np.stack([_unit(0), _unit(1), _unit(2)]))
    return SimpleNamespace(vectors=vectors, metrics=SimpleNamespace(
        alert=lambda *_a, **_k: None))


@pytest.mark.parametrize("mix", [1.0, 0.5])
def test_a_chunk_only_its_detail_matches_joins_the_vector_lane(mix: float) -> None:
    rt, q = _runtime(), _unit(0)
    det = rl.Details([3], np.stack([_unit(0)]), {3: _unit(2)}, mix)
    nearest, similarities = lab.search_lanes.nearest, lab.search_ranking.similarities
    assert nearest(rt, q, 2, lab.Filters())[0][1] != 3  # chunk 3's main view is far
    with rl.with_details(det):
        ids, sims = lab.search_lanes.nearest(rt, q, 2, lab.Filters())
        assert ids == [1, 3] and sims[3] == pytest.approx(mix)
        res: Any = SimpleNamespace(similarity={}, query_vector=q)
        got = lab.search_ranking.similarities(res, {2: _unit(1), 3: _unit(2)})
        assert got[3] == pytest.approx(mix) and got[2] == pytest.approx(0.0)
    assert lab.search_lanes.nearest is nearest
    assert lab.search_ranking.similarities is similarities
    assert nearest(rt, q, 2, lab.Filters())[0][1] != 3


def test_the_engine_comes_back_after_a_failure() -> None:
    det = rl.Details([], np.zeros((0, 4), dtype=np.float32), {}, 1.0)
    closest = lab.search_session_expand.closest
    with pytest.raises(RuntimeError), rl.with_details(det):
        assert lab.search_session_expand.closest is not closest
        raise RuntimeError("boom")
    assert lab.search_session_expand.closest is closest


def test_a_detail_counts_only_above_main_plus_the_offset() -> None:
    q = _unit(0)
    det = rl.Details([7], np.stack([np.array([0.5, 0.8660254, 0, 0], dtype=np.float32)]),
                     {7: _unit(0)}, 1.0, offset=0.1)
    assert det.merged(7, 0.2, q) == pytest.approx(0.4)  # 0.2 + (0.5 - 0.2 - 0.1)
    assert det.merged(7, 0.45, q) == pytest.approx(0.45)  # 0.5 is not above 0.45 + 0.1
    assert det.merged(8, 0.3, q) == 0.3  # no detail view: its main similarity
