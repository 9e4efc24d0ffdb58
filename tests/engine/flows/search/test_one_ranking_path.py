"""search, recall and build_context rank through one path (issue 34): the plan, lanes,
fuse and rank stages run in ``rank_stages`` only; build_context no longer repeats them."""

from __future__ import annotations

import ast
from pathlib import Path

import engine

ENGINE = Path(engine.__file__).parent


def callers(name: str, root: Path = ENGINE) -> set[str]:
    """The functions under ``root`` whose body calls ``name``."""
    found: set[str] = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                    if called == name:
                        found.add(fn.name)
    return found


def test_the_rank_stages_run_in_one_place() -> None:
    assert callers("rank_hits") == {"rank_stages"}
    # run_lanes: the lanes fused, never ranked (recall's related memory, the fit benches)
    assert callers("lane_stage") == {"rank_stages", "run_lanes"}
    assert "build_context" in callers("rank_stages")


def test_the_guard_sees_a_second_path(tmp_path: Path) -> None:
    (tmp_path / "build.py").write_text(
        "def build_context(rt, plan, res):\n"
        "    hits = lane_stage(rt, plan)\n"
        "    return rank_hits(rt, res)\n", "utf-8")
    assert callers("rank_hits", tmp_path) == {"build_context"}
