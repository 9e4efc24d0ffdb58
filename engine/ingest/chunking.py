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
from dataclasses import dataclass, field

from engine.ingest.blocks import Block, markdown_blocks, rst_blocks, text_blocks
from engine.ingest.chunkpack import Packer, Piece
from engine.ingest.codesplit import find_definitions
from engine.ingest.config import ChunkingConfig
from engine.ingest.place import placed
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument

_MARKDOWN_FMTS = frozenset({"markdown", "html", "docx"})


@dataclass
class _Section:
    heading: str
    blocks: list[Block]
    has_body: bool = True
    pieces: list[Piece] = field(default_factory=list)


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
    packer = Packer(text, cfg, counter)
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
    return placed(doc, drafts)  # the ingested folder and each chunk's lines (ingest/place.py)
