"""bench.far_add (docs/performance.md, issue 35) runs as documented, small: both paths
time their adds, the seal merges the side block, and the prefilter's answers with the
side block are those of the merged index."""

from __future__ import annotations

import pytest

from bench import far_add


def test_the_far_add_bench_runs_and_the_side_block_answers_as_merged(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert far_add.main(["--rows", "20000", "--adds", "2", "--queries", "2"]) == 0
    out = capsys.readouterr().out
    assert "before: rebuild (add_rebuilt)" in out and "after: side block (add)" in out
    assert "same answers: True" in out
    assert out.count("machine: ") == 2
