"""Reading and writing modules: StableHLO text, MLIR bytecode and portable artifacts."""

from __future__ import annotations

import io
import os
from pathlib import Path

from shlo._mlir_compat import (
    deserialize_portable_artifact,
    ir,
    new_context,
    serialize_portable_artifact,
)
from shlo.diagnostics import ShloError, convert

BYTECODE_MAGIC = b"ML\xefR"
# Portable artifacts are VHLO bytecode whose producer string names StableHLO.
_PORTABLE_PRODUCER = b"StableHLO_v"


def is_portable_artifact(data: bytes) -> bool:
    return data.startswith(BYTECODE_MAGIC) and _PORTABLE_PRODUCER in data[:64]


def parse_module(data: bytes | str, context: ir.Context, filename: str = "<string>") -> ir.Module:
    """Parse text, bytecode or a portable artifact, detected from the content.

    Raises ShloError with ``file:line:col`` diagnostics when the input is invalid.
    """
    try:
        if isinstance(data, bytes) and is_portable_artifact(data):
            return deserialize_portable_artifact(context, data)
        if isinstance(data, bytes) and not data.startswith(BYTECODE_MAGIC):
            data = data.decode("utf-8")
        return ir.Module.parse(data, context)
    except ir.MLIRError as error:
        diagnostics = [convert(info, filename) for info in error.error_diagnostics]
        raise ShloError(f"could not parse {filename}", diagnostics) from None
    except (ValueError, RuntimeError) as error:
        raise ShloError(f"could not parse {filename}: {error}") from None


def load_module(
    source: str | bytes | os.PathLike[str] | ir.Module, context: ir.Context | None = None
) -> ir.Module:
    """A module from a parsed module, a path, text, bytecode or a portable artifact.

    A parsed module is returned as it is; anything else is parsed in
    ``context``, by default a new one.
    """
    if isinstance(source, ir.Module):
        return source
    context = context or new_context()
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and Path(source).is_file()
    ):
        path = Path(source)
        data = path.read_bytes()
        if not data.startswith(BYTECODE_MAGIC):
            # parseFile keeps the real file name in every location.
            try:
                return ir.Module.parseFile(str(path), context)
            except ir.MLIRError as error:
                diagnostics = [convert(info, str(path)) for info in error.error_diagnostics]
                raise ShloError(f"could not parse {path}", diagnostics) from None
        return parse_module(data, context, str(path))
    return parse_module(source, context)


def module_to_bytecode(module: ir.Module) -> bytes:
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def module_to_portable_artifact(module: ir.Module, target_version: str) -> bytes:
    try:
        return serialize_portable_artifact(module, target_version)
    except (ValueError, RuntimeError) as error:
        raise ShloError(
            f"cannot write a portable artifact for version {target_version}: {error}"
        ) from None
