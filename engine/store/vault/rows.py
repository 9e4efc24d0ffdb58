"""What the vault's reads take and give, as plain data: the search filters (``Filters``,
with their SQL and their same test in Python), a chunk read with its source
(``ChunkRow``, read through ``CHUNK_COLUMNS``), and ids bound a batch a statement
(``id_batches``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_ABSOLUTE = re.compile(r"^(/|\\|[A-Za-z][A-Za-z0-9+.-]*:)")  # a path, a drive or a uri scheme


def id_batches(ids: Sequence[int], size: int = 400) -> Iterator[list[int]]:
    """``ids`` as ints, ``size`` a batch: one ``IN (...)`` statement each, within SQLite's
    bound on a statement's variables (999 in older builds; room left for the others)."""
    for i in range(0, len(ids), size):
        yield [int(x) for x in ids[i:i + size]]


def like_prefix(text: str) -> str:
    """``text`` as a LIKE prefix pattern (with ESCAPE '\\'): its wildcards taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass(frozen=True)
class Filters:
    """Search filters: source or chunk kinds, a source uri prefix, a time range (epoch s).

    ``path_prefix`` is a prefix of a source's uri (its absolute path), or, when it is
    relative (``requests/``), of a file's path under the folder it was ingested from,
    as hits show it (``SearchHit.path``)."""

    kinds: tuple[str, ...] = ()
    path_prefix: str = ""
    since: float | None = None
    until: float | None = None
    source_ids: tuple[int, ...] | None = None
    project: str | None = None
    branch: str | None = None

    def sql(self, s: str = "s", c: str = "c", *, source_kinds: bool = True
            ) -> tuple[str, list[Any]]:
        """The filters as a WHERE clause over a chunk ``c`` and its source ``s``, and its
        arguments. ``source_kinds=False``: no source's kind is among ``kinds`` (the
        caller knows), so the kinds are tested on the chunk alone, before its source is
        read (``Vault.keyword``: the rows FTS5 matches that a filter of session kinds
        drops never reach ``sources``)."""
        parts: list[str] = [f"{s}.state = 'ready'"]
        args: list[Any] = []
        if self.kinds:
            marks = ",".join("?" * len(self.kinds))
            if source_kinds:
                parts.append(f"({s}.kind IN ({marks}) OR {c}.kind IN ({marks}))")
                args += list(self.kinds) * 2
            else:  # (+: tested on the row read by id, not sought by kind in an index)
                parts.append(f"+{c}.kind IN ({marks})")
                args += list(self.kinds)
        shown = self.shown_prefix
        if shown is not None:
            root = f"json_extract({c}.meta, '$.root')"
            parts.append(f"(substr({s}.uri, 1, length({root}) + 1) = {root} || '/' AND "
                         f"substr({s}.uri, length({root}) + 2) LIKE ? ESCAPE '\\')")
            args.append(like_prefix(shown))
        elif self.path_prefix:
            parts.append(f"{s}.uri LIKE ? ESCAPE '\\'")
            args.append(like_prefix(self.path_prefix))
        if self.since is not None:
            parts.append(f"COALESCE({c}.time, {s}.created_at, {s}.ingested_at) >= ?")
            args.append(self.since)
        if self.until is not None:
            parts.append(f"COALESCE({c}.time, {s}.created_at, {s}.ingested_at) <= ?")
            args.append(self.until)
        where_equal(parts, args, {f"{s}.project": self.project,
                                  f"json_extract({c}.meta, '$.branch')": self.branch})
        if self.source_ids is not None:
            parts.append(f"{s}.id IN ({','.join(str(int(i)) for i in self.source_ids) or 'NULL'})")
        return " AND ".join(parts), args

    def matches(self, row: ChunkRow) -> bool:
        """Whether a chunk read from the vault passes these filters (``sql``'s test, in
        Python, for hits found without it: the vector lane's)."""
        if self.kinds and row.kind not in self.kinds and row.source_kind not in self.kinds:
            return False
        shown = self.shown_prefix
        if shown is not None:
            root = row.meta.get("root")
            if not (isinstance(root, str) and row.source.startswith(root + "/")
                    and row.source[len(root) + 1:].startswith(shown)):
                return False
        elif self.path_prefix and not row.source.startswith(self.path_prefix):
            return False
        if self.since is not None and (row.time is None or row.time < self.since):
            return False
        if self.until is not None and (row.time is None or row.time > self.until):
            return False
        if self.source_ids is not None and row.source_id not in self.source_ids:
            return False
        if self.project is not None and row.project != self.project:
            return False
        return self.branch is None or row.meta.get("branch") == self.branch

    @property
    def reads_meta(self) -> bool:
        """Whether ``matches`` reads a row's meta (a relative path prefix, a branch)."""
        return self.shown_prefix is not None or self.branch is not None

    @property
    def shown_prefix(self) -> str | None:
        """A relative ``path_prefix`` as hits show paths (``./`` dropped); None if absolute."""
        prefix = self.path_prefix
        if not prefix or _ABSOLUTE.match(prefix):
            return None
        while prefix.startswith("./"):
            prefix = prefix[2:]
        return prefix or None

    @property
    def only_kinds(self) -> bool:
        """Whether the filter is of kinds and nothing else."""
        return bool(self.kinds) and Filters(kinds=self.kinds) == self

    @property
    def empty(self) -> bool:
        return not (self.kinds or self.path_prefix or self.since is not None
                    or self.until is not None or self.source_ids is not None
                    or self.project is not None or self.branch is not None)




def where_equal(where: list[str], args: list[Any], equal: Mapping[str, Any]) -> None:
    """Add ``column = ?`` to ``where``, and its value to ``args``, for each column of
    ``equal`` whose value is given (not None)."""
    for column, value in equal.items():
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)


CHUNK_COLUMNS = (
    "c.id, c.source_id, c.ordinal, c.kind, c.heading, c.text, c.tokens, c.start, c.time, "
    "c.meta, s.uri, s.title, s.kind, s.created_at, s.ingested_at, s.project"
)


@dataclass(frozen=True)
class ChunkRow:
    id: int
    source_id: int
    ordinal: int
    kind: str
    heading: str
    text: str
    tokens: int
    start: int
    time: float | None
    meta: dict[str, Any]
    source: str
    title: str
    source_kind: str
    source_time: float | None
    project: str | None

    @classmethod
    def from_row(cls, r: Sequence[Any]) -> ChunkRow:
        t = r[8] if r[8] is not None else (r[13] if r[13] is not None else r[14])
        # an empty meta (a stand-in's '{}': the vector lane's filter rows) not parsed
        meta = {} if r[9] == "{}" else json.loads(r[9])
        return cls(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], t, meta,
                   r[10], r[11], r[12], r[13], r[15])
