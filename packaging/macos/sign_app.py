"""Sign the PyInstaller ``ctx.app`` for notarization: inside-out, one item at a time.

Apple advises against ``codesign --deep`` for signing ("--deep Considered
Harmful", Apple Developer Forums; "Creating distribution-signed code for
macOS"): it applies one set of options to everything and misses code outside
the standard places, such as the libraries PyInstaller puts in
Contents/Frameworks and Contents/Resources. So each piece of code is signed
by itself, nested code before its container: every loose Mach-O file
(extension modules, dylibs), then each .framework (innermost first), then the
second executable, then the app, which seals the rest. Every signature has a
secure timestamp and the hardened runtime; the entitlements (what PyInstaller's
bootloader needs) go on executables only. Links are never signed.

    python packaging/macos/sign_app.py --identity "Developer ID Application: ..." \\
        --entitlements packaging/macos/entitlements.plist dist/ctx.app [--dry-run]
"""

from __future__ import annotations

import argparse
import plistlib
import struct
import subprocess
import sys
from pathlib import Path

THIN = {b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe"}
FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
MAX_FAT_ARCHS = 30  # 0xcafebabe is also a Java class file; its next word is a version >= 45


def is_macho(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:4] in THIN:
        return True
    return head[:4] in FAT and len(head) == 8 and struct.unpack(">I", head[4:])[0] < MAX_FAT_ARCHS


def _framework_version(framework: Path) -> Path:
    """What to sign of a framework: its current version folder (Versions/A), else itself."""
    current = framework / "Versions" / "Current"
    return current.resolve() if current.is_symlink() and current.resolve().is_dir() else framework


def plan(app: Path, identity: str, entitlements: Path) -> list[list[str]]:
    """The codesign commands, in order: inner code first, the app last."""
    contents = app / "Contents"
    base = ["codesign", "--force", "--timestamp", "--options", "runtime", "--sign", identity]
    with_entitlements = [*base, "--entitlements", str(entitlements)]
    main = plistlib.loads((contents / "Info.plist").read_bytes())["CFBundleExecutable"]
    frameworks = sorted((p for p in contents.rglob("*.framework")
                         if p.is_dir() and not p.is_symlink()),
                        key=lambda p: (-len(p.parts), str(p)))
    executables = {p for p in (contents / "MacOS").iterdir() if is_macho(p)}
    commands: list[list[str]] = []
    loose = sorted((p for p in contents.rglob("*")
                    if is_macho(p) and p not in executables
                    and not any(f in p.parents for f in frameworks)),
                   key=lambda p: (-len(p.parts), str(p)))
    commands += [[*base, str(p)] for p in loose]
    for framework in frameworks:  # deepest first; code inside it that is not its binary too
        binary = _framework_version(framework) / framework.stem
        inner = sorted(p for p in framework.rglob("*") if is_macho(p) and p.resolve() != binary
                       and not any(f in p.parents for f in frameworks if f != framework))
        commands += [[*base, str(p)] for p in inner]
        commands.append([*base, str(_framework_version(framework))])
    commands += [[*with_entitlements, str(p)] for p in sorted(executables)
                 if p.name != main]
    commands.append([*with_entitlements, str(app)])
    return commands


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("app", type=Path)
    p.add_argument("--identity", required=True)
    p.add_argument("--entitlements", type=Path, required=True)
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = p.parse_args()
    commands = plan(args.app, args.identity, args.entitlements)
    for cmd in commands:
        if args.dry_run:
            print(" ".join(cmd))
            continue
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    if not args.dry_run:
        subprocess.run(["codesign", "--verify", "--strict", "--verbose=2", str(args.app)],
                       check=True)
    print(f"sign_app: {len(commands)} signatures, {args.app} last", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
