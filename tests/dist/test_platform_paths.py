"""Every platform's build settings and run-time paths, checked here on Linux (no bundle).

Covers: the build settings of the three systems (ctx_platform), keychain backend
selection, the runtime dir, the endpoint (tcp on Windows, ipc:// on POSIX),
finding data files inside a bundle (sys._MEIPASS), the launcher and the
runtime hook. Start at login is tested with ipc/login_item.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import runpy
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"


def _load(name: str) -> ModuleType:
    """A module from packaging/ (not a package: the name would shadow PyPI's `packaging`)."""
    spec = importlib.util.spec_from_file_location(name, PACKAGING / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


P = _load("ctx_platform")
launcher = _load("launcher")


@pytest.mark.parametrize("system", ["linux", "darwin", "win32"])
def test_each_system_has_complete_build_settings(system: str) -> None:
    spec = P.current(system)
    assert spec.system == system
    if spec.icon is not None:
        assert spec.icon.is_file()
    excludes = P.excludes(spec)
    for heavy in ("torch", "sentence_transformers", "transformers", "pytest", "nvidia"):
        assert heavy in excludes
    hidden = P.hidden_imports(spec)
    assert set(spec.keyring_backends) <= set(hidden)
    assert not set(spec.keyring_backends) & set(spec.extra_excludes)
    assert spec.exe("ctx") == ("ctx.exe" if system == "win32" else "ctx")


def test_one_executable_on_linux_two_where_the_gui_must_not_open_a_console() -> None:
    assert not P.current("linux").gui_exe  # ctx-app is a link to ctx there
    assert P.current("darwin").gui_exe and P.current("win32").gui_exe
    assert not P.keep("PySide6/Qt/translations/qtbase_de.qm", "linux")
    assert not P.keep("PySide6\\plugins\\tls\\qopensslbackend.dll", "win32")
    assert P.keep("PySide6/Qt/plugins/platforms/libqxcb.so", "linux")
    # X11 and Wayland stay; framebuffer/VNC platforms, image readers, the GTK theme go
    for kept in ("PySide6/Qt/plugins/platforms/libqwayland.so",
                 "PySide6/Qt/plugins/platforms/libqoffscreen.so",
                 "PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so",
                 "PySide6/Qt/plugins/wayland-shell-integration/libxdg-shell.so",
                 "PySide6/Qt/lib/libQt6WaylandClient.so.6", "chromadb-1.5.9.dist-info/METADATA",
                 "PySide6/Qt/plugins/wayland-decoration-client/libadwaita.so",
                 "PySide6/Qt/lib/libQt6Svg.so.6"):  # libadwaita needs it
        assert P.keep(kept, "linux"), kept
    for dropped in ("PySide6/Qt/plugins/platforms/libqvnc.so",
                    "PySide6/Qt/plugins/imageformats/libqjpeg.so",
                    "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
                    "PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6",
                    "chromadb-1.5.9.dist-info/sboms/chromadb_rust_bindings.cyclonedx.json"):
        assert not P.keep(dropped, "linux"), dropped


def test_linux_names_are_the_default_and_unknown_systems_stop_the_build() -> None:
    assert P.current("linux2").system == "linux"
    with pytest.raises(SystemExit):
        P.current("sunos5")


def test_macos_app_lives_in_the_menu_bar() -> None:
    spec = P.current("darwin")
    plist = spec.info_plist("1.2.3", "14.0")
    assert spec.app_bundle and plist["LSUIElement"] is True
    assert plist["LSMinimumSystemVersion"] == "14.0"  # the computed floor, passed in
    assert plist["CFBundleExecutable"] == P.GUI_NAME
    assert plist["CFBundleShortVersionString"] == "1.2.3"
    assert not P.current("linux").app_bundle and not P.current("win32").app_bundle
    assert not P.current("win32").gui_console and not spec.gui_console


@pytest.mark.parametrize("system", ["linux", "darwin", "win32"])
def test_keyring_backend_modules_exist(system: str) -> None:
    for name in P.current(system).keyring_backends:
        if name.startswith("keyring."):
            assert importlib.util.find_spec(name) is not None, name


def test_keychain_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    from keyring.backend import KeyringBackend
    from keyring.backends import fail

    from engine.crypto.keys import keychain_available

    class Memory(KeyringBackend):
        priority = 1

        def get_password(self, service: str, username: str) -> str | None:
            return None

        def set_password(self, service: str, username: str, password: str) -> None:
            pass

        def delete_password(self, service: str, username: str) -> None:
            pass

    class Unusable(Memory):
        priority = 0

    before = keyring.get_keyring()
    try:
        keyring.set_keyring(fail.Keyring())
        assert keychain_available() is False  # headless: passphrase instead
        keyring.set_keyring(Memory())
        assert keychain_available() is True
        keyring.set_keyring(Unusable())
        assert keychain_available() is False
    finally:
        keyring.set_keyring(before)


def test_runtime_dir_follows_the_platform_and_is_private(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from ipc import connection

    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    mac_like = tmp_path / "Library" / "Caches" / "TemporaryItems" / "ctx"
    monkeypatch.setattr(platformdirs, "user_runtime_dir", lambda *a, **k: str(mac_like))
    assert connection.runtime_dir() == mac_like.resolve()
    assert mac_like.stat().st_mode & 0o777 == 0o700
    monkeypatch.setenv("CTX_RUNTIME_DIR", str(tmp_path / "override"))
    assert connection.runtime_dir() == (tmp_path / "override").resolve()


def test_endpoint_is_tcp_on_windows_and_ipc_on_posix(data_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from ipc import connection

    posix = connection.default_endpoint(data_dir)
    assert posix.startswith("ipc://") and posix.endswith(".sock")
    monkeypatch.setattr(os, "name", "nt")  # only default_endpoint runs meanwhile
    try:
        windows = connection.default_endpoint(data_dir)
    finally:
        monkeypatch.undo()
    assert windows == "tcp://127.0.0.1:*"


def test_data_files_keep_their_place_inside_the_bundle(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import tokens
    from engine.embedding import onnx_files
    from engine.embedding.config import EmbeddingConfig

    site = Path(tokens._cl100k_path()).parents[2]  # site-packages (or the bundle root)
    for src, folder in P.module_file_datas():
        assert Path(src).is_file()
        assert (Path(folder) / Path(src).name).as_posix() == \
            Path(tokens._cl100k_path()).relative_to(site).as_posix()
    bundle = tmp_path / "_internal"
    export = bundle / onnx_files.BUNDLE_SUBDIR
    export.mkdir(parents=True)
    (export / onnx_files.MANIFEST_FILE).write_text("{}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    assert onnx_files.find_export(EmbeddingConfig()) == export


def test_launcher_picks_gui_or_cli_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert launcher.is_gui("/opt/ctx/ctx-app") and launcher.is_gui(r"ctx-app.exe")
    assert launcher.is_gui("/Applications/ctx.app/Contents/MacOS/ctx-app")
    assert not launcher.is_gui("/usr/bin/ctx") and not launcher.is_gui("ctx.exe")
    assert launcher.main(["--version"], argv0="ctx") == 0
    assert capsys.readouterr().out.startswith("ctx ")
    assert launcher.main(["--version", "--json"], argv0="ctx") == 0
    about = json.loads(capsys.readouterr().out)
    assert about["frozen"] is False and about["bundle"] is None


def test_launcher_runs_the_cli(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert launcher.main(["--data-dir", str(data_dir), "init", "--no-keychain"],
                         argv0="ctx") == 0
    assert "created store" in capsys.readouterr().out


def test_runtime_hook_turns_telemetry_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ANONYMIZED_TELEMETRY", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM",
                "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(key, raising=False)
    runpy.run_path(str(PACKAGING / "rthook_ctx.py"))
    assert os.environ["ANONYMIZED_TELEMETRY"] == "False"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's own setting wins
    runpy.run_path(str(PACKAGING / "rthook_ctx.py"))
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_launcher_runs_modules_as_python_m_would(data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """In the bundle sys.executable is the launcher: `ctx -m ipc.cli.main serve` must work."""
    assert launcher.main(["-m", "ipc.cli.main", "--data-dir", str(data_dir), "init",
                          "--no-keychain"], argv0="ctx-app") == 0
    assert "created store" in capsys.readouterr().out
    assert launcher.main(["-m", "os"], argv0="ctx") == 2
    assert "cannot run module" in capsys.readouterr().err


def test_libraries_only_dropped_plugins_needed_go_with_them() -> None:
    needs = {"qgtk3.so": {"libcairo.so.2", "libglib-2.0.so.0", "libQt6Gui.so.6"},
             "qxcb.so": {"libglib-2.0.so.0", "libQt6Gui.so.6", "libxcb.so.1"},
             "_sqlite3.so": {"libsqlite3.so.0"}}
    orphans = P.orphaned_libraries(["qgtk3.so"], ["qxcb.so", "_sqlite3.so"], needs.__getitem__)
    assert orphans == {"libcairo.so.2"}
    assert P.orphaned_libraries([], ["qxcb.so"], needs.__getitem__) == set()
