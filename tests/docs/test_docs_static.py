"""What the docs' code blocks hold, checked without running them (fast; no model).

Every toml block parses and passes the engine's config check (it is a `config.toml`
a user may copy); every json block parses (or each of its lines does: JSON Lines);
a runnable block (shell, python) holds no placeholder (`ctx ingest PATH...`) unless it
is marked `<!-- not-run: why -->`; every marker has a reason and precedes a block; the
blocks that are not run are listed with their reasons (`-rA` shows them); and the
relative links of README.md and docs/ lead to files that exist.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from engine import check_config
from tests.docs.blocks import (
    PARSED,
    RUNNABLE,
    SHELL,
    Block,
    all_blocks,
    doc_files,
    markers_without_block,
    placeholders,
)

BLOCKS = all_blocks()


def _ids(blocks: list[Block]) -> list[str]:
    return [b.where for b in blocks]


PARSE = [b for b in BLOCKS if b.lang in PARSED and b.not_run is None]
NOT_RUN = [b for b in BLOCKS if b.not_run is not None]
TO_RUN = [b for b in BLOCKS if b.runnable and b.not_run is None]


@pytest.mark.parametrize("block", PARSE, ids=_ids(PARSE))
def test_file_blocks_parse(block: Block) -> None:
    if block.lang == "toml":
        data = tomllib.loads(block.text)
        check_config(data)  # a ConfigError names the key
        return
    try:
        json.loads(block.text)
    except json.JSONDecodeError:
        for n, line in enumerate(block.text.splitlines(), start=1):
            if line.strip():
                try:
                    json.loads(line)
                except json.JSONDecodeError as exc:
                    pytest.fail(f"{block.where}: line {n} of the block is not JSON: {exc}")


@pytest.mark.parametrize("block", TO_RUN, ids=_ids(TO_RUN))
def test_runnable_blocks_hold_no_placeholder(block: Block) -> None:
    if block.lang in SHELL:
        assert not placeholders(block), (
            f"{block.where} has placeholders {placeholders(block)}: write a real command, "
            "or mark the block <!-- not-run: why -->")
    assert block.text.strip(), f"{block.where} is empty"


def test_every_marker_has_a_reason_and_a_block() -> None:
    assert not markers_without_block(), [
        f"{m.path.name}:{m.line}" for m in markers_without_block()]
    for block in NOT_RUN:
        assert len(block.not_run or "") >= 10, f"{block.where}: say why it is not run"
        assert block.lang in RUNNABLE | PARSED, (
            f"{block.where}: a ```{block.lang} block is never run; drop the marker")


@pytest.mark.parametrize("block", NOT_RUN, ids=_ids(NOT_RUN))
def test_blocks_not_run_are_listed(block: Block) -> None:
    """One line per block left out on purpose, with its reason (never a silent skip)."""
    print(f"not run: {block.where} ({block.lang}): {block.not_run}")


def test_the_set_up_commands_come_first() -> None:
    readme = [b for b in BLOCKS if b.path.name == "README.md"]
    first = readme[0]
    assert first.lang == "sh" and first.line <= 3
    assert [ln.split()[:2] for ln in first.text.splitlines()] == [["make", "run"],
                                                                  ["make", "test"]]
    assert len(TO_RUN) >= 5  # the runner has something to run


def test_relative_links_lead_somewhere() -> None:
    broken = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.name}: {target}")
    assert not broken, broken
