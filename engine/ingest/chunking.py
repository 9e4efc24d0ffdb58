"""Cut a loaded document into token-bounded chunks that follow its structure.

The text is first cut into sections (markdown and RST headings, code
definitions, or the whole text), each section into pieces (paragraphs; an
overlong paragraph into sentences or lines, then into word runs), every piece
counted once. Pieces are packed into chunks up to ``target_tokens``, ending
at the strongest break available (section, paragraph, sentence, word), and
each chunk is counted exactly once more, so ``tokens`` is exact and never
above ``max_tokens``. Consecutive chunks of one section overlap by about
``overlap_tokens``. Tiny neighbouring sections are merged, and a heading is
never left alone at the end of a chunk. Every chunk is an exact slice of the
document text, so offsets can be shown and re-checked later.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field, fields

from engine.errors import ConfigError
from engine.ingest.blocks import Block, markdown_blocks, rst_blocks, text_blocks
from engine.ingest.chunkpack import _Packer, _Piece
from engine.ingest.codesplit import find_definitions
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument

_MARKDOWN_FMTS = frozenset({"markdown", "html", "docx"})


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk sizes in cl100k tokens.

    Origin of target_tokens / max_tokens / overlap_tokens (200 / 240 / 0): chosen by
    quality per embedding work on SciFact train (issue 12), with
    ``python -m bench.chunk_sweep --settings 200/240/30,200/240/0,300/360/0,400/480/0,
    1000/1200/0 --sample-every 50 --rounds 2`` (2026-11-23; quality on the
    1,500-abstract subset, every 2nd of the 809 train claims; embedding work over all
    5,183 abstracts, in MiniLM word pieces, cut at its 256):

    | target/max/overlap | word pieces | nDCG@10 | Recall@100 | payload @500/1000/2000 |
    |---|---|---|---|---|
    | 200/240/30 (before) | 2.21 M | 0.852 | 0.990 | 0.849 / 0.891 / 0.923 |
    | 200/240/0 | 2.02 M | 0.853 | 0.990 | 0.859 / 0.889 / 0.926 |
    | 300/360/0 | 1.63 M | 0.848 | 0.990 | 0.844 / 0.889 / 0.926 |
    | 400/480/0 | 1.38 M | 0.848 | 0.988 | 0.844 / 0.879 / 0.909 |
    | 1000/1200/0 | 1.27 M | 0.847 | 0.985 | 0.837 / 0.879 / 0.904 |

    Overlap bought nothing measurable (and overlapping chunks sent together repeat
    text): it goes, for 9% less embedding work. 300/360/0 looked as good on the
    subset for 74% of the work, but on the whole corpus (``python -m bench.scifact``,
    all 809 claims) it lost payload recall: 0.744 / 0.794 / 0.847 at 500 / 1000 /
    2000 tokens against 0.756 / 0.812 / 0.859 at 200/240/30; and its chunks pass
    MiniLM's 256 word pieces, leaving their tails to the keyword lane on long
    documents, which no benchmark here covers. Conversations are unaffected (a turn
    is one chunk unless over max_tokens; LoCoMo's longest turn is 112 tokens), and so
    are transcripts (chunked by ``engine.recall.chunks``).
    """

    target_tokens: int = 200
    max_tokens: int = 240
    overlap_tokens: int = 0
    min_tokens: int = 20

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"chunking.{f.name} must be an integer")
        if not 16 <= self.target_tokens <= self.max_tokens <= 2000:
            raise ConfigError("chunking needs 16 <= target_tokens <= max_tokens <= 2000")
        if self.overlap_tokens < 0 or 2 * self.overlap_tokens >= self.target_tokens:
            raise ConfigError("chunking needs 0 <= overlap_tokens < target_tokens / 2")
        if not 0 <= self.min_tokens <= self.target_tokens:
            raise ConfigError("chunking needs 0 <= min_tokens <= target_tokens")


@dataclass
class _Section:
    heading: str
    blocks: list[Block]
    has_body: bool = True
    pieces: list[_Piece] = field(default_factory=list)


def _sections_from_blocks(blocks: list[Block]) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(heading="", blocks=[])
    for block in blocks:
        if block.level:
            if current.blocks:
                sections.append(current)
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            current = _Section(heading=" > ".join(t for _, t in stack if t), blocks=[block],
                               has_body=False)
        else:
            current.blocks.append(block)
            current.has_body = True
    if current.blocks:
        sections.append(current)
    return sections


def _code_sections(text: str, language: str | None, cfg: ChunkingConfig) -> list[_Section]:
    defs = find_definitions(text, language, split_members_over=cfg.target_tokens * 4)
    sections: list[_Section] = []
    for n, d in enumerate(defs):
        end = defs[n + 1].start if n + 1 < len(defs) else len(text)
        blocks = text_blocks(text, d.start, end, lines=True)
        if blocks:  # a container's header travels with its first member, like a heading
            sections.append(_Section(heading=d.symbol, blocks=blocks, has_body=not d.container))
    return sections


def _groups(sections: list[_Section], cfg: ChunkingConfig) -> list[list[int]]:
    """Indices of sections chunked together: tiny ones merged, bare headings carried on."""
    groups: list[list[int]] = []
    size = 0
    for n, sec in enumerate(sections):
        tokens = sum(p.tokens for p in sec.pieces) + len(sec.pieces)
        # A bare heading opens a group (it belongs to what follows) unless nothing follows.
        opens = not sec.has_body and n + 1 < len(sections)
        if groups and (not sections[groups[-1][-1]].has_body or (
                not opens and (size < cfg.min_tokens or tokens < cfg.min_tokens)
                and size + tokens <= cfg.target_tokens)):
            groups[-1].append(n)
            size += tokens
        else:
            groups.append([n])
            size = tokens
    return groups


def split_span(text: str, start: int, end: int, cfg: ChunkingConfig, counter: TokenCounter
               ) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` as plain text: (start, end, tokens) of exact slices."""
    packer = _Packer(text, cfg, counter)
    pieces = packer.pieces(text_blocks(text, start, end, lines=False), 0)
    return [(s, e, t) for s, e, t, _ in packer.pack(pieces)]


def chunk_document(doc: LoadedDocument, cfg: ChunkingConfig, counter: TokenCounter
                   ) -> list[ChunkDraft]:
    """Cut ``doc`` into chunks in source order (ordinals 0..n-1).

    Every chunk is ``doc.text[c.start:c.start + len(c.text)]``, has
    ``tokens == counter.count(c.text) <= cfg.max_tokens``, starts and ends on
    non-whitespace, and together the chunks cover every non-whitespace
    character. Markdown (and HTML/DOCX text) splits at headings, ``heading``
    being the heading path ("Install > Linux"); code splits at definitions
    (``kind="code"``, ``heading`` the symbol, ``meta["language"]``); a
    conversation gives one chunk per turn (see :mod:`engine.ingest.conversation`).
    """
    if doc.fmt == "conversation":
        from engine.ingest.conversation import chunk_conversation

        return chunk_conversation(doc, cfg, counter)
    text = doc.text
    if doc.fmt in _MARKDOWN_FMTS:
        sections = _sections_from_blocks(markdown_blocks(text))
    elif doc.fmt == "code":
        sections = _code_sections(text, doc.language, cfg)
    elif doc.meta.get("markup") == "rst":
        sections = _sections_from_blocks(rst_blocks(text))
    else:
        sections = [_Section("", text_blocks(text, 0, len(text), lines=doc.fmt == "json"))]
    packer = _Packer(text, cfg, counter)
    for n, sec in enumerate(sections):
        sec.pieces = packer.pieces(sec.blocks, n)
    kind = "code" if doc.fmt == "code" else "section"
    base_meta: dict[str, object] = {"language": doc.language} if kind == "code" else {}
    pages = doc.meta.get("pages") if doc.fmt == "pdf" else None
    drafts: list[ChunkDraft] = []
    for group in _groups(sections, cfg):
        for a, b in itertools.pairwise(group):  # a bare heading must fit with what follows
            head = sum(p.tokens + 1 for p in sections[a].pieces)
            if (not sections[a].has_body and len(sections[b].pieces) == 1
                    and head + sections[b].pieces[0].tokens > cfg.max_tokens):
                sections[b].pieces = packer.pieces(sections[b].blocks, b, whole=False)
        heading_of: dict[int, str] = {}
        carry = sections[group[-1]].heading
        for n in reversed(group):  # a bare heading takes the name of what follows it
            if sections[n].has_body or n == group[-1]:
                carry = sections[n].heading
            heading_of[n] = carry
        pieces = [p for n in group for p in sections[n].pieces]
        for start, end, tokens, first in packer.pack(pieces):
            heading, j = "", first
            while not heading and j < len(pieces) and pieces[j].start < end:
                heading = heading_of[pieces[j].sec]  # a preamble takes the next heading
                j += 1
            meta = dict(base_meta)
            if pages:
                meta["page"] = bisect.bisect_right(pages, start)
            drafts.append(ChunkDraft(
                text=text[start:end], ordinal=len(drafts), tokens=tokens, kind=kind,
                heading=heading, start=start, meta=meta,
            ))
    return drafts
