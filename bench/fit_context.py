"""Choose the share of adjacent turns in a chat turn's similarity on LoCoMo dev.

``RerankConfig.context_share`` mixes a turn's vector with its session neighbours'
before the query's cosine is taken (``engine.flows.search.ranking.context_similarities``);
``PackingConfig.unlabelled_kinds`` leaves the kind label out of a chat session's
header. This script runs ``bench.locomo`` on the dev split (conversations 0-4; test
is never read) once per setting, through the product's own config overrides
(``CTX__SECTION__KEY``), and prints recall@10 and evidence recall in the payload at
500/1000/2000 tokens, overall and per conversation, so that a value is chosen by a
gain that holds across conversations, not by one lucky one.

    python -m bench.fit_context [--store-cache DIR] [--shares 0 0.2 ...] [--out FILE]

Results go to ``--out`` (default ``bench/data/context_fit.json``); the chosen values
are copied into ``engine/retrieval/rerank.py`` and ``engine/packing/packer.py`` by
hand, where this file is cited.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import locomo

OUT = Path(__file__).resolve().parent / "data" / "context_fit.json"
SHARES = (0.0, 0.2, 0.3, 0.5, 1.0)


def run_dev(env: dict[str, str], cache: Path) -> dict[str, Any]:
    """One ``bench.locomo --split dev`` run under ``env``: the overall row and ctx@1000
    per conversation."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            per_conv: dict[str, float] = {}
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = locomo.main(["--split", "dev", "--store-cache", str(cache),
                                    "--json", str(out)])
            if code:
                raise SystemExit(f"bench.locomo failed ({code})")
            for line in err.getvalue().splitlines():
                if "dev conv" in line and "ctx@1000" in line:
                    conv = line.split("dev conv", 1)[1].split(":", 1)[0].strip()
                    per_conv[conv] = float(line.rsplit(" ", 1)[1])
            row = json.loads(out.read_text())["dev"]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    keys = ("recall@10", "ctx@500", "ctx@1000", "ctx@2000")
    return {**{k: round(row[k], 4) for k in keys}, "ctx@1000_by_conversation": per_conv}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench" / "locomo")
    ap.add_argument("--shares", type=float, nargs="*", default=list(SHARES))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    settings: list[tuple[str, dict[str, str]]] = [
        (f"context_share {s:g}", {"CTX__RERANK__CONTEXT_SHARE": repr(float(s)),
                                  "CTX__PACKING__UNLABELLED_KINDS": "[]"})
        for s in args.shares]
    settings.append(("context_share default, turn headers unlabelled", {}))
    rows = []
    print("| setting | recall@10 | ctx@500 | ctx@1000 | ctx@2000 | ctx@1000 per conversation |")
    print("|---|---|---|---|---|---|")
    for name, env in settings:
        r = run_dev(env, args.store_cache)
        rows.append({"setting": name, "env": env, **r})
        convs = " ".join(f"{v:.3f}" for v in r["ctx@1000_by_conversation"].values())
        print(f"| {name} | {r['recall@10']:.3f} | {r['ctx@500']:.3f} | {r['ctx@1000']:.3f} "
              f"| {r['ctx@2000']:.3f} | {convs} |", flush=True)
    result = {"split": "LoCoMo dev (conversations 0-4, categories 1-4)",
              "metric": "bench.locomo: recall@10 of search, evidence recall in the payload",
              "rows": rows, "command": "python -m bench.fit_context " +
              " ".join(argv if argv is not None else sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
