"""Loading single-device programs that carry Shardy (``sdy``) sharding annotations.

JAX exports every program with Shardy annotations: custom calls carry
``sdy.sharding_rule = #sdy.op_sharding_rule<...>``, arguments and results
``sdy.sharding``, and a program with explicit shardings holds ``sdy.mesh`` and
``sdy.sharding_constraint`` ops. The pinned wheel has no ``sdy`` dialect, so
such programs would not load. On one device the annotations mean nothing, so
shlo reads them as opaque attributes and unregistered ops of an unknown dialect
and then removes them:

- ``rewrite_bytecode``: in MLIR bytecode and portable artifacts, sdy
  attributes are written with sdy's own binary encoding, which only the sdy
  dialect can read. Each such entry of the attribute table is replaced by its
  textual form, ``#sdy.mesh<["x"=1]>`` for meshes (decoded, so that the mesh
  size can be checked) and ``#sdy<"sharding (binary encoding dropped)">`` for
  the others, which the generic parser reads as an opaque attribute; sdy's
  dialect version entry is dropped too. Every size, offset and alignment
  padding is recomputed. Input without sdy, or that cannot be walked, is
  returned unchanged, so the MLIR reader reports its own errors.
- ``rewrite_text``: ``sdy.mesh`` and ``sdy.sharding_constraint``/``sdy.reshard``
  are written in sdy's custom syntax, which the parser cannot read for an
  unknown dialect; they are rewritten to the generic op syntax.
- ``finish_loading``: after parsing, refuses multi-device programs with
  ``multi-device shardings are not supported yet``: an sdy mesh of more than
  one device, an ``mhlo.sharding`` other than replicated, maximal on device 0
  or a tiling into 1s, or sdy annotations with ``mhlo.num_partitions`` or
  ``mhlo.num_replicas`` above 1 (the binary encoding of shardings is not
  decoded, so their content is unknown). A program without shardings keeps
  loading whatever its counts: it is the global computation. Then
  ``strip_sdy`` erases ``sdy.mesh``, replaces ``sdy.sharding_constraint`` and
  ``sdy.reshard`` by their operand, removes every ``sdy.*`` attribute (and the
  ``xla.sdy.*`` entries of ``mhlo.frontend_attributes``), and fails on any
  other sdy op and on any op or attribute of another unknown dialect.

``shlo.io`` calls ``prepare_input``, parses with unregistered dialects allowed
only when sdy occurs (``unregistered_dialects``), and calls ``finish_loading``.

The bytecode is walked with ``shlo.bytecode``; the sdy attribute encoding
followed is Shardy's ``bytecode.td``.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from shlo._mlir_compat import ir
from shlo.bytecode import (
    ATTR_TYPE_OFFSET_SECTION,
    ATTR_TYPE_SECTION,
    BYTECODE_MAGIC,
    DIALECT_SECTION,
    DIALECT_VERSIONING,
    STRING_SECTION,
    AttrTypeTable,
    Entry,
    Malformed,
    Reader,
    encode_varint,
    read_container,
    read_dialects,
    read_section,
    read_strings,
    write_section,
)
from shlo.diagnostics import Diagnostic, ShloError
from shlo.ir_utils import ops_named

SDY = "sdy"
# Shardy's attribute codes (the order of ``SdyDialectTypes`` in bytecode.td).
_SDY_ATTRIBUTE_KINDS = (
    "manual_axes",
    "mesh_axis",
    "mesh",
    "sub_axis_info",
    "axis_ref",
    "dimension_sharding",
    "sharding",
    "sharding_per_value",
    "dim_mapping",
    "tensor_mapping",
    "op_sharding_rule",
    "axis_ref_list",
    "list_of_axis_ref_lists",
    "all_to_all_param",
    "all_to_all_param_list",
    "sharding",
    "sharding_per_value",
    "sharding",
)
_SDY_MESH_AXIS, _SDY_MESH = 1, 2


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _SdyDecoder:
    """Textual forms of sdy's binary attribute entries."""

    def __init__(self, table: AttrTypeTable, strings: list[bytes], sdy: int) -> None:
        self.table, self.strings, self.sdy = table, strings, sdy

    def _sdy_entry(self, index: int, kind: int) -> Reader:
        """A reader past the code of attribute ``index``, which must be sdy's ``kind``."""
        if index >= self.table.num_attributes:
            raise Malformed("bad attribute index")
        entry = self.table.entries[index]
        reader = Reader(entry.data)
        if entry.dialect != self.sdy or not entry.custom or reader.varint() != kind:
            raise Malformed("unexpected attribute kind")
        return reader

    def _string(self, reader: Reader) -> str:
        index = reader.varint()
        if index >= len(self.strings):
            raise Malformed("bad string index")
        return self.strings[index].decode("utf-8", errors="replace")

    def mesh(self, reader: Reader) -> str:
        """``mesh<["x"=2, "y"=1], device_ids=[...]>``, as sdy prints it."""
        axes = []
        for _ in range(_count(reader)):
            axis = self._sdy_entry(reader.varint(), _SDY_MESH_AXIS)
            name = self._string(axis)
            axes.append(f"{_quote(name)}={axis.signed_varint()}")
        device_ids = [reader.signed_varint() for _ in range(_count(reader))]
        body = "[" + ", ".join(axes) + "]"
        if device_ids:
            body += ", device_ids=[" + ", ".join(map(str, device_ids)) + "]"
        return f"mesh<{body}>"

    def text(self, entry: Entry) -> str:
        """The entry as attribute assembly that the generic parser reads as opaque."""
        reader = Reader(entry.data)
        code = reader.varint()
        if code == _SDY_MESH:
            with contextlib.suppress(Malformed):
                return f"#sdy.{self.mesh(reader)}"
        kind = _SDY_ATTRIBUTE_KINDS[code] if code < len(_SDY_ATTRIBUTE_KINDS) else f"kind {code}"
        return f"#sdy<{_quote(f'{kind} (binary encoding dropped)')}>"


def _count(reader: Reader) -> int:
    count = reader.varint()
    if count > reader.end - reader.pos:
        raise Malformed("list longer than its entry")
    return count


def rewrite_bytecode(data: bytes) -> tuple[bytes, bool]:
    """``(data with sdy's binary attribute encodings replaced by text, whether sdy occurs)``.

    ``data`` comes back unchanged (the same bytes) when it holds no sdy dialect
    or cannot be walked as bytecode.
    """
    try:
        return _rewrite_bytecode(data)
    except Malformed:
        return data, False


def _rewrite_bytecode(data: bytes, always_rebuild: bool = False) -> tuple[bytes, bool]:
    """``rewrite_bytecode``; ``always_rebuild`` re-encodes input without sdy too (for tests)."""
    if not data.startswith(BYTECODE_MAGIC):
        return data, False
    # The dialect name is in the string table, NUL-terminated: skip the walk without it.
    if SDY.encode() + b"\x00" not in data and not always_rebuild:
        return data, False
    container = read_container(data)
    by_id = container.by_id()
    needed = (STRING_SECTION, DIALECT_SECTION, ATTR_TYPE_SECTION, ATTR_TYPE_OFFSET_SECTION)
    if any(section_id not in by_id for section_id in needed):
        raise Malformed("missing sections")
    strings = read_strings(by_id[STRING_SECTION].data)
    dialects, op_names = read_dialects(by_id[DIALECT_SECTION].data, strings, container.version)
    sdy = next((i for i, d in enumerate(dialects) if d.name == SDY.encode()), None)
    if sdy is None and not always_rebuild:
        return data, False
    table = AttrTypeTable.read(
        by_id[ATTR_TYPE_OFFSET_SECTION].data, by_id[ATTR_TYPE_SECTION].data, len(dialects)
    )
    if sdy is not None:
        _replace_sdy_encodings(table, strings, sdy)
        # Without the sdy dialect its version entry cannot be read either.
        if container.version >= DIALECT_VERSIONING:
            dialects[sdy].encoded = encode_varint(dialects[sdy].name_index << 1)
    dialect_section = encode_varint(len(dialects)) + b"".join(d.encoded for d in dialects)
    by_id[DIALECT_SECTION].data = dialect_section + op_names
    offsets, attr_types = table.write()
    by_id[ATTR_TYPE_OFFSET_SECTION].data = offsets
    by_id[ATTR_TYPE_SECTION].data = attr_types

    # Only top-level sections get new padding. Nested ones (dialect versions,
    # isolated regions) hold no blobs, so MLIR's writer never aligns them.
    out = bytearray(container.header)
    for section in container.sections:
        write_section(out, section)
    return bytes(out), sdy is not None


def _replace_sdy_encodings(table: AttrTypeTable, strings: list[bytes], sdy: int) -> None:
    decoder = _SdyDecoder(table, strings, sdy)
    # Decode everything first: the mesh decoder reads other sdy entries.
    replacements = {
        index: decoder.text(entry)
        for index, entry in enumerate(table.entries[: table.num_attributes])
        if entry.dialect == sdy and entry.custom
    }
    for index, text in replacements.items():
        table.entries[index] = Entry(sdy, False, text.encode() + b"\x00")


# --- Text ---------------------------------------------------------------------------------------

# An sdy op in its custom syntax, at the start of a line: `sdy.mesh @m = <...>` or
# `%r = sdy.sharding_constraint %x <...> : type`.
_SDY_OP_IN_TEXT = re.compile(
    r"^([ \t]*)((?:%[\w$.#-]+(?::\d+)?\s*=\s*)?)sdy\.(\w+)\b", re.MULTILINE
)
_MESH_OP = re.compile(r"\s*@([\w$.-]+|\"(?:[^\"\\]|\\.)*\")\s*=\s*")
_VALUE_OP = re.compile(r"\s*(%[\w$.#-]+)\s*")
_TRAILING_LOC = re.compile(r"\s+(loc\(.*\))\s*$")
_SDY_NAME = re.compile(r"(?<![\w$])sdy[.<]")
_SDY_NAME_BYTES = re.compile(rb"(?<![\w$])sdy[.<]")
# Ops that mean nothing on one device: a mesh declaration and identity ops.
_IDENTITY_OPS = ("sharding_constraint", "reshard")


def has_undecodable_strings(data: bytes) -> bool:
    """True when MLIR bytecode's string table (names, string values) holds invalid UTF-8."""
    reader = Reader(data, len(BYTECODE_MAGIC))
    try:
        reader.varint()  # the version
        reader.cstring()  # the producer
        while not reader.at_end():
            # Only the sections before the string table need to be well formed.
            section = read_section(reader)
            if section.id == STRING_SECTION:
                strings = read_strings(section.data)
                break
        else:
            return False
    except Malformed:
        return False  # the reader reports malformed bytecode itself
    for string in strings:
        try:
            string.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


def mentions_sdy(data: bytes | str) -> bool:
    """Whether text may hold Shardy ops or attributes (``sdy.``, ``#sdy<``), a quick test."""
    if isinstance(data, bytes):
        return _SDY_NAME_BYTES.search(data) is not None
    return _SDY_NAME.search(data) is not None


def has_sdy_ops(data: bytes | str) -> bool:
    """Whether text holds sdy ops in sdy's own syntax, which ``rewrite_text`` must rewrite."""
    if not mentions_sdy(data):
        return False
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return _SDY_OP_IN_TEXT.search(text) is not None


def prepare_input(data: bytes | str, filename: str = "<string>") -> tuple[bytes | str, bool]:
    """``(data ready to parse, whether it holds sdy)`` for text, bytecode or a portable artifact.

    Bytecode gets ``rewrite_bytecode``, text ``rewrite_text``; input without sdy,
    and bytes that are neither bytecode nor UTF-8, come back unchanged.
    """
    if isinstance(data, bytes) and data.startswith(BYTECODE_MAGIC):
        return rewrite_bytecode(data)
    if not mentions_sdy(data):
        return data, False
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            return data, False  # the text reader reports where
    return rewrite_text(data, filename), True


def _balanced_end(text: str, start: int) -> int:
    """The index after the bracket that closes ``text[start]``, skipping string literals."""
    position, closing = start, {"<": ">", "[": "]", "{": "}", "(": ")"}
    stack: list[str] = []
    while position < len(text):
        char = text[position]
        if char == '"':
            position += 1
            while position < len(text) and text[position] != '"':
                position += 2 if text[position] == "\\" else 1
        elif char in closing:
            stack.append(closing[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return position + 1
        position += 1
    raise Malformed("unbalanced brackets")


def _split_loc(rest: str) -> tuple[str, str]:
    match = _TRAILING_LOC.search(rest)
    return (rest[: match.start()], " " + match.group(1)) if match else (rest, "")


def _rewrite_line(indent: str, result: str, op: str, rest: str) -> str:
    """The generic form of one sdy op written in sdy's syntax."""
    if op == "mesh" and not result:
        name = _MESH_OP.match(rest)
        if not name or not rest[name.end() :].startswith("<"):
            raise Malformed("unexpected sdy.mesh syntax")
        mesh_end = _balanced_end(rest, name.end())
        mesh = rest[name.end() : mesh_end]
        attributes, loc = _split_loc(rest[mesh_end:])
        symbol = name.group(1) if name.group(1).startswith('"') else _quote(name.group(1))
        return (
            f'{indent}"sdy.mesh"() <{{mesh = #sdy.mesh{mesh}, sym_name = {symbol}}}> '
            f"{attributes.strip()} : () -> (){loc}"
        )
    if op in _IDENTITY_OPS and result:
        operand = _VALUE_OP.match(rest)
        if not operand or not rest[operand.end() :].startswith("<"):
            raise Malformed(f"unexpected sdy.{op} syntax")
        sharding_end = _balanced_end(rest, operand.end())
        sharding = rest[operand.end() : sharding_end]
        tail, loc = _split_loc(rest[sharding_end:])
        attributes, _, type_text = tail.rpartition(" : ")
        if not type_text.strip():
            raise Malformed(f"unexpected sdy.{op} syntax")
        result_type = type_text.strip()
        return (
            f'{indent}{result}"sdy.{op}"({operand.group(1)}) <{{sharding = #sdy.sharding'
            f"{sharding}}}> {attributes.strip()} : ({result_type}) -> {result_type}{loc}"
        )
    raise Malformed(f"sdy.{op}")


def rewrite_text(text: str, filename: str = "<string>") -> str:
    """``text`` with the sdy ops written in sdy's own syntax rewritten to the generic syntax.

    Lines keep their numbers. Raises ShloError for an sdy op that shlo cannot drop.
    """
    if "sdy." not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        match = _SDY_OP_IN_TEXT.match(line)
        if not match:
            continue
        indent, result, op = match.groups()
        try:
            lines[number] = _rewrite_line(indent, result, op, line[match.end() :])
        except Malformed:
            column = len(indent) + len(result) + 1
            raise _error(
                f"the Shardy op 'sdy.{op}' is not supported; shlo drops only sdy.mesh, "
                "sdy.sharding_constraint and sdy.reshard (single-device programs)",
                filename,
                number + 1,
                column,
            ) from None
    return "\n".join(lines)


# --- After parsing --------------------------------------------------------------------------

_LOCATION = re.compile(r'"([^"]*)":(\d+):(\d+)')
_MESH_TEXT = re.compile(r"mesh<\s*\[([^\]]*)\]")
_AXIS_SIZE = re.compile(r"=\s*(\d+)")
_STABLEHLO_MESH_SIZE = re.compile(r"\bsize = (\d+) : i64")
_TRIVIAL_HLO_SHARDING = re.compile(
    r"\{\s*(replicated|maximal device=0|manual|devices=\[[1,]+\](?:<=\[1\]|\s*0)?"
    r"(?:\s*last_tile_dims=\{[^}]*\})?)(?:\s*metadata=\{[^}]*\})?\s*\}"
)


def _error(message: str, filename: str, line: int = 0, column: int = 0) -> ShloError:
    return ShloError(message, [Diagnostic("error", message, filename, line, column)])


def _error_at(message: str, location: ir.Location, filename: str) -> ShloError:
    """A ShloError at ``location`` when it names a file position, else in ``filename``."""
    match = _LOCATION.search(str(location))
    if match:
        file = filename if match.group(1) in ("-", "") else match.group(1)
        return _error(message, file, int(match.group(2)), int(match.group(3)))
    return _error(message, filename)


def _mesh_devices(text: str) -> int:
    """The largest device count of the meshes in ``text``, 1 when there is none.

    Meshes are sdy's ``mesh<["x"=2, ...]>`` (also escaped inside strings) and
    the ``stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}`` that JAX
    puts on sdy.mesh ops.
    """
    counts = [1, math.prod(int(size) for size in _STABLEHLO_MESH_SIZE.findall(text))]
    for match in _MESH_TEXT.finditer(text.replace('\\"', '"')):
        counts.append(math.prod(int(size) for size in _AXIS_SIZE.findall(match.group(1))))
    return max(counts)


def _is_single_device_hlo_sharding(text: str) -> bool:
    """Whether an HLO sharding (``{replicated}``, or a tuple ``{{...}, {...}}``) uses one device."""
    text = text.strip()
    if not (text.startswith("{{") and text.endswith("}}")):
        return _TRIVIAL_HLO_SHARDING.fullmatch(text) is not None
    elements, depth, start = [], 0, 1
    for position, char in enumerate(text[1:-1], start=1):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            elements.append(text[start:position])
            start = position + 1
    elements.append(text[start:-1])
    return all(_is_single_device_hlo_sharding(element) for element in elements)


def _multi_device(message: str) -> str:
    return f"multi-device shardings are not supported yet: {message}"


def _check_single_device(module: ir.Module, filename: str, has_sdy: bool) -> None:
    module_op = module.operation
    for op in ops_named(module_op):
        if op.name == "sdy.mesh":
            devices = _mesh_devices(str(op))
            if devices > 1:
                raise _error_at(
                    _multi_device(f"sdy.mesh declares a mesh of {devices} devices"),
                    op.location,
                    filename,
                )
        for named in _named_attributes(op):
            if named.name == "mhlo.sharding" and isinstance(named.attr, ir.StringAttr):
                sharding = named.attr.value_bytes.decode(errors="replace")
                if not _is_single_device_hlo_sharding(sharding):
                    raise _error_at(
                        _multi_device(f"mhlo.sharding = {_quote(sharding)} in '{op.name}'"),
                        op.location,
                        filename,
                    )
            elif named.name.startswith(("sdy.", "xla.sdy.")):
                devices = _mesh_devices(str(named.attr))
                if devices > 1:
                    raise _error_at(
                        _multi_device(f"{named.name} names a mesh of {devices} devices"),
                        op.location,
                        filename,
                    )
    for name in ("mhlo.num_partitions", "mhlo.num_replicas"):
        attr = module_op.attributes[name] if name in module_op.attributes else None
        # Without shardings such a program is still the global computation (collectives
        # are checked when lowered); the shardings that sdy's binary encoding hid may not be.
        if has_sdy and isinstance(attr, ir.IntegerAttr) and attr.value > 1:
            message = f"the module carries Shardy shardings and {name} = {attr.value}"
            raise _error_at(_multi_device(message), module_op.location, filename)


@dataclass
class _Named:
    name: str
    attr: ir.Attribute


def _named_attributes(op: ir.Operation) -> Iterator[_Named]:
    """The op's attributes, and those of function arguments and results, flattened."""
    attributes = op.attributes
    for index in range(len(attributes)):
        named = attributes[index]
        if op.name == "stablehlo.constant" and named.name == "value":
            # Reading .attr of a complex constant aborts the process (the
            # bindings cannot wrap it), and a constant carries no sharding.
            continue
        yield _Named(named.name, named.attr)
        if named.name in ("arg_attrs", "res_attrs") and isinstance(named.attr, ir.ArrayAttr):
            for dictionary in named.attr:
                if isinstance(dictionary, ir.DictAttr):
                    for inner in dictionary:
                        yield _Named(inner.name, inner.attr)
        if named.name == "mhlo.frontend_attributes" and isinstance(named.attr, ir.DictAttr):
            for inner in named.attr:
                yield _Named(inner.name, inner.attr)


def _without_sdy(dictionary: ir.DictAttr, prefix: str) -> ir.DictAttr | None:
    """``dictionary`` without the entries named ``prefix...``; None when nothing changes."""
    kept = {named.name: named.attr for named in dictionary if not named.name.startswith(prefix)}
    if len(kept) == len(dictionary):
        return None
    return ir.DictAttr.get(kept, context=dictionary.context)


def _strip_op_attributes(op: ir.Operation) -> None:
    attributes = op.attributes
    for name in [name for name in attributes if name.startswith("sdy.")]:
        del attributes[name]
    for name in ("arg_attrs", "res_attrs"):
        if name in attributes and isinstance(attributes[name], ir.ArrayAttr):
            dictionaries = list(attributes[name])
            stripped = [
                _without_sdy(d, "sdy.") if isinstance(d, ir.DictAttr) else None
                for d in dictionaries
            ]
            if any(s is not None for s in stripped):
                attributes[name] = ir.ArrayAttr.get(
                    [s if s is not None else d for s, d in zip(stripped, dictionaries)],
                    context=op.context,
                )
    frontend = "mhlo.frontend_attributes"
    if frontend in attributes and isinstance(attributes[frontend], ir.DictAttr):
        stripped_frontend = _without_sdy(attributes[frontend], "xla.sdy.")
        if stripped_frontend is not None:
            if len(stripped_frontend):
                attributes[frontend] = stripped_frontend
            else:
                del attributes[frontend]


def _unknown_dialect(attr: ir.Attribute) -> str | None:
    """The dialect of an opaque attribute within ``attr`` (arrays and dictionaries searched)."""
    if isinstance(attr, ir.OpaqueAttr):
        return attr.dialect_namespace
    if isinstance(attr, ir.ArrayAttr):
        inner = list(attr)
    elif isinstance(attr, ir.DictAttr):
        inner = [named.attr for named in attr]
    else:
        return None
    for element in inner:
        found = _unknown_dialect(element)
        if found:
            return found
    return None


def finish_loading(module: ir.Module, filename: str, data: bytes | str, has_sdy: bool) -> None:
    """Refuse multi-device shardings, then remove sdy when the input held it (``has_sdy``).

    ``data`` is the input, searched for ``mhlo.sharding`` so that programs
    without shardings skip the walk over every op.
    """
    marker = b"mhlo.sharding" if isinstance(data, bytes) else "mhlo.sharding"
    if has_sdy or marker in data:
        _check_single_device(module, filename, has_sdy)
    if has_sdy:
        strip_sdy(module, filename)


def strip_sdy(module: ir.Module, filename: str = "<string>") -> None:
    """Remove the Shardy ops and attributes of ``module``, parsed with sdy unregistered.

    Raises ShloError for sdy ops other than the mesh and the identity ops, and
    for ops or attributes of any other unknown dialect.
    """
    context = module.context
    for op in ops_named(module.operation):
        if op.name.startswith("sdy."):
            kind = op.name.removeprefix("sdy.")
            if kind in _IDENTITY_OPS and len(op.operands) == 1 and len(op.results) == 1:
                op.results[0].replace_all_uses_with(op.operands[0])
                op.erase()
                continue
            if kind == "mesh" and not op.results:
                op.erase()
                continue
            raise _error_at(
                f"the Shardy op '{op.name}' is not supported; shlo drops only sdy.mesh, "
                "sdy.sharding_constraint and sdy.reshard (single-device programs)",
                op.location,
                filename,
            )
        _strip_op_attributes(op)
        if not context.is_registered_operation(op.name):
            raise _error_at(f"operation '{op.name}' of an unknown dialect", op.location, filename)
        for named in _named_attributes(op):
            dialect = _unknown_dialect(named.attr)
            if dialect:
                raise _error_at(
                    f"attribute '{named.name}' of '{op.name}' belongs to the unknown dialect "
                    f"'{dialect}'",
                    op.location,
                    filename,
                )
        arguments = [arg for region in op.regions for block in region for arg in block.arguments]
        for value in [*op.results, *arguments]:
            if isinstance(value.type, ir.OpaqueType):
                raise _error_at(
                    f"type {value.type} in '{op.name}' belongs to the unknown dialect "
                    f"'{value.type.dialect_namespace}'",
                    op.location,
                    filename,
                )


@contextlib.contextmanager
def unregistered_dialects(context: ir.Context, allowed: bool) -> Iterator[None]:
    """Let ``context`` read an unknown dialect (sdy) while parsing, when ``allowed``."""
    previous = context.allow_unregistered_dialects
    context.allow_unregistered_dialects = previous or allowed
    try:
        yield
    finally:
        context.allow_unregistered_dialects = previous
