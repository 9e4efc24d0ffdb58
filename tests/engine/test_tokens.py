from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tokens import TokenCounter

tc = TokenCounter.shared()


def test_count_and_batch_agree() -> None:
    texts = ["hello world", "", "日本語のテキスト", "emoji 🎉🎉 and more"]
    assert tc.count_batch(texts) == [tc.count(t) for t in texts]
    assert tc.count("hello world") == 2


def test_special_token_text_is_plain() -> None:
    assert tc.count("<|endoftext|>") > 1


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=40))
def test_truncate_is_a_prefix_within_limit(text: str, n: int) -> None:
    cut = tc.truncate(text, n)
    assert text.startswith(cut)
    assert tc.count(cut) <= n
    if tc.count(text) <= n:
        assert cut == text


def test_truncate_never_splits_a_character() -> None:
    text = "👩‍👩‍👧‍👦" * 5
    for n in range(30):
        cut = tc.truncate(text, n)
        cut.encode("utf-8")  # a split surrogate pair or byte would fail here
        assert text.startswith(cut)


def test_count_cache_gives_the_encoders_counts() -> None:
    counter = TokenCounter()
    texts = [f"item {i}: " + "word " * (i % 37) for i in range(counter.COUNT_CACHE * 2 + 5)]
    for _ in range(2):  # second pass: from the cache where it still holds them
        for t in texts:
            assert counter.count(t) == len(counter.encode(t))
    assert len(counter._counts) <= counter.COUNT_CACHE
    long = "x y " * counter.COUNT_CACHE_CHARS
    assert counter.count(long) == len(counter.encode(long))
    assert long not in counter._counts


def test_the_ranks_are_the_files_line_by_line() -> None:
    """The BPE file is parsed in one split (faster at open): every line's token and rank,
    in the file's order, as a line-by-line parse reads them."""
    import base64

    from engine import tokens

    lines = tokens._cl100k_path().read_bytes().splitlines()
    expected = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in lines if ln)}
    got = tokens._load_encoding()._mergeable_ranks
    assert list(got.items()) == list(expected.items()) and len(got) == 100256
