"""What every public result and event is made of: the plain-data base class (``to_dict`` /
``from_dict``), an error as data (``ErrorInfo``), a file a job did not store
(``FileIssue``) and a stored source named by id (``SourceRef``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from engine.errors import CtxError, error_from_dict

T = TypeVar("T")


def known(cls: type[T], data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of dataclass ``cls`` (newer fields ignored)."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return {k: v for k, v in data.items() if k in names}


class Plain:
    """to_dict / from_dict for dataclasses whose fields are JSON values already."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(**known(cls, data))


def jsonable(value: Any) -> Any:
    """The wire form of ``value``: ``to_dict()`` of each public result in it, lists for
    tuples, string keys for mappings (ipc's server sends every reply through it)."""
    if isinstance(value, Plain):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def line_range(value: Any) -> tuple[int, int] | None:
    """A ``[first, last]`` line range from JSON (a list) as a tuple; None when absent."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


@dataclass(frozen=True)
class ErrorInfo(Plain):
    """An error as data (a failed job's, an alert's cause): stable code and name."""

    code: int
    name: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, exc: CtxError) -> ErrorInfo:
        return cls(exc.code, exc.name, exc.message, dict(exc.details))

    def to_error(self) -> CtxError:
        """The engine's own exception class for this error (to raise it)."""
        return error_from_dict(self.to_dict())


@dataclass(frozen=True)
class FileIssue(Plain):
    """A file a job did not store, by path, with a stable reason (``REJECT_*``) and,
    for some reasons, which kind of it (a blob's "base64", "minified"...)."""

    path: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class SourceRef(Plain):
    """A stored source named by id and title (the one that already holds a text)."""

    id: int
    title: str


# Where a source stands: "keyword" (stored and keyword-searchable, its vectors not yet
# made: the vector lane does not have it) or "ready" (both lanes).
SOURCE_STAGES: tuple[str, ...] = ("keyword", "ready")
