"""bench.vector_pick (docs/performance.md, issue 35) runs as documented, small: both
picks of the prefilter's candidates timed in turns on a store-shaped index, with the
same answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import vector_pick


def test_the_vector_pick_bench_runs_and_both_picks_answer_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    mix = rng.standard_normal((384, 384)) * np.linspace(3, 0.2, 384)
    sample = tmp_path / "sample.npy"
    np.save(sample, (rng.standard_normal((3000, 384)) @ mix.T + 1.0).astype(np.float32))
    assert vector_pick.main(["--rows", "70000", "--queries", "6",
                             "--sample", str(sample)]) == 0
    out = capsys.readouterr().out
    assert "before: argpartition of every coarse score" in out
    assert "after: sampled threshold (select.cut)" in out
    assert "70,000 float32 rows x 384, 4,000 candidates, 2,000 refined" in out
    assert "same answers (ids, scores to the bit, order): True" in out
    assert out.count("machine: ") == 2
