"""Which GPU architectures a shared object carries kernels for, read from its file: never loaded, never
read whole (an extension's file is often hundreds of MB, nearly all of it fatbin payload).

An ELF (64-bit, little-endian) names its sections in the section-header table; nvcc puts the device
code of every translation unit into `.nv_fatbin` as a run of fat-binary containers, each a 16-byte header
followed by entries (a header, then the payload: a cubin or PTX, possibly compressed). Only the headers
are read: seek to an entry's header, read 64 bytes, seek past its payload.

Format sources (checked against nvcc 13.0 output on this project's machines, tests/backends/test_extensions.py):
- CUDA toolkit `include/fatbinary_section.h`: the section names `.nv_fatbin` (data), `.nvFatBinSegment`
  (the `__fatBinC_Wrapper_t` control records, pointers only) and `__nv_relfatbin` (relocatable device
  code for a later device link, not what the runtime loads).
- github.com/n-eiling/cuda-fatbin-decompression, fatbin-decompress.h: the container header
  (magic 0xBA55ED50, version, header size, payload size) and the entry header (kind, header size,
  payload size, compressed size, version, arch, flags, decompressed size).
- github.com/jiegec/fatbinary, src/lib.rs: kind 1 = PTX, 2 = ELF cubin; the next entry starts at
  entry + header_size + payload size; flag bits (0x1 64-bit, 0x10 Linux, 0x2000 compressed).
- github.com/vosen/ZLUDA, cuda_types/src/dark_api.rs (FatbinFileHeaderFlags): 0x8000 = zstd-compressed payload.
- Observed with nvcc 13.0 (no public source names them): flag 0x100000 marks an arch-specific entry
  (`sm_90a`, `compute_90a`), 0x200000 a family-portable one (`sm_100f`); sm_100+ cubin entries have
  longer headers (96/112 bytes), which the header-size field already covers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC = 0x100000  # sm_XYa
FLAG_FAMILY = 0x200000  # sm_XYf
DATA_SECTION = ".nv_fatbin"

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, payload size
_ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind, ?, header size, payload, compressed, ?, minor, major, arch, …, flags

# Bounds a corrupt or hostile file cannot push past.
MAX_SECTIONS = 1 << 16
MAX_NAMES = 4 << 20  # the section-name table
MAX_ENTRIES = 200_000  # cuBLASLt carries ~5,400
MAX_PADDING = 512  # 8-byte steps over zeros between containers before the section is taken as garbage
MAX_DYNAMIC = 64 << 20  # .dynsym + .dynstr of the largest extensions are a few MB

SHT_DYNSYM, SHT_DYNAMIC = 11, 6
DT_NEEDED = 1
# undefined symbols of torch's C++ API: c10::, at::, torch:: (Itanium mangling)
_TORCH_SYMBOLS = (b"_ZN3c10", b"_ZNK3c10", b"_ZN2at", b"_ZNK2at", b"_ZN5torch", b"_ZNK5torch")


class NotElf(ValueError):
    """Not a 64-bit little-endian ELF file: nothing this reader can say about it."""


@dataclass
class Archs:
    """What one shared object carries: SASS (cubins) per `sm_XY[a|f]`, PTX per `compute_XY[a|f]`."""

    sass: list[str] = field(default_factory=list)
    ptx: list[str] = field(default_factory=list)
    entries: int = 0
    compressed: int = 0  # entries whose payload is compressed (still counted by their header)
    error: str | None = None  # the section was cut short or malformed: what was read is kept


@dataclass
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


def _read(fh: BinaryIO, offset: int, size: int) -> bytes:
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise NotElf(f"truncated at offset {offset}")
    return data


def sections(fh: BinaryIO) -> list[Section]:
    """The section-header table with names; NotElf for anything but a 64-bit little-endian ELF."""
    head = fh.read(_EHDR.size)
    if len(head) < _EHDR.size or head[:4] != b"\x7fELF":
        raise NotElf("not an ELF file")
    if head[4] != 2 or head[5] != 1:
        raise NotElf("not a 64-bit little-endian ELF file")
    fields = _EHDR.unpack(head)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shoff == 0 or shnum == 0:
        return []
    if shentsize != _SHDR.size or shnum > MAX_SECTIONS or shstrndx >= shnum:  # ELF64 headers are 64 bytes
        raise NotElf("malformed section headers")
    table = _read(fh, shoff, shentsize * shnum)
    raw = [_SHDR.unpack_from(table, i * shentsize) for i in range(shnum)]
    names_sec = raw[shstrndx]
    names = _read(fh, names_sec[4], min(names_sec[5], MAX_NAMES))
    out = []
    for name_off, typ, _flags, _addr, offset, size, link, *_ in raw:
        end = names.find(b"\0", name_off)
        name = names[name_off:end].decode("ascii", "replace") if 0 <= name_off < len(names) and end >= 0 else ""
        out.append(Section(name, typ, offset, size, link))
    return out


def _arch_name(prefix: str, arch: int, flags: int) -> str:
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    return f"{prefix}_{arch}{suffix}"


def _entries(fh: BinaryIO, start: int, size: int, found: Archs) -> None:
    """Walk the containers of one `.nv_fatbin` section by their headers; payloads are skipped."""
    pos, end = start, start + size
    sass: dict[str, None] = {}
    ptx: dict[str, None] = {}
    padding = 0
    while pos + _CONTAINER.size <= end:
        raw = _read(fh, pos, _CONTAINER.size)
        magic, _version, header_size, payload = _CONTAINER.unpack(raw)
        if magic != FATBIN_MAGIC or header_size < _CONTAINER.size:
            if raw[:8] == bytes(8) and padding < MAX_PADDING:  # zeros between or after containers
                pos, padding = pos + 8, padding + 1
                continue
            found.error = f"no fat-binary header at section offset {pos - start}"
            break
        padding = 0
        entry, container_end = pos + header_size, min(pos + header_size + payload, end)
        while entry + _ENTRY.size <= container_end:
            kind, _v, ehs, psize, _c, _o, _minor, _major, arch, _n1, _n2, flags = _ENTRY.unpack(
                _read(fh, entry, _ENTRY.size)
            )
            if ehs < _ENTRY.size:
                found.error = f"malformed entry at section offset {entry - start}"
                return _finish(found, sass, ptx)
            found.entries += 1
            if flags & 0xA000:  # LZ4 (0x2000) or zstd (0x8000)
                found.compressed += 1
            if kind == KIND_ELF:
                sass[_arch_name("sm", arch, flags)] = None
            elif kind == KIND_PTX:
                ptx[_arch_name("compute", arch, flags)] = None
            if found.entries >= MAX_ENTRIES:
                found.error = f"stopped after {MAX_ENTRIES} entries"
                return _finish(found, sass, ptx)
            entry += ehs + psize
        pos += header_size + payload
    _finish(found, sass, ptx)


def _sort_key(name: str) -> tuple[int, str]:
    digits = "".join(c for c in name.split("_", 1)[-1] if c.isdigit())
    return (int(digits or 0), name)


def _finish(found: Archs, sass: dict[str, None], ptx: dict[str, None]) -> None:
    found.sass = sorted(sass, key=_sort_key)
    found.ptx = sorted(ptx, key=_sort_key)


def read_archs(path: str) -> Archs | None:
    """The architectures in `path`'s `.nv_fatbin`; None when it has none (no CUDA device code).
    OSError when the file cannot be read, NotElf when it is no 64-bit little-endian ELF."""
    with open(path, "rb") as fh:
        data = [s for s in sections(fh) if s.name == DATA_SECTION and s.size > 0]
        if not data:
            return None
        found = Archs()
        for s in data:
            try:
                _entries(fh, s.offset, s.size, found)
            except NotElf as exc:
                found.error = str(exc)
        return found


@dataclass
class Links:
    """What a shared object needs from the dynamic linker, as far as torch and CUDA go."""

    needed: list[str] = field(default_factory=list)  # DT_NEEDED names of torch's and CUDA's libraries
    torch_symbols: int | None = 0  # undefined c10::/at::/torch:: symbols: built against torch's C++ API;
    # None when a symbol or string table was too large to read: "links no torch" would be a guess


_INTERESTING = ("libc10", "libtorch", "libcudart", "libcublas", "libcudnn", "libnccl", "libnvrtc")


def read_links(path: str) -> Links:
    """DT_NEEDED entries and undefined torch C++ symbols, read from `.dynamic`, `.dynsym` and their string
    tables (bounded; a section larger than MAX_DYNAMIC is skipped)."""
    out = Links()
    with open(path, "rb") as fh:
        secs = sections(fh)

        skipped = False

        def strings(index: int) -> bytes:
            nonlocal skipped
            s = secs[index] if 0 <= index < len(secs) else None
            if s is not None and s.size > MAX_DYNAMIC:
                skipped = True
                return b""
            return _read(fh, s.offset, s.size) if s is not None else b""

        for s in secs:
            if s.size > MAX_DYNAMIC:
                skipped = skipped or s.type in (SHT_DYNAMIC, SHT_DYNSYM)
                continue
            if s.type == SHT_DYNAMIC:
                names = strings(s.link)
                data = _read(fh, s.offset, s.size)
                for i in range(0, len(data) - 15, 16):
                    tag, value = struct.unpack_from("<qQ", data, i)
                    if tag == 0:
                        break
                    if tag == DT_NEEDED and value < len(names):
                        name = names[value : names.find(b"\0", value)].decode("ascii", "replace")
                        if name.startswith(_INTERESTING):
                            out.needed.append(name)
            elif s.type == SHT_DYNSYM:
                names = strings(s.link)
                data = _read(fh, s.offset, s.size)
                for i in range(0, len(data) - 23, 24):  # Elf64_Sym: name, info, other, shndx, value, size
                    name_off, _info, _other, shndx = struct.unpack_from("<IBBH", data, i)
                    if shndx == 0 and name_off and names.startswith(_TORCH_SYMBOLS, name_off):
                        out.torch_symbols = (out.torch_symbols or 0) + 1
    if skipped and not out.torch_symbols and not any(n.startswith(("libc10", "libtorch")) for n in out.needed):
        out.torch_symbols = None  # a table went unread: whether it links torch is unknown, not "no"
    return out
