"""Property tests: the chunker's invariants hold on random markdown, code and text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest.chunking import chunk_document
from engine.ingest.config import ChunkingConfig
from engine.tokens import TokenCounter
from engine.types import LoadedDocument
from tests.engine.ingest.chunkcheck import assert_chunk_invariants

COUNTER = TokenCounter.shared()
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Words from several scripts, emoji (with modifiers and joiners), combining marks.
WORDS = st.sampled_from([
    "the", "context", "engine", "chunk", "token", "Überraschung", "naïve", "café",
    "e\u0301t\u0301e\u0301", "日本語", "のテキスト", "中文文本", "한국어", "русский", "עברית",
    "العربية", "🙂", "👍🏽", "👩‍👩‍👧", "🇫🇷", "❤️", "x" * 40, "supercalifragilistic",
    "3.14159", "foo_bar()", "{\"k\": 1}", "https://example.org/a?b=c", "—", "…", "。", "！",
])
SPACES = st.sampled_from([" ", " ", " ", "  ", "\t", "\u3000", "\u00a0"])


@st.composite
def sentences(draw: st.DrawFn) -> str:
    words = draw(st.lists(WORDS, min_size=1, max_size=30))
    out = words[0]
    for word in words[1:]:
        out += (draw(SPACES) if draw(st.booleans()) else "") + word
    return out + draw(st.sampled_from([".", "!", "?", "", "。", "…"]))


@st.composite
def paragraphs(draw: st.DrawFn) -> str:
    parts = draw(st.lists(sentences(), min_size=1, max_size=8))
    return "".join(p + draw(st.sampled_from([" ", "\n", " ", ""])) for p in parts)


@st.composite
def markdown_docs(draw: st.DrawFn) -> str:
    blocks: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["h", "p", "p", "p", "list", "fence", "setext", "empty"]))
        if kind == "h":
            blocks.append("#" * draw(st.integers(1, 6)) + " " + draw(sentences()))
        elif kind == "setext":
            blocks.append(draw(sentences()) + "\n" + draw(st.sampled_from(["===", "---"])))
        elif kind == "list":
            items = draw(st.lists(sentences(), min_size=1, max_size=6))
            blocks.append("\n".join("- " + item for item in items))
        elif kind == "fence":
            body = draw(st.lists(paragraphs(), min_size=0, max_size=3))
            closed = draw(st.booleans())
            blocks.append("```\n" + "\n\n".join(body) + ("\n```" if closed else ""))
        elif kind == "empty":
            blocks.append(draw(st.sampled_from(["", "   ", "\t"])))
        else:
            blocks.append(draw(paragraphs()))
    seps = st.sampled_from(["\n\n", "\n", "\n\n\n", "\n  \n"])
    return "".join(b + draw(seps) for b in blocks)


@st.composite
def code_docs(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 12))):
        name = draw(st.sampled_from(["alpha", "beta", "gamma_δ", "run", "main"]))
        kind = draw(st.sampled_from(["def", "class", "func", "comment", "stmt"]))
        if kind == "def":
            lines.append(f"def {name}(x):")
        elif kind == "class":
            lines.append(f"class {name.title()}:")
            lines.append(f"    def {name}(self):")
        elif kind == "func":
            lines.append(f"func {name}() {{")
        elif kind == "comment":
            lines.append("# " + draw(sentences()))
        for _ in range(draw(st.integers(0, 12))):
            indent = draw(st.sampled_from(["", "    ", "        ", "\t"]))
            lines.append(indent + draw(sentences()) if draw(st.booleans()) else "")
    return "\n".join(lines) + "\n"


@st.composite
def configs(draw: st.DrawFn) -> ChunkingConfig:
    target = draw(st.integers(16, 260))
    return ChunkingConfig(
        target_tokens=target,
        max_tokens=draw(st.integers(target, target + 80)),
        overlap_tokens=draw(st.integers(0, (target - 1) // 2)),
        min_tokens=draw(st.integers(0, target)),
    )


def _doc(text: str, fmt: str, language: str | None = None) -> LoadedDocument:
    kind = "code" if fmt == "code" else "document"
    return LoadedDocument(uri="test:doc", kind=kind, title="t", text=text, fmt=fmt,
                          language=language)


@SETTINGS
@given(text=markdown_docs(), cfg=configs())
def test_markdown_invariants(text: str, cfg: ChunkingConfig) -> None:
    doc = _doc(text, "markdown")
    assert_chunk_invariants(doc, cfg, chunk_document(doc, cfg, COUNTER), COUNTER)


@SETTINGS
@given(text=code_docs(), cfg=configs(), language=st.sampled_from(["python", "go", "c", None]))
def test_code_invariants(text: str, cfg: ChunkingConfig, language: str | None) -> None:
    doc = _doc(text, "code", language)
    chunks = chunk_document(doc, cfg, COUNTER)
    assert_chunk_invariants(doc, cfg, chunks, COUNTER)
    assert all(c.kind == "code" and c.meta.get("language") == language for c in chunks)


@SETTINGS
@given(text=st.lists(paragraphs(), min_size=1, max_size=10).map("\n\n".join), cfg=configs(),
       fmt=st.sampled_from(["text", "json", "pdf", "html"]))
def test_text_invariants(text: str, cfg: ChunkingConfig, fmt: str) -> None:
    doc = _doc(text, fmt)
    assert_chunk_invariants(doc, cfg, chunk_document(doc, cfg, COUNTER), COUNTER)


@SETTINGS
@given(text=st.text(min_size=0, max_size=3000), cfg=configs(),
       fmt=st.sampled_from(["text", "markdown", "code"]))
def test_arbitrary_unicode_invariants(text: str, cfg: ChunkingConfig, fmt: str) -> None:
    doc = _doc(text, fmt, "python" if fmt == "code" else None)
    chunks = chunk_document(doc, cfg, COUNTER)
    assert_chunk_invariants(doc, cfg, chunks, COUNTER)
    assert bool(chunks) == bool(text.strip())


@SETTINGS
@given(word=WORDS, repeat=st.integers(1, 400), sep=st.sampled_from(["", " ", "\n"]),
       cfg=configs())
def test_long_runs_without_breaks(word: str, repeat: int, sep: str, cfg: ChunkingConfig) -> None:
    doc = _doc(sep.join([word] * repeat), "text")
    assert_chunk_invariants(doc, cfg, chunk_document(doc, cfg, COUNTER), COUNTER)


@SETTINGS
@given(text=st.lists(paragraphs(), min_size=3, max_size=12).map("\n\n".join))
def test_overlap_is_about_the_configured_size(text: str) -> None:
    cfg = ChunkingConfig(target_tokens=60, max_tokens=80, overlap_tokens=12, min_tokens=5)
    doc = _doc(text, "text")
    chunks = chunk_document(doc, cfg, COUNTER)
    overlaps = assert_chunk_invariants(doc, cfg, chunks, COUNTER)
    assert all(o <= 18 for o in overlaps)  # 1.5 x overlap_tokens at most
    # One section: every pair of consecutive chunks overlaps, or is cut at a paragraph
    # whose own size left no room (rare); most pairs must overlap.
    if len(chunks) >= 4:
        assert len(overlaps) >= (len(chunks) - 1) // 2
