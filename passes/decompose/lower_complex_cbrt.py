"""shlo-lower-complex-cbrt: the principal cube root of complex numbers, in polar form.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` has no
lowering of ``stablehlo.cbrt`` on complex numbers, which then reaches
bufferization ("op was not bufferized"). The principal root is
``cbrt(|z|) * (cos(arg(z) / 3) + i sin(arg(z) / 3))``.

  %0 = stablehlo.cbrt %z : tensor<4xcomplex<f32>>
  ==>
  %re = stablehlo.real %z : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %im = stablehlo.imag %z : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %abs = stablehlo.abs %z : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %r = stablehlo.cbrt %abs : tensor<4xf32>
  %arg = stablehlo.atan2 %im, %re : tensor<4xf32>
  %third = stablehlo.divide %arg, %c3 : tensor<4xf32>
  ... %r * cos(%third), %r * sin(%third) ...
  %0 = stablehlo.complex %x, %y : tensor<4xcomplex<f32>>
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass


def _create(name: str, operands: Sequence[ir.Value], result: ir.Type) -> ir.Value:
    return create_value(f"stablehlo.{name}", operands, result)


def lower_cbrt(op: ir.Operation) -> None:
    z = op.operands[0]
    type_ = ir.RankedTensorType(z.type)
    if not isinstance(type_.element_type, ir.ComplexType):
        return
    part = ir.ComplexType(type_.element_type).element_type
    real = ir.RankedTensorType.get(list(type_.shape), part)
    with op.location, ir.InsertionPoint(op):
        three = ir.Operation.create(
            "stablehlo.constant",
            results=[real],
            attributes={"value": ir.DenseElementsAttr.get_splat(real, ir.FloatAttr.get(part, 3.0))},
        ).result
        radius = _create("cbrt", [_create("abs", [z], real)], real)
        angle = _create("atan2", [_create("imag", [z], real), _create("real", [z], real)], real)
        third = _create("divide", [angle, three], real)
        x = _create("multiply", [radius, _create("cosine", [third], real)], real)
        y = _create("multiply", [radius, _create("sine", [third], real)], real)
        root = _create("complex", [x, y], type_)
    op.results[0].replace_all_uses_with(root)
    op.erase()


@dataclass(frozen=True)
class LowerComplexCbrtPass(Pass):
    """The principal cube root of complex numbers, in polar form."""

    argument: ClassVar[str] = "shlo-lower-complex-cbrt"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.cbrt"):
            lower_cbrt(op)
