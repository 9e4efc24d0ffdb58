"""SciFact (BEIR layout, train split) for the benchmarks: corpus, claims, qrels, and a
cached ctx store of the corpus ingested through the public API.

See ../shared/data/scifact/NOTICE.md: only the train split is in the project.
Every document is one source, ingested as text (title, a blank line, abstract)
with the caller's id ``scifact:<doc id>`` as its external id.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.models import embedding_config, vectors_tag

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "scifact"
CACHE_VERSION = "2"  # bump when the ingestion path changes what a store holds
URI_PREFIX = "scifact:"


def bench_env() -> None:
    """Key and cache settings every bench process shares (a cached store always opens)."""
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ.setdefault("CTX__EMBEDDING__QUERY_CACHE_SIZE", "0")


def prepared() -> bool:
    """Whether the SciFact data is there (else says so on stderr); sets ``bench_env``."""
    if not (DATA / "corpus.jsonl").exists():
        print(f"SciFact data not found at {DATA}", file=sys.stderr)
        return False
    bench_env()
    return True


def corpus(docs: int | None = None) -> Iterator[tuple[str, str, str]]:
    """(doc id, title, abstract) in file order; with ``docs``, a fixed subset of that
    many: every document a train claim cites, then the others spread evenly over the
    file (every k-th), so that the same subset comes back on every run."""
    with open(DATA / "corpus.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    keep = None
    if docs is not None and docs < len(rows):
        cited = {d for rel in qrels().values() for d in rel}
        others = [str(r["_id"]) for r in rows if str(r["_id"]) not in cited]
        room = max(0, docs - len(cited))
        step = len(others) / room if room else float("inf")
        keep = cited | {others[int(i * step)] for i in range(room)}
    for d in rows:
        if keep is None or str(d["_id"]) in keep:
            yield str(d["_id"]), d.get("title", ""), d.get("text", "")


def queries() -> dict[str, str]:
    out = {}
    with open(DATA / "queries_train.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            out[str(d["_id"])] = d["text"]
    return out


def qrels() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    lines = (DATA / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            out.setdefault(qid, {})[did] = int(score)
    return out


def doc_id(source: str) -> str | None:
    return source[len(URI_PREFIX):] if source.startswith(URI_PREFIX) else None


def chunk_tag() -> str:
    """The chunking settings in force (they decide what a store holds)."""
    from engine import load_config

    c = load_config(None).chunking
    return f"t{c.target_tokens}-m{c.max_tokens}-o{c.overlap_tokens}-n{c.min_tokens}"


def ingest(embedder: Any, workdir: Path, limit: int | None = None) -> float:
    """Ingest the corpus (``limit``: the subset of that many documents, see ``corpus``)
    into a new store at ``workdir``; returns seconds spent."""
    from engine import ContextEngine

    t0 = time.perf_counter()
    with ContextEngine.open(workdir, embedder=embedder) as eng:
        last = None
        for i, (did, title, text) in enumerate(corpus(limit)):
            body = f"{title}\n\n{text}" if title else text
            last = eng.ingest(text=body, title=title or None, external_id=URI_PREFIX + did)
            if i % 500 == 0:
                print(f"  queued {i} docs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        if last:
            eng.wait(last)
        for job in eng.jobs():  # the vector stages may still run after the last ingest
            eng.wait(job.id)
        states = {j.state for j in eng.jobs()}
        assert states <= {"done"}, states
    return time.perf_counter() - t0


def prepare_store(embedder: Any, cache: Path, limit: int | None = None) -> tuple[Path, float]:
    """The cached store of the corpus (built on first use); (its folder, ingest seconds).

    Runs mutate a store (access statistics); callers that care copy it first.
    """
    name = f"v{CACHE_VERSION}-{vectors_tag(embedder)}-{chunk_tag()}"
    if limit:
        name += f"-subset{limit}"
    cached = cache / name
    ready = cached / "READY"
    if ready.exists():
        return cached / "store", float(ready.read_text().split()[0])
    building = cached.with_name(cached.name + ".tmp")
    shutil.rmtree(building, ignore_errors=True)
    seconds = ingest(embedder, building / "store", limit)
    (building / "READY").write_text(f"{seconds:.1f}\n")
    building.rename(cached)
    return cached / "store", seconds


def covered_claims(eng: Any, qrels: dict[str, dict[str, int]]) -> set[str]:
    """Claims whose every cited document is in the store (all of them for a full store;
    a store cut short holds a prefix of its corpus, and only these claims are fair)."""
    present = {d for s in eng.sources() if (d := doc_id(s.uri))}
    return {q for q, rel in qrels.items() if set(rel) <= present}


def make_embedder(name: str) -> Any:
    """The embedder ``name`` ("minilm", "fake"), with the CTX__EMBEDDING__* settings of the
    environment (backend, onnx_dir, document_precision, ...) applied."""
    from engine.lab import make_embedder as make

    emb = make(embedding_config(model=name))
    emb.encode(["warm up"])
    return emb


if __name__ == "__main__":  # build the cached store: python -m bench.scifact_data DIR [N]
    bench_env()
    store, secs = prepare_store(make_embedder("minilm"), Path(sys.argv[1]),
                                int(sys.argv[2]) if len(sys.argv) > 2 else None)
    print(f"store {store}: ingest {secs:.1f} s")
