"""Recall coverage: how much of what the sessions said some stored chunk holds.

Every transcript under ``../shared/data`` (``transcripts/`` and
``transcripts-public/``, Claude Code and Codex) is synced into a fresh store
(the fake embedder: coverage is about the stored text, not its vectors), and
each transcript's lines are checked against its own stored chunks
(``engine.recall.coverage``: what a line is, what is left out as the harness's).
Printed: a table per folder and kind (lines said, held, share), the lines left
out as harness text, and the stored chunks by kind: the turns', calls', code's and
thinking's own chunks apart from the parts that hold a long request, a call's
whole input or its whole output (new in issue 31). Missed lines are never
printed unless ``--show-missed N`` asks for them (they are user text).

    python -m bench.recall_coverage [--show-missed N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
FOLDERS = ("transcripts/claude", "transcripts/codex",
           "transcripts-public/claude", "transcripts-public/codex")


def measure(shared: Path = SHARED, keep_missed: int = 0) -> dict[str, Any]:
    """Sync every shared transcript into a fresh store and measure its coverage.

    Returns ``{"folders": {folder: Coverage}, "chunks": Counter(kind),
    "files": n, "bad_lines": n, "sync_s": s}``.
    """
    os.environ.setdefault("CTX_EMBEDDER", "fake")
    from engine import ContextEngine
    from engine.lab import Coverage, Held, transcript_lines

    folders = [shared / f for f in FOLDERS if (shared / f).is_dir()]
    with tempfile.TemporaryDirectory(prefix="ctx-coverage-") as home:
        os.environ.setdefault("CTX_PASSPHRASE", "coverage bench passphrase")
        os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
        os.environ["CTX_HOME"] = home
        eng = ContextEngine.open(Path(home))
        try:
            t0 = time.perf_counter()
            res = eng.sync([str(f) for f in folders])
            sync_s = time.perf_counter() - t0
            vault = eng.rt.vault
            rows = vault.chunks(vault.chunk_ids()).values()
        finally:
            eng.close()
    texts: dict[str, list[str]] = defaultdict(list)
    kinds: Counter[str] = Counter()
    for row in rows:
        if row.source.startswith("transcript:"):
            texts[row.source[len("transcript:"):].rsplit("#", 1)[0]].append(row.text)
            part = row.meta.get("part")
            kinds[f"{row.kind}, part {part}" if part else row.kind] += 1
    out: dict[str, Coverage] = {}
    files = 0
    for folder in folders:
        cov = Coverage()
        for path in sorted(folder.rglob("*.jsonl")):
            files += 1
            cov.add(transcript_lines(path), Held(texts.get(str(path.resolve()), ())), keep_missed)
        out[str(folder.relative_to(shared))] = cov
    return {"folders": out, "chunks": kinds, "files": files, "bad_lines": res.bad_lines,
            "sync_s": sync_s}


def _table(folders: dict[str, Any]) -> list[str]:
    from engine.lab import COVERAGE_KINDS as KINDS
    from engine.lab import Coverage

    total = Coverage()
    for cov in folders.values():
        total.said.update(cov.said)
        total.held.update(cov.held)
        total.excluded.update(cov.excluded)
    head = f"{'folder':<28}" + "".join(f"{k:>24}" for k in KINDS)
    lines = [head, "-" * len(head)]
    for name, cov in [*folders.items(), ("all", total)]:
        cells = "".join(f"{f'{cov.held[k]}/{cov.said[k]} {cov.share(k):7.2%}':>24}"
                        for k in KINDS)
        lines.append(f"{name:<28}{cells}")
    lines.append(f"{'left out as harness text':<28}"
                 + "".join(f"{total.excluded[k]:>24}" for k in KINDS))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show-missed", type=int, default=0,
                    help="print up to N missed lines per folder and kind (user text)")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(f"shared data not present: {SHARED}", file=sys.stderr)
        return 2
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    got = measure(keep_missed=args.show_missed)
    print(f"{got['files']} transcripts synced in {got['sync_s']:.1f} s "
          f"(fake embedder), {got['bad_lines']} bad lines skipped\n")
    print("Lines held by a stored chunk (held/said, share), per folder and kind:")
    print("\n".join(_table(got["folders"])))
    chunks = got["chunks"]
    own = sum(n for k, n in chunks.items() if ", part " not in k)
    print(f"\nStored chunks: {sum(chunks.values())}: {own} of turns, calls, code and "
          f"thinking (before the parts, with the last-line fix alone, 53acab6: 5651 chunks, prompts 48.5%, tool inputs 61.2%, tool results 15.8% held), "
          f"{sum(chunks.values()) - own} parts holding a long request, a call's whole input "
          "or its whole output (recall.chunks.max_tool_parts = 0 stores no input or output "
          "parts)")
    for kind, n in sorted(chunks.items()):
        print(f"  {kind:<24}{n:>7}")
    if args.show_missed:
        for name, cov in got["folders"].items():
            for kind, missed in cov.missed.items():
                for line in missed:
                    print(f"MISSED {name} {kind}: {line[:200]}")
    if args.json:
        args.json.write_text(json.dumps({
            "files": got["files"], "bad_lines": got["bad_lines"], "chunks": dict(chunks),
            "folders": {n: {"said": dict(c.said), "held": dict(c.held),
                            "excluded": dict(c.excluded)} for n, c in got["folders"].items()},
        }, indent=2))
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
