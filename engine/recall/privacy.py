"""Privacy for transcripts: private spans, secrets, excluded projects and tools.

Applied to a ``ParseResult`` before chunking, so that nothing a user marked
private, and nothing that looks like a credential, reaches a chunk, the
embedder or the store. ``<private>...</private>`` spans are always removed
(an unclosed ``<private>`` hides everything after it); secret masking can be
turned off; excluded projects yield no events and excluded tools no tool events.
"""

from __future__ import annotations

import fnmatch
import re
import string
from dataclasses import replace
from typing import Any

from engine.recall.config import PrivacyConfig
from engine.recall.model import ParseResult, SessionInfo, TranscriptEvent
from engine.recall.spans import strip_private

REDACTED = "[REDACTED]"


# Whole-match secrets, each with the literal text it cannot match without (a
# cheap test that spares the regex on most texts): the match is replaced.
_SECRET_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (anchors, re.compile(pattern, flags)) for anchors, pattern, flags in (
        (("-----BEGIN",),
         r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
         re.DOTALL),
        (("sk-",), r"(?<![A-Za-z0-9_-])sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{20,}", 0),
        (("k_live_", "k_test_"), r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}", 0),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}", 0),
        (("github_pat_",), r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{30,}", 0),
        (("glpat-",), r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}", 0),
        (("AKIA", "ASIA"), r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", 0),
        (("xox",), r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}", 0),
        (("AIza",), r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}", 0),
        (("hf_",), r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}", 0),
        (("npm_",), r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}", 0),
        (("eyJ",), r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
         0),
    )
)
# "Bearer <token>": the token is replaced.
_BEARER = re.compile(r"(\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*", re.IGNORECASE)
# "scheme://user:password@host": the password is replaced.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]+:)[^\s/@]{3,}(@)", re.IGNORECASE)
# key = value where the key names a credential: a long value is replaced. Keys
# are found by their keyword (fast substring search), then the word around it.
_CREDENTIAL_WORDS = ("password", "passwd", "pwd", "secret", "token", "apikey", "api_key",
                     "api-key", "access_key", "access-key", "private_key", "private-key",
                     "authorization", "credential", "passphrase")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SEP_VALUE = re.compile(r"""(["']?[ \t]*[:=][ \t]*)(["']?)([^\s"'`,;:(){}\[\]<>]{8,})""")
_DOTTED_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$")


def _secret_value(value: str) -> bool:
    """True when a credential-named key's value looks like a secret, not code."""
    if value.startswith(("$", "%", REDACTED)) or _DOTTED_NAME.match(value):
        return False  # an environment reference or a code expression
    # counts, sizes and words ("token_count = 12345678", "password: required") are not
    return not (value.isdigit() or value.isalpha())


def _mask_credentials(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # str.lower() changed some lengths: lower ASCII only
        lowered = text.translate(_ASCII_LOWER)
    spans: set[tuple[int, int]] = set()
    for word in _CREDENTIAL_WORDS:
        index = lowered.find(word)
        while index >= 0:
            end = index + len(word)
            while end < len(text) and text[end] in _KEY_CHARS:
                end += 1
            match = _SEP_VALUE.match(text, end)
            if match and _secret_value(match.group(3)):
                spans.add(match.span(3))
            index = lowered.find(word, end)
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + REDACTED + text[end:]
    return text


def mask_secrets(text: str) -> str:
    """``text`` with API keys, tokens, JWTs, private keys and credential values masked."""
    if not text:
        return text
    for anchors, pattern in _SECRET_PATTERNS:
        if any(a in text for a in anchors):
            text = pattern.sub(REDACTED, text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return _mask_credentials(text)


def _matches(value: str | None, patterns: tuple[str, ...]) -> bool:
    if not value:
        return False
    lowered = value.lower()
    return any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns)


def project_excluded(info: SessionInfo, cfg: PrivacyConfig) -> bool:
    """True when the session's project (or cwd) matches ``cfg.exclude_projects``."""
    names = tuple(p for p in cfg.exclude_projects if "/" not in p and "\\" not in p)
    paths = tuple(p.rstrip("/\\") for p in cfg.exclude_projects if p not in names)
    if _matches(info.project, names):
        return True
    cwd = (info.cwd or "").rstrip("/\\")
    return bool(cwd) and any(
        fnmatch.fnmatchcase(cwd.lower(), p.lower()) or cwd.lower().startswith(p.lower() + "/")
        for p in paths
    )


def _clean(text: str | None, cfg: PrivacyConfig) -> str | None:
    if text is None:
        return None
    text = strip_private(text)
    return mask_secrets(text) if cfg.mask_secrets else text


def _clean_tree(value: Any, cfg: PrivacyConfig) -> Any:
    if isinstance(value, str):
        return _clean(value, cfg)
    if isinstance(value, list):
        return [_clean_tree(v, cfg) for v in value]
    if isinstance(value, dict):
        return {k: (v if k == "uuids" else _clean_tree(v, cfg)) for k, v in value.items()}
    return value


def apply_privacy(result: ParseResult, cfg: PrivacyConfig) -> ParseResult:
    """``result`` with private spans removed and secrets masked everywhere.

    Event texts (the pending calls' too), tool inputs, prompts, the session title and
    the resumable parser state are all cleaned. Events of an excluded project are all
    dropped; tool events of an excluded tool are dropped.
    """
    info = replace(result.info, title=_clean(result.info.title, cfg))
    state = _clean_tree(result.state, cfg)
    if project_excluded(result.info, cfg):
        return replace(result, info=info, events=(), state=state, pending=())
    return replace(result, info=info, events=_clean_events(result.events, cfg), state=state,
                   pending=_clean_events(result.pending, cfg))


def _clean_events(events: tuple[TranscriptEvent, ...], cfg: PrivacyConfig
                  ) -> tuple[TranscriptEvent, ...]:
    out: list[TranscriptEvent] = []
    for event in events:
        if event.type in ("tool_call", "tool_result") and _matches(event.tool, cfg.exclude_tools):
            continue
        out.append(replace(event, text=_clean(event.text, cfg) or "",
                           tool_input=_clean(event.tool_input, cfg),
                           prompt=_clean(event.prompt, cfg),
                           intent=_clean(event.intent, cfg)))
    return tuple(out)
