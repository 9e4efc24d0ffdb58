"""Chunking by structure: markdown headings, code definitions, RST, plain text, PDF pages."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.ingest.chunking import chunk_document
from engine.ingest.config import ChunkingConfig
from engine.ingest.loaders import load_file, load_text
from engine.tokens import TokenCounter
from engine.types import LoadedDocument
from tests.engine.ingest.chunkcheck import assert_chunk_invariants

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ingest"
COUNTER = TokenCounter.shared()
DEFAULT = ChunkingConfig()
SMALL = ChunkingConfig(target_tokens=40, max_tokens=60, overlap_tokens=8, min_tokens=10)
OVERLAPPING = ChunkingConfig(target_tokens=200, max_tokens=240, overlap_tokens=30)


def _chunks(doc: LoadedDocument, cfg: ChunkingConfig = DEFAULT) -> list:
    chunks = chunk_document(doc, cfg, COUNTER)
    assert_chunk_invariants(doc, cfg, chunks, COUNTER)
    return chunks


def _sentences(n: int, word: str = "word") -> str:
    return " ".join(f"This is sentence {i} about the {word} and its many details." for i in range(n))


@pytest.mark.parametrize("kwargs", [
    {"target_tokens": 15}, {"target_tokens": 300, "max_tokens": 250},
    {"max_tokens": 2001}, {"overlap_tokens": 150}, {"overlap_tokens": -1},
    {"min_tokens": -1}, {"min_tokens": 500}, {"target_tokens": 200.5}, {"overlap_tokens": True},
])
def test_config_rejects_bad_values(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        ChunkingConfig(**kwargs)


def test_default_config_is_valid() -> None:
    # The defaults were chosen by bench/chunk_sweep.py (see ChunkingConfig): a chunk may
    # pass MiniLM's 256 word pieces (the model embeds its first 256).
    cfg = ChunkingConfig()
    assert cfg.target_tokens <= cfg.max_tokens
    assert 2 * cfg.overlap_tokens < cfg.target_tokens


def test_markdown_splits_at_headings_with_heading_paths() -> None:
    text = (
        "# Install\n\n" + _sentences(3) + "\n\n## Linux\n\n" + _sentences(40, "kernel")
        + "\n\n## Windows\n\n" + _sentences(30, "registry") + "\n"
    )
    chunks = _chunks(load_text(text, fmt="markdown"))
    headings = [c.heading for c in chunks]
    assert headings[0] == "Install"
    assert "Install > Linux" in headings and "Install > Windows" in headings
    assert headings.index("Install > Linux") < headings.index("Install > Windows")
    # The heading line is in the first chunk of its section, never alone.
    first_linux = next(c for c in chunks if c.heading == "Install > Linux")
    assert first_linux.text.startswith("## Linux\n\n")
    assert all(c.text.strip() not in ("## Linux", "## Windows", "# Install") for c in chunks)
    # No chunk mixes the kernel and the registry sections.
    assert not any("kernel" in c.text and "registry" in c.text for c in chunks)


def test_consecutive_chunks_of_a_section_overlap() -> None:
    text = "# Long\n\n" + "\n\n".join(_sentences(4, f"topic{i}") for i in range(30))
    chunks = _chunks(load_text(text, fmt="markdown"), OVERLAPPING)
    assert len(chunks) >= 4
    for prev, nxt in itertools.pairwise(chunks):
        prev_end = prev.start + len(prev.text)
        assert nxt.start < prev_end
        overlap = COUNTER.count(text[nxt.start:prev_end])
        assert 10 <= overlap <= 45


def test_default_chunks_do_not_overlap() -> None:
    # overlap_tokens = 0 by default (bench/chunk_sweep.py): nothing is embedded or sent twice.
    text = "\n\n".join(_sentences(4, f"topic{i}") for i in range(40))
    chunks = _chunks(load_text(text))
    assert len(chunks) >= 3
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start >= prev.start + len(prev.text)


def test_no_overlap_across_sections() -> None:
    text = "# A\n\n" + _sentences(30, "apple") + "\n\n# B\n\n" + _sentences(30, "berry")
    chunks = _chunks(load_text(text, fmt="markdown"))
    b_first = next(i for i, c in enumerate(chunks) if c.heading == "B")
    prev = chunks[b_first - 1]
    assert prev.start + len(prev.text) <= chunks[b_first].start


def test_bare_heading_travels_with_the_next_section() -> None:
    text = "# Guide\n\n## Setup\n\n" + _sentences(40, "setup") + "\n"
    chunks = _chunks(load_text(text, fmt="markdown"))
    assert chunks[0].text.startswith("# Guide\n\n## Setup")
    assert chunks[0].heading == "Guide > Setup"


def test_small_sections_merge_keeping_the_first_heading() -> None:
    text = "# Alpha\n\nTiny.\n\n# Beta\n\nAlso tiny.\n\n# Gamma\n\nSmall as well.\n"
    chunks = _chunks(load_text(text, fmt="markdown"))
    assert len(chunks) == 1
    assert chunks[0].heading == "Alpha"
    assert chunks[0].text == text.strip()


def test_fenced_code_is_not_cut_at_headings_or_blank_lines() -> None:
    fence = "```python\n# not a heading\n\ndef f():\n\n    return 1\n```"
    text = "# Real\n\nIntro.\n\n" + fence + "\n\nAfter.\n"
    chunks = _chunks(load_text(text, fmt="markdown"), SMALL)
    assert all(c.heading == "Real" for c in chunks)
    assert any(fence in c.text for c in chunks)


def test_markdown_fixture_headings() -> None:
    chunks = _chunks(load_file(FIXTURES / "guide.md"), SMALL)
    headings = {c.heading for c in chunks}
    assert "Field guide > Install > Linux" in headings
    assert "Setext heading" in headings
    assert not any("not a heading" in h for h in headings)


def test_overlong_paragraph_splits_at_sentences() -> None:
    text = _sentences(80)
    chunks = _chunks(load_text(text), DEFAULT)
    assert len(chunks) > 2
    for c in chunks[:-1]:
        assert c.text.endswith(".")  # ends at a sentence boundary
        assert c.tokens >= DEFAULT.target_tokens // 2


def test_text_without_breaks_splits_by_tokens() -> None:
    text = "x" * 20_000
    chunks = _chunks(load_text(text))
    assert len(chunks) > 5
    cjk = "日本語のテキストです" * 600
    assert len(_chunks(load_text(cjk))) > 3


def test_code_splits_at_definitions() -> None:
    chunks = _chunks(load_file(FIXTURES / "server.go"), SMALL)
    assert {"Server", "Start", "main"} <= {c.heading for c in chunks}
    assert all(c.kind == "code" and c.meta == {"language": "go"} for c in chunks)
    start = next(c for c in chunks if c.heading == "Start")
    assert start.text.startswith("// Start starts the server.\nfunc (s *Server) Start()")


def test_python_class_members_when_the_class_is_large() -> None:
    methods = "\n\n".join(
        f"    def method_{i}(self) -> int:\n        \"\"\"{_sentences(2)}\"\"\"\n        return {i}"
        for i in range(12))
    text = "import os\n\n\nclass Big:\n    \"\"\"A big class.\"\"\"\n\n" + methods + "\n"
    doc = load_text(text, fmt="code", language="python", kind="code")
    chunks = _chunks(doc, SMALL)
    headings = [c.heading for c in chunks]
    assert "Big.method_0" in headings and "Big.method_11" in headings
    header = next(c for c in chunks if "class Big:" in c.text)
    assert "def method_0" in header.text  # the class header goes with its first member


def test_overlong_definition_splits_at_blank_lines_then_lines() -> None:
    body = "\n".join(f"    value_{i} = compute({i}, 'some argument text')" for i in range(200))
    text = f"def huge():\n{body}\n    return 0\n"
    doc = load_text(text, fmt="code", language="python", kind="code")
    chunks = _chunks(doc)
    assert len(chunks) > 3
    assert all(c.heading == "huge" for c in chunks)
    # Cut at line ends: every chunk but the last ends with a full line.
    for c in chunks[:-1]:
        end = c.start + len(c.text)
        assert text[end] == "\n"


def test_rst_headings_make_sections() -> None:
    chunks = _chunks(load_file(FIXTURES / "manual.rst"), SMALL)
    assert chunks[0].heading == "Field manual"
    doc = load_file(FIXTURES / "manual.rst")
    many = doc.text.replace("Use it well.", _sentences(30))
    chunks = _chunks(LoadedDocument(doc.uri, doc.kind, doc.title, many, doc.fmt, meta=doc.meta))
    assert any(c.heading == "Field manual > Usage" for c in chunks)


def test_pdf_chunks_carry_page_numbers() -> None:
    pages = [_sentences(30, "first"), _sentences(30, "second")]
    text = "\n\n".join(pages)
    doc = LoadedDocument("x", "document", "t", text, "pdf",
                         meta={"pages": [0, len(pages[0]) + 2]})
    chunks = _chunks(doc)
    assert chunks[0].meta["page"] == 1 and chunks[-1].meta["page"] == 2
    for c in chunks:  # the page a chunk starts on
        assert c.meta["page"] == (2 if c.start >= len(pages[0]) + 2 else 1)


def test_empty_document_gives_no_chunks() -> None:
    doc = LoadedDocument("x", "document", "t", " \n\t\n", "markdown")
    assert chunk_document(doc, DEFAULT, COUNTER) == []


def test_markdown_throughput_print() -> None:
    """Not a timing assertion: prints MB/s so a regression shows in -s output."""
    section = "## Part {i}\n\n" + "\n\n".join(_sentences(5, "throughput") for _ in range(6))
    text = "# Doc\n\n" + "\n\n".join(section.format(i=i) for i in range(150))
    doc = load_text(text, fmt="markdown")
    began = time.perf_counter()
    chunks = chunk_document(doc, DEFAULT, COUNTER)
    elapsed = time.perf_counter() - began
    size = len(text.encode()) / 1e6
    print(f"markdown chunking: {size:.2f} MB in {elapsed:.3f} s = {size / elapsed:.1f} MB/s")
    assert len(chunks) > 100


def test_bare_heading_before_a_section_that_barely_fits() -> None:
    cfg = ChunkingConfig(target_tokens=60, max_tokens=70, overlap_tokens=8, min_tokens=10)
    body = "\n\n".join(["Alpha beta gamma delta epsilon zeta eta theta iota kappa."] * 5)
    text = "# A long heading with quite a few words in it\n\n## Child\n\n" + body
    doc = load_text(text, fmt="markdown")
    chunks = _chunks(doc, cfg)
    assert COUNTER.count(body) <= cfg.max_tokens  # the child alone would fit in one chunk
    assert chunks[0].text.startswith("# A long heading") and "Alpha" in chunks[0].text


def test_preamble_takes_the_next_heading() -> None:
    chunks = _chunks(load_file(FIXTURES / "guide.md"))
    assert chunks[0].text.startswith("---\ntitle: Field guide\n---\n\n# Field guide")
    assert chunks[0].heading == "Field guide"


def test_html_headings_reach_the_chunker() -> None:
    doc = load_file(FIXTURES / "page.html")
    text = doc.text.replace("- two items", "- two items\n\n" + _sentences(30, "html"))
    chunks = _chunks(LoadedDocument(doc.uri, doc.kind, doc.title, text, doc.fmt))
    assert {"Main title", "Main title > Details"} <= {c.heading for c in chunks}
