"""Drop a real source tree: how soon is it searchable by keyword, and when are its vectors in.

    python -m bench.ingest_stages [--files 2000] [--packages pip,certifi,...] [--cold]
                                  [--bare 1000] [--keep DIR] [--json FILE]

Copies ``--files`` files of the named packages of this interpreter's site-packages
(default: a 2,000-file mix of small hook modules, PyInstaller, pip and a few
libraries, with pip's vendored PEM bundle) into a temporary folder, opens a
fresh store with the real model (warmed first, as in the app, unless
``--cold``), drops the folder (``ingest(paths=...)``) and polls every 0.25 s:

- first keyword hit: a word found in the first file of the walk only is
  searched (``search``) until that file comes back;
- last file searchable: the same for the last file of the walk;
- keyword stage done: the job's ``stage`` turns "vectors" (staged code only);
- last vector: the job ends (every vector in).

Then the bare model encodes ``--bare`` of the same chunk texts in the same
process; printed: the times, chunks per second of the whole ingest and its
ratio to the bare model's rate (DESIGN.md: at least 0.8), files stored and
skipped, and the machine load before and after. As the load of a shared
machine moves during a long ingest, the model's own calls are timed during
the ingest too: their share of the job's time (the rest is reading, chunking,
storing and waiting) compares under the same load. Only the engine's public API
is used, so the same file measures an older checkout (run it from there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.stats import machine_state, table

PACKAGES = ("_pyinstaller_hooks_contrib", "PyInstaller", "pip", "certifi", "requests",
            "click", "jinja2", "idna", "urllib3", "markupsafe", "setuptools")
WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{9,30}\b")


def copy_tree(dest: Path, packages: list[str], limit: int) -> list[Path]:
    """Up to ``limit`` files of ``packages`` (no __pycache__) under ``dest``, in order."""
    site = Path(sysconfig.get_paths()["purelib"])
    out: list[Path] = []
    for pkg in packages:
        for src in sorted((site / pkg).rglob("*")):
            if len(out) >= limit:
                return out
            if src.is_file() and "__pycache__" not in src.parts and not src.is_symlink():
                target = dest / src.relative_to(site)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)
                out.append(target)
    return out


def probes(files: list[Path]) -> dict[str, tuple[Path, str]]:
    """A word found in one file only, for the first and the last file that has one."""
    counts: dict[str, int] = {}
    words: dict[Path, set[str]] = {}
    for f in files:
        try:
            found = set(WORD.findall(f.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
        words[f] = found
        for w in found:
            counts[w] = counts.get(w, 0) + 1
    ordered = sorted(words, key=lambda p: str(p))  # the walk's order: names sorted
    out: dict[str, tuple[Path, str]] = {}
    for name, seq in (("first", ordered), ("last", list(reversed(ordered)))):
        for f in seq:
            unique = sorted(w for w in words[f] if counts[w] == 1)
            if unique:
                out[name] = (f, max(unique, key=len))
                break
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = "minilm"
    from engine import ContextEngine

    work = Path(args.keep or tempfile.mkdtemp(prefix="ctx-stages-"))
    folder = work / "tree"
    files = copy_tree(folder, args.packages.split(","), args.files)
    probe = probes(files)
    eng = ContextEngine.open(work / "store")
    result: dict[str, Any] = {"files": len(files)}
    try:
        if not args.cold:
            eng.warm_up(background=False)
        result["load_before"] = machine_state()
        clock = ModelClock(getattr(eng.rt.embedder, "inner", eng.rt.embedder))
        seen: dict[str, float] = {}
        stop = threading.Event()
        t0 = time.perf_counter()
        job_id = eng.ingest(paths=[str(folder)])

        def poll() -> None:
            while not stop.is_set():
                now = time.perf_counter() - t0
                for name, (path, word) in probe.items():
                    if name not in seen and any(h.source == str(path) for h in
                                                eng.search(word, k=5)):
                        seen[name] = now
                snap = eng.job(job_id)
                if snap.to_dict().get("stage") == "vectors" and "keyword_done" not in seen:
                    seen["keyword_done"] = now
                stop.wait(0.25)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        snap = eng.wait(job_id)
        result["last_vector_s"] = time.perf_counter() - t0
        result["model_s"], result["model_texts"] = clock.stop()
        stop.set()
        poller.join()
        for name, (path, word) in probe.items():  # found only at the end
            if name not in seen and any(h.source == str(path) for h in eng.search(word, k=5)):
                seen[name] = result["last_vector_s"]
        status = eng.status()
        result.update({
            "first_keyword_hit_s": seen.get("first"), "last_file_keyword_s": seen.get("last"),
            "keyword_stage_done_s": seen.get("keyword_done"), "state": snap.state,
            "chunks": status.chunks, "sources": status.sources,
            "skipped": snap.files_skipped, "vectors": status.vectors,
            "load_after": machine_state()})
        result["bare_chunks_per_s"] = bare_rate(eng, args.bare)
    finally:
        eng.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result["ingest_chunks_per_s"] = result["chunks"] / result["last_vector_s"]
    result["ratio"] = result["ingest_chunks_per_s"] / result["bare_chunks_per_s"]
    return result


class ModelClock:
    """Times the model's calls on ``model`` (an instance's methods wrapped) until stop()."""

    def __init__(self, model: Any) -> None:
        self.model, self.seconds, self.texts = model, 0.0, 0
        for name in ("encode", "encode_documents"):
            if hasattr(model, name):
                setattr(model, name, self._timed(getattr(model, name)))

    def _timed(self, fn: Any) -> Any:
        def call(texts: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(texts)
            finally:
                self.seconds += time.perf_counter() - t
                self.texts += len(texts)
        return call

    def stop(self) -> tuple[float, int]:
        for name in ("encode", "encode_documents"):
            self.model.__dict__.pop(name, None)
        return self.seconds, self.texts


def bare_rate(eng: Any, n: int) -> float:
    """Chunks per second of the bare model on ``n`` of the store's own chunk texts, as
    the writer gives them (title and heading above the text)."""
    from engine.lab import embed_text, encode_documents

    rows = eng.rt.vault._query(
        "SELECT s.title, c.heading, c.kind, c.text FROM chunks c JOIN sources s "
        "ON s.id = c.source_id")
    random.Random(7).shuffle(rows)
    texts = [embed_text(*r) for r in rows[:n]]
    model = getattr(eng.rt.embedder, "inner", eng.rt.embedder)
    t = time.perf_counter()
    for i in range(0, len(texts), 256):
        encode_documents(model, texts[i:i + 256])
    return len(texts) / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--packages", default=",".join(PACKAGES))
    ap.add_argument("--cold", action="store_true", help="the model loads in the ingest")
    ap.add_argument("--bare", type=int, default=1000)
    ap.add_argument("--keep")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    r = run(args)

    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    print(table(["what", "value"], [
        ["files dropped", r["files"]], ["sources stored", r["sources"]],
        ["files skipped", r["skipped"]], ["chunks", r["chunks"]],
        ["first keyword hit (s)", s(r["first_keyword_hit_s"])],
        ["last file searchable by keyword (s)", s(r["last_file_keyword_s"])],
        ["keyword stage done (s)", s(r["keyword_stage_done_s"])],
        ["last vector (s)", s(r["last_vector_s"])],
        ["ingest chunks/s (whole job)", f"{r['ingest_chunks_per_s']:.1f}"],
        ["bare model chunks/s (same chunks)", f"{r['bare_chunks_per_s']:.1f}"],
        ["ratio (target >= 0.80)", f"{r['ratio']:.2f}"],
        ["model busy (s, texts)", f"{r['model_s']:.1f}, {r['model_texts']}"],
        ["model share of the job", f"{r['model_s'] / r['last_vector_s']:.2f}"],
        ["model share of the vector stage", "-" if r["keyword_stage_done_s"] is None else
         f"{r['model_s'] / (r['last_vector_s'] - r['keyword_stage_done_s']):.2f}"]]))
    print(f"machine before: {r['load_before']}; after: {r['load_after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
