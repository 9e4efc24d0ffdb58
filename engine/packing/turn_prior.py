"""Who spoke a chat turn, weighed against who the question is about.

A question that names a participant of a conversation ("what did Ann say about
the move?") is mostly answered by that participant's own turns: the other
side's replies around a matching turn cost as much budget and hold the answer
far less often. And a turn that asks something ("how was the trip?") holds an
answer less often than one that states something. ``TurnPrior`` turns these two
observations into a multiplier on a turn candidate's packing score: 1 for the
named speakers' statements, less for the others. Only chat turns (the packing
config's ``neighbour_kinds``) are weighed, and only when the query names at least
one speaker among the candidates; everything else keeps its score.

The factors live in :class:`~engine.packing.packer.PackingConfig`, where their
origin is recorded. Pure: works on speaker names, texts and the query's entities.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORD_RE = re.compile(r"[^\W_]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD_RE.findall(text.lower()))


@dataclass(frozen=True)
class TurnPrior:
    """The multiplier for turns of a given speaker and text, for one query."""

    named: frozenset[str]  # speakers (as stored) that the query names
    other_speaker: float = 1.0  # a matching turn by a speaker the query does not name
    other_neighbour: float = 1.0  # the same, for a turn that only neighbours a match
    question: float = 1.0  # a turn that asks a question ("?" in its text)

    @classmethod
    def for_query(cls, entities: Iterable[str], speakers: Iterable[str | None], *,
                  other_speaker: float = 1.0, other_neighbour: float = 1.0,
                  question: float = 1.0) -> TurnPrior:
        """The prior for a query naming ``entities``, among turns by ``speakers``.

        A speaker is named when one of the words of its name is a word of one of the
        query's entities ("Ann" names "Ann Lee"; case and possessives aside).
        """
        wanted = frozenset().union(*(_words(e) for e in entities))
        named = frozenset(s for s in set(speakers)
                          if s and wanted and not _words(s).isdisjoint(wanted))
        return cls(named, other_speaker, other_neighbour, question)

    def weight(self, speaker: object, text: str, *, neighbour: bool = False) -> float:
        """The multiplier for one turn: ``other_speaker`` (``other_neighbour`` for a
        neighbour) when the query names some speaker and not this one, times
        ``question`` when the turn asks something."""
        w = 1.0
        if self.named and speaker not in self.named:
            w *= self.other_neighbour if neighbour else self.other_speaker
        if "?" in text:
            w *= self.question
        return w
