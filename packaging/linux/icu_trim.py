"""Shrink the ICU data library that PySide6's Linux wheel ships (libicudata.so.NN).

Qt's Linux wheels carry ICU 73 with every locale's data: 31 MB on disk, 12 MB of a
gzipped bundle. Qt Core is the only user of ICU in the bundle, and it calls ICU for
four things only (its undefined ``*_73`` symbols): case mapping (``u_strToUpper``,
whose tables are compiled into libicuuc), collation (``ucol_*``), charset
converters (``ucnv_*``) and time zones (``ucal_*``). Qt's own CLDR tables serve
QLocale, and text layout, line breaking and IDNA do not touch ICU. So the bundle
keeps ICU's root data for those four (the root collation, zone and calendar data,
the converter alias table) and drops the per-locale translations (language, region,
currency, unit and zone names), break-iterator dictionaries, transliterators,
number spell-out rules and the legacy codepage tables. This is the "English only"
ICU build that Node.js ships as small-icu; a locale asked for falls back to root.

Effect on the app: QCollator orders by the root collation (Unicode's default order)
for every language, QTimeZone display names come as "GMT+01:00", and QStringConverter
offers UTF-8/16/32 and Latin-1 only. ctx uses none of them: files are decoded in
Python. Measured on PySide6 6.11 (ICU 73): 32.0 MB -> 2.5 MB, gzip -6 12.4 -> 0.9 MB.

    python packaging/linux/icu_trim.py BUNDLE_DIR     # trims in place, then checks

Needs ``objcopy`` (binutils), ``icupkg`` (Debian: icu-devtools; it reads ICU 73's
data format) and a C compiler to wrap the data back into a shared library with the
same soname and the one exported symbol (``icudtNN_dat``). ``check`` loads the
trimmed library with the bundle's libicuuc/libicui18n and calls each ICU function
Qt uses; the build fails if one of them reports an error.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Items kept (names as icupkg lists them). Everything else is dropped.
KEEP_ROOT_RES = frozenset({
    "root", "res_index", "pool", "supplementalData", "likelySubtags", "metaZones",
    "timezoneTypes", "windowsZones", "zoneinfo64", "keyTypeData", "numberingSystems",
    "icuver", "icustd", "plurals", "dayPeriods", "genderList", "grammaticalFeatures",
    "units", "currencyNumericCodes", "langInfo",
})
KEEP_FILES = frozenset({
    "cnvalias.icu", "nfkc.nrm", "nfkc_cf.nrm", "ulayout.icu",
    "coll/root.res", "coll/res_index.res", "coll/ucadata.icu",
    "zone/root.res", "zone/res_index.res", "zone/pool.res", "zone/tzdbNames.res",
})

TOOLS = ("objcopy", "icupkg", "cc")


def keep(item: str) -> bool:
    """Whether the ICU data item ``item`` (``dir/name.ext`` or ``name.ext``) stays."""
    if item in KEEP_FILES:
        return True
    return "/" not in item and item.endswith(".res") and item[:-4] in KEEP_ROOT_RES


def find_library(bundle: Path) -> Path | None:
    """The bundle's libicudata.so.NN (None where Qt was built without a private ICU)."""
    found = sorted(p for p in bundle.rglob("libicudata.so.*") if p.is_file())
    return found[0] if found else None


def version_of(lib: Path) -> str:
    m = re.search(r"\.so\.(\d+)", lib.name)
    if not m:
        raise SystemExit(f"icu_trim: cannot read the ICU version from {lib.name}")
    return m.group(1)


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def _run(*args: str) -> str:
    proc = subprocess.run(args, check=False, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"icu_trim: {args[0]} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-500:]}")
    return proc.stdout


def trim(lib: Path, work: Path) -> Path:
    """A trimmed copy of ``lib`` built under ``work`` (``lib`` itself is not changed)."""
    ver = version_of(lib)
    data = work / f"icudt{ver}l.dat"
    _run("objcopy", "-O", "binary", "--only-section=.rodata", str(lib), str(data))
    raw = data.read_bytes()[:4]
    if len(raw) < 4 or raw[2:4] != b"\xda\x27":  # ICU data header: size, then magic 0xda27
        raise SystemExit(f"icu_trim: {lib.name}'s .rodata is not ICU common data")
    items = _run("icupkg", "-l", str(data)).split()
    drop = [i for i in items if not keep(i)]
    (work / "drop.txt").write_text("\n".join(drop) + "\n")
    small = work / "out" / data.name
    small.parent.mkdir()
    _run("icupkg", "-r", str(work / "drop.txt"), str(data), str(small))
    asm = work / "icudata.S"
    asm.write_text(
        f'\t.section .rodata\n\t.globl icudt{ver}_dat\n\t.type icudt{ver}_dat, @object\n'
        f'\t.balign 16\nicudt{ver}_dat:\n\t.incbin "{small}"\n'
        f'\t.size icudt{ver}_dat, . - icudt{ver}_dat\n'
        '\t.section .note.GNU-stack,"",@progbits\n')
    out = work / lib.name
    _run("cc", "-shared", "-nostdlib", f"-Wl,-soname,{lib.name}", "-o", str(out), str(asm))
    return out


def check(lib_dir: Path, ver: str) -> dict[str, int]:
    """Call each ICU function family Qt Core uses, with the libraries in ``lib_dir``;
    returns the ICU status per call (0 or below: success or a fallback warning)."""
    mode = ctypes.RTLD_GLOBAL
    ctypes.CDLL(str(lib_dir / f"libicudata.so.{ver}"), mode=mode)
    uc = ctypes.CDLL(str(lib_dir / f"libicuuc.so.{ver}"), mode=mode)
    i18n = ctypes.CDLL(str(lib_dir / f"libicui18n.so.{ver}"), mode=mode)

    def fn(lib: ctypes.CDLL, name: str) -> Any:  # a ctypes function pointer
        return getattr(lib, f"{name}_{ver}")

    status: dict[str, int] = {}

    def err() -> ctypes.c_int:
        return ctypes.c_int(0)

    u16 = "Europe/Paris".encode("utf-16-le")
    zone = ctypes.create_string_buffer(u16 + b"\0\0")
    buf = ctypes.create_string_buffer(256)

    e = err()
    upper = fn(uc, "u_strToUpper")(buf, 64, ctypes.create_string_buffer(
        "stra\u00dfe".encode("utf-16-le") + b"\0\0"), -1, b"en_US", ctypes.byref(e))
    status["u_strToUpper"] = e.value
    if buf.raw[: upper * 2].decode("utf-16-le") != "STRASSE":
        status["u_strToUpper"] = 99
    for name in ("UTF-8", "ISO-8859-1", "UTF-16LE"):
        e = err()
        fn(uc, "ucnv_open").restype = ctypes.c_void_p
        conv = fn(uc, "ucnv_open")(name.encode(), ctypes.byref(e))
        status[f"ucnv_open {name}"] = e.value if conv else 98
        if conv:
            fn(uc, "ucnv_close")(ctypes.c_void_p(conv))
    for loc in (b"", b"en_US", b"de_DE"):
        e = err()
        fn(i18n, "ucol_open").restype = ctypes.c_void_p
        coll = fn(i18n, "ucol_open")(loc, ctypes.byref(e))
        status[f"ucol_open {loc.decode() or 'root'}"] = e.value if coll else 98
        if coll:
            a = ctypes.create_string_buffer("a".encode("utf-16-le") + b"\0\0")
            b = ctypes.create_string_buffer("B".encode("utf-16-le") + b"\0\0")
            order = fn(i18n, "ucol_strcoll")(ctypes.c_void_p(coll), a, -1, b, -1)
            status[f"ucol_strcoll {loc.decode() or 'root'}"] = 0 if order == -1 else 97
            fn(i18n, "ucol_close")(ctypes.c_void_p(coll))
    e = err()
    fn(i18n, "ucal_open").restype = ctypes.c_void_p
    cal = fn(i18n, "ucal_open")(zone, -1, b"en_US", 0, ctypes.byref(e))
    status["ucal_open"] = e.value if cal else 98
    if cal:
        e = err()
        n = fn(i18n, "ucal_getTimeZoneDisplayName")(ctypes.c_void_p(cal), 0, b"en_US", buf,
                                                    64, ctypes.byref(e))
        status["ucal_getTimeZoneDisplayName"] = e.value if n > 0 else 96
        fn(i18n, "ucal_close")(ctypes.c_void_p(cal))
    e = err()
    system = ctypes.c_byte(0)
    fn(i18n, "ucal_getCanonicalTimeZoneID")(zone, -1, buf, 64, ctypes.byref(system),
                                            ctypes.byref(e))
    status["ucal_getCanonicalTimeZoneID"] = e.value if system.value else 95
    return status


def check_in_child(lib_dir: Path, ver: str) -> dict[str, int]:
    """``check`` in a fresh interpreter, so that no other ICU is loaded already."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import icu_trim; from pathlib import Path; "
            f"print(json.dumps(icu_trim.check(Path({str(lib_dir)!r}), {ver!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    result: dict[str, int] = json.loads(out)
    return result


def trim_bundle(bundle: Path) -> dict[str, object]:
    """Trim the bundle's ICU data in place, after checking the trimmed copy works."""
    lib = find_library(bundle)
    if lib is None:
        return {"icu": "none in the bundle"}
    lacking = missing_tools()
    if lacking:
        raise SystemExit(f"icu_trim: needs {', '.join(lacking)} (Debian: apt-get install "
                         "binutils icu-devtools gcc)")
    ver = version_of(lib)
    before = lib.stat().st_size
    with tempfile.TemporaryDirectory(prefix="ctx-icu-") as tmp:
        work = Path(tmp)
        small = trim(lib, work)
        trial = work / "trial"
        trial.mkdir()
        for name in (f"libicuuc.so.{ver}", f"libicui18n.so.{ver}"):
            shutil.copy2(lib.parent / name, trial / name)
        shutil.copy2(small, trial / lib.name)
        status = check_in_child(trial, ver)
        bad = {k: v for k, v in status.items() if v > 0}
        if bad:
            raise SystemExit(f"icu_trim: the trimmed ICU data fails {bad}; bundle unchanged")
        shutil.copy2(small, lib)
    return {"icu": lib.name, "bytes_before": before, "bytes_after": lib.stat().st_size,
            "checks": status}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    args = ap.parse_args(argv)
    print(json.dumps(trim_bundle(args.bundle)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
