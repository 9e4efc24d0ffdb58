"""What the bundle leaves out is not needed by the app (checked here, without a bundle).

A child interpreter refuses to import every module that ``ctx_platform``
excludes (as the bundle lacks them), runs the bundle's runtime hooks, and then
drives the app: init, ingest of md/html/docx/pdf, build, the MCP server and
the desktop app's modules. A new top-level import of an excluded package (or a
runtime hook that stops standing in for one) fails here, long before a bundle
is built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING, REPO, P

OPTIONAL_IMPORTS = {
    "grpc": "rthook_otlp.py probes for it",
    "click": "httpx's command line (httpx/__init__.py falls back)",
    "rich": "mcp's log handler (mcp/server/mcpserver/utilities/logging.py falls back)",
    "PIL": "pypdf's image extraction (pypdf/_page.py, pypdf/__init__.py fall back)",
    "uvicorn": "sse_starlette's shutdown hook for the MCP HTTP transport (ctx: stdio)",
}

CHILD = r"""
import importlib.abc, json, runpy, sys
EXCLUDED = tuple(json.loads(sys.argv[1]))
refused = []

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if any(name == x or name.startswith(x + ".") for x in EXCLUDED):
            refused.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (left out of the bundle)",
                                      name=name)
        return None

sys.meta_path.insert(0, Refuse())
for hook in sys.argv[2:4]:
    runpy.run_path(hook)
data, docs = sys.argv[4], sys.argv[5]
sys.path.insert(0, sys.argv[6])
import launcher
out = {}
for args in (["init", "--no-keychain"], ["ingest", docs, "--json"],
             ["build", "how many retries", "--budget", "120", "--format", "json"]):
    print(f"@@ {args[0]}", flush=True)  # the CLI's own output follows, up to the next mark
    code = launcher.main(["--data-dir", data, "--local", *args], argv0="ctx")
    sys.stdout.flush()
    assert code == 0, (args, code)
print("@@ end", flush=True)
from ipc.mcp.server import make_server
make_server(data).ctx_tools.link.close()
import desktop.app, desktop.main_window, desktop.tray  # noqa: E401
import chromadb.telemetry.opentelemetry as otel
try:
    otel.OTLPSpanExporter(endpoint="http://localhost:4317")
except RuntimeError as exc:
    out["stub"] = str(exc)
out["refused"] = sorted({name.split(".")[0] for name in refused})
print(json.dumps(out))
"""


def _docs(folder: Path) -> Path:
    import docx

    from tests.engine.ingest.pdfgen import make_pdf

    folder.mkdir()
    (folder / "retry.md").write_text("# Retry\n\nThe client retries three times.\n")
    (folder / "page.html").write_text("<html><head><title>Tray</title></head><body><h1>Tray"
                                      "</h1><p>The icon turns amber.</p></body></html>")
    (folder / "report.pdf").write_bytes(make_pdf([["Budgets are kept per call."]]))
    document = docx.Document()
    document.add_heading("Notes", level=1)
    document.add_paragraph("Backoff doubles each time.")
    document.save(str(folder / "notes.docx"))
    return folder


@pytest.mark.timeout(300)
def test_app_runs_without_what_the_bundle_leaves_out(tmp_path: Path) -> None:
    excluded = P.excludes(P.current("linux"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTX_")}
    env.update(PYTHONPATH=str(REPO), CTX_EMBEDDER="fake", CTX_PASSPHRASE="excludes test",
               QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(excluded), str(PACKAGING / "rthook_ctx.py"),
         str(PACKAGING / "rthook_otlp.py"), str(tmp_path / "data"), str(_docs(tmp_path / "d")),
         str(PACKAGING)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=280, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    sections = dict(part.split("\n", 1) for part in proc.stdout.split("@@ ")[1:])
    out = json.loads(sections["end"])
    jobs = json.loads(sections["ingest"])["jobs"]
    assert sum(j["files_done"] for j in jobs) == 4 and not any(j["errors"] for j in jobs), jobs
    assert 0 < json.loads(sections["build"])["total_tokens"] <= 120
    # the stand-in answered Chroma's import, and says what is missing when used
    assert out["stub"].startswith("this ctx build has no OpenTelemetry gRPC exporter")
    assert "grpc" in out["refused"]  # it was asked for, and was not there
    # Imports the app tries and lives without (each an optional import where it is made).
    # A new name here is a package the app now wants: keep it in the bundle, or add it
    # here once its absence is known to be harmless.
    assert set(out["refused"]) <= set(OPTIONAL_IMPORTS), out["refused"]


def test_runtime_hook_stands_in_only_where_grpc_is_missing() -> None:
    """In a pip install (gRPC present) the hook leaves the real exporter alone."""
    name = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
    code = (f"import runpy, sys; runpy.run_path({str(PACKAGING / 'rthook_otlp.py')!r}); "
            f"print({name!r} in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "False"
