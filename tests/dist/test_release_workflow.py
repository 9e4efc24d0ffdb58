"""The release workflow, read as GitHub reads it (YAML): what it must do before it publishes.

Each system installs what it ships and runs the smoke test on the installed files (the
.deb with plain dpkg -i in a clean Debian container, the tarball through install-user.sh,
the .dmg's signed ctx.app, the Inno installer), then uninstalls and checks what is left;
the tag must match pyproject's version; SHA256SUMS; actions pinned to commits; no
credentials kept by checkout; signing secrets only in the steps that sign; Inno Setup
installed by the workflow.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.dist.test_platform_paths import REPO

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def wf() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(wf: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(wf["jobs"][job]["steps"])


def _runs(wf: dict[str, Any], job: str) -> str:
    return "\n".join(str(s.get("run", "")) for s in _steps(wf, job))


def _index(steps: list[dict[str, Any]], pattern: str) -> int:
    for i, step in enumerate(steps):
        if re.search(pattern, str(step.get("run", "")) + str(step.get("name", ""))):
            return i
    raise AssertionError(f"no step matches {pattern!r}")


def test_every_action_is_pinned_to_a_commit_and_checkout_keeps_no_credentials(
        wf: dict[str, Any]) -> None:
    for name, job in wf["jobs"].items():
        for step in job["steps"]:
            uses = step.get("uses")
            if not uses:
                continue
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), (name, uses)
            if uses.startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, name


def test_secrets_reach_only_the_steps_that_sign(wf: dict[str, Any]) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "secrets." not in yaml.safe_dump(wf.get("env", {}))
    for name, job in wf["jobs"].items():
        assert "secrets." not in yaml.safe_dump(job.get("env", {})), name
        for step in job["steps"]:
            if "secrets." in yaml.safe_dump(step):
                assert re.search(r"(?i)sign|notari|keychain", step["name"]), step["name"]
                assert "secrets." not in str(step.get("run", ""))  # through env: only
    assert text.count("secrets.") >= 9


def test_the_tag_must_match_the_project_version(wf: dict[str, Any]) -> None:
    runs = _runs(wf, "version")
    assert 'tomllib.load(open("pyproject.toml"' in runs
    assert '"$GITHUB_REF_NAME" != "v$v"' in runs and "exit 1" in runs
    for job in ("linux", "macos", "windows"):
        assert "version" in wf["jobs"][job]["needs"]


def test_the_deb_is_installed_with_plain_dpkg_in_a_clean_debian(wf: dict[str, Any]) -> None:
    job = wf["jobs"]["linux-install"]
    systems = job["strategy"]["matrix"]["system"]
    assert job["container"] == "${{ matrix.system }}"
    assert all(str(name).split(":")[0] in ("debian", "ubuntu") for name in systems)
    # the oldest system the docs name for the .deb is one the .deb is installed on
    docs = "\n".join(p.read_text(encoding="utf-8") for p in
                     [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    named = {f"{d.lower()}:{v}" for d, v in re.findall(r"(Debian|Ubuntu) (\d+(?:\.\d+)?)\+",
                                                      docs)}
    assert named, "the docs name no Debian/Ubuntu floor"
    oldest_ubuntu = min((n for n in named if n.startswith("ubuntu:")),
                        key=lambda n: float(n.split(":")[1]), default=None)
    assert oldest_ubuntu is None or oldest_ubuntu in systems, (oldest_ubuntu, systems)
    assert any(str(s).startswith("debian:") for s in systems)
    assert "check_deb_install.sh" in _runs(wf, "linux-install")
    script = "\n".join(line for line in (REPO / "packaging" / "linux" / "check_deb_install.sh")
                       .read_text().splitlines() if not line.lstrip().startswith("#"))
    assert re.search(r'\ndpkg -i "\$deb"\n', script)
    assert "apt-get -f" not in script and "apt -f" not in script and "--fix" not in script
    first_dpkg = script.index('dpkg -i "$deb"')
    assert script.index("ldd") > first_dpkg
    assert script.index("python3-pytest") > script.index("ldd")  # tools after the check
    assert "test_bundle_smoke.py" in script and "dpkg --purge ctx" in script
    assert "comm -13" in script  # what is new after the purge


def test_the_linux_tarball_is_tested_unpacked_through_install_user(wf: dict[str, Any]) -> None:
    runs = _runs(wf, "linux")
    assert "My Apps" in runs and "CTX_DIST_BUNDLE=" in runs
    assert '"0/0"' in runs  # owned by root in the archive
    build = (REPO / "scripts" / "build-dist.sh").read_text()
    assert "tar --owner=0 --group=0 --numeric-owner" in build
    assert "floors.py linux" in build


def test_macos_signs_inside_out_then_installs_and_tests_the_signed_app(
        wf: dict[str, Any]) -> None:
    steps = _steps(wf, "macos")
    runs = _runs(wf, "macos")
    assert "codesign --deep" not in runs and "--deep" not in runs
    assert "set-keychain-settings -lut" in runs  # no auto-lock mid-build
    sign = _index(steps, r"sign_app\.py")
    dmg = _index(steps, r"make_dmg\.sh")
    install = _index(steps, r"hdiutil attach")
    smoke = _index(steps, r"CTX_DIST_BUNDLE=.*ctx\.app")
    assert sign < dmg < install < smoke
    assert steps[smoke]["env"]["CTX_DIST_NATIVE_SESSION"] == "1"  # the tray too
    assert _index(steps, r"check_uninstall\.sh") > smoke


def test_uninstall_checks_set_up_what_they_check(wf: dict[str, Any]) -> None:
    """macOS and Linux uninstall an app that has an engine running, a login item, and
    hooks (packaging/check_uninstall.sh), so that removing each is really tested."""
    for job in ("linux", "macos"):
        assert "packaging/check_uninstall.sh" in _runs(wf, job), job
    script = (REPO / "packaging" / "check_uninstall.sh").read_text()
    setup = script.index('"$ctx" uninstall-integrations')
    for made in ("init --no-keychain", "hook install", "item.enable()", "serve"):
        assert -1 < script.index(made) < setup, made
    for checked in ("stopped the ctx engine", "removed the login item", "ctx-backup"):
        assert script.index(checked) > setup, checked


def test_windows_installs_inno_then_installs_tests_and_uninstalls(wf: dict[str, Any]) -> None:
    steps = _steps(wf, "windows")
    inno = _index(steps, r"choco install innosetup")
    iscc = _index(steps, r"& \$env:ISCC")
    assert inno < iscc and inno != iscc
    install = _index(steps, r"/VERYSILENT.*/CURRENTUSER")
    smoke = _index(steps, r"CTX_DIST_BUNDLE")
    uninstall = _index(steps, r"unins000\.exe")
    assert iscc < install < smoke < uninstall
    assert steps[smoke]["env"]["CTX_DIST_NATIVE_SESSION"] == "1"
    check = str(steps[uninstall]["run"])
    for leftover in ("Test-Path $app", "on PATH", "Run value", "hook session-start",
                     "mcp_servers.ctx", "Get-Process"):
        assert leftover in check, leftover
    iss = (REPO / "packaging" / "windows" / "ctx.iss").read_text()
    assert "uninstall-integrations" in iss and "RemovePathEntry" in iss
    assert "RegDeleteValue(HKCU, 'Software\\Microsoft\\Windows\\CurrentVersion\\Run'" in iss


def test_the_release_publishes_checksums_after_every_install_check(wf: dict[str, Any]) -> None:
    job = wf["jobs"]["release"]
    assert set(job["needs"]) >= {"linux", "linux-install", "macos", "windows"}
    runs = _runs(wf, "release")
    assert "sha256sum" in runs and "> SHA256SUMS" in runs
    files = next(s for s in job["steps"] if "action-gh-release" in s.get("uses", ""))
    assert "artifacts/SHA256SUMS" in files["with"]["files"]
    assert job["permissions"] == {"contents": "write"} and wf["permissions"] == {
        "contents": "read"}
