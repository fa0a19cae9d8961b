"""shlo-lower-scalar-transfers: 0-d vector transfers on strided buffers become scalar loads and stores.

Ours because upstream is missing a case: the vector-to-LLVM conversion turns
a ``vector.transfer_read`` or ``transfer_write`` into a load or store only
when the buffer's innermost stride is 1, and ``convert-vector-to-scf`` leaves
0-d vectors alone, so a 0-d transfer on one element of a strided view (a
column of a [1, 2] array, reached through a broadcast that fusion folded into
its reader) stayed unconverted and the JIT refused the module. A 0-d transfer
touches exactly one element, so the stride does not matter: it is a
``memref.load`` and a ``vector.broadcast`` (a ``vector.extract`` and a
``memref.store``). Transfers with a unit innermost stride are left to
upstream, as are masked ones.

  %v = vector.transfer_read %m[%i], %pad : memref<1xi32, strided<[2]>>, vector<i32>
  ==>
  %s = memref.load %m[%i] : memref<1xi32, strided<[2]>>
  %v = vector.broadcast %s : i32 to vector<i32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass


def _needs_lowering(vector: ir.Type, buffer: ir.Type) -> bool:
    """A 0-d vector on a ranked buffer whose innermost stride is not 1."""
    if not isinstance(vector, ir.VectorType) or vector.rank != 0:
        return False
    if not isinstance(buffer, ir.MemRefType) or buffer.rank == 0:
        return False
    strides, _ = buffer.get_strides_and_offset()
    return strides[-1] != 1  # a dynamic stride is a sentinel, not 1


def _segments(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def lower_read(op: ir.Operation) -> None:
    sources, indices, _, masks = _segments(op)
    if masks or not _needs_lowering(op.results[0].type, op.operands[0].type):
        return
    operands = list(op.operands)
    with ir.InsertionPoint(op), op.location:
        scalar = create_value(
            "memref.load", operands[: sources + indices], op.results[0].type.element_type
        )
        vector = create_value("vector.broadcast", [scalar], op.results[0].type)
    op.results[0].replace_all_uses_with(vector)
    op.erase()


def lower_write(op: ir.Operation) -> None:
    _, _, indices, masks = _segments(op)
    value, buffer, *operands = op.operands
    if masks or not _needs_lowering(value.type, buffer.type):
        return
    with ir.InsertionPoint(op), op.location:
        scalar = create_value(
            "vector.extract",
            [value],
            value.type.element_type,
            static_position=ir.DenseI64ArrayAttr.get([]),
        )
        ir.Operation.create("memref.store", operands=[scalar, buffer, *operands[:indices]])
    op.erase()


@dataclass(frozen=True)
class LowerScalarTransfersPass(Pass):
    """Lower 0-d vector transfers on buffers with a non-unit innermost stride to loads and stores."""

    argument: ClassVar[str] = "shlo-lower-scalar-transfers"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "vector.transfer_read", "vector.transfer_write"):
            (lower_read if op.name == "vector.transfer_read" else lower_write)(op)
