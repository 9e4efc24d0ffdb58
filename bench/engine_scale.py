"""Engine at scale: grow a cached store of N chunks, then time the whole path in a fresh process.

    nice python -m bench.engine_scale [--sizes 100000,500000,1000000] [--queries 60]
                                      [--cache /tmp/ctx-engine-scale] [--build-only]
    nice python -m bench.engine_scale --ops 1000000      # backup, restore, delete 10%
    python -m bench.engine_scale --digest 20000 --cache DIR   # hashes of a store's answers
    python -m bench.engine_scale --sizes 1000000 --opens 5   # open -> first answer only

1. **Store** (once per size and bench version, cached under ``--cache``, outside the
   repo): first ``sessions_for(size)`` transcript sessions replayed from the shared ones
   (``bench.recall_scale.synthesize``; about a fifth of the chunks) through
   ``ContextEngine.sync`` and the fit it queues, then markdown documents recombined
   from paragraphs of the local corpus (``bench.corpus``) up to ``size`` chunks,
   through ``ContextEngine.ingest``: the engine's writer and vault, a real encrypted
   store. Every vector comes from ``bench.scale_vectors.MiniLMLike`` (a draw from real
   MiniLM vectors' mean and covariance, seeded by the text), not the model: the store
   has MiniLM's name, dimension and spread of directions at thousands of texts a
   second. The build rate is printed.
2. **Measure** in a child process per size (so RSS is the engine process's own): the
   real MiniLM is loaded (it embeds every query), then open, open -> first answer
   (build_context, asked right after the warm-up starts in its thread, as a host
   does), the first recall, 8 searches, then (once a big vault's page check, run in a
   thread after open, has ended: its wait is printed) p50/p95 wall and CPU ms of
   build_context, search and recall over a fixed question list (the first dev
   questions of ``bench.recall_quality``, about the replayed sessions, and 8 general
   ones), each with an empty query cache; the child's peak RSS (ru_maxrss), the data
   dir's, vault's and vector snapshot's sizes. The load is printed with every table.
   Compare figures of one run, never across runs: the machine is shared.
3. ``--ops SIZE``: the engine's own backup (vectors included) of that store, its
   check, a restore into a new folder, the restored store's first open and answer,
   then a delete of about 10% of it (the documents under ``part-a``): wall times,
   sizes and how many progress states a user saw (jobs polled every 0.25 s).
4. ``--digest SIZE``: sha256 of every vector (keyed by its embedding input) and of
   the build_context, search and recall answers to the questions, under
   PYTHONHASHSEED=0. Two fresh builds at the same ``--cache`` path (the sources'
   paths are in the answers) must print the same lines.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Self

import numpy as np

from bench.digest import fixed_hash_seed
from bench.stats import machine_state, pct, table

VERSION = "2"
QUERIES = ["why did the tests fail", "how is the build configured", "error reading the file",
           "add a new endpoint", "fix the failing lint", "update the documentation",
           "parse the configuration file", "open the database connection"]


def paragraphs(limit: int = 4000) -> list[str]:
    from bench.corpus import corpus_files

    out: list[str] = []
    for path in corpus_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out += [p for p in text.split("\n\n") if 80 <= len(p) <= 1500]
        if len(out) >= limit:
            break
    return out


CHUNKS_PER_FILE = 25.8  # a file of 20 sections makes about this many chunks (128,934 / 5,000)
MTIME0 = 1_767_225_600  # 2026-01-01 UTC: the documents' times, a minute apart
DELETE_SHARE = 0.10  # the share of the store in docs/part-a, which the ops run deletes


def write_docs(folder: Path, chunks: int, part_a: int, seed: int = 11) -> None:
    """Markdown files recombined from corpus paragraphs (20 sections each) making about
    ``chunks`` chunks; the first files, about ``part_a`` chunks, go under ``part-a``
    (what ``--ops`` deletes), the rest under ``rest``."""
    rng = random.Random(seed)
    paras = paragraphs()
    per_file = 20
    files = max(1, round(chunks / CHUNKS_PER_FILE))
    in_a = round(part_a / CHUNKS_PER_FILE)
    for sub in ("part-a", "rest"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for i in range(files):
        parts = [f"# Note {i}\n"]
        for s in range(per_file):
            body = "\n\n".join(rng.choice(paras) for _ in range(3))
            parts.append(f"## Section {i}.{s}\n\n{body}\n")
        sub = "part-a" if i < in_a else "rest"
        path = folder / sub / f"note{i:07d}.md"
        path.write_text("\n".join(parts), encoding="utf-8")
        os.utime(path, (MTIME0 + 60 * i, MTIME0 + 60 * i))  # a source's time: not the build's


def sessions_for(size: int) -> int:
    """Transcript sessions mixed into a store of ``size`` chunks (about 95 chunks each:
    a fifth of the store; the seed's 10,000 sessions are 500k chunks on their own)."""
    return max(10, size // 500)


def store_dir(cache: Path, size: int) -> Path:
    key = hashlib.sha256(f"{VERSION}:{size}:{sessions_for(size)}".encode()).hexdigest()[:10]
    return cache / f"store-{size}-{key}"


def vectors_left(eng: Any, size: int) -> None:
    """The vectors a killed build left unmade: the warm-up's background job (kind
    "vectors", as the app's start makes it), waited for with progress every 30 s."""
    eng.warm_up(background=False)
    idle = 0
    while eng.status().sources_waiting and idle < 3:
        st = eng.status()
        idle = 0 if st.jobs_active else idle + 1
        print(f"  {size}: {st.chunks_waiting} chunks wait for vectors; load "
              f"{machine_state()}", flush=True)
        time.sleep(30 if st.jobs_active else 1)


def build(cache: Path, size: int, embedder: Any = None) -> tuple[Path, dict[str, Any] | None]:
    """The cached store of about ``size`` chunks: ``sessions_for(size)`` replayed
    transcript sessions (``ContextEngine.sync``, then the fit it queues), then documents
    up to ``size`` (``ContextEngine.ingest``), every vector from ``MiniLMLike``.
    ``embedder``: another MiniLMLike (tests give one of a small sample). A build cut
    short resumes where it stopped (sync and ingest skip what the store holds). Returns
    the store and, when built now, what the build took; progress is printed every 30 s."""
    from bench.recall_scale import synthesize
    from bench.scale_vectors import MiniLMLike
    from engine import ContextEngine

    store = store_dir(cache, size)
    if (store / "READY").exists():
        return store, None
    resumed = (store / "data").exists()
    sessions = synthesize(cache, sessions_for(size))
    docs = cache / f"docs-v{VERSION}-{size}"
    eng = ContextEngine.open(store / "data", embedder=embedder or MiniLMLike())
    t = time.perf_counter()
    for old in eng.interrupted_jobs():  # a build cut short: its files are stored, some
        eng.wait(eng.resume_interrupted(old.id))  # without vectors (a re-ingest skips them)
    vectors_left(eng, size)
    res = eng.sync([str(sessions)])
    if res.adapt_job:
        eng.wait(res.adapt_job)
    sync_s = time.perf_counter() - t
    session_chunks = sum(s.n_chunks for s in eng.sources() if not s.uri.startswith(str(docs)))
    if not (docs / "READY").exists():
        shutil.rmtree(docs, ignore_errors=True)
        write_docs(docs, max(0, size - session_chunks), round(DELETE_SHARE * size))
        (docs / "READY").write_text("")
    before = eng.status().chunks
    t = time.perf_counter()
    job = eng.ingest(paths=[str(docs)])
    while eng.wait(job, timeout=30).finished is None:
        print(f"  {size}: {eng.status().chunks} chunks, {time.perf_counter() - t:.0f} s; "
              f"load {machine_state()}", flush=True)
    ingest_s = time.perf_counter() - t
    st = eng.status()
    n = st.chunks
    eng.close()
    if (st.vectors or 0) < n:  # never cached: the measure would be of a partial index
        raise SystemExit(f"store {store}: {st.vectors} vectors for {n} chunks; not cached")
    info = {"chunks": n, "session_chunks": session_chunks, "sessions": sessions_for(size),
            "sync_s": sync_s, "ingest_s": ingest_s, "docs": str(docs), "resumed": resumed,
            "rate": (n - before) / ingest_s if ingest_s else 0.0}
    (store / "READY").write_text(json.dumps(info))
    return store, info


def questions(n: int) -> list[str]:
    """The first dev questions of ``bench.recall_quality`` (about the replayed sessions'
    copy 0) and the general ones of ``bench.recall_scale``, ``n`` in all: a fixed list."""
    from bench import recall_quality as rq
    from bench.recall_scale import QUERIES as GENERAL

    asks = [q["q"] for q in rq.load_questions("dev", rq.session_ids(rq.corpus_dirs()))]
    return (asks[:max(0, n - len(GENERAL))] + list(GENERAL))[:n]


def query_model(sample: str | None = None) -> Any:
    """The real MiniLM (ONNX when exported), which embeds every query of a measure; with
    ``sample`` (an .npy of vectors), a MiniLMLike of it instead (tests)."""
    from bench.models import embedding_config
    from engine.lab import make_embedder

    if sample:
        from bench.scale_vectors import MiniLMLike

        return MiniLMLike(np.load(sample))
    return make_embedder(embedding_config(model="minilm"))


def sizes_mb(data: Path) -> dict[str, float]:
    files = [f for f in data.rglob("*") if f.is_file()]
    snap = [f for f in files if f.name.startswith("vectors.snap")]
    vault = [f for f in files if f.name.startswith("vault.db")]
    return {"total_mb": sum(f.stat().st_size for f in files) / 1e6,
            "vault_mb": sum(f.stat().st_size for f in vault) / 1e6,
            "snapshot_mb": sum(f.stat().st_size for f in snap) / 1e6}


def measure(store: Path, queries: int, sample: str | None = None) -> dict[str, Any]:
    """In this process: open -> first answer, warm-up, p50/p95 per call, peak RSS. The
    model is loaded before the clock starts (the app loads it beside the open)."""
    from engine import ContextEngine

    model = query_model(sample)
    model.encode(["load"])
    qs = questions(queries)
    t = time.perf_counter()
    eng = ContextEngine.open(store / "data", embedder=model, create=False)
    opened = time.perf_counter() - t
    eng.warm_up()  # in a thread, as the app and ctx serve do right after open
    eng.build_context(qs[0], budget=1500)
    first = time.perf_counter() - t
    t = time.perf_counter()
    eng.recall(qs[1])
    first_recall = time.perf_counter() - t
    t = time.perf_counter()
    for q in qs[:8]:
        eng.search(q, k=10)
    warm = time.perf_counter() - t
    # a big vault's pages are checked in a thread after open (about 24 s of a core at 1M
    # chunks, load 3.5): the calls are measured after it, as bench.stage_latency's are,
    # not beside it (process CPU counted the check's thread)
    t = time.perf_counter()
    eng.rt.vault.guard.wait()
    check_wait = time.perf_counter() - t
    calls = {"build_context": lambda q: eng.build_context(q, budget=1500),
             "search": lambda q: eng.search(q, k=10),
             "recall": lambda q: eng.recall(q)}
    st = eng.status()
    out: dict[str, Any] = {"chunks": st.chunks, "vectors": st.vectors, "open_s": opened,
                           "first_answer_s": first, "first_recall_s": first_recall,
                           "warmup_s": warm, "check_wait_s": check_wait, "queries": len(qs)}
    for name, call in calls.items():
        wall, cpu = [], []
        for q in qs:
            eng.rt._qcache.clear()
            t, c = time.perf_counter(), time.process_time()
            call(q)
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        out[name] = {"p50": pct(wall, 50), "p95": pct(wall, 95),
                     "cpu_p50": pct(cpu, 50), "cpu_p95": pct(cpu, 95)}
    eng.close()
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(sizes_mb(store / "data"))
    return out


def measure_open(store: Path, sample: str | None = None) -> dict[str, Any]:
    """In this process: open and open -> first answer only, as ``measure`` times them
    (the model loaded first, the warm-up started in its thread, then one build_context),
    each with the process's CPU seconds (every thread's: the warm-up's and the vault's
    page check's too); the process's peak RSS."""
    from engine import ContextEngine

    model = query_model(sample)
    model.encode(["load"])
    q = questions(60)[0]  # the first question of a measure
    t, c = time.perf_counter(), time.process_time()
    eng = ContextEngine.open(store / "data", embedder=model, create=False)
    opened, open_cpu = time.perf_counter() - t, time.process_time() - c
    eng.warm_up()
    eng.build_context(q, budget=1500)
    first, first_cpu = time.perf_counter() - t, time.process_time() - c
    eng.close()
    return {"open_s": opened, "open_cpu_s": open_cpu, "first_answer_s": first,
            "first_cpu_s": first_cpu,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def opens(store: Path, times: int, sample: str | None = None) -> list[dict[str, Any]]:
    """``measure_open`` in ``times`` fresh processes, one after the other."""
    cmd = [sys.executable, "-m", "bench.engine_scale", "--measure-open", str(store)]
    runs = []
    for _ in range(times):
        done = subprocess.run(cmd + (["--sample", sample] if sample else []),
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs


def report_opens(size: int, runs: list[dict[str, Any]], before: str, after: str) -> None:
    keys = ("open_s", "open_cpu_s", "first_answer_s", "first_cpu_s", "rss_mb")
    print(f"\n{size}: open -> first answer in {len(runs)} fresh processes; load before "
          f"{before}, after {after}")
    print(table(["", *keys], [[f, *[float(pct([r[k] for r in runs], q)) for k in keys]]
                              for f, q in (("median", 50), ("min", 0), ("max", 100))]),
          flush=True)


def measure_child(store: Path, queries: int, sample: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.engine_scale", "--measure", str(store),
           "--queries", str(queries)] + (["--sample", sample] if sample else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


class JobWatch:
    """Polls the engine's jobs of one kind every 0.25 s while a call runs: how many
    distinct progress states a user would have seen (bytes, chunks)."""

    def __init__(self, eng: Any, kind: str) -> None:
        self.eng, self.kind = eng, kind
        self.seen: set[tuple[int, int, int]] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.25):
            for j in self.eng.jobs():
                if j.kind == self.kind:
                    self.seen.add((j.bytes, j.bytes_total, j.chunks))

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def ops(store: Path, sample: str | None = None) -> dict[str, Any]:
    """Backup (the engine's own call, vectors included), its check, a restore into a new
    folder and the first open of it, then a delete of ``docs/part-a`` (about 10% of the
    store) on the restored copy: wall times, sizes and the progress shown."""
    from engine import ContextEngine, restore_backup

    info = json.loads((store / "READY").read_text())
    work = store.parent / "ops-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    dest, target = work / "store.ctxbackup", work / "restored"
    model = query_model(sample)
    out: dict[str, Any] = {"load_before": machine_state()}
    try:
        with ContextEngine.open(store / "data", embedder=model, create=False) as eng:
            t = time.perf_counter()
            with JobWatch(eng, "backup") as w:
                res = eng.backup(str(dest))
            out["backup_s"] = time.perf_counter() - t
            out["backup_progress_states"] = len(w.seen)
            out["backup_mb"] = res.bytes / 1e6
            t = time.perf_counter()
            eng.verify_backup(str(dest))
            out["verify_s"] = time.perf_counter() - t
        steps: list[tuple[int, int]] = []
        t = time.perf_counter()
        restore_backup(dest, target, progress=lambda d, n: steps.append((d, n)))
        out["restore_s"] = time.perf_counter() - t
        out["restore_progress_calls"] = len(steps)
        t = time.perf_counter()
        with ContextEngine.open(target, embedder=model, create=False) as eng:
            out["restored_open_s"] = time.perf_counter() - t
            eng.build_context("why did the tests fail", budget=1500)
            out["restored_first_answer_s"] = time.perf_counter() - t
            st = eng.status()
            out["chunks"], out["vectors"] = st.chunks, st.vectors
            out["size_before_mb"] = sizes_mb(target)["total_mb"]
            t = time.perf_counter()
            job = eng.delete(str(Path(info["docs"]) / "part-a"), wait=False).job
            with JobWatch(eng, "delete") as w:
                done = eng.wait(job)
            out["delete_s"] = time.perf_counter() - t
            out["delete_progress_states"] = len(w.seen)
            out["deleted_chunks"] = out["chunks"] - eng.status().chunks
            out["delete_state"] = str(done.state)
        out["size_after_mb"] = sizes_mb(target)["total_mb"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_after"] = machine_state()
    return out


def digest(store: Path, queries: int, sample: str | None = None) -> dict[str, Any]:
    """What the store holds and answers, hashed: every chunk's vector bytes keyed by its
    embedding input, and build_context, search and recall for the fixed questions
    (``bench.digest.RunDigest``; recall's hits by chunk id, exact score and text). Two
    fresh builds of one size that print the same digests are the same store to the bit
    and rank the same (the run is under PYTHONHASHSEED=0: ``bench.digest``). The
    contexts are packed without their clock line (``packing.include_time`` off): it
    holds the minute of the call."""
    from bench.digest import RunDigest
    from engine import ContextEngine
    from engine.lab import embed_inputs

    model = query_model(sample)
    run = RunDigest()
    vecs, hits = hashlib.sha256(), hashlib.sha256()
    os.environ["CTX__PACKING__INCLUDE_TIME"] = "false"  # no "[now · minute]" line
    with ContextEngine.open(store / "data", embedder=model, create=False) as eng:
        after = count = 0
        while page := embed_inputs(eng.rt.vault, after, 1000):
            got = eng.rt.vectors.vectors([r.id for r in page])
            for r in page:
                vecs.update(hashlib.sha256(repr(tuple(r)[1:]).encode("utf-8")).digest())
                vecs.update(np.asarray(got[r.id], dtype="<f4").tobytes())
            count += len(page)
            after = page[-1].id
        for q in questions(queries):
            run.payload(q, eng.build_context(q, budget=1500))
            run.search(q, eng.search(q, k=10))
            rec = [[x.chunk_id, repr(x.score), x.text, list(x.chunks)]
                   for x in eng.recall(q, k=10).hits or ()]
            hits.update(json.dumps([q, rec], ensure_ascii=False).encode("utf-8") + b"\n")
    return {"chunks": count, "vectors": f"sha256 {vecs.hexdigest()}",
            "recall": f"sha256 {hits.hexdigest()}", "lines": run.lines()}


def report(size: int, store: Path, r: dict[str, Any], load: str) -> None:
    info = json.loads((store / "READY").read_text())
    print(f"\n{size} target: {r['chunks']} chunks ({info['session_chunks']} of them from "
          f"{info['sessions']} sessions), {r['vectors']} vectors; built at "
          f"{info['rate']:.0f} chunks/s; load after {load}")
    print(f"open {r['open_s']:.2f} s, open -> first answer {r['first_answer_s']:.2f} s "
          f"(target <= 2 s), first recall {r['first_recall_s']:.2f} s, warm-up (8 searches) "
          f"{r['warmup_s']:.2f} s, the vault's page check waited for "
          f"{r['check_wait_s']:.2f} s after it (calls measured once it ended), peak RSS {r['rss_mb']:.0f} MB (target <= 2048 MB); "
          f"data dir {r['total_mb']:.0f} MB (vault {r['vault_mb']:.0f} MB, vector snapshot "
          f"{r['snapshot_mb']:.0f} MB); {r['queries']} queries")
    targets = {"build_context": 50.0, "recall": 100.0}
    print(table(["call", "p50 ms", "p95 ms", "cpu p50 ms", "cpu p95 ms", "target p95 ms"],
                [[k, r[k]["p50"], r[k]["p95"], r[k]["cpu_p50"], r[k]["cpu_p95"],
                  str(targets.get(k, "-"))] for k in ("build_context", "search", "recall")]),
          flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="100000,500000,1000000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--cache", default="/tmp/ctx-engine-scale")
    ap.add_argument("--build-only", action="store_true", help="grow the stores, measure nothing")
    ap.add_argument("--ops", type=int, metavar="SIZE",
                    help="backup, verify, restore, first open and delete 10%% at this size")
    ap.add_argument("--digest", type=int, metavar="SIZE",
                    help="hash the store of this size (vectors; build_context, search and "
                         "recall answers): two fresh builds (--cache) must print the same")
    ap.add_argument("--opens", type=int, metavar="N",
                    help="only open -> first answer, in N fresh processes per size")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--measure-open", help=argparse.SUPPRESS)
    ap.add_argument("--sample", help=argparse.SUPPRESS)  # tests: MiniLMLike queries
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.queries, args.sample)))
        return 0
    if args.measure_open:
        print(json.dumps(measure_open(Path(args.measure_open), args.sample)))
        return 0
    cache = Path(args.cache)
    if args.digest:
        fixed_hash_seed("bench.engine_scale", sys.argv[1:] if argv is None else argv)
        store, info = build(cache, args.digest)
        print(f"store {store}" + (f" built now: {json.dumps(info)}" if info else " (cached)"))
        d = digest(store, args.queries)
        print(f"{d['chunks']} chunks; vectors digest: {d['vectors']}; recall digest: "
              f"{d['recall']}")
        print("\n".join(d["lines"]), flush=True)
        return 0
    if args.ops:
        store, _ = build(cache, args.ops)
        print(json.dumps(ops(store)), flush=True)
        return 0
    for size in (int(s) for s in args.sizes.split(",")):
        load = machine_state()
        store, info = build(cache, size)
        if info is not None:
            print(f"built {size}: {json.dumps(info)}; load before {load}, after "
                  f"{machine_state()}", flush=True)
        if args.opens:
            before = machine_state()
            report_opens(size, opens(store, args.opens), before, machine_state())
        elif not args.build_only:
            report(size, store, measure_child(store, args.queries), machine_state())
    return 0


if __name__ == "__main__":
    sys.exit(main())
