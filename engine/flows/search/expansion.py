"""The memory candidates of a build: the ranked hits that survived dedupe, each with
what packing may use of it.

The top hits (``packing.expand_top``) are expanded with their neighbours in the
same section; short chunks such as chat turns bring their neighbours as
candidates of their own, weighed by who spoke them (``TurnPrior``); below the
top, a document hit may carry its source's surrogate at the tier the policy
chooses (``dense_cached``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from engine.config import Config
from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult
from engine.flows.search.ranking import Ranked
from engine.ingest.place import merged_lines, place_of
from engine.packing.candidates import PackCandidate
from engine.packing.config import PackingConfig
from engine.packing.overlap import Span, trim_overlaps
from engine.packing.turn_prior import TurnPrior
from engine.retrieval.tiers import choose_tier, importance_score
from engine.store.vault.neighbours import chunks_in_spans
from engine.store.vault.rows import ChunkRow
from engine.store.vault.surrogate_rows import surrogates_of


def memory_candidates(rt: Runtime, cfg: Config, res: LaneResult, ranked: Sequence[Ranked],
                      kept: Sequence[int], dropped: Collection[int], mode: str, now: float
                      ) -> list[PackCandidate]:
    """The ``kept`` hits (ranked, near-duplicates ``dropped``) as candidates: the top
    ones expanded, neighbours of short chunks added, surrogates chosen (``mode``)."""
    rows = res.rows
    scores = {cid: s for cid, s, _ in ranked}
    top = max((scores[c] for c in kept), default=1.0) or 1.0
    lanes = {cid: ranks for cid, _, ranks in res.fused}
    pcfg = cfg.packing
    norm = {cid: max(0.0, scores[cid] / top) for cid in kept}
    prior = turn_prior(rt, pcfg, res.analysis.entities, [rows[c] for c in kept])
    for cid in kept:
        if rows[cid].kind in pcfg.neighbour_kinds:
            norm[cid] *= prior.weight(rows[cid].meta.get("speaker"), rows[cid].text)
    near = neighbours(rt, pcfg, [rows[c] for c in kept], norm, set(dropped), prior)
    surrogates = _surrogates(rt, cfg, [rows[c] for c in kept], mode, now, scores, top)
    out: list[PackCandidate] = []
    spans: dict[str, Span] = {}
    for rank, cid in enumerate(kept):
        row = rows[cid]
        path, root, lines = place_of(row.source, row.source_kind, row.meta)
        covered: tuple[int, ...] = (cid,)
        span: Span | None = _span(row)
        expanded = None
        if rank < pcfg.expand_top and row.kind not in pcfg.neighbour_kinds:
            expanded, covered, span, lines = expand(rt, row, pcfg.expansion_max_tokens)
        if span is not None and row.kind not in pcfg.neighbour_kinds:
            spans[f"chunk:{cid}"] = span
        sur = surrogates.pop(row.source_id, None) if rank >= pcfg.expand_top else None
        score = max(norm[cid], near.pop(cid, (row, 0.0))[1])
        out.append(PackCandidate(
            key=f"chunk:{cid}", section="memory", kind=row.kind, source=row.source,
            title=_title(row), time=row.time, score=score,
            lanes=lanes.get(cid, {}), text=row.text, expanded=expanded,
            surrogate=sur[1] if sur else None, tier=sur[0] if sur else None,
            chunk_ids=tuple(covered), why="rerank", position=float(row.ordinal),
            text_tokens=row.tokens, path=path, root=root, lines=lines))
    for cid, (row, score) in near.items():
        path, root, lines = place_of(row.source, row.source_kind, row.meta)
        out.append(PackCandidate(
            key=f"chunk:{cid}", section="memory", kind=row.kind, source=row.source,
            title=_title(row), time=row.time, score=score, text=row.text, chunk_ids=(cid,),
            why="neighbour", position=float(row.ordinal), text_tokens=row.tokens, path=path,
            root=root, lines=lines))
    return trim_overlaps(out, spans)

def turn_prior(rt: Runtime, cfg: PackingConfig, entities: Sequence[str],
               hits: Sequence[ChunkRow]) -> TurnPrior:
    """The speaker/question weights of turns for a query naming ``entities``, among
    the store's speakers (read only when some hit is a turn)."""
    turns = any(h.kind in cfg.neighbour_kinds for h in hits)
    speakers = rt.vault.speakers() if turns and entities else frozenset()
    return TurnPrior.for_query(entities, speakers,
                               other_speaker=cfg.speaker_other,
                               other_neighbour=cfg.speaker_other_neighbour,
                               question=cfg.question_turn)


def neighbours(rt: Runtime, cfg: PackingConfig, hits: Sequence[ChunkRow],
               scores: Mapping[int, float], excluded: set[int],
               prior: TurnPrior | None = None) -> dict[int, tuple[ChunkRow, float]]:
    """Chunks next to the best hits of ``cfg.neighbour_kinds``, with the score they
    inherit (weighed by ``prior``, who spoke them): chunk id -> (row, best inherited
    score). Hits and ``excluded`` ids (near-duplicates) may appear; the caller keeps a
    hit's own score when higher."""
    span = cfg.neighbour_span
    if not span or not cfg.neighbour_hits or not cfg.neighbour_kinds:
        return {}
    chosen = [h for h in hits if h.kind in cfg.neighbour_kinds][: cfg.neighbour_hits]
    if not chosen:
        return {}
    ranges: dict[int, list[tuple[int, int]]] = {}
    for h in chosen:
        ranges.setdefault(h.source_id, []).append((h.ordinal - span, h.ordinal + span))
    found = chunks_in_spans(rt.vault, {sid: _merge_spans(spans) for sid, spans in ranges.items()},
                            cfg.neighbour_kinds)
    at = {(r.source_id, r.ordinal): r for r in found}
    out: dict[int, tuple[ChunkRow, float]] = {}
    for h in chosen:
        base = scores.get(h.id, 0.0)
        for d in range(1, span + 1):
            for n, factor in ((at.get((h.source_id, h.ordinal + d)), cfg.neighbour_after),
                              (at.get((h.source_id, h.ordinal - d)), cfg.neighbour_before)):
                if n is None or n.id in excluded or n.heading != h.heading:
                    continue
                score = base * factor ** d
                if prior is not None:
                    score *= prior.weight(n.meta.get("speaker"), n.text, neighbour=True)
                if score > out.get(n.id, (n, -1.0))[1]:
                    out[n.id] = (n, score)
    return out


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _title(row: ChunkRow) -> str:
    """The item's header title; a turn's speaker only where its text does not start
    with it (turns of one session then share one header)."""
    speaker = row.meta.get("speaker")
    if row.heading:
        return f"{row.title} > {row.heading}"
    if isinstance(speaker, str) and speaker and row.kind == "turn" \
            and not row.text.startswith(speaker + ":"):
        return f"{row.title} · {speaker}"
    return row.title


def expand(rt: Runtime, row: ChunkRow, max_tokens: int
           ) -> tuple[str, tuple[int, ...], Span | None, tuple[int, int] | None]:
    """The hit with its neighbours (same source, same section) up to ``max_tokens``:
    (text, chunk ids, its span in the source when the chunks are contiguous, the lines
    it covers when its chunks know theirs)."""
    near = rt.vault.neighbours(row.source_id, row.ordinal - 3, row.ordinal + 3)
    same = [n for n in near if n.heading == row.heading and n.kind == row.kind]
    chosen = [row]
    used = row.tokens
    before = [n for n in reversed(same) if n.ordinal < row.ordinal]
    after = [n for n in same if n.ordinal > row.ordinal]
    for pair in zip(after + [None] * len(before), before + [None] * len(after)):
        for n in pair:
            if n is None or used + n.tokens > max_tokens:
                continue
            chosen.append(n)
            used += n.tokens
    chosen.sort(key=lambda n: n.ordinal)
    lines = merged_lines([place_of(n.source, n.source_kind, n.meta)[2] for n in chosen])
    if len(chosen) == 1:
        return row.text, (row.id,), _span(row), lines
    text, contiguous = _merge(chosen)
    span = (chosen[0].start, max(n.start + len(n.text) for n in chosen)) if contiguous else None
    return text, tuple(n.id for n in chosen), span, lines


def _span(row: ChunkRow) -> Span:
    return row.start, row.start + len(row.text)


def _merge(rows: Sequence[ChunkRow]) -> tuple[str, bool]:
    """Join consecutive chunks by their source offsets, so overlaps are not repeated;
    also whether they were contiguous (no gap between them)."""
    text = rows[0].text
    end = rows[0].start + len(rows[0].text)
    contiguous = True
    for r in rows[1:]:
        r_end = r.start + len(r.text)
        if r.start < end and r_end > end:
            text += r.text[end - r.start:]
        elif r.start >= end:
            text += "\n" + r.text
            contiguous = contiguous and r.start - end <= 2  # a line break between them
        end = max(end, r_end)
    return text, contiguous


def _surrogates(rt: Runtime, cfg: Config, rows: Sequence[ChunkRow], mode: str, now: float,
                scores: Mapping[int, float], top: float) -> dict[int, tuple[str, str]]:
    """For dense_cached: source id -> (tier, surrogate text) for document sources."""
    if mode != "dense_cached" or cfg.tiers.mode == "disabled":
        return {}
    doc_rows = {}
    for r in rows:
        if r.source_kind in ("document", "code", "text") and r.source_id not in doc_rows:
            doc_rows[r.source_id] = r
    if not doc_rows:
        return {}
    ids = sorted(doc_rows)
    found = surrogates_of(rt.vault, ids)
    access = rt.vault.access(ids)
    out: dict[int, tuple[str, str]] = {}
    for sid, (full, gist, micro) in found.items():
        row = doc_rows[sid]
        count, last = access.get(sid, (0, None))
        age = max(0.0, (now - (row.source_time or row.time or now)) / 86400)
        last_age = None if last is None else max(0.0, (now - last) / 86400)
        importance = importance_score(count, last_age, age, cfg.tiers)
        tier = choose_tier(cfg.tiers, age_days=age, importance=importance,
                           query_match=scores.get(row.id, 0.0) / top)
        text = {"full": full, "gist": gist, "micro": micro}.get(tier or "", "")
        if tier and text:
            out[sid] = (tier, text)
    return out
