"""Private spans, secret masking and exclusions, before anything is chunked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.recall.claude import parse_claude
from engine.recall.privacy import (
    REDACTED,
    PrivacyConfig,
    apply_privacy,
    mask_secrets,
    strip_private,
)
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    chunks_of,
    text,
    tool_use,
    transcript,
    write_lines,
)

# Synthetic credentials, shaped like the real ones (none of them is live).
SECRETS = {
    "anthropic": "sk-ant-api03-Zx8kQ2mN4pL6rT1vW3yB5dF7hJ9",
    "openai": "sk-proj-4fGh7Jk2Lm9Np3Qr6St8Uv1Wx5Yz",
    "github": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "aws": "AKIAZ7QX3MPL4NRT2VWY",
    "slack": "xoxb-2048-8192-Zq9Wm3Kp7Lx2",
    "google": "AIzaSyB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLXZhbHVlLTEyMw",
}


@pytest.mark.parametrize(("raw", "kept"), [
    ("a <private>secret plan</private> b", "a  b"),
    ("<PRIVATE>x</PRIVATE>y<private note='z'>w</private>", "y"),
    ("keep <private>drop <private>nested</private> still drop</private> keep", "keep  keep"),
    ("visible <private>never closed, so everything after goes", "visible "),
    ("stray </private> closing tag", "stray  closing tag"),
    ("no tags at all", "no tags at all"),
])
def test_strip_private(raw: str, kept: str) -> None:
    assert strip_private(raw) == kept


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.text(alphabet="abc xyz\n", max_size=20)),
                max_size=8))
def test_strip_private_keeps_exactly_the_public_text(segments: list[tuple[bool, str]]) -> None:
    raw = "".join(f"<private>{s}</private>" if private else s for private, s in segments)
    assert strip_private(raw) == "".join(s for private, s in segments if not private)


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_mask_secrets_masks_known_credential_shapes(name: str) -> None:
    secret = SECRETS[name]
    masked = mask_secrets(f"use {secret} now")
    assert secret not in masked
    assert masked.startswith("use ") and masked.endswith(" now") and REDACTED in masked


@pytest.mark.parametrize(("raw", "masked"), [
    ('api_key = "a1b2c3d4e5f6g7h8"', 'api_key = "[REDACTED]"'),
    ("DB_PASSWORD=p@ss-w0rd!!", "DB_PASSWORD=[REDACTED]"),
    ('{"client_secret": "Qm9iIHNlY3JldCAx"}', '{"client_secret": "[REDACTED]"}'),
    ("Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [REDACTED]"),
    ("postgres://admin:s3cr3tPw@db:5432/app", "postgres://admin:[REDACTED]@db:5432/app"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- done",
     "[REDACTED] done"),
])
def test_mask_secrets_masks_credential_values(raw: str, masked: str) -> None:
    assert mask_secrets(raw) == masked


@pytest.mark.parametrize("raw", [
    "const token = process.env.API_TOKEN",
    "password: required",
    "token_count = 12345678",
    "max_tokens: 4000",
    "src/token.ts:120:export function parse",
    "task-management-dashboard-component-v2",
    "commit 9d356847d46ece3a0bbd3bd64eef89afc78dae74",
    "session 67a8478e-78dc-44ab-82ea-f65c8ead85f6",
    "TOKEN=${{ secrets.GITHUB_TOKEN }}",
    "-----BEGIN PUBLIC KEY----- is fine to share",
    "the risk-assessment document is ready",
])
def test_mask_secrets_leaves_ordinary_text_alone(raw: str) -> None:
    assert mask_secrets(raw) == raw


def _private_session(tmp_path: Path) -> Path:
    w = ClaudeLines(cwd="/home/u/src/payments")
    key = SECRETS["anthropic"]
    lines = [
        w.user(f"Deploy with key {key} <private>and my home address</private> please"),
        w.assistant([text("Deploying. <private>internal note</private>Done.")]),
        w.assistant([tool_use("toolu_1", "Bash", {"command": f"export API_KEY={key} && deploy"})],
                    msg_id="m2"),
        w.tool_result("toolu_1", f"deployed with {key}; <private>log line"),
        w.assistant([{"type": "thinking",
                      "thinking": f"The user gave {key}; I must not echo it back in any way."}],
                    msg_id="m3"),
    ]
    return write_lines(tmp_path / "s.jsonl", lines)


def test_nothing_private_reaches_a_chunk_or_the_state(tmp_path: Path) -> None:
    result = parse_claude(_private_session(tmp_path))
    chunks = chunks_of(result)
    assert {c.kind for c in chunks} == {"turn_pair", "tool", "thinking"}
    cleaned = apply_privacy(result, PrivacyConfig())
    everything = json.dumps([c.text for c in chunks] + [cleaned.state], ensure_ascii=False)
    for leaked in (SECRETS["anthropic"], "home address", "internal note", "log line"):
        assert leaked not in everything
    assert "Deploy with key [REDACTED]  please" in everything
    raw = json.dumps(result.state)  # the parser itself keeps the raw request for later
    assert SECRETS["anthropic"] in raw


def test_masking_can_be_turned_off_but_private_spans_cannot(tmp_path: Path) -> None:
    chunks = chunks_of(parse_claude(_private_session(tmp_path)),
                       privacy=PrivacyConfig(mask_secrets=False))
    joined = "\n".join(c.text for c in chunks)
    assert SECRETS["anthropic"] in joined
    assert "internal note" not in joined


@pytest.mark.parametrize("pattern", ["payments", "PAY*", "/home/u/src", "/home/u/src/pay*"])
def test_excluded_project_yields_no_events(tmp_path: Path, pattern: str) -> None:
    result = apply_privacy(parse_claude(_private_session(tmp_path)),
                           PrivacyConfig(exclude_projects=(pattern,)))
    assert result.events == ()
    assert result.end_offset > 0  # sync still moves on


def test_other_projects_are_not_excluded(tmp_path: Path) -> None:
    result = apply_privacy(parse_claude(_private_session(tmp_path)),
                           PrivacyConfig(exclude_projects=("billing", "/home/u/srcx")))
    assert result.events


def test_excluded_tools_yield_no_tool_events() -> None:
    result = parse_claude(transcript("claude/obra__episodic-memory__tiny-conversation.jsonl"))
    kept = chunks_of(result, privacy=PrivacyConfig(exclude_tools=("mcp__private-journal__*",)))
    assert "tool" not in {c.kind for c in kept}
    every = chunks_of(result)
    journal = [c for c in every if (c.meta["tool"] or "").startswith("mcp__private-journal__")]
    assert len(journal) == 2  # the call (with its result) and its whole input
    assert len(kept) == len(every) - len(journal)


@pytest.mark.parametrize("kwargs", [
    {"exclude_projects": "one-string"}, {"exclude_tools": ("",)}, {"mask_secrets": "yes"},
])
def test_privacy_config_rejects_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        PrivacyConfig(**kwargs)  # type: ignore[arg-type]
