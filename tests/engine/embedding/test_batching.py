"""Token-bounded batches (what keeps ingestion memory flat) and the heap cap."""

from __future__ import annotations

import platform
import random
import sys

import pytest

from engine.embedding.batching import token_batches
from engine.embedding.heap import cap_heap_retention


def test_long_texts_go_a_few_at_a_time_short_ones_many() -> None:
    lengths = [256] * 10 + [20] * 100
    groups = token_batches(lengths, max_texts=64, max_tokens=1024)
    assert [len(g) for g in groups[:3]] == [4, 4, 2]  # the long ones first, four per run
    assert all(lengths[i] == 20 for g in groups[3:] for i in g)  # never padded to 256
    assert [len(g) for g in groups[3:]] == [51, 49]  # 51 x 20 <= 1024 < 52 x 20


@pytest.mark.parametrize("seed", range(20))
def test_every_text_once_and_every_batch_within_budget(seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.choice([1, 3, 17, 40, 128, 256, 900]) for _ in range(rng.randint(0, 300))]
    max_texts, max_tokens = rng.choice([(1, 256), (8, 512), (64, 1024), (4096, 4096)])
    groups = token_batches(lengths, max_texts=max_texts, max_tokens=max_tokens)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        assert 1 <= len(g) <= max_texts
        if len(g) > 1:  # a single over-long text may exceed the budget alone
            assert len(g) * max(lengths[i] for i in g) <= max_tokens
        assert [lengths[i] for i in g] == sorted((lengths[i] for i in g), reverse=True)
        assert all(2 * max(1, lengths[i]) >= max(1, lengths[g[0]]) for i in g)


def test_heap_cap_is_set_once_on_linux() -> None:
    first = cap_heap_retention()
    assert first is (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")
    assert cap_heap_retention() is first
