"""What a Linux shared object or executable asks of the dynamic loader, read from its bytes.

The release steps need three facts of every ELF file in the bundle: the
libraries it loads (``DT_NEEDED``), its own name (``DT_SONAME``) and the
symbol versions it requires from each library (``.gnu.version_r``: the
``GLIBC_2.34`` that decides the oldest glibc the bundle runs on). They are
read here through the program headers, as ``ld.so`` itself reads them, so
a stripped or patchelf-edited library is read correctly too; no binutils
needed. ``readelf -d`` and ``readelf -V`` print the same facts (the tests
check that, on the system's own libraries).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME = 0, 1, 5, 10, 14
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF


class NotElf(ValueError):
    """The file is not an ELF object this reader understands."""


@dataclass(frozen=True)
class ElfInfo:
    """The dynamic-linking facts of one ELF file."""

    path: Path
    soname: str | None
    needed: tuple[str, ...]
    # library file name -> the symbol versions required from it (GLIBC_2.34, GLIBCXX_3.4.29)
    versions: dict[str, frozenset[str]] = field(default_factory=dict)

    def required_versions(self) -> set[str]:
        return {v for vs in self.versions.values() for v in vs}


def is_elf(path: Path) -> bool:
    """True for a regular file (not a link) that starts with the ELF magic."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def _cstr(data: bytes, offset: int) -> str:
    end = data.find(b"\0", offset)
    return data[offset:end if end >= 0 else len(data)].decode("utf-8", "replace")


def read(path: Path) -> ElfInfo:
    """The dynamic section's facts of ``path``; an ELF without one (static) gives none."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC or len(data) < 64:
        raise NotElf(f"{path}: not an ELF file")
    bits = {1: 32, 2: 64}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if bits is None or order is None:
        raise NotElf(f"{path}: unknown ELF class or byte order")
    if bits == 64:
        phoff, = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
        ph_fmt, dyn_fmt = order + "IIQQQQQQ", order + "qQ"
    else:
        phoff, = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
        ph_fmt, dyn_fmt = order + "IIIIIIII", order + "iI"
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None  # (offset, size)
    for i in range(phnum):
        fields = struct.unpack_from(ph_fmt, data, phoff + i * phentsize)
        if bits == 64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return ElfInfo(Path(path), None, ())

    def offset_of(vaddr: int) -> int:
        for start, off, size in loads:
            if start <= vaddr < start + size:
                return off + (vaddr - start)
        raise NotElf(f"{path}: address {vaddr:#x} lies in no loaded segment")

    entries: list[tuple[int, int]] = []
    step = struct.calcsize(dyn_fmt)
    for pos in range(dynamic[0], dynamic[0] + dynamic[1], step):
        tag, value = struct.unpack_from(dyn_fmt, data, pos)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    tags = dict(entries)
    if DT_STRTAB not in tags:
        raise NotElf(f"{path}: dynamic section without a string table")
    strtab = offset_of(tags[DT_STRTAB])
    needed = tuple(_cstr(data, strtab + v) for t, v in entries if t == DT_NEEDED)
    soname = _cstr(data, strtab + tags[DT_SONAME]) if DT_SONAME in tags else None
    versions: dict[str, frozenset[str]] = {}
    if DT_VERNEED in tags:
        pos = offset_of(tags[DT_VERNEED])
        for _ in range(tags.get(DT_VERNEEDNUM, 0)):
            _ver, count, file_off, aux, nxt = struct.unpack_from(order + "HHIII", data, pos)
            names = set()
            apos = pos + aux
            for _ in range(count):
                _hash, _flags, _other, name_off, anext = struct.unpack_from(order + "IHHII",
                                                                            data, apos)
                names.add(_cstr(data, strtab + name_off))
                if not anext:
                    break
                apos += anext
            lib = _cstr(data, strtab + file_off)
            versions[lib] = frozenset(names | versions.get(lib, frozenset()))
            if not nxt:
                break
            pos += nxt
    return ElfInfo(Path(path), soname, needed, versions)


def scan(root: Path) -> list[ElfInfo]:
    """Every ELF file under ``root`` (links are not followed), sorted by path."""
    return [read(p) for p in sorted(Path(root).rglob("*")) if is_elf(p)]
