"""``dense_resource`` constants read back as ordinary dense constants.

torch-mlir's FX importer stores every weight as a ``dense_resource`` blob in
the module's resource section. Folders and our passes read constants as
``DenseElementsAttr``, which a resource attribute is not, and the bindings
cannot read a blob's bytes. The printed module can: its trailer holds each
blob as hex, a 4-byte alignment followed by the raw little-endian elements.
So a module with resource constants is printed once and each one is rebuilt
as a ``DenseElementsAttr`` of the same type.
"""

from __future__ import annotations

import re

import numpy as np

from shlo._mlir_compat import ir
from shlo.diagnostics import ShloError, collect_diagnostics
from shlo.dtypes import numpy_dtype
from shlo.ir_utils import ops_named

_HANDLE = re.compile(r'dense_resource<("(?:[^"\\]|\\.)*"|[^>]+)>')
_BLOB = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|[\w.$-]+)\s*:\s*"0x([0-9A-Fa-f]*)"', re.MULTILINE)


# The ops that hold weights. Only their "value" is read: reading an attribute
# makes the bindings downcast it, which terminates the process on a complex
# dense constant, so complex constants are never read.
_CONSTANT_OPS = ("stablehlo.constant", "arith.constant")


def _is_resource(attribute: ir.Attribute) -> bool:
    # The bindings have no downcast for resource attributes: known kinds are not one.
    if type(attribute) is not ir.Attribute:
        return False
    try:
        ir.DenseResourceElementsAttr(attribute)
    except ValueError:
        return False
    return True


def _resource_constants(module: ir.Module) -> list[ir.Operation]:
    found = []
    for op in ops_named(module.operation, *_CONSTANT_OPS):
        if len(op.results) == 1:
            type_ = op.results[0].type
            complex_ = isinstance(type_, ir.ShapedType) and isinstance(
                type_.element_type, ir.ComplexType
            )
            if not complex_ and _is_resource(op.attributes["value"]):
                found.append(op)
    return found


def _blobs(module: ir.Module) -> dict[str, bytes]:
    """Each resource blob of the module's builtin dialect, by handle, without its alignment."""
    # Only the trailer is read: other constants print elided, blobs in full.
    text = module.operation.get_asm(large_elements_limit=16)
    trailer = text[text.rfind("{-#") :] if "{-#" in text else ""
    return {name.strip('"'): bytes.fromhex(hex_)[4:] for name, hex_ in _BLOB.findall(trailer)}


def _error(where: ir.Location, message: str) -> ShloError:
    """A ShloError pointing at ``where`` (file:line:col)."""
    with collect_diagnostics(where.context) as collector:
        where.emit_error(message)
    return ShloError(message, collector.diagnostics)


def _elements(data: bytes, type_: ir.RankedTensorType, where: ir.Location) -> ir.Attribute:
    element = str(type_.element_type)
    try:
        dtype = numpy_dtype(element)
    except ValueError:
        raise _error(where, f"dense_resource constants of {element} are not supported") from None
    count = int(np.prod(type_.shape))
    if len(data) != count * dtype.itemsize:
        raise _error(
            where,
            f"the dense_resource blob of {type_} holds {len(data)} bytes; "
            f"expected {count} elements of {element}",
        )
    # The bindings read plain numpy buffers, not ml_dtypes ones: the raw
    # bits with an explicit element type build the same attribute.
    bits = np.bool_ if dtype == np.bool_ else np.dtype(f"u{dtype.itemsize}")
    array = np.frombuffer(data, dtype=bits).reshape(type_.shape)
    return ir.DenseElementsAttr.get(array, type=type_.element_type, shape=list(type_.shape))


def inline_resource_constants(module: ir.Module) -> None:
    """Replace the ``dense_resource`` value of every constant by the dense elements it names."""
    found = _resource_constants(module)
    if not found:
        return
    blobs = _blobs(module)
    with module.context:
        for op in found:
            resource = op.attributes["value"]
            handle = _HANDLE.search(str(resource)).group(1).strip('"')
            if handle not in blobs:
                raise _error(
                    op.location,
                    f"dense_resource<{handle}> names no blob in the module's resource section",
                )
            type_ = ir.RankedTensorType(ir.ShapedType(resource.type))
            op.attributes["value"] = _elements(blobs[handle], type_, op.location)
