"""Walking folders: ignore files at every level, excludes, order, symlinks, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.errors import REJECT_UNREADABLE, FileRejected, InvalidInput
from engine.ingest.walker import walk_paths


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def _rels(root: Path, **kwargs: object) -> list[str]:
    out = []
    for item in walk_paths([root], **kwargs):  # type: ignore[arg-type]
        assert isinstance(item, Path), item
        out.append(item.relative_to(root).as_posix())
    return out


def test_sorted_recursive_walk(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.txt": "b", "a/z.md": "z", "a/b/c.py": "c", "A.txt": "A"})
    assert _rels(tmp_path) == ["A.txt", "a/b/c.py", "a/z.md", "b.txt"]


def test_default_excludes(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "keep.py": "", ".git/config": "", "node_modules/x/i.js": "", "pkg/__pycache__/m.pyc": "",
        ".venv/lib/site.py": "", "venv/bin/a": "", "dist/out.js": "", "build/lib/x.py": "",
        "m.pyc": "", ".DS_Store": "", "sub/.tox/log": "", ".mypy_cache/x": "",
        ".pytest_cache/v": "", ".hg/store": "", ".svn/entries": "", "build.py": "",
    })
    assert _rels(tmp_path) == ["build.py", "keep.py"]


def test_nested_gitignore_semantics(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".gitignore": "*.log\n/secret.txt\ntmp/\n",
        "app.log": "", "secret.txt": "", "notes.txt": "", "tmp/a.txt": "",
        "sub/.gitignore": "!keep.log\n*.txt\n",
        "sub/keep.log": "", "sub/drop.log": "", "sub/x.txt": "", "sub/secret.txt": "",
        "sub/code.py": "", "sub/deeper/.gitignore": "!*.txt\n", "sub/deeper/y.txt": "",
        "sub/deeper/tmp/b.txt": "",
    })
    got = _rels(tmp_path)
    assert got == [".gitignore", "notes.txt", "sub/.gitignore", "sub/code.py",
                   "sub/deeper/.gitignore", "sub/deeper/y.txt", "sub/keep.log"]


def test_ignored_folder_cannot_be_reincluded(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "logs/\n!logs/keep.txt\n", "logs/keep.txt": "", "a.md": ""})
    assert _rels(tmp_path) == [".gitignore", "a.md"]


def test_ctxignore_applies_and_beats_gitignore(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".gitignore": "*.md\n", ".ctxignore": "!README.md\n*.csv\n",
        "README.md": "", "other.md": "", "data.csv": "", "a.py": "",
    })
    assert _rels(tmp_path) == [".ctxignore", ".gitignore", "README.md", "a.py"]


def test_respect_gitignore_false_keeps_ctxignore(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.md\n", ".ctxignore": "*.csv\n", "a.md": "", "b.csv": ""})
    assert _rels(tmp_path, respect_gitignore=False) == [".ctxignore", ".gitignore", "a.md"]


def test_gitignore_above_the_walked_folder_in_a_repo(tmp_path: Path) -> None:
    _tree(tmp_path, {".git/HEAD": "", ".gitignore": "docs/drafts/\n*.tmp\n",
                     "docs/a.md": "", "docs/b.tmp": "", "docs/drafts/c.md": ""})
    assert _rels(tmp_path / "docs") == ["a.md"]


def test_gitignore_above_is_ignored_outside_a_repo(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.tmp\n", "docs/b.tmp": ""})
    assert _rels(tmp_path / "docs") == ["b.tmp"]


def test_caller_excludes_cannot_be_reincluded(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "!*.secret\n", "a.secret": "", "b.txt": "",
                     "docs/private/x.md": "", "docs/public/y.md": "", "private/z.md": ""})
    got = _rels(tmp_path, excludes=["*.secret", "docs/private/"])
    assert got == [".gitignore", "b.txt", "docs/public/y.md", "private/z.md"]


def test_files_given_directly_are_yielded_as_is(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.log\n", "app.log": "x", "node_modules/lib.js": "y"})
    direct = [tmp_path / "app.log", tmp_path / "node_modules" / "lib.js"]
    assert list(walk_paths(direct)) == direct


def test_missing_path_is_rejected_and_walk_goes_on(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": ""})
    missing = tmp_path / "missing.txt"
    items = list(walk_paths([missing, tmp_path / "a.txt"]))
    assert isinstance(items[0], FileRejected)
    assert items[0].reason == REJECT_UNREADABLE and items[0].path == str(missing)
    assert items[1] == tmp_path / "a.txt"


def test_duplicates_are_yielded_once(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": "", "b.txt": ""})
    items = list(walk_paths([tmp_path / "a.txt", tmp_path, tmp_path / "b.txt"]))
    assert items == [tmp_path / "a.txt", tmp_path / "b.txt"]


def test_max_files(tmp_path: Path) -> None:
    _tree(tmp_path, {f"f{i:02d}.txt": "" for i in range(10)})
    assert _rels(tmp_path, max_files=3) == ["f00.txt", "f01.txt", "f02.txt"]
    assert _rels(tmp_path, max_files=0) == []
    with pytest.raises(InvalidInput):
        list(walk_paths([tmp_path], max_files=-1))


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlinked_folders_are_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {"real/a.txt": "", "outside/b.txt": ""})
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "real" / "link.txt").symlink_to(tmp_path / "outside" / "b.txt")
    (tmp_path / "real" / "broken.txt").symlink_to(tmp_path / "nowhere.txt")
    items = list(walk_paths([tmp_path / "real"]))
    paths = [i for i in items if isinstance(i, Path)]
    rejected = [i for i in items if isinstance(i, FileRejected)]
    assert paths == [tmp_path / "real" / "a.txt", tmp_path / "real" / "link.txt"]
    assert [r.path for r in rejected] == [str(tmp_path / "real" / "broken.txt")]
    # a broken link is told as one (issue 33, 8): still a failure, with its own detail
    assert rejected[0].reason == REJECT_UNREADABLE and rejected[0].detail == "broken_link"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_folder_is_rejected(tmp_path: Path) -> None:
    _tree(tmp_path, {"locked/a.txt": "", "open/b.txt": ""})
    (tmp_path / "locked").chmod(0)
    try:
        items = list(walk_paths([tmp_path]))
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert isinstance(items[0], FileRejected) and items[0].reason == REJECT_UNREADABLE
    assert items[1:] == [tmp_path / "open" / "b.txt"]
