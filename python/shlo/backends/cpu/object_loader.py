"""Loading the generated object code into this process without a linker.

The worker's object code is relocatable ELF for x86-64, generated with the
large code model: every reference to code or data is a 64-bit absolute
address (R_X86_64_64), and only the unwind tables use PC-relative ones
(R_X86_64_PC64). Placing its sections in memory and writing those addresses
is all a link does for it, so the host does that here, in under 0.5 ms,
where linking into a shared library with ``ld`` and loading it took 3.5-3.9
of a small program's 24 ms of compilation (a process to spawn, files to
write and map).

Anything this loader does not know (another machine, a relocation type,
common or thread-local symbols, a symbol nothing defines) makes ``load``
return None, and the caller links with ``ld`` as before.
"""

from __future__ import annotations

import ctypes
import mmap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# What starts the archive of a module's shards (``runtime.object_archive``).
ARCHIVE_MAGIC = b"!<arch>\n"

_SECTION = np.dtype(
    [
        ("name", "<u4"),
        ("type", "<u4"),
        ("flags", "<u8"),
        ("addr", "<u8"),
        ("offset", "<u8"),
        ("size", "<u8"),
        ("link", "<u4"),
        ("info", "<u4"),
        ("addralign", "<u8"),
        ("entsize", "<u8"),
    ]
)
_SYMBOL = np.dtype(
    [
        ("name", "<u4"),
        ("info", "u1"),
        ("other", "u1"),
        ("shndx", "<u2"),
        ("value", "<u8"),
        ("size", "<u8"),
    ]
)
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])

# Section types and flags, symbol bindings and special section indices (ELF).
_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 4, 8, 9
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR, _SHF_TLS = 0x1, 0x2, 0x4, 0x400
_STB_LOCAL, _STB_WEAK = 0, 2
_STT_TLS = 6
_SHN_UNDEF, _SHN_ABS, _SHN_COMMON = 0, 0xFFF1, 0xFFF2
_EM_X86_64, _ET_REL = 62, 1
_R_X86_64_64, _R_X86_64_PC64 = 1, 24

_PAGE = mmap.PAGESIZE


class _Unsupported(Exception):
    """Object code this loader does not handle: the caller links it with ld."""


@dataclass
class _Object:
    """One relocatable object: its bytes, sections, symbols and names."""

    data: bytes
    sections: np.ndarray
    symbols: np.ndarray
    names: bytes  # the symbol table's strings

    def symbol_name(self, index: int) -> str:
        offset = int(self.symbols["name"][index])
        return self.names[offset : self.names.index(b"\0", offset)].decode()


def _members(code: bytes) -> list[bytes]:
    """The objects of an ar archive (as ``runtime.object_archive`` writes them), or [code]."""
    if not code.startswith(ARCHIVE_MAGIC):
        return [code]
    members, at = [], len(ARCHIVE_MAGIC)
    while at < len(code):
        header = code[at : at + 60]
        if len(header) < 60 or header[58:60] != b"`\n":
            raise _Unsupported("malformed archive")
        size = int(header[48:58])
        members.append(code[at + 60 : at + 60 + size])
        at += 60 + size + size % 2
    return members


def _parse(data: bytes) -> _Object:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise _Unsupported("not a 64-bit little-endian ELF object")
    kind, machine = np.frombuffer(data, "<u2", 2, 16)
    if kind != _ET_REL or machine != _EM_X86_64:
        raise _Unsupported("not a relocatable x86-64 object")
    (section_offset,) = np.frombuffer(data, "<u8", 1, 40)
    (count,) = np.frombuffer(data, "<u2", 1, 60)
    sections = np.frombuffer(data, _SECTION, int(count), int(section_offset))
    symtabs = np.flatnonzero(sections["type"] == _SHT_SYMTAB)
    if len(symtabs) != 1:
        raise _Unsupported("not one symbol table")
    symtab = sections[symtabs[0]]
    count = int(symtab["size"]) // _SYMBOL.itemsize
    symbols = np.frombuffer(data, _SYMBOL, count, int(symtab["offset"]))
    strtab = sections[int(symtab["link"])]
    names = data[int(strtab["offset"]) : int(strtab["offset"] + strtab["size"])]
    return _Object(data, sections, symbols, names)


_libc = ctypes.CDLL(None)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
_mprotect = _libc.mprotect
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_munmap = _libc.munmap
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class LoadedImage:
    """Object code placed in memory of this process; unmapped by ``release``."""

    def __init__(self, address: int, size: int, symbols: dict[str, int]) -> None:
        self.address = address
        self.size = size
        self.symbols = symbols  # the global symbols it defines

    def release(self) -> None:
        if self.size:
            _munmap(self.address, self.size)
            self.size = 0


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def load(code: bytes, resolve: Callable[[str], int | None]) -> LoadedImage | None:
    """``code`` (an object, or an archive of them) in memory, its references to
    symbols it does not define bound to ``resolve(name)``; None when this loader
    cannot load it (the module docstring says what it handles)."""
    try:
        return _load([_parse(member) for member in _members(code)], resolve)
    except (_Unsupported, ValueError, IndexError, OverflowError):
        return None


def _layout(objects: list[_Object]) -> tuple[list[dict[int, int]], list[tuple[int, int, int]], int]:
    """Each object's allocated sections' offsets in one mapping, grouped in page-aligned
    segments by protection: (the offsets by section, per object; the segments as
    (offset, size, protection); the mapping's size)."""
    kinds = (
        (_SHF_EXECINSTR, mmap.PROT_READ | mmap.PROT_EXEC),
        (0, mmap.PROT_READ),
        (_SHF_WRITE, mmap.PROT_READ | mmap.PROT_WRITE),
    )
    offsets: list[dict[int, int]] = [{} for _ in objects]
    segments = []
    size = 0
    for kind, protection in kinds:
        start = size
        for index, obj in enumerate(objects):
            flags = obj.sections["flags"]
            for section in np.flatnonzero(flags & _SHF_ALLOC):
                section_flags = int(flags[section])
                if section_flags & _SHF_TLS:
                    raise _Unsupported("thread-local data")
                if section_flags & (_SHF_EXECINSTR | _SHF_WRITE) != kind:
                    continue
                alignment = max(int(obj.sections["addralign"][section]), 1)
                size = _round_up(size, alignment)
                offsets[index][int(section)] = size
                size += int(obj.sections["size"][section])
        size = _round_up(size, _PAGE)
        if size > start:
            segments.append((start, size - start, protection))
    return offsets, segments, size


def _load(objects: list[_Object], resolve: Callable[[str], int | None]) -> LoadedImage | None:
    offsets, segments, size = _layout(objects)
    if size == 0:
        raise _Unsupported("no code")
    writable, private = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    address = _mmap(None, size, writable, private, -1, 0)
    if address is None or address == _MAP_FAILED:
        return None
    image = LoadedImage(address, size, {})
    try:
        memory = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))
        for obj, placed in zip(objects, offsets):
            for section, offset in placed.items():
                header = obj.sections[section]
                if header["type"] != _SHT_NOBITS:  # the mapping starts zeroed
                    start = int(header["offset"])
                    memory[offset : offset + int(header["size"])] = np.frombuffer(
                        obj.data, np.uint8, int(header["size"]), start
                    )
        addresses = [_symbol_addresses(o, placed, address) for o, placed in zip(objects, offsets)]
        image.symbols = _global_definitions(objects, addresses)
        for obj, placed, symbol_addresses in zip(objects, offsets, addresses):
            _bind_undefined(obj, symbol_addresses, image.symbols, resolve)
            _relocate(obj, placed, symbol_addresses, memory, address)
        for start, length, protection in segments:
            if _mprotect(address + start, length, protection) != 0:
                raise _Unsupported("the code's pages cannot be made executable")
    except BaseException:
        image.release()
        raise
    return image


def _symbol_addresses(obj: _Object, placed: dict[int, int], base: int) -> np.ndarray:
    """Each symbol's address (0 for an undefined one, bound later)."""
    symbols = obj.symbols
    if np.any(symbols["info"] & 0xF == _STT_TLS) or np.any(symbols["shndx"] == _SHN_COMMON):
        raise _Unsupported("thread-local or common symbols")
    section_base = np.zeros(len(obj.sections), np.uint64)
    for section, offset in placed.items():
        section_base[section] = base + offset
    shndx = symbols["shndx"].astype(np.int64)
    if np.any((shndx >= len(obj.sections)) & (shndx != _SHN_ABS)):
        raise _Unsupported("a symbol in a reserved section index")
    in_section = (shndx != _SHN_UNDEF) & (shndx < len(obj.sections))
    base_of = np.where(in_section, section_base[np.where(in_section, shndx, 0)], np.uint64(0))
    addresses = base_of + np.where(shndx != _SHN_UNDEF, symbols["value"], np.uint64(0))
    # A symbol in a section that is not loaded (say, debug information) has no address.
    return np.where(in_section & (base_of == 0), np.uint64(0), addresses)


def _global_definitions(objects: list[_Object], addresses: list[np.ndarray]) -> dict[str, int]:
    definitions: dict[str, int] = {}
    for obj, symbol_addresses in zip(objects, addresses):
        binding = obj.symbols["info"] >> 4
        defined = (binding != _STB_LOCAL) & (obj.symbols["shndx"] != _SHN_UNDEF)
        for index in np.flatnonzero(defined):
            name = obj.symbol_name(int(index))
            if name in definitions:
                raise _Unsupported(f"{name} is defined twice")
            definitions[name] = int(symbol_addresses[index])
    return definitions


def _bind_undefined(
    obj: _Object,
    addresses: np.ndarray,
    definitions: dict[str, int],
    resolve: Callable[[str], int | None],
) -> None:
    undefined = np.flatnonzero(obj.symbols["shndx"] == _SHN_UNDEF)
    for index in undefined[undefined != 0]:  # symbol 0 is the null symbol
        name = obj.symbol_name(int(index))
        found = definitions.get(name)
        if found is None:
            found = resolve(name)
        if not found and obj.symbols["info"][index] >> 4 != _STB_WEAK:
            raise _Unsupported(f"nothing defines {name}")
        addresses[index] = found or 0  # an undefined weak symbol is 0


def _relocate(
    obj: _Object, placed: dict[int, int], addresses: np.ndarray, memory: np.ndarray, base: int
) -> None:
    types = obj.sections["type"]
    if np.any(types == _SHT_REL):
        raise _Unsupported("REL relocations")
    for section in np.flatnonzero(types == _SHT_RELA):
        header = obj.sections[section]
        target = int(header["info"])
        if target not in placed:
            continue  # relocations of a section that is not loaded
        relocations = np.frombuffer(
            obj.data, _RELA, int(header["size"]) // _RELA.itemsize, int(header["offset"])
        )
        kind = relocations["info"] & 0xFFFFFFFF
        if not np.all((kind == _R_X86_64_64) | (kind == _R_X86_64_PC64)):
            raise _Unsupported("a relocation other than R_X86_64_64 and R_X86_64_PC64")
        offsets, size = relocations["offset"], obj.sections["size"][target]
        if np.any((offsets > size) | (size - np.minimum(offsets, size) < 8)):
            raise _Unsupported("a relocation outside its section")
        where = placed[target] + offsets.astype(np.int64)
        symbol = (relocations["info"] >> 32).astype(np.int64)
        value = addresses[symbol] + relocations["addend"].view(np.uint64)  # modulo 2**64
        pc_relative = kind == _R_X86_64_PC64
        value[pc_relative] -= np.uint64(base) + where[pc_relative].astype(np.uint64)
        memory[where[:, None] + np.arange(8)] = value.astype("<u8").view(np.uint8).reshape(-1, 8)
