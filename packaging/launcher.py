"""Entry point of the bundled app: the tray app or the ``ctx`` command line.

One bundle, two executables built from this script: ``ctx-app`` (or ``ctx
app``) starts the desktop tray app; ``ctx`` is the command line, the same
one a pip install provides, on the same data dir. ``ctx --version`` prints
the version and what the bundle carries.

Kept import-light: the GUI path imports Qt only through ``desktop.app``, the
CLI path never imports Qt.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

GUI_NAMES = frozenset({"ctx-app", "ctx-desktop", "ctx_app"})


def version() -> str:
    from ipc.version import version as ctx_version  # the pip install's `ctx --version` too

    return ctx_version()


def about() -> dict[str, object]:
    """What ``ctx --version --json`` reports: version, bundle or not, the embedder's files."""
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.onnx_files import bundle_root, find_export

    export = find_export(EmbeddingConfig())
    return {"version": version(), "frozen": bool(getattr(sys, "frozen", False)),
            "bundle": str(bundle_root()) if bundle_root() else None,
            "onnx_export": str(export) if export else None,
            "python": sys.version.split()[0], "platform": sys.platform,
            "chroma_telemetry": os.environ.get("ANONYMIZED_TELEMETRY", "")}


def bench_embed(n: int) -> dict[str, object]:
    """Hidden ``--bench-embed N``: load the configured embedder, time N single queries (ms).

    The same code runs in the bundle and in a pip install (``python
    packaging/launcher.py --bench-embed N``), so bench/dist_bench.py compares like with like.
    """
    import time

    from engine.config import load_config
    from engine.embedding.factory import make_embedder
    from engine.paths import data_dir

    t = time.perf_counter()
    emb = make_embedder(load_config(data_dir()).embedding)
    emb.encode(["warm up"])
    load_s = time.perf_counter() - t
    times = []
    for i in range(n):
        t = time.perf_counter()
        emb.encode([f"what did we decide about item {i} of the release plan?"])
        times.append((time.perf_counter() - t) * 1000)
    return {"backend": getattr(emb, "backend", "torch"), "load_s": load_s, "ms": times}


def is_gui(argv0: str) -> bool:
    return Path(argv0).stem.lower() in GUI_NAMES


def run_gui(argv: Sequence[str]) -> int:
    try:
        from desktop.app import main as gui_main
    except ImportError as exc:
        sys.stderr.write(f"ctx: this build has no desktop app ({exc.name})\n")
        return 1
    return int(gui_main(list(argv)) or 0)


def run_cli(argv: Sequence[str]) -> int:
    from ipc.cli.main import main as cli_main

    return int(cli_main(list(argv)) or 0)


# ``sys.executable -m MODULE`` is how the code starts its own processes (the background
# engine, start at login, agent hooks); in the bundle sys.executable is this launcher.
MODULES = {"ipc.cli.main": run_cli, "desktop.app": run_gui}


def main(argv: Sequence[str] | None = None, argv0: str | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    prog = sys.argv[0] if argv0 is None else argv0
    if args[:1] == ["-m"]:
        target = MODULES.get(args[1] if len(args) > 1 else "")
        if target is None:
            sys.stderr.write(f"ctx: cannot run module {args[1:2]} (known: {sorted(MODULES)})\n")
            return 2
        return target(args[2:])
    if is_gui(prog):
        return run_gui(args)
    if args[:1] == ["--bench-embed"]:
        sys.stdout.write(json.dumps(bench_embed(int(args[1]) if len(args) > 1 else 100)) + "\n")
        return 0
    if args[:1] == ["--version"]:
        if "--json" in args[1:]:
            sys.stdout.write(json.dumps(about()) + "\n")
        else:
            sys.stdout.write(f"ctx {version()}\n")
        return 0
    return run_cli(args)


if __name__ == "__main__":
    if getattr(sys, "frozen", False):
        import multiprocessing

        multiprocessing.freeze_support()  # a frozen child started by multiprocessing
    sys.exit(main())
