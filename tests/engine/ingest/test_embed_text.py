"""What the model sees for a document chunk: its title and heading, never the title twice."""

from __future__ import annotations

import pytest

from engine.ingest.embedtext import embed_text


@pytest.mark.parametrize(("title", "heading", "text", "expected"), [
    # a chunk that opens with its title is embedded as it is
    ("Retry policy", "", "Retry policy\n\nThe client retries.", "Retry policy\n\nThe client retries."),
    ("# Retry policy", "", "# Retry policy\n\nThe client retries.",
     "# Retry policy\n\nThe client retries."),
    # with a heading the path stays whole (the title is its first part)
    ("Retry policy", "Backoff", "Retry policy\nDoubles each wait.",
     "Retry policy > Backoff\nRetry policy\nDoubles each wait."),
    # any other chunk gets its title and heading path first
    ("Retry policy", "", "The client retries.", "Retry policy\nThe client retries."),
    ("Retry policy", "Backoff", "Doubles each wait.", "Retry policy > Backoff\nDoubles each wait."),
    # a title that is only the start of the first word is not the title
    ("Retry", "", "Retrying is capped at three.", "Retry\nRetrying is capped at three."),
    ("A", "", "A quick note.", "A quick note."),
    ("", "", "No title at all.", "No title at all."),
])
def test_the_title_is_given_once(title: str, heading: str, text: str, expected: str) -> None:
    assert embed_text(title, heading, "section", text) == expected


def test_transcript_chunks_keep_their_own_view() -> None:
    assert embed_text("Session", "", "turn", "User: hello") == embed_text("", "", "turn",
                                                                            "User: hello")
