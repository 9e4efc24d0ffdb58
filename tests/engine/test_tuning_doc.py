"""Config has one home per section, one range helper and one table of origins.

- docs/tuning.md has exactly one row per config key, every row names a real key, and
  its value is the code's default (a new setting without a row fails here);
- no section's ``__post_init__`` compares a field with a number by hand: ranges are
  declared with ``engine.config_base.bounded`` and checked by ``check_bounds``;
- config modules (and the rerank, packer, embedding view and lexicon) hold no comment
  block of 6 or more lines, and no config field or constant of theirs carries more than
  one line of comment (a constant's origin is one line pointing at docs/tuning.md; the
  story and the figures live there);
- every section's dataclass lives in its part's ``config.py``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import textwrap
import tokenize
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.config import Config
from engine.config_base import bounded, bounds_of, check_bounds, to_dict
from engine.errors import ConfigError
from engine.retrieval.config import CrossEncoderConfig

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "tuning.md"
# | `key` | value | what it does | split | command | date |
ROW = re.compile(r"^\| `(?P<key>[a-z0-9_.]+)` \| (?P<value>[^|]+) \| (?P<what>[^|]+) \| "
                 r"(?P<split>[^|]+) \| (?P<command>[^|]+) \| (?P<date>[^|]+) \|$")
DATE = re.compile(r"^(-|\d{4}-\d{2}-\d{2})$")
# The [ipc] and [desktop] tables are carried, not read, by the engine (their own
# packages validate them); they have no defaults here.
CARRIED = ("ipc", "desktop")


def sections(cls: type = Config, path: str = "") -> Iterator[tuple[str, type]]:
    """(dotted section, dataclass) for every section and table under ``cls``."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            name = path + f.name
            yield name, hint  # type: ignore[misc]
            yield from sections(hint, name + ".")  # type: ignore[arg-type]


def config_keys() -> dict[str, object]:
    """Every key a user can set (private and carried fields left out) -> its default."""
    out: dict[str, object] = {}
    for name, cls in sections():
        hints = typing.get_type_hints(cls)
        default = cls()
        for f in dataclasses.fields(cls):
            if f.init and not f.name.startswith("_") and not dataclasses.is_dataclass(
                    hints[f.name]):
                out[f"{name}.{f.name}"] = to_dict(getattr(default, f.name))
    return out


def doc_rows(text: str) -> list[re.Match[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("| `"):
            match = ROW.match(line)
            assert match, f"docs/tuning.md: a row not in the table's form: {line}"
            rows.append(match)
    return rows


def test_every_config_key_has_one_row_and_every_row_a_real_key() -> None:
    keys = config_keys()
    rows = [m["key"] for m in doc_rows(DOC.read_text(encoding="utf-8"))]
    doubled = sorted({k for k in rows if rows.count(k) > 1})
    assert not doubled, f"docs/tuning.md: keys with more than one row: {doubled}"
    missing = sorted(set(keys) - set(rows))
    assert not missing, f"docs/tuning.md has no row for: {missing} (add one per key)"
    unknown = sorted(set(rows) - set(keys))
    assert not unknown, f"docs/tuning.md names keys the config does not have: {unknown}"
    assert len(keys) > 150 and not any(k.split(".")[0] in CARRIED for k in keys)


def test_the_table_holds_the_code_defaults() -> None:
    keys = config_keys()
    wrong = []
    for row in doc_rows(DOC.read_text(encoding="utf-8")):
        key, cell = row["key"], row["value"].strip()
        default = keys.get(key)
        if cell in ("(list)", "(table)"):
            if not isinstance(default, list | dict) or cell != (
                    "(list)" if isinstance(default, list) else "(table)"):
                wrong.append(f"{key}: {cell} but the default is {default!r}")
            continue
        value = tomllib.loads(f"v = {cell}")["v"]
        if value != default or type(value) is not type(default):
            wrong.append(f"{key}: {cell} but the default is {default!r}")
    assert not wrong, "docs/tuning.md values differ from the code:\n" + "\n".join(wrong)


def test_each_row_says_what_where_how_and_when() -> None:
    for row in doc_rows(DOC.read_text(encoding="utf-8")):
        assert row["what"].strip() not in ("", "-"), f"{row['key']}: say what it does"
        assert DATE.match(row["date"].strip()), f"{row['key']}: date is - or YYYY-MM-DD"
        command = row["command"].strip()
        assert command == "-" or "`" in command or "replay" in command, \
            f"{row['key']}: the command in backticks, or -"


def _self_names(func: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """Names bound from a field of self in ``func`` (``value = getattr(self, name)``), and
    names bound by a loop over a table of fields and numbers
    (``for key, value, lo, hi in (("x", self.x, 1, 9), ...)``)."""
    names: set[str] = set()
    table: set[str] = set()
    for node in ast.walk(func):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign) and _reads_self(node.value):
            targets = node.targets
        elif isinstance(node, ast.For):
            if any(_is_number(n) for n in ast.walk(node.iter)):
                table |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if _reads_self(node.iter):
                targets = [node.target]
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names, table


def _reads_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
        and not isinstance(node.value, bool)


def hand_written_ranges(cls: type) -> list[str]:
    """Comparisons of a field (or a name bound from one) with a number in
    ``cls.__post_init__``: what ``bounded`` is for."""
    if "__post_init__" not in cls.__dict__:
        return []
    source = textwrap.dedent(inspect.getsource(cls.__dict__["__post_init__"]))
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    from_self, table = _self_names(func)
    found = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(isinstance(o, ast.Name) and o.id in table for o in operands):
            found.append(f"{cls.__qualname__}.__post_init__: {ast.unparse(node)}")
            continue
        if not any(_is_number(o) for o in operands):
            continue
        if any(_reads_self(o) or (isinstance(o, ast.Name) and o.id in from_self)
               or (isinstance(o, ast.Call) and any(isinstance(a, ast.Name) and a.id in from_self
                                                     for a in o.args))
               for o in operands if not _is_number(o)):
            found.append(f"{cls.__qualname__}.__post_init__: {ast.unparse(node)}")
    return found


def test_no_section_takes_what_it_computes_as_an_argument() -> None:
    """A section's constructor takes the keys a user sets; what it derives from them (its
    compiled patterns) is no argument, no part of its repr and no part of its equality."""
    found = [f"{name}.{f.name}" for name, cls in sections() for f in dataclasses.fields(cls)
             if f.name.startswith("_") and (f.init or f.repr or f.compare)]
    assert not found, "make these field(init=False, repr=False, compare=False):\n" + \
        "\n".join(found)


def test_no_section_checks_a_range_by_hand() -> None:
    classes = [cls for _, cls in sections()] + [CrossEncoderConfig]
    found = [line for cls in classes for line in hand_written_ranges(cls)]
    assert not found, "use config_base.bounded for these ranges:\n" + "\n".join(found)


def test_the_scan_finds_a_hand_written_range() -> None:
    @dataclasses.dataclass(frozen=True)
    class Old:
        depth: int = 50
        share: float = 0.5

        def __post_init__(self) -> None:
            if not 1 <= self.depth <= 1000:
                raise ConfigError("old.depth must be between 1 and 1000")
            for name in ("share",):
                value = getattr(self, name)
                if not 0.0 < value <= 1.0:
                    raise ConfigError(f"old.{name} must be in (0, 1]")

    @dataclasses.dataclass(frozen=True)
    class Table:
        depth: int = 50

        def __post_init__(self) -> None:
            for key, value, lo, hi in (("depth", self.depth, 1, 1000),):
                if not lo <= value <= hi:
                    raise ConfigError(f"table.{key} must be between {lo} and {hi}")

    assert len(hand_written_ranges(Old)) == 2
    assert len(hand_written_ranges(Table)) == 1


def test_bounded_refuses_out_of_range_values_naming_the_field() -> None:
    @dataclasses.dataclass(frozen=True)
    class Part:
        depth: int = bounded(50, 1, 1000)
        share: float = bounded(0.5, 0.0, 1.0, lo_open=True)

        def __post_init__(self) -> None:
            check_bounds(self, "part")

    assert set(bounds_of(Part)) == {"depth", "share"}
    Part(depth=1, share=1.0)
    for kwargs, key, why in (({"depth": 0}, "part.depth", "between 1 and 1000"),
                             ({"depth": 2.5}, "part.depth", "an integer"),
                             ({"depth": True}, "part.depth", "an integer"),
                             ({"share": 0.0}, "part.share", "in (0, 1]"),
                             ({"share": float("nan")}, "part.share", "in (0, 1]"),
                             ({"share": "half"}, "part.share", "in (0, 1]")):
        with pytest.raises(ConfigError) as caught:
            Part(**kwargs)
        assert caught.value.details["key"] == key and why in caught.value.message
        assert caught.value.code == 1001


def config_modules() -> list[Path]:
    """The config modules, and the modules whose constants told long origin stories
    (issue 34): the rerank, the packer, the recall embedding view, the lexicon, the
    ingest writer."""
    return sorted([*REPO.glob("engine/*/config.py"), REPO / "engine" / "config.py",
                   REPO / "engine" / "config_base.py", REPO / "engine/retrieval/rerank.py",
                   *REPO.glob("engine/packing/*.py"), REPO / "engine/recall/embedview.py",
                   REPO / "engine/retrieval/lexicon.py", REPO / "engine/flows/ingest/writer.py"])


def test_config_modules_hold_no_comment_block_of_six_lines() -> None:
    long = []
    for path in config_modules():
        run = 0
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            run = run + 1 if line.strip().startswith("#") else 0
            if run == 6:
                long.append(f"{path.relative_to(REPO)}:{number - 5}")
    assert not long, ("comment blocks of 6+ lines (one line of origin here, the figures in "
                      "docs/tuning.md): " + ", ".join(long))


def test_every_section_lives_in_its_parts_config_module() -> None:
    elsewhere = sorted(f"{name}: {cls.__module__}.{cls.__qualname__}"
                       for name, cls in sections()
                       if not cls.__module__.endswith(".config"))
    assert not elsewhere, f"sections defined outside a config.py: {elsewhere}"


# A module -> the classes whose fields are config (None: every class) and which of its
# module-level names count: "all" (config modules), "constants" (public UPPER_CASE) or
# "none".
Scope = tuple[frozenset[str] | None, str]


def one_line_scope() -> dict[Path, Scope]:
    """The config modules (every field and constant), the modules whose constants told
    long origin stories (their public constants: the fitted rerank weights, the rerank,
    the packer, the embedding view, the lexicon, the ingest writer and vector stage, the
    excerpts, the int8 probe floor, recall's sync, the delete steps) and the wire's and the
    app's config sections (their fields)."""
    scope: dict[Path, Scope] = {path: (frozenset(), "constants") for path in config_modules()}
    for name in ("retrieval/profiles.py", "recall/present.py", "embedding/onnx_files.py",
                 "flows/ingest/vector_stage.py", "flows/keeping/deleting.py",
                 "flows/recall/sync.py"):
        scope[REPO / "engine" / name] = (frozenset(), "constants")
    for path in [*REPO.glob("engine/*/config.py"), REPO / "engine/config.py",
                 REPO / "engine/config_base.py"]:
        scope[path] = (None, "all")
    scope[REPO / "ipc/wire.py"] = (frozenset({"IpcConfig"}), "none")
    scope[REPO / "desktop/config_io.py"] = (frozenset({"DesktopSettings", "Settings"}), "none")
    return scope


def long_comments(source: str, scope: Scope = (None, "all")) -> list[int]:
    """Line of each config field or constant with more than one line of comment attached:
    the comment lines just above it plus a comment on its first line, or two comment lines
    in a row inside it. Fields: assignments in the body of a class ``scope`` names (None:
    any class); constants: assignments in the module's body, as ``scope[1]`` says."""
    classes, names = scope
    lines = source.splitlines()
    own_line: set[int] = set()
    beside: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row = tok.start[0]
            (own_line if lines[row - 1].lstrip().startswith("#") else beside).add(row)
    nodes: list[ast.stmt] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and (classes is None or node.name in classes):
            nodes += node.body
        elif isinstance(node, ast.Assign | ast.AnnAssign) and (names == "all" or (
                names == "constants" and all(
                    isinstance(n, ast.Name) and n.id.isupper() and not n.id.startswith("_")
                    for n in (node.targets if isinstance(node, ast.Assign)
                              else [node.target])))):
            nodes.append(node)
    found = []
    for node in nodes:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        top = node.lineno
        while top - 1 in own_line:
            top -= 1
        end = node.end_lineno or node.lineno
        if node.lineno - top + (node.lineno in beside) > 1 or any(
                row in own_line and row + 1 in own_line for row in range(node.lineno, end)):
            found.append(top)
    return sorted(found)


def test_a_config_field_carries_one_line_of_comment_at_most() -> None:
    long = [f"{path.relative_to(REPO)}:{line}" for path, scope in one_line_scope().items()
            for line in long_comments(path.read_text(encoding="utf-8"), scope)]
    assert not long, ("config fields or constants with a comment of more than one line "
                      "(keep one line: what it is and its origin, pointing at docs/tuning.md; "
                      "move the story to its row or its paragraph there): " + ", ".join(long))


def test_the_scan_finds_a_comment_of_two_lines() -> None:
    source = textwrap.dedent("""\
        # one line: fine
        a = 1
        b = 2  # beside: fine
        # a story
        # of two lines
        c = 3
        # above
        d = 4  # and beside
        e = {
            # two lines
            # inside
            "e": 5,
        }

        class Part:
            # a field's
            # story
            depth: int = 50
            share: float = 0.5  # one line

        def f() -> None:
            # code comments
            # are not origins
            g = 6
        """)
    assert long_comments(source) == [4, 7, 9, 16]
    assert long_comments(source, (frozenset(), "constants")) == []  # public CONSTANTS only
    assert long_comments(source.replace("c = 3", "LIMIT = 3"), (frozenset(), "constants")) \
        == [4]
    assert long_comments(source.replace("c = 3", "LIMIT = 3"), (frozenset({"Part"}), "none")) \
        == [16]
