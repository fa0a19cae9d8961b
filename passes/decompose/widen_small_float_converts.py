"""shlo-widen-small-float-converts: convert f8, f6 and f4 tensors to integers through f32.

Ours because upstream is wrong: ``stablehlo-legalize-to-linalg`` clamps a
float-to-integer convert against the integer's bounds rounded to the *source*
type. f8E8M0FNU has no negative numbers, so the lower bound of a signed type
becomes +2^(bits-1) and every value below it converts to the minimum integer.
f32 holds every small-float value exactly, so going through it changes no
result and gives the clamp exact bounds.

  %0 = stablehlo.convert %x : (tensor<4xf8E8M0FNU>) -> tensor<4xi32>
  ==>
  %w = stablehlo.convert %x : (tensor<4xf8E8M0FNU>) -> tensor<4xf32>
  %0 = stablehlo.convert %w : (tensor<4xf32>) -> tensor<4xi32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.dtypes import EMULATED_FLOATS
from shlo.ir_utils import ops_named, ranked_type
from shlo.pass_framework import Pass


def widen_convert(op: ir.Operation) -> None:
    source, result = ranked_type(op.operands[0]), ranked_type(op.results[0])
    if source is None or result is None:
        return
    if str(source.element_type) not in EMULATED_FLOATS:
        return
    if not isinstance(result.element_type, ir.IntegerType):
        return
    with op.location, ir.InsertionPoint(op):
        wide_type = ir.RankedTensorType.get(source.shape, ir.F32Type.get(), source.encoding)
        wide = ir.Operation.create(
            "stablehlo.convert", results=[wide_type], operands=[op.operands[0]]
        )
        narrow = ir.Operation.create("stablehlo.convert", results=[result], operands=[wide.result])
    op.results[0].replace_all_uses_with(narrow.result)
    op.erase()


@dataclass(frozen=True)
class WidenSmallFloatConvertsPass(Pass):
    """Convert f8, f6 and f4 tensors to integers through f32."""

    argument: ClassVar[str] = "shlo-widen-small-float-converts"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.convert"):
            widen_convert(op)
