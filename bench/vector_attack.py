"""The vector rotation attack: someone holding a copy of the data dir and some of the
user's files links the stored vectors to those files, solves for the secret rotation,
and reads the other vectors with it.

A secret orthogonal rotation keeps every inner product, so the stored vectors'
similarity matrix is the files' own similarity matrix with its rows reordered.
Two ways to pair them, neither needing the key:

- per write (the audit's attack): Chroma records each write's vectors under
  consecutive sequence numbers; the attacker ingests the known files into a
  store of their own, so they know which chunks each write holds, and matches
  the rows of each write's similarity matrix by their sorted values;
- by values (found here; it needs no order at all, so ``ctx repair``'s one
  random-order write does not stop it): a known chunk's similarities to the
  other known chunks appear, to float precision, among its stored vector's
  similarities to all stored vectors, and nowhere else.

The pairs give the rotation (orthogonal Procrustes); un-rotated, each of the
user's private documents is told apart among candidate documents (the right one
and others like it) by the nearest candidate chunk. Printed per case: vectors
found on disk, pairs right, the un-rotated private vectors' cosine to their true
vectors, and the private documents identified top-1. The ground truth (which
stored vector is which chunk) comes from the victim's key, used to score only.

    python -m bench.vector_attack [--known 128] [--private 30] [--candidates 1000]
                                  [--cases embedded,repaired,memory]

Data: SciFact abstracts (../shared/data/scifact), one file each; real MiniLM.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("CTX_PASSPHRASE", "bench-victim")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")

from bench.scifact_data import corpus
from bench.stats import machine_state, table
from engine import Config, ContextEngine, repair_store

BATCH_CHUNKS = 64  # engine.ingest.service: chunks per vector write (the attacker's copy)


def _config(backend: str) -> Config:
    return Config().with_overrides({"store": {"vector_backend": backend},
                                    "keys": {"scrypt_n": 1024}})


def write_files(folder: Path, docs: list[tuple[str, str, str]], prefix: str) -> None:
    folder.mkdir(parents=True)
    for i, (_, title, text) in enumerate(docs):
        (folder / f"{prefix}{i:04d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")


def ingest(root: Path, backend: str, folders: list[Path], model: Any) -> None:
    if not root.exists():  # the store's own config says where its vectors live (as a
        root.mkdir(mode=0o700)  # user sets it), so that `ctx repair` keeps to it
        (root / "config.toml").write_text(f'[store]\nvector_backend = "{backend}"\n')
    with ContextEngine.open(root, config=_config(backend), embedder=model) as eng:
        for folder in folders:  # one job each: the known files' writes come first
            eng.wait(eng.ingest(paths=[str(folder)]))


def chunks_by_file(root: Path, backend: str, model: Any) -> dict[str, list[tuple[int, np.ndarray]]]:
    """file name -> its chunks' (ordinal, model-space vector), read with the store's key."""
    out: dict[str, list[tuple[int, np.ndarray]]] = {}
    with ContextEngine.open(root, config=_config(backend), embedder=model) as eng:
        rows = eng.rt.vault._query("SELECT c.id, c.ordinal, s.uri FROM chunks c JOIN sources s "
                                  "ON s.id = c.source_id ORDER BY s.id, c.ordinal")
        vecs = eng.rt.vectors.vectors([r[0] for r in rows])
        for cid, ordinal, uri in rows:
            out.setdefault(Path(uri).name, []).append((ordinal, vecs[cid]))
    return out


# -- what the attacker reads: vectors/ without the key ----------------------------------
def stored_vectors(root: Path) -> tuple[np.ndarray, list[str]] | None:
    """Every vector in the data dir's Chroma store, in write order (sequence number), with
    its id; None when there is no Chroma store."""
    db = root / "vectors" / "chroma.sqlite3"
    if not db.exists():
        return None
    copy = Path(tempfile.mkdtemp(prefix="attack-")) / "vectors"
    shutil.copytree(root / "vectors", copy)
    import chromadb
    from chromadb.config import Settings

    con = sqlite3.connect(copy / "chroma.sqlite3")
    seq = {eid: int.from_bytes(s, "big") if isinstance(s, bytes) else int(s)
           for eid, s in con.execute("SELECT embedding_id, seq_id FROM embeddings")}
    con.close()
    client = chromadb.PersistentClient(path=str(copy), settings=Settings(anonymized_telemetry=False))
    ids: list[str] = []
    vecs: list[np.ndarray] = []
    for col in client.list_collections():
        got = client.get_collection(col if isinstance(col, str) else col.name
                                    ).get(include=["embeddings"])
        embeddings = got["embeddings"]
        assert embeddings is not None, "asked for the embeddings"
        ids += got["ids"]
        vecs += [np.asarray(e, dtype=np.float64) for e in embeddings]
    order = sorted(range(len(ids)), key=lambda i: seq.get(ids[i], 0))
    shutil.rmtree(copy.parent, ignore_errors=True)
    return np.stack([vecs[i] for i in order]), [ids[i] for i in order]


def truth(root: Path, backend: str, model: Any, ids: list[str]) -> list[tuple[str, int] | None]:
    """(file name, ordinal) of each stored id, from the victim's key (scoring only)."""
    from engine.lab import KeyedIds
    from engine.lab import crypto_keys as keys

    key = keys.unlock_key(root, passphrase=os.environ["CTX_PASSPHRASE"])
    cids = KeyedIds(key).decode(ids)
    with ContextEngine.open(root, config=_config(backend), embedder=model) as eng:
        rows = {r[0]: (Path(r[2]).name, r[1]) for r in eng.rt.vault._query(
            "SELECT c.id, c.ordinal, s.uri FROM chunks c JOIN sources s ON s.id = c.source_id")}
    return [rows.get(c) if c is not None else None for c in cids]


# -- pairing -------------------------------------------------------------------------
def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def pair_by_writes(stored: np.ndarray, known: np.ndarray, sizes: list[int]
                   ) -> list[tuple[int, int]]:
    """The audit's attack: write by write, rows matched by their sorted similarities."""
    from scipy.optimize import linear_sum_assignment

    pairs: list[tuple[int, int]] = []
    at = 0
    for size in sizes:
        s, k = _unit(stored[at:at + size]), _unit(known[at:at + size])
        ps = np.sort(s @ s.T, axis=1)[:, :-1]
        pk = np.sort(k @ k.T, axis=1)[:, :-1]
        cost = np.linalg.norm(ps[:, None, :] - pk[None, :, :], axis=2)
        rows, cols = linear_sum_assignment(cost)
        pairs += [(at + r, at + c) for r, c in zip(rows, cols, strict=True)]
        at += size
    return pairs


def pair_by_values(stored: np.ndarray, known: np.ndarray, tol: float = 1e-4
                   ) -> list[tuple[int, int]]:
    """No order needed: known chunk j's similarities to the other known chunks are found,
    value for value, among stored vector i's similarities to every stored vector."""
    from scipy.optimize import linear_sum_assignment

    s, k = _unit(stored), _unit(known)
    sims = np.sort(s @ s.T, axis=1)
    kk = k @ k.T
    np.fill_diagonal(kk, np.nan)
    cost = np.zeros((len(s), len(k)))
    for j in range(len(k)):
        want = np.sort(kk[j][~np.isnan(kk[j])])
        for i in range(len(s)):
            row = sims[i]
            at = np.clip(np.searchsorted(row, want), 1, len(row) - 1)
            near = np.minimum(np.abs(row[at] - want), np.abs(row[at - 1] - want))
            cost[i, j] = float(np.mean(near < tol))
    rows, cols = linear_sum_assignment(-cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols, strict=True) if cost[r, c] > 0.5]


def procrustes(known: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """The orthogonal Q with known @ Q closest to stored."""
    u, _, vt = np.linalg.svd(known.T @ stored)
    return u @ vt


# -- one case --------------------------------------------------------------------------
def attack(case: str, root: Path, backend: str, model: Any, known_files: dict[str, list[Any]],
           private: dict[str, list[Any]], candidates: dict[str, list[Any]]) -> list[object]:
    found = stored_vectors(root)
    if found is None:
        on_disk = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        print(f"{case}: no Chroma store on disk; files: {', '.join(on_disk)}")
        return [case, 0, "-", "-", "-", f"0/{len(private)} (nothing to read)"]
    stored, ids = found
    where = truth(root, backend, model, ids)
    names = sorted(known_files)
    known_keys = [(n, o) for n in names for o, _ in sorted(known_files[n], key=lambda x: x[0])]
    known = np.stack([v for n in names for _, v in sorted(known_files[n], key=lambda x: x[0])])
    rows: list[object] = []
    methods = {"by values": lambda: pair_by_values(stored, known)}
    if case != "after ctx repair":
        sizes = write_sizes([len(known_files[n]) for n in names])
        methods = {"per write": lambda: pair_by_writes(stored, known, sizes), **methods}
    for method, pair in methods.items():
        t = time.perf_counter()
        pairs = pair()
        secs = time.perf_counter() - t
        right = sum(where[i] == known_keys[j] for i, j in pairs)
        if len(pairs) < 2:
            rows.append([f"{case}, {method}", len(ids), f"{right}/{len(known)}", "-", "-",
                         f"0/{len(private)}"])
            continue
        q = procrustes(known[[j for _, j in pairs]], stored[[i for i, _ in pairs]])
        cos, hits = read_private(stored, where, q, private, candidates)
        rows.append([f"{case}, {method}", len(ids), f"{right}/{len(known)}",
                     f"{cos:.3f}", f"{secs:.1f} s", f"{hits}/{len(private)}"])
    return rows


def write_sizes(chunk_counts: list[int]) -> list[int]:
    """Chunks per vector write, as the ingestion groups files (engine.ingest.pipeline)."""
    sizes: list[int] = []
    size = 0
    for n in chunk_counts:
        size += n
        if size >= BATCH_CHUNKS:
            sizes.append(size)
            size = 0
    return sizes + ([size] if size else [])


def read_private(stored: np.ndarray, where: list[Any], q: np.ndarray,
                 private: dict[str, list[Any]], candidates: dict[str, list[Any]]
                 ) -> tuple[float, int]:
    """Mean cosine of the un-rotated private vectors to their true ones, and how many
    private files are identified top-1 among the candidates (by their nearest chunk)."""
    back = _unit(stored @ q.T)
    cand_names = sorted(candidates)
    cand = _unit(np.stack([v for n in cand_names for _, v in candidates[n]]))
    owner = [n for n in cand_names for _ in candidates[n]]
    true = {(n, o): v for n, chunks in private.items() for o, v in chunks}
    cosines: list[float] = []
    votes: dict[str, dict[str, float]] = {}
    for i, w in enumerate(where):
        if w is None or w not in true:
            continue
        cosines.append(float(back[i] @ _unit(true[w][None, :])[0]))
        sims = cand @ back[i]
        best = int(np.argmax(sims))
        tally = votes.setdefault(w[0], {})
        tally[owner[best]] = max(tally.get(owner[best], -1.0), float(sims[best]))
    hits = sum(max(t, key=lambda n: t[n]) == name.replace("p", "c", 1)
               for name, t in votes.items())
    return float(np.mean(cosines)) if cosines else 0.0, hits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--known", type=int, default=128)
    ap.add_argument("--private", type=int, default=30)
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--cases", default="embedded,repaired,memory")
    args = ap.parse_args(argv)
    from engine.lab import EmbeddingConfig, make_embedder

    model = make_embedder(EmbeddingConfig(model="minilm"))
    docs = list(corpus())
    rng = np.random.default_rng(25)
    pick = [docs[i] for i in rng.permutation(len(docs))[:args.known + args.candidates]]
    known_docs, cand_docs = pick[:args.known], pick[args.known:]
    private_docs = cand_docs[:args.private]  # the right candidates are c0000..c0029
    work = Path(tempfile.mkdtemp(prefix="ctx-vector-attack-"))
    try:
        write_files(work / "known", known_docs, "k")
        write_files(work / "private", private_docs, "p")
        write_files(work / "candidates", cand_docs, "c")
        print(f"{len(known_docs)} known files, {len(private_docs)} private, "
              f"{len(cand_docs)} candidates (SciFact); {machine_state()}")
        attacker = work / "attacker"  # the attacker's own store: known files, candidates
        ingest(attacker, "memory", [work / "known", work / "candidates"], model)
        theirs = chunks_by_file(attacker, "memory", model)
        known_files = {n: c for n, c in theirs.items() if n.startswith("k")}
        candidates = {n: c for n, c in theirs.items() if n.startswith("c")}
        rows: list[list[object]] = []
        cases = args.cases.split(",")
        for backend in ("embedded", "memory"):
            wanted = [c for c in cases if (c == "memory") == (backend == "memory")]
            if not wanted:
                continue
            victim = work / f"victim-{backend}"
            ingest(victim, backend, [work / "known", work / "private"], model)
            private = {n: c for n, c in chunks_by_file(victim, backend, model).items()
                       if n.startswith("p")}
            if "embedded" in wanted or backend == "memory":
                name = "embedded (one write per batch)" if backend == "embedded" \
                    else "memory + snapshot"
                rows += _rows(attack(name, victim, backend, model, known_files, private,
                                     candidates))
            if "repaired" in wanted:
                repair_store(victim, embedder=model)
                rows += _rows(attack("after ctx repair", victim, backend, model, known_files,
                                     private, candidates))
        print(table(["case, pairing", "vectors on disk", "pairs right",
                     "private cosine", "pairing time", "private identified top-1"], rows))
        print(machine_state())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _rows(found: list[object]) -> list[list[object]]:
    return [r for r in found if isinstance(r, list)] or [found]


if __name__ == "__main__":
    raise SystemExit(main())
