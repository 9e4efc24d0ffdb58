"""Definition finding per language family."""

from __future__ import annotations

import pytest

from engine.ingest.codesplit import find_definitions


def _symbols(text: str, language: str | None, **kwargs: int) -> list[str]:
    return [d.symbol for d in find_definitions(text, language, **kwargs)]


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("python", ("import os\n\n@cache\ndef f():\n    pass\n\nasync def g():\n    pass\n\n"
               "class K:\n    pass\n"), ["", "f", "g", "K"]),
    ("javascript", ("const a = 1;\nexport default async function run() {}\n"
                   "export class Box {}\n"), ["a", "run", "Box"]),
    ("typescript", "import x from 'y';\ninterface Shape {}\ntype Id = string;\n",
     ["", "Shape", "Id"]),
    ("go", "package m\n\nfunc (s *S) Run() {}\n\ntype S struct{}\n", ["", "Run", "S"]),
    ("rust", ("use std::fmt;\n\npub struct P;\n\nimpl fmt::Display for P {\n}\n\n"
             "pub(crate) async fn go() {}\n"), ["", "P", "impl fmt::Display for P", "go"]),
    ("c", ("#include <stdio.h>\n\nstatic int\nadd(int a, int b)\n{\n  return a + b;\n}\n\n"
          "struct point { int x; };\n"), ["", "add", "point"]),
    ("java", "package p;\n\npublic final class Main {\n}\n", ["", "Main"]),
    ("ruby", "require 'x'\n\nmodule Util\nend\n\ndef helper\nend\n", ["", "Util", "helper"]),
    ("sql", ("-- schema\nCREATE TABLE IF NOT EXISTS users (id int);\n"
            "create or replace view v as select 1;\n"), ["users", "v"]),
    ("shell", "#!/bin/sh\nset -e\n\nbuild() {\n  make\n}\n", ["", "build"]),
    ("yaml", "name: ctx\non:\n  push: {}\njobs:\n  test: {}\n", ["name", "on", "jobs"]),
    ("toml", "[project]\nname = 'x'\n\n[tool.ruff]\nline-length = 100\n",
     ["project", "tool.ruff"]),
    (None, "no language here\n", [""]),
])
def test_top_level_definitions(language: str | None, text: str, expected: list[str]) -> None:
    assert _symbols(text, language) == expected


def test_comments_and_decorators_belong_to_the_definition() -> None:
    text = "import os\n\n# Explains f.\n@decorator\ndef f():\n    pass\n"
    defs = find_definitions(text, "python")
    assert defs[1].symbol == "f"
    assert text[defs[1].start:].startswith("# Explains f.\n@decorator\ndef f")


def test_sections_start_at_zero_and_increase() -> None:
    text = "def a():\n    pass\n\ndef b():\n    pass\n"
    defs = find_definitions(text, "python")
    assert defs[0].start == 0 and defs[0].symbol == "a"
    assert [d.start for d in defs] == sorted({d.start for d in defs})


def test_large_container_is_cut_at_members_one_level_in() -> None:
    body = "\n".join(
        f"    def m{i}(self):\n        def inner():\n            pass\n        return {i}\n"
        for i in range(3))
    text = "class Big:\n    x = 1\n\n" + body
    assert _symbols(text, "python", split_members_over=10) == ["Big", "Big.m0", "Big.m1",
                                                               "Big.m2"]
    defs = find_definitions(text, "python", split_members_over=10)
    assert defs[0].container and not defs[1].container
    assert _symbols(text, "python", split_members_over=10_000) == ["Big"]


def test_methods_of_a_java_class() -> None:
    text = ("public class Service {\n    private int n;\n\n"
            "    public void start(int port) {\n        run(port);\n    }\n\n"
            "    @Override\n    public String toString() {\n        return \"s\";\n    }\n}\n")
    defs = find_definitions(text, "java", split_members_over=10)
    assert [d.symbol for d in defs] == ["Service", "Service.start", "Service.toString"]
    assert text[defs[2].start:].startswith("    @Override\n")
