"""The English lexicon of query analysis: word lists, cue patterns and date formats.

The defaults of :class:`~engine.retrieval.config.QueryConfig` live here: stopwords,
words that are never entities, imperative sentence starts, file extensions, the
cue patterns of each intent, of "recent" and of each query class, and the lane
weights per class. So do the calendar words and date formats that
``query.find_dates`` reads, the rerank's answer cues, the word tokens both read
(``words_of``) and the words that name a coding agent's tools (``named_tools``, for
``turn_roles``). Analysis itself (dates, terms, entities, intent, class) stays in
``query``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# ---- defaults (general English; override through QueryConfig) ------------------------


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _wordset("""
a about above after again against all also am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each else ever few for from further get gets got had hadn't
has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
his how how's however i i'd i'll i'm i've if in into is isn't it it's its itself just let's
may me might more most much must mustn't my myself no nor not of off on once only or other
ought our ours ourselves out over own same shall shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those through to too under until up upon us
very was wasn't we we'd we'll we're we've were weren't what what's whatever when when's
where where's whether which while who who's whom whose why why's will with won't would
wouldn't you you'd you'll you're you've your yours yourself yourselves
kind kinds type types sort sorts thing things something anything everything one ones
many lot lots way ways yes ok okay please tell said say says also really likely probably
maybe perhaps
""")
NON_ENTITIES = _wordset("""
i i'm i've i'd i'll january february march april may june july august september october
november december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday
thursday friday saturday sunday today yesterday tomorrow mr mrs ms dr
""")
START_WORDS = _wordset("""
tell show list find give describe explain summarize summarise compare name get fetch recall
remind look search help write check suggest does did is are was were can could would should
""")
FILE_EXTENSIONS = _wordset("""
py pyi js jsx ts tsx mjs cjs java kt kts go rs rb php c h cc cpp hpp cs swift m mm scala sh
bash zsh ps1 bat sql r jl lua pl ex exs erl hs ml clj dart vue svelte html htm css scss less
json jsonl yaml yml toml ini cfg conf env xml csv tsv md rst txt log lock pdf docx ipynb
dockerfile makefile gradle proto graphql tf
""")
QUERY_INTENT_PATTERNS: dict[str, tuple[str, ...]] = {
    "location": (r"\bwhere\b",
                 (r"\b(?:what|which)\s+(?:\w+\s+)?(?:city|cities|country|countries|state|town|"
                  r"place|places|location|address|area|region|venue|neighbou?rhood|island)\b")),
    "date": (r"\bwhen\b", r"\b(?:what|which)\s+(?:date|day|month|year|time|week|weekend)\b",
             r"\bhow\s+long\s+(?:ago|since)\b", r"\bsince\s+when\b"),
    "ownership": (r"\bwhose\b", r"\bwho\s+(?:owns|owned|has|had)\b", r"\bown(?:s|ed)?\b",
                  r"\bbelong(?:s|ed)?\s+to\b", r"\b(?:does|did|do)\s+\w+\s+have\b"),
    "multi_hop": (r"\b(?:would|likely|probably|might)\b", r"\bboth\b", r"\bin\s+common\b",
                  r"\bcompared?\s+(?:to|with)\b"),
    "count": (r"\bhow\s+(?:many|much|often)\b", r"\bnumber\s+of\b", r"\bcount\b"),
    "reason": (r"\bwhy\b", r"\bhow\s+come\b", r"\breasons?\b",
               r"\bwhat\s+(?:made|makes|motivated|motivates|inspired|inspires|caused|causes|led)\b"),
    "preference": (r"\b(?:like[sd]?|love[sd]?|enjoy(?:s|ed)?|prefer(?:s|red)?|favou?rites?)\b",
                   r"\b(?:fond\s+of|interested\s+in|hobby|hobbies)\b"),
}
RECENT_PATTERNS: tuple[str, ...] = (
    r"\b(?:latest|newest|most\s+recent(?:ly)?|recently|lately|just\s+now|so\s+far)\b",
    r"\b(?:yesterday|today|tonight|this\s+(?:morning|afternoon|evening|week|month))\b",
    r"\blast\s+(?:time|night|week|weekend|month|session|commit|run|change|few\s+\w+)\b",
)
CLASS_PATTERNS: dict[str, tuple[str, ...]] = {
    "exploratory": (r"\btell\s+me\s+(?:everything\s+|more\s+)?about\b", r"\boverview\b",
                    r"\bsummar(?:y|ize|ise)\b", r"\bbrainstorm\b", r"\bexplore\b",
                    r"\bwhat\s+do\s+(?:i|we|you)\s+know\s+about\b", r"\banything\s+about\b"),
    "temporal": (r"\btimeline\b", r"\bhistory\s+of\b", r"\bchronolog",),
    "factual": (r"\berror\b", r"\bexception\b", r"\btraceback\b", r"\bstack\s*trace\b"),
    "semantic": (r"\bhow\s+(?:do|does|did|can|could|should|would|is|was)\b", r"\bexplain\b",
                 r"\bdescribe\b", r"\bfe(?:el|lt|els|eling)\b", r"\bthink\b", r"\bopinion\b",
                 r"\bmeaning\b", r"\bsimilar\b", r"\babout\b"),
}
# query.lane_weights: hand-set, checked on LoCoMo dev, SciFact train (docs/tuning.md)
LANE_WEIGHTS: dict[str, dict[str, float]] = {
    "factual": {"keyword": 1.0, "vector": 0.6, "recency": 0.0, "live": 0.5},
    "semantic": {"keyword": 0.8, "vector": 1.0, "recency": 0.0, "live": 0.5},
    "temporal": {"keyword": 1.0, "vector": 0.7, "recency": 0.2, "live": 0.5},
    "exploratory": {"keyword": 0.9, "vector": 0.9, "recency": 0.2, "live": 0.7},
}

# ---- dates ------------------------------------------------------------------------------

YEAR_RE = re.compile(r"(?:19|20)\d\d")
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
MONTHS.update({m[:3]: n for m, n in list(MONTHS.items())})
MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YR = r"(?P<year>(?:19|20)\d\d)"
# In this order: query.find_dates reads a match by the index of its pattern.
DATE_PATTERNS = [
    re.compile(rf"\b{_YR}[-/.](?P<m>[01]?\d)[-/.](?P<d>[0-3]?\d)\b"),
    re.compile(rf"\b{_MON}\s+{_DAY},?\s+{_YR}\b", re.IGNORECASE),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YR}\b", re.IGNORECASE),
    re.compile(rf"\b(?P<a>[0-3]?\d)[/.](?P<b>[0-3]?\d)[/.]{_YR}\b"),
    re.compile(rf"\b{_MON},?\s+{_YR}\b", re.IGNORECASE),  # month and year only
    re.compile(rf"(?<![\w-]){_YR}(?![\w-])"),  # a year alone
]


# A word without its possessive 's ("anna's" -> "anna"; "don't" stays whole).
BAG_RE = re.compile(r"([^\W_]+(?:['\u2019](?!s\b)[^\W_]+)*)(?:['\u2019]s\b)?")


def words_of(text: str) -> list[str]:
    """Lowercase word tokens of ``text`` with possessive 's removed.

    ASCII text without apostrophes is split on every character that is not a letter or
    digit (``str.translate`` and ``split``, in C: half the regex's time, and the same
    tokens, since there the word pattern is ``[a-z0-9]+``); the rerank tokenizes a hundred
    candidates per query this way. ASCII text with apostrophes is split so too, but on
    neither apostrophes nor underscores, and only its pieces that hold one go through
    ``BAG_RE`` (``_ascii_apostrophes``). Text whose only non-ASCII characters are neither
    letters, digits nor a typographic apostrophe (the sessions' arrows, box lines, emoji
    and dashes) is read as that ASCII text with each of them a ``?``: the same tokens,
    since to ``BAG_RE`` both are a non-word character. Other text without apostrophes is
    split by the word pattern alone (``_WORD_RUN``: the same tokens, since with no
    apostrophe ``BAG_RE`` matches nothing else), the rest by ``BAG_RE``. Half the
    sessions' chunks hold an apostrophe or a non-ASCII character (issue 35).
    """
    return lower_words(text.lower())


def lower_words(low: str) -> list[str]:
    """``words_of`` of text already lowercased (``str.lower`` of lowercase text is itself)."""
    if not low.isascii():
        if "\u2019" in low or _NON_ASCII_WORD.search(low):
            if "'" not in low and "\u2019" not in low:
                return _WORD_RUN.findall(low)
            return BAG_RE.findall(low)
        low = low.encode("ascii", "replace").decode("ascii")
    if "'" not in low:
        return low.translate(_NON_WORD_ASCII).split()
    return _ascii_apostrophes(low)


_WORD_RUN = re.compile(r"[^\W_]+")  # BAG_RE's word, without its apostrophe parts
# a non-ASCII letter or digit (a word character to BAG_RE, as the typographic apostrophe
# is): text without any is read as ASCII (``words_of``); no cache of characters met
_NON_ASCII_WORD = re.compile(r"[^\W\x00-\x7f]")

_NON_WORD_ASCII = str.maketrans({chr(i): " " for i in range(128) if not chr(i).isalnum()})
# the same, but an apostrophe and an underscore kept: BAG_RE's matches never hold any
# other non-word character and depend on nothing past one (its lookahead reads "s" and
# then a word boundary, which an underscore is not), so each piece of text between
# them is tokenized alone as it would be in place
_NON_WORD_ASCII_PIECES = str.maketrans({chr(i): " " for i in range(128)
                                        if not chr(i).isalnum() and chr(i) not in "'_"})


def _ascii_apostrophes(low: str) -> list[str]:
    """``BAG_RE.findall(low)`` of lowercase ASCII ``low``: the regex only over the pieces
    that hold an apostrophe (found by ``str.find``: a few a text), the text between
    them split on its spaces and underscores (there a piece of letters, digits and
    underscores is its runs of letters and digits)."""
    text = low.translate(_NON_WORD_ASCII_PIECES)
    out: list[str] = []
    at = 0  # where the text not yet tokenized starts
    i = text.find("'")
    while i >= 0:
        space = text.rfind(" ", at, i)
        start = at if space < 0 else space + 1  # the apostrophe's piece
        end = text.find(" ", i)
        if end < 0:
            end = len(text)
        out += text[at:start].replace("_", " ").split()
        out += BAG_RE.findall(text[start:end])
        at = end
        i = text.find("'", end)
    out += text[at:].replace("_", " ").split()
    return out


_MONTHS = ("january february march april june july august september october november december "
           "jan feb apr jun jul aug sep sept oct nov dec")
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
_MONTH_RX = ("January|February|March|April|May|June|July|August|September|October|November|"
             "December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday")


def _cues(words: str, *phrases: str) -> tuple[str, ...]:
    return (*words.split(), *phrases)


# rerank.intent_cues: closed-class English, from general grammar (docs/tuning.md)
DEFAULT_ANSWER_CUES: dict[str, tuple[str, ...]] = {
    "date": _cues(f"{_MONTHS} {_WEEKDAYS} weekend yesterday today tonight tomorrow ago",
                  "last week", "last month", "last year", "next week", "next month",
                  "next year", "this week", "this month", "this year"),
    "count": _cues("two three four five six seven eight nine ten eleven twelve twenty thirty "
                   "hundred thousand million once twice several dozen"),
    "reason": _cues("because since", "so that", "due to", "in order to", "the reason",
                    "caused by"),
}
# rerank.intent_patterns: answer shapes, case-sensitive; general English (docs/tuning.md)
DEFAULT_ANSWER_PATTERNS: dict[str, tuple[str, ...]] = {
    "location": ((rf"\b(?:in|at|from|near|to)\s+(?:the\s+)?"
                  rf"(?!(?:{_MONTH_RX})\b)[A-Z][a-z][\w'-]*"),),
    "date": (r"\b(?:19|20)\d\d\b", r"\b\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\b"),
    "count": (r"\d",),
}


def _listed(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# verbs of acting on code, files or a system (change, inspect, run); general English
ACTION_VERBS = _listed(
    "add chang\\w* edit modify updat\\w* replac\\w* renam\\w* remov\\w* delet\\w* insert "
    "append put write rewrite move copy creat\\w* patch stag\\w* commit push publish install "
    "configur\\w* check verify test look list inspect fetch pull download invok\\w* launch "
    "execut\\w* call build compile lint format deploy try switch import declare define "
    "implement wire hook mark annotate exclude include ignore filter pass pipe redirect "
    "restore revert undo set grep search run find\\s+out reproduce measure time profile "
    "trace debug log")
# the same verbs as past participles ("how was it checked"); general English
ACTION_DONE = _listed(
    "added changed edited modified updated replaced renamed removed deleted inserted "
    "appended put written rewritten moved copied created patched staged committed pushed "
    "published installed configured checked verified tested looked listed inspected "
    "fetched pulled downloaded invoked launched executed called built compiled linted "
    "formatted deployed tried switched imported declared defined implemented wired hooked "
    "marked annotated excluded included ignored filtered passed piped redirected restored "
    "reverted undone set grepped searched found\\s+out run reproduced measured timed "
    "profiled traced debugged logged")
# nouns that name a call ("which command", "what flags"); general English
CALL_NOUNS = _listed(
    "command commands invocation invocations flag flags argument arguments option options "
    "query queries search searches script scripts run runs call calls tool tools")
_DO, _DONE = "|".join(ACTION_VERBS), "|".join(ACTION_DONE)
_BY = r"(?:we|you|i|they|he|she|the\s+(?:assistant|agent|model|ai|bot))"
_AUX = r"(?:did|do|does|had|have|has|would|could|should|can|will)"
_ADV = r"(?:\s+(?:first|then|now|next|finally|actually|eventually|later|also|just))?"
_TRY = r"(?:(?:try|tried|start|started|begin|began|attempt|attempted)\s+to\s+)?"
# asking for a call's means, name or argument, not an edit's content (docs/tuning.md)
CALL_ASKS: tuple[str, ...] = (
    rf"(?:which|what)(?:\s+[\w-]+)?\s+(?:{'|'.join(CALL_NOUNS)})",
    rf"(?:how|which)(?:\s+[\w'-]+){{0,3}}?\s+{_AUX}\s+{_BY}{_ADV}\s+{_TRY}(?:{_DO})",
    rf"how\s+(?:was|were|is|are|has|have|had)(?:\s+been)?(?:\s+[\w'-]+){{1,8}}?\s+(?:{_DONE})",
    rf"how\s+(?:did|does|do)(?:\s+[\w'-]+){{1,8}}?\s+get\s+(?:{_DONE})")

# verbs of a program telling something, and their participles; general English
TELL_VERBS = _listed(
    "show shows showed print prints printed report reports reported return returns returned "
    "say says said output outputs log logs logged display displays displayed emit emits emitted "
    "produce produces produced give gives gave complain complains complained throw throws threw "
    "raise raises raised spit\\s+out come\\s+back\\s+with came\\s+back\\s+with respond responded "
    "list lists listed find found flag flagged yield yielded")
TOLD = _listed(
    "shown showed printed reported returned said output logged displayed emitted produced "
    "thrown raised listed found flagged given")
# nouns of what a run gives back ("what error", "the exit code"); general English
OUTPUT_NOUNS = _listed(
    "output outputs result results error errors message messages warning warnings exception "
    "exceptions exit\\s+code status status\\s+code response responses stdout stderr traceback "
    "stack\\s+trace diagnostic diagnostics failure failures count timing timings numbers figures "
    "score scores")
# things that pass or fail when run ("which case failed"); general English
RUN_NOUNS = _listed(
    "test tests case cases check checks step steps job jobs spec specs assertion assertions "
    "suite suites target targets benchmark benchmarks build builds command commands query "
    "queries request requests lint linter rule rules example examples")
_TELL, _TOLD, _OUT, _RUN = ("|".join(w) for w in (TELL_VERBS, TOLD, OUTPUT_NOUNS, RUN_NOUNS))
_PERSON = r"(?:we|you|i|they|he|she|the\s+(?:assistant|agent|model|ai|bot|user|llm))"
_W = r"(?:\s+[\w'./:@-]+)"
# asking what a run printed, reported, returned: not what someone did (docs/tuning.md)
OUTPUT_ASKS: tuple[str, ...] = (
    # "what did the test run report", "what does git say" (not "what did we add")
    (rf"(?:what|which|how\s+many|how\s+much){_W}{{0,3}}?\s+(?:did|does|do|has|have|had|would|"
     rf"will)\s+(?!{_PERSON}\b)(?:[\w'./:@-]+\s+){{1,5}}?(?:{_TELL})"),
    # "what was printed", "what errors were shown"
    rf"(?:what|which){_W}{{0,3}}?\s+(?:was|were|got|is|are|had\s+been|has\s+been)\s+(?:{_TOLD})",
    # "what was the output of", "what error did it hit", "which warning"
    (rf"(?:what|which)(?:\s+(?:was|were|is|are))?(?:\s+(?:the|its|their|that|this|an?|exact|"
     rf"exactly|first|last|final|other|specific|[\w-]+)){{0,2}}\s+(?:{_OUT})\b"),
    # "which case failed", "how many tests passed"
    (rf"(?:which|what|how\s+many)(?:\s+[\w'-]+){{0,2}}?\s+(?:{_RUN})(?:\s+[\w'-]+){{0,3}}?\s+"
     r"(?:failed|passed|errored|broke|crashed|timed\s+out|succeeded|were\s+failing|was\s+failing|"
     r"kept\s+failing)"),
    # "how long did the build take"
    (r"how\s+(?:long|much\s+time|fast|slow|slowly|quickly)(?:\s+[\w'./-]+){0,8}?\s+"
     r"(?:take|took|taking|run|ran|last|lasted)"),
    # "did the tests pass", "whether the build succeeded"
    (rf"(?:did|does|whether|if)(?:\s+[\w'-]+){{0,2}}?\s+(?:{_RUN})\s+"
     r"(?:pass|passed|fail|failed|succeed|succeeded)"))


# users' words for each tool, from its documentation's verbs; hand-written (docs/tuning.md)
TOOL_WORDS: Mapping[str, tuple[str, ...]] = {
    "Bash": ("command", "shell", "terminal", "ran", "run"),
    "shell": ("command", "terminal", "ran", "run"),
    "exec_command": ("shell", "terminal", "ran", "run"),
    "user shell": ("command", "terminal", "ran", "run"),
    "Grep": ("search", "searched", "grep", "grepped", "looked"),
    "Glob": ("search", "searched", "find", "found", "files"),
    "Read": ("read", "opened", "looked"),
    "Edit": ("edit", "edited", "changed", "change", "modified", "replaced"),
    "MultiEdit": ("edit", "edited", "changed", "modified"),
    "Write": ("wrote", "write", "created", "file"),
    "apply_patch": ("edit", "edited", "changed", "patch", "patched", "created"),
    "WebSearch": ("online", "web", "searched", "googled", "internet"),
    "web_search": ("online", "web", "searched", "googled", "internet"),
    "WebFetch": ("fetched", "downloaded", "page", "url"),
    "Task": ("agent", "agents", "subagent", "delegated"),
    "Skill": ("skill", "launched", "slash"),
    "TodoWrite": ("todo", "todos", "plan"),
    "update_plan": ("plan", "todo"),
}


_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_QWORD = re.compile(r"[a-z]+")


def tool_words(tool: str) -> frozenset[str]:
    """The words that name ``tool``: its name's own ("WebSearch": web, search;
    "exec_command": exec, command) and ``TOOL_WORDS``'s. An MCP tool
    (``mcp__server__name``) is named by its last part's words."""
    name = tool.rsplit("__", 1)[-1]
    own = {w.lower() for w in _SPLIT.findall(name) if len(w) >= 3}
    return frozenset(own | set(TOOL_WORDS.get(tool, ())))


def named_tools(query: str, tools: set[str]) -> set[str]:
    """The ``tools`` whose words the question uses."""
    asked = set(_QWORD.findall(query.lower()))
    return {t for t in tools if tool_words(t) & asked}


# a listing command's words; hand-written (docs/tuning.md, recall.turn_roles.shown_bonus)
COMMAND_WORDS: Mapping[str, tuple[str, ...]] = {
    "git log": ("commits", "history"),
    "git remote": ("remotes", "repository", "url"),
    "git branch": ("branches",),
    "git status": ("untracked", "staged", "uncommitted"),
    "git tag": ("tags",),
    "git stash": ("stashes", "stashed"),
    "ls": ("exist", "existed", "exists", "listed", "folders", "directories"),
    "find": ("exist", "existed", "exists", "located"),
    "fd": ("exist", "existed", "exists", "located"),
    "rg": ("import", "imports", "mentions", "references", "usages", "occurrences"),
    "grep": ("import", "imports", "mentions", "references", "usages", "occurrences"),
    "ps": ("processes",),
    "docker ps": ("containers",),
    "env": ("variables",),
    "printenv": ("variables",),
}
_SUBCOMMANDS = frozenset(k.split()[0] for k in COMMAND_WORDS if " " in k)
_FIELDS = re.compile(r"; [a-z_]+=")
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")
_SKIP = frozenset({"cd", "sudo", "env", "time", "bash", "sh", "zsh", "-c", "-lc", "exec"})


def commands_of(line: str) -> frozenset[str]:
    """The ``COMMAND_WORDS`` keys a shell command line runs (each program, and a program
    with its subcommand: "cd x && git log -3 | head" -> git log, head)."""
    found = set()
    line = _FIELDS.split(line, 1)[0]  # a call summary's "; description=..." fields
    for segment in _SEGMENTS.split(line.replace('"', " ").replace("'", " ")):
        words = [w for w in segment.split() if "=" not in w]
        while len(words) > 1 and words[0] in _SKIP:
            words = words[2:] if words[0] == "cd" else words[1:]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        found.add(program)
        if program in _SUBCOMMANDS and len(words) > 1:
            found.add(f"{program} {words[1]}")
    return frozenset(found)


def shown_words(commands: frozenset[str]) -> frozenset[str]:
    """The words a question asks for what ``commands`` show (``COMMAND_WORDS``)."""
    return frozenset(w for c in commands for w in COMMAND_WORDS.get(c, ()))


_ALL_SHOWN = frozenset(w for words in COMMAND_WORDS.values() for w in words)


def asks_shown(query: str, commands: frozenset[str] | None = None) -> bool:
    """Whether the question uses a word for what ``commands`` show (any command's, when
    None)."""
    words = _ALL_SHOWN if commands is None else shown_words(commands)
    return bool(words) and not words.isdisjoint(_QWORD.findall(query.lower()))
