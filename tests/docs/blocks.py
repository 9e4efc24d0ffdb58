"""The fenced code blocks of README.md and docs/*.md, and what each is for.

A block's info string says what it is:

- ``sh``, ``bash``, ``shell``: commands a user runs; ``console``: the lines that start
  with ``$ `` are (the rest is their output). Run by ``test_docs_run``.
- ``python``, ``py``: a program a user runs. Run by ``test_docs_run``.
- ``toml``, ``json``: a file's contents; must parse (a toml block is a ctx
  ``config.toml`` and passes the engine's config check; a json block may be JSON Lines).
- anything else (no info string, ``text``): output or a diagram, never run.

A runnable block that must not run is preceded (on the line before it, blank lines
allowed) by ``<!-- not-run: why -->``; the tests list every such block with its reason,
so nothing is skipped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL = frozenset({"sh", "bash", "shell", "console"})
PYTHON = frozenset({"python", "py"})
PARSED = frozenset({"toml", "json"})
RUNNABLE = SHELL | PYTHON

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<why>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path  # the markdown file
    line: int  # 1-based line of the opening fence
    lang: str  # the info string's first word, lower case ("" when none)
    text: str
    not_run: str | None  # the marker's reason, None when unmarked

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE

    def commands(self) -> str:
        """The shell text to run (a console block: its ``$ `` lines only)."""
        if self.lang != "console":
            return self.text
        return "\n".join(line[2:] for line in self.text.splitlines() if line.startswith("$ "))


@dataclass(frozen=True)
class Marker:
    path: Path
    line: int
    why: str


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def parse(path: Path) -> tuple[list[Block], list[Marker]]:
    """Every fenced block of ``path`` and every not-run marker (a marker that precedes no
    block is returned too: ``test_docs_static`` refuses it)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    markers: list[Marker] = []
    pending: Marker | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        mark = _NOT_RUN.match(line)
        if mark:
            pending = Marker(path, i + 1, mark["why"])
            markers.append(pending)
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence is None:
            if line.strip():
                pending = None  # a marker applies to the very next block only
            i += 1
            continue
        close = re.compile(rf"^ {{0,3}}{fence['fence'][0]}{{{len(fence['fence'])},}}\s*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j])
            j += 1
        info = fence["info"].strip().split()
        blocks.append(Block(path, i + 1, info[0].lower() if info else "", "\n".join(body) + "\n",
                            pending.why if pending else None))
        pending = None
        i = j + 1
    return blocks, markers


def all_blocks() -> list[Block]:
    return [b for p in doc_files() for b in parse(p)[0]]


def markers_without_block() -> list[Marker]:
    """Markers not followed by a fenced block (a marker must say which block it skips)."""
    out = []
    for path in doc_files():
        blocks, markers = parse(path)
        marked = {(b.path, b.line) for b in blocks if b.not_run is not None}
        lines = path.read_text(encoding="utf-8").splitlines()
        for m in markers:
            nxt = next((k for k in range(m.line, len(lines)) if lines[k].strip()), None)
            if nxt is None or (path, nxt + 1) not in marked:
                out.append(m)
    return out


# Words that stand for something the user must fill in: a block holding one outside a
# comment or a quoted string cannot run as it is written.
PLACEHOLDERS = frozenset({"PATH", "PATHS", "FILE", "DIR", "QUERY", "BACKUP", "SOURCE", "TEXT",
                          "NAME", "VERSION", "DATE", "SECONDS", "ID", "URL", "PORT", "KEY"})
_WORD = re.compile(r"(?<![\w$/{.-])([A-Z][A-Z_]*)(?![\w=}])")


def placeholders(block: Block) -> list[str]:
    """The placeholder words of a shell block (``ctx ingest PATH...``), outside comments
    and quotes."""
    found: list[str] = []
    for line in block.commands().splitlines():
        code = re.sub(r"(^|\s)#.*$", "", line)
        code = re.sub(r'"[^"]*"|\'[^\']*\'', '""', code)
        found += [w for w in _WORD.findall(code) if w in PLACEHOLDERS]
    return found
