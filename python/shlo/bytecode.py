"""Walking MLIR bytecode's container: its sections, string table, dialects and attribute table.

The layout is MLIR's (https://mlir.llvm.org/docs/BytecodeFormat/). ``shlo.shardy``
rewrites attribute entries with it, and ``attribute_type_table_overrun``
finds input on which MLIR's own reader would write out of bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTECODE_MAGIC = b"ML\xefR"
ALIGNMENT_BYTE = 0xCB
DIALECT_VERSIONING = 1  # the first bytecode version with dialect version entries
STRING_SECTION, DIALECT_SECTION, ATTR_TYPE_SECTION, ATTR_TYPE_OFFSET_SECTION = 0, 1, 2, 3
RESOURCE_SECTION = 5
NUM_SECTIONS = 9


class Malformed(Exception):
    """The bytes are not bytecode this module can walk; MLIR's reader reports why."""


class Reader:
    """A bounds-checked cursor over ``data[pos:end]``."""

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def at_end(self) -> bool:
        return self.pos >= self.end

    def take(self, size: int) -> bytes:
        if size < 0 or size > self.end - self.pos:
            raise Malformed(f"{size} bytes requested, {self.end - self.pos} left")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def varint(self) -> int:
        """MLIR's PrefixVarInt: the trailing zeros of the first byte count the extra bytes."""
        first = self.byte()
        if first & 1:
            return first >> 1
        if first == 0:
            return int.from_bytes(self.take(8), "little")
        extra = (first & -first).bit_length() - 1
        value = int.from_bytes(bytes([first]) + self.take(extra), "little")
        return value >> (extra + 1)

    def signed_varint(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def varint_with_flag(self) -> tuple[int, bool]:
        value = self.varint()
        return value >> 1, bool(value & 1)

    def cstring(self) -> bytes:
        nul = self.data.find(b"\x00", self.pos, self.end)
        if nul < 0:
            raise Malformed("unterminated string")
        return self.take(nul - self.pos + 1)[:-1]


def encode_varint(value: int) -> bytes:
    """The PrefixVarInt encoding of a non-negative integer below 2**64."""
    for extra in range(8):
        if value < 1 << (7 * (extra + 1)):
            return ((value << 1 | 1) << extra).to_bytes(extra + 1, "little")
    return b"\x00" + value.to_bytes(8, "little")


@dataclass
class Section:
    id: int
    alignment: int  # 0 when the section is not aligned
    data: bytes


def read_section(reader: Reader) -> Section:
    id_and_aligned = reader.byte()
    length = reader.varint()
    section_id, alignment = id_and_aligned & 0x7F, 0
    if section_id >= NUM_SECTIONS:
        raise Malformed(f"invalid section id {section_id}")
    if id_and_aligned & 0x80:
        alignment = reader.varint()
        if alignment <= 0 or alignment & (alignment - 1) or alignment > 1 << 16:
            raise Malformed(f"invalid alignment {alignment}")
        while reader.pos % alignment:
            if reader.byte() != ALIGNMENT_BYTE:
                raise Malformed("invalid alignment padding")
    return Section(section_id, alignment, reader.take(length))


def write_section(out: bytearray, section: Section) -> None:
    """Appends the section; padding aligns its data relative to the start of ``out``."""
    out.append(section.id | (0x80 if section.alignment else 0))
    out += encode_varint(len(section.data))
    if section.alignment:
        out += encode_varint(section.alignment)
        out += bytes([ALIGNMENT_BYTE]) * (-len(out) % section.alignment)
    out += section.data


def read_strings(data: bytes) -> list[bytes]:
    """The string table: a count, the sizes (last string first), then the data."""
    reader = Reader(data)
    count = reader.varint()
    if count > len(data):
        raise Malformed("too many strings")
    strings: list[bytes] = []
    end = len(data)
    for _ in range(count):
        size = reader.varint()
        if size < 1 or size > end:
            raise Malformed("bad string size")
        strings.append(data[end - size : end - 1])
        end -= size
    if reader.pos != end:
        raise Malformed("trailing data in the string section")
    strings.reverse()
    return strings


@dataclass
class DialectEntry:
    name: bytes
    name_index: int
    encoded: bytes  # the entry as written, its version section included


def read_dialects(
    data: bytes, strings: list[bytes], version: int
) -> tuple[list[DialectEntry], bytes]:
    """The dialect entries and the rest of the dialect section (the op names)."""
    reader = Reader(data)
    count = reader.varint()
    if count > len(data):
        raise Malformed("too many dialects")
    dialects = []
    for _ in range(count):
        start = reader.pos
        if version < DIALECT_VERSIONING:
            index, has_version = reader.varint(), False
        else:
            index, has_version = reader.varint_with_flag()
        if index >= len(strings):
            raise Malformed("bad dialect name")
        if has_version:
            read_section(reader)
        dialects.append(DialectEntry(strings[index], index, data[start : reader.pos]))
    return dialects, data[reader.pos :]


@dataclass
class Entry:
    dialect: int
    custom: bool
    data: bytes


@dataclass
class AttrTypeTable:
    num_attributes: int
    entries: list[Entry]  # the attributes, then the types
    trailing: bytes  # whatever follows the last entry in the AttrType section

    @classmethod
    def read(cls, offsets: bytes, data: bytes, num_dialects: int) -> AttrTypeTable:
        reader = Reader(offsets)
        num_attributes, num_types = reader.varint(), reader.varint()
        if num_attributes + num_types > len(offsets):
            raise Malformed("too many attributes or types")
        entries: list[Entry] = []
        offset = 0
        for total in (num_attributes, num_attributes + num_types):
            while len(entries) < total:
                dialect, group_size = reader.varint(), reader.varint()
                if dialect >= num_dialects or group_size > total - len(entries):
                    raise Malformed("bad attribute or type group")
                for _ in range(group_size):
                    size, custom = reader.varint_with_flag()
                    if size > len(data) - offset:
                        raise Malformed("entry past the end of the section")
                    entries.append(Entry(dialect, custom, data[offset : offset + size]))
                    offset += size
        if not reader.at_end():
            raise Malformed("trailing data in the offset section")
        return cls(num_attributes, entries, data[offset:])

    def write(self) -> tuple[bytes, bytes]:
        """(offset section, attribute and type section)."""
        offsets = bytearray(encode_varint(self.num_attributes))
        offsets += encode_varint(len(self.entries) - self.num_attributes)
        for group in (self.entries[: self.num_attributes], self.entries[self.num_attributes :]):
            start = 0
            while start < len(group):
                end = start
                while end < len(group) and group[end].dialect == group[start].dialect:
                    end += 1
                offsets += encode_varint(group[start].dialect) + encode_varint(end - start)
                for entry in group[start:end]:
                    offsets += encode_varint(len(entry.data) << 1 | entry.custom)
                start = end
        return bytes(offsets), b"".join(entry.data for entry in self.entries) + self.trailing


@dataclass
class Container:
    version: int
    header: bytes  # the magic, the version and the producer
    sections: list[Section]

    def by_id(self) -> dict[int, Section]:
        """Each section by its id; Malformed when one is duplicated."""
        found = {section.id: section for section in self.sections}
        if len(found) != len(self.sections):
            raise Malformed("duplicate sections")
        return found


def read_container(data: bytes) -> Container:
    """The header and top-level sections of bytecode ``data`` (which starts with the magic)."""
    reader = Reader(data, len(BYTECODE_MAGIC))
    version = reader.varint()
    reader.cstring()  # the producer
    header = data[: reader.pos]
    sections = []
    while not reader.at_end():
        sections.append(read_section(reader))
    return Container(version, header, sections)


def has_resources(data: bytes) -> bool:
    """Whether bytecode ``data`` has a non-empty resource section (dense_resource blobs, say)."""
    try:
        sections = read_container(data).sections
        return any(section.id == RESOURCE_SECTION and section.data for section in sections)
    except Malformed:
        return False


def attribute_type_table_overrun(data: bytes) -> str | None:
    """Why the attribute/type offset table's groups overrun its counts; None when they do not.

    MLIR's reader (``AttrTypeReader::initialize``) fills its attribute array
    group by group without checking a group against the entries left, so a
    count lowered by one flipped bit makes it write past the array: the heap
    is corrupt before it reports "attempting to parse a byte at the end of
    the bytecode", and the process later hangs or aborts. Input that cannot
    be walked otherwise is left for MLIR's reader to report.

    Not ``AttrTypeTable.read``, which checks the same bound: it stops at the
    first of its other checks (an entry past its section, an unknown
    dialect), before a later group that overruns, and MLIR might not.
    """
    try:
        offsets = read_container(data).by_id()[ATTR_TYPE_OFFSET_SECTION].data
        reader = Reader(offsets)
        num_attributes, num_types = reader.varint(), reader.varint()
        for kind, count in (("attribute", num_attributes), ("type", num_types)):
            read = 0
            while read < count:
                reader.varint()  # the dialect
                group_size = reader.varint()
                if group_size > count - read:
                    return (
                        f"malformed bytecode: a group of {group_size} {kind} entries "
                        f"where the table has {count - read} of its {count} left"
                    )
                for _ in range(group_size):
                    reader.varint()  # the entry's size and custom-encoding flag
                read += group_size
    except (Malformed, KeyError):
        pass
    return None
