"""shlo-widen-integer-dots: a dot of narrow integers into i32 takes i32 operands.

Ours because upstream is missing it: an int8 matmul accumulating in i32
(``jnp.matmul(a, b, preferred_element_type=jnp.int32)``, quantized models)
becomes a ``linalg`` contraction with mixed element types, which the
``vectorize-matmul`` recipe (32-bit operands and result) does not take: it
ran as scalar loops, 11.6x XLA's time on [512, 512] x [512, 512]. The
operands are converted to the result's type first (sign- or zero-extended,
as the contraction's own conversion does), and the recipe's i32 register
tiles compute the product. The converted copies cost a pass over the
operands, small beside the matmul's n^3 work.

  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi32>
  ==>
  %a32 = stablehlo.convert %a : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %b32 = stablehlo.convert %b : (tensor<3x6xi8>) -> tensor<3x6xi32>
  %0 = stablehlo.dot_general %a32, %b32, contracting_dims = [1] x [0]
      : (tensor<4x3xi32>, tensor<3x6xi32>) -> tensor<4x6xi32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass


def _integer_width(type_: ir.Type) -> int | None:
    element = ir.RankedTensorType(type_).element_type
    return element.width if isinstance(element, ir.IntegerType) else None


@dataclass(frozen=True)
class WidenIntegerDotsPass(Pass):
    """Convert the narrow integer operands of a dot into i32 to its result's type."""

    argument: ClassVar[str] = "shlo-widen-integer-dots"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.dot_general"):
            if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                continue
            result = ir.RankedTensorType(op.results[0].type)
            if _integer_width(result) != 32:
                continue
            for index, operand in enumerate(list(op.operands)):
                width = _integer_width(operand.type)
                if width is None or width >= 32:
                    continue
                shape = list(ir.RankedTensorType(operand.type).shape)
                with op.location, ir.InsertionPoint(op):
                    op.operands[index] = ir.Operation.create(
                        "stablehlo.convert",
                        results=[ir.RankedTensorType.get(shape, result.element_type)],
                        operands=[operand],
                    ).result
