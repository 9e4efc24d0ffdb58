"""Recall at scale: indexing 1,000 sessions by stage, and recall latency at that size.

    python -m bench.recall_scale [--sessions 1000] [--chunks N] [--cache DIR]
                                 [--queries 60] [--rounds 2] [--reindex] [--profile FILE]

1. **Sessions.** The shared transcripts (``bench.recall_quality.corpus_dirs``: 111
   sessions) replayed until there are ``--sessions`` of them: copy 0 is the files as
   they are, each later copy gets new session ids, its own working directories (one
   of 8 variants of each project: look-alike sessions of several projects) and its
   timestamps moved by a few days a copy. Written once under ``--cache``, reused.
2. **Indexing** through the product's path (``ContextEngine.sync`` of that folder into
   a fresh store, real MiniLM, then the learned reader's fit that the sync queues),
   timed end to end and by stage (each stage's own time, the stages inside it left
   out, so that the rows add up): parse, privacy, chunk, prepare, keyword store (FTS),
   sync state, vector window, model, embedding cache, vector store, adapt fit
   (pieces, pairs, its model, map, terms). Copies repeat texts, which the embedding
   cache serves: the model runs for copy 0 only. So the model alone is timed too,
   on the store's own embedding texts (texts/s), and the time of 1,000 sessions that
   are all new is projected: the measured run's other stages + every vector-lane
   text of the store at that rate.
   ``--chunks``: stop adding sessions once the store holds about this many chunks
   (the seed's 1,000 sessions are 50k chunks).
3. **Recall latency** on that store (kept under ``--cache`` for the next run:
   ``--reindex`` builds it again): the dev questions of ``bench.recall_quality``
   (questions about copy 0's sessions) and a few general ones, asked with
   ``recall.adapt`` on and off in turns, each with an empty query cache: p50 / p95 of
   wall and CPU milliseconds per call, with the load printed before and after.
   ``--profile FILE`` profiles the adapt-on calls (cProfile) and prints the top.

Compare figures of one run (ratios), never across runs: the machine is shared.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import pstats
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench import recall_quality as rq
from bench import scifact_data as sd
from bench.stats import machine_state, pct, table

SYNTH_VERSION = "1"
QUERIES = ["why did the tests fail", "how was the build configured", "which command failed",
           "what did we decide about the session format", "error reading the file",
           "add a new endpoint", "fix the failing lint", "update the documentation"]
_CWD = re.compile(r'("cwd"\s*:\s*")([^"]+)(")')
_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")


# -- 1. sessions -------------------------------------------------------------------------
def source_files() -> list[Path]:
    return sorted(f for d in rq.corpus_dirs() for f in d.glob("*.jsonl"))


def synthesize(cache: Path, sessions: int) -> Path:
    """``sessions`` transcripts replayed from the shared ones (see the docstring), cached."""
    files = source_files()
    h = hashlib.sha256(SYNTH_VERSION.encode())
    for f in files:
        h.update(f"{f}:{f.stat().st_size}".encode())
    out = cache / f"sessions-v{SYNTH_VERSION}-{h.hexdigest()[:8]}-{sessions}"
    if (out / "READY").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    ids = rq.session_ids(rq.corpus_dirs())
    made = copy = 0
    while made < sessions:
        for f in files:
            if made >= sessions:
                break
            text = f.read_text(encoding="utf-8")
            if copy:
                sid = ids.get(f.stem)
                if sid:
                    text = text.replace(sid, f"{sid[:-6]}{copy:06d}" if len(sid) > 8
                                        else f"{sid}-{copy}")

                def cwd_of(m: re.Match[str], c: int = copy) -> str:
                    return f"{m[1]}{m[2]}-v{c % 8}{m[3]}"

                def stamp_of(m: re.Match[str], d: timedelta = timedelta(days=3 * copy)) -> str:
                    return (datetime.fromisoformat(m[1]) + d).strftime("%Y-%m-%dT%H:%M:%S")

                text = _CWD.sub(cwd_of, text)
                text = _STAMP.sub(stamp_of, text)
            dest = out / f"copy{copy:04d}" / f.parent.name / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
            made += 1
        copy += 1
    (out / "READY").write_text(f"{made}\n")
    return out


# -- 2. indexing, by stage -----------------------------------------------------------------
class Stages:
    """Each stage's own wall and CPU seconds (time in a stage inside it is the inner
    one's), per thread, so that the rows add up to the time spent in stages."""

    def __init__(self, cpu: Callable[[], float] = time.process_time) -> None:
        self.clock = cpu  # process_time: the model's own threads count (indexing)
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.local = threading.local()
        self.undo: list[Callable[[], None]] = []
        self.texts: list[str] = []  # every text the vector stage sent to the model

    def _enter(self, name: str) -> None:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        now, cpu = time.perf_counter(), self.clock()
        if stack:
            outer = stack[-1]
            self.wall[outer[0]] = self.wall.get(outer[0], 0.0) + now - outer[1]
            self.cpu[outer[0]] = self.cpu.get(outer[0], 0.0) + cpu - outer[2]
        stack.append([name, now, cpu])
        self.calls[name] = self.calls.get(name, 0) + 1

    def _exit(self) -> None:
        stack = self.local.stack
        name, began, cpu0 = stack.pop()
        now, cpu = time.perf_counter(), self.clock()
        self.wall[name] = self.wall.get(name, 0.0) + now - began
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu - cpu0
        if stack:
            stack[-1][1], stack[-1][2] = now, cpu

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        inner = getattr(owner, attr)

        def timed(*a: Any, **kw: Any) -> Any:
            self._enter(name)
            try:
                return inner(*a, **kw)
            finally:
                self._exit()
        setattr(owner, attr, timed)
        self.undo.append(lambda: setattr(owner, attr, inner))

    def restore(self) -> None:
        for fn in reversed(self.undo):
            fn()
        self.undo.clear()


@contextmanager
def instrumented() -> Iterator[Stages]:
    from engine.lab import MemoryVectors, Writer
    from engine.lab import ingest_vector_stage as vs
    from engine.lab import recall_adapt as ra
    from engine.lab import recall_sync as rsync
    from engine.lab import vault_embed_cache as ec
    from engine.lab import vault_sources as src

    st = Stages()
    for owner, attr, name in [
            (rsync, "parse_claude", "parse"), (rsync, "parse_codex", "parse"),
            (rsync, "apply_privacy", "privacy"), (rsync, "transcript_chunks", "chunk"),
            (Writer, "prepare", "prepare (hash, versions)"),
            (src, "store_keyword", "keyword store (FTS)"),
            (rsync, "_save_state", "sync state"),
            (rsync, "_drop_segments", "drop old segments"),
            (vs.VectorStage, "_read", "vector window (rows, cache look-up)"),
            (Writer, "encode", "model (vector stage)"),
            (ec, "put", "embedding cache write"),
            (MemoryVectors, "add", "vector store add"),
            (src, "mark_embedded", "mark embedded"),
            (ra, "fit", "adapt fit (other)"), (ra, "_pieces", "adapt: read pieces"),
            (ra, "session_pairs", "adapt: pairs"),
            (ra, "_embed_texts", "adapt: query texts (model + store)"),
            (ra, "fit_map", "adapt: fit map"), (ra, "fit_terms", "adapt: fit terms")]:
        st.wrap(owner, attr, name)
    timed_encode = Writer.encode

    def recorded(self: Any, texts: Any, *a: Any, **kw: Any) -> Any:
        st.texts.extend(texts)
        return timed_encode(self, texts, *a, **kw)
    Writer.encode = recorded  # type: ignore[method-assign]
    st.undo.append(lambda: setattr(Writer, "encode", timed_encode))
    try:
        yield st
    finally:
        st.restore()


def model_rate(eng: Any, sent: list[str], n: int = 768) -> float:
    """Texts per second of the model alone, on ``n`` of the texts the vector stage sent
    it (drawn at random, then in steps of 64 longest first, as the stage sends them)."""
    import random

    from engine.lab import encode_documents

    texts = random.Random(0).sample(sent, min(n, len(sent)))
    if not texts:
        return 0.0
    texts.sort(key=lambda t: -eng.rt.counter.count(t))
    t = time.perf_counter()
    for i in range(0, len(texts), 64):
        encode_documents(eng.rt.embedder, texts[i:i + 64])
    return len(texts) / (time.perf_counter() - t)


def index(folder: Path, store: Path, embedder: Any, limit_chunks: int | None
          ) -> dict[str, Any]:
    from engine import ContextEngine

    copies = sorted(p for p in folder.iterdir() if p.is_dir())
    sessions = sum(1 for p in copies for _ in p.rglob("*.jsonl"))
    out: dict[str, Any] = {"load_before": machine_state()}
    with instrumented() as st, ContextEngine.open(store, embedder=embedder) as eng:
        t, c = time.perf_counter(), time.process_time()
        embedded = 0
        if limit_chunks:  # copy by copy until the store is about that big
            done = 0
            res = None
            for p in copies:
                res = eng.sync([str(p)])
                embedded += res.embedded
                done += sum(1 for _ in p.rglob("*.jsonl"))
                if eng.rt.vault.chunk_count() >= limit_chunks:
                    break
            sessions = done
        else:
            res = eng.sync([str(folder)])
            embedded = res.embedded
        sync_s, sync_cpu = time.perf_counter() - t, time.process_time() - c
        if res is not None and res.adapt_job:
            eng.wait(res.adapt_job)
        from engine.lab import learned

        model = learned(eng.rt)
        fit = dict(model.info) if model is not None else {}
        total_s, total_cpu = time.perf_counter() - t, time.process_time() - c
        out.update(sessions=sessions, chunks=eng.rt.vault.chunk_count(),
                   embedded=embedded,
                   sync_s=sync_s, sync_cpu=sync_cpu, total_s=total_s, total_cpu=total_cpu,
                   fit=fit, wall=dict(st.wall), cpu=dict(st.cpu), calls=dict(st.calls))
        out["rate"] = model_rate(eng, st.texts)
        out["load_after"] = machine_state()
    return out


def print_index(r: dict[str, Any]) -> None:
    print(f"\nIndexing {r['sessions']} sessions through ContextEngine.sync + the fit it "
          f"queued: {r['chunks']} chunks, {r['embedded']} texts through the model\n"
          f"machine before: {r['load_before']}; after: {r['load_after']}")
    total = r["total_s"]
    rows = sorted(r["wall"].items(), key=lambda kv: -kv[1])
    body = [[k, r["calls"][k], v, r["cpu"].get(k, 0.0), f"{v / total:.1%}"] for k, v in rows]
    staged = sum(r["wall"].values())
    body.append(["(outside the stages: job queue, waits, the rest)", "-", total - staged,
                 "-", f"{(total - staged) / total:.1%}"])
    body.append(["total (sync + fit)", "-", total, r["total_cpu"], "100%"])
    print(table(["stage", "calls", "wall s", "CPU s", "share of wall"], body))
    f = r["fit"]
    if f:
        print(f"adapt fit (its own figures): {f.get('pairs')} pairs, {f.get('sessions')} "
              f"sessions, {f.get('texts')} texts, {f.get('seconds')} s, CPU "
              f"{f.get('cpu_seconds')} s")
    model_s = r["wall"].get("model (vector stage)", 0.0) + \
        r["wall"].get("adapt: query texts (model + store)", 0.0)
    rate = r["rate"]
    others = total - model_s
    # all-new sessions: every chunk of the store needs its vector (the cache served the
    # copies), and every query-side text of the fit is new
    texts_new = r["chunks"] + int(f.get("texts", 0) or 0)
    projected = others + texts_new / rate if rate else float("nan")
    per = 1000 / max(1, r["sessions"])
    print(f"model alone: {rate:.0f} texts/s on the store's texts (steps of 64, longest "
          f"first); everything but the model: {others:.0f} s\n"
          f"projected, {r['sessions']} sessions all new: {others:.0f} s + "
          f"{texts_new} texts / {rate:.0f} per s = {projected / 60:.1f} min "
          f"({projected / 60 * per:.1f} min per 1,000 sessions of this size; "
          f"the model's floor alone {texts_new / max(rate, 1e-9) / 60 * per:.1f} min)")


# -- 3. recall latency ---------------------------------------------------------------------
@contextmanager
def recall_instrumented() -> Iterator[Stages]:
    """recall's stages, each thread's own CPU (the vector lane runs in a thread of its
    own, beside the keyword lane)."""
    from engine.lab import recall_entry as recall
    from engine.lab import recall_turn_hits as hits
    from engine.lab import recall_turns as turns
    from engine.lab import search_lanes as lanes
    from engine.lab import search_ranking as ranking
    from engine.lab import search_session_words as sw
    from engine.lab import vault_core as vault

    st = Stages(time.thread_time)
    for owner, attr, name in [
            (recall, "recall_hits", "recall_hits (other)"),
            (ranking, "plan_query", "plan (query analysis)"),
            (turns, "query_adapter", "adapt: query adapter"),
            (ranking, "lane_stage", "lanes: wait, fuse prep (other)"),
            (lanes, "keyword_hits", "keyword lane (FTS)"),
            (lanes, "vector_lane", "vector lane (embed + index; its thread)"),
            (lanes, "read_ahead", "read ahead (rows, vectors)"),
            (ranking, "prescan", "prescan (keyword hits tokenized)"),
            (ranking, "fuse_stage", "fuse"),
            (sw, "session_words", "session words"),
            (ranking, "expand_sessions", "session expansion"),
            (ranking, "rank_hits", "rank_hits (other)"),
            (ranking, "window_vectors", "window vectors"),
            (ranking, "context_similarities", "context similarities"),
            (ranking, "rerank", "rerank (scan + features)"),
            (recall, "presented", "presented (lines, excerpts)"),
            (hits, "turn_outcomes", "turn outcomes"),
            (vault.Vault, "session_chunks", "SQL: session chunks")]:
        st.wrap(owner, attr, name)
    try:
        yield st
    finally:
        st.restore()


def latency(store: Path, embedder: Any, queries: int, rounds: int,
            profile: Path | None) -> dict[str, Any]:
    from engine import ContextEngine

    dirs = rq.corpus_dirs()
    asks = [q["q"] for q in rq.load_questions("dev", rq.session_ids(dirs))][:queries]
    asks += QUERIES
    lat: dict[str, dict[str, list[float]]] = {
        n: {"wall": [], "cpu": []} for n in ("adapt off", "adapt on")}
    prof = cProfile.Profile() if profile else None
    with ContextEngine.open(store, embedder=embedder) as eng, \
            recall_instrumented() as stages:
        eng.warm_up(background=False)
        chunks = eng.rt.vault.chunk_count()
        eng.recall(asks[0], k=10)  # first-call costs (imports, the model's first query)
        before = machine_state()
        cfg = eng.rt.cfg
        import dataclasses

        off = dataclasses.replace(cfg, recall=dataclasses.replace(cfg.recall, adapt=False))
        for _ in range(rounds):
            for q in asks:
                for name, c in (("adapt off", off), ("adapt on", cfg)):
                    eng.rt.cfg = c
                    eng.rt._qcache.clear()
                    stages.clock = time.thread_time if name == "adapt on" else _none
                    p = prof if (prof is not None and name == "adapt on") else None
                    t, cpu = time.perf_counter(), time.process_time()
                    if p is not None:
                        p.enable()
                    eng.recall(q, k=10)
                    if p is not None:
                        p.disable()
                    lat[name]["wall"].append((time.perf_counter() - t) * 1000)
                    lat[name]["cpu"].append((time.process_time() - cpu) * 1000)
        eng.rt.cfg = cfg
        after = machine_state()
    if prof is not None and profile is not None:
        prof.dump_stats(str(profile))
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(40)
        print(s.getvalue())
    return {"chunks": chunks, "n": len(asks) * rounds, "lat": lat, "before": before,
            "after": after, "stages": stages}


def _none() -> float:
    return 0.0


def digest(store: Path, embedder: Any, queries: int, out: Path) -> str:
    """Every hit of ``recall(q, k=10)`` for the dev questions (and ``recall(q, k=10,
    cwd=its project)``), adapt on: chunk ids, exact scores, line, excerpt and text
    hashes, written to ``out``; returns their sha256. Two code versions that print the
    same digest on one store ranked and showed the same (run under PYTHONHASHSEED=0)."""
    import json

    from engine import ContextEngine

    dirs = rq.corpus_dirs()
    qs = rq.load_questions("dev", rq.session_infos(dirs))[:queries]
    got = []

    def h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    with ContextEngine.open(store, embedder=embedder) as eng:
        for q in qs:
            wheres: list[dict[str, Any]] = [{}, {"cwd": q["cwd"]} if q.get("cwd") else {}]
            for where in wheres:
                hits = eng.recall(q["q"], k=10, **where).hits or ()
                got.append([[x.chunk_id, repr(x.score), h(x.line), h(x.excerpt), h(x.text),
                             list(x.chunks)] for x in hits])
    text = json.dumps(got)
    out.write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


def print_latency(r: dict[str, Any]) -> None:
    print(f"\nRecall latency at {r['chunks']} chunks ({r['n']} calls each, in turns, empty "
          f"query cache; machine before: {r['before']}; after: {r['after']})")
    base = r["lat"]["adapt off"]["wall"]
    rows = [[name, len(v["wall"]), pct(v["wall"], 50), pct(v["wall"], 95),
             pct(v["cpu"], 50), pct(v["cpu"], 95), pct(v["wall"], 95) / pct(base, 95)]
            for name, v in r["lat"].items()]
    print(table(["recall(q, k=10)", "n", "wall p50 ms", "wall p95 ms", "CPU p50 ms",
                 "CPU p95 ms", "p95 / off"], rows))
    st, n = r["stages"], len(r["lat"]["adapt on"]["wall"])
    print(f"\nWhere an adapt-on call's CPU goes (each stage's own CPU, its thread's; mean "
          f"ms per call over {n})")
    print(table(["stage", "CPU ms / call", "share"],
                [[k, v * 1000 / n, f"{v / sum(st.cpu.values()):.1%}"]
                 for k, v in sorted(st.cpu.items(), key=lambda kv: -kv[1])]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--chunks", type=int, help="stop adding sessions at about this many "
                    "chunks (the seed's 1,000 sessions: 50000)")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-recall-scale")
    ap.add_argument("--queries", type=int, default=60, help="dev questions asked")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reindex", action="store_true", help="index again (else the store "
                    "cached by the last run of the same size is reused)")
    ap.add_argument("--index-only", action="store_true")
    ap.add_argument("--store", type=Path, help="time recall on this store (a store "
                    "this bench built), no indexing")
    ap.add_argument("--digest", type=Path, help="write every hit of the dev questions "
                    "here and print their sha256 (under PYTHONHASHSEED=0), no timing")
    ap.add_argument("--embedder", default="minilm", help="minilm, or fake (a smoke run)")
    ap.add_argument("--profile", type=Path, help="cProfile the adapt-on recall calls here")
    args = ap.parse_args(argv)
    if not rq.corpus_dirs():
        print(f"no transcripts under {rq.SHARED}", file=sys.stderr)
        return 2
    if args.digest:
        from bench.digest import fixed_hash_seed

        fixed_hash_seed("bench.recall_scale", argv if argv is not None else sys.argv[1:])
    sd.bench_env()
    embedder = sd.make_embedder(args.embedder)
    if args.store:
        if args.digest:
            print(f"digest: {digest(args.store, embedder, args.queries, args.digest)}")
            return 0
        print_latency(latency(args.store, embedder, args.queries, args.rounds, args.profile))
        return 0
    args.cache.mkdir(parents=True, exist_ok=True)
    folder = synthesize(args.cache, args.sessions)
    tag = f"store-{folder.name}-{args.chunks or 'all'}-{args.embedder}-{rq.code_tag()}"
    store = args.cache / tag
    if args.reindex or not (store / "READY").exists():
        shutil.rmtree(store, ignore_errors=True)
        r = index(folder, store / "store", embedder, args.chunks)
        print_index(r)
        (store / "READY").write_text("ok\n")
    else:
        print(f"(indexing skipped: the store of the last run is reused, {store}; "
              f"--reindex times it again)")
    if args.index_only:
        return 0
    print_latency(latency(store / "store", embedder, args.queries, args.rounds, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
