"""Peak memory (RSS) of ingestion per input, one child process per case (issue 10).

    python -m bench.ingest_mem [--cases prose_1mb,one_small,small_400,docx_bomb,docx_xml]
                               [--backends torch,onnx,fake] [--onnx-dir DIR] [--bomb-mib 2048]

Each (case, backend) runs in a fresh child process that opens a fresh store and
ingests one input through ContextEngine, the real pipeline (load, chunk,
surrogates, embed, vault, Chroma). The child reads its RSS high-water mark
(Linux VmHWM) after each stage, so the table says where the memory goes:

* ``imports``: Python, numpy, the engine, SQLCipher (before any store);
* ``open``: the vault and Chroma opened (Chroma's import is most of it);
* ``model``: the embedding model loaded (torch + transformers, or onnxruntime);
* ``peak``: the whole ingest (chunking, surrogates, embedding batches, writes).

With ``--trace`` the child also reports the Python heap's peak during the
ingest (tracemalloc; slow) to separate Python objects from native memory.
Backends: ``torch`` (sentence-transformers), ``onnx`` (needs an export:
``python -m engine.embedding.onnx_export --out DIR`` and ``--onnx-dir DIR``, or
one in the user cache dir) and ``fake`` (the hashing embedder: no model at
all, the pipeline's own cost). Budgets (DESIGN.md): 1 MB of text at most
400 MB, any input at most 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import table

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
CASES = ("prose_1mb", "one_small", "small_400", "docx_bomb", "docx_xml")
BUDGET_MB = {"prose_1mb": 400}
DEFAULT_BUDGET_MB = 1000


def _status_mb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


# ---------------------------------------------------------------- inputs

def _prose(n_bytes: int) -> str:
    """Real prose: SciFact abstracts when the shared data is here, else local docs."""
    parts: list[str] = []
    size = 0
    if SCIFACT.exists():
        with SCIFACT.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                parts.append(f"{row.get('title', '')}\n\n{row.get('text', '')}")
                size += len(parts[-1].encode("utf-8")) + 2
                if size >= n_bytes:
                    break
    else:
        from bench.corpus import corpus_files

        for path in corpus_files():
            if path.suffix in (".rst", ".txt", ".md"):
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
                size += len(parts[-1].encode("utf-8")) + 2
                if size >= n_bytes:
                    break
    return "\n\n".join(parts).encode("utf-8")[:n_bytes].decode("utf-8", "ignore")


def _docx_xml(path: Path, xml_mib: int) -> Path:
    """An honest .docx whose document.xml is about ``xml_mib`` MiB of varied paragraphs."""
    import zipfile

    from tests.engine.ingest.zipbomb import make_docx_bomb

    make_docx_bomb(path, 0)
    rng = random.Random(7)
    words = _prose(200_000).split()
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "word/document.xml":
                head, sep, tail = data.partition(b"<w:body>")
                member = zipfile.ZipInfo("word/document.xml")
                member.compress_type = zipfile.ZIP_DEFLATED
                with out.open(member, "w", force_zip64=True) as fh:
                    fh.write(head + sep)
                    written = 0
                    while written < xml_mib << 20:
                        text = " ".join(rng.choice(words) for _ in range(60))
                        para = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>".encode()
                        fh.write(para)
                        written += len(para)
                    fh.write(tail)
            else:
                out.writestr(info, data)
    tmp.replace(path)
    return path


def make_inputs(root: Path, cases: list[str], bomb_mib: int) -> dict[str, Path]:
    out: dict[str, Path] = {}
    prose = _prose(1_000_000) if {"prose_1mb", "small_400", "one_small"} & set(cases) else ""
    if "prose_1mb" in cases:
        out["prose_1mb"] = root / "prose_1mb.txt"
        out["prose_1mb"].write_text(prose, encoding="utf-8")
    if "one_small" in cases:
        out["one_small"] = root / "one_small.md"
        out["one_small"].write_text("# A note\n\n" + prose[:2000], encoding="utf-8")
    if "small_400" in cases:
        folder = root / "small_400"
        folder.mkdir()
        for i in range(400):
            (folder / f"note{i:03}.md").write_text(
                f"# Note {i}\n\n" + prose[i * 2400:(i + 1) * 2400], encoding="utf-8")
        out["small_400"] = folder
    if "docx_bomb" in cases:
        from tests.engine.ingest.zipbomb import make_docx_bomb

        out["docx_bomb"] = make_docx_bomb(root / "bomb.docx", bomb_mib << 20)
    if "docx_xml" in cases:
        out["docx_xml"] = _docx_xml(root / "big.docx", 60)
    return out


# ---------------------------------------------------------------- child

def child(path: str, trace: bool) -> dict[str, Any]:
    stages: dict[str, float] = {}
    from engine import ContextEngine

    stages["imports"] = _status_mb("VmHWM")
    eng = ContextEngine.open(os.environ["CTX_HOME"])
    try:
        eng.status()  # touches Chroma
        stages["open"] = _status_mb("VmHWM")
        eng.warm_up(background=False)
        stages["model"] = _status_mb("VmHWM")
        if trace:
            import tracemalloc

            tracemalloc.start()
        began = time.perf_counter()
        snap = eng.wait(eng.ingest(paths=[path]))
        seconds = time.perf_counter() - began
        heap = None
        if trace:
            import tracemalloc

            heap = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        stages["peak"] = _status_mb("VmHWM")
    finally:
        eng.close()
    result = snap.errors[0].reason if snap.errors else snap.state
    return {"stages": stages, "seconds": seconds, "chunks": snap.chunks, "result": result,
            "rss_after_mb": _status_mb("VmRSS"), "py_heap_peak_mb": heap}


def run_case(path: Path, backend: str, onnx_dir: str | None, trace: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-mem-") as home:
        env = {**os.environ, "CTX_HOME": home, "CTX_PASSPHRASE": "bench",
               "CTX__KEYS__SCRYPT_N": "1024", "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "PYTHON_KEYRING_BACKEND":
               "keyring.backends.fail.Keyring",
               "CTX_EMBEDDER": "fake" if backend == "fake" else "minilm"}
        env.pop("CTX_KEY_FILE", None)
        if backend != "fake":
            env["CTX__EMBEDDING__BACKEND"] = backend
        if onnx_dir:
            env["CTX__EMBEDDING__ONNX_DIR"] = onnx_dir
        cmd = [sys.executable, "-m", "bench.ingest_mem", "--child", str(path)]
        if trace:
            cmd.append("--trace")
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              check=False, timeout=3600)
        if proc.returncode != 0:
            return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="prose_1mb,one_small,small_400,docx_bomb")
    ap.add_argument("--backends", default="torch,fake")
    ap.add_argument("--onnx-dir")
    ap.add_argument("--bomb-mib", type=int, default=2048)
    ap.add_argument("--trace", action="store_true", help="Python heap peak (tracemalloc)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.trace)))
        return 0
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="ctx-mem-in-") as tmp:
        inputs = make_inputs(Path(tmp), cases, args.bomb_mib)
        for case in cases:
            path = inputs[case]
            size = (sum(p.stat().st_size for p in path.iterdir()) if path.is_dir()
                    else path.stat().st_size)
            for backend in [b for b in args.backends.split(",") if b]:
                r = run_case(path, backend, args.onnx_dir, args.trace)
                if "error" in r:
                    rows.append([case, backend, f"{size / 1e6:.2f}", "-", "-", "-", "-", "-",
                                 "-", r["error"][:60]])
                    continue
                st = r["stages"]
                budget = BUDGET_MB.get(case, DEFAULT_BUDGET_MB)
                heap = "-" if r["py_heap_peak_mb"] is None else f"{r['py_heap_peak_mb']:.0f}"
                rows.append([case, backend, f"{size / 1e6:.2f}", f"{st['imports']:.0f}",
                             f"{st['open']:.0f}", f"{st['model']:.0f}", f"{st['peak']:.0f}",
                             f"{budget}", heap,
                             f"{r['result']}, {r['chunks']} chunks, {r['seconds']:.1f} s"])
                print("row: " + " | ".join(str(c) for c in rows[-1]), file=sys.stderr,
                      flush=True)
    print(table(["case", "backend", "input MB", "imports MB", "open MB", "model MB",
                 "peak MB", "budget MB", "py heap MB", "result"], rows))
    print("\nMB = MiB of RSS high-water mark (VmHWM) after each stage, one process per row.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
