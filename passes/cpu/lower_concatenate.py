"""shlo-lower-concatenate: a concatenation that is materialized becomes inserts into slices.

Ours because upstream's lowering is slow for it: ``stablehlo-legalize-to-linalg``
makes a concatenation one ``linalg.generic`` over the result whose body picks
the operand by ``scf.if`` on the index and reads it with ``tensor.extract``.
That body fuses into elementwise consumers (RoPE's ``rotate_half`` times the
sine), but standing alone it is a scalar loop on one thread: concatenating
three [2048, 100] arrays along the last axis took 1.6x XLA's time. Here a
concatenation whose result no elementwise op, broadcast or transpose reads
(returned, or read by a dot, a reduction, a reshape...) becomes an insert of
each operand into its slice of the result; ``shlo-copy-into-slices`` then
makes each insert a copy that the vector code generation tiles, vectorizes
and threads.

  %r = stablehlo.concatenate %a, %b, dim = 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  ==>
  %e = tensor.empty() : tensor<4x8xf32>
  %r0 = tensor.insert_slice %a into %e[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x8xf32>
  %r = tensor.insert_slice %b into %r0[0, 3] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<4x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, tensor
from shlo.analysis.indexing import ELEMENTWISE_OPS
from shlo.ir_utils import ops_named, static_shape
from shlo.pass_framework import Pass

# Readers that upstream's lowering fuses the concatenation into.
_FUSING_READERS = ELEMENTWISE_OPS | {"stablehlo.broadcast_in_dim", "stablehlo.transpose"}


def lower_concatenate(op: ir.Operation) -> None:
    shape = static_shape(op.results[0])
    dimension = ir.IntegerAttr(op.attributes["dimension"]).value
    result_type = ir.RankedTensorType(op.results[0].type)
    rank = len(shape)
    with op.location, ir.InsertionPoint(op):
        result = tensor.EmptyOp(shape, result_type.element_type).result
        offset = 0
        for operand in op.operands:
            sizes = list(static_shape(operand))
            if sizes[dimension] == 0:
                continue
            offsets = [offset if d == dimension else 0 for d in range(rank)]
            result = tensor.InsertSliceOp(
                operand, result, [], [], [], offsets, sizes, [1] * rank
            ).result
            offset += sizes[dimension]
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _materialized(op: ir.Operation) -> bool:
    """Whether ``op``'s result is static, not empty, and no reader would fuse it."""
    shape = static_shape(op.results[0])
    if shape is None or 0 in shape or any(static_shape(v) is None for v in op.operands):
        return False  # slices of an empty tensor do not verify
    return all(use.owner.name not in _FUSING_READERS for use in op.results[0].uses)


@dataclass(frozen=True)
class LowerConcatenatePass(Pass):
    """Lower materialized stablehlo.concatenate ops to inserts into slices of the result."""

    argument: ClassVar[str] = "shlo-lower-concatenate"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.concatenate"):
            if _materialized(op):
                lower_concatenate(op)
