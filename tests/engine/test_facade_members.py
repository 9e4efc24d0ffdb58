"""ContextEngine is composed of members, not mixins (issue 34): it inherits nothing, no
facade class is a base of another, each member gets what it uses in its ``__init__``
(never the engine itself), and the engine's class reads as the table of contents of the
engine API (each public method a short delegation)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import MethodType

import engine.facade
from engine.facade import ContextEngine
from engine.protocol import ENGINE_METHODS

FACADE = Path(engine.facade.__file__).parent
ENGINE = FACADE.parent
# The most statements a public method of ContextEngine runs (its docstring aside): a
# delegation, with at most a check before it.
MOST_STATEMENTS = 2


def _classes(path: Path) -> list[ast.ClassDef]:
    return [n for n in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(n, ast.ClassDef)]


def _base_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for base in cls.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def test_the_engine_inherits_nothing() -> None:
    assert ContextEngine.__bases__ == (object,)


def test_no_facade_class_is_a_base() -> None:
    """A facade class used as a base (a mixin, a stub of shared private attributes) is the
    shape this replaced; each facade class stands alone."""
    facade_classes = {c.name for p in FACADE.glob("*.py") for c in _classes(p)}
    used_as_base = sorted(f"{p.relative_to(ENGINE.parent)}: {c.name}({name})"
                          for p in ENGINE.rglob("*.py") for c in _classes(p)
                          for name in _base_names(c) & facade_classes)
    assert not used_as_base
    inheriting = sorted(f"{p.name}: {c.name}" for p in FACADE.glob("*.py")
                        for c in _classes(p) if c.bases)
    assert not inheriting


def test_every_engine_api_method_is_the_engines_own() -> None:
    own = set(vars(ContextEngine))
    assert set(ENGINE_METHODS) <= own, sorted(set(ENGINE_METHODS) - own)


def _public_methods(core: Path) -> list[ast.FunctionDef]:
    (cls,) = [c for c in _classes(core) if c.name == "ContextEngine"]
    return [f for f in cls.body if isinstance(f, ast.FunctionDef)
            and not f.name.startswith("_")]


def long_methods(core: Path) -> dict[str, int]:
    """ContextEngine's public methods in ``core`` that run more than MOST_STATEMENTS."""
    long = {}
    for method in _public_methods(core):
        body = method.body[1:] if ast.get_docstring(method) is not None else method.body
        if len(body) > MOST_STATEMENTS:
            long[method.name] = len(body)
    return long


def test_the_engine_reads_as_a_table_of_contents() -> None:
    assert {m.name for m in _public_methods(FACADE / "core.py")} >= set(ENGINE_METHODS)
    assert not long_methods(FACADE / "core.py"), "public methods that do more than delegate"


def test_the_table_of_contents_guard_sees_a_method_that_works(tmp_path: Path) -> None:
    source = (FACADE / "core.py").read_text("utf-8")
    delegation = "        return self._reading.sources(project=project)\n"
    assert delegation in source
    work = ("        rt = self._life.live()\n        rows = rt.vault\n"
            "        return list(rows)\n")
    (tmp_path / "core.py").write_text(source.replace(delegation, work), "utf-8")
    assert long_methods(tmp_path / "core.py") == {"sources": 3}


def _members(eng: ContextEngine) -> dict[str, object]:
    """The engine's attributes whose class is defined in engine.facade (its members)."""
    return {name: value for name, value in vars(eng).items()
            if type(value).__module__.startswith("engine.facade.")}


def _refers_to(value: object, eng: ContextEngine) -> bool:
    if value is eng:
        return True
    if isinstance(value, MethodType) and value.__self__ is eng:
        return True
    closure = getattr(value, "__closure__", None) or ()
    return any(cell.cell_contents is eng for cell in closure)


def test_members_get_their_parts_not_the_engine(engine: ContextEngine, tmp_path: Path
                                                ) -> None:
    members = _members(engine)
    assert {type(m).__name__ for m in members.values()} >= {
        "Lifecycle", "Ingest", "Reading", "JobControl", "Recall", "Keeping"}
    before = {name: set(vars(m)) for name, m in members.items()}
    (tmp_path / "note.md").write_text("# Otters\n\nOtters hold hands while they sleep.\n")
    engine.wait(engine.ingest(paths=[str(tmp_path / "note.md")]), timeout=60)
    engine.search("otters")
    engine.build_context("otters")
    engine.status()
    engine.sync([str(tmp_path)])
    for name, member in members.items():
        # every dependency came in through __init__: nothing is added later
        assert set(vars(member)) == before[name], name
        for attr, value in vars(member).items():
            assert not _refers_to(value, engine), f"{type(member).__name__}.{attr}"
        params = inspect.signature(type(member).__init__).parameters
        assert "engine" not in params, type(member).__name__


def test_the_member_guard_sees_the_engine_handed_over(engine: ContextEngine) -> None:
    member = next(iter(_members(engine).values()))
    member.__dict__["_engine"] = engine
    try:
        assert any(_refers_to(v, engine) for v in vars(member).values())
    finally:
        del member.__dict__["_engine"]
    assert _refers_to(engine.close, engine)
    assert _refers_to(lambda: engine.status(), engine)


def test_defaults_live_on_the_face(engine: ContextEngine) -> None:
    """A member's method that a public method delegates to takes every argument from the
    face: the defaults are said once, where callers read them."""
    with_defaults = sorted(
        f"{type(member).__name__}.{name}({p.name})"
        for member in _members(engine).values()
        for name in vars(type(member)) if not name.startswith("_") and name in ENGINE_METHODS
        for p in inspect.signature(getattr(member, name)).parameters.values()
        if p.default is not inspect.Parameter.empty)
    assert not with_defaults
    delegated = {name for member in _members(engine).values() for name in vars(type(member))
                 if name in ENGINE_METHODS}
    assert {"search", "build_context", "recall", "backup", "wait"} <= delegated


def test_the_watched_folders_get_the_engines_calls_not_the_engine(engine: ContextEngine
                                                                 ) -> None:
    """The watch service (flows) is handed the public calls it makes, not the engine to
    read attributes of."""
    watching = engine._watching
    assert not any(value is engine for value in vars(watching).values())
    assert watching.configured() == tuple(engine.config.ingest.watched_folders)
