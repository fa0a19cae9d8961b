"""Reading and writing modules: StableHLO text, MLIR bytecode and portable artifacts."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

from shlo import resources, shardy
from shlo._mlir_compat import (
    current_version,
    deserialize_portable_artifact,
    ir,
    minimum_version,
    new_context,
    serialize_portable_artifact,
)
from shlo.bytecode import BYTECODE_MAGIC, attribute_type_table_overrun, has_resources
from shlo.diagnostics import (
    Diagnostic,
    ShloError,
    collect_diagnostics,
    convert,
    is_undecodable_diagnostic,
    undecodable_diagnostic_error,
)

# Portable artifacts are VHLO bytecode whose producer string names StableHLO.
_PORTABLE_PRODUCER = b"StableHLO_v"
_PRODUCER_VERSION = re.compile(rb"StableHLO_v([^\x00]{0,40})\x00")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# The serializer keeps version numbers in 32-bit integers and aborts on larger ones.
_MAX_VERSION_PART = 2**31 - 1


def _error_in(filename: str, message: str, line: int = 0, column: int = 0) -> ShloError:
    """A ShloError printed as ``file[:line:col]: error: message``."""
    return ShloError(message, [Diagnostic("error", message, filename, line, column)])


def is_portable_artifact(data: bytes) -> bool:
    return data.startswith(BYTECODE_MAGIC) and _PORTABLE_PRODUCER in data[:64]


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(X, Y, Z) for "X.Y.Z" with non-negative 32-bit integers; None when malformed."""
    match = _VERSION.fullmatch(text)
    if not match:
        return None
    parts = tuple(int(part) for part in match.groups())
    if any(part > _MAX_VERSION_PART for part in parts):
        return None
    return parts  # type: ignore[return-value]


def check_target_version(version: str) -> None:
    """ShloError unless ``version`` is X.Y.Z between the wheel's minimum and current versions."""
    parsed = parse_version(version)
    lowest, highest = minimum_version(), current_version()
    if parsed is None:
        raise ShloError(
            f"invalid StableHLO target version '{version}'; expected X.Y.Z, three "
            f"non-negative integers, between {lowest} and {highest}"
        )
    if not parse_version(lowest) <= parsed <= parse_version(highest):  # type: ignore[operator]
        raise ShloError(
            f"StableHLO target version {version} is not supported; this StableHLO "
            f"writes versions {lowest} to {highest}"
        )


def portable_artifact_producer(data: bytes) -> str | None:
    """The producer version "X.Y.Z" in a portable artifact's header, None if there is none."""
    match = _PRODUCER_VERSION.search(data[:64])
    return match.group(1).decode("ascii", errors="backslashreplace") if match else None


def _check_producer(data: bytes, filename: str) -> None:
    """Refuse artifacts from a newer StableHLO: it may use ops or encodings this one misreads."""
    producer = portable_artifact_producer(data)
    if producer is None:
        return  # the deserializer reports a malformed header itself
    parsed = parse_version(producer)
    if parsed is None:
        raise _error_in(
            filename,
            f"malformed producer version 'StableHLO_v{producer}' in the portable artifact "
            "header; expected StableHLO_vX.Y.Z",
        )
    if parsed > parse_version(current_version()):  # type: ignore[operator]
        raise _error_in(
            filename,
            f"the portable artifact was written by StableHLO {producer}, newer than this "
            f"StableHLO ({current_version()}); re-export it for version {current_version()} "
            "or older",
        )


def decode_text(data: bytes, filename: str) -> str:
    """``data`` as UTF-8; a ShloError naming the line, column and byte where it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise _error_in(
            filename,
            f"invalid UTF-8 at byte {error.start} (0x{data[error.start]:02x}); the input is "
            "neither UTF-8 text nor MLIR bytecode",
            line,
            column,
        ) from None


def _binary_positions(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics of a binary reader: its "-":0:0 is no line of the file, so none is named."""
    return [
        dataclasses.replace(d, line=0, column=0) if (d.line, d.column) == (1, 1) else d
        for d in diagnostics
    ]


def _deserialize(data: bytes, context: ir.Context, filename: str) -> ir.Module:
    _check_producer(data, filename)
    # Without a handler MLIR prints these itself, as loc("-":0:0): error: ...
    with collect_diagnostics(context, filename) as collector:
        try:
            return deserialize_portable_artifact(context, data)
        except (ValueError, RuntimeError) as error:
            errors = _binary_positions(collector.diagnostics)
            if not errors:
                raise _error_in(
                    filename, f"could not read the portable artifact: {error}"
                ) from None
            raise ShloError(f"could not parse {filename}: {error}", errors) from None


# A \XX escape of a byte outside ASCII: the only way text spells invalid UTF-8.
_HIGH_BYTE_ESCAPE = re.compile(rb"\\[89a-fA-F][0-9a-fA-F]")


def _may_hold_invalid_utf8(data: bytes | str) -> bool:
    raw = data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data
    if raw.startswith(BYTECODE_MAGIC):
        return shardy.has_undecodable_strings(raw)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return _HIGH_BYTE_ESCAPE.search(raw) is not None


def _has_undecodable_attribute(entries: Sequence[ir.NamedAttribute]) -> bool:
    """True when an attribute name here, or in a dictionary nested here, is not UTF-8.

    ``.name`` is never read (it aborts the process on such a name): ``repr``
    prints in C++ and raises instead. ``.attr`` is read only for dictionaries
    and arrays, to look inside them (it aborts on a complex constant, say).
    """
    for named in entries:
        try:
            text = repr(named)
        except RuntimeError:
            return True
        value = text.partition("=")[2]
        if not value.startswith(("{", "[")):
            continue
        attr = named.attr
        nested = [attr] if isinstance(attr, ir.DictAttr) else []
        if isinstance(attr, ir.ArrayAttr):
            nested = [a for a in attr if isinstance(a, ir.DictAttr)]
        if any(_has_undecodable_attribute([d[i] for i in range(len(d))]) for d in nested):
            return True
    return False


def reject_undecodable_attribute_names(module: ir.Module, data: bytes | str, filename: str) -> None:
    """A located ShloError for an attribute (its name, or text in it) that is not valid UTF-8.

    The bindings abort the process (not raise) reading such a name, and every
    pass that looks at attribute names would.
    """
    if not _may_hold_invalid_utf8(data):
        return
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        attributes = op.attributes
        if _has_undecodable_attribute([attributes[i] for i in range(len(attributes))]):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        message = f"'{found[0].name}' has an attribute that is not valid UTF-8"
        with collect_diagnostics(module.context, filename) as collector:
            found[0].location.emit_error(message)
        raise ShloError(message, collector.diagnostics)


def parse_module(data: bytes | str, context: ir.Context, filename: str = "<string>") -> ir.Module:
    """Parse text, bytecode or a portable artifact, detected from the content.

    Shardy (sdy) annotations of single-device programs are dropped (shlo.shardy).
    Raises ShloError with ``file:line:col`` diagnostics when the input is invalid.
    """
    prepared, has_sdy = shardy.prepare_input(data, filename)
    # sdy is parsed as an unknown dialect, then removed; finish_loading rejects what is left.
    with shardy.unregistered_dialects(context, has_sdy):
        module = _parse_module(prepared, context, filename)
    reject_undecodable_attribute_names(module, data, filename)
    shardy.finish_loading(module, filename, data, has_sdy)
    inline_resources(module, data)
    return module


def inline_resources(module: ir.Module, data: bytes | str) -> None:
    """Weights stored as dense_resource blobs (torch-mlir's) in ``data``, parsed as
    ``module``, become dense constants, which folders and passes read."""
    if isinstance(data, str):
        found = "dense_resource" in data
    elif data.startswith(BYTECODE_MAGIC):
        found = has_resources(data)
    else:
        found = b"dense_resource" in data
    if found:
        resources.inline_resource_constants(module)


# Set when MLIR's bytecode reader rejected an input: on some corrupt input it
# writes out of bounds before it reports the error, so this process's heap
# may be damaged (a later request crashed, or hung in malloc).
_bytecode_reader_failed = False


def heap_may_be_damaged() -> bool:
    """True once the bytecode reader failed in this process: it should not be reused."""
    return _bytecode_reader_failed


# A CHLO broadcast's dimensions with a negative entry, in text.
_NEGATIVE_BROADCAST_DIMENSIONS = re.compile(
    rb"chlo\.broadcast_\w+.*?(broadcast_dimensions\s*=\s*array<i64:[^>]*-\s*\d)"
)


def refuse_negative_chlo_broadcast_dimensions(data: bytes, filename: str) -> None:
    """ShloError at the first CHLO broadcast op whose broadcast_dimensions holds a negative entry.

    Upstream's CHLO shape inference indexes with them while the parser
    verifies the op, and reads out of bounds (a segfault, or garbage): the
    parser must never see them. Bytecode and text without such ops pass.
    """
    if data.startswith(BYTECODE_MAGIC) or b"chlo.broadcast_" not in data:
        return
    for number, line in enumerate(data.splitlines(), 1):
        match = _NEGATIVE_BROADCAST_DIMENSIONS.search(line)
        if match:
            raise _error_in(
                filename,
                "broadcast_dimensions of a CHLO broadcast op must be non-negative",
                number,
                match.start(1) + 1,
            )


# A convolution's dimension numbers in text (the op's `dim_numbers = ...` or a
# `#stablehlo.conv<...>` attribute): the input's, the kernel's and the output's lists.
_CONVOLUTION_DIMENSIONS = re.compile(
    rb"(?:dim_numbers\s*=\s*|#stablehlo\.conv<)(\[[^\]]*\])\s*x\s*(\[[^\]]*\])\s*->\s*(\[[^\]]*\])"
)


def refuse_out_of_range_convolution_dimensions(data: bytes, filename: str) -> None:
    """ShloError at the first entry of a convolution's dimension numbers that no dimension
    of its list has (a list of n entries names n dimensions, so its spatial ones are
    below n).

    StableHLO's parser sizes a vector by the largest entry before it checks
    them: 2^31 aborted the process out of memory, 10^10 on SmallVector's
    limit (found by the fuzzer). Smaller wrong entries get the parser's own
    message. Bytecode and text without such lists pass.
    """
    if data.startswith(BYTECODE_MAGIC) or (
        b"dim_numbers" not in data and b"#stablehlo.conv<" not in data
    ):
        return
    for number, line in enumerate(data.splitlines(), 1):
        for match in _CONVOLUTION_DIMENSIONS.finditer(line):
            for group in (1, 2, 3):
                entries = match.group(group)[1:-1].split(b",")
                column = match.start(group) + 2  # 1-based, past the bracket
                for entry in entries:
                    token = entry.strip()
                    if token.isdigit() and int(token) >= len(entries):
                        raise _error_in(
                            filename,
                            f"convolution dimension {token.decode()} is out of range: "
                            f"its list names {len(entries)} dimensions",
                            number,
                            column + len(entry) - len(entry.lstrip()),
                        )
                    column += len(entry) + 1


# tensor.from_elements in its custom form: the operands, then the result type.
_FROM_ELEMENTS = re.compile(rb"tensor\.from_elements\b([^:]*):\s*tensor<([^>]*)>")
# More elements than this and the parser's vector of operand types is large
# enough to matter; fewer, and it reports a count that does not match itself.
_MAX_UNCHECKED_ELEMENTS = 1 << 16


def refuse_oversized_from_elements(data: bytes, filename: str) -> None:
    """ShloError at the result type of a ``tensor.from_elements`` whose static shape has
    more elements than it has operands, when they are that many.

    The parser builds one operand type per element of the result type before
    it counts the operands: `tensor<99999999999xi64>` aborted the worker on
    SmallVector's limit (found by the fuzzer). Bytecode, the generic form
    and text without the op pass.
    """
    if data.startswith(BYTECODE_MAGIC) or b"tensor.from_elements" not in data:
        return
    for number, line in enumerate(data.splitlines(), 1):
        for match in _FROM_ELEMENTS.finditer(line):
            *dimensions, _ = match.group(2).split(b"x")
            if not dimensions or not all(d.strip().isdigit() for d in dimensions):
                continue
            elements = math.prod(int(d) for d in dimensions)
            operands = match.group(1).count(b"%")
            if elements > max(operands, _MAX_UNCHECKED_ELEMENTS):
                raise _error_in(
                    filename,
                    f"tensor.from_elements has {operands} operands but its result type "
                    f"has {elements} elements",
                    number,
                    match.start(2) - len(b"tensor<") + 1,
                )


def refuse_what_the_parser_crashes_on(data: bytes, filename: str) -> None:
    """ShloError for text that MLIR's parser is known to crash on, before it parses."""
    refuse_negative_chlo_broadcast_dimensions(data, filename)
    refuse_out_of_range_convolution_dimensions(data, filename)
    refuse_oversized_from_elements(data, filename)


def _parse_module(data: bytes | str, context: ir.Context, filename: str) -> ir.Module:
    global _bytecode_reader_failed
    if not (isinstance(data, bytes) and data.startswith(BYTECODE_MAGIC)):
        text = data.encode() if isinstance(data, str) else data
        refuse_what_the_parser_crashes_on(text, filename)
        return _parse_text_or_bytecode(data, context, filename)
    overrun = attribute_type_table_overrun(data)
    if overrun:
        raise _error_in(filename, overrun)
    try:
        return _parse_text_or_bytecode(data, context, filename)
    except BaseException:
        _bytecode_reader_failed = True
        raise


def _parse_text_or_bytecode(data: bytes | str, context: ir.Context, filename: str) -> ir.Module:
    if isinstance(data, bytes) and is_portable_artifact(data):
        return _deserialize(data, context, filename)
    if isinstance(data, bytes) and not data.startswith(BYTECODE_MAGIC):
        data = decode_text(data, filename)
    try:
        return ir.Module.parse(data, context)
    except ir.MLIRError as error:
        diagnostics = [convert(info, filename) for info in error.error_diagnostics]
        if isinstance(data, bytes):
            diagnostics = _binary_positions(diagnostics)
        raise ShloError(f"could not parse {filename}", diagnostics) from None
    except RuntimeError as error:
        if is_undecodable_diagnostic(error):
            raise undecodable_diagnostic_error(data, filename) from None
        raise ShloError(f"could not parse {filename}: {error}") from None
    except ValueError as error:
        raise ShloError(f"could not parse {filename}: {error}") from None


# Suffixes of the files shlo reads: a one-line string ending so is a path.
_PATH_SUFFIXES = (".mlir", ".mlirbc", ".bc", ".vhlo")


def names_a_file(source: object) -> bool:
    """True when ``source`` is a path rather than IR (even a path that does not exist)."""
    if isinstance(source, os.PathLike):
        return True
    if not isinstance(source, str) or "\n" in source:
        return False
    looks_like_path = source.endswith(_PATH_SUFFIXES) or ("/" in source and "{" not in source)
    return looks_like_path or os.path.isfile(source)


def existing_path(source: str | os.PathLike[str]) -> str:
    """``source`` as a string; ShloError "no such file" when nothing is there."""
    path = os.fspath(source)
    if not os.path.exists(path):
        raise ShloError(f"no such file: {path}")
    return path


def load_module(
    source: str | bytes | os.PathLike[str] | ir.Module,
    context: ir.Context | None = None,
    filename: str = "<string>",
) -> ir.Module:
    """A module from a parsed module, a path, text, bytecode or a portable artifact.

    A parsed module is returned as it is; anything else is parsed in
    ``context``, by default a new one. Errors in text or bytes name ``filename``.
    """
    if isinstance(source, ir.Module):
        return source
    context = context or new_context()
    if names_a_file(source):
        path = Path(existing_path(source))  # type: ignore[arg-type]
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ShloError(f"cannot read {path}: {error.strerror}") from None
        if not data.startswith(BYTECODE_MAGIC) and not shardy.has_sdy_ops(data):
            refuse_what_the_parser_crashes_on(data, str(path))
            has_sdy = shardy.mentions_sdy(data)
            # parseFile keeps the real file name in every location.
            try:
                with shardy.unregistered_dialects(context, has_sdy):
                    module = ir.Module.parseFile(str(path), context)
            except ir.MLIRError as error:
                diagnostics = [convert(info, str(path)) for info in error.error_diagnostics]
                raise ShloError(f"could not parse {path}", diagnostics) from None
            except RuntimeError as error:
                if is_undecodable_diagnostic(error):
                    raise undecodable_diagnostic_error(data, str(path)) from None
                raise ShloError(f"could not parse {path}: {error}") from None
            reject_undecodable_attribute_names(module, data, str(path))
            shardy.finish_loading(module, str(path), data, has_sdy)
            inline_resources(module, data)
            return module
        return parse_module(data, context, str(path))
    return parse_module(source, context, filename)


def module_to_bytecode(module: ir.Module) -> bytes:
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def bytecode_to_text(data: bytes) -> bytes:
    """The MLIR text of a module that shlo wrote as bytecode (``module_to_bytecode``)."""
    return str(ir.Module.parse(data, new_context())).encode()


def module_to_portable_artifact(module: ir.Module, target_version: str) -> bytes:
    # The serializer aborts the process on some malformed versions.
    check_target_version(target_version)
    try:
        return serialize_portable_artifact(module, target_version)
    except (ValueError, RuntimeError) as error:
        raise ShloError(
            f"cannot write a portable artifact for version {target_version}: {error}"
        ) from None
