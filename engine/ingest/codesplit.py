"""Where the definitions of a source file start, per language family.

Simple line regexes, not parsers: a missed or extra definition only moves a
chunk boundary, it never loses text. Top-level definitions (column 0) make
the sections; a large container (a class, an impl block, a module) is further
cut at its members one indentation level in, named ``Container.member``.
Comment, decorator and attribute lines right above a definition belong to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_M = re.MULTILINE
_ID = r"[A-Za-z_$][\w$]*"

_PY_TOP = r"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)"
_PY_MEMBER = r"^[ \t]+(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)"
_JS_TOP = (r"^(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?"
           r"(?:async[ \t]+)?(?:function\*?|class|interface|enum|type|namespace|module|const|"
           r"let|var)[ \t]+(" + _ID + r")")
_JS_MEMBER = (r"^[ \t]+(?:(?:public|private|protected|static|readonly|async|override|get|set)"
              r"[ \t]+)*\*?(?!(?:if|for|while|switch|catch|return|function)\b)(#?" + _ID
              + r")[ \t]*(?:<[^>\n]*>)?\([^;\n]*$")
_MODS = (r"(?:(?:public|private|protected|internal|abstract|final|static|sealed|partial|data|"
         r"open|override|inline|suspend|export|actual|expect|fileprivate|async|virtual|"
         r"unsafe|extern|readonly|lazy|implicit|case|mutating)[ \t]+)*")
_JVM_TOP = (r"^" + _MODS + r"(?:class|interface|enum|record|struct|object|trait|fun|func|def|"
            r"protocol|extension|typealias|mixin|namespace)[ \t]+([A-Za-z_]\w*)")
_JVM_MEMBER = (r"^[ \t]+" + _MODS + r"(?:class|interface|enum|record|struct|object|trait|fun|"
               r"func|def|init)[ \t]*([A-Za-z_]\w*)")
_C_FUNC = (r"^(?!(?:if|for|while|switch|return|else|do|case|typedef)\b)[A-Za-z_][\w:<>,*&\[\] \t]*?"
           r"[*&\s]([A-Za-z_~][\w:~]*)[ \t]*\([^;\n]*$")
_C_MEMBER = (r"^[ \t]+(?!(?:if|for|while|switch|return|else|do|case|new|throw|catch)\b)"
             r"[A-Za-z_][\w:<>,*&\[\]. \t]*?[*&\s]([A-Za-z_~][\w~]*)[ \t]*\([^;\n]*$")
_C_TYPE = (r"^(?:template[ \t]*<[^>\n]*>[ \t]*)?(?:typedef[ \t]+)?(?:class|struct|union|"
           r"enum(?:[ \t]+class)?|namespace)[ \t]+([A-Za-z_]\w*)")
_C_DEFINE = r"^#[ \t]*define[ \t]+([A-Za-z_]\w*)"
_GO = (r"^func[ \t]+(?:\([^)\n]*\)[ \t]*)?([A-Za-z_]\w*)|^type[ \t]+([A-Za-z_]\w*)"
       r"|^(?:var|const)[ \t]+([A-Za-z_]\w*)")
_RUST_TOP = (r"^(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:async|const|unsafe|extern(?:[ \t]+\"[^\"\n]*\")?)"
             r"[ \t]+)*(?:fn|struct|enum|trait|mod|type|union|static|const|macro_rules!)[ \t]*"
             r"([A-Za-z_]\w*)|^(?:unsafe[ \t]+)?(impl\b[^{\n]*?)[ \t]*\{?[ \t]*$")
_RUST_MEMBER = (r"^[ \t]+(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:async|const|unsafe)[ \t]+)*"
                r"fn[ \t]+([A-Za-z_]\w*)")
_RUBY_TOP = r"^(?:def|class|module)[ \t]+([A-Za-z_][\w.:?!=]*)"
_RUBY_MEMBER = r"^[ \t]+(?:def|class|module)[ \t]+([A-Za-z_][\w.:?!=]*)"
_PHP_TOP = (r"^(?:(?:abstract|final|readonly)[ \t]+)*(?:function|class|interface|trait|enum)"
            r"[ \t]+&?([A-Za-z_]\w*)")
_PHP_MEMBER = (r"^[ \t]+(?:(?:public|private|protected|static|abstract|final)[ \t]+)*function"
               r"[ \t]+&?([A-Za-z_]\w*)")
_SH = r"^(?:function[ \t]+)?([A-Za-z_][\w:.-]*)[ \t]*\(\)|^function[ \t]+([A-Za-z_][\w:.-]*)"
_PS = r"^(?i:function|filter|class)[ \t]+([A-Za-z_][\w-]*)"
_SQL = (r"^(?i:create|alter)[ \t]+(?i:or[ \t]+replace[ \t]+)?(?i:(?:temp|temporary|unique|"
        r"materialized)[ \t]+)?(?i:table|view|index|function|procedure|trigger|type|schema|"
        r"sequence)[ \t]+(?i:if[ \t]+not[ \t]+exists[ \t]+)?([\w.\"`\[\]]+)")
_LUA = r"^(?:local[ \t]+)?function[ \t]+([A-Za-z_][\w.:]*)"
_R = r"^([A-Za-z_.][\w.]*)[ \t]*(?:<-|=)[ \t]*function\b"
_PERL = r"^sub[ \t]+([A-Za-z_]\w*)|^package[ \t]+([\w:]+)"
_HS = r"^(?:data|newtype|type|class|instance)[ \t]+([A-Z]\w*)|^([a-z_][\w']*)[ \t]*::"
_EX_TOP = r"^(?:defmodule|defprotocol|defimpl)[ \t]+([\w.]+)"
_EX_MEMBER = r"^[ \t]+(?:def|defp|defmacro|defmacrop|defguard)[ \t]+([a-z_][\w?!]*)"
_CLJ = (r"^\((?:defn-?|defmacro|def|defprotocol|defrecord|deftype|defmulti|defmethod|ns)"
        r"[ \t]+([^\s()]+)")
_SFC = r"^<(template|script|style)\b"
_CSS = r"^(@media[^{\n]*?|[^\s@}{/][^{\n]*?)[ \t]*\{"
_YAML = r"^([A-Za-z_\"'][^:\n#]*):(?:[ \t]|$)"
_INI = r"^\[{1,2}([^\]\n]+)\]{1,2}"
_MAKE = r"^([A-Za-z_][\w.-]*)[ \t]*:(?!=)"
_DOCKER = r"^(?i:FROM)[ \t]+(\S+)"

_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "python": ((_PY_TOP,), (_PY_MEMBER,)),
    "javascript": ((_JS_TOP,), (_JS_MEMBER,)),
    "typescript": ((_JS_TOP,), (_JS_MEMBER,)),
    "java": ((_JVM_TOP,), (_JVM_MEMBER, _C_MEMBER)),
    "csharp": ((_JVM_TOP,), (_JVM_MEMBER, _C_MEMBER)),
    "kotlin": ((_JVM_TOP,), (_JVM_MEMBER,)),
    "scala": ((_JVM_TOP,), (_JVM_MEMBER,)),
    "swift": ((_JVM_TOP,), (_JVM_MEMBER,)),
    "dart": ((_JVM_TOP, _C_FUNC), (_C_MEMBER,)),
    "c": ((_C_TYPE, _C_DEFINE, _C_FUNC), ()),
    "cpp": ((_C_TYPE, _C_DEFINE, _C_FUNC), (_C_MEMBER,)),
    "go": ((_GO,), ()),
    "rust": ((_RUST_TOP,), (_RUST_MEMBER,)),
    "ruby": ((_RUBY_TOP,), (_RUBY_MEMBER,)),
    "php": ((_PHP_TOP,), (_PHP_MEMBER,)),
    "shell": ((_SH,), ()),
    "powershell": ((_PS,), ()),
    "sql": ((_SQL,), ()),
    "lua": ((_LUA,), ()),
    "r": ((_R,), ()),
    "perl": ((_PERL,), ()),
    "haskell": ((_HS,), ()),
    "elixir": ((_EX_TOP,), (_EX_MEMBER,)),
    "clojure": ((_CLJ,), ()),
    "vue": ((_SFC,), ()),
    "svelte": ((_SFC,), ()),
    "css": ((_CSS,), ()),
    "scss": ((_CSS,), ()),
    "yaml": ((_YAML,), ()),
    "toml": ((_INI,), ()),
    "ini": ((_INI,), ()),
    "make": ((_MAKE,), ()),
    "dockerfile": ((_DOCKER,), ()),
}
_COMPILED: dict[str, tuple[re.Pattern[str] | None, re.Pattern[str] | None]] = {}
_LEAD = re.compile(r"^[ \t]*(?:#|//|/\*|\*|--|;|@|\[|%)")


@dataclass(frozen=True)
class Definition:
    """A section of source: its first character and the symbol it defines."""

    start: int
    symbol: str
    container: bool = False  # a header whose members follow as their own sections


def _patterns(language: str | None) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    key = (language or "").lower()
    if key not in _COMPILED:
        top, member = _FAMILIES.get(key, ((), ()))
        _COMPILED[key] = (re.compile("|".join(f"(?:{p})" for p in top), _M) if top else None,
                          re.compile("|".join(f"(?:{p})" for p in member), _M)
                          if member else None)
    return _COMPILED[key]


def _symbol(match: re.Match[str]) -> str:
    for group in match.groups():
        if group:
            return " ".join(group.split())[:120]
    return match.group(0).strip()[:120]


def _pull_up(text: str, start: int, floor: int) -> int:
    """Move ``start`` up over the comment/decorator lines right above it."""
    while start > floor:
        prev_end = start - 1  # the "\n" ending the previous line
        prev_start = text.rfind("\n", floor, prev_end) + 1
        prev_start = max(prev_start, floor)
        line = text[prev_start:prev_end]
        if not line.strip() or not _LEAD.match(line):
            break
        start = prev_start
    return start


def _indent_of_body(text: str, start: int, end: int) -> str | None:
    """Indentation of the first indented non-blank line after the first line."""
    nl = text.find("\n", start, end)
    while 0 <= nl < end:
        line_end = text.find("\n", nl + 1, end)
        line = text[nl + 1: line_end if line_end >= 0 else end]
        if line.strip():
            stripped = line.lstrip(" \t")
            return line[: len(line) - len(stripped)] or None
        nl = line_end
    return None


def find_definitions(text: str, language: str | None, *,
                     split_members_over: int = 800) -> list[Definition]:
    """Section starts of a source file, in order; the first one is always at 0.

    Containers longer than ``split_members_over`` characters are cut at their
    members. A file with no recognised definition is one section named "".
    """
    top, member = _patterns(language)
    starts: list[Definition] = [Definition(0, "")]
    if top is not None:
        for match in top.finditer(text):
            pos = _pull_up(text, match.start(), starts[-1].start)
            if pos <= starts[-1].start:
                if starts[-1].start == 0 and not starts[-1].symbol:
                    starts[-1] = Definition(0, _symbol(match))  # only comments above it
                continue
            starts.append(Definition(pos, _symbol(match)))
    if member is None:
        return starts
    out: list[Definition] = []
    for i, d in enumerate(starts):
        out.append(d)
        end = starts[i + 1].start if i + 1 < len(starts) else len(text)
        if end - d.start <= split_members_over or not d.symbol:
            continue
        indent = _indent_of_body(text, d.start, end)
        if indent is None:
            continue
        first_nl = text.find("\n", d.start, end)
        header = len(out) - 1
        for match in member.finditer(text, first_nl + 1 if first_nl >= 0 else end, end):
            line = match.group(0)
            if not line.startswith(indent) or line[len(indent)] in " \t":
                continue  # deeper than one level in
            pos = _pull_up(text, match.start(), out[-1].start)
            if pos > out[-1].start:
                out.append(Definition(pos, f"{d.symbol}.{_symbol(match)}"))
        if len(out) - 1 > header:
            out[header] = Definition(d.start, d.symbol, container=True)
    return out
