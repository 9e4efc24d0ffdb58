"""Find the files to ingest under the paths a user gave.

Folders are walked the way ``git`` would see them: ``.gitignore`` files at
every level (nested semantics, later and deeper rules win), a ``.ctxignore``
file with the same syntax (it wins over ``.gitignore`` in the same folder),
the caller's excludes and a fixed list of folders nobody wants indexed. The
order is deterministic (names sorted), symlinked folders are never followed,
and problems are yielded as :class:`FileRejected` values instead of stopping
the walk, so one unreadable folder does not lose the rest. FIFOs, sockets and
devices are reported (``special_file``), never opened. Paths in reports are
shown with ``\\xNN`` escapes where a name is not valid UTF-8.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from engine.errors import REJECT_SPECIAL, REJECT_UNREADABLE, FileRejected, InvalidInput
from engine.pathnames import shown

log = logging.getLogger(__name__)

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg/", ".svn/", "node_modules/", "__pycache__/", ".venv/", "venv/", ".tox/",
    ".mypy_cache/", ".pytest_cache/", "dist/", "build/", "*.pyc", ".DS_Store",
)
IGNORE_FILES: tuple[str, ...] = (".ctxignore", ".gitignore")  # first wins within one folder
_FIXED = GitIgnoreSpec.from_lines(DEFAULT_EXCLUDES)
_IGNORE_FILE_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class _Rules:
    """The ignore rules of one folder; ``prefix`` turns a walk-relative path into theirs."""

    # (ignore file name, its rules) in precedence order (.ctxignore, then .gitignore)
    specs: tuple[tuple[str, GitIgnoreSpec], ...]
    strip: str  # walk-relative folder of these rules + "/" ("" at or above the walk root)
    prefix: str  # path of the walk root relative to these rules' folder + "/" (above root)

    def decide(self, rel: str, is_dir: bool) -> tuple[bool, str] | None:
        """(True: ignored, False: re-included by a ``!`` rule; the ignore file that
        said so), or None when no rule matched."""
        local = self.prefix + rel[len(self.strip):]
        if is_dir:
            local += "/"
        for name, spec in self.specs:
            result = spec.check_file(local)
            if result.include is not None:
                return bool(result.include), name
        return None


def _read_rules(folder: Path, names: Sequence[str]) -> tuple[tuple[str, GitIgnoreSpec], ...]:
    specs: list[tuple[str, GitIgnoreSpec]] = []
    for name in names:
        path = folder / name
        try:
            if not path.is_file() or path.stat().st_size > _IGNORE_FILE_MAX_BYTES:
                continue
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            log.debug("ignore file unreadable: %s", path)
            continue
        specs.append((name, GitIgnoreSpec.from_lines(lines)))
    return tuple(specs)


def _ancestor_rules(root: Path, names: Sequence[str]) -> list[_Rules]:
    """Rules of the folders between the enclosing git work tree's top and ``root``."""
    try:
        resolved = root.resolve()
    except OSError:
        return []
    ancestors: list[Path] = []
    top: Path | None = None
    for parent in resolved.parents:
        ancestors.append(parent)
        if (parent / ".git").exists():
            top = parent
            break
    # A home folder kept in git (dotfiles) often ignores "*": not meant for other tools.
    if top is None or top == Path.home().resolve():
        return []
    rules: list[_Rules] = []
    for parent in reversed(ancestors):  # outermost first
        specs = _read_rules(parent, names)
        if specs:
            prefix = resolved.relative_to(parent).as_posix() + "/"
            rules.append(_Rules(specs=specs, strip="", prefix=prefix))
    return rules


# What left an entry out (``walk_paths``'s ``ignored`` counts): the fixed excludes and
# the caller's, or an ignore file.
IGNORED_BY = {".gitignore": "gitignore", ".ctxignore": "ctxignore"}


def _ignored_by(rel: str, is_dir: bool, fixed: GitIgnoreSpec, stack: Sequence[_Rules]
                ) -> str | None:
    """Why ``rel`` is ignored ("excluded", "gitignore", "ctxignore"), None if it is not."""
    if fixed.match_file(rel + "/" if is_dir else rel):
        return "excluded"
    for rules in reversed(stack):  # the deepest folder's rules win
        decision = rules.decide(rel, is_dir)
        if decision is not None:
            return IGNORED_BY.get(decision[1], "excluded") if decision[0] else None
    return None


class _Walk:
    """State of one call to :func:`walk_paths` (seen files, count, rules)."""

    def __init__(self, fixed: GitIgnoreSpec, names: tuple[str, ...], max_files: int | None,
                 ignored: dict[str, int] | None = None):
        self.fixed = fixed
        self.names = names
        self.max_files = max_files
        self.count = 0
        self.seen: set[tuple[int, int]] = set()
        self.ignored = ignored if ignored is not None else {}

    def left_out(self, rel: str, is_dir: bool, stack: Sequence[_Rules]) -> bool:
        """Whether ``rel`` is ignored, counting it by rule (the fixed folders nobody
        wants indexed, like .git, are not counted: nobody expects them)."""
        why = _ignored_by(rel, is_dir, self.fixed, stack)
        if why is None:
            return False
        name = rel.rsplit("/", 1)[-1]
        if why != "excluded" or not _FIXED.match_file(name + "/" if is_dir else name):
            self.ignored[why] = self.ignored.get(why, 0) + 1
        return True

    def full(self) -> bool:
        return self.max_files is not None and self.count >= self.max_files

    def accept(self, path: Path, st: os.stat_result) -> bool:
        key = (st.st_dev, st.st_ino)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.count += 1
        return True

    def folder(self, root: Path) -> Iterator[Path | FileRejected]:
        stack = _ancestor_rules(root, self.names)
        yield from self._folder(root, "", stack)

    def _folder(self, folder: Path, rel_dir: str, stack: list[_Rules]
                ) -> Iterator[Path | FileRejected]:
        specs = _read_rules(folder, self.names)
        if specs:
            stack = [*stack, _Rules(specs=specs, strip=rel_dir + "/" if rel_dir else "",
                                    prefix="")]
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            yield FileRejected(shown(folder), REJECT_UNREADABLE)
            return
        for entry in entries:
            if self.full():
                return
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            path = folder / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if not self.left_out(rel, True, stack):
                    yield from self._folder(path, rel, stack)
                continue
            if self.left_out(rel, False, stack):
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError:  # a link whose target is gone says so; else vanished, no access
                broken = _is_link(entry)
                yield FileRejected(shown(path), REJECT_UNREADABLE,
                                   detail=BROKEN_LINK if broken else "")
                continue
            if stat.S_ISDIR(st.st_mode):
                continue  # a symlink to a folder: never followed
            if not stat.S_ISREG(st.st_mode):
                yield FileRejected(shown(path), REJECT_SPECIAL)  # opening a FIFO would block
            elif self.accept(path, st):
                yield path


def walk_paths(
    paths: Sequence[str | Path],
    *,
    excludes: Sequence[str] = (),
    respect_gitignore: bool = True,
    max_files: int | None = None,
    ignored: dict[str, int] | None = None,
) -> Iterator[Path | FileRejected]:
    """Yield the files to ingest under ``paths``, in a deterministic order.

    A file named directly is yielded as given (the user asked for it, so no
    ignore rule applies); a missing path yields ``FileRejected(path,
    "unreadable")``. Folders are walked recursively; ``excludes`` use
    gitignore syntax relative to each walked folder and, like the default
    excludes, cannot be re-included by a ``!`` rule in the tree. ``.ctxignore``
    files are always honoured, ``.gitignore`` files (including those of the
    enclosing git work tree above a walked folder) only when
    ``respect_gitignore``. At most ``max_files`` paths are yielded; a file
    reached twice (named and inside a folder, or by a symlink) is yielded once.
    ``ignored``, when given, counts the entries (files and folders) that rules left
    out, by rule: "gitignore", "ctxignore", "excluded" (the caller's excludes; the
    fixed ones, like ``.git``, are not counted).
    """
    if max_files is not None and max_files < 0:
        raise InvalidInput("max_files must be >= 0")
    fixed = GitIgnoreSpec.from_lines([*DEFAULT_EXCLUDES, *excludes])
    names = IGNORE_FILES if respect_gitignore else (".ctxignore",)
    walk = _Walk(fixed, names, max_files, ignored)
    for raw in paths:
        if walk.full():
            return
        path = Path(raw).expanduser()
        try:
            st = path.stat()
        except OSError:
            yield FileRejected(shown(raw), REJECT_UNREADABLE)
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from walk.folder(path)
        elif not stat.S_ISREG(st.st_mode):
            yield FileRejected(shown(path), REJECT_SPECIAL)
        elif walk.accept(path, st):
            yield path


BROKEN_LINK = "broken_link"  # FileRejected detail: a symbolic link whose target is gone


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False
