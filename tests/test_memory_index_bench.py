"""bench.memory_index's Chroma arms (docs/performance.md, issue 35): Chroma embedded and a
real `chroma run` server reached through the HTTP client, filled with the same vectors
and asked the same queries, each row's recall measured against the exact answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import memory_index
from bench.chroma_server import ChromaStartError, chroma_run


@pytest.mark.slow
@pytest.mark.parametrize("server", [False, True])
def test_a_chroma_arm_fills_and_answers_like_a_full_scan(server: bool) -> None:
    rng = np.random.default_rng(35)
    mat = rng.standard_normal((3000, 384)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    q = mat[:12] + 0.05 * rng.standard_normal((12, 384)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    truth = memory_index._truth(mat, q)
    row = memory_index._chroma_row(len(mat), mat, q, truth, server=server)
    assert row[0] == 3000
    # recall@50 against the exact answer: HNSW finds most of it on random directions
    # (0.71-0.74 here); ids read wrong would find 50 of 3000 by chance, 0.017
    assert float(row[2]) > 0.5, row
    assert 0 < float(row[3]) <= float(row[4]), row  # p50 <= p95


def test_a_chroma_server_that_does_not_listen_in_time_is_reported(tmp_path: Path) -> None:
    """A server not listening within its wait is an error that says so (with what it
    wrote), not a hang; the server is stopped."""
    with (pytest.raises(ChromaStartError, match="did not listen in 0 s"),
          chroma_run(tmp_path / "server", wait_s=0)):
        pass
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline")
                if str(tmp_path) in _read(p)], "the server outlived the error"


def _read(path: Path) -> str:
    try:
        return path.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:  # a process that ended meanwhile
        return ""
