"""Type-check the Python code blocks of README.md and docs/*.md (part of `make lint`).

Each ```python block is written to its own module in a temporary folder and checked with
mypy against this checkout (the engine's typed face: engine/__init__.py's TYPE_CHECKING
block), so an example that reads a typed result wrongly (``payload["total_tokens"]`` on a
``Payload``) fails here, before a user copies it. A block preceded by ``<!-- not-run: ... -->``
is still checked: it may not be run, but it must not be wrong.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(?:python|py)\s*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, int, str]]:
    """(file, line, code) of every Python block in README.md and docs/."""
    out = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((str(path.relative_to(REPO)), line, m.group(1)))
    return out


def main() -> int:
    found = blocks()
    if not found:
        print("check_doc_types: no Python blocks in README.md or docs/")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctx-doc-types-") as tmp:
        names = {}
        for i, (file, line, code) in enumerate(found):
            module = Path(tmp) / f"doc_block_{i}.py"
            module.write_text(code, encoding="utf-8")
            names[module.name] = f"{file}:{line}"
        run = subprocess.run(
            [sys.executable, "-m", "mypy", "--follow-imports=silent",
             "--ignore-missing-imports", "--python-version=3.11", "--no-error-summary",
             "--config-file=", *sorted(str(p) for p in Path(tmp).glob("*.py"))],
            capture_output=True, text=True, cwd=REPO, check=False,
            env={"MYPYPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        report = run.stdout
        for name, where in names.items():  # say where each block is, not the temp file

            def located(m: re.Match[str], w: str = where) -> str:
                return f"{w} (block line {m.group(1)})"

            report = re.sub(rf"\S*{re.escape(name)}:(\d+)", located, report)
    if run.returncode:
        sys.stdout.write(report + run.stderr)
        return 1
    print(f"check_doc_types: {len(found)} Python blocks of README.md and docs/ type-check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
